//! The intake on the reports in `tests/reports/` (one per language, JSON log lines, a trace
//! wholly outside the repository, a bare message), against a small repository held in memory:
//! the report read, its frames located, its fingerprint and its issue, snapshotted; and the
//! rules a fingerprint keeps, and bad input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::trace::MAX_TRACE_LINES;

struct Files(Vec<(String, String)>, Vec<String>);

impl Files {
    fn new(files: &[(&str, &str)]) -> Files {
        Files(
            files
                .iter()
                .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
                .collect(),
            files.iter().map(|(p, _)| (*p).to_owned()).collect(),
        )
    }
}

impl Repository for Files {
    fn files(&self) -> &[String] {
        &self.1
    }

    fn read(&self, path: &str) -> Option<String> {
        self.0
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, t)| t.clone())
    }
}

fn repository() -> Files {
    Files::new(&[
        (
            "src/lib.rs",
            "pub fn first(v: &[u8]) -> u8 {\n    v[0]\n}\n\npub fn last(v: &[u8]) -> u8 {\n    v[v.len()]\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    let v = [1, 2, 3];\n    widgets::last(&v);\n}\n",
        ),
        (
            "app/main.py",
            "from app.models import last\n\n\n\n\n\n\n\n\n\n\nrun()\n",
        ),
        (
            "app/models.py",
            "def last(items):\n    # the last one\n    return items[len(items)]\n",
        ),
        (
            "web/cart.js",
            "function total(items) {\n  let sum = 0;\n  for (const item of items)\n    sum += item.price;\n  return sum;\n}\n\nfunction checkout(basket) {\n  return total(basket.items);\n}\n",
        ),
        (
            "cmd/main.go",
            "package main\n\n\n\n\n\nfunc last(v []int) int {\n\treturn v[len(v)]\n}\n\n\nfunc main() {\n\tlast([]int{1, 2, 3})\n}\n",
        ),
        (
            "src/main/java/com/acme/Cart.java",
            "package com.acme;\n\nclass Cart {\n  static int label(String name) {\n    return name.length();\n  }\n  public static void main(String[] a) {\n    label(null);\n  }\n}\n",
        ),
        ("README.md", "# widgets\n"),
    ])
}

/// The fingerprint of the report `text` in `repository`.
fn fingerprint_of(text: &str, repository: &Files) -> String {
    let report = read(text.as_bytes()).unwrap();
    fingerprint(&report, &locate(&report, repository), repository)
}

#[test]
fn every_report_in_tests_reports() {
    let repository = repository();
    insta::glob!("../tests/reports", "*.{txt,jsonl}", |path| {
        let bytes = std::fs::read(path).unwrap();
        let report = read(&bytes).unwrap();
        let located = locate(&report, &repository);
        let fingerprint = fingerprint(&report, &located, &repository);
        let issue = issue(&report, &located, &fingerprint, &repository);
        insta::assert_yaml_snapshot!(serde_json::json!({
            "report": report,
            "located": located,
            "fingerprint": fingerprint,
        }));
        insta::assert_snapshot!("issue", format!("# {}\n\n{}", issue.title, issue.body));
    });
}

#[test]
fn a_repeat_after_an_edit_has_the_same_fingerprint_another_place_another() {
    let repository = repository();
    let original = std::fs::read_to_string("tests/reports/python.txt").unwrap();
    let print = |text: &str| fingerprint_of(text, &repository);
    // Lines moved (an edit above), another checkout's paths, another message: the same error.
    let moved = original
        .replace("line 3", "line 7")
        .replace("line 12", "line 20")
        .replace("/srv/app/", "/home/ci/")
        .replace("list index out of range", "list index out of range (again)");
    assert_eq!(print(&original), print(&moved));
    // Another function: another error.
    let other = original.replace("in last", "in first");
    assert_ne!(print(&original), print(&other));
    // Another type: another error.
    let other = original.replace("IndexError", "KeyError");
    assert_ne!(print(&original), print(&other));
}

/// The same Rust panic with and without a backtrace (`RUST_BACKTRACE`) is one error; another
/// panic in the same file is another.
#[test]
fn a_rust_panic_is_the_same_error_with_or_without_its_backtrace() {
    let repository = repository();
    let print = |text: &str| fingerprint_of(text, &repository);
    let with = std::fs::read_to_string("tests/reports/rust.txt").unwrap();
    let without = "thread 'main' panicked at src/lib.rs:6:5:\nindex out of bounds: the len is 3 but the index is 3\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
    assert_eq!(print(&with), print(without));
    let elsewhere = without.replace("src/lib.rs:6:5", "src/lib.rs:2:5");
    assert_ne!(print(without), print(&elsewhere));
}

