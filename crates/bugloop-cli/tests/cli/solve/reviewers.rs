//! Other reviewers on a local draft, as on GitHub: a reviewer's line comment is addressed in a
//! review round and answered in its thread; a reviewer who requested changes holds the ready
//! gate until they approve; checks recorded on the head (the test commands run there, or a CI
//! result entered by hand) hold it while pending.

use serde_json::{Value, json};

use bugloop_github_sim::fixture::review_lines;

use super::byproducts::solve_with;
use super::runner::{Runner, script_of, text, write};
use super::{MEAN, MEAN_TEST, MEAN_TRACE};

const GUARDED: &str = "def mean(xs):\n    if not xs:\n        return 0\n    total = 0\n    for i in range(len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";

fn state(runner: &Runner, dir: &std::path::Path) -> Value {
    let status = runner.run(dir, &["status", "1", "--format", "json"], "");
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    serde_json::from_slice(&status.stdout).unwrap()
}

fn reviewed_locally(runner: &Runner) {
    let repo = runner.repo(&[
        ("stats.py", MEAN),
        (
            ".bugloop/config.yml",
            "solve:\n  test_commands:\n    - python3 -m unittest -q\n",
        ),
    ]);
    let dir = repo.path();
    let mut lines = vec![
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element; tested."}),
    ];
    lines.extend(review_lines(&[]));
    let report = solve_with(runner, dir, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");

    // Alice reviews the draft: a line comment, and changes requested.
    let said = runner.run(
        dir,
        &[
            "comment",
            "--change",
            "2",
            "--file",
            "stats.py",
            "--line",
            "5",
            "--as",
            "alice",
            "mean([]) divides by zero: return 0 for an empty list, and test it.",
        ],
        "",
    );
    assert_eq!(said.status.code(), Some(0), "{}", text(&said));
    assert!(
        text(&said).contains("alice's comment added to #2 at stats.py:5"),
        "{}",
        text(&said)
    );
    // A line the head does not have is refused, saying why.
    let wrong = runner.run(
        dir,
        &[
            "comment", "--change", "2", "--file", "stats.py", "--line", "99", "x",
        ],
        "",
    );
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong));
    assert!(
        text(&wrong).contains("stats.py has 5 lines at #2's head; line 99 is not one of them"),
        "{}",
        text(&wrong)
    );
    let requested = runner.run(
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
    assert_eq!(requested.status.code(), Some(0), "{}", text(&requested));
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
    let round = runner.run(
        dir,
        &["solve", "1", "--model", &model, "--format", "json"],
        "",
    );
    assert_eq!(round.status.code(), Some(0), "{}", text(&round));
    let report: Value = serde_json::from_slice(&round.stdout).unwrap();
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
    let checked = runner.run(dir, &["checks", "2"], "");
    assert_eq!(checked.status.code(), Some(0), "{}", text(&checked));
    assert!(
        text(&checked).contains("passed   python3 -m unittest -q"),
        "{}",
        text(&checked)
    );
    let pending = runner.run(dir, &["checks", "2", "--record", "ci=pending"], "");
    assert_eq!(pending.status.code(), Some(0), "{}", text(&pending));
    let approved = runner.run(
        dir,
        &["review-decision", "2", "--approve", "--as", "alice"],
        "",
    );
    assert_eq!(approved.status.code(), Some(0), "{}", text(&approved));
    let idle = script_of(scripts.path(), "idle.jsonl", &[]);
    let waiting = runner.run(
        dir,
        &["solve", "1", "--model", &idle, "--format", "json"],
        "",
    );
    assert_eq!(waiting.status.code(), Some(0), "{}", text(&waiting));
    let report: Value = serde_json::from_slice(&waiting.stdout).unwrap();
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
    let passed = runner.run(dir, &["checks", "2", "--record", "ci=passed"], "");
    assert_eq!(passed.status.code(), Some(0), "{}", text(&passed));
    let ready = runner.run(
        dir,
        &["solve", "1", "--model", &idle, "--format", "json"],
        "",
    );
    assert_eq!(ready.status.code(), Some(0), "{}", text(&ready));
    let report: Value = serde_json::from_slice(&ready.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(state(runner, dir)["state"], "READY");

    // A failing CI run on the head is said, with exit 1.
    let failed = runner.run(dir, &["checks", "2", "--record", "ci=failed"], "");
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed));
    assert!(text(&failed).contains("failed   ci"), "{}", text(&failed));
}

as_each_user! {
    reviewed_locally => other_reviewers_and_checks_on_a_local_draft, other_reviewers_and_checks_on_a_local_draft_as_an_unprivileged_user_too
}
