//! The issue an error report is filed as: a title naming the error and where it happened, and a
//! body with the error, its severity, the trace, the places in this repository it went through
//! (with their lines), and how to reproduce it when the report says.

use bugloop_domain::rmcoc::fence_for;
use serde::Serialize;

use crate::{ErrorReport, Located, Repository};

/// How bad the error is, read from the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Severity {
    Low,
    Medium,
    /// A crash: an uncaught exception, a panic, a fatal log entry.
    High,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An issue's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssueText {
    pub title: String,
    pub body: String,
    pub severity: Severity,
}

const MAX_TITLE_CHARS: usize = 100;
/// Places in the repository shown with their lines.
const SHOWN_PLACES: usize = 5;

fn severity(report: &ErrorReport) -> Severity {
    match report.level.as_deref().map(str::to_lowercase).as_deref() {
        Some("warning" | "warn" | "notice" | "info") => Severity::Low,
        Some("fatal" | "critical" | "crit" | "alert" | "emerg" | "panic") => Severity::High,
        // An error logged with its trace is the crash a bare trace is.
        Some("error" | "err") if !report.frames.is_empty() => Severity::High,
        Some(_) => Severity::Medium,
        // A trace with no level is what an uncaught error prints: the program went down.
        None if !report.frames.is_empty() || report.kind == "panic" => Severity::High,
        None => Severity::Medium,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cut(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(chars.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// The lines around `line` of `text`, numbered.
fn excerpt(text: &str, line: u32) -> Option<String> {
    let line = usize::try_from(line).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    if line == 0 || line > lines.len() {
        return None;
    }
    let from = line.saturating_sub(3).max(1);
    let to = (line + 2).min(lines.len());
    let width = to.to_string().len();
    Some(
        (from..=to)
            .map(|n| {
                let mark = if n == line { ">" } else { " " };
                format!("{mark}{n:>width$} | {}", cut(lines[n - 1], 200))
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

pub use bugloop_domain::learning::fingerprint_marker;

/// The issue for `report`, whose frames in the repository are `located`, with `fingerprint`
/// recorded in a hidden line.
pub fn issue(
    report: &ErrorReport,
    located: &[Located],
    fingerprint: &str,
    repository: &dyn Repository,
) -> IssueText {
    let severity = severity(report);
    let traced = report.language != crate::Language::Unknown;
    let headline = headline(report, traced);
    let title = title(&headline, located);
    let mut body = String::from("bugloop filed this issue from an error report.\n\n");
    body.push_str(&format!(
        "**Error:** {span}\n\n**Severity:** {severity}\n\n",
        span = error_span(&headline),
        severity = severity.as_str(),
    ));
    body.push_str(if traced {
        "## Stack trace\n\n"
    } else {
        "## Report\n\n"
    });
    let trace_fence = fence_for(&report.trace);
    body.push_str(&format!(
        "{trace_fence}text\n{}\n{trace_fence}\n\n",
        report.trace
    ));
    push_places(&mut body, report, located, repository);
    body.push_str("\n## Reproduction\n\n");
    match &report.reproduction {
        Some(steps) => {
            let steps_fence = fence_for(steps);
            body.push_str(&format!("{steps_fence}text\n{steps}\n{steps_fence}\n"));
        }
        None => body.push_str("Not known: the report gave none.\n"),
    }
    // The pattern's lines end the body (`bugloop_domain::learning::Pattern::at_end`).
    body.push('\n');
    if let Some(class) = bugloop_domain::learning::error_class(&report.kind) {
        body.push_str(&bugloop_domain::learning::class_marker(&class));
        body.push('\n');
    }
    body.push_str(&format!("{}\n", fingerprint_marker(fingerprint)));
    IssueText {
        title,
        body,
        severity,
    }
}

/// The error in one line: a report without a trace (not `traced`) is its message; a trace's
/// error is its type and message.
fn headline(report: &ErrorReport, traced: bool) -> String {
    let message = one_line(report.message.lines().next().unwrap_or_default());
    if message.is_empty() {
        report.kind.clone()
    } else if traced {
        format!("{}: {message}", report.kind)
    } else {
        message
    }
}

/// The title: the headline, cut to leave room for the innermost place in the repository when
/// there is one.
fn title(headline: &str, located: &[Located]) -> String {
    match located.first() {
        Some(place) => {
            let place = format!(" in {}", place.path);
            format!(
                "{}{place}",
                cut(
                    headline,
                    MAX_TITLE_CHARS
                        .saturating_sub(place.chars().count())
                        .max(20)
                )
            )
        }
        None => cut(headline, MAX_TITLE_CHARS),
    }
}

/// The error as a code span opened by a run of backticks longer than any inside (so none
/// closes it), with spaces so they do not touch it; one line, since a span cannot hold a blank
/// one.
fn error_span(headline: &str) -> String {
    let error = cut(headline, 500);
    let error = error.split_whitespace().collect::<Vec<_>>().join(" ");
    let longest = error.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    if longest == 0 {
        format!("`{error}`")
    } else {
        let ticks = "`".repeat(longest + 1);
        format!("{ticks} {error} {ticks}")
    }
}

/// The "Where in this repository" section: each place the trace went through, innermost first,
/// the first [`SHOWN_PLACES`] with the lines around them.
fn push_places(
    body: &mut String,
    report: &ErrorReport,
    located: &[Located],
    repository: &dyn Repository,
) {
    body.push_str("## Where in this repository\n\n");
    if report.frames.is_empty() {
        body.push_str("The report names no place in the code.\n");
    } else if located.is_empty() {
        body.push_str(
            "None of the trace's frames is a file of this repository (they are in libraries, \
             the runtime, or a build's paths).\n",
        );
    }
    for (n, place) in located.iter().enumerate() {
        let line = place.line.map(|l| format!(":{l}")).unwrap_or_default();
        let function = place
            .function
            .as_deref()
            .map(|f| format!(" in `{}`", cut(f, 120).replace('`', "'")))
            .unwrap_or_default();
        let innermost = if n == 0 { " (innermost)" } else { "" };
        body.push_str(&format!("- `{}{line}`{function}{innermost}\n", place.path));
        if n < SHOWN_PLACES
            && let (Some(line), Some(text)) = (place.line, repository.read(&place.path))
            && let Some(lines) = excerpt(&text, line)
        {
            let code_fence = fence_for(&lines);
            body.push_str(&format!("\n  {code_fence}\n"));
            for excerpt_line in lines.lines() {
                body.push_str(&format!("  {excerpt_line}\n"));
            }
            body.push_str(&format!("  {code_fence}\n"));
        }
    }
}
