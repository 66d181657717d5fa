//! The learning record through the binary: three different errors of one class
//! (`ZeroDivisionError` in three functions) and one of another; after the class escalated
//! `solve.skip_after_escalations` times (each time with a test the solver wrote that reproduced
//! the error) the third is handed to a person untried (labelled, the history said on the
//! issue, no model call), the other class is still solved, and a person's `--retry` takes the
//! skipped one anyway. Made-up reports, whose errors the solver never reproduces, escalate
//! without counting: a real error of their class is still tried.

use bugloop_testkit::assert_contains;
use serde_json::{Value, json};

use super::runner::{Runner, script_of, text, write};

const STATS: &str = "def ratio(a, b):\n    return a / b\n\n\ndef share(a, b):\n    return a / b\n\n\ndef rate(a, b):\n    return a / b\n\n\ndef pick(d, k):\n    return d[k]\n";
const CONFIG: &str = "solve:\n  max_iterations: 1\n  skip_after_escalations: 2\n  test_commands:\n    - python3 -m unittest -q\n";
/// A test the repository had before, passing throughout.
const BASE_TEST: &str = "import unittest\n\n\nclass BaseTest(unittest.TestCase):\n    def test_base(self):\n        self.assertTrue(True)\n";
/// The test a solver writes that shows the error (it fails), before it gives up on a fix.
const REPRODUCING: &str = "import unittest\n\nfrom stats import ratio\n\n\nclass RatioTest(unittest.TestCase):\n    def test_zero(self):\n        self.assertEqual(ratio(1, 0), 0)\n";

fn trace(function: &str, line: u32, error: &str) -> String {
    format!(
        "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line {line}, in {function}\n    return a / b\n{error}\n"
    )
}

/// `solve N` with a model that gives up; with `reproduces`, it writes a test that shows the
/// error first.
fn solve(runner: &Runner, dir: &std::path::Path, issue: &str, extra: &[&str]) -> Value {
    solve_as(runner, dir, issue, extra, true)
}

fn solve_as(
    runner: &Runner,
    dir: &std::path::Path,
    issue: &str,
    extra: &[&str],
    reproduces: bool,
) -> Value {
    let scripts = runner.scripts();
    let mut lines = Vec::new();
    if reproduces {
        lines.push(json!({"tool_calls": [write("test_ratio.py", REPRODUCING)]}));
    }
    lines.push(json!({"text": "I could not find the cause."}));
    let model = script_of(scripts.path(), "give-up.jsonl", &lines);
    let mut args = vec!["solve", issue, "--model", &model, "--format", "json"];
    args.extend_from_slice(extra);
    let solved = runner.run(dir, &args, "");
    assert!(
        matches!(solved.status.code(), Some(0 | 1)),
        "{}",
        text(&solved)
    );
    serde_json::from_slice(&solved.stdout).unwrap_or_else(|_| panic!("{}", text(&solved)))
}

fn states(report: &Value) -> Vec<String> {
    report["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["to"].as_str().unwrap().to_owned())
        .collect()
}

fn learning_skips_a_pattern(runner: &Runner) {
    let repo = runner.repo(&[
        ("stats.py", STATS),
        ("test_base.py", BASE_TEST),
        (".bugloop/config.yml", CONFIG),
    ]);
    let dir = repo.path();
    for report in [
        trace("ratio", 2, "ZeroDivisionError: division by zero"),
        trace("share", 6, "ZeroDivisionError: division by zero"),
        trace("rate", 10, "ZeroDivisionError: float division by zero"),
        "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line 14, in pick\n    return d[k]\nKeyError: 'total'\n".to_owned(),
    ] {
        let filed = runner.json(dir, &["report", "--format", "json"], &report);
        assert_eq!(filed["filed"], true, "{filed:#}");
    }
    // Two of the class are tried and escalated.
    for issue in ["1", "2"] {
        let report = solve(runner, dir, issue, &[]);
        assert_eq!(report["state"], "ESCALATED", "{report:#}");
        assert!(states(&report).contains(&"ASSIGNED".to_owned()));
    }
    // The third is not tried: to a person at once, with the class's history.
    let skipped = solve(runner, dir, "3", &[]);
    assert_eq!(skipped["state"], "ESCALATED", "{skipped:#}");
    assert_eq!(states(&skipped), ["OPEN", "ESCALATED"], "{skipped:#}");
    let message = skipped["message"].as_str().unwrap();
    assert!(
        message.contains(
            "errors of the class ZeroDivisionError (3 issues): escalated 2 times, solved 0 times"
        ),
        "{message}"
    );
    let shown = runner.run(dir, &["item", "3", "--format", "json"], "");
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(
        shown["item"]["labels"]
            .as_array()
            .or_else(|| shown["labels"].as_array())
            .unwrap()
            .contains(&json!("bugloop:escalated")),
        "{shown:#}"
    );
    let comments = shown["comments"].as_array().unwrap();
    let said = comments
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default())
        .find(|b| b.contains("does not try to solve this issue"))
        .unwrap_or_else(|| panic!("{shown:#}"));
    assert_contains(
        said,
        "| errors of the class `ZeroDivisionError` | #3, #2, #1 | 2 | 0 | 2 |",
    );
    assert_contains(said, "- #2: ");
    assert_contains(said, "- #1: ");
    assert_contains(said, "bugloop solve 3 --retry");
    // Nothing was spent on it.
    let spent = &skipped["spend"];
    assert!(
        spent.is_null() || spent["input_tokens"].as_u64().unwrap_or(0) == 0,
        "{skipped:#}"
    );

    // Another class is still solved.
    let other = solve(runner, dir, "4", &[]);
    assert!(states(&other).contains(&"ASSIGNED".to_owned()), "{other:#}");

    // A person's --retry takes the skipped one.
    let retried = solve(runner, dir, "3", &["--retry"]);
    assert!(
        states(&retried).contains(&"ASSIGNED".to_owned()),
        "{retried:#}"
    );
}

as_each_user! {
    learning_skips_a_pattern => a_class_escalated_twice_is_not_auto_solved_a_third_time, the_learning_record_as_an_unprivileged_user_too
}

/// The attack: four made-up reports of one class (traces anyone who can write to the log can
/// forge) are solved and escalated, the solver never reproducing them; the real error of the
/// class that comes next is still tried, not skipped.
#[test]
fn made_up_reports_do_not_make_a_real_error_skipped() {
    let runner = Runner::me();
    let repo = runner.repo(&[
        ("stats.py", STATS),
        ("test_base.py", BASE_TEST),
        (".bugloop/config.yml", CONFIG),
    ]);
    let dir = repo.path();
    let made_up = [("share", 6), ("rate", 10), ("pick", 14), ("mean", 18)];
    for (n, (function, line)) in made_up.iter().enumerate() {
        let report = trace(function, *line, "ZeroDivisionError: division by zero");
        runner.ok(dir, &["report", "--format", "json"], &report);
        let issue = (n + 1).to_string();
        let escalated = solve_as(&runner, dir, &issue, &[], false);
        assert_eq!(escalated["state"], "ESCALATED", "{escalated:#}");
    }
    let real = runner.run(
        dir,
        &["report", "--format", "json"],
        &trace("ratio", 2, "ZeroDivisionError: division by zero"),
    );
    let real: Value = serde_json::from_slice(&real.stdout).unwrap();
    assert_eq!(real["filed"], true, "{real:#}");
    let issue = real["issue"].to_string();
    let tried = solve(&runner, dir, &issue, &[]);
    assert_eq!(&states(&tried)[..2], ["OPEN", "ASSIGNED"], "{tried:#}");
}
