//! The seed's own configuration (bugloop-architecture.md's example, `agents` included) as a user
//! runs it: the issue is assigned to `agents.bugsolver.assignee` when taken; with
//! `agents.reviewer.external` bugloop does not review its draft (the model is asked nothing for
//! it), each head waits for the external reviewer, whose line comment a round addresses; the gate
//! runs once the reviewer has reviewed the head. An escalated issue is unassigned.

use bugloop_testkit::assert_contains;
use bugloop_testkit::json::strings_at;
use serde_json::{Value, json};

use super::byproducts::solve_with;
use super::runner::{
    Runner, assert_labelled, comments_saying, script_of, text, transcripts_saying, write,
};
use super::{MEAN_TEST, MEAN_TRACE, comment_divides_by_zero, guarded_round, tested_fix};

/// The seed's example, with the test commands a solve needs under its `limits:` (the seed's
/// name of `solve:`).
fn seed_config(max_iterations: u32) -> String {
    format!(
        "labels:\n  trigger: \"bug:autofix\"\n  in-progress: \"bugloop:solving\"\n  needs-human: \"bugloop:escalated\"\n\nlimits:\n  max_ralph_iterations: {max_iterations}\n  max_review_iterations: 5\n  timeout_minutes: 30\n  max_diff_lines: 500\n  test_commands:\n    - python3 -m unittest -q\n\nbranch_prefix: \"bugloop/\"\n\nagents:\n  bugsolver:\n    assignee: \"bugsolver-bot\"\n  reviewer:\n    # CodeRabbit handles this automatically\n    external: true\n"
    )
}

fn solve(runner: &Runner, dir: &std::path::Path, lines: &[Value]) -> Value {
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "next.jsonl", lines);
    runner.solve_one(dir, &model)
}

fn message(report: &Value) -> &str {
    report["message"].as_str().unwrap_or_default()
}

fn external_review(runner: &Runner) {
    let repo = runner.mean_repo(&seed_config(10));
    let dir = repo.path();
    let config = runner.ok(dir, &["config", "show"], "");
    assert_contains(&text(&config), "assignee: bugsolver-bot");
    // The solution only: a draft review would need more answers, and there are none.
    let lines = tested_fix();
    let report = solve_with(runner, dir, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    assert!(
        message(&report).starts_with("waiting for the external reviewer: it did not review "),
        "{report:#}"
    );
    let issue = runner.item(dir, 1);
    assert_eq!(issue["assignees"], json!(["bugsolver-bot"]), "{issue:#}");
    let shown = runner.run(dir, &["item", "1"], "");
    assert_contains(&text(&shown), "  assigned to: bugsolver-bot");
    // The count of error reports the JSON has is in the text too.
    assert_eq!(issue["reports"], 1, "{issue:#}");
    assert_contains(&text(&shown), "\n  error reports: 1\n");
    let draft = runner.item(dir, 2);
    assert!(
        draft["comments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["author"] != "bugloop"
                || !c["body"].as_str().unwrap_or_default().contains("finding")),
        "bugloop reviewed its own draft: {draft:#}"
    );

    // Waiting costs nothing: the model is asked nothing.
    let waiting = solve(runner, dir, &[]);
    assert_eq!(waiting["state"], "REVIEWING", "{waiting:#}");
    assert!(message(&waiting).starts_with("waiting for the external reviewer"));

    // The external reviewer reviews the head with a line comment.
    comment_divides_by_zero(runner, dir, "4", "rabbit");
    runner.ok(
        dir,
        &[
            "review-decision",
            "2",
            "--comment",
            "--as",
            "rabbit",
            "One comment.",
        ],
        "",
    );

    // A round addresses it; the new head waits for the reviewer again.
    let round = solve(runner, dir, &guarded_round());
    assert_eq!(round["state"], "REVIEWING", "{round:#}");
    assert!(
        message(&round).starts_with("waiting for the external reviewer: it did not review "),
        "{round:#}"
    );
    let transcripts = transcripts_saying(dir, "a review by rabbit");
    assert_eq!(
        transcripts.len(),
        1,
        "the round was told the reviewer's comment"
    );

    // The reviewer approves the new head: the gate passes, the issue stays assigned.
    runner.ok(
        dir,
        &["review-decision", "2", "--approve", "--as", "rabbit"],
        "",
    );
    let ready = solve(runner, dir, &[]);
    assert_eq!(ready["state"], "READY", "{ready:#}");
    assert_eq!(runner.item(dir, 1)["assignees"], json!(["bugsolver-bot"]));
}

as_each_user! {
    external_review => the_seeds_configuration_assigns_and_waits_for_the_external_reviewer, the_seeds_configuration_as_an_unprivileged_user_too
}

/// An issue bugloop gives up on is handed back: labelled for a person and unassigned.
#[test]
fn an_escalated_issue_is_unassigned() {
    let runner = Runner::me();
    let repo = runner.mean_repo(&seed_config(1));
    let dir = repo.path();
    let lines = [
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
        json!({"text": "A test for the crash, no fix."}),
    ];
    runner.ok(dir, &["report"], MEAN_TRACE);
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "solve.jsonl", &lines);
    let solved = runner.run(
        dir,
        &["solve", "1", "--model", &model, "--format", "json"],
        "",
    );
    let report: Value = serde_json::from_slice(&solved.stdout).unwrap();
    assert_eq!(report["state"], "ESCALATED", "{report:#}");
    let issue = runner.item(dir, 1);
    assert_eq!(issue["assignees"], json!([]), "{issue:#}");
    assert_labelled(&issue, "bugloop:escalated");
    let history = runner.status(dir, 1);
    let states = strings_at(&history["history"], "to");
    assert!(states.contains(&"ASSIGNED"), "{history:#}");
}

/// `solve.approval: required`: the solution waits on its branch, said once on the issue, and the
/// draft opens only when the developer approves it (`solve N --approve`).
#[test]
fn a_solution_waits_for_approval_before_its_draft_opens() {
    let runner = Runner::me();
    let repo = runner.mean_repo("solve:\n  approval: required\n  test_commands:\n    - python3 -m unittest -q\nagents:\n  reviewer:\n    external: true\n");
    let dir = repo.path();
    let lines = tested_fix();
    let report = solve_with(&runner, dir, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "SOLVING", "{report:#}");
    assert!(
        message(&report).starts_with("waiting for approval of the solution on bugloop/1-"),
        "{report:#}"
    );
    // Asked once on the issue, however often solve runs; no draft yet; the branch is there.
    for _ in 0..2 {
        let again = solve(&runner, dir, &[]);
        assert_eq!(again["state"], "SOLVING", "{again:#}");
    }
    let issue = runner.item(dir, 1);
    let asked = comments_saying(&issue, "asks for approval first");
    assert_eq!(asked.len(), 1, "{issue:#}");
    let none = runner.run(dir, &["item", "2"], "");
    assert_ne!(
        none.status.code(),
        Some(0),
        "no draft before approval: {}",
        text(&none)
    );
    let branches = runner.git(dir, &["branch", "--list", "bugloop/*"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
    // Approved: the draft opens, and the record says who approved.
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "none.jsonl", &[]);
    let approved = runner.json(
        dir,
        &[
            "solve",
            "1",
            "--approve",
            "--model",
            &model,
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(approved["state"], "REVIEWING", "{approved:#}");
    assert_eq!(approved["change_request"], 2, "{approved:#}");
    let history = approved["history"].to_string();
    assert_contains(&history, "approved by the developer");
}
