//! A fix proven by the same test (`review.prove`): `bugloop fix` on a proven finding puts the
//! finding's test in the tree, and commits only when bugloop's own run of that test passes
//! after the agent's change; with `review.prove.commit_tests` the test is committed with the fix.
//! The agent cannot make the test pass by weakening it: it is put back as it was before it runs.

use std::path::Path;

use bugloop_testkit::{TestRepo, assert_contains};
use serde_json::{Value, json};

use super::prove::{CONFIG, FAILING_TEST, past_the_end, repository, script};
use super::review_report as review;
use super::{agent_script, bugloop, stderr, stdout};

/// Reviews the off-by-one of `repository` and proves it; the finding's id.
fn proven(repo: &Path, scripts: &Path) -> String {
    let model = script(
        scripts,
        &past_the_end(),
        FAILING_TEST,
        Some(json!({"shows_the_problem": true, "why": "IndexError in mean"})),
    );
    let report = review(repo, &model);
    assert_eq!(report["proofs"][0]["status"], "proven", "{report:#}");
    report["findings"][0]["id"].as_str().unwrap().to_owned()
}

/// A repository with `config`, its off-by-one reviewed and proven: the repository, the directory
/// of its scripts, the finding's id and the head before any fix.
fn proven_repository(config: &str) -> (TestRepo, tempfile::TempDir, String, String) {
    let repo = repository(config);
    let scripts = tempfile::tempdir().unwrap();
    let id = proven(repo.path(), scripts.path());
    let before = repo.git(&["rev-parse", "HEAD"]);
    (repo, scripts, id, before)
}

/// A fix agent's script: each call in its own turn, then its summary.
fn fix_script(dir: &Path, calls: &[Value]) -> String {
    agent_script(dir, "fix.jsonl", calls, "Fixed.")
}

fn fix(repo: &Path, model: &str) -> (Option<i32>, Value) {
    let output = bugloop(
        repo,
        &["fix", "--all", "--model", model, "--format", "json"],
    );
    let text = stdout(&output);
    let report: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}{}", stderr(&output)));
    (output.status.code(), report)
}

const THE_FIX: &str = r#"{"name": "edit_file", "arguments": {"path": "stats.py", "old_text": "range(len(xs) + 1)", "new_text": "range(len(xs))"}}"#;

/// The fix agent's script that makes the one right edit.
fn the_fix(scripts: &Path) -> String {
    fix_script(scripts, &[serde_json::from_str(THE_FIX).unwrap()])
}

