//! Runs that stop before they end: out of budget, killed with `kill -9`, or beside another run
//! of the same issue. The next `solve N` goes on from where the record ends, with the earlier
//! attempts' edits in its tree, and leaves nothing of the dead run behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use bugloop_github_sim::fixture::review_lines;
use bugloop_testkit::json::strings_at;
use bugloop_testkit::{TestRepo, assert_contains};

use super::runner::{
    Runner, committed, git_read, is_root, read, script_of, text, transcripts_saying, write,
};
use super::{MEAN, MEAN_TEST, PYTHON_TESTS};

/// The resumed attempt was told its tree holds the earlier attempts' edits, and it did: its
/// read of the first attempt's test found it, and the solution has it.
fn assert_resumed_with_the_test(repo: &TestRepo, report: &Value) {
    let resumed: Vec<String> = transcripts_saying(repo.path(), "- attempt 1:")
        .into_iter()
        .filter(|t| t.contains("class MeanTest"))
        .collect();
    assert_eq!(resumed.len(), 1, "the resumed attempt read the kept test");
    assert!(resumed[0].contains("are still in the tree"));
    assert!(!resumed[0].contains("No such file"));
    let files = committed(repo.path(), report);
    assert!(files.contains(&"test_stats.py".to_owned()), "{files:?}");
    let branch = report["branch"].as_str().unwrap();
    let test = git_read(repo.path(), &["show", &format!("{branch}:test_stats.py")]);
    assert_eq!(test, MEAN_TEST.trim_end());
    // Solving ended: the kept edits went with it.
    assert_eq!(
        git_read(repo.path(), &["for-each-ref", "refs/bugloop/solve/"]),
        ""
    );
}

