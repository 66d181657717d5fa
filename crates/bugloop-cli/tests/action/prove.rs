//! A proven finding through the Action, with the GitHub simulator as the API: a Rust crate whose
//! base configuration sets the proof's test command; the review's line comment says "Proven" in
//! its first line and carries the test, the SARIF result is marked proven and points at the test,
//! the job summary lists the proof; then `@bugloop fix all` places the same test, the fix makes
//! it pass, and the pushed commit holds the fix and the test.

use std::path::Path;

use bugloop_github_sim::fixture::{
    FixtureOptions, LAST, LIB, NUMBER, PullRequestFixture, off_by_one, review_lines, script_file,
};
use bugloop_testkit::{assert_contains, assert_starts_with};
use serde_json::{Value, json};

use super::{Run, action_as, comment_event, fixing_script, push_and_review};

const CARGO_TOML: &str = "[package]\nname = \"widgets\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n";
const CONFIG: &str = "review:\n  prove:\n    test_command: cargo test --offline --quiet --test {test_name}\n    commit_tests: true\n";
const TEST: &str =
    "#[test]\nfn last_of_three() {\n    assert_eq!(widgets::last(&[1, 2, 3]), 3);\n}\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_finding_through_the_action_and_a_fix_that_passes_its_test() {
    let scripts = tempfile::tempdir().unwrap();
    let (fixture, run, output) = proven("write", scripts.path()).await;
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1, "{output}");
    let body = &comments[0].body;
    assert!(
        body.starts_with(
            "**Proven:** a test fails at head (`cargo test --offline --quiet --test proof_last`)"
        ),
        "{body}"
    );
    assert_contains(body, "The test: tests/proof_last.rs");
    assert_contains(body, "index out of bounds");

    let sarif: Value = serde_json::from_str(
        &std::fs::read_to_string(run.temp.path().join("bugloop.sarif")).unwrap(),
    )
    .unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["properties"]["proven"], true, "{result:#}");
    assert_eq!(
        result["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "tests/proof_last.rs"
    );
    assert_contains(&run.summary, "proven");

    // `@bugloop fix all`: the same test must pass after the fix, and is committed with it.
    let said = "@bugloop fix all";
    let comment = fixture.sim.comment_as(NUMBER, "alice", said);
    let payload = comment_event(&fixture, "issue_comment", comment, said);
    let fixing = fixing_script(scripts.path());
    let before = fixture.origin_head();
    let run = action_as(None, &fixture, "issue_comment", &payload, &[], &fixing);
    let output = run.ok();
    let pushed = fixture.origin_head();
    assert_ne!(pushed, before, "{output}");
    let files = std::process::Command::new("git")
        .arg("-C")
        .arg(fixture.origin())
        .args(["show", "--name-only", "--format=", &pushed])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&files.stdout),
        "lib.rs\ntests/proof_last.rs\n",
        "{output}"
    );
}

/// `review.prove.unreproduced: drop` never applies to a change whose author cannot write to the
/// repository: their passing test (their branch decides how it runs) drops nothing, and the
/// proof says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passing_test_drops_nothing_from_an_author_without_write_access() {
    let fixture = PullRequestFixture::new(FixtureOptions {
        base_config: Some(&format!("{CONFIG}    unreproduced: drop\n")),
        base_files: &[("Cargo.toml", CARGO_TOML)],
        ..FixtureOptions::default()
    })
    .await;
    fixture.sim.set_permission("alice", "read");
    let scripts = tempfile::tempdir().unwrap();
    let passing = "#[test]\nfn last_exists() {\n    let _ = widgets::last;\n}\n";
    let mut lines = review_lines(&[off_by_one()]);
    lines.extend([
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "tests/proof_last.rs", "content": passing}}]}),
        json!({"text": "tests/proof_last.rs fails at head."}),
    ]);
    let model = script_file(scripts.path(), &lines);
    let (run, output) = super::opened_as(None, &fixture, &[], &model);
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1, "kept, published: {output}");
    assert_starts_with(&comments[0].body, "**Not reproduced:**");
    assert!(
        run.summary
            .contains("the change's author cannot write to the repository"),
        "{}",
        run.summary
    );
}

/// The pull request of `alice`, holding `permission`, opened and reviewed by a model (its
/// scripts written in `scripts`) that reports the off-by-one in `last` and proves it with
/// [`TEST`]: the fixture, the run and what it printed.
async fn proven(permission: &str, scripts: &Path) -> (PullRequestFixture, Run, String) {
    let fixture = PullRequestFixture::new(FixtureOptions {
        base_config: Some(CONFIG),
        base_files: &[("Cargo.toml", CARGO_TOML)],
        ..FixtureOptions::default()
    })
    .await;
    fixture.sim.set_permission("alice", permission);
    let mut lines = review_lines(&[off_by_one()]);
    lines.extend([
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "tests/proof_last.rs", "content": TEST}}]}),
        json!({"text": "tests/proof_last.rs panics at head."}),
        json!({"text": json!({"shows_the_problem": true, "why": "index out of bounds in last"}).to_string()}),
    ]);
    let (run, output) = super::opened_as(None, &fixture, &[], &script_file(scripts, &lines));
    (fixture, run, output)
}

/// A proven finding on a pull request by `alice` holding `permission`, then her push that fixes
/// `last`, reviewed by a model that reports nothing: the fixture, that review, and whether the
/// finding's thread is resolved.
async fn proven_then_fixed(permission: &str) -> (PullRequestFixture, Run, bool) {
    let scripts = tempfile::tempdir().unwrap();
    let (fixture, _, output) = proven(permission, scripts.path()).await;
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1, "{output}");
    assert_starts_with(&comments[0].body, "**Proven:**");

    let fixed = format!("{LIB}{}", LAST.replace("v[v.len()]", "v[v.len() - 1]"));
    let quiet = script_file(scripts.path(), &review_lines(&[]));
    let (run, _) = push_and_review(&fixture, &[("lib.rs", Some(&fixed))], &quiet);
    run.ok();
    let root = fixture.finding_comments()[0].id;
    let thread = fixture
        .sim
        .threads(NUMBER)
        .into_iter()
        .find(|t| t.root == root);
    (fixture, run, thread.unwrap().resolved)
}

/// An author who may write: the fix's push runs the kept test again at the new head, where it
/// passes, and the finding is resolved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writers_fix_resolves_a_proven_finding_once_its_test_passes_again() {
    let (_fixture, run, resolved) = proven_then_fixed("write").await;
    assert!(resolved, "{}", run.summary);
    assert_contains(&run.summary, "the code it quoted was changed");
}

/// An author who may not write: their code decides what the kept test does at their head (it
/// could exit 0 from a module the runner imports), so the test is not run again and the finding
/// stays open whatever the push does, for a fix bugloop makes or a maintainer to resolve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_finding_stays_open_on_a_push_by_an_author_who_may_not_write() {
    let (fixture, run, resolved) = proven_then_fixed("read").await;
    assert!(!resolved, "{}", run.summary);
    let reason = "was not run again: the change's author may not write to the repository";
    assert_contains(&run.summary, reason);
    let summary = fixture
        .bot_issue_comments()
        .into_iter()
        .map(|c| c.body)
        .find(|b| b.contains("bugloop:summary"))
        .unwrap_or_default();
    assert_contains(&summary, reason);
}