/// Two causes wrapped at the same framework frame are two errors: the root cause decides.
#[test]
fn a_java_root_cause_decides_the_error() {
    let repository = repository();
    let text = std::fs::read_to_string("tests/reports/java-caused-by.txt").unwrap();
    let report = read(text.as_bytes()).unwrap();
    assert_eq!(report.kind, "java.lang.NullPointerException");
    assert_eq!(
        report.frames[0].function.as_deref(),
        Some("com.acme.Cart.label")
    );
    assert!(report.trace.contains("Caused by: "), "{}", report.trace);
    let other = text
        .replace(
            "java.lang.NullPointerException",
            "java.lang.ArithmeticException",
        )
        .replace("Cart.label(Cart.java:5)", "Cart.main(Cart.java:8)");
    let print =
        |report: &ErrorReport| fingerprint(report, &locate(report, &repository), &repository);
    assert_ne!(print(&report), print(&read(other.as_bytes()).unwrap()));
}

#[test]
fn a_message_without_a_trace_is_told_apart_by_its_words_not_its_numbers() {
    let repository = repository();
    let print = |text: &str| fingerprint_of(text, &repository);
    assert_eq!(
        print("connection to db-7 refused after 3 attempts (id 9f3a2b1c0d)"),
        print("connection to db-12 refused after 5 attempts (id 00ffee8812)")
    );
    assert_ne!(
        print("connection to db-7 refused"),
        print("connection to db-7 reset")
    );
}

#[test]
fn bad_input_is_a_clear_error_or_a_sensible_report() {
    assert_eq!(read(b"").unwrap_err(), IntakeError::Empty);
    assert_eq!(read(b"  \n\t\n").unwrap_err(), IntakeError::Empty);
    assert_eq!(
        read(b"\x7fELF\x02\x01\x00\x00").unwrap_err(),
        IntakeError::Binary(6)
    );
    // Not UTF-8 (a Latin-1 message): read, the bytes replaced.
    let latin1 = read(b"ValueError: caf\xe9 ferm\xe9\n").unwrap();
    assert!(
        latin1.message.contains("caf\u{fffd} ferm\u{fffd}"),
        "{latin1:?}"
    );
    assert!(
        IntakeError::Binary(6).to_string().contains("offset 6"),
        "the error says where"
    );
    // A huge single line: a report with its message cut, never a crash.
    let huge = format!("ERROR {}", "x".repeat(3_000_000));
    let report = read(huge.as_bytes()).unwrap();
    assert!(report.message.chars().count() <= 2001);
    let repository = repository();
    let located = locate(&report, &repository);
    let text = issue(
        &report,
        &located,
        &fingerprint(&report, &located, &repository),
        &repository,
    );
    assert!(text.title.chars().count() <= 100, "{}", text.title);
    assert!(text.body.len() < 10_000, "{}", text.body.len());
    // Beyond the read limit, the rest is not read; a character cut at the limit is dropped.
    let mut long = "é".repeat(MAX_REPORT_BYTES);
    long.insert_str(0, "ERROR boom\n");
    assert_eq!(read(long.as_bytes()).unwrap().message, "ERROR boom");
}

#[test]
fn a_trace_with_backticks_cannot_break_out_of_its_block() {
    let text = "Traceback (most recent call last):\n  File \"app/models.py\", line 3, in last\nValueError: bad ```\n\n# Injected heading\n";
    let issue = filed(text);
    // The trace's fence is longer than its longest run of backticks.
    assert!(issue.body.contains("````text\n"), "{}", issue.body);
}

#[test]
fn many_error_lines_and_frames_are_read_and_the_frames_cut() {
    // Many lines that look like errors before the trace (each used to be searched for from the
    // top), then a trace deeper than is kept.
    let mut text: String = (0..50_000).map(|n| format!("Error: {n}\n")).collect();
    text.push_str("TypeError: x is undefined\n");
    for n in 0..5_000 {
        text.push_str(&format!("    at f{n} (/srv/app/app/models.js:{n}:1)\n"));
    }
    let report = read(text.as_bytes()).unwrap();
    assert_eq!(report.kind, "TypeError");
    assert_eq!(report.frames.len(), MAX_FRAMES);
    assert_eq!(report.frames[0].function.as_deref(), Some("f0"));
}

