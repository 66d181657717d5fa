//! Review reports for people and machines: the terminal report (grouped by file, with the code
//! line and score, coloured on a terminal), Markdown, SARIF 2.1.0 and JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use bugloop_loops::review::report::{CommentAction, PublishedFinding, ReviewReport};
use serde_json::{Value, json};

/// ANSI styles, empty when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    pub fn new(on: bool) -> Self {
        Style { on }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Colour by score: red for 7-10, yellow for 5-6, plain below.
    pub fn score(self, score: u8, text: &str) -> String {
        match score {
            7..=10 => self.paint("1;31", text),
            5..=6 => self.paint("33", text),
            _ => self.paint("36", text),
        }
    }
}

fn action_label(action: CommentAction, rediscovered: bool) -> &'static str {
    match (action, rediscovered) {
        (_, true) => "seen again",
        (CommentAction::Added, _) => "new",
        (CommentAction::Updated, _) => "updated",
        (CommentAction::Unchanged, _) => "unchanged",
        (CommentAction::NotPublished, _) => "not published",
    }
}

fn usage_text(report: &ReviewReport) -> String {
    let u = &report.usage;
    let cost = u
        .cost_usd
        .map_or("cost unknown".to_owned(), |c| format!("${c:.4}"));
    format!(
        "{} in / {} out tokens, {cost}, {} model calls, {:.1}s",
        u.input_tokens, u.output_tokens, u.model_calls, u.seconds
    )
}

/// The terminal report.
pub fn text(report: &ReviewReport, style: Style) -> String {
    let mut out = String::new();
    let c = &report.change;
    let _ = writeln!(
        out,
        "{} {}\n{}",
        style.bold("bugloop review:"),
        c.description,
        style.dim(&format!(
            "{} file(s), +{} -{} · model {} · {}",
            c.files,
            c.additions,
            c.deletions,
            report.model,
            usage_text(report)
        ))
    );
    let mut by_file: BTreeMap<String, Vec<&PublishedFinding>> = BTreeMap::new();
    for finding in &report.findings {
        by_file
            .entry(
                finding
                    .finding
                    .file
                    .clone()
                    .unwrap_or_else(|| "(the change as a whole)".to_owned()),
            )
            .or_default()
            .push(finding);
    }
    if report.findings.is_empty() {
        let _ = writeln!(out, "\n{}", style.green("No new findings."));
    }
    for (file, findings) in &by_file {
        let _ = writeln!(out, "\n{}", style.bold(file));
        for f in findings {
            let finding = &f.finding;
            let score = finding.score.get();
            let line = finding.line.map_or(String::new(), |l| format!("{l}"));
            let _ = writeln!(
                out,
                "  {:>5}  {}  {}  {}  {}",
                line,
                style.score(score, &format!("{} {score}/10", f.severity)),
                finding.category,
                style.bold(&finding.title),
                style.dim(&format!(
                    "[{}] {}",
                    action_label(f.action, f.rediscovered_as.is_some()),
                    finding.id
                ))
            );
            if let Some(code) = &f.code {
                let _ = writeln!(out, "         {} {}", style.dim("│"), code.trim_end());
            }
            for text_line in finding.description.lines() {
                let _ = writeln!(out, "         {text_line}");
            }
            if let Some(note) = &f.note {
                let _ = writeln!(out, "         {}", style.dim(&format!("({note})")));
            }
        }
    }
    if !report.resolved.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Resolved"));
        for r in &report.resolved {
            let _ = writeln!(
                out,
                "  {} {} {}: {}",
                style.green("✓"),
                r.title,
                style.dim(&r.id),
                r.reason
            );
        }
    }
    let shown: Vec<&str> = report
        .findings
        .iter()
        .map(|f| f.finding.id.as_str())
        .collect();
    let earlier: Vec<_> = report
        .tracked
        .iter()
        .filter(|t| t.status != "RESOLVED" && !shown.contains(&t.id.as_str()))
        .collect();
    if !earlier.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Still open from earlier reviews"));
        for t in earlier {
            let place = match (&t.file, t.line) {
                (Some(f), Some(l)) => format!("{f}:{l}"),
                (Some(f), None) => f.clone(),
                _ => String::new(),
            };
            let score = t.score.unwrap_or(0);
            let _ = writeln!(
                out,
                "  {}  {}  {} {}",
                style.score(score, &format!("{score}/10")),
                t.status,
                t.title,
                style.dim(&format!("{place} {}", t.id))
            );
        }
    }
    if report.overflow.count > 0 {
        let _ = writeln!(
            out,
            "\n{}",
            style.yellow(&format!(
                "{} more finding(s) over the comment limit: {}",
                report.overflow.count,
                report.overflow.titles.join("; ")
            ))
        );
    }
    if !report.changes.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Changed before publishing"));
        for c in &report.changes {
            let _ = writeln!(out, "  {}: {} {}", c.stage, style.dim(&c.id), c.note);
        }
    }
    if !report.dropped.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            style.dim(&format!("Not published ({}):", report.dropped.len()))
        );
        for d in &report.dropped {
            let _ = writeln!(
                out,
                "  {}",
                style.dim(&format!(
                    "{}: {} ({}) — {}",
                    d.stage, d.title, d.location, d.reason
                ))
            );
        }
    }
    if !report.disputes.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Replies answered"));
        for d in &report.disputes {
            let _ = writeln!(
                out,
                "  {} {} ({}): {}",
                d.finding, d.decision, d.status, d.reasoning
            );
        }
    }
    if !report.refused_context.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            style.yellow("Not given to the model (outside the repository or not a file):")
        );
        for r in &report.refused_context {
            let _ = writeln!(out, "  {}: {}", r.path, r.reason);
        }
    }
    if !report.conversation_problems.is_empty() {
        let _ = writeln!(out, "\n{}", style.dim("Conversation problems:"));
        for p in &report.conversation_problems {
            let _ = writeln!(out, "  {}", style.dim(p));
        }
    }
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        let _ = writeln!(out, "\n{}", style.yellow("Not reviewed:"));
        for u in &report.unreviewed {
            let _ = writeln!(out, "  {}: {}", u.path, u.reason);
        }
        for e in &report.errors {
            let _ = writeln!(out, "  error: {e}");
        }
    }
    out
}

