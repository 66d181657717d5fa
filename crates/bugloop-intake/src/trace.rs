//! Traces as each language prints them, and JSON log lines that carry one.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::{ErrorReport, Frame, Language};

/// The most of a trace kept in a report.
pub(crate) const MAX_TRACE_LINES: usize = 200;
/// The most of a message kept.
const MAX_MESSAGE_CHARS: usize = 2000;

/// A pattern of this file's own (tested); one that did not compile would match nothing.
struct Pattern(Option<Regex>);

impl Pattern {
    fn captures<'t>(&self, text: &'t str) -> Option<regex::Captures<'t>> {
        self.0.as_ref()?.captures(text)
    }

    fn is_match(&self, text: &str) -> bool {
        self.0.as_ref().is_some_and(|r| r.is_match(text))
    }
}

fn regex(pattern: &str) -> Pattern {
    Pattern(Regex::new(pattern).ok())
}

static PYTHON_FRAME: LazyLock<Pattern> =
    LazyLock::new(|| regex(r#"^\s*File "([^"]+)", line (\d+)(?:, in (.+))?$"#));
static PYTHON_ERROR: LazyLock<Pattern> = LazyLock::new(|| {
    regex(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|[A-Z]\w*)):?\s?(.*)$")
});
static JS_FRAME: LazyLock<Pattern> =
    LazyLock::new(|| regex(r"^\s+at (?:(.+?) \()?(.+?):(\d+)(?::\d+)?\)?$"));
static JS_ERROR: LazyLock<Pattern> =
    LazyLock::new(|| regex(r"^(?:Uncaught )?([A-Z]\w*(?:Error|Exception)|Error): ?(.*)$"));
static RUST_PANIC_NEW: LazyLock<Pattern> =
    LazyLock::new(|| regex(r"^thread '[^']*' panicked at (.+?):(\d+):\d+:$"));
static RUST_PANIC_OLD: LazyLock<Pattern> =
    LazyLock::new(|| regex(r"^thread '[^']*' panicked at '(.*)', (.+?):(\d+):\d+$"));
static RUST_FRAME_FN: LazyLock<Pattern> = LazyLock::new(|| regex(r"^\s*\d+: (.+)$"));
static RUST_FRAME_AT: LazyLock<Pattern> = LazyLock::new(|| regex(r"^\s+at (.+?):(\d+)(?::\d+)?$"));
static GO_FRAME_FILE: LazyLock<Pattern> = LazyLock::new(|| regex(r"^\t(.+?\.go):(\d+)"));
static JAVA_HEAD: LazyLock<Pattern> = LazyLock::new(|| {
    regex(
        r"^(?:Exception in thread .+? |Caused by: )?([a-z][\w]*(?:\.[\w$]+)+(?:Exception|Error)):? ?(.*)$",
    )
});
static JAVA_FRAME: LazyLock<Pattern> =
    LazyLock::new(|| regex(r"^\s+at ([\w$.<>]+)\(([^:()]+)(?::(\d+))?\)$"));

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(chars).collect();
        out.push('…');
        out
    }
}

/// The trace's lines, at most [`MAX_TRACE_LINES`]: of a longer one its first and last half, since
/// a Python or Rust trace ends with where it failed and a Java or JavaScript one starts with it,
/// and a line that says how many were left out between them.
fn trace_of(lines: &[&str]) -> String {
    let mut out: Vec<String> = Vec::new();
    if lines.len() > MAX_TRACE_LINES {
        let half = MAX_TRACE_LINES / 2;
        let (head, rest) = lines.split_at(half);
        let (left_out, tail) = rest.split_at(rest.len() - half);
        out.extend(head.iter().map(|l| cut(l, 500)));
        out.push(format!("… ({} lines left out)", left_out.len()));
        out.extend(tail.iter().map(|l| cut(l, 500)));
    } else {
        out.extend(lines.iter().map(|l| cut(l, 500)));
    }
    out.join("\n")
}

