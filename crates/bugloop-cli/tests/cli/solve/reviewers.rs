//! Other reviewers on a local draft, as on GitHub: a reviewer's line comment is addressed in a
//! review round and answered in its thread; a reviewer who requested changes holds the ready
//! gate until they approve; checks recorded on the head (the test commands run there, or a CI
//! result entered by hand) hold it while pending.

use bugloop_testkit::assert_contains;
use serde_json::{Value, json};

use bugloop_github_sim::fixture::review_lines;

use super::byproducts::solve_with;
use super::runner::{Runner, script_of, text, write};
use super::{GUARDED, MEAN_TEST, MEAN_TRACE, PYTHON_TESTS, comment_divides_by_zero, tested_fix};

fn state(runner: &Runner, dir: &std::path::Path) -> Value {
    runner.json(dir, &["status", "1", "--format", "json"], "")
}

fn reviewed_locally(runner: &Runner) {
    let repo = runner.mean_repo(PYTHON_TESTS);
    let dir = repo.path();
    let mut lines = tested_fix().to_vec();
    lines.extend(review_lines(&[]));
    let report = solve_with(runner, dir, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");

    // Alice reviews the draft: a line comment, and changes requested.
    let said = comment_divides_by_zero(runner, dir, "5", "alice");
    assert_contains(&text(&said), "alice's comment added to #2 at stats.py:5");
    // A line the head does not have is refused, saying why.
    let wrong = runner.run(
        dir,
        &[
            "comment", "--change", "2", "--file", "stats.py", "--line", "99", "x",
        ],
        "",
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    assert_contains(
        &text(&wrong),
        "stats.py has 5 lines at #2's head; line 99 is not one of them",
    );
    let requested = runner.ok(
        dir,
        &[
            "review-decision",
            "2",
            "--request-changes",
            "--as",
            "alice",
            "See my comment.",
        ],
        "",
    );
    assert!(text(&requested).starts_with("alice requested changes on #2 at "));

    // The next run: alice's thread is a round, answered and resolved; the gate waits for her.
    let scripts = runner.scripts();
    let mut lines = vec![
        json!({"tool_calls": [
            write("stats.py", GUARDED),
            write("test_stats.py", &format!("{MEAN_TEST}\n    def test_empty(self):\n        self.assertEqual(mean([]), 0)\n")),
        ]}),
        json!({"text": "An empty list has mean 0 now; tested."}),
    ];
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "round.jsonl", &lines);
    let report = runner.solve_one(dir, &model);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .starts_with("waiting for a reviewer who requested changes on #2"),
        "{report:#}"
    );
    let transcripts: Vec<String> = std::fs::read_dir(dir.join(".git/bugloop/runs"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter(|t| t.contains("a review by alice"))
        .collect();
    assert_eq!(transcripts.len(), 1, "the round was told alice's comment");
    assert!(transcripts[0].contains("mean([]) divides by zero"));
    let draft = runner.run(dir, &["item", "2", "--format", "json"], "");
    let draft: Value = serde_json::from_slice(&draft.stdout).unwrap();
    let comments = draft["comments"].as_array().unwrap();
    let alice = comments
        .iter()
        .find(|c| c["author"] == "alice")
        .expect("alice's comment");
    assert_eq!(alice["thread_resolved"], true, "{draft:#}");
    assert!(
        comments.iter().any(|c| c["in_reply_to"] == alice["id"]
            && c["body"].as_str().unwrap().contains("Addressed in")),
        "{draft:#}"
    );

    // Checks on the new head: the test commands, and a CI run still going.
    let checked = runner.ok(dir, &["checks", "2"], "");
    assert_contains(&text(&checked), "passed   python3 -m unittest -q");
    runner.ok(dir, &["checks", "2", "--record", "ci=pending"], "");
    runner.ok(
        dir,
        &["review-decision", "2", "--approve", "--as", "alice"],
        "",
    );
    let idle = script_of(scripts.path(), "idle.jsonl", &[]);
    let report = runner.solve_one(dir, &idle);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("waiting for checks on"),
        "{report:#}"
    );
    assert!(report["message"].as_str().unwrap().ends_with(": ci"));

    // CI passes: the gate passes.
    runner.ok(dir, &["checks", "2", "--record", "ci=passed"], "");
    let report = runner.solve_one(dir, &idle);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(state(runner, dir)["state"], "READY");

    // A failing CI run on the head is said, with exit 1.
    let failed = runner.exits(dir, &["checks", "2", "--record", "ci=failed"], "", 1);
    assert_contains(&failed, "failed   ci");
}

as_each_user! {
    reviewed_locally => other_reviewers_and_checks_on_a_local_draft, other_reviewers_and_checks_on_a_local_draft_as_an_unprivileged_user_too
}