/// The second run's model: reads the first attempt's test (it must be there) and fixes the
/// code; the draft's review finds nothing.
fn resuming_model(scripts: &Path) -> String {
    let mut lines = vec![
        json!({"tool_calls": [read("test_stats.py"), write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element; tested."}),
    ];
    lines.extend(review_lines(&[]));
    script_of(scripts, "second.jsonl", &lines)
}

/// The first run's model: attempt 1 writes [`MEAN_TEST`] and no fix; attempt 2 makes the calls
/// `fix` and says `then`.
fn test_then_fix(scripts: &Path, fix: &[Value], then: &str) -> String {
    script_of(
        scripts,
        "first.jsonl",
        &[
            json!({"tool_calls": [write("test_stats.py", MEAN_TEST)]}),
            json!({"text": "A test for the crash."}),
            json!({ "tool_calls": fix }),
            json!({ "text": then }),
        ],
    )
}

/// `bugloop args...` in `dir`, which must stop the run before it ends (exit 3, the issue still
/// SOLVING) for the reason `stopped`, with `attempts` attempts recorded: its report.
#[track_caller]
fn stopped_run(
    runner: &Runner,
    dir: &Path,
    args: &[&str],
    stopped: &str,
    attempts: usize,
) -> Value {
    let output = runner.run(dir, args, "");
    assert_eq!(output.status.code(), Some(3), "{}", text(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["state"], "SOLVING", "{report:#}");
    assert_eq!(report["stopped"], stopped, "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        attempts,
        "{report:#}"
    );
    report
}

/// A run whose budget runs out stops (exit 3), neither escalated nor counted as an attempt, and
/// `solve N` with more budget resumes where it stopped: the first attempt's test is in its
/// tree, and in the solution.
fn budget_stop_and_resume(runner: &Runner) {
    let repo = runner.mean_reported(&format!("{PYTHON_TESTS}budgets:\n  max_turns: 3\n"));
    let dir = repo.path();
    let scripts = runner.scripts();
    let first = test_then_fix(
        scripts.path(),
        &[write("stats.py", &MEAN.replace(" + 1", ""))],
        "never reached: the budget is spent",
    );
    let args = ["solve", "1", "--model", &first, "--format", "json"];
    stopped_run(runner, dir, &args, "budget", 1);

    // More budget: resumed, attempt 2, with the first attempt's test in the tree.
    let more = scripts.path().join("more.yml");
    std::fs::write(&more, "budgets:\n  max_turns: 40\n").unwrap();
    let second = resuming_model(scripts.path());
    let report = runner.json(
        dir,
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
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(
        report["attempts"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    assert_resumed_with_the_test(&repo, &report);
    // The draft's test results say how many tests ran, as unittest counted them.
    let draft = runner.item(dir, 2);
    let body = draft["body"].as_str().unwrap();
    assert_contains(
        body,
        "- `python3 -m unittest -q`: passed (1 passed)\n\n**Tests:** 1 passed\n",
    );
}

as_each_user! {
    budget_stop_and_resume => a_run_out_of_budget_stops_and_the_next_resumes, a_run_out_of_budget_stops_and_the_next_resumes_as_an_unprivileged_user_too
}

/// A model that cannot be reached (nothing listens at its address) stops the run after its
/// retries: neither escalated nor counted as an attempt, exit 3, and the next run resumes. An
/// outage once cost every waiting issue its attempts and escalated it. The third such run in a
/// row escalates: a failure the issue's own text set off would otherwise hold it for ever.
#[test]
fn a_model_that_cannot_be_reached_stops_the_run_without_an_attempt() {
    let runner = Runner::me();
    let repo = runner.mean_reported(PYTHON_TESTS);
    let dir = repo.path();
    let scripts = runner.scripts();
    let down = scripts.path().join("down.yml");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap();
    drop(closed);
    std::fs::write(
        &down,
        format!(
            "model:\n  max_retries: 1\n  providers:\n    down:\n      base_url: \"http://{address}/v1\"\n"
        ),
    )
    .unwrap();
    let args = ["solve", "1", "--model", "down:m", "--format", "json"];
    let config = ["--config", down.to_str().unwrap()];
    let report = stopped_run(&runner, dir, &[&args[..], &config[..]].concat(), "model", 0);
    let message = report["message"].as_str().unwrap();
    assert_contains(message, "cannot reach the provider");
    assert_contains(message, "`bugloop solve 1` resumes");
    // Again: still no attempt, still not escalated.
    let again = runner.run(dir, &[&args[..], &config[..]].concat(), "");
    let report: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["state"], "SOLVING", "{report:#}");
    assert!(
        report["attempts"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
    let third = runner.run(dir, &[&args[..], &config[..]].concat(), "");
    assert_eq!(third.status.code(), Some(1), "{}", text(&third));
    let report: Value = serde_json::from_slice(&third.stdout).unwrap();
    assert_eq!(report["state"], "ESCALATED", "{report:#}");
    let message = report["message"].as_str().unwrap();
    assert_contains(message, "in 3 runs in a row");
}

/// `kill -9` during attempt 2 (its test command running): the next `solve 1` starts from what
/// attempt 1 left, and attempt 1's test is in the final commit.
fn killed_and_resumed(runner: &Runner) {
    // The second command sleeps when the agent left `slow.txt` (attempt 2 of the first run),
    // and says so in the tree, where the test sees it.
    let repo = runner.mean_reported(&format!(
        "{PYTHON_TESTS}    - shell: \"if [ -e slow.txt ]; then touch sleeping; sleep 60; fi\"\n"
    ));
    let dir = repo.path();
    let scripts = runner.scripts();
    let first = test_then_fix(
        scripts.path(),
        &[
            write("stats.py", &MEAN.replace(" + 1", "")),
            write("slow.txt", "x\n"),
        ],
        "Fixed.",
    );
    let mut child = runner.spawn(dir, &["solve", "1", "--model", &first]);
    let tasks = dir.join(".git/bugloop/tasks");
    let sleeping = || {
        std::fs::read_dir(&tasks)
            .into_iter()
            .flatten()
            .flatten()
            .any(|task| task.path().join("tree/sleeping").exists())
    };
    let started = Instant::now();
    while !sleeping() && started.elapsed() < Duration::from_secs(60) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sleeping(), "attempt 2's test command ran");
    child.kill().unwrap();
    child.wait().unwrap();

    let second = resuming_model(scripts.path());
    let report = runner.solve_one(dir, &second);
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_resumed_with_the_test(&repo, &report);
    let files = committed(dir, &report);
    assert!(!files.contains(&"slow.txt".to_owned()), "{files:?}");
    // The killed run's task tree is gone too.
    let left: Vec<PathBuf> = std::fs::read_dir(&tasks)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(left, Vec::<PathBuf>::new());
}

as_each_user! {
    killed_and_resumed => a_run_killed_during_an_attempt_resumes_with_the_earlier_attempts_edits, a_run_killed_during_an_attempt_resumes_as_an_unprivileged_user_too
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
    let killed = Runner::me().mean_reported(
        "solve:\n  test_commands:\n    - python3 -c \"import time; time.sleep(60)\"\n",
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
    // Named by its process and start time (`<pid>_<start>`), with its lock file beside it.
    let prefix = format!("bugloop-stage-{}_", child.id());
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
    let started = Instant::now();
    while stages().is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
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
    let repo = Runner::me().mean_reported(PYTHON_TESTS);
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
fn one_at_a_time(runner: &Runner) {
    let repo = runner.mean_reported(
        "solve:\n  test_commands:\n    - python3 -c \"import time; time.sleep(60)\"\n",
    );
    let scripts = runner.scripts();
    let model = script_of(
        scripts.path(),
        "first.jsonl",
        &[
            json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
            json!({"text": "fixed"}),
        ],
    );
    let mut first = runner.spawn(repo.path(), &["solve", "1", "--model", &model]);
    // Wait until the first run is in its attempt (its test command sleeping).
    let runs = repo.path().join(".git/bugloop/runs");
    let started = Instant::now();
    while std::fs::read_dir(&runs).map_or(0, Iterator::count) == 0
        && started.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = runner.run(repo.path(), &["solve", "1", "--model", &model], "");
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
    let status = runner.status(repo.path(), 1);
    assert_eq!(status["attempts"], json!([]), "{status:#}");
    let again = runner.run(
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
fn escalation_without_paths(runner: &Runner) {
    let repo = runner.mean_reported("solve:\n  max_iterations: 2\n  test_commands:\n    - python3 -c \"import os, sys; print(os.getcwd() + '/stats.py:3'); sys.exit(1)\"\n");
    // Both attempts fail the test command (a model that stops answering would stop the run
    // rather than fail an attempt; an agent run named in an escalation is the solve crate's
    // `an_escalation_shows_no_path_of_the_machine`).
    let attempt = [
        json!({"tool_calls": [write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "fixed"}),
    ];
    let lines = [attempt.clone(), attempt].concat();
    let scripts = runner.scripts();
    let model = script_of(scripts.path(), "fails.jsonl", &lines);
    runner.exits(repo.path(), &["solve", "1", "--model", &model], "", 1);
    let issue = runner.item(repo.path(), 1);
    let said = strings_at(&issue["comments"], "body");
    assert_eq!(said.len(), 1, "{issue:#}");
    let escalation = said[0];
    assert_contains(escalation, "failed [Exited(1)]: ./stats.py:3");
    let root = repo.path().canonicalize().unwrap();
    for machine in [root.to_str().unwrap(), "/tmp/", ".jsonl"] {
        assert!(!escalation.contains(machine), "{machine}: {escalation}");
    }
}

as_each_user! {
    one_at_a_time => one_run_solves_an_issue_at_a_time, one_run_solves_an_issue_at_a_time_as_an_unprivileged_user_too
}

as_each_user! {
    escalation_without_paths => an_escalation_quotes_no_path_of_the_machine, an_escalation_quotes_no_path_of_the_machine_as_an_unprivileged_user_too
}