/// A report from text: the first trace found, or else the first line as the message.
pub(crate) fn from_text(text: &str, reproduction: Option<String>) -> ErrorReport {
    let lines: Vec<&str> = text.lines().collect();
    let found = python(&lines)
        .or_else(|| rust(&lines))
        .or_else(|| go(&lines))
        .or_else(|| java(&lines))
        .or_else(|| javascript(&lines));
    let mut report = found.unwrap_or_else(|| {
        let first = lines
            .iter()
            .map(|l| l.trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        let start = lines.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        ErrorReport {
            kind: "error".to_owned(),
            message: first.to_owned(),
            language: Language::Unknown,
            frames: Vec::new(),
            trace: trace_of(&lines[start..(start + 40).min(lines.len())]),
            reproduction: None,
            level: None,
        }
    });
    report.message = cut(report.message.trim(), MAX_MESSAGE_CHARS);
    report.reproduction = reproduction;
    report
}

fn python(lines: &[&str]) -> Option<ErrorReport> {
    // At a line's start, as Python prints it; indented only as the report's first line (a
    // pasted trace), never inside another line's text.
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let start = lines.iter().enumerate().position(|(at, l)| {
        l.starts_with("Traceback (most recent call last):")
            || (Some(at) == first
                && l.trim_start()
                    .starts_with("Traceback (most recent call last):"))
    })?;
    // A chained traceback ("During handling of the above exception...", "The above exception
    // was the direct cause...") is one error: the last one, which went uncaught.
    let mut block = start;
    let (mut frames, mut end) = python_block(lines, block);
    while let Some(next) = chained_traceback(lines, end + 1) {
        block = next;
        (frames, end) = python_block(lines, block);
    }
    let last = lines.get(end).copied().unwrap_or_default();
    let (kind, message) = match PYTHON_ERROR.captures(last) {
        Some(c) => (c[1].to_owned(), c[2].to_owned()),
        None => ("Exception".to_owned(), last.to_owned()),
    };
    frames.reverse();
    Some(ErrorReport {
        kind,
        message,
        language: Language::Python,
        frames,
        trace: trace_of(&lines[start..(end + 1).min(lines.len())]),
        reproduction: None,
        level: None,
    })
}

/// The frames of the traceback starting at line `start`, outermost first, and the line of its
/// error.
fn python_block(lines: &[&str], start: usize) -> (Vec<Frame>, usize) {
    let mut frames = Vec::new();
    let mut end = start + 1;
    while end < lines.len() {
        let line = lines[end];
        if let Some(c) = PYTHON_FRAME.captures(line) {
            frames.push(Frame {
                file: c[1].to_owned(),
                line: c[2].parse().ok(),
                function: c.get(3).map(|m| m.as_str().trim().to_owned()),
                code: None,
            });
        } else if !line.starts_with(' ') && !line.trim().is_empty() {
            break;
        } else if let Some(frame) = frames.last_mut().filter(|f| f.code.is_none())
            && is_source_line(line)
        {
            // The statement a traceback prints under its frame.
            frame.code = Some(line.trim().to_owned());
        }
        end += 1;
    }
    (frames, end)
}

/// The line of the traceback chained to the one whose error ends just before `from`: blank
/// lines, the sentence that chains them, blank lines, then `Traceback`.
fn chained_traceback(lines: &[&str], from: usize) -> Option<usize> {
    let mut at = from;
    while lines.get(at).is_some_and(|l| l.trim().is_empty()) {
        at += 1;
    }
    let chains = lines.get(at).is_some_and(|l| {
        l.starts_with("During handling of the above exception")
            || l.starts_with("The above exception was the direct cause")
    });
    if !chains {
        return None;
    }
    at += 1;
    while lines.get(at).is_some_and(|l| l.trim().is_empty()) {
        at += 1;
    }
    lines
        .get(at)
        .is_some_and(|l| l.starts_with("Traceback (most recent call last):"))
        .then_some(at)
}

/// A traceback's line under a frame that is the frame's statement, not the markers under it
/// (`~~~^^^`) nor a `File` line.
fn is_source_line(line: &str) -> bool {
    let text = line.trim();
    !text.is_empty()
        && !text.chars().all(|c| matches!(c, '^' | '~' | ' '))
        && !PYTHON_FRAME.is_match(line)
}

fn javascript(lines: &[&str]) -> Option<ErrorReport> {
    // An error line followed by a frame; by index (a search from the top for each candidate
    // would be quadratic in a report of many error lines).
    let start = (0..lines.len()).find(|&i| {
        JS_ERROR.is_match(lines[i].trim_end())
            && lines.get(i + 1).is_some_and(|next| JS_FRAME.is_match(next))
    })?;
    let head = JS_ERROR.captures(lines[start].trim_end())?;
    let mut frames = Vec::new();
    let mut end = start + 1;
    // Every `at ...` line belongs to the trace; those without a file (`at Array.map
    // (<anonymous>)`) give no frame.
    while let Some(line) = lines.get(end).filter(|l| l.trim_start().starts_with("at ")) {
        if let Some(c) = JS_FRAME.captures(line) {
            frames.push(Frame {
                file: c[2].to_owned(),
                line: c[3].parse().ok(),
                function: c.get(1).map(|m| m.as_str().to_owned()),
                code: None,
            });
        }
        end += 1;
    }
    Some(ErrorReport {
        kind: head[1].to_owned(),
        message: head[2].to_owned(),
        language: Language::JavaScript,
        frames,
        trace: trace_of(&lines[start..end]),
        reproduction: None,
        level: None,
    })
}

fn rust(lines: &[&str]) -> Option<ErrorReport> {
    let (start, mut frames, message) = lines.iter().enumerate().find_map(|(at, line)| {
        if let Some(c) = RUST_PANIC_NEW.captures(line) {
            let message = lines.get(at + 1).copied().unwrap_or_default().to_owned();
            let frame = Frame {
                file: c[1].to_owned(),
                line: c[2].parse().ok(),
                function: None,
                code: None,
            };
            return Some((at, vec![frame], message));
        }
        let c = RUST_PANIC_OLD.captures(line)?;
        let frame = Frame {
            file: c[2].to_owned(),
            line: c[3].parse().ok(),
            function: None,
            code: None,
        };
        Some((at, vec![frame], c[1].to_owned()))
    })?;
    // A backtrace, when there is one: `N: function` then `at file:line:col`; the panic
    // machinery's own frames are left out.
    let mut end = start + 1;
    let mut function: Option<String> = None;
    let mut backtrace = Vec::new();
    while end < lines.len() && end < start + 400 {
        let line = lines[end];
        if let Some(c) = RUST_FRAME_AT.captures(line) {
            let file = c[1].to_owned();
            let own = !file.contains("/rustc/") && !file.contains(".cargo/registry");
            if own {
                backtrace.push(Frame {
                    file,
                    line: c[2].parse().ok(),
                    function: function.take(),
                    code: None,
                });
            }
        } else if let Some(c) = RUST_FRAME_FN.captures(line) {
            function = Some(c[1].trim().to_owned());
        } else if line.starts_with("note:") || line.trim().is_empty() && !backtrace.is_empty() {
            break;
        }
        end += 1;
    }
    let same_file = |a: &str, b: &str| a.trim_start_matches("./") == b.trim_start_matches("./");
    // The panic's place is the backtrace's first frame of our own, which names its function.
    if let Some(first) = backtrace.first()
        && frames
            .first()
            .is_some_and(|f| same_file(&f.file, &first.file) && f.line == first.line)
    {
        frames.clear();
    }
    frames.extend(backtrace);
    Some(ErrorReport {
        kind: "panic".to_owned(),
        message,
        language: Language::Rust,
        frames,
        trace: trace_of(&lines[start..end.min(lines.len())]),
        reproduction: None,
        level: None,
    })
}

/// The top-level packages of Go's standard library (`$GOROOT/src/<package>/...`).
const GO_STANDARD_PACKAGES: &[&str] = &[
    "archive",
    "arena",
    "bufio",
    "builtin",
    "bytes",
    "cmd",
    "cmp",
    "compress",
    "container",
    "context",
    "crypto",
    "database",
    "debug",
    "embed",
    "encoding",
    "errors",
    "expvar",
    "flag",
    "fmt",
    "go",
    "hash",
    "html",
    "image",
    "index",
    "internal",
    "io",
    "iter",
    "log",
    "maps",
    "math",
    "mime",
    "net",
    "os",
    "path",
    "plugin",
    "reflect",
    "regexp",
    "runtime",
    "slices",
    "sort",
    "strconv",
    "strings",
    "structs",
    "sync",
    "syscall",
    "testing",
    "text",
    "time",
    "unicode",
    "unique",
    "unsafe",
    "vendor",
    "weak",
];

/// A frame of the Go runtime or standard library: `$GOROOT/src/<standard package>/...`
/// (`/usr/local/go/src/net/http/server.go`). Code under a GOPATH's `src` (the golang image's
/// `/go/src/app/main.go`) is the application's, whatever its root is called.
fn go_standard_library(file: &str) -> bool {
    file.match_indices("/src/").any(|(at, _)| {
        let package = file[at + 5..].split('/').next().unwrap_or_default();
        GO_STANDARD_PACKAGES.contains(&package)
    })
}

fn go(lines: &[&str]) -> Option<ErrorReport> {
    let start = lines.iter().position(|l| l.starts_with("panic: "))?;
    let message = lines[start].trim_start_matches("panic: ").to_owned();
    let mut frames = Vec::new();
    let mut end = start + 1;
    let mut function: Option<String> = None;
    while end < lines.len() && end < start + 400 {
        let line = lines[end];
        if let Some(c) = GO_FRAME_FILE.captures(line) {
            let file = c[1].to_owned();
            if !go_standard_library(&file) {
                frames.push(Frame {
                    file,
                    line: c[2].parse().ok(),
                    function: function.take(),
                    code: None,
                });
            }
        } else if !line.starts_with('\t')
            && !line.trim().is_empty()
            && !line.starts_with("goroutine")
        {
            function = Some(line.split('(').next().unwrap_or(line).trim().to_owned());
        }
        end += 1;
    }
    Some(ErrorReport {
        kind: "panic".to_owned(),
        message,
        language: Language::Go,
        frames,
        trace: trace_of(&lines[start..end.min(lines.len())]),
        reproduction: None,
        level: None,
    })
}

fn java(lines: &[&str]) -> Option<ErrorReport> {
    let start = lines.iter().enumerate().position(|(at, l)| {
        JAVA_HEAD.is_match(l.trim_end())
            && lines
                .get(at + 1)
                .is_some_and(|next| JAVA_FRAME.is_match(next.trim_end()))
    })?;
    let head = JAVA_HEAD.captures(lines[start].trim_end())?;
    let (mut kind, mut message) = (head[1].to_owned(), head[2].to_owned());
    let mut end = start + 1;
    let mut sections = vec![java_frames(lines, &mut end)];
    // `Caused by:` sections, each with its frames: the last is the root cause, which says what
    // failed and where (the outer ones wrap it, often in a framework's code).
    while let Some(cause) = lines
        .get(end)
        .filter(|l| l.trim_start().starts_with("Caused by: "))
        .and_then(|l| JAVA_HEAD.captures(l.trim()))
    {
        (kind, message) = (cause[1].to_owned(), cause[2].to_owned());
        end += 1;
        sections.push(java_frames(lines, &mut end));
    }
    // Innermost first: the root cause's frames, then the ones that wrapped it.
    let frames = sections.into_iter().rev().flatten().collect();
    Some(ErrorReport {
        kind,
        message,
        language: Language::Java,
        frames,
        trace: trace_of(&lines[start..end]),
        reproduction: None,
        level: None,
    })
}

/// The `at` frames from line `end` on (and the `... N more` that stands for the ones it shares
/// with the section it causes), moving `end` past them.
fn java_frames(lines: &[&str], end: &mut usize) -> Vec<Frame> {
    let mut frames = Vec::new();
    while let Some(line) = lines.get(*end).map(|l| l.trim_end()) {
        if let Some(c) = JAVA_FRAME.captures(line) {
            frames.push(Frame {
                file: c[2].to_owned(),
                line: c.get(3).and_then(|m| m.as_str().parse().ok()),
                function: Some(c[1].to_owned()),
                code: None,
            });
        } else if !(line.trim_start().starts_with("... ") && line.ends_with(" more")) {
            break;
        }
        *end += 1;
    }
    frames
}

/// The value at `path` in `entry`: `a.b` is a key `a.b` as loggers write it flat (ECS's
/// `log.level`), or `b` inside `a`, or any mix of the two.
fn lookup<'v>(entry: &'v Value, path: &str) -> Option<&'v Value> {
    if let Some(value) = entry.get(path) {
        return Some(value);
    }
    path.match_indices('.').find_map(|(at, _)| {
        let inner = entry.get(&path[..at])?;
        lookup(inner, &path[at + 1..])
    })
}

