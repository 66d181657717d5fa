//! A finding is tracked until its code is fixed, whatever the fix looks like: a line put back as
//! the base has it, a line or a file deleted, the code moved elsewhere. Each is a push after a
//! review, reviewed again through the binary with a scripted model, in a repository without a
//! `.gitignore` or any of bugloop's conventions.

use std::path::Path;

use bugloop_testkit::json::entries_where;
use bugloop_testkit::model::{
    STATS_BASE as BASE, stats_feature as feature, stats_off_by_one as off_by_one,
};
use bugloop_testkit::{TestRepo, assert_contains};
use serde_json::{Value, json};

use super::{bugloop, empty_script, findings_json, json_output, script, stderr, stdout};

/// A repository on `feature`, reviewed once: the off-by-one is open. Its id, and where the
/// test's models are written.
fn reviewed() -> (TestRepo, String, Models) {
    // The model's finding alone: bugloop's own rule finds this off-by-one too, and its hit would
    // take a triage call these scripts do not answer (review::analyzers tracks such findings).
    let repo = TestRepo::with_files(&[
        ("stats.py", BASE),
        (".bugloop/config.yml", "review:\n  analyzers: []\n"),
    ]);
    repo.branch("feature");
    repo.write("stats.py", &feature());
    repo.commit("second");
    let models = Models(tempfile::tempdir().unwrap());
    let report = review(repo.path(), &models.reporting(&[off_by_one()]), 1);
    let id = report["findings"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(report["findings"][0]["action"], "added", "{report:#}");
    (repo, id, models)
}

/// The directory a test's scripted models are written to.
struct Models(tempfile::TempDir);

impl Models {
    /// A model whose review reports `findings`.
    fn reporting(&self, findings: &[Value]) -> String {
        script(self.0.path(), findings)
    }

    /// A model whose review reports nothing.
    fn quiet(&self) -> String {
        self.reporting(&[])
    }

    /// A model with no answers at all: any call to it fails the review.
    fn silent(&self) -> String {
        empty_script(self.0.path())
    }
}

/// `bugloop review --format json`, expecting `code`.
fn review(dir: &Path, model: &str, code: i32) -> Value {
    let args = [
        "review",
        "--model",
        model,
        "--format",
        "json",
        "--fail-on",
        "7",
    ];
    json_output(dir, &args, code)
}

fn threads(dir: &Path) -> Vec<Value> {
    findings_json(dir).as_array().unwrap().clone()
}

/// The finding's one thread: its status, and how many comments bugloop wrote in it.
fn thread(dir: &Path, id: &str) -> (String, String) {
    let all = threads(dir);
    assert_eq!(all.len(), 1, "one finding, one thread: {all:#?}");
    let show = bugloop(dir, &["findings", "show", id]);
    assert_eq!(show.status.code(), Some(0), "{}", stderr(&show));
    (all[0]["status"].as_str().unwrap().to_owned(), stdout(&show))
}

fn short(repo: &TestRepo) -> String {
    repo.head()[..7].to_owned()
}

fn sarif_ids(dir: &Path, model: &str) -> Vec<String> {
    let output = bugloop(dir, &["review", "--model", model, "--format", "sarif"]);
    let sarif: Value = serde_json::from_str(&stdout(&output)).unwrap();
    sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["properties"]["bugloopId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_line_put_back_as_the_base_has_it_resolves_and_a_revert_raises_it_again() {
    let (repo, id, models) = reviewed();
    let quiet = models.quiet();

    // A push elsewhere: the finding is tracked in SARIF from earlier reviews.
    repo.write(
        "stats.py",
        &feature().replace("if xs else 0", "if xs else 0.0"),
    );
    repo.commit("spread of floats");
    assert_eq!(sarif_ids(repo.path(), &quiet), std::slice::from_ref(&id));

    // The fix most people make: the line as the base branch has it.
    repo.write(
        "stats.py",
        &feature()
            .replace("range(len(xs) + 1)", "range(len(xs))")
            .replace("if xs else 0", "if xs else 0.0"),
    );
    repo.commit("fix the loop");
    let fixed = short(&repo);
    // A later commit of something else did not fix it: the fix is credited to its own commit.
    repo.write("NOTES.md", "Spread is population spread.\n");
    repo.commit("notes");
    let report = review(repo.path(), &quiet, 0);
    let reason = format!("the code it quoted was changed in {fixed}");
    assert_eq!(
        report["resolved"],
        json!([{"id": id, "title": "Loop reads one past the end", "reason": reason}]),
        "{report:#}"
    );
    assert_eq!(report["rechecked"][0]["outcome"], "resolved", "{report:#}");
    assert_eq!(report["usage"]["model_calls"], 4, "it was asked about");
    // The file put back counts among the files reviewed since: its finding was looked at.
    assert_eq!(
        report["scope"]["files"],
        json!(["NOTES.md", "stats.py"]),
        "{report:#}"
    );
    let (status, shown) = thread(repo.path(), &id);
    assert_eq!(status, "RESOLVED");
    assert_contains(&shown, &reason);
    // Code scanning closes the alert: the finding is no longer in the SARIF.
    assert_eq!(sarif_ids(repo.path(), &quiet), Vec::<String>::new());

    // The fix reverted: the same finding, raised again in its own thread.
    repo.git(&["revert", "--no-edit", "HEAD~1"]);
    let report = review(repo.path(), &models.reporting(&[off_by_one()]), 1);
    assert_eq!(report["findings"][0]["id"], id.as_str(), "{report:#}");
    assert_eq!(report["findings"][0]["action"], "reopened", "{report:#}");
    let (status, shown) = thread(repo.path(), &id);
    assert_eq!(status, "PENDING");
    assert_contains(&shown, "Raised again");
    assert_eq!(shown.matches("### Loop reads one past the end").count(), 1);
    assert_eq!(sarif_ids(repo.path(), &quiet), [id]);
}

#[test]
fn a_deleted_line_or_a_deleted_file_resolves_its_finding() {
    let delete_the_loop = |repo: &TestRepo| {
        repo.write(
            "stats.py",
            &feature().replace(
                "    for i in range(len(xs) + 1):\n        total += xs[i]\n",
                "",
            ),
        );
        repo.commit("no loop");
    };
    let delete_the_file = |repo: &TestRepo| {
        std::fs::remove_file(repo.path().join("stats.py")).unwrap();
        repo.commit("no stats");
    };
    // Each in a repository of its own, reviewed once before the deletion is pushed.
    for (delete, said) in [
        (&delete_the_loop as &dyn Fn(&TestRepo), ""),
        (&delete_the_file, " (stats.py was deleted)"),
    ] {
        let (repo, id, models) = reviewed();
        delete(&repo);
        let report = review(repo.path(), &models.quiet(), 0);
        assert_eq!(
            report["resolved"][0]["reason"],
            format!("the code it quoted was removed in {}{said}", short(&repo)),
            "{report:#}"
        );
        assert_eq!(thread(repo.path(), &id).0, "RESOLVED");
    }
}

#[test]
fn code_moved_to_another_file_is_followed_never_both_followed_and_resolved() {
    let moved = |repo: &TestRepo| {
        repo.write("stats.py", "from util import mean\n");
        repo.write("util.py", &format!("import math\n\n\n{}", feature()));
        repo.commit("move to util");
    };
    // The model says nothing: bugloop sees the same code at util.py:6, the finding points there.
    let (repo, id, models) = reviewed();
    moved(&repo);
    let report = review(repo.path(), &models.quiet(), 1);
    assert_eq!(report["resolved"], json!([]), "{report:#}");
    let rechecked = &report["rechecked"][0];
    assert_eq!(rechecked["outcome"], "kept_open", "{report:#}");
    assert!(
        rechecked["change"].as_str().unwrap().contains("util.py:6"),
        "{report:#}"
    );
    let all = threads(repo.path());
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["status"], "PENDING");
    let show = stdout(&bugloop(repo.path(), &["findings", "show", &id]));
    assert_contains(&show, "`util.py:6`");

    // The model reports it at its new place, under a new id: the same finding, one comment.
    let (repo, id, models) = reviewed();
    moved(&repo);
    let mut again = off_by_one();
    again["file"] = json!("util.py");
    again["line"] = json!(6);
    again["title"] = json!("Index past the end in mean");
    let report = review(repo.path(), &models.reporting(&[again]), 1);
    assert_eq!(report["findings"][0]["id"], id.as_str(), "{report:#}");
    assert_eq!(report["rechecked"][0]["outcome"], "reported_again");
    assert_eq!(report["resolved"], json!([]));
    let all = threads(repo.path());
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["status"], "PENDING");
}

