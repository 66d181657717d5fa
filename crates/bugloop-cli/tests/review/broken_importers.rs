//! A change that breaks a file it does not edit, through the binary with tsc and a scripted
//! model: the caller a rename broke is a finding (in the summary: its line is not in the diff),
//! it stays open while the change still breaks it, and it is resolved when the cause is mended
//! where the change made it, although the broken file never changes.

use bugloop_testkit::TestRepo;
use serde_json::Value;

use super::analyzers::{PUBLISH, finding, review_json};
use super::{bugloop, script, stdout};

const USER: &str = "export function getUser(id: number): string {\n  return `user ${id}`;\n}\n";

/// A repository whose change renames `getUser`, which `src/app.ts` imports, reviewed once.
fn renamed() -> (TestRepo, tempfile::TempDir, String, Value) {
    let repo = TestRepo::with_files(&[
        (".bugloop/config.yml", PUBLISH),
        ("src/user.ts", USER),
        (
            "src/app.ts",
            "import { getUser } from './user';\n\nexport const first = getUser(1);\n",
        ),
    ]);
    repo.branch("change");
    repo.write("src/user.ts", &USER.replace("getUser", "fetchUser"));
    repo.commit("rename getUser");
    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[]);
    let report = review_json(repo.path(), &model, &[]);
    (repo, scripts, model, report)
}

#[test]
fn a_caller_a_rename_broke_is_found_and_resolved_when_the_name_comes_back() {
    let (repo, _scripts, model, report) = renamed();
    let broken = finding(&report, "TS2305").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(broken["file"], "src/app.ts");
    assert_eq!(broken["line"], 1);
    let description = broken["description"].as_str().unwrap();
    assert!(description.contains("does not edit"), "{description}");
    let id = broken["id"].clone();

    // Another edit of the renamed module leaves the caller broken: the finding stays open.
    repo.write(
        "src/user.ts",
        &format!("{}// users\n", USER.replace("getUser", "fetchUser")),
    );
    repo.commit("comment");
    let again = review_json(repo.path(), &model, &[]);
    let list = stdout(&bugloop(repo.path(), &["findings"]));
    assert!(
        list.contains("PENDING") && !list.contains("RESOLVED"),
        "{list}\n{again:#}"
    );

    // The old name back: `src/app.ts` did not change, and its finding is resolved.
    repo.write("src/user.ts", USER);
    repo.commit("put the name back");
    let mended = review_json(repo.path(), &model, &[]);
    let list = stdout(&bugloop(repo.path(), &["findings"]));
    assert!(list.contains("RESOLVED"), "{list}\n{mended:#}");
    let resolved = mended.to_string();
    assert!(
        resolved.contains(id.as_str().unwrap()) && resolved.contains("no longer"),
        "{mended:#}"
    );
}
