//! The solve pipeline's error intake: an error as it reaches bugloop (a stack trace or log
//! excerpt, or JSON log lines) read into an [`ErrorReport`], given a fingerprint (its type, its
//! top frames in this repository without line numbers, which move with every edit, and the
//! statement it failed at) so a repeat is counted on the issue already filed, and written up as that issue ([`issue`]).
//!
//! Pure: the repository is seen through [`Repository`] (its tracked files and their text), so
//! the front ends and the tests decide where that comes from.
//!
//! **Never:** do IO (the repository is seen through the `Repository` trait).

mod issue;
pub mod segment;
pub mod sentry;
mod trace;

use serde::Serialize;
use sha2::{Digest, Sha256};

pub use self::issue::{IssueText, Severity, fingerprint_marker, issue};

/// The most of a report that is read (a log can be huge; the trace is near its start).
pub const MAX_REPORT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IntakeError {
    #[error("the error report is empty")]
    Empty,
    #[error("the error report is not text: a NUL byte at offset {0} (a binary file?)")]
    Binary(usize),
}

/// The language a trace was written by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    Python,
    #[serde(rename = "javascript")]
    JavaScript,
    Rust,
    Go,
    Java,
    /// No trace recognised: the report is a message.
    Unknown,
}

/// One frame of a trace, as the trace gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Frame {
    pub file: String,
    pub line: Option<u32>,
    pub function: Option<String>,
    /// The statement, when the trace prints it (Python's tracebacks do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// An error as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorReport {
    /// The exception's type (`IndexError`, `TypeError`, `java.lang.NullPointerException`), or
    /// `panic`, or `error` when the report names none.
    pub kind: String,
    pub message: String,
    pub language: Language,
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// The trace as reported (or the report's first lines when none was recognised).
    pub trace: String,
    /// How to reproduce it, when the report says (a JSON log's `reproduction` field).
    pub reproduction: Option<String>,
    /// The log level, when the report gives one.
    pub level: Option<String>,
}

/// A frame found in the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located {
    /// The tracked file's path in the repository.
    pub path: String,
    pub line: Option<u32>,
    pub function: Option<String>,
    /// The statement, when the trace prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// What the intake may know of the repository.
pub trait Repository {
    /// Every tracked file, relative to the root, `/`-separated.
    fn files(&self) -> &[String];
    /// A tracked file's text, if it is text.
    fn read(&self, path: &str) -> Option<String>;
}

/// Reads a report: JSON log lines (the first entry at error level or with a stack), or text
/// holding a trace of one of the [`Language`]s, or else a message.
pub fn read(bytes: &[u8]) -> Result<ErrorReport, IntakeError> {
    let bytes = &bytes[..bytes.len().min(MAX_REPORT_BYTES)];
    if let Some(at) = bytes.iter().position(|b| *b == 0) {
        return Err(IntakeError::Binary(at));
    }
    // A crash log in another encoding (a Latin-1 `é` in a message) is still a report: what is
    // not UTF-8 reads as U+FFFD, as `watch` reads its logs. A cut in the middle of a character
    // at the size limit is not the report's fault: dropped.
    let bytes = match std::str::from_utf8(bytes) {
        Err(error) if error.error_len().is_none() => &bytes[..error.valid_up_to()],
        _ => bytes,
    };
    let text = String::from_utf8_lossy(bytes);
    let text = text.as_ref();
    if text.trim().is_empty() {
        return Err(IntakeError::Empty);
    }
    let mut report = trace::from_json_lines(text).unwrap_or_else(|| trace::from_text(text, None));
    // The innermost frames say where it failed; a trace of thousands (a deep recursion, or a
    // report made to be costly) is cut, since each frame is looked for among the files.
    report.frames.truncate(MAX_FRAMES);
    Ok(report)
}

/// The most frames of a report kept (innermost first).
pub const MAX_FRAMES: usize = 200;

/// The frames of `report` that are in the repository, innermost first.
pub fn locate(report: &ErrorReport, repository: &dyn Repository) -> Vec<Located> {
    report
        .frames
        .iter()
        .filter_map(|frame| {
            let path = resolve(&frame.file, frame.function.as_deref(), repository.files())?;
            Some(Located {
                path,
                line: frame.line,
                function: frame.function.clone(),
                code: frame.code.clone(),
            })
        })
        .collect()
}