#[test]
fn a_push_elsewhere_in_the_file_keeps_the_finding_without_a_model_call() {
    let (repo, id, models) = reviewed();
    // `spread` put back as the base has it: nothing new to show, the finding's lines untouched.
    repo.write(
        "stats.py",
        &BASE.replace("range(len(xs))", "range(len(xs) + 1)"),
    );
    repo.commit("spread as it was");
    // A model that is never asked: any call would fail the review.
    let report = review(repo.path(), &models.silent(), 1);
    assert_eq!(report["usage"]["model_calls"], 0, "{report:#}");
    assert_eq!(report["errors"], json!([]));
    assert_eq!(report["scope"]["kept_findings"], 1);
    assert_eq!(report["rechecked"], json!([]));
    assert_eq!(thread(repo.path(), &id).0, "PENDING");
}

#[test]
fn without_an_answer_a_gone_finding_stays_open_and_the_report_says_why() {
    let (repo, id, models) = reviewed();
    repo.write(
        "stats.py",
        &feature().replace("range(len(xs) + 1)", "range(len(xs))"),
    );
    repo.commit("fix");
    let report = review(repo.path(), &models.silent(), 3);
    let rechecked = &report["rechecked"][0];
    assert_eq!(rechecked["outcome"], "kept_open", "{report:#}");
    assert_contains(
        rechecked["reason"].as_str().unwrap(),
        "the model gave no answer about it",
    );
    assert_eq!(report["resolved"], json!([]));
    assert_eq!(thread(repo.path(), &id).0, "PENDING");
    // Answered next time, it resolves.
    let report = review(repo.path(), &models.quiet(), 0);
    assert_eq!(report["resolved"][0]["id"], id.as_str(), "{report:#}");
}

