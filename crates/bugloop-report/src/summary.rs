//! The summary comment a review publishes in the change's conversation: what was found, resolved
//! and dropped, the filter's counts, what was not reviewed, and what it cost.

use bugloop_domain::markdown::neutralise;

use crate::review::{ReviewReport, UsageInfo};

/// Starts the summary comment, so a later run updates it instead of adding one.
pub const SUMMARY_TAG: &str = "<!-- bugloop:summary -->";

fn usage_line(usage: &UsageInfo) -> String {
    let cost = usage
        .cost_usd
        .map_or("cost unknown".to_owned(), |c| format!("${c:.4}"));
    format!(
        "{} input tokens ({} cached), {} output tokens, {cost}, {} model calls in {} session(s), {:.1}s",
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.output_tokens,
        usage.model_calls,
        usage.sessions,
        usage.seconds
    )
}

/// The run summary comment: its tag first (so the next run finds and updates it), then the text,
/// neutralised (it quotes the model's summaries and the findings' titles).
pub fn comment_body(report: &ReviewReport) -> String {
    format!("{SUMMARY_TAG}\n{}", neutralise(&summary_text(report)))
}

fn summary_text(report: &ReviewReport) -> String {
    let mut out = format!(
        "### bugloop review\n\n{} · model `{}`\n\n",
        report.change.description, report.model
    );
    let open = report.open_count();
    out.push_str(&format!(
        "**{} new or updated finding(s), {} resolved, {open} open in total.**\n\n",
        report.findings.len(),
        report.resolved.len()
    ));
    if !report.passes.is_empty() {
        out.push_str("#### Passes\n\n");
        for pass in &report.passes {
            let label = if pass.pass == 0 {
                "answer".to_owned()
            } else {
                format!("pass {}", pass.pass)
            };
            out.push_str(&format!(
                "- part {} {label}: {}\n",
                pass.call,
                pass.summary.trim().replace('\n', " ")
            ));
        }
        out.push('\n');
    }
    out.push_str("#### Filter\n\n| stage | in | out |\n|---|---|---|\n");
    for stage in &report.stages {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            stage.stage, stage.input, stage.output
        ));
    }
    if !report.dropped.is_empty() {
        out.push_str("\n<details><summary>Not published</summary>\n\n");
        for dropped in &report.dropped {
            out.push_str(&format!(
                "- `{}` {} ({}): {} — {}\n",
                dropped.stage, dropped.title, dropped.location, dropped.id, dropped.reason
            ));
        }
        out.push_str("\n</details>\n");
    }
    if !report.changes.is_empty() {
        out.push_str("\n#### Changed before publishing\n\n");
        for change in &report.changes {
            out.push_str(&format!(
                "- `{}` {}: {}\n",
                change.stage, change.id, change.note
            ));
        }
    }
    if !report.resolved.is_empty() {
        out.push_str("\n#### Resolved\n\n");
        for resolved in &report.resolved {
            out.push_str(&format!(
                "- `{}` {}: {}\n",
                resolved.id, resolved.title, resolved.reason
            ));
        }
    }
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        out.push_str("\n#### Not reviewed\n\n");
        for part in &report.unreviewed {
            out.push_str(&format!("- {}: {}\n", part.path, part.reason));
        }
        for error in &report.errors {
            out.push_str(&format!("- error: {error}\n"));
        }
    }
    out.push_str(&format!("\n{}\n", usage_line(&report.usage)));
    out
}