/// The tracked file a trace's file names: the longest tracked path its path ends with (on a
/// component boundary; absolute paths, `./`, `file://` and `webpack:///` prefixes fall away);
/// for a bare file name (Java), the one tracked file of that name under the function's package.
fn resolve(file: &str, function: Option<&str>, files: &[String]) -> Option<String> {
    let cleaned = file
        .trim()
        .trim_start_matches("file://")
        .trim_start_matches("webpack:///")
        .replace('\\', "/");
    let cleaned = cleaned.trim_start_matches("./");
    if cleaned.is_empty() || cleaned.starts_with('<') || cleaned.contains("node:") {
        return None;
    }
    let mut best: Option<&String> = None;
    for tracked in files {
        let matches = cleaned == tracked
            || cleaned
                .strip_suffix(tracked.as_str())
                .is_some_and(|rest| rest.ends_with('/'));
        if matches && best.is_none_or(|b| tracked.len() > b.len()) {
            best = Some(tracked);
        }
    }
    if let Some(best) = best {
        return Some(best.clone());
    }
    // Java names a file without its directory; the package says which.
    if !cleaned.contains('/') {
        let package: Option<String> = function.and_then(|f| {
            let parts: Vec<&str> = f.split('.').collect();
            (parts.len() > 2).then(|| parts[..parts.len() - 2].join("/"))
        });
        let candidates: Vec<&String> = files
            .iter()
            .filter(|t| t.rsplit('/').next() == Some(cleaned))
            .filter(|t| {
                package
                    .as_deref()
                    .is_none_or(|p| t.ends_with(&format!("{p}/{cleaned}")))
            })
            .collect();
        if let [only] = candidates.as_slice() {
            return Some((*only).clone());
        }
    }
    None
}

/// How many frames in the repository make the fingerprint.
const FINGERPRINT_FRAMES: usize = 3;

/// The report's fingerprint: its type, its top frames in the repository (path and function, no
/// line numbers, which move with every edit; a Rust panic's place alone, backtrace or not) and
/// the statement of the innermost one (so another
/// error in the same function is another issue); with none in the repository, its type, its
/// message with the numbers, ids and quoted values taken out, and its top frames as given.
/// Sixteen hex digits.
pub fn fingerprint(
    report: &ErrorReport,
    located: &[Located],
    repository: &dyn Repository,
) -> String {
    let mut text = format!("{}\n", report.kind);
    if located.is_empty() {
        text.push_str(&normalized_message(&report.message));
        text.push('\n');
        for frame in report.frames.iter().take(FINGERPRINT_FRAMES) {
            let name = frame.file.rsplit(['/', '\\']).next().unwrap_or_default();
            text.push_str(&format!(
                "{name}:{}\n",
                frame.function.as_deref().unwrap_or("")
            ));
        }
    } else {
        // A Rust panic names its place on its own line; a backtrace (RUST_BACKTRACE) adds the
        // function and the callers, which the same panic without one lacks: by its place alone.
        let (frames, functions) = match report.language {
            Language::Rust => (1, false),
            _ => (FINGERPRINT_FRAMES, true),
        };
        for frame in located.iter().take(frames) {
            let function = frame.function.as_deref().filter(|_| functions);
            text.push_str(&format!("{}:{}\n", frame.path, function.unwrap_or("")));
        }
        if let Some(statement) = located.first().and_then(|f| statement(f, repository)) {
            text.push_str(&format!("at: {statement}\n"));
        }
    }
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// The statement a frame failed at, its spacing normalised: as the trace prints it (so a report
/// of code whose lines moved keeps it), else the line of the repository's file the frame names.
/// A report from a deploy whose lines differ from the commit read may then be filed as another
/// issue: a duplicate, the safe side of a wrong "same error".
fn statement(frame: &Located, repository: &dyn Repository) -> Option<String> {
    let code = match &frame.code {
        Some(code) => code.clone(),
        None => {
            let line = usize::try_from(frame.line?).ok()?.checked_sub(1)?;
            repository.read(&frame.path)?.lines().nth(line)?.to_owned()
        }
    };
    let normalised: String = code.split_whitespace().collect::<Vec<_>>().join(" ");
    (!normalised.is_empty()).then(|| normalised.chars().take(300).collect())
}

/// The fingerprint of an error reported after issue `solved`'s solution merged that is not that
/// issue's error coming back (its reproduction test still passes): its own issue, found again by
/// this, so repeats count there.
pub fn fingerprint_after(fingerprint: &str, solved: u64) -> String {
    let text = format!("{fingerprint}\nafter #{solved}\n");
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// A message with what changes between occurrences taken out: quoted values, hex and decimal
/// numbers.
fn normalized_message(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default();
    let quoted = regex::Regex::new(r#"'[^']*'|"[^"]*"|`[^`]*`"#).ok();
    let numbers = regex::Regex::new(r"0x[0-9a-fA-F]+|[0-9a-fA-F]{8,}|\d+").ok();
    let mut text = first.to_owned();
    if let Some(quoted) = quoted {
        text = quoted.replace_all(&text, "Q").into_owned();
    }
    if let Some(numbers) = numbers {
        text = numbers.replace_all(&text, "N").into_owned();
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
