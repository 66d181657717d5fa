//! A change that breaks a file it does not edit, found by the type checkers in the files that
//! import it, compared with the base: what was broken before the change is not its finding.

use bugloop_analyzers::{
    Analysis, BaseFile, BaseTree, Candidate, Choice, Request, Toolbox, analyze,
};
use bugloop_testkit::TestRepo;

use super::sandbox;

/// The base commit `main` of a test repository, read with git.
#[derive(Debug)]
struct Main<'a>(&'a TestRepo);

impl BaseTree for Main<'_> {
    fn file(&self, path: &str, max: u64) -> BaseFile {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(self.0.path())
            .args(["cat-file", "blob", &format!("main:{path}")])
            .output()
            .unwrap();
        match out.status.success() {
            true if out.stdout.len() as u64 > max => BaseFile::Larger,
            true => BaseFile::Content(out.stdout),
            false => BaseFile::Unreadable,
        }
    }
}

pub(super) async fn review(repo: &TestRepo, tool: &str, with_base: bool) -> Analysis {
    let diff = bugloop_diff::parse(repo.git(&["diff", "main..change"]));
    let base = Main(repo);
    analyze(Request {
        workspace: repo.path(),
        diff: &diff,
        choices: vec![Choice::BuiltIn(bugloop_analyzers::built_in(tool).unwrap())],
        sandbox: sandbox(repo.path()),
        toolbox: Toolbox::from_env(),
        base_dir: None,
        base: with_base.then_some(&base as &dyn BaseTree),
        alone: false,
    })
    .await
}

fn unedited(analysis: &Analysis) -> Vec<&Candidate> {
    analysis.candidates.iter().filter(|c| c.unedited).collect()
}

/// The findings in files the change does not edit are at `places`, and only there.
#[track_caller]
pub(super) fn assert_broken_at(analysis: &Analysis, places: &[(&str, u32)]) {
    let found: Vec<(&str, u32)> = unedited(analysis)
        .iter()
        .map(|c| (c.hit.file.as_str(), c.hit.line))
        .collect();
    assert_eq!(found, places, "{analysis:#?}");
}

/// The findings in files the change edits are at `places`, and only there.
#[track_caller]
fn assert_own_at(analysis: &Analysis, places: &[(&str, u32)]) {
    let found: Vec<(&str, u32)> = analysis
        .candidates
        .iter()
        .filter(|c| !c.unedited)
        .map(|c| (c.hit.file.as_str(), c.hit.line))
        .collect();
    assert_eq!(found, places, "{analysis:#?}");
}

/// A repository of `base` on `main`, and its branch `change` that writes `changed` over it.
pub(super) fn changed_repo(base: &[(&str, &str)], changed: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::with_files(base);
    repo.branch("change");
    for (path, text) in changed {
        repo.write(path, text);
    }
    repo.commit("change");
    repo
}

/// `getUser` renamed in `src/user.ts`; two files still import it, and a third that imports it
/// too had a type error of its own before the change.
fn renamed_export() -> TestRepo {
    changed_repo(
        &[
            (
                "src/user.ts",
                "export function getUser(id: number): string {\n  return `user ${id}`;\n}\n",
            ),
            (
                "src/app.ts",
                "import { getUser } from './user';\n\nexport const first = getUser(1);\n",
            ),
            (
                "src/pages/profile.ts",
                "import { getUser } from '../user';\n\nexport const shown = getUser(2);\n",
            ),
            (
                "src/legacy.ts",
                "import * as users from './user';\n\nexport const count: number = 'many';\nexport const u = users;\n",
            ),
        ],
        &[(
            "src/user.ts",
            "export function fetchUser(id: number): string {\n  return `user ${id}`;\n}\n",
        )],
    )
}

