//! The summary comment a review publishes in the change's conversation: what was found, resolved
//! and dropped, the filter's counts, what was not reviewed, and what it cost.

use bugloop_domain::markdown::neutralise;

use crate::review::{ReviewReport, UsageInfo};

/// Starts the summary comment, so a later run updates it instead of adding one.
pub const SUMMARY_TAG: &str = "<!-- bugloop:summary -->";

fn usage_line(usage: &UsageInfo) -> String {
    let cost = bugloop_llm::overrun::cost_text(usage.cost_usd);
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

/// Starts the summary comment's second line, the record of what the review covered.
const REVIEWED_PREFIX: &str = "<!-- bugloop:reviewed ";

/// What an earlier review of the change covered, as its summary comment records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewedHead {
    /// The commit reviewed.
    pub head: String,
    /// Every part of the change was reviewed without error.
    pub complete: bool,
}

/// The run summary comment: its tag first (so the next run finds and updates it), then the
/// record of the head it reviewed (so the next review can show only what changed since), then
/// the text, neutralised (it quotes the model's summaries and the findings' titles).
pub fn comment_body(report: &ReviewReport) -> String {
    format!(
        "{SUMMARY_TAG}\n{REVIEWED_PREFIX}head={} complete={} -->\n{}",
        report.change.head,
        report.complete,
        neutralise(&summary_text(report))
    )
}

/// Reads the record of the reviewed head from a summary comment's second line. The caller
/// passes only bugloop's own summary comment; a head that is not a commit id (a review of
/// staged or uncommitted changes) records nothing usable.
pub fn read_reviewed(body: &str) -> Option<ReviewedHead> {
    let mut lines = body.lines();
    if lines.next()? != SUMMARY_TAG {
        return None;
    }
    let record = lines
        .next()?
        .strip_prefix(REVIEWED_PREFIX)?
        .strip_suffix(" -->")?;
    let (head, complete) = record.split_once(' ')?;
    let head = head.strip_prefix("head=")?;
    let complete = match complete {
        "complete=true" => true,
        "complete=false" => false,
        _ => return None,
    };
    let is_commit = matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit());
    is_commit.then(|| ReviewedHead {
        head: head.to_owned(),
        complete,
    })
}

/// The summary comment's text, before it is neutralised. Each section is written by a function
/// of its own, in the order a reader of the conversation wants them: the counts, how the review
/// went (proofs, passes, the filter), what became of earlier findings, what was left out, and
/// last what it cost.
fn summary_text(report: &ReviewReport) -> String {
    let mut out = summary_header(report);
    proofs(&mut out, report);
    passes(&mut out, report);
    out.push_str(&analyzers(report));
    filter(&mut out, report);
    earlier_findings(&mut out, report);
    not_reviewed(&mut out, report);
    out.push_str(&format!("\n{}\n", usage_line(&report.usage)));
    out
}

/// What was reviewed, and the counts: new or updated, resolved, and open in total.
fn summary_header(report: &ReviewReport) -> String {
    let mut out = format!(
        "### bugloop review\n\n{} · model `{}`\n\nReviewed {}.\n\n",
        report.change.description,
        report.model,
        report.scope.describe()
    );
    let open = report.open_count();
    out.push_str(&format!(
        "**{} new or updated finding(s), {} resolved, {open} open in total.**\n\n",
        report.findings.len(),
        report.resolved.len()
    ));
    out
}

/// The proofs: what each test run at head came to, the model's words kept to one line.
fn proofs(out: &mut String, report: &ReviewReport) {
    list(out, ("#### Proofs\n\n", "\n"), &report.proofs, |proof| {
        let outcome = if proof.outcome == "published" {
            String::new()
        } else {
            format!(" ({})", bugloop_domain::markdown::quiet(&proof.outcome))
        };
        format!(
            "- `{}` **{}**{outcome}: {}",
            proof.id,
            proof.status.as_str(),
            bugloop_domain::markdown::quiet(&proof.reason)
        )
    });
}

/// One line per item between `start` and `end`; nothing at all when there is no item, so an
/// empty section leaves no heading behind.
fn list<T>(
    out: &mut String,
    (start, end): (&str, &str),
    items: impl IntoIterator<Item = T>,
    line: impl Fn(T) -> String,
) {
    let mut items = items.into_iter().peekable();
    if items.peek().is_none() {
        return;
    }
    out.push_str(start);
    for item in items {
        out.push_str(&line(item));
        out.push('\n');
    }
    out.push_str(end);
}