#[test]
fn said_again_more_mildly_a_finding_keeps_its_score() {
    let (repo, id, models) = reviewed();
    let mut milder = off_by_one();
    milder["id"] = json!(id);
    milder["score"] = json!(5);
    let output = bugloop(
        repo.path(),
        &[
            "review",
            "--full",
            "--model",
            &models.reporting(&[milder]),
            "--format",
            "json",
        ],
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["findings"][0]["score"], 8, "{report:#}");
    let all = threads(repo.path());
    assert_eq!(all[0]["score"], 8, "{all:#?}");
}

/// Rewriting the bad line without fixing it (spaces taken out, the line split in two) does not
/// make its code "gone": the finding is asked about and, the model silent, stays open.
#[test]
fn a_reformatted_line_is_not_a_fix() {
    let (repo, id, models) = reviewed();
    repo.write(
        "stats.py",
        &feature().replace(
            "    for i in range(len(xs) + 1):",
            "    for i in range(\n        len(xs)+1):",
        ),
    );
    repo.commit("reformat");
    let report = review(repo.path(), &models.quiet(), 1);
    assert_eq!(report["resolved"], json!([]), "{report:#}");
    assert_eq!(report["rechecked"][0]["outcome"], "kept_open", "{report:#}");
    assert_eq!(thread(repo.path(), &id).0, "PENDING");
}

