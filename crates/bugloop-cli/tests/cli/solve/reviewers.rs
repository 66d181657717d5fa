//! Other reviewers on a local draft, as on GitHub: a reviewer's line comment is addressed in a
//! review round and answered in its thread; a reviewer who requested changes holds the ready
//! gate until they approve; checks recorded on the head (the test commands run there, or a CI
//! result entered by hand) hold it while pending.

use bugloop_testkit::{assert_contains, assert_starts_with};

use bugloop_github_sim::fixture::review_lines;

use super::byproducts::solve_with;
use super::runner::{Runner, script_of, text, transcripts_saying};
use super::{MEAN_TRACE, PYTHON_TESTS, comment_divides_by_zero, guarded_round, tested_fix};

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
    let mut lines = guarded_round().to_vec();
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "round.jsonl", &lines);
    let report = runner.solve_one(dir, &model);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    assert_starts_with(
        report["message"].as_str().unwrap(),
        "waiting for a reviewer who requested changes on #2",
    );
    let transcripts = transcripts_saying(dir, "a review by alice");
    assert_eq!(transcripts.len(), 1, "the round was told alice's comment");
    assert!(transcripts[0].contains("mean([]) divides by zero"));
    let draft = runner.item(dir, 2);
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
    // A name that would print as two checks records nothing, not even the good one beside it.
    runner.exits_saying(
        dir,
        &[
            "checks",
            "2",
            "--record",
            "lint=passed",
            "--record",
            "x\ny=passed",
        ],
        2,
        "is not a check's name",
    );
    assert!(!text(&runner.ok(dir, &["checks", "2"], "")).contains("lint"));
    // Names that print as another's: one holding a character that shows nothing.
    runner.exits_saying(
        dir,
        &["checks", "2", "--record", "ci\u{200B}=passed"],
        2,
        "is not a check's name",
    );
    runner.exits_saying(
        dir,
        &[
            "review-decision",
            "2",
            "--approve",
            "--as",
            "bugloop\u{200B}",
        ],
        2,
        "is not a reviewer's name",
    );
    runner.ok(
        dir,
        &["review-decision", "2", "--approve", "--as", "alice"],
        "",
    );
    let idle = script_of(scripts.path(), "idle.jsonl", &[]);
    let report = runner.solve_one(dir, &idle);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    let message = report["message"].as_str().unwrap();
    assert_contains(message, "waiting for checks on");
    assert!(message.ends_with(": ci"), "{report:#}");

    // CI passes: the gate passes.
    runner.ok(dir, &["checks", "2", "--record", "ci=passed"], "");
    let report = runner.solve_one(dir, &idle);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(runner.status(dir, 1)["state"], "READY");

    // A failing CI run on the head is said, with exit 1.
    runner.exits_saying(
        dir,
        &["checks", "2", "--record", "ci=failed"],
        1,
        "failed   ci",
    );
}

as_each_user! {
    reviewed_locally => other_reviewers_and_checks_on_a_local_draft, other_reviewers_and_checks_on_a_local_draft_as_an_unprivileged_user_too
}