/// The static analyzers as markdown: what each did on the change or why it did not run (a
/// tool's words kept to one line, mentioning nobody), and how their hits were weighed. Empty
/// when none applied.
pub(crate) fn analyzers(report: &ReviewReport) -> String {
    use bugloop_domain::markdown::quiet;
    let analysis = &report.analysis;
    if analysis.runs.is_empty() {
        return String::new();
    }
    let mut out = String::from("#### Analyzers\n\n");
    for run in &analysis.runs {
        let name = quiet(&run.name).replace('`', "'");
        if run.ran {
            out.push_str(&format!(
                "- `{name}`: {} file(s), {} hit(s), {} on the change's lines ({:.1} s)\n",
                run.files, run.hits, run.candidates, run.seconds
            ));
            if let Some(importers) = &run.importers {
                out.push_str(&format!("  - {}\n", quiet(importers)));
            }
        } else {
            out.push_str(&format!(
                "- `{name}`: **not run**: {}\n",
                quiet(run.reason.as_deref().unwrap_or("not run"))
            ));
        }
    }
    if analysis.weighed == "triage" {
        out.push_str(&format!(
            "\nThe model confirmed {} and dismissed {} of {} hit(s) on the change.\n",
            analysis.confirmed, analysis.dismissed, analysis.candidates
        ));
    } else if analysis.candidates > 0 {
        out.push_str(&format!(
            "\n{} hit(s) on the change, published as the tools say.\n",
            analysis.candidates
        ));
    }
    if let Some(error) = &analysis.triage_error {
        out.push_str(&format!("\n{}\n", quiet(error)));
    }
    out.push('\n');
    out
}

/// The model's summary of each pass over each part (pass 0 is its answer to a reply).
fn passes(out: &mut String, report: &ReviewReport) {
    list(out, ("#### Passes\n\n", "\n"), &report.passes, |pass| {
        let label = if pass.pass == 0 {
            "answer".to_owned()
        } else {
            format!("pass {}", pass.pass)
        };
        format!(
            "- part {} {label}: {}",
            pass.call,
            pass.summary.trim().replace('\n', " ")
        )
    });
}

/// What the filter did: each stage's counts in and out, the findings it dropped (folded away),
/// and the findings it changed before publishing.
fn filter(out: &mut String, report: &ReviewReport) {
    out.push_str("#### Filter\n\n| stage | in | out |\n|---|---|---|\n");
    for stage in &report.stages {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            stage.stage, stage.input, stage.output
        ));
    }
    // Titles, places and reasons come from the model, the tools and the file names of the
    // change: one line each, mentioning nobody, names in code spans.
    let code = |text: &str| bugloop_domain::markdown::quiet(text).replace('`', "'");
    let not_published = (
        "\n<details><summary>Not published</summary>\n\n",
        "\n</details>\n",
    );
    list(out, not_published, &report.dropped, |dropped| {
        format!(
            "- `{}` {} (`{}`): `{}` — {}",
            dropped.stage,
            bugloop_domain::markdown::quiet(&dropped.title),
            code(&dropped.location),
            code(&dropped.id),
            bugloop_domain::markdown::quiet(&dropped.reason)
        )
    });
    let changed = ("\n#### Changed before publishing\n\n", "");
    list(out, changed, &report.changes, |change| {
        format!("- `{}` {}: {}", change.stage, change.id, change.note)
    });
}

/// What became of findings of earlier reviews: resolved, and kept open though their code changed.
fn earlier_findings(out: &mut String, report: &ReviewReport) {
    list(out, ("\n#### Resolved\n\n", ""), &report.resolved, |r| {
        format!("- `{}` {}: {}", r.id, r.title, r.reason)
    });
    let kept = ("\n#### Code changed, kept open\n\n", "");
    list(out, kept, report.kept_open(), |r| {
        format!("- `{}` {}: {}", r.id, r.title, r.reason)
    });
}

/// The files not reviewed and the parts that failed, so a reader sees how complete it was.
fn not_reviewed(out: &mut String, report: &ReviewReport) {
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        out.push_str("\n#### Not reviewed\n\n");
        for (reason, paths) in crate::review::unreviewed_by_reason(&report.unreviewed) {
            let names = crate::review::all_names(&paths, str::to_owned);
            out.push_str(&format!("- {names}: {reason}\n"));
        }
        for error in report.errors_beside_unreviewed() {
            out.push_str(&format!("- error: {error}\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn the_reviewed_head_is_read_back_from_the_second_line_only() {
        let body = format!("{SUMMARY_TAG}\n{REVIEWED_PREFIX}head={HEAD} complete=true -->\ntext");
        assert_eq!(
            read_reviewed(&body),
            Some(ReviewedHead {
                head: HEAD.to_owned(),
                complete: true
            })
        );
        let incomplete = body.replace("complete=true", "complete=false");
        assert_eq!(read_reviewed(&incomplete).map(|r| r.complete), Some(false));
        // Elsewhere in the body (quoted text), or without the tag first, it means nothing.
        let later = format!("{SUMMARY_TAG}\ntext\n{REVIEWED_PREFIX}head={HEAD} complete=true -->");
        assert_eq!(read_reviewed(&later), None);
        assert_eq!(read_reviewed(&body.replacen(SUMMARY_TAG, "", 1)), None);
        // Staged or uncommitted reviews record no commit.
        assert_eq!(read_reviewed(&body.replace(HEAD, "index")), None);
        assert_eq!(
            read_reviewed(&body.replace("complete=true", "complete=yes")),
            None
        );
    }
}