#[test]
fn a_fix_that_makes_the_proofs_test_pass_is_committed_with_it() {
    let (repo, scripts, id, before) =
        proven_repository(&format!("{CONFIG}    commit_tests: true\n"));
    let (code, report) = fix(repo.path(), &the_fix(scripts.path()));
    assert_eq!(code, Some(0), "{report:#}");
    // bugloop's own run of the proof's test, after the fix.
    let runs = report["build"]["verify"].as_array().unwrap();
    let proof_run = runs
        .iter()
        .find(|r| {
            r["command"]
                .as_str()
                .unwrap()
                .contains(&format!("the test proving {id}"))
        })
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(proof_run["passed"], true, "{report:#}");
    // The proof's test was the change's check: not "committed unverified".
    assert_eq!(report["build"]["status"]["unverified"], false, "{report:#}");
    assert_eq!(
        proof_run["command"],
        format!("python3 -m unittest -q test_mean_proof.py (the test proving {id})")
    );
    // One commit: the fix and the test, as a regression test.
    let files = repo.git(&["diff", "--name-only", &format!("{}..HEAD", before.trim())]);
    assert_eq!(files.trim(), "stats.py\ntest_mean_proof.py", "{report:#}");
    assert_eq!(
        repo.git(&["show", "HEAD:test_mean_proof.py"]),
        FAILING_TEST.trim_end(),
        "the test as it proved the finding"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn without_commit_tests_the_test_must_pass_but_is_not_committed() {
    let (repo, scripts, id, before) = proven_repository(CONFIG);
    let (code, report) = fix(repo.path(), &the_fix(scripts.path()));
    assert_eq!(code, Some(0), "{report:#}");
    assert!(
        report["build"]["verify"]
            .to_string()
            .contains(&format!("the test proving {id}")),
        "{report:#}"
    );
    let files = repo.git(&["diff", "--name-only", &format!("{}..HEAD", before.trim())]);
    assert_eq!(files.trim(), "stats.py", "{report:#}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// The agent changes something else, and rewrites the test so that it passes: bugloop puts the
/// test back, runs it, it still fails, and nothing is committed.
#[test]
fn a_fix_that_leaves_the_proofs_test_failing_is_refused() {
    let (repo, scripts, id, before) =
        proven_repository(&format!("{CONFIG}    commit_tests: true\n"));
    let weakened = "import unittest\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        pass\n";
    let (code, report) = fix(
        repo.path(),
        &fix_script(
            scripts.path(),
            &[
                json!({"name": "edit_file", "arguments": {"path": "stats.py", "old_text": "def mean(xs):", "new_text": "def mean(xs):  # the mean"}}),
                json!({"name": "write_file", "arguments": {"path": "test_mean_proof.py", "content": weakened}}),
            ],
        ),
    );
    assert_eq!(code, Some(1), "{report:#}");
    let status = &report["build"]["status"];
    assert_eq!(status["status"], "verify_failed", "{report:#}");
    assert_eq!(
        status["command"],
        format!("python3 -m unittest -q test_mean_proof.py (the test proving {id})")
    );
    assert!(
        status["output"].as_str().unwrap().contains("IndexError"),
        "{report:#}"
    );
    assert_eq!(
        repo.git(&["rev-parse", "HEAD"]),
        before,
        "nothing committed"
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // The finding is still open.
    let open = stdout(&bugloop(repo.path(), &["findings"]));
    assert_contains(&open, &id);
}

/// converge: the audit's finding is proven by a failing test, so the model validator does not
/// judge it (the script has no answer for a judge); the loop's fix must make the test pass, and
/// the next audit is clean.
#[test]
fn converge_counts_a_proven_finding_as_confirmed_and_its_fix_passes_the_test() {
    let repo = repository(&format!(
        "{CONFIG}    commit_tests: true\nconverge:\n  validator: model\n"
    ));
    let scripts = tempfile::tempdir().unwrap();
    let mut agent = vec![
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "test_mean_proof.py", "content": FAILING_TEST}}]}),
        json!({"text": "test_mean_proof.py fails at head."}),
        json!({"text": json!({"shows_the_problem": true, "why": "IndexError in mean"}).to_string()}),
        json!({"tool_calls": [serde_json::from_str::<Value>(THE_FIX).unwrap()]}),
        json!({"text": "Fixed."}),
    ];
    // The second audit: four passes, nothing found.
    for pass in 1..=4 {
        agent.push(json!({"tool_calls": [{"name": "submit_pass_results", "arguments": {"pass_number": pass, "summary": "clean"}}]}));
    }
    let model = super::prove::script_of(scripts.path(), &past_the_end(), agent);
    let before = repo.git(&["rev-parse", "HEAD"]);
    let branch = repo.git(&["branch", "--show-current"]);
    let branch = branch.trim();
    // The author described the branch (git's own description); converge keeps it above its section.
    repo.git(&[
        "config",
        &format!("branch.{branch}.description"),
        "Speeds up mean.\n\nTested by hand.",
    ]);
    let output = bugloop(
        repo.path(),
        &["converge", "--model", &model, "--format", "json"],
    );
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["exit"], "converged", "{report:#}");
    let log = report["log"].to_string();
    assert!(log.contains("(1 proven by a failing test)"), "{report:#}");
    assert!(log.contains("(verified)"), "{report:#}");
    let files = repo.git(&["diff", "--name-only", &format!("{}..HEAD", before.trim())]);
    assert_eq!(files.trim(), "stats.py\ntest_mean_proof.py", "{report:#}");
    // The description: the author's text, then what the loops found and fixed.
    let described = repo.git(&["config", &format!("branch.{branch}.description")]);
    assert!(
        described.starts_with(
            "Speeds up mean.\n\nTested by hand.\n\n<!-- bugloop:converge-description -->\n"
        ),
        "{described}"
    );
    assert!(
        described
            .contains("**Final state:** converged: the last audit found nothing after 3 loops"),
        "{described}"
    );
    assert_contains(&described, "| 2 | fix | ");
    assert_contains(&described, "| 3 | audit | 0P0 0P1 0P2 (clean) |");
    assert_eq!(
        report["description"].as_str().map(str::trim_end),
        described
            .split_once("\n\n<!--")
            .map(|(_, s)| format!("<!--{s}"))
            .as_deref()
            .map(str::trim_end),
        "{report:#}"
    );
    // A second run on the clean head changes nothing, and the section is there once.
    let again = bugloop(repo.path(), &["converge", "--model", &model]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let after = repo.git(&["config", &format!("branch.{branch}.description")]);
    assert_eq!(after, described);
    assert_eq!(
        after
            .matches("<!-- bugloop:converge-description -->")
            .count(),
        1
    );
}
