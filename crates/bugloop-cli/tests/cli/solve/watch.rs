//! `bugloop watch` as an operator runs it: following a log being written and rotated (each
//! error filed once, its repeats within the window tallied, a burst over the rate dropped and
//! said, an error written before the watch began left alone, a trace the log stops in the
//! middle of reported once it goes quiet), and `--once` over standard input (JSON log lines and
//! traces; with `--window 0` a repeat is counted on its issue).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use bugloop_testkit::assert_contains;
use serde_json::Value;

use super::MEAN_TRACE;
use super::runner::{Runner, text};

fn trace(kind: &str) -> String {
    MEAN_TRACE.replace(
        "IndexError: list index out of range",
        &format!("{kind}: boom"),
    )
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// `bugloop args` running in `dir`, its standard output's lines sent as they come (its
/// standard error kept for the end).
fn spawn_watch(
    runner: &Runner,
    dir: &Path,
    args: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = runner.start(dir, args, Stdio::null());
    let stdout = child.stdout.take().unwrap();
    let (send, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// Stops the watch `child` as a service manager does (SIGTERM), which must end it well: its
/// standard error.
fn stop(mut child: std::process::Child) -> String {
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?} {stderr}");
    stderr
}

/// Reads the watch's JSON events until `n` have come (or a minute has passed).
fn events(lines: &mpsc::Receiver<String>, n: usize) -> Vec<Value> {
    let mut found = Vec::new();
    while found.len() < n {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) else {
            break;
        };
        if let Ok(event) = serde_json::from_str::<Value>(&line) {
            found.push(event);
        }
    }
    found
}

/// What `output` printed, and each of its lines read as JSON.
fn json_lines(output: &std::process::Output) -> (String, Vec<Value>) {
    let said = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines = said
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (said, lines)
}

fn follow_and_rotate(runner: &Runner) {
    let repo = runner.stats_repo();
    let logs = runner.readable_dir();
    let log = logs.path().join("app.log");
    // Written before the watch began: not reported.
    append(
        &log,
        &format!("2026-12-01 10:00:00 ERROR old\n{}", trace("OldError")),
    );
    let log_arg = log.display().to_string();
    let (child, lines) = spawn_watch(
        runner,
        repo.path(),
        &[
            "watch",
            &log_arg,
            "--poll-ms",
            "20",
            "--per-minute",
            "4",
            "--format",
            "json",
        ],
    );
    std::thread::sleep(Duration::from_millis(500));
    append(
        &log,
        &format!(
            "2026-12-01 10:01:00 INFO request served\n2026-12-01 10:01:01 ERROR crashed\n{MEAN_TRACE}2026-12-01 10:01:02 INFO next\n"
        ),
    );
    let first = events(&lines, 1);
    append(&log, &format!("{MEAN_TRACE}{}", trace("KeyError")));
    append(&log, "2026-12-01 10:01:03 INFO after\n");
    let mut seen = first;
    seen.extend(events(&lines, 2));
    // Rotated: the old file moved away, a new one written.
    std::fs::rename(&log, logs.path().join("app.log.1")).unwrap();
    append(
        &log,
        &format!(
            "{MEAN_TRACE}{}2026-12-01 10:02:00 INFO x\n",
            trace("ValueError")
        ),
    );
    seen.extend(events(&lines, 2));
    // The log goes quiet in the middle of a trace: reported once it has been quiet a while.
    append(&log, &trace("ZeroDivisionError"));
    seen.extend(events(&lines, 1));
    // Truncated in place (copytruncate), then written shorter than before: read from its
    // start; over the rate (four in the minute), dropped and said.
    std::fs::File::create(&log).unwrap();
    append(&log, &trace("AssertionError"));
    seen.extend(events(&lines, 1));
    let stderr = stop(child);
    let said: Vec<String> = seen
        .iter()
        .map(|e| match e["event"].as_str().unwrap() {
            "reported" => format!(
                "{} #{} {}",
                if e["filed"] == true {
                    "filed"
                } else {
                    "counted"
                },
                e["issue"],
                e["title"].as_str().unwrap().split(':').next().unwrap()
            ),
            "repeat" => format!("repeat {}", e["repeats"]),
            "rate_limited" => format!("dropped {}", e["dropped"]),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        said,
        [
            "filed #1 IndexError",
            "repeat 1",
            "filed #2 KeyError",
            "repeat 2",
            "filed #3 ValueError",
            "filed #4 ZeroDivisionError",
            "dropped 1",
        ],
        "{seen:#?}\n{stderr}"
    );
    // The store holds four issues, each reported once; the old error is not one of them.
    for (number, title) in [
        (1, "IndexError"),
        (2, "KeyError"),
        (3, "ValueError"),
        (4, "ZeroDivisionError"),
    ] {
        let shown = runner.run(
            repo.path(),
            &["item", &number.to_string(), "--format", "json"],
            "",
        );
        let item: Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert!(
            item["title"].as_str().unwrap().starts_with(title),
            "{item:#}"
        );
        assert_eq!(item["reports"], 1, "{item:#}");
    }
    let fifth = runner.run(repo.path(), &["item", "5"], "");
    assert_ne!(fifth.status.code(), Some(0), "{}", text(&fifth));
}

as_each_user! {
    follow_and_rotate => a_followed_log_is_filed_once_per_error_through_rotation_and_bursts, a_followed_log_as_an_unprivileged_user_too
}

#[test]
fn once_over_standard_input_files_json_lines_and_traces_and_counts_repeats() {
    let runner = Runner::me();
    let repo = runner.stats_repo();
    let input = format!(
        "{{\"level\": \"info\", \"msg\": \"up\"}}\n{{\"level\": \"error\", \"message\": \"payment provider timed out\"}}\nnoise\n{MEAN_TRACE}{MEAN_TRACE}"
    );
    let output = runner.ok(
        repo.path(),
        &["watch", "--once", "--window", "0", "-"],
        &input,
    );
    let said = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert!(lines[0].starts_with("filed issue #1: "), "{said}");
    assert!(lines[0].contains("payment provider timed out"), "{said}");
    assert!(lines[1].starts_with("filed issue #2: IndexError"), "{said}");
    assert!(
        lines[2].starts_with("counted on issue #2: IndexError"),
        "{said}"
    );
    assert!(lines[2].ends_with("(2 reports)"), "{said}");
    // A file that is not there is an error, said, with --once.
    runner.exits_saying(
        repo.path(),
        &["watch", "--once", "/nonexistent/app.log"],
        2,
        "cannot open /nonexistent/app.log",
    );
    // One of several that cannot be read is said and left out; the others are read.
    let logs = tempfile::tempdir().unwrap();
    let app = logs.path().join("app.log");
    std::fs::write(&app, MEAN_TRACE).unwrap();
    std::os::unix::fs::symlink(&app, logs.path().join("link.log")).unwrap();
    let output = runner.ok(
        repo.path(),
        &[
            "watch",
            "--once",
            &logs.path().join("link.log").display().to_string(),
            &app.display().to_string(),
        ],
        "",
    );
    assert_contains(
        &String::from_utf8_lossy(&output.stdout),
        "counted on issue #2: IndexError",
    );
    assert_contains(
        &String::from_utf8_lossy(&output.stderr),
        "link.log is not read: it is a symbolic link",
    );
}

/// `--route PREFIX=REPOSITORY`: an error whose trace is in another service's files is filed in
/// that service's repository; the rest in this one.
#[test]
fn a_report_of_another_services_files_is_routed_to_its_repository() {
    let runner = Runner::me();
    let app = runner.stats_repo();
    let api = runner.repo(&[("handlers.py", "def get(d):\n    return d['id']\n")]);
    let api_trace = "Traceback (most recent call last):\n  File \"/srv/api/handlers.py\", line 2, in get\n    return d['id']\nKeyError: 'id'\n";
    // The repository as the user writes it, relative to where the watch runs: its reports'
    // lines are marked the same way.
    assert_eq!(app.path().parent(), api.path().parent());
    let relative = format!("../{}", api.path().file_name().unwrap().to_string_lossy());
    let route = format!("/srv/api/={relative}");
    let output = runner.ok(
        app.path(),
        &["watch", "--once", "--route", &route, "-"],
        &format!("{MEAN_TRACE}{api_trace}"),
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert_contains(&said, "filed issue #1: IndexError");
    assert_contains(&said, &format!("[{relative}] filed issue #1: KeyError"));
    for (repo, title) in [(&app, "IndexError"), (&api, "KeyError")] {
        let shown = runner.run(repo.path(), &["item", "1", "--format", "json"], "");
        let item: Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert!(
            item["title"].as_str().unwrap().starts_with(title),
            "{item:#}"
        );
    }
    runner.exits_saying(
        app.path(),
        &["watch", "--once", "--route", "/srv/x=/nonexistent", "-"],
        2,
        "is not a directory",
    );
}

/// What an application logs at a user's request is not a trace: a JSON record at ERROR whose
/// message holds a traceback, a stack field at INFO, an exception at WARNING, and a traceback
/// indented inside a plain-text record file a message at most, never the traced error (no
/// frames, so no fingerprint of the real error's issue); ECS and OpenTelemetry records at error
/// level are read with their traces.
#[test]
fn log_lines_a_user_can_write_forge_no_trace() {
    let runner = Runner::me();
    let repo = runner.stats_repo();
    let trace = MEAN_TRACE.trim_end();
    let forged = [
        serde_json::json!({"level": "error", "msg": format!("bad input: \n{trace}")}),
        serde_json::json!({"level": "info", "msg": "hi", "stack": trace}),
        serde_json::json!({"level": "warning", "msg": "hi", "exception": trace}),
    ];
    let mut input: String = forged.iter().map(|r| format!("{r}\n")).collect();
    input.push_str(&format!(
        "2026-12-05 10:00:00 INFO user said:\n  {}\n",
        trace.replace('\n', "\n  ")
    ));
    let output = runner.ok(
        repo.path(),
        &["watch", "--once", "--format", "json", "-"],
        &input,
    );
    let (said, events) = json_lines(&output);
    // Only the ERROR record is a report, of its message.
    assert_eq!(events.len(), 1, "{said}");
    assert!(
        events[0]["located"].as_array().unwrap().is_empty(),
        "{said}"
    );
    assert!(
        !events[0]["title"]
            .as_str()
            .unwrap()
            .starts_with("IndexError"),
        "{said}"
    );

    let ecs = serde_json::json!({"@timestamp": "2026-12-05T10:00:00Z", "log.level": "error",
        "message": "request failed", "error": {"type": "IndexError", "message": "list index out of range", "stack_trace": trace}});
    let otel = serde_json::json!({"severity_text": "ERROR", "body": "request failed",
        "exception.type": "IndexError", "exception.stacktrace": trace});
    let output = runner.run(
        repo.path(),
        &["watch", "--once", "--window", "0", "--format", "json", "-"],
        &format!("{ecs}\n{otel}\n"),
    );
    let (said, events) = json_lines(&output);
    assert_eq!(events.len(), 2, "{said}");
    for event in &events {
        assert_eq!(event["located"][0]["path"], "stats.py", "{said}");
    }
    assert_eq!(events[1]["count"], 2, "one error: {said}");
}

/// A log that does not exist yet: "waiting for it to appear" is said once, on standard error,
/// however long the wait; standard output holds only the events (one JSON object a line).
#[test]
fn a_log_not_there_yet_is_waited_for_once_on_standard_error() {
    let runner = Runner::me();
    let repo = runner.stats_repo();
    let logs = runner.readable_dir();
    let log = logs.path().join("later.log");
    let log_arg = log.display().to_string();
    let (child, lines) = spawn_watch(
        &runner,
        repo.path(),
        &["watch", &log_arg, "--poll-ms", "20", "--format", "json"],
    );
    // Many polls with nothing there, then the log appears with an error.
    std::thread::sleep(Duration::from_millis(600));
    append(&log, "2026-12-05 10:00:00 INFO up\n");
    std::thread::sleep(Duration::from_millis(200));
    append(&log, MEAN_TRACE);
    let seen = events(&lines, 1);
    let stderr = stop(child);
    assert_eq!(seen.len(), 1, "{stderr}");
    assert_eq!(seen[0]["event"], "reported", "{seen:?}");
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(rest.is_empty(), "only events on standard output: {rest:?}");
    assert_eq!(stderr.matches("waiting for").count(), 1, "{stderr}");
}