/// The report as Markdown (for a pull request description or a CI summary).
pub fn markdown(report: &ReviewReport) -> String {
    let mut out = String::new();
    let c = &report.change;
    let _ = writeln!(
        out,
        "## bugloop review\n\n{} · {} file(s), +{} -{} · model `{}` · {}\n",
        c.description,
        c.files,
        c.additions,
        c.deletions,
        report.model,
        usage_text(report)
    );
    if report.findings.is_empty() {
        out.push_str("No new findings.\n");
    } else {
        out.push_str("| score | severity | location | finding | id |\n|---|---|---|---|---|\n");
        for f in &report.findings {
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | `{}` |",
                f.finding.score,
                f.severity,
                f.finding.location(),
                f.finding.title.replace('|', "\\|"),
                f.finding.id
            );
        }
        for f in &report.findings {
            let _ = writeln!(
                out,
                "\n### {}\n\n`{}` · score {}/10 · {}\n\n{}",
                f.finding.title,
                f.finding.location(),
                f.finding.score,
                f.finding.category,
                f.finding.description
            );
            if let Some(code) = &f.code {
                let fence = bugloop_loops::publish::fence_for(code);
                let _ = writeln!(out, "\n{fence}\n{}\n{fence}", code.trim_end());
            }
            if let Some(suggestion) = &f.finding.suggestion {
                let _ = writeln!(out, "\n**Suggestion**\n\n{suggestion}");
            }
        }
    }
    if !report.resolved.is_empty() {
        out.push_str("\n### Resolved\n\n");
        for r in &report.resolved {
            let _ = writeln!(out, "- {} (`{}`): {}", r.title, r.id, r.reason);
        }
    }
    if !report.changes.is_empty() {
        out.push_str("\n### Changed before publishing\n\n");
        for c in &report.changes {
            let _ = writeln!(out, "- {} `{}`: {}", c.stage, c.id, c.note);
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
                "- {}: {} ({}) — {}",
                d.stage, d.title, d.location, d.reason
            );
        }
        out.push_str("\n</details>\n");
    }
    if !report.refused_context.is_empty() {
        out.push_str("\n### Not given to the model\n\n");
        for r in &report.refused_context {
            let _ = writeln!(out, "- `{}`: {}", r.path, r.reason);
        }
    }
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        out.push_str("\n### Not reviewed\n\n");
        for u in &report.unreviewed {
            let _ = writeln!(out, "- `{}`: {}", u.path, u.reason);
        }
        for e in &report.errors {
            let _ = writeln!(out, "- error: {e}");
        }
    }
    out
}

