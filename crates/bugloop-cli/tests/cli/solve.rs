//! The solve pipeline as a user runs it: `bugloop report` files a crash (and counts it when it
//! comes again), `bugloop solve` takes it through two attempts, a draft, a review with two
//! findings and a round to a draft marked ready with a scripted model (`script:` file), and
//! `bugloop status` shows where it stands and how it got there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use bugloop_app::testing::github_sim::fixture::review_lines;
use bugloop_app::testing::testkit::{TestRepo, git};
use serde_json::{Value, json};

const BUGGY: &str = "def last(items):\n    return items[len(items)]\n";
const SOLVED: &str = "def last(items):\n    return items[-1]\n";
const TEST: &str =
    "from app.models import last\n\n\ndef test_last():\n    assert last([1, 2, 3]) == 3\n";
const TRACE: &str = "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n";

fn bugloop(dir: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("BUGLOOP_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

#[test]
fn a_reported_crash_is_solved_to_a_ready_draft() {
    let repo = TestRepo::init("main");
    repo.write("app/models.py", BUGGY);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - grep -qF 'items[-1]' app/models.py\n",
    );
    repo.commit("models");
    let reported = bugloop(repo.path(), &["report", "--format", "json"], TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let issue: Value = serde_json::from_slice(&reported.stdout).unwrap();
    assert_eq!(issue["issue"], 1);
    // The same crash from another deployment: counted, not filed again.
    let again = bugloop(
        repo.path(),
        &["report", "--format", "json"],
        &TRACE.replace("/srv/app/", "/home/deploy/current/"),
    );
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (again["issue"].clone(), again["count"].clone()),
        (json!(1), json!(2))
    );

    // Solved in two attempts; the draft's review finds two things; one round addresses both.
    let mut lines = vec![
        json!({"tool_calls": [write("app/models.py", "def last(items):\n    return items[len(items) - 2]\n")]}),
        json!({"text": "Read the element before the end."}),
        json!({"tool_calls": [write("app/models.py", SOLVED), write("tests/test_models.py", TEST)]}),
        json!({"text": "`last` read one past the end; it reads items[-1] now."}),
    ];
    lines.extend(review_lines(&[
        json!({
            "file": "app/models.py", "line": 2, "evidence": "return items[-1]",
            "title": "An empty list still raises", "description": "items[-1] raises IndexError on [].",
            "score": 7, "category": "logic"
        }),
        json!({
            "file": "tests/test_models.py", "line": 5, "evidence": "assert last([1, 2, 3]) == 3",
            "title": "The test misses the empty list", "description": "The crash needs a test for [].",
            "score": 6, "category": "logic"
        }),
    ]));
    lines.push(json!({"tool_calls": [
        write("app/models.py", "def last(items):\n    return items[-1] if items else None\n"),
        write("tests/test_models.py", &format!("{TEST}    assert last([]) is None\n")),
    ]}));
    lines.push(json!({"text": "Guarded the empty list and tested it."}));
    lines.extend(review_lines(&[]));
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("solve.jsonl");
    std::fs::write(
        &script,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let model = format!("script:{}", script.display());

    let solved = bugloop(
        repo.path(),
        &["solve", "1", "--model", &model, "--format", "json"],
        "",
    );
    assert_eq!(solved.status.code(), Some(0), "{}", text(&solved));
    let report: Value = serde_json::from_slice(&solved.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(report["rounds"][0]["threads"].as_array().unwrap().len(), 2);
    assert_eq!(report["rounds"].as_array().unwrap().len(), 1);
    let branch = report["branch"].as_str().unwrap();
    assert!(branch.starts_with("bugloop/1-"), "{branch}");
    assert_eq!(
        git(repo.path(), &["show", &format!("{branch}:app/models.py")]),
        "def last(items):\n    return items[-1] if items else None"
    );

    let all = bugloop(repo.path(), &["status"], "");
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    assert!(text(&all).starts_with("#1     READY"), "{}", text(&all));
    let one = bugloop(repo.path(), &["status", "1"], "");
    let shown = text(&one);
    for step in [
        "(new) -> OPEN: filed",
        "OPEN -> ASSIGNED: taken by bugloop",
        "ASSIGNED -> SOLVING: solving on bugloop/1-",
        "SOLVING -> SOLVING: attempt 1: `grep -qF 'items[-1]' app/models.py` failed",
        "SOLVING -> SOLVING: attempt 2: the tests pass (2 files,",
        "SOLVING -> PR_DRAFT: draft #2 opened from bugloop/1-",
        "PR_DRAFT -> REVIEWING: draft #2 reviewed: 2 findings open",
        "REVIEWING -> REVIEWING: round 1: built",
        "REVIEWING -> REVIEWING: round 1: 2 threads addressed in",
        "REVIEWING -> READY: the gate passed on",
    ] {
        assert!(shown.contains(step), "{step}\n{shown}");
    }

    // A number that is no issue is an error that says so.
    let missing = bugloop(repo.path(), &["solve", "7", "--model", &model], "");
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(
        text(&missing).contains("no issue or change request #7"),
        "{}",
        text(&missing)
    );
}

/// Reports a crash in `repo`, then solves issue 1 with `lines` as the model: the report.
fn solve_with(repo: &TestRepo, trace: &str, lines: &[Value]) -> Value {
    let reported = bugloop(repo.path(), &["report", "--format", "json"], trace);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let scripts = tempfile::tempdir().unwrap();
    let script = scripts.path().join("solve.jsonl");
    std::fs::write(
        &script,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let model = format!("script:{}", script.display());
    let solved = bugloop(
        repo.path(),
        &["solve", "1", "--model", &model, "--format", "json"],
        "",
    );
    assert_eq!(solved.status.code(), Some(0), "{}", text(&solved));
    serde_json::from_slice(&solved.stdout).unwrap()
}

/// The files of the solution's branch.
fn committed(repo: &TestRepo, report: &Value) -> Vec<String> {
    let branch = report["branch"].as_str().unwrap();
    git(repo.path(), &["ls-tree", "-r", "--name-only", branch])
        .lines()
        .map(str::to_owned)
        .collect()
}

const MEAN: &str = "def mean(xs):\n    total = 0\n    for i in range(len(xs) + 1):\n        total += xs[i]\n    return total / len(xs)\n";
const MEAN_TRACE: &str = "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line 4, in mean\n    total += xs[i]\nIndexError: list index out of range\n";
const MEAN_TEST: &str = "import unittest\n\nfrom stats import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";

/// A Python repository with no `.gitignore`: the first attempt's test run leaves `__pycache__`
/// in the task tree. It is not the agent's edit: the second attempt is not refused for it, and
/// no `.pyc` is committed.
#[test]
fn a_repository_without_gitignore_is_solved_without_its_test_byproducts() {
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -m unittest -q\n",
    );
    repo.commit("stats");
    let mut lines = vec![
        // Attempt 1: a test that shows the crash, and no fix: the tests fail.
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
        json!({"text": "A test for the crash."}),
        json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element. @alice @acme/security please approve"}),
    ];
    lines.extend(review_lines(&[]));
    let report = solve_with(&repo, MEAN_TRACE, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    let files = committed(&repo, &report);
    assert!(files.contains(&"test_stats.py".to_owned()), "{files:?}");
    assert!(
        !files.iter().any(|f| f.contains("__pycache__")),
        "{files:?}"
    );
    let status = text(&bugloop(repo.path(), &["status", "1"], ""));
    assert!(
        status.contains("attempt 1: `python3 -m unittest -q` failed"),
        "{status}"
    );
    // The draft as a person reads it: the model's mentions page nobody.
    let draft = bugloop(repo.path(), &["item", "2", "--format", "json"], "");
    assert_eq!(draft.status.code(), Some(0), "{}", text(&draft));
    let draft: Value = serde_json::from_slice(&draft.stdout).unwrap();
    let body = draft["body"].as_str().unwrap();
    assert!(body.starts_with("Closes #1"), "{body}");
    assert!(body.contains("please approve"), "{body}");
    assert!(
        !body.contains("@alice") && !body.contains("@acme"),
        "{body}"
    );
    let shown = text(&bugloop(repo.path(), &["item", "2"], ""));
    assert!(shown.starts_with("#2 change request (open"), "{shown}");
    assert!(shown.contains(" into main · closes #1"), "{shown}");

    // Merged by hand: `status` records it, as `solve` would.
    let branch = report["branch"].as_str().unwrap();
    git(repo.path(), &["merge", "-q", "--no-edit", branch]);
    let status = bugloop(repo.path(), &["status", "1", "--format", "json"], "");
    assert_eq!(status.status.code(), Some(0), "{}", text(&status));
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["state"], "MERGED", "{status:#}");
    let shown = text(&bugloop(repo.path(), &["status", "1"], ""));
    assert!(shown.contains("READY -> MERGED: #2 was merged"), "{shown}");
}

/// A Node project whose test command writes `coverage/`: left out of the solution, never
/// counted as the agent's.
#[test]
fn a_test_command_that_writes_coverage_leaves_it_out_of_the_solution() {
    let repo = TestRepo::init("main");
    repo.write(
        "last.js",
        "exports.last = (items) => items[items.length];\n",
    );
    repo.write(
        "test.js",
        "const fs = require('fs');\nfs.mkdirSync('coverage', {recursive: true});\nfs.writeFileSync('coverage/lcov.info', 'TN:' + Date.now() + '\\n');\nconst {last} = require('./last.js');\nif (last([1, 2, 3]) !== 3) { throw new Error('last is wrong'); }\n",
    );
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - node test.js\n",
    );
    repo.commit("last");
    let trace = "TypeError: Cannot read properties of undefined (reading 'id')\n    at last (/srv/app/last.js:1:38)\n";
    let mut lines = vec![
        json!({"tool_calls": [write("last.js", "exports.last = (items) => items[items.length - 2];\n")]}),
        json!({"text": "Tried the element before."}),
        json!({"tool_calls": [write("last.js", "exports.last = (items) => items[items.length - 1];\n")]}),
        json!({"text": "The last element is at length - 1."}),
    ];
    lines.extend(review_lines(&[]));
    let report = solve_with(&repo, trace, &lines);
    assert_eq!(report["state"], "READY", "{report:#}");
    let files = committed(&repo, &report);
    assert!(
        !files.iter().any(|f| f.starts_with("coverage")),
        "{files:?}"
    );
}

/// A Go service built in the golang image runs from its GOPATH (`/go/src/app/...`): its frames
/// are the repository's, only `$GOROOT/src/<standard package>` is the standard library.
#[test]
fn a_go_trace_from_a_gopath_is_located_in_the_repository() {
    let repo = TestRepo::init("main");
    repo.write(
        "cmd/main.go",
        "package main\n\nimport \"net/http\"\n\nfunc last(v []int) int {\n\t_ = http.StatusOK\n\n\treturn v[len(v)]\n}\n",
    );
    repo.commit("go");
    let trace = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bugloop-intake/tests/reports/go-gopath.txt"
    ))
    .unwrap();
    let reported = bugloop(repo.path(), &["report", "--format", "json"], &trace);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let issue: Value = serde_json::from_slice(&reported.stdout).unwrap();
    let located = issue["located"].to_string();
    assert!(located.contains("cmd/main.go"), "{issue:#}");
    assert!(!located.contains("server.go"), "{issue:#}");
}