#[tokio::test]
async fn tsc_finds_the_importers_a_renamed_export_breaks_and_not_their_old_errors() {
    let repo = renamed_export();
    let analysis = review(&repo, "tsc", true).await;
    let broken = unedited(&analysis);
    assert_eq!(broken.len(), 1, "{analysis:#?}");
    let finding = broken[0];
    assert_eq!(
        (finding.hit.file.as_str(), finding.hit.line),
        ("src/app.ts", 1)
    );
    assert!(finding.hit.message.contains("getUser"), "{finding:#?}");
    assert_eq!(finding.evidence, "import { getUser } from './user';");
    let note = finding.note.as_deref().unwrap_or_default();
    assert!(note.contains("src/pages/profile.ts:1"), "{note}");
    let described = finding.to_finding().description;
    assert!(
        described.contains("does not edit") && described.contains("breaks"),
        "{described}"
    );
    // The old error of `src/legacy.ts` is the code's, not the change's.
    assert!(
        !analysis
            .candidates
            .iter()
            .any(|c| c.hit.file == "src/legacy.ts"),
        "{analysis:#?}"
    );
    let run = &analysis.runs[0];
    let checked = run.importers.as_ref().unwrap();
    assert_eq!(
        (checked.files.len(), checked.broken, &checked.not_checked),
        (3, 2, &None)
    );
}

#[tokio::test]
async fn without_a_base_to_compare_with_no_importer_is_checked() {
    let repo = renamed_export();
    let analysis = review(&repo, "tsc", false).await;
    assert!(unedited(&analysis).is_empty(), "{analysis:#?}");
    assert!(analysis.runs.iter().all(|run| run.importers.is_none()));
}

#[tokio::test]
async fn ty_finds_a_caller_a_deletion_breaks_and_a_signature_change_breaks() {
    let repo = TestRepo::with_files(&[
        (
            "shop/prices.py",
            "def total(items: list[float]) -> float:\n    return sum(items)\n\n\ndef discount(price: float) -> float:\n    return price * 0.9\n",
        ),
        (
            "shop/cart.py",
            "from shop.prices import total\n\n\ndef checkout(items: list[float]) -> float:\n    return total(items)\n",
        ),
        (
            "shop/sale.py",
            "from .prices import discount\n\n\ndef on_sale(price: float) -> float:\n    return discount(price)\n",
        ),
        (
            "shop/old.py",
            "from shop import prices\n\n\ndef broken() -> int:\n    return prices.total([1.0]) + \"x\"\n",
        ),
        ("shop/__init__.py", ""),
    ]);
    repo.branch("change");
    // `total` now takes a currency; `discount` is gone.
    repo.write(
        "shop/prices.py",
        "def total(items: list[float], currency: str) -> float:\n    return sum(items)\n",
    );
    repo.commit("change");
    let analysis = review(&repo, "ty", true).await;
    let mut places: Vec<(&str, u32)> = unedited(&analysis)
        .iter()
        .map(|c| (c.hit.file.as_str(), c.hit.line))
        .collect();
    places.sort_unstable();
    assert_eq!(
        places,
        [("shop/cart.py", 5), ("shop/sale.py", 1)],
        "{analysis:#?}"
    );
}

#[tokio::test]
async fn a_change_that_only_deletes_still_has_its_importers_checked() {
    let repo = changed_repo(
        &[
            (
                "src/format.ts",
                "export const money = (n: number) => `$${n}`;\n\nexport const percent = (n: number) => `${n}%`;\n",
            ),
            (
                "src/report.ts",
                "import { percent } from './format';\n\nexport const share = percent(12);\n",
            ),
        ],
        &[(
            "src/format.ts",
            "export const money = (n: number) => `$${n}`;\n",
        )],
    );
    let analysis = review(&repo, "tsc", true).await;
    let broken = unedited(&analysis);
    assert_eq!(broken.len(), 1, "{analysis:#?}");
    assert_eq!(
        (broken[0].hit.file.as_str(), broken[0].hit.rule.as_str()),
        ("src/report.ts", "TS2305")
    );
}