#[test]
fn code_pushed_down_by_lines_added_above_it_is_followed_and_never_raised_twice() {
    let (repo, id, models) = reviewed();
    // Ten imports above the function: the loop is on line 13 now, not 3.
    let imports: String = (0..10).map(|i| format!("import m{i}\n")).collect();
    repo.write("stats.py", &format!("{imports}{}", feature()));
    repo.commit("imports");
    // Still open: the review fails on it.
    let report = review(repo.path(), &models.quiet(), 1);
    assert_eq!(report["resolved"], json!([]), "{report:#}");
    let all = threads(repo.path());
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["line"], 13, "it follows its code: {all:#?}");
    // Code scanning sees the same alert, under the rule it was first filed under, at its line.
    let output = bugloop(
        repo.path(),
        &["review", "--model", &models.quiet(), "--format", "sarif"],
    );
    let sarif: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "logic", "{sarif:#}");
    assert_eq!(
        result["partialFingerprints"]["bugloopFindingId/v1"],
        id.as_str()
    );
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        13
    );

    // Five more imports, and the same bug reported where it is now, weighed higher: the same
    // finding, in its one thread, with the new weight at the new place.
    let more: String = (10..15).map(|i| format!("import m{i}\n")).collect();
    repo.write("stats.py", &format!("{imports}{more}{}", feature()));
    repo.commit("more imports");
    let mut again = off_by_one();
    again["line"] = json!(18);
    again["score"] = json!(9);
    again["category"] = json!("security");
    let report = review(repo.path(), &models.reporting(&[again]), 1);
    let added = entries_where(&report["findings"], "action", "added");
    assert!(added.is_empty(), "{report:#}");
    let (status, shown) = thread(repo.path(), &id);
    assert_eq!(status, "PENDING");
    assert_eq!(
        shown.matches("### Loop reads one past the end").count(),
        1,
        "{shown}"
    );
    assert_contains(&shown, "score 9/10 · security** · `stats.py:18`");
    // The header says where it is now; the comment's own anchor stays where it was written.
    assert!(
        shown
            .lines()
            .next()
            .unwrap()
            .ends_with(" · score 9 · stats.py:18"),
        "{shown}"
    );
}

#[test]
fn after_a_rebase_a_finding_follows_its_code_not_a_copy_of_its_line() {
    let (repo, id, models) = reviewed();
    // main gains ten lines above the function, one of them a copy of the finding's line.
    repo.git(&["checkout", "-q", "main"]);
    let mut above: String = (0..9).map(|i| format!("import m{i}\n")).collect();
    above.push_str("# was: for i in range(len(xs) + 1):\n");
    repo.write("stats.py", &format!("{above}{BASE}"));
    repo.commit("imports");
    repo.git(&["checkout", "-q", "feature"]);
    repo.git(&["rebase", "-q", "main"]);
    let report = review(repo.path(), &models.quiet(), 1);
    let scope = report["scope"].to_string();
    assert!(scope.contains("rewritten"), "a full review: {report:#}");
    let all = threads(repo.path());
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0]["finding_id"], id.as_str(), "{all:#?}");
    assert_eq!(all[0]["line"], 13, "its code, not the comment: {all:#?}");
}

#[test]
fn a_full_review_weighs_a_fixed_finding_though_its_line_stands_elsewhere() {
    let (repo, id, models) = reviewed();
    // The same loop, on purpose, in a function below; then the finding's own loop fixed.
    let twin = "\n\ndef padded(xs):\n    for i in range(len(xs) + 1):\n        yield xs[i] if i < len(xs) else 0\n";
    repo.write("stats.py", &format!("{}{twin}", feature()));
    repo.commit("padded");
    review(repo.path(), &models.quiet(), 1);
    let fixed = feature().replace("range(len(xs) + 1)", "range(len(xs))");
    repo.write("stats.py", &format!("{fixed}{twin}"));
    repo.commit("fix the loop");
    let args = [
        "review",
        "--full",
        "--model",
        &models.quiet(),
        "--format",
        "json",
    ];
    let report = json_output(repo.path(), &args, 0);
    assert_eq!(report["resolved"][0]["id"], id.as_str(), "{report:#}");
}

/// A finding reported again in other words and as another kind (the off-by-one called a crash)
/// keeps the kind it was filed under: its comment is updated, its SARIF rule is the same, so
/// code scanning keeps one alert. (Only a report as a security bug changes its kind.)
#[test]
fn a_finding_reported_again_as_another_kind_keeps_its_own() {
    let (repo, id, models) = reviewed();
    let mut as_crash = off_by_one();
    as_crash["category"] = json!("reliability");
    as_crash["score"] = json!(9);
    as_crash["title"] = json!("Out-of-bounds read past the list");
    let again = models.reporting(&[as_crash]);
    let output = bugloop(
        repo.path(),
        &["review", "--full", "--model", &again, "--format", "sarif"],
    );
    let sarif: Value = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&output), stderr(&output)));
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif:#}");
    assert_eq!(results[0]["properties"]["bugloopId"], id.as_str());
    assert_eq!(results[0]["ruleId"], "logic", "{sarif:#}");
    let (status, shown) = thread(repo.path(), &id);
    assert_eq!(status, "PENDING");
    assert_contains(&shown, "Out-of-bounds read past the list");
}