fn script_of(dir: &Path, name: &str, lines: &[Value]) -> String {
    let script = dir.join(name);
    std::fs::write(
        &script,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    format!("script:{}", script.display())
}

/// A run whose budget runs out stops (exit 3), neither escalated nor counted as an attempt, and
/// `solve N` with more budget resumes where it stopped, told that the earlier run's edits are
/// not in its tree.
#[test]
fn a_run_out_of_budget_stops_and_the_next_resumes() {
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -m unittest -q\nbudgets:\n  max_turns: 3\n",
    );
    repo.commit("stats");
    let reported = bugloop(repo.path(), &["report"], MEAN_TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let scripts = tempfile::tempdir().unwrap();
    let first = script_of(
        scripts.path(),
        "first.jsonl",
        &[
            json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
            json!({"text": "A test for the crash."}),
            json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
            json!({"text": "never reached: the budget is spent"}),
        ],
    );
    let stopped = bugloop(
        repo.path(),
        &["solve", "1", "--model", &first, "--format", "json"],
        "",
    );
    assert_eq!(stopped.status.code(), Some(3), "{}", text(&stopped));
    let report: Value = serde_json::from_slice(&stopped.stdout).unwrap();
    assert_eq!(report["state"], "SOLVING", "{report:#}");
    assert_eq!(report["stopped"], "budget", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );

    // More budget: resumed, attempt 2, told the first attempt's test is not in the tree.
    let more = scripts.path().join("more.yml");
    std::fs::write(&more, "budgets:\n  max_turns: 40\n").unwrap();
    let mut lines = vec![
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element; tested."}),
    ];
    lines.extend(review_lines(&[]));
    let second = script_of(scripts.path(), "second.jsonl", &lines);
    let resumed = bugloop(
        repo.path(),
        &[
            "solve",
            "1",
            "--model",
            &second,
            "--config",
            more.to_str().unwrap(),
            "--format",
            "json",
        ],
        "",
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed));
    let report: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    let runs = repo.path().join(".git/bugloop/runs");
    let resumed_prompt: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter(|t| t.contains("none of their edits are in it"))
        .collect();
    assert_eq!(
        resumed_prompt.len(),
        1,
        "the resumed attempt is told the truth about its tree"
    );
    assert!(!resumed_prompt[0].contains("are still in the tree"));
    let files = committed(&repo, &report);
    assert!(files.contains(&"test_stats.py".to_owned()), "{files:?}");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// As root, sandboxed commands run as an unprivileged user, which must reach the directory the
/// sandbox is staged in. With `TMPDIR` inside a `0700` directory (a runner's private temp) the
/// issue is still solved: the tests ran in the sandbox. And a run killed with `kill -9` while
/// its test command runs leaves a stage behind, which the next run removes.
#[test]
fn solving_as_root_with_a_private_tmpdir_and_after_a_killed_run() {
    let private = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let tmp = private.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    // A run killed while its test command sleeps.
    let killed = TestRepo::init("main");
    killed.write("stats.py", MEAN);
    killed.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -c \"import time; time.sleep(60)\"\n",
    );
    killed.commit("stats");
    assert_eq!(
        bugloop(killed.path(), &["report"], MEAN_TRACE)
            .status
            .code(),
        Some(0)
    );
    let scripts = tempfile::tempdir().unwrap();
    let model = script_of(
        scripts.path(),
        "sleepy.jsonl",
        &[
            json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
            json!({"text": "fixed"}),
        ],
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["solve", "1", "--model", &model])
        .current_dir(killed.path())
        .env("NO_COLOR", "1")
        .env("TMPDIR", &tmp)
        .env_remove("BUGLOOP_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!("bugloop-stage-{}-", child.id());
    let stages = || -> Vec<PathBuf> {
        [tmp.clone(), PathBuf::from("/tmp")]
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect()
    };
    let started = std::time::Instant::now();
    while stages().is_empty() && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = stages();
    child.kill().unwrap();
    child.wait().unwrap();
    if is_root() {
        assert!(!left.is_empty(), "the test command ran in a stage");
        assert!(
            left.iter().all(|stage| !stage.starts_with(&tmp)),
            "staged where the sandbox's user cannot reach: {left:?}"
        );
    }

    // The next run, as a user would run it, in that private TMPDIR.
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -m unittest -q\n",
    );
    repo.commit("stats");
    let reported = bugloop(repo.path(), &["report"], MEAN_TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let mut lines = vec![
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "Fixed and tested."}),
    ];
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "solve.jsonl", &lines);
    let solved = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["solve", "1", "--model", &model, "--format", "json"])
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .env("TMPDIR", &tmp)
        .env_remove("BUGLOOP_CONFIG")
        .output()
        .unwrap();
    assert_eq!(solved.status.code(), Some(0), "{}", text(&solved));
    let report: Value = serde_json::from_slice(&solved.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        stages(),
        Vec::<PathBuf>::new(),
        "the killed run's stage is gone"
    );
}