fn level(score: u8) -> &'static str {
    match score {
        7..=10 => "error",
        5..=6 => "warning",
        _ => "note",
    }
}

/// SARIF 2.1.0: one run, rules per category, a result per open finding.
pub fn sarif(report: &ReviewReport) -> Value {
    let mut rules: Vec<String> = Vec::new();
    let mut rule_index = |rule: &str| -> usize {
        match rules.iter().position(|r| r == rule) {
            Some(i) => i,
            None => {
                rules.push(rule.to_owned());
                rules.len() - 1
            }
        }
    };
    let mut results = Vec::new();
    for f in &report.findings {
        let finding = &f.finding;
        let rule = finding.category.as_str();
        let index = rule_index(rule);
        let mut result = json!({
            "ruleId": rule,
            "ruleIndex": index,
            "level": level(finding.score.get()),
            "message": {"text": format!("{}\n\n{}", finding.title, finding.description)},
            "partialFingerprints": {"bugloopFindingId/v1": finding.id.as_str()},
            "properties": {
                "bugloopId": finding.id.as_str(),
                "score": finding.score.get(),
                "severity": f.severity,
                "priority": f.priority,
            }
        });
        if let Some(file) = &finding.file {
            let mut region = json!({});
            if let Some(line) = finding.line {
                region["startLine"] = json!(line);
                if let Some(end) = finding.end_line {
                    region["endLine"] = json!(end);
                }
                if let Some(code) = &f.code {
                    region["snippet"] = json!({"text": code});
                }
            }
            let mut location = json!({
                "artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}
            });
            if finding.line.is_some() {
                location["region"] = region;
            }
            result["locations"] = json!([{"physicalLocation": location}]);
        }
        results.push(result);
    }
    // Findings still open from earlier runs are part of the change's state too.
    let shown: Vec<&str> = report
        .findings
        .iter()
        .map(|f| f.finding.id.as_str())
        .collect();
    for t in report
        .tracked
        .iter()
        .filter(|t| t.status != "RESOLVED" && !shown.contains(&t.id.as_str()))
    {
        let index = rule_index("tracked");
        let score = t.score.unwrap_or(5);
        let mut result = json!({
            "ruleId": "tracked",
            "ruleIndex": index,
            "level": level(score),
            "message": {"text": format!("{} ({})", t.title, t.status)},
            "partialFingerprints": {"bugloopFindingId/v1": t.id},
            "properties": {"bugloopId": t.id, "score": score, "status": t.status}
        });
        if let Some(file) = &t.file {
            let mut location = json!({"artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}});
            if let Some(line) = t.line {
                location["region"] = json!({"startLine": line});
            }
            result["locations"] = json!([{"physicalLocation": location}]);
        }
        results.push(result);
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule,
                "name": rule,
                "shortDescription": {"text": rule_description(rule)},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "bugloop",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/bugloop/bugloop",
                "rules": rules,
            }},
            "automationDetails": {"id": format!("bugloop/{}", report.change.key)},
            "results": results,
        }]
    })
}

fn rule_description(rule: &str) -> &'static str {
    match rule {
        "logic" => "Wrong result, missing edge case, off-by-one",
        "security" => "Access control, injection, secrets, cryptography, data exposure",
        "reliability" => "Error handling, resource leaks, crashes",
        "concurrency" => "Races, deadlocks, ordering",
        "data_integrity" => "Corruption or loss of stored data",
        "performance" => "Unnecessary work or complexity",
        "compatibility" => "Breaking public interfaces or contracts",
        "rules" => "Violation of the repository's own rules or architecture",
        "testing" => "Missing or wrong tests",
        "maintainability" => "Naming, redundancy, documentation",
        "tracked" => "A finding raised by an earlier review that is still open",
        _ => "bugloop finding",
    }
}
