//! Comment bodies bugloop publishes: one per finding (human text, hidden marker, `rmcoc` block),
//! the overflow list, and the run summary. Meta comments (summary, overflow) carry a tag instead
//! of a finding marker, so they are never taken for findings.

use std::collections::BTreeMap;

use bugloop_domain::finding::Finding;
use bugloop_domain::marker::MarkerSyntax;
use bugloop_domain::rmcoc::{RmcocBlock, build_comment};
use bugloop_domain::thread::{BotIdentity, Comment, RESOLVED_PHRASE};

use crate::review::report::{ReviewReport, UsageInfo};

pub const SUMMARY_TAG: &str = "<!-- bugloop:summary -->";
pub const OVERFLOW_TAG: &str = "<!-- bugloop:overflow -->";

pub use bugloop_domain::rmcoc::fence_for;

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The comment of one finding.
pub fn finding_body(finding: &Finding, markers: &MarkerSyntax, resolved: bool) -> String {
    let severity = format!("{:?}", finding.severity()).to_lowercase();
    let mut human = format!(
        "### {}\n\n**{} · score {}/10 · {}** · `{}`\n\n{}\n",
        finding.title.trim(),
        capitalized(&severity),
        finding.score,
        finding.category,
        finding.location(),
        finding.description.trim()
    );
    if let Some(evidence) = &finding.evidence {
        let fence = fence_for(evidence);
        human.push_str(&format!(
            "\n{fence}text\n{}\n{fence}\n",
            evidence.trim_end()
        ));
    }
    if let Some(suggestion) = &finding.suggestion {
        human.push_str(&format!(
            "\n**Suggestion** (an illustration, not a committable change):\n\n{}\n",
            suggestion.trim()
        ));
    }
    human.push_str(&format!("\n{}\n", markers.build(&finding.id, resolved)));
    let mut block = RmcocBlock::new(
        finding.title.trim(),
        finding.description.trim(),
        finding.score,
    );
    let mut extra = BTreeMap::new();
    extra.insert("id".to_owned(), serde_json::json!(finding.id.as_str()));
    extra.insert("category".to_owned(), serde_json::json!(finding.category));
    if let Some(file) = &finding.file {
        extra.insert("file".to_owned(), serde_json::json!(file));
    }
    if let Some(line) = finding.line {
        extra.insert("line".to_owned(), serde_json::json!(line));
    }
    // Read back to recognise the same problem in a later run, whatever its words (dedup).
    if let Some(end_line) = finding.end_line {
        extra.insert("end_line".to_owned(), serde_json::json!(end_line));
    }
    if let Some(evidence) = &finding.evidence {
        extra.insert("evidence".to_owned(), serde_json::json!(evidence));
    }
    block.extra = extra;
    build_comment(&human, &block)
}

/// The reply that resolves a thread.
pub fn resolved_reply(reason: &str) -> String {
    format!("{RESOLVED_PHRASE}\n\n{}", reason.trim())
}

pub fn overflow_body(count: usize, titles: &[String], limit: usize) -> String {
    let mut out = format!(
        "{OVERFLOW_TAG}\n### {count} more finding(s) over the comment limit\n\nThis review \
         publishes at most {limit} finding comments; these were found as well:\n\n"
    );
    for title in titles {
        out.push_str(&format!("- {title}\n"));
    }
    out
}

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

/// The run summary comment.
pub fn summary_body(report: &ReviewReport) -> String {
    let mut out = format!(
        "{SUMMARY_TAG}\n### bugloop review\n\n{} · model `{}`\n\n",
        report.change.description, report.model
    );
    let open = report
        .tracked
        .iter()
        .filter(|t| t.status != "RESOLVED")
        .count();
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

/// The bot's meta comment carrying `tag`, if any.
pub fn find_tagged<'a>(
    comments: &'a [Comment],
    bot: &BotIdentity,
    tag: &str,
) -> Option<&'a Comment> {
    comments
        .iter()
        .find(|c| bot.is_bot(&c.author) && c.in_reply_to.is_none() && c.body.starts_with(tag))
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::{Category, FindingId};
    use bugloop_domain::marker::MarkerSyntax;
    use bugloop_domain::rmcoc::parse_comment;
    use bugloop_domain::score::Score;

    use super::*;

    #[test]
    fn a_finding_comment_round_trips_through_markers_and_rmcoc() {
        let markers = MarkerSyntax::new("bugloop", &[]).unwrap();
        let finding = Finding {
            id: FindingId::new("div-zero"),
            title: "Division by zero".into(),
            description: "Empty input divides by zero.".into(),
            file: Some("src/a.rs".into()),
            line: Some(3),
            end_line: None,
            score: Score::saturating(7),
            category: Category::Logic,
            evidence: Some("let avg = sum / ```n```;".into()),
            suggestion: Some("Return `None` when empty.".into()),
        };
        let body = finding_body(&finding, &markers, false);
        insta::assert_snapshot!(body);
        let parsed = parse_comment(&body);
        assert!(parsed.problems.is_empty());
        assert_eq!(parsed.blocks[0].score, Score::saturating(7));
        assert_eq!(parsed.blocks[0].extra["file"], "src/a.rs");
        let found = markers.parse_all(&body);
        assert_eq!(found.len(), 1);
        assert!(!found[0].resolved);
    }
}
