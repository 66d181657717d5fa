//! The Markdown renderer of the review report (also the GitHub Action's job summary).

use std::fmt::Write as _;

use bugloop_domain::markdown::quiet;
use bugloop_domain::rmcoc::fence_for;

use crate::review::{PublishedFinding, ReviewReport};
use crate::text::size_and_cost;

/// The review report as Markdown, for a pull request description or a CI summary. It is also the
/// GitHub Action's job summary (`$GITHUB_STEP_SUMMARY`): the same content, no separate renderer.
/// Each section is written by a function of its own, in the order of the terminal report: what
/// was reviewed, what was found, what became of earlier findings, then what was left out.
pub fn review(report: &ReviewReport) -> String {
    let mut out = String::new();
    review_header(&mut out, report);
    findings(&mut out, report);
    proofs(&mut out, report);
    let analyzers = crate::summary::analyzers(report);
    if !analyzers.is_empty() {
        out.push_str(&format!(
            "\n{}",
            analyzers.replace("#### Analyzers", "### Analyzers")
        ));
    }
    earlier_findings(&mut out, report);
    publishing_notes(&mut out, report);
    left_out(&mut out, report);
    out
}

/// What was reviewed: the change, its size, the model and what it cost, and the scope when it
/// was not the whole change.
fn review_header(out: &mut String, report: &ReviewReport) {
    let _ = writeln!(
        out,
        "## bugloop review\n\n{} · {}\n",
        report.change.description,
        size_and_cost(report, &format!("`{}`", report.model))
    );
    if report.scope_worth_saying() {
        let _ = writeln!(out, "Reviewed {}.\n", report.scope.describe());
    }
}

/// The findings: a table to scan, then a section for each, or a line saying there are none.
fn findings(out: &mut String, report: &ReviewReport) {
    if report.findings.is_empty() {
        out.push_str("No new findings.\n");
        return;
    }
    out.push_str("| score | severity | location | finding | id |\n|---|---|---|---|---|\n");
    for f in &report.findings {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            f.finding.score,
            f.severity,
            cell(&code(&f.finding.location())),
            cell(&text(&f.finding.title)),
            cell(&code(f.finding.id.as_str()))
        );
    }
    for f in &report.findings {
        finding_section(out, f);
    }
}

/// One finding's section: its title, place, score and category, the description, then the code
/// line fenced so nothing in it can end the block, and the suggestion.
fn finding_section(out: &mut String, f: &PublishedFinding) {
    let _ = writeln!(
        out,
        "\n### {}\n\n{} · score {}/10 · {}\n\n{}",
        text(&f.finding.title),
        code(&f.finding.location()),
        f.finding.score,
        f.finding.category,
        f.finding.description
    );
    if let Some(source) = &f.finding.source {
        let _ = writeln!(out, "\n{}", found_by(source));
    }
    if let Some(code) = &f.code {
        let fence = fence_for(code);
        let _ = writeln!(out, "\n{fence}\n{}\n{fence}", code.trim_end());
    }
    if let Some(suggestion) = &f.finding.suggestion {
        let _ = writeln!(out, "\n**Suggestion**\n\n{suggestion}");
    }
}

/// Who found a finding, with the tool's page for its rule: `Found by ruff [S608](url).`
pub fn found_by(source: &bugloop_domain::finding::FindingSource) -> String {
    let tool = quiet(&source.tool).replace(['`', '[', ']'], "'");
    let rule = quiet(&source.rule).replace(['`', '[', ']'], "'");
    let url = source
        .url
        .as_deref()
        .filter(|u| bugloop_domain::markdown::plain_https(u));
    let rule = match url {
        Some(url) => format!("[`{rule}`]({url})"),
        None => format!("`{rule}`"),
    };
    let model = if source.model { " and the model" } else { "" };
    format!("Found by {tool} {rule}{model}.")
}

/// The proofs: what each test run at head came to, as a table.
fn proofs(out: &mut String, report: &ReviewReport) {
    if report.proofs.is_empty() {
        return;
    }
    out.push_str("\n### Proofs\n\n| finding | proof | why | test |\n|---|---|---|---|\n");
    for proof in &report.proofs {
        // Others' words (the model's, a file name the agent chose): one line each.
        let cell = |text: &str| quiet(text).replace('|', "\\|");
        let _ = writeln!(
            out,
            "| `{}` {} | {}{} | {} | {} |",
            proof.id,
            cell(&proof.title),
            proof.status.as_str(),
            if proof.outcome == "published" {
                String::new()
            } else {
                format!(" ({})", cell(&proof.outcome))
            },
            cell(&proof.reason),
            proof
                .test_path
                .as_deref()
                .map(|t| format!("`{}`", cell(t).replace('`', "'")))
                .unwrap_or_default()
        );
    }
}

