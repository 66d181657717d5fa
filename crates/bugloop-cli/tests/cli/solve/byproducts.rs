//! What test commands leave in the tree (`__pycache__` in a repository without `.gitignore`,
//! `coverage/`) is not the agent's work: never committed, never a reason to refuse an attempt.
//! Each scenario runs as the test's user and, when that is root, as an unprivileged one.

use bugloop_testkit::{assert_contains, assert_starts_with};
use serde_json::{Value, json};

use bugloop_github_sim::fixture::review_lines;

use super::runner::{Runner, committed, script_of, text, write};
use super::{MEAN, MEAN_TEST, MEAN_TRACE, PYTHON_TESTS};

/// Reports `trace` in `dir` and solves issue 1 with `lines` as the model: the report.
pub fn solve_with(runner: &Runner, dir: &std::path::Path, trace: &str, lines: &[Value]) -> Value {
    runner.ok(dir, &["report", "--format", "json"], trace);
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "solve.jsonl", lines);
    runner.solve_one(dir, &model)
}

/// A Python repository with no `.gitignore`: the first attempt's test run leaves `__pycache__`
/// in the task tree. It is not the agent's edit: the second attempt is not refused for it, and
/// no `.pyc` is committed. The model's mentions in the draft page nobody, and a merge by hand
/// is recorded by `status`.
fn python_without_gitignore(runner: &Runner) {
    let repo = runner.mean_repo(PYTHON_TESTS);
    let dir = repo.path();
    let mut lines = vec![
        // Attempt 1: a test that shows the crash, and no fix: the tests fail.
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
        json!({"text": "A test for the crash."}),
        json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element. @alice @acme/security please approve"}),
    ];
    lines.extend(review_lines(&[]));
    let report = solve_with(runner, dir, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    let files = committed(dir, &report);
    assert!(files.contains(&"test_stats.py".to_owned()), "{files:?}");
    assert!(
        !files.iter().any(|f| f.contains("__pycache__")),
        "{files:?}"
    );
    let status = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(&status, "attempt 1: `python3 -m unittest -q` failed");
    // The draft as a person reads it: the model's mentions page nobody.
    let draft = runner.json(dir, &["item", "2", "--format", "json"], "");
    let body = draft["body"].as_str().unwrap();
    assert_starts_with(body, "Closes #1");
    assert_contains(body, "please approve");
    assert!(
        !body.contains("@alice") && !body.contains("@acme"),
        "{body}"
    );
    let shown = text(&runner.run(dir, &["item", "2"], ""));
    assert!(shown.starts_with("#2 change request (open"), "{shown}");
    assert_contains(&shown, " into main · closes #1");

    // Merged by hand: `status` records it, as `solve` would.
    let branch = report["branch"].as_str().unwrap();
    runner.git(dir, &["merge", "-q", "--no-edit", branch]);
    let status = runner.json(dir, &["status", "1", "--format", "json"], "");
    assert_eq!(status["state"], "MERGED", "{status:#}");
    let shown = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(&shown, "READY -> MERGED: #2 was merged");
}

as_each_user! {
    python_without_gitignore => a_repository_without_gitignore_is_solved_without_its_test_byproducts, a_repository_without_gitignore_is_solved_as_an_unprivileged_user_too
}

/// A Node project whose test command writes `coverage/`: left out of the solution, never
/// counted as the agent's.
fn node_coverage(runner: &Runner) {
    let repo = runner.repo(&[
        ("last.js", "exports.last = (items) => items[items.length];\n"),
        (
            "test.js",
            "const fs = require('fs');\nfs.mkdirSync('coverage', {recursive: true});\nfs.writeFileSync('coverage/lcov.info', 'TN:' + Date.now() + '\\n');\nconst {last} = require('./last.js');\nif (last([1, 2, 3]) !== 3) { throw new Error('last is wrong'); }\n",
        ),
        (
            ".bugloop/config.yml",
            "solve:\n  test_commands:\n    - node test.js\n",
        ),
    ]);
    let trace = "TypeError: Cannot read properties of undefined (reading 'id')\n    at last (/srv/app/last.js:1:38)\n";
    let mut lines = vec![
        json!({"tool_calls": [write("last.js", "exports.last = (items) => items[items.length - 2];\n")]}),
        json!({"text": "Tried the element before."}),
        json!({"tool_calls": [write("last.js", "exports.last = (items) => items[items.length - 1];\n")]}),
        json!({"text": "The last element is at length - 1."}),
    ];
    lines.extend(review_lines(&[]));
    let report = solve_with(runner, repo.path(), trace, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    let files = committed(repo.path(), &report);
    assert!(
        !files.iter().any(|f| f.starts_with("coverage")),
        "{files:?}"
    );
}

as_each_user! {
    node_coverage => a_test_command_that_writes_coverage_leaves_it_out_of_the_solution, a_test_command_that_writes_coverage_as_an_unprivileged_user_too
}

/// A Go service built in the golang image runs from its GOPATH (`/go/src/app/...`): its frames
/// are the repository's, only `$GOROOT/src/<standard package>` is the standard library.
#[test]
fn a_go_trace_from_a_gopath_is_located_in_the_repository() {
    let runner = Runner::me();
    let repo = runner.repo(&[(
        "cmd/main.go",
        "package main\n\nimport \"net/http\"\n\nfunc last(v []int) int {\n\t_ = http.StatusOK\n\n\treturn v[len(v)]\n}\n",
    )]);
    let trace = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bugloop-intake/tests/reports/go-gopath.txt"
    ))
    .unwrap();
    let issue = runner.json(repo.path(), &["report", "--format", "json"], &trace);
    let located = issue["located"].to_string();
    assert!(located.contains("cmd/main.go"), "{issue:#}");
    assert!(!located.contains("server.go"), "{issue:#}");
}
