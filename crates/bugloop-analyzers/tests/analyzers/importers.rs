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

/// A change that breaks a workspace package and makes its manifest a link (two entries of the
/// diff at one path, deleted and added): the base's manifest is what the comparison puts back,
/// so the app that no longer finds the package is said.
#[tokio::test]
async fn a_manifest_the_change_makes_a_link_is_the_bases_in_the_comparison() {
    let repo = TestRepo::with_files(&[
        (
            "package.json",
            r#"{ "private": true, "workspaces": ["packages/*", "apps/*"] }"#,
        ),
        (
            "packages/core/package.json",
            r#"{ "name": "@acme/core", "main": "src/index.ts" }"#,
        ),
        (
            "packages/core/src/index.ts",
            "export const rate = (n: number) => n;\n",
        ),
        (
            "apps/web/src/cart.ts",
            "import { rate } from '@acme/core';\n\nexport const r = rate(1);\n",
        ),
    ]);
    repo.branch("change");
    std::fs::remove_file(repo.path().join("packages/core/package.json")).unwrap();
    std::os::unix::fs::symlink(
        "/nonexistent/package.json",
        repo.path().join("packages/core/package.json"),
    )
    .unwrap();
    repo.write(
        "packages/core/src/index.ts",
        "export const rate = (n: number, m: number) => n * m;\n",
    );
    repo.commit("link");
    let analysis = review(&repo, "tsc", true).await;
    assert_broken_at(&analysis, &[("apps/web/src/cart.ts", 1)]);
}

/// A change that breaks a workspace package and grows its manifest past what is read (3 MB):
/// the manifest declares no package at head, so the app importing it is said to no longer find
/// it, rather than the break hidden by leaving the manifest out at head and base alike.
#[tokio::test]
async fn a_manifest_grown_past_what_is_read_hides_no_break() {
    let manifest = |filler: &str| {
        format!(r#"{{ "name": "@acme/core", "main": "src/index.ts", "description": "{filler}" }}"#)
    };
    let repo = changed_repo(
        &[
            (
                "package.json",
                r#"{ "private": true, "workspaces": ["packages/*", "apps/*"] }"#,
            ),
            ("packages/core/package.json", &manifest("core")),
            (
                "packages/core/src/index.ts",
                "export const rate = (n: number) => n;\n",
            ),
            (
                "apps/web/src/cart.ts",
                "import { rate } from '@acme/core';\n\nexport const r = rate(1);\n",
            ),
        ],
        &[
            (
                "packages/core/package.json",
                &manifest(&"x".repeat(3 << 20)),
            ),
            (
                "packages/core/src/index.ts",
                "export const rate = (n: number, m: number) => n * m;\n",
            ),
        ],
    );
    let analysis = review(&repo, "tsc", true).await;
    assert_broken_at(&analysis, &[("apps/web/src/cart.ts", 1)]);
}