/// What became of findings of earlier reviews: resolved, kept open though their code changed,
/// and still open (a re-review that finds nothing new says what is left to fix). A reason may
/// be the model's words: as inert as a title.
fn earlier_findings(out: &mut String, report: &ReviewReport) {
    let resolved = report.resolved.iter().map(|r| (&r.title, &r.id, &r.reason));
    with_reasons(out, "Resolved", resolved);
    let kept = report.kept_open().map(|r| (&r.title, &r.id, &r.reason));
    with_reasons(out, "Code changed, kept open", kept);
    let earlier: Vec<_> = report.open_from_earlier().collect();
    if !earlier.is_empty() {
        out.push_str("\n### Still open from earlier reviews\n\n");
        for t in earlier {
            let place = match (&t.file, t.line) {
                (Some(file), Some(line)) => format!(" at {}", code(&format!("{file}:{line}"))),
                (Some(file), None) => format!(" in {}", code(file)),
                _ => String::new(),
            };
            let score = t.score.map_or(String::new(), |s| format!("{s}/10 "));
            let _ = writeln!(
                out,
                "- {score}{} {}{place} ({})",
                t.status,
                text(&t.title),
                code(&t.id)
            );
        }
    }
}

/// A section of findings (title, id) each with the reason it is in it, when there are any.
fn with_reasons<'r>(
    out: &mut String,
    heading: &str,
    findings: impl Iterator<Item = (&'r String, &'r String, &'r String)>,
) {
    let mut findings = findings.peekable();
    if findings.peek().is_none() {
        return;
    }
    let _ = write!(out, "\n### {heading}\n\n");
    for (title, id, reason) in findings {
        let _ = writeln!(out, "- {} ({}): {}", text(title), code(id), text(reason));
    }
}

/// What publishing did besides posting: findings changed before publishing, and findings dropped
/// (folded away, since a reader rarely needs them).
fn publishing_notes(out: &mut String, report: &ReviewReport) {
    if !report.changes.is_empty() {
        out.push_str("\n### Changed before publishing\n\n");
        for c in &report.changes {
            let _ = writeln!(out, "- {} {}: {}", c.stage, code(&c.id), c.note);
        }
    }
    if !report.dropped.is_empty() {
        let _ = writeln!(
            out,
            "\n<details><summary>Not published ({})</summary>\n",
            report.dropped.len()
        );
        for d in &report.dropped {
            let _ = writeln!(
                out,
                "- {}: {} (`{}`) — {}",
                d.stage,
                quiet(&d.title),
                quiet(&d.location).replace('`', "'"),
                quiet(&d.reason)
            );
        }
        out.push_str("\n</details>\n");
    }
}

/// What the review could not cover: context refused to the model, and files not reviewed or
/// parts that failed. Last, so a reader sees how complete the review was.
/// A name the change chose (a file's), as inert code: no backtick of its own closes the span,
/// nothing in it pages anyone or opens a marker.
fn code(name: &str) -> String {
    format!("`{}`", quiet(name).replace('`', "'"))
}

/// Text the change or a model chose (a title), inside a line: no HTML of its own (an `<img>` in
/// a file name or title would load in the Action's job summary), no mention live.
fn text(text: &str) -> String {
    quiet(text).replace('<', "&lt;")
}

/// `markdown` in a table's cell: a `|` of its own ends no cell (GitHub reads `\|` as the
/// character, in a code span too).
fn cell(markdown: &str) -> String {
    markdown.replace('|', "\\|")
}

fn left_out(out: &mut String, report: &ReviewReport) {
    if !report.refused_context.is_empty() {
        out.push_str("\n### Not given to the model\n\n");
        for r in &report.refused_context {
            let _ = writeln!(out, "- {}: {}", code(&r.path), r.reason);
        }
    }
    if !report.ignored.is_empty() {
        let line = crate::text::ignored_line(report, "`review.ignore_files`", code);
        let _ = writeln!(out, "\n{line}");
    }
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        out.push_str("\n### Not reviewed\n\n");
        for (reason, paths) in crate::review::unreviewed_by_reason(&report.unreviewed) {
            let names = crate::review::all_names(&paths, code);
            let _ = writeln!(out, "- {names}: {}", quiet(&reason));
        }
        for e in report.errors_beside_unreviewed() {
            let _ = writeln!(out, "- error: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::FindingSource;

    use super::found_by;

    #[test]
    fn found_by_links_a_plain_page_and_keeps_a_tools_words_inert() {
        let ruff = FindingSource {
            tool: "ruff".into(),
            rule: "S608".into(),
            url: Some("https://docs.astral.sh/ruff/rules/hardcoded-sql-expression".into()),
            model: false,
        };
        assert_eq!(
            found_by(&ruff),
            "Found by ruff [`S608`](https://docs.astral.sh/ruff/rules/hardcoded-sql-expression)."
        );
        let hostile = FindingSource {
            tool: "ruff".into(),
            rule: "x` @octocat [pwn](https://evil.example)\n```suggestion\nevil()\n```".into(),
            url: Some("https://x/\n```suggestion".into()),
            model: true,
        };
        let said = found_by(&hostile);
        for forbidden in ["\n", "```", "@octocat", "[pwn]", "https://x/"] {
            assert!(!said.contains(forbidden), "{said}");
        }
        assert!(said.ends_with(" and the model."), "{said}");
    }
}
