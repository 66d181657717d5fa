//! biome's two rules on promises, with biome's own type inference across the files a module
//! imports (it runs in a copy of the tree with bugloop's configuration at its root): a promise
//! left floating and one misused, on the change's lines only; every way of handling a promise
//! is clean, and a configuration of the branch's, nested or not, turns nothing off.

use bugloop_testkit::TestRepo;

const STORE: &str = "export async function save(id: string): Promise<void> {\n  await fetch(`/items/${id}`, { method: \"PUT\" });\n}\n";

/// Turns every rule off where biome would read it: the branch's own configuration.
const OFF: &str = "{ \"root\": false, \"linter\": { \"enabled\": false } }\n";

#[tokio::test]
async fn a_promise_left_floating_or_given_to_for_each_is_found_and_a_handled_one_is_not() {
    let repo = TestRepo::with_files(&[
        ("src/store.ts", STORE),
        // An old floating promise: not the change's.
        (
            "src/old.ts",
            "import { save } from \"./store\";\n\nexport function old(): void {\n  save(\"old\");\n}\n",
        ),
    ]);
    repo.branch("change");
    repo.write("biome.json", OFF);
    repo.write("src/biome.jsonc", OFF);
    repo.write(
        "src/jobs.ts",
        "import { save } from \"./store\";\n\n\
         export function saveOne(id: string): string {\n  save(id);\n  return \"saved\";\n}\n\n\
         export async function saveAll(ids: string[]): Promise<void> {\n  ids.forEach(async (id) => {\n    await save(id);\n  });\n}\n\n\
         export async function handled(ids: string[]): Promise<void> {\n  void save(\"metric\");\n  await Promise.all(ids.map((id) => save(id)));\n  save(\"audit\").catch(() => undefined);\n  for (const id of ids) {\n    await save(id);\n  }\n}\n\n\
         export function returned(id: string): Promise<void> {\n  return save(id);\n}\n",
    );
    repo.commit("jobs");
    let analysis = super::run_built_in(&repo, "biome").await;
    let mut found: Vec<(&str, u32, u8)> = analysis
        .candidates
        .iter()
        .map(|c| (c.hit.rule.as_str(), c.hit.line, c.score.get()))
        .collect();
    found.sort_unstable();
    assert_eq!(
        found,
        [
            (
                "lint/nursery/noFloatingPromises",
                repo.line_of("src/jobs.ts", "  save(id);"),
                6
            ),
            (
                "lint/nursery/noMisusedPromises",
                repo.line_of("src/jobs.ts", "forEach"),
                6
            ),
        ],
        "{analysis:#?}"
    );
}

#[tokio::test]
async fn a_script_whose_name_holds_a_backslash_is_said_not_checked() {
    let repo = TestRepo::with_files(&[("src/store.ts", STORE)]);
    repo.branch("change");
    repo.write(
        "util\\helpers.js",
        "export const kind = (x) => typeof x === \"strnig\";\n",
    );
    repo.commit("helpers");
    let analysis = super::run_built_in(&repo, "biome").await;
    let run = &analysis.runs[0];
    assert!(
        run.unanalyzed
            .iter()
            .any(|u| u.path.contains("helpers.js") && u.reason.contains("backslash")),
        "{analysis:#?}"
    );
}

/// A monorepo's app calls a workspace package's async function by the package's name, whose
/// manifest names a built entry the checkout does not have: biome knows it returns a promise,
/// as it would with the workspace installed.
#[tokio::test]
async fn a_promise_of_a_workspace_package_left_floating_is_found() {
    let repo = TestRepo::with_files(&[
        (
            "package.json",
            r#"{ "private": true, "workspaces": ["packages/*"] }"#,
        ),
        (
            "packages/store/package.json",
            r#"{ "name": "@acme/store", "main": "dist/index.js", "types": "dist/index.d.ts" }"#,
        ),
        ("packages/store/src/index.ts", STORE),
        ("packages/web/package.json", r#"{ "name": "web" }"#),
    ]);
    repo.branch("change");
    repo.write(
        "packages/web/src/jobs.ts",
        "import { save } from \"@acme/store\";\n\n\
         export function saveOne(id: string): string {\n  save(id);\n  return \"saved\";\n}\n",
    );
    repo.commit("jobs");
    let analysis = super::run_built_in(&repo, "biome").await;
    assert_eq!(
        super::rules(&analysis),
        [("lint/nursery/noFloatingPromises", 4)],
        "{analysis:#?}"
    );
}