#[tokio::test]
async fn a_renamed_module_breaks_its_importers_whatever_names_it() {
    let repo = TestRepo::with_files(&[
        ("billing/rates.py", "VAT = 0.2\n"),
        ("billing/__init__.py", ""),
        ("app.py", "from billing.rates import VAT\n\nprint(VAT)\n"),
        (
            "uses_a_package.py",
            "import requests\n\nfrom billing import rates\n",
        ),
    ]);
    repo.branch("change");
    repo.git(&["mv", "billing/rates.py", "billing/taxes.py"]);
    repo.commit("change");
    let analysis = review(&repo, "ty", true).await;
    let mut places: Vec<(&str, u32, &str)> = unedited(&analysis)
        .iter()
        .map(|c| (c.hit.file.as_str(), c.hit.line, c.hit.rule.as_str()))
        .collect();
    places.sort_unstable();
    // `requests` was missing before the change too: not the change's.
    assert_eq!(
        places,
        [
            ("app.py", 1, "import-not-found"),
            ("uses_a_package.py", 3, "missing-module-member")
        ],
        "{analysis:#?}"
    );
}

/// The attacks of a review: the branch touches each importer (a comment at its end, its mode),
/// or also deletes a file too large to be copied, so that the importers would not be compared.
#[tokio::test]
async fn touching_an_importer_or_a_large_file_hides_no_breakage() {
    for (touch, large_file) in [(true, false), (false, true)] {
        let repo = TestRepo::with_files(&[
            (
                "src/user.ts",
                "export function getUser(id: number): string {\n  return `user ${id}`;\n}\n",
            ),
            (
                "src/app.ts",
                "import { getUser } from './user';\n\nexport const first = getUser(1);\n",
            ),
            (
                "src/rows.json",
                &format!("[{}]\n", "1,".repeat(1_500_000) + "1"),
            ),
        ]);
        repo.branch("change");
        repo.write(
            "src/user.ts",
            "export function fetchUser(id: number): string {\n  return `user ${id}`;\n}\n",
        );
        if touch {
            repo.write(
                "src/app.ts",
                "import { getUser } from './user';\n\nexport const first = getUser(1);\n// ok\n",
            );
        }
        if large_file {
            repo.git(&["rm", "-q", "src/rows.json"]);
        }
        repo.commit("change");
        let analysis = review(&repo, "tsc", true).await;
        assert_broken_at(&analysis, &[("src/app.ts", 1)]);
    }
}

/// An importer's old error whose message prints a type the change widens is still the base's.
#[tokio::test]
async fn an_old_error_whose_message_the_change_rewords_is_not_the_changes() {
    let repo = changed_repo(
        &[
            (
                "src/config.ts",
                "export const defaults = { port: 8080, host: 'localhost' };\n",
            ),
            (
                "src/server.ts",
                "import { defaults } from './config';\n\nexport const port: number = defaults;\n",
            ),
        ],
        &[(
            "src/config.ts",
            "export const defaults = { port: 8080, host: 'localhost', tls: false };\n",
        )],
    );
    let analysis = review(&repo, "tsc", true).await;
    assert!(unedited(&analysis).is_empty(), "{analysis:#?}");
    let checked = analysis.runs[0].importers.as_ref().unwrap();
    assert_eq!((checked.files.len(), checked.broken), (1, 0));
}

/// A generated module that grows past what the copy takes is in neither copy: its importers
/// do not lose it at head only.
#[tokio::test]
async fn a_module_grown_too_large_to_copy_breaks_nothing() {
    let generated = |count: usize| {
        let mut text = String::from("export interface User { id: string; name: string }\n");
        for i in 0..count {
            text.push_str(&format!(
                "export const op{i} = \"query Op{i} {{ field{i} }}\";\n"
            ));
        }
        text
    };
    let repo = TestRepo::with_files(&[
        ("src/gen/graphql.ts", &generated(20_000)),
        (
            "src/users.ts",
            "import { type User, op1 } from './gen/graphql';\n\nexport const q = op1;\nexport const show = (u: User) => u.name;\n",
        ),
    ]);
    repo.branch("change");
    repo.write("src/gen/graphql.ts", &generated(60_000));
    repo.commit("regenerate");
    let analysis = review(&repo, "tsc", true).await;
    assert!(unedited(&analysis).is_empty(), "{analysis:#?}");
}