/// Two `solve N` at once: the second says which run holds the issue and exits 2 before it
/// spends anything (no model call, no attempt recorded); once the first is gone, the issue is
/// free again.
#[test]
fn one_run_solves_an_issue_at_a_time() {
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -c \"import time; time.sleep(60)\"\n",
    );
    repo.commit("stats");
    assert_eq!(
        bugloop(repo.path(), &["report"], MEAN_TRACE).status.code(),
        Some(0)
    );
    let scripts = tempfile::tempdir().unwrap();
    let model = script_of(
        scripts.path(),
        "first.jsonl",
        &[
            json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
            json!({"text": "fixed"}),
        ],
    );
    let mut first = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["solve", "1", "--model", &model])
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .env_remove("BUGLOOP_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the first run is in its attempt (its test command sleeping).
    let runs = repo.path().join(".git/bugloop/runs");
    let started = std::time::Instant::now();
    while std::fs::read_dir(&runs).map_or(0, Iterator::count) == 0
        && started.elapsed() < std::time::Duration::from_secs(30)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = bugloop(repo.path(), &["solve", "1", "--model", &model], "");
    let said = text(&second);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "issue #1 is held by another run (process {}",
            first.id()
        )),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(&runs).unwrap().count(),
        1,
        "no model call"
    );
    first.kill().unwrap();
    first.wait().unwrap();
    // Free once the holder is gone, even killed.
    let status = bugloop(repo.path(), &["status", "1", "--format", "json"], "");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["attempts"], json!([]), "{status:#}");
    let again = bugloop(
        repo.path(),
        &["solve", "1", "--model", "script:/nonexistent"],
        "",
    );
    assert!(
        !text(&again).contains("held by another run"),
        "{}",
        text(&again)
    );
}