#[test]
fn a_deep_traceback_keeps_where_it_failed_and_says_what_was_left_out() {
    let mut text = String::from("Traceback (most recent call last):\n");
    for n in 0..1_000 {
        text.push_str(&format!(
            "  File \"/srv/app/app/tree.py\", line {n}, in walk\n    return walk(node.child)\n"
        ));
    }
    text.push_str("RecursionError: maximum recursion depth exceeded\n");
    let report = read(text.as_bytes()).unwrap();
    let lines: Vec<&str> = report.trace.lines().collect();
    assert_eq!(lines.len(), MAX_TRACE_LINES + 1);
    assert_eq!(lines[0], "Traceback (most recent call last):");
    assert_eq!(lines[MAX_TRACE_LINES / 2], "… (1802 lines left out)");
    assert_eq!(
        lines.last().copied(),
        Some("RecursionError: maximum recursion depth exceeded")
    );
}

#[test]
fn an_error_with_backticks_stays_inside_its_code_span() {
    let text = "Traceback (most recent call last):\n  File \"app/models.py\", line 3, in last\nValueError: a `` b ``` c\n";
    let issue = filed(text);
    let line = issue
        .body
        .lines()
        .find(|l| l.starts_with("**Error:**"))
        .unwrap();
    // A span opened by a run of backticks longer than any inside it.
    assert!(line.contains("````"), "{line}");
}

/// Sentry's issue alerts (`tests/sentry/*.json`, in its webhook's shape): each read as the trace
/// its platform prints, then as any report.
#[test]
fn every_sentry_alert_in_tests_sentry() {
    let repository = repository();
    insta::glob!("../tests/sentry", "*.json", |path| {
        let bytes = std::fs::read(path).unwrap();
        let sentry = sentry::report("event_alert", &bytes).unwrap();
        let report = read(sentry.text.as_bytes()).unwrap();
        let located = locate(&report, &repository);
        insta::assert_yaml_snapshot!(serde_json::json!({
            "text": sentry.text,
            "project": [sentry.project_id, sentry.project_slug],
            "report": report,
            "located": located,
            "fingerprint": fingerprint(&report, &located, &repository),
        }));
    });
}

/// The error Sentry alerts on and the same error's trace sent to `bugloop report`: one issue.
#[test]
fn a_sentry_alert_and_the_same_trace_reported_have_one_fingerprint() {
    let repository = repository();
    let print = |text: &str| fingerprint_of(text, &repository);
    for (sentry, trace) in [
        ("python.json", "python.txt"),
        ("javascript.json", "javascript.txt"),
    ] {
        let alert = std::fs::read(format!("tests/sentry/{sentry}")).unwrap();
        let alert = sentry::report("event_alert", &alert).unwrap();
        let trace = std::fs::read_to_string(format!("tests/reports/{trace}")).unwrap();
        assert_eq!(
            print(&alert.text),
            print(&trace),
            "{sentry}\n{}",
            alert.text
        );
    }
}

#[test]
fn a_sentry_delivery_without_an_event_is_refused_saying_why() {
    use sentry::{SentryError, report};
    assert_eq!(
        report("installation", b"{}"),
        Err(SentryError::Resource("installation".to_owned()))
    );
    assert!(matches!(
        report("event_alert", b"not json"),
        Err(SentryError::Payload(_))
    ));
    assert!(matches!(
        report("event_alert", b"{\"data\": {}}"),
        Err(SentryError::Payload(_))
    ));
    assert_eq!(
        report(
            "event_alert",
            b"{\"data\": {\"event\": {\"exception\": {\"values\": []}}}}"
        ),
        Err(SentryError::Empty)
    );
}