/// A change that also edits `tsconfig.json` has its importers checked under the base's: its
/// aliased importers are not lost with the project's `paths`.
#[tokio::test]
async fn an_edited_tsconfig_does_not_lose_the_aliased_importers() {
    let tsconfig = r#"{ "compilerOptions": { "strict": true, "paths": { "@/*": ["./src/*"] } } }"#;
    let repo = TestRepo::with_files(&[
        ("tsconfig.json", tsconfig),
        (
            "src/user.ts",
            "export function getUser(id: number): string {\n  return `user ${id}`;\n}\n",
        ),
        (
            "src/pages/app.ts",
            "import { getUser } from '@/user';\n\nexport const first = getUser(1);\n",
        ),
    ]);
    repo.branch("change");
    repo.write(
        "src/user.ts",
        "export function fetchUser(id: number): string {\n  return `user ${id}`;\n}\n",
    );
    repo.write(
        "tsconfig.json",
        &tsconfig.replace("\"strict\": true", "\"strict\": false"),
    );
    repo.commit("change");
    let analysis = review(&repo, "tsc", true).await;
    assert_broken_at(&analysis, &[("src/pages/app.ts", 1)]);
}

/// A monorepo's app imports a package of its workspace by name (`@acme/core`, whose manifest
/// names a built entry the checkout does not have, and `@acme/core/money`): a parameter the
/// change adds to the package breaks both, though no `node_modules` links them.
#[tokio::test]
async fn a_change_to_a_workspace_package_breaks_the_apps_that_import_it_by_name() {
    let repo = changed_repo(
        &[
            ("package.json", r#"{ "private": true }"#),
            (
                "pnpm-workspace.yaml",
                "packages:\n  - 'packages/*'\n  - 'apps/*'\n",
            ),
            (
                "packages/core/package.json",
                r#"{ "name": "@acme/core", "main": "dist/index.js", "types": "dist/index.d.ts" }"#,
            ),
            (
                "packages/core/src/money.ts",
                "export function formatPrice(cents: number): string {\n  return `$${cents / 100}`;\n}\n",
            ),
            (
                "packages/core/src/index.ts",
                "export { formatPrice } from './money';\n",
            ),
            ("apps/web/package.json", r#"{ "name": "@acme/web" }"#),
            (
                "apps/web/src/cart.ts",
                "import { formatPrice } from '@acme/core';\n\nexport const shown = formatPrice(250);\n",
            ),
            (
                "apps/web/src/receipt.ts",
                "import { formatPrice } from '@acme/core/money';\n\nexport const paid = formatPrice(9);\n",
            ),
        ],
        &[(
            "packages/core/src/money.ts",
            "export function formatPrice(cents: number, currency: string): string {\n  \
         return `${currency} ${cents / 100}`;\n}\n",
        )],
    );
    let analysis = review(&repo, "tsc", true).await;
    // One cause, one finding: the other place is named in it.
    assert_broken_at(&analysis, &[("apps/web/src/cart.ts", 3)]);
    let also: Vec<_> = analysis.candidates[0].also_at.clone();
    assert_eq!(also, [("apps/web/src/receipt.ts".to_owned(), 3)]);
}

/// A uv workspace's app imports a member package by its module name (`acme_core`, under the
/// member's `src`): a parameter the change adds to the package breaks the app, though no
/// environment has the package installed.
#[tokio::test]
async fn a_change_to_a_uv_workspace_member_breaks_the_apps_that_import_it() {
    let repo = changed_repo(
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"acme\"\nversion = \"0\"\n\n[tool.uv.workspace]\nmembers = [\"packages/*\", \"apps/*\"]\n",
            ),
            (
                "packages/core/pyproject.toml",
                "[project]\nname = \"acme-core\"\n",
            ),
            (
                "packages/core/src/acme_core/__init__.py",
                "from acme_core.money import format_price\n",
            ),
            (
                "packages/core/src/acme_core/money.py",
                "def format_price(cents: int) -> str:\n    return f\"{cents / 100:.2f}\"\n",
            ),
            ("apps/api/pyproject.toml", "[project]\nname = \"api\"\n"),
            (
                "apps/api/src/api/cart.py",
                "from acme_core import format_price\n\n\ndef line(cents: int) -> str:\n    return format_price(cents)\n",
            ),
        ],
        &[(
            "packages/core/src/acme_core/money.py",
            "def format_price(cents: int, currency: str) -> str:\n    return f\"{currency} {cents / 100:.2f}\"\n",
        )],
    );
    let analysis = review(&repo, "ty", true).await;
    assert_broken_at(&analysis, &[("apps/api/src/api/cart.py", 5)]);
}