/// An escalation is posted where others read it (a public issue on GitHub): what the failing
/// test printed is quoted with the task tree's path written as `.`, and agent runs are named,
/// never shown by a path of the machine.
#[test]
fn an_escalation_quotes_no_path_of_the_machine() {
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  max_iterations: 2\n  test_commands:\n    - python3 -c \"import os, sys; print(os.getcwd() + '/stats.py:3'); sys.exit(1)\"\n",
    );
    repo.commit("stats");
    let lines = [
        json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "fixed"}),
    ];
    let reported = bugloop(repo.path(), &["report"], MEAN_TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let scripts = tempfile::tempdir().unwrap();
    let model = script_of(scripts.path(), "fails.jsonl", &lines);
    let solved = bugloop(repo.path(), &["solve", "1", "--model", &model], "");
    assert_eq!(solved.status.code(), Some(1), "{}", text(&solved));
    let issue = bugloop(repo.path(), &["item", "1", "--format", "json"], "");
    let issue: Value = serde_json::from_slice(&issue.stdout).unwrap();
    let said: Vec<&str> = issue["comments"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["body"].as_str())
        .collect();
    assert_eq!(said.len(), 1, "{issue:#}");
    let escalation = said[0];
    assert!(
        escalation.contains("failed [Exited(1)]: ./stats.py:3"),
        "{escalation}"
    );
    assert!(escalation.contains("(run "), "{escalation}");
    let root = repo.path().canonicalize().unwrap();
    for machine in [root.to_str().unwrap(), "/tmp/", ".jsonl"] {
        assert!(!escalation.contains(machine), "{machine}: {escalation}");
    }
}

