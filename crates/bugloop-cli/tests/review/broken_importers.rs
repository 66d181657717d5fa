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

const TOTAL: &str = "package pricing\n\n// Total is the price of n items at unit cents each.\nfunc Total(n int, unit int) int {\n\treturn n * unit\n}\n";

/// go vet compiles the whole module: a package the change does not edit that no longer
/// compiles is a finding; a push that makes the changed package itself fail to compile (so
/// that go vet no longer reaches the caller) does not resolve it; mending the cause does.
#[test]
fn a_go_caller_a_new_parameter_broke_stays_open_until_the_cause_is_mended() {
    let repo = TestRepo::with_files(&[
        (".bugloop/config.yml", PUBLISH),
        ("go.mod", "module example.com/shop\n\ngo 1.19\n"),
        ("pricing/pricing.go", TOTAL),
        (
            "orders/orders.go",
            "package orders\n\nimport \"example.com/shop/pricing\"\n\n// Charge is what n items cost.\nfunc Charge(n int) int {\n\treturn pricing.Total(n, 250)\n}\n",
        ),
    ]);
    repo.branch("change");
    let with_discount = TOTAL
        .replace("unit int)", "unit int, discount int)")
        .replace("n * unit", "n*unit - discount");
    repo.write("pricing/pricing.go", &with_discount);
    repo.commit("a discount");
    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[]);
    let report = review_json(repo.path(), &model, &[]);
    let broken = finding(&report, "compile").unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(
        (broken["file"].as_str(), broken["line"].as_u64()),
        (Some("orders/orders.go"), Some(7))
    );
    let id = broken["id"].as_str().unwrap().to_owned();

    // The changed package no longer compiles: go vet stops there, and the caller stays open.
    repo.write(
        "pricing/pricing.go",
        &with_discount.replace(
            "\treturn n*unit",
            "\tvar label string = n\n\treturn len(label) + n*unit",
        ),
    );
    repo.commit("a label");
    let stopped = review_json(repo.path(), &model, &[]);
    let list = stdout(&bugloop(repo.path(), &["findings"]));
    assert!(!list.contains("RESOLVED"), "{list}\n{stopped:#}");

    // The parameter taken away again: `orders/orders.go` did not change, and it is resolved.
    repo.write(
        "pricing/pricing.go",
        &format!("{TOTAL}\n// Discounts come later.\n"),
    );
    repo.commit("no discount after all");
    let mended = review_json(repo.path(), &model, &[]);
    let list = stdout(&bugloop(repo.path(), &["findings"]));
    assert!(list.contains("RESOLVED"), "{list}\n{mended:#}");
    let said = mended.to_string();
    assert!(
        said.contains(&id) && said.contains("no longer reports"),
        "{mended:#}"
    );
}