/// A change that renames a workspace package in its manifest alone breaks the apps that still
/// import it by its old name, its subpaths too: no module of code is edited.
#[tokio::test]
async fn renaming_a_workspace_package_breaks_the_apps_that_import_its_old_name() {
    let manifest = "{\n  \"name\": \"@acme/core\",\n  \"version\": \"1.0.0\"\n}\n";
    let repo = TestRepo::with_files(&[
        (
            "package.json",
            r#"{ "private": true, "workspaces": ["packages/*"] }"#,
        ),
        ("packages/core/package.json", manifest),
        ("packages/core/src/index.ts", "export const rate = 2;\n"),
        ("packages/core/src/tax.ts", "export const tax = 3;\n"),
        ("packages/web/package.json", "{ \"name\": \"web\" }"),
        (
            "packages/web/src/a.ts",
            "import { rate } from '@acme/core';\n\nexport const r = rate;\n",
        ),
        (
            "packages/web/src/b.ts",
            "import { tax } from '@acme/core/tax';\n\nexport const t = tax;\n",
        ),
    ]);
    repo.branch("change");
    repo.write(
        "packages/core/package.json",
        &manifest.replace("@acme/core", "@acme/pricing"),
    );
    repo.commit("change");
    let analysis = review(&repo, "tsc", true).await;
    // One cause, one finding: the other place is named in it.
    assert_broken_at(&analysis, &[("packages/web/src/a.ts", 1)]);
    let also: Vec<_> = analysis.candidates[0].also_at.clone();
    assert_eq!(also, [("packages/web/src/b.ts".to_owned(), 1)]);
}

/// A web app below the root (`web/tsconfig.json`, its `@/*` alias, beside a backend at the
/// root): its configuration applies to its files, so a change's own misuse through the alias
/// is found, and so is the page it breaks.
#[tokio::test]
async fn a_web_app_below_the_root_is_checked_under_its_own_configuration() {
    let repo = changed_repo(
        &[
            ("api/main.py", "def handler():\n    return 1\n"),
            (
                "web/tsconfig.json",
                r#"{ "compilerOptions": { "strict": true, "paths": { "@/*": ["./src/*"] } } }"#,
            ),
            (
                "web/src/lib/money.ts",
                "export function formatPrice(cents: number): string {\n  return `$${cents / 100}`;\n}\n",
            ),
            (
                "web/src/app/page.ts",
                "import { formatPrice } from '@/lib/money';\n\nexport const shown = formatPrice(250);\n",
            ),
        ],
        &[
            (
                "web/src/lib/money.ts",
                "export function formatPrice(cents: number, currency: string): string {\n  \
         return `${currency} ${cents / 100}`;\n}\n",
            ),
            (
                "web/src/app/cart.ts",
                "import { formatPrice } from '@/lib/money';\n\nexport const paid: number = formatPrice(3, 'EUR');\n",
            ),
        ],
    );
    let analysis = review(&repo, "tsc", true).await;
    assert_broken_at(&analysis, &[("web/src/app/page.ts", 3)]);
    assert_own_at(&analysis, &[("web/src/app/cart.ts", 3)]);
}