/// The field of `entry` at any of `paths`, as text.
fn field(entry: &Value, paths: &[&str]) -> Option<String> {
    paths.iter().find_map(|path| match lookup(entry, path)? {
        Value::String(text) if !text.trim().is_empty() => Some(text.clone()),
        Value::Array(lines) if !lines.is_empty() => Some(
            lines
                .iter()
                .map(|l| l.as_str().map_or_else(|| l.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        _ => None,
    })
}

/// Where loggers put an error's trace: a field an application fills from the exception it
/// caught, never from what it was told. Read only from a record at an error level.
const STACK: &[&str] = &[
    "stack",
    "stack_trace",
    "stacktrace",
    "exc_info",
    // Elastic Common Schema, Datadog, pino's `err`.
    "error.stack_trace",
    "error.stack",
    "err.stack",
    // OpenTelemetry's semantic conventions, on the record or in its attributes.
    "exception.stacktrace",
    "attributes.exception.stacktrace",
    // structlog's `format_exc_info`.
    "exception",
];
const MESSAGE: &[&str] = &[
    "message",
    "msg",
    "error.message",
    "err.message",
    "exception.message",
    "attributes.exception.message",
    "body",
];
const KIND: &[&str] = &[
    "error.type",
    "err.type",
    "error.kind",
    "exception.type",
    "attributes.exception.type",
    "error_type",
    "type",
];
/// Where a record's level may be: a name is an error level by its word; a number by each
/// logger's scale: pino and bunyan's `level` (50 and up), Python's `levelno` (40),
/// OpenTelemetry's `severity_number` (17). Every one a record has must say error: a user's field
/// named like a level field cannot make a record an error that its logger's own field does not.
const LEVEL_FIELDS: &[(&str, u64)] = &[
    ("level", 50),
    ("levelname", 40),
    ("levelno", 40),
    ("log.level", 50),
    ("severity", 50),
    ("severity_text", 17),
    ("severityText", 17),
    ("severity_number", 17),
    ("severityNumber", 17),
];
/// The names a level is read by for the report (its text).
const LEVEL: &[&str] = &[
    "level",
    "levelname",
    "log.level",
    "severity",
    "severity_text",
    "severityText",
];

/// Whether a JSON log entry is at an error level or above: it has a level field, and every
/// level field it has says so.
fn error_level(entry: &Value) -> bool {
    let mut levels = LEVEL_FIELDS
        .iter()
        .filter_map(|(path, least)| Some((lookup(entry, path)?, *least)))
        .peekable();
    levels.peek().is_some() && levels.all(|(value, least)| is_error_level(value, least))
}

fn is_error_level(value: &Value, least: u64) -> bool {
    match value {
        Value::String(name) => matches!(
            name.trim().to_lowercase().as_str(),
            "error"
                | "err"
                | "fatal"
                | "critical"
                | "crit"
                | "alert"
                | "emerg"
                | "emergency"
                | "panic"
        ),
        Value::Number(number) => number.as_u64().is_some_and(|level| level >= least),
        _ => false,
    }
}

/// Whether a JSON log entry reports an error: it is at an error level or above. A stack-like
/// field at a lower level, or a message that looks like a trace, makes no report: what an
/// application logs at INFO may be a user's words.
pub(crate) fn is_error_entry(entry: &Value) -> bool {
    error_level(entry)
}

/// JSON log lines: the first entry at an error level with a stack, else the first at an error
/// level, else the first (its message only). A trace comes only from a stack field of an entry
/// at an error level, never from a message's text.
pub(crate) fn from_json_lines(text: &str) -> Option<ErrorReport> {
    let entries: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(Value::is_object)
        })
        .collect::<Option<Vec<_>>>()?;
    let errors = || entries.iter().filter(|e| error_level(e));
    let (entry, stack) = match errors().find_map(|e| Some((e, field(e, STACK)?))) {
        Some((entry, stack)) => (entry, Some(stack)),
        None => (errors().next().or_else(|| entries.first())?, None),
    };
    let message = field(entry, MESSAGE);
    let reproduction = field(entry, &["reproduction", "repro", "steps_to_reproduce"]);
    let mut report = match &stack {
        Some(stack) => from_stack(&without_messages(stack, entry), reproduction),
        None => message_only(message.as_deref().unwrap_or("error"), reproduction),
    };
    if let Some(kind) = field(entry, KIND) {
        report.kind = cut(&one_line(&kind), 200);
    }
    if let Some(message) = message
        && (report.language == Language::Unknown || report.message.is_empty())
    {
        report.message = cut(message.trim(), MAX_MESSAGE_CHARS);
    }
    report.level = field(entry, LEVEL);
    Some(report)
}

/// `stack` with each message the record carries (`error.message`, `msg`, ...) made one line
/// where it appears: a stack starts with the exception's message, and a message holding a
/// user's newlines would otherwise put their made-up frames before the real ones.
fn without_messages(stack: &str, entry: &Value) -> String {
    let mut stack = stack.to_owned();
    for path in MESSAGE {
        if let Some(message) = field(entry, &[path])
            && message.contains('\n')
            && stack.contains(message.as_str())
        {
            stack = stack.replace(message.as_str(), &one_line(&message));
        }
    }
    stack
}

/// A report from a stack field: the trace must start at its first line, as every runtime
/// writes one (a trace found further down is inside the exception's message, which the
/// application may have taken from a user).
fn from_stack(stack: &str, reproduction: Option<String>) -> ErrorReport {
    let first = stack
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim_end();
    let report = from_text(stack, reproduction.clone());
    let starts_there = report.language == Language::Unknown
        || report
            .trace
            .lines()
            .next()
            .is_some_and(|line| line.trim_end() == cut(first, 500).trim_end());
    if starts_there {
        report
    } else {
        message_only(stack, reproduction)
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A report of a message alone: whatever its text holds, no trace is read from it.
fn message_only(message: &str, reproduction: Option<String>) -> ErrorReport {
    let lines: Vec<&str> = message.lines().collect();
    let first = lines
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    ErrorReport {
        kind: "error".to_owned(),
        message: cut(first, MAX_MESSAGE_CHARS),
        language: Language::Unknown,
        frames: Vec::new(),
        trace: trace_of(&lines[..lines.len().min(40)]),
        reproduction,
        level: None,
    }
}