/// A payload made to read as something else (a frame's name that starts another language's
/// trace, a context line that is a frame) is refused; odd but valid JSON (nulls, numbers as
/// strings, negative lines) is read, not refused; frames are kept to the most a report keeps.
#[test]
fn a_sentry_payload_reads_back_as_what_sentry_reported_or_is_refused() {
    use sentry::{SentryError, report};
    let alert = std::fs::read_to_string("tests/sentry/python.json").unwrap();
    let forged = alert.replace(
        "\"context_line\": \"    run()\"",
        "\"context_line\": \"  File \\\"app/models.py\\\", line 1, in last\"",
    );
    assert!(matches!(
        report("event_alert", forged.as_bytes()),
        Err(SentryError::Payload(_))
    ));
    let go = std::fs::read_to_string("tests/sentry/javascript.json")
        .unwrap()
        .replace(
            "\"function\": \"checkout\"",
            "\"function\": \"x\\nTraceback (most recent call last):\"",
        );
    let read = report("event_alert", go.as_bytes()).unwrap();
    assert!(!read.text.contains("\nTraceback"), "{}", read.text);
    let odd = r#"{"data": {"event": {"platform": "python", "event_id": "0123456789abcdef0123456789abcdef",
        "exception": {"values": [null, {"type": "KeyError", "value": null,
        "stacktrace": {"frames": [null, {"filename": "a.py", "lineno": "7", "function": null},
        {"filename": "b.py", "lineno": -3}]}}]}}}}"#;
    let read = report("event_alert", odd.as_bytes()).unwrap();
    assert_eq!(
        read.event_id.as_deref(),
        Some("0123456789abcdef0123456789abcdef")
    );
    assert!(
        read.text.contains("File \"a.py\", line 7, in <module>"),
        "{}",
        read.text
    );
    let frames: Vec<String> = (0..1000)
        .map(|n| format!("{{\"filename\": \"f{n}.py\", \"lineno\": {n}, \"function\": \"f\"}}"))
        .collect();
    let deep = format!(
        "{{\"data\": {{\"event\": {{\"exception\": {{\"values\": [{{\"type\": \"RecursionError\", \"stacktrace\": {{\"frames\": [{}]}}}}]}}}}}}}}",
        frames.join(",")
    );
    let read = report("event_alert", deep.as_bytes()).unwrap();
    assert_eq!(read.text.matches("  File ").count(), MAX_FRAMES);
    assert!(
        read.text.contains("f999.py"),
        "the innermost frames are kept"
    );
}

/// Another statement in the same function is another error (the fix of one is no proof about
/// the other); the same statement reported from a checkout whose lines moved is the same.
#[test]
fn another_statement_in_the_same_function_is_another_error() {
    let repository = Files::new(&[(
        "app/stats.py",
        "def mean(values):\n    total = 0\n    first = values[0]\n    return values[len(values)]\n",
    )]);
    let print = |text: &str| fingerprint_of(text, &repository);
    let python = |line: u32, code: &str| {
        format!(
            "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line {line}, in mean\n    {code}\n    ~~~~~~^^^^^^^^^^^^^\nIndexError: list index out of range\n"
        )
    };
    let fixed = print(&python(4, "return values[len(values)]"));
    assert_eq!(fixed, print(&python(9, "return  values[len(values)]")));
    assert_ne!(fixed, print(&python(3, "first = values[0]")));
    // A trace that prints no statement: the repository's line says it.
    let node = |line: u32| format!("TypeError: boom\n    at mean (/srv/app/stats.py:{line}:5)\n");
    assert_ne!(print(&node(3)), print(&node(4)));
    assert_eq!(print(&node(4)), print(&node(4)));
}

