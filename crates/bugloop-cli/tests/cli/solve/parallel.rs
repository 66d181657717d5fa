//! `bugloop solve --all --jobs N`: every open issue labelled for solving, most severe first,
//! then oldest; two solved at the same time (each under its own lease, on its own branch), the
//! less severe one after them. The scripted model tells the parallel agents apart by their task
//! (`when_task`).

use bugloop_testkit::assert_contains;
use serde_json::{Value, json};

use super::runner::{Runner, script_of, text, write};
use super::{MEAN, MEAN_TEST, MEAN_TRACE};

const RATIO: &str = "\n\ndef ratio(a, b):\n    return a / b\n";
const RATIO_TRACE: &str = "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line 9, in ratio\n    return a / b\nZeroDivisionError: division by zero\n";
const CONFIG: &str = "solve:\n  max_iterations: 1\n  test_commands:\n    - python3 -m unittest -q\nagents:\n  reviewer:\n    external: true\n";

fn history(runner: &Runner, dir: &std::path::Path, issue: u64) -> Vec<(String, String)> {
    let status = runner.run(dir, &["status", &issue.to_string(), "--format", "json"], "");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let report = status.as_array().map_or(&status, |a| &a[0]).clone();
    report["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["to"].as_str().unwrap().to_owned(),
                t["at"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn at(history: &[(String, String)], state: &str) -> jiff::Timestamp {
    history
        .iter()
        .find(|(to, _)| to == state)
        .unwrap_or_else(|| panic!("no {state} in {history:?}"))
        .1
        .parse()
        .unwrap()
}

fn solve_all_in_parallel(runner: &Runner) {
    let repo = runner.repo(&[
        ("stats.py", &format!("{MEAN}{RATIO}")),
        (".bugloop/config.yml", CONFIG),
    ]);
    let dir = repo.path();
    for report in [
        "{\"level\": \"warning\", \"message\": \"the payment provider answered slowly\"}\n",
        MEAN_TRACE,
        RATIO_TRACE,
    ] {
        runner.ok(dir, &["report"], report);
    }
    let fixed_mean = MEAN.replace(" + 1", "");
    let lines = [
        json!({"when_task": "IndexError", "tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &format!("{fixed_mean}{RATIO}"))]}),
        json!({"when_task": "IndexError", "text": "The loop stops at the last element."}),
        json!({"when_task": "ZeroDivisionError", "tool_calls": [write("stats.py", &format!("{MEAN}\n\ndef ratio(a, b):\n    return a / b if b else 0.0\n"))]}),
        json!({"when_task": "ZeroDivisionError", "text": "A zero divisor gives 0.0."}),
        json!({"when_task": "answered slowly", "tool_calls": [write("TIMEOUTS.md", "The payment provider is given 30 s.\n")]}),
        json!({"when_task": "answered slowly", "text": "Documented the timeout."}),
    ];
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "all.jsonl", &lines);
    let solved = runner.json(
        dir,
        &[
            "solve", "--all", "--jobs", "2", "--model", &model, "--format", "json",
        ],
        "",
    );
    let order: Vec<(u64, &str, &str)> = solved
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["issue"].as_u64().unwrap(),
                s["severity"].as_str().unwrap(),
                s["report"]["state"].as_str().unwrap_or("(error)"),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (2, "high", "REVIEWING"),
            (3, "high", "REVIEWING"),
            (1, "low", "REVIEWING")
        ],
        "{solved:#}"
    );
    // #2 and #3 at the same time; #1 once one of them was done.
    let (one, two, three) = (
        history(runner, dir, 1),
        history(runner, dir, 2),
        history(runner, dir, 3),
    );
    assert!(
        at(&two, "ASSIGNED") < at(&three, "REVIEWING"),
        "{two:?} {three:?}"
    );
    assert!(
        at(&three, "ASSIGNED") < at(&two, "REVIEWING"),
        "{two:?} {three:?}"
    );
    assert!(
        at(&one, "ASSIGNED") >= at(&two, "REVIEWING").min(at(&three, "REVIEWING")),
        "{one:?}"
    );
    // Each on its own branch, from the base.
    let branches = runner.git(dir, &["branch", "--list", "bugloop/*"]);
    assert_eq!(branches.lines().count(), 3, "{branches}");
    // Nothing is waiting any more: a second run solves nothing (each waits for its reviewer).
    runner.ok(dir, &["solve", "--all", "--model", &model], "");
}

as_each_user! {
    solve_all_in_parallel => every_waiting_issue_is_solved_most_severe_first_two_at_a_time, every_waiting_issue_is_solved_two_at_a_time_as_an_unprivileged_user_too
}

#[test]
fn solve_needs_an_issue_or_all() {
    let runner = Runner::me();
    let repo = runner.stats_repo();
    runner.exits(repo.path(), &["solve"], "", 2);
    runner.exits(repo.path(), &["solve", "1", "--all"], "", 2);
    let none = runner.ok(repo.path(), &["solve", "--all"], "");
    assert_contains(&text(&none), "no issue is waiting to be solved");
}
