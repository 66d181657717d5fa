//! `solve.coverage_command`: run in the sandbox on the commit solving started from and on the
//! solution, the draft says both and the change; a command that fails is said, not a number.
//! The draft and `status` also say what solving the issue spent (the model's tokens, the time).

use bugloop_testkit::assert_contains;
use serde_json::{Value, json};

use super::byproducts::solve_with;
use super::runner::{Runner, text, write};
use super::{MEAN, MEAN_TEST, MEAN_TRACE, tested_fix};

/// A stand-in for a coverage tool: more tests, more coverage, printed as coverage.py does.
const COVERAGE: &str = "import os\ntests = open('test_stats.py').read().count('def test_') if os.path.exists('test_stats.py') else 0\nprint('Name  Stmts  Miss  Cover')\nprint(f'TOTAL  10  {5 - tests}  {50 + 10 * tests}%')\n";

fn draft_body(runner: &Runner, coverage: &str) -> String {
    let config = format!(
        "solve:\n  test_commands:\n    - python3 -m unittest -q\n  coverage_command:\n    - {coverage}\nagents:\n  reviewer:\n    external: true\n"
    );
    let repo = runner.repo(&[
        ("stats.py", MEAN),
        ("cov.py", COVERAGE),
        (".bugloop/config.yml", &config),
    ]);
    let lines = [
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &MEAN.replace(" + 1", ""))],
               "usage": {"input_tokens": 1200, "output_tokens": 80}}),
        json!({"text": "The loop stops at the last element; tested.",
               "usage": {"input_tokens": 1300, "output_tokens": 40}}),
    ];
    let report = solve_with(runner, repo.path(), MEAN_TRACE, &lines);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    let status = runner.run(repo.path(), &["status", "1"], "");
    assert_contains(
        &text(&status),
        "  spent: 2,500 input and 120 output tokens, ",
    );
    let item = runner.json(repo.path(), &["item", "2", "--format", "json"], "");
    item["body"].as_str().unwrap().to_owned()
}

#[test]
fn the_draft_says_the_coverage_of_base_and_head_and_the_change() {
    let runner = Runner::me();
    let body = draft_body(&runner, "python3 cov.py");
    assert_contains(
        &body,
        "**Coverage:** 50.0% at the base, 60.0% with this change (+10.0 points), as `python3 cov.py` reported.",
    );
    assert!(
        body.contains("Solved by bugloop in 1 attempt (2,500 input and 120 output tokens, "),
        "{body}"
    );
    let failing = draft_body(&runner, "python3 -c 'raise SystemExit(3)'");
    assert!(
        failing.contains(
            "**Coverage:** not measured on the base: `python3 -c 'raise SystemExit(3)'` failed."
        ),
        "{failing}"
    );
}

#[test]
fn coverage_is_measured_as_an_unprivileged_user_too() {
    if let Some(runner) = Runner::unprivileged() {
        let body = draft_body(&runner, "python3 cov.py");
        assert_contains(&body, "(+10.0 points)");
    }
}

/// A test command that prints no counts but writes a JUnit XML report (as Surefire, Gradle or
/// `pytest --junitxml` do): the draft's results count from the report.
#[test]
fn junit_reports_the_tests_wrote_are_counted_when_their_output_says_nothing() {
    let runner = Runner::me();
    let junit = "import os, sys, unittest\nsuite = unittest.defaultTestLoader.loadTestsFromName('test_stats')\nresult = unittest.TextTestRunner(stream=open(os.devnull, 'w')).run(suite)\nos.makedirs('build/test-results', exist_ok=True)\nn, f = result.testsRun, len(result.failures) + len(result.errors)\nopen('build/test-results/TEST-stats.xml', 'w').write(f'<testsuite name=\"stats\" tests=\"{n}\" failures=\"{f}\" errors=\"0\" skipped=\"0\"></testsuite>')\nsys.exit(1 if f else 0)\n";
    let repo = runner.repo(&[
        ("stats.py", MEAN),
        ("junit_run.py", junit),
        (
            ".bugloop/config.yml",
            "solve:\n  test_commands:\n    - python3 junit_run.py\nagents:\n  reviewer:\n    external: true\n",
        ),
    ]);
    let lines = tested_fix();
    let report = solve_with(&runner, repo.path(), MEAN_TRACE, &lines);
    assert_eq!(report["state"], "REVIEWING", "{report:#}");
    let shown = runner.run(repo.path(), &["item", "2", "--format", "json"], "");
    let item: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let body = item["body"].as_str().unwrap();
    assert_contains(body, "- JUnit XML (1 report): passed (1 passed)");
    assert_contains(body, "**Tests:** 1 passed");
    // The report is the tests' byproduct, not the solution's.
    let files = runner.git(
        repo.path(),
        &[
            "show",
            "--name-only",
            "--format=",
            "bugloop/1-indexerror-list-index-out-of-range-in",
        ],
    );
    assert!(!files.contains("TEST-stats.xml"), "{files}");
}