/// A Python backend below the root (`backend/requirements.txt`, beside a web app) imports its
/// packages from there (`from app.services.pricing import ...`): ty resolves them from the
/// file's own directories, in the tree and in the copy, and finds both the change's own wrong
/// return and the route it breaks.
#[tokio::test]
async fn a_python_backend_below_the_root_imports_from_its_own_directory() {
    let repo = changed_repo(
        &[
            ("frontend/package.json", "{ \"name\": \"frontend\" }"),
            ("backend/requirements.txt", "fastapi\n"),
            ("backend/app/__init__.py", ""),
            ("backend/app/services/__init__.py", ""),
            (
                "backend/app/services/pricing.py",
                "def price_of(cents: int) -> str:\n    return f\"{cents / 100:.2f}\"\n",
            ),
            (
                "backend/app/api.py",
                "from app.services.pricing import price_of\n\n\ndef show(cents: int) -> str:\n    return price_of(cents)\n",
            ),
        ],
        &[
            (
                "backend/app/services/pricing.py",
                "def price_of(cents: int, currency: str) -> str:\n    return f\"{currency} {cents / 100:.2f}\"\n",
            ),
            (
                "backend/app/cart.py",
                "from app.services.pricing import price_of\n\n\ndef total(cents: int) -> int:\n    return price_of(cents, \"EUR\")\n",
            ),
        ],
    );
    let analysis = review(&repo, "ty", true).await;
    assert_broken_at(&analysis, &[("backend/app/api.py", 5)]);
    assert_own_at(&analysis, &[("backend/app/cart.py", 5)]);
}

/// A Vite app's `tsconfig.json` only refers to `tsconfig.app.json` (strict, `@/*`) for `src`:
/// that is the configuration its files are checked under, so a value possibly `undefined`
/// through the alias is found, and the page a change breaks through it too.
#[tokio::test]
async fn a_vite_apps_files_are_checked_under_the_configuration_it_refers_to() {
    let repo = changed_repo(
        &[
            (
                "tsconfig.json",
                "{\n  \"files\": [],\n  \"references\": [{ \"path\": \"./tsconfig.app.json\" }, { \"path\": \"./tsconfig.node.json\" }]\n}\n",
            ),
            (
                "tsconfig.app.json",
                "{\n  \"compilerOptions\": {\n    /* Linting */\n    \"strict\": true,\n    \"paths\": { \"@/*\": [\"./src/*\"] }\n  },\n  \"include\": [\"src\"]\n}\n",
            ),
            (
                "tsconfig.node.json",
                "{ \"include\": [\"vite.config.ts\"] }",
            ),
            (
                "src/lib/users.ts",
                "export function findUser(id: string): { name: string } | undefined {\n  return id ? { name: id } : undefined;\n}\n",
            ),
            (
                "src/pages/profile.ts",
                "import { findUser } from '@/lib/users';\n\nexport const shown = findUser('a');\n",
            ),
        ],
        &[
            (
                "src/lib/users.ts",
                "export function findUser(id: string, org: string): { name: string } | undefined {\n  \
         return id ? { name: `${org}/${id}` } : undefined;\n}\n",
            ),
            (
                "src/components/hello.ts",
                "import { findUser } from '@/lib/users';\n\nexport const hello = (id: string) => findUser(id, 'x').name;\n",
            ),
        ],
    );
    let analysis = review(&repo, "tsc", true).await;
    assert_broken_at(&analysis, &[("src/pages/profile.ts", 3)]);
    assert_own_at(&analysis, &[("src/components/hello.ts", 3)]);
}