/// The byproducts scenario again as an unprivileged user (uid 65534, as the Dockerfile runs the
/// server), when this test runs as root: the sandbox, the task tree and the store behave the
/// same for a user who owns nothing else.
#[test]
fn a_repository_without_gitignore_is_solved_as_an_unprivileged_user_too() {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        eprintln!(
            "running as an unprivileged user already: the root-run variant is the other test"
        );
        return;
    }
    let open = |dir: &Path| {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let give = |dir: &Path| {
        let chowned = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(chowned.success());
    };
    // The binary where that user can run it (the build may sit under /root).
    let bin = tempfile::tempdir().unwrap();
    open(bin.path());
    let binary = bin.path().join("bugloop");
    std::fs::copy(env!("CARGO_BIN_EXE_bugloop"), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = tempfile::tempdir().unwrap();
    give(home.path());
    let repo = TestRepo::init("main");
    repo.write("stats.py", MEAN);
    repo.write(
        ".bugloop/config.yml",
        "solve:\n  test_commands:\n    - python3 -m unittest -q\n",
    );
    repo.commit("stats");
    give(repo.path());
    let scripts = tempfile::tempdir().unwrap();
    open(scripts.path());
    let mut lines = vec![
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
        json!({"text": "A test for the crash."}),
        json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element."}),
    ];
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "solve.jsonl", &lines);
    let run = |args: &[&str], stdin: &str| -> Output {
        use std::io::Write;
        let mut child = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&binary)
            .args(args)
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", home.path())
            .env("TMPDIR", "/tmp")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let reported = run(&["report"], MEAN_TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let solved = run(&["solve", "1", "--model", &model, "--format", "json"], "");
    assert_eq!(solved.status.code(), Some(0), "{}", text(&solved));
    let report: Value = serde_json::from_slice(&solved.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    // Read as root: that user's repository is "dubious" to git otherwise.
    let listed = Command::new("git")
        .args(["-c", "safe.directory=*", "ls-tree", "-r", "--name-only"])
        .arg(report["branch"].as_str().unwrap())
        .current_dir(repo.path())
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(files.lines().any(|f| f == "test_stats.py"), "{files}");
    assert!(!files.contains("__pycache__"), "{files}");
}