/// A trace comes only from where an application puts one: a stack field of a record at an
/// error level (the common schemas: ECS, OpenTelemetry, pino, structlog); never from a
/// message's text, nor from a record below error.
#[test]
fn json_log_records_give_a_trace_only_from_a_stack_field_at_an_error_level() {
    let trace = "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 3, in last\n    return items[len(items)]\nIndexError: list index out of range";
    let line = |record: serde_json::Value| format!("{record}\n");
    let reports = |text: &str| {
        let mut segmenter = segment::Segmenter::new();
        let mut found: Vec<String> = text.lines().flat_map(|l| segmenter.push_line(l)).collect();
        found.extend(segmenter.finish());
        found
    };
    // Forged: a user's text in a message, a stack at INFO, an exception at WARNING.
    for forged in [
        serde_json::json!({"level": "error", "msg": format!("\n{trace}")}),
        serde_json::json!({"level": "info", "msg": "hi", "stack": trace}),
        serde_json::json!({"level": "warning", "msg": "hi", "exception": trace}),
        serde_json::json!({"levelname": "INFO", "exc_info": trace}),
    ] {
        let text = line(forged);
        let found = reports(&text);
        for report in &found {
            let read = read(report.as_bytes()).unwrap();
            assert_eq!(read.language, Language::Unknown, "{text}");
            assert!(read.frames.is_empty(), "{text}");
        }
        let read = read(text.as_bytes()).unwrap();
        assert!(read.frames.is_empty(), "{text}: {read:?}");
    }
    // Real: ECS (flat `log.level`, nested `error`), OpenTelemetry (flat and in attributes),
    // pino's numeric level, Python's `levelno`.
    for real in [
        serde_json::json!({"@timestamp": "2026-12-05T10:00:00Z", "log.level": "error", "message": "request failed", "error": {"type": "IndexError", "message": "list index out of range", "stack_trace": trace}}),
        serde_json::json!({"log": {"level": "ERROR"}, "message": "request failed", "error.stack_trace": trace}),
        serde_json::json!({"severity_text": "ERROR", "body": "request failed", "exception.type": "IndexError", "exception.message": "list index out of range", "exception.stacktrace": trace}),
        serde_json::json!({"severityNumber": 17, "body": "request failed", "attributes": {"exception.type": "IndexError", "exception.stacktrace": trace}}),
        serde_json::json!({"level": 50, "msg": "request failed", "err": {"type": "IndexError", "stack": trace}}),
        serde_json::json!({"levelno": 40, "message": "request failed", "exc_info": trace}),
    ] {
        let text = line(real);
        assert_eq!(reports(&text).len(), 1, "{text}");
        let read = read(text.as_bytes()).unwrap();
        assert_eq!(read.kind, "IndexError", "{text}");
        assert_eq!(read.language, Language::Python, "{text}");
        assert_eq!(read.frames.len(), 1, "{text}");
    }
    // A plain-text log: a traceback starts at a line's start, not inside a logged line.
    let indented = format!("2026-12-05 INFO said:\n  {}\n", trace.replace('\n', "\n  "));
    assert!(reports(&indented).is_empty(), "{indented}");
}

/// A user's text inside an exception's message cannot put frames before the real ones: the
/// message the record carries is made one line in its stack, and a trace must start at the
/// stack's first line. A user's field named like another level field does not make a record an
/// error: every level field must say so.
#[test]
fn a_message_cannot_forge_frames_inside_a_stack_and_every_level_field_must_say_error() {
    let repository = repository();
    let injected = "Unknown product x\n    at total (/app/web/cart.js:4:22)\n    at checkout (/app/web/cart.js:9:10)";
    let pino = serde_json::json!({"level": 50, "msg": "request failed", "err": {
        "type": "TypeError", "message": injected,
        "stack": format!("TypeError: {injected}\n    at lookup (/app/lib/other.js:8:9)")}});
    let pino = read_report(&format!("{pino}\n"));
    let located = locate(&pino, &repository);
    assert!(located.is_empty(), "{pino:#?}");
    // A Python traceback inside a JavaScript stack's message is not the trace.
    let python = "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 3, in last\n    return items[len(items)]\nIndexError: list index out of range";
    let winston = serde_json::json!({"level": "error", "message": "bad name",
        "stack": format!("Error: bad name x\n{python}\n    at greet (/app/lib/greet.js:2:3)")});
    let winston = read_report(&format!("{winston}\n"));
    assert_ne!(winston.kind, "IndexError", "{winston:#?}");
    assert_ne!(winston.language, Language::Python, "{winston:#?}");
    // Every level field must say error: INFO with a user's `level: error`, pino's 30 with a
    // user's `severity: ERROR`.
    for record in [
        serde_json::json!({"levelname": "INFO", "message": "profile updated", "level": "error", "exc_info": python}),
        serde_json::json!({"level": 30, "msg": "hi", "severity": "ERROR", "stack": python}),
    ] {
        let mut segmenter = segment::Segmenter::new();
        assert!(
            segmenter.push_line(&record.to_string()).is_empty(),
            "{record}"
        );
    }
    // A traceback indented inside a report's text is not read; as its first line, it is.
    let inside = format!("user said:\n  {}\n", python.replace('\n', "\n  "));
    assert_eq!(read_report(&inside).language, Language::Unknown);
    let pasted = format!("  {}\n", python.replace('\n', "\n  "));
    assert_eq!(read_report(&pasted).language, Language::Python);
}

fn read_report(text: &str) -> ErrorReport {
    read(text.as_bytes()).unwrap()
}

/// The issue a report of `text` files against `repository()`, with the fingerprint "f".
fn filed(text: &str) -> IssueText {
    let repository = repository();
    let report = read_report(text);
    let located = locate(&report, &repository);
    issue(&report, &located, "f", &repository)
}
