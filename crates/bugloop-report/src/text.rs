//! The terminal renderers: the review report (grouped by file, with the code line and score,
//! coloured through [`Style`]), the act report, the converge report as the spec prints it, and a
//! settled dispute.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::act::ActReport;
use crate::build::{BuildStatus, Landing};
use crate::converge::ConvergeReport;
use crate::dispute::DisputeOutcome;
use crate::review::{
    CommentAction, PublishedFinding, ReviewReport, all_names, some_names, unreviewed_by_reason,
};
use crate::style::Style;

fn action_label(action: CommentAction, rediscovered: bool) -> &'static str {
    match (action, rediscovered) {
        (CommentAction::Reopened, _) => "raised again",
        (_, true) => "seen again",
        (CommentAction::Added, _) => "new",
        (CommentAction::Updated, _) => "updated",
        (CommentAction::Unchanged, _) => "unchanged",
        (CommentAction::NotPublished, _) => "not published",
    }
}

/// The change's size, the model (as `model` shows it) and what the run cost, on one line.
pub(crate) fn size_and_cost(report: &ReviewReport, model: &str) -> String {
    let c = &report.change;
    format!(
        "{} file(s), +{} -{} · model {model} · {}",
        c.files,
        c.additions,
        c.deletions,
        usage_text(report)
    )
}

pub(crate) fn usage_text(report: &ReviewReport) -> String {
    let u = &report.usage;
    let cost = bugloop_llm::overrun::cost_text(u.cost_usd);
    format!(
        "{} in / {} out tokens, {cost}, {} model calls, {:.1}s",
        u.input_tokens, u.output_tokens, u.model_calls, u.seconds
    )
}

/// The review report for a terminal: findings grouped by file, with the code line and score.
/// Each section is written by a function of its own, in the order people read them: what was
/// reviewed, what was found, what became of earlier findings, then what was left out and why.
pub fn review(report: &ReviewReport, style: Style) -> String {
    let mut out = String::new();
    review_header(&mut out, report, style);
    findings_by_file(&mut out, report, style);
    proofs(&mut out, report, style);
    analyzers(&mut out, report, style);
    earlier_findings(&mut out, report, style);
    publishing_notes(&mut out, report, style);
    left_out(&mut out, report, style);
    out
}

/// What was reviewed: the change, its size, the model and what it cost, and the scope when it
/// was not the whole change.
fn review_header(out: &mut String, report: &ReviewReport, style: Style) {
    let _ = writeln!(
        out,
        "{} {}\n{}",
        style.bold("bugloop review:"),
        report.change.description,
        style.dim(&size_and_cost(report, &report.model))
    );
    if report.scope_worth_saying() {
        let _ = writeln!(
            out,
            "{}",
            style.dim(&format!("reviewed {}", report.scope.describe()))
        );
    }
    let asked = &report.asked;
    if asked.kind == "questions" {
        let left = match asked.left_to_analyzers.len() {
            0 => String::new(),
            n => format!(
                "; {n} other file(s) (prose, keys, certificates, deletions) were read by the analyzers only"
            ),
        };
        let about = match asked.files_shown {
            // A re-review whose changes put code back as the base has it: only the findings
            // whose code that touched are asked about.
            0 => "about findings whose code changed".to_owned(),
            files => format!("about the code of {files} file(s)"),
        };
        let line = match asked.calls {
            0 => format!("nothing of the change was a question for the model{left}"),
            calls => format!(
                "the change makes {calls} short question(s) for the model {about}, at most one finding each{left}"
            ),
        };
        let _ = writeln!(out, "{}", style.dim(&line));
    }
}

/// The findings, grouped by file (in file order; findings on no file under one heading of
/// their own), or a line saying there are none.
fn findings_by_file(out: &mut String, report: &ReviewReport, style: Style) {
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
            finding_entry(out, f, style);
        }
    }
}

/// One finding: its line, score, category, title and what publishing did with it, then the code
/// line, the description and a note, indented under it.
fn finding_entry(out: &mut String, f: &PublishedFinding, style: Style) {
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
    if let Some(source) = &finding.source {
        let link = source
            .url
            .as_deref()
            .map(|url| format!(" <{}>", plain(url)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "         {}",
            style.dim(&format!("found by {}{link}", plain(&source.found_by())))
        );
    }
    if let Some(code) = &f.code {
        let _ = writeln!(out, "         {} {}", style.dim("│"), code.trim_end());
    }
    for text_line in finding.description.lines() {
        // A paragraph break stays a bare line, without the indent's trailing spaces.
        let indent = if text_line.trim().is_empty() {
            ""
        } else {
            "         "
        };
        let _ = writeln!(out, "{indent}{}", text_line.trim_end());
    }
    if let Some(note) = &f.note {
        let _ = writeln!(out, "         {}", style.dim(&format!("({note})")));
    }
}

/// The proofs: what each test run at head came to.
fn proofs(out: &mut String, report: &ReviewReport, style: Style) {
    if report.proofs.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", style.bold("Proofs (a test run at head)"));
    for proof in &report.proofs {
        let command = proof
            .command
            .as_deref()
            .map(|c| format!(" (`{}`)", plain(c)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<15} {}  {}{command}: {}{}",
            proof.status.as_str(),
            proof.id,
            plain(&proof.title),
            plain(&proof.reason),
            if proof.outcome == "published" {
                String::new()
            } else {
                format!(" [{}]", proof.outcome)
            }
        );
    }
}

/// Others' words (a test's output, a tool's message) on one line, with no control character to
/// steer the terminal.
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The static analyzers: what each did on the change, which did not run and why, and how their
/// hits were weighed.
fn analyzers(out: &mut String, report: &ReviewReport, style: Style) {
    let analysis = &report.analysis;
    let ran: Vec<String> = analysis
        .runs
        .iter()
        .filter(|r| r.ran)
        .map(|r| {
            let importers = r
                .importers
                .as_deref()
                .map(|said| format!("; {}", plain(said)))
                .unwrap_or_default();
            format!(
                "{} ({} file(s), {} hit(s), {} on the change, {:.1} s{importers})",
                plain(&r.name),
                r.files,
                r.hits,
                r.candidates,
                r.seconds
            )
        })
        .collect();
    if !ran.is_empty() {
        let weighed = match analysis.weighed.as_str() {
            "triage" => format!(
                "; the model confirmed {} and dismissed {} of {}",
                analysis.confirmed, analysis.dismissed, analysis.candidates
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "\n{}",
            style.dim(&format!("Analyzers: {}{weighed}", ran.join(" · ")))
        );
    }
    let not_run: Vec<_> = analysis.runs.iter().filter(|r| !r.ran).collect();
    if !not_run.is_empty() {
        let _ = writeln!(out, "\n{}", style.yellow("Analyzers not run:"));
        for run in not_run {
            let _ = writeln!(
                out,
                "  {}: {}",
                plain(&run.name),
                plain(run.reason.as_deref().unwrap_or("not run"))
            );
        }
    }
    if let Some(error) = &analysis.triage_error {
        let _ = writeln!(out, "  {}", style.yellow(&plain(error)));
    }
}

/// What became of findings of earlier reviews: resolved, kept open though their code changed,
/// and still open.
fn earlier_findings(out: &mut String, report: &ReviewReport, style: Style) {
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
    let kept: Vec<_> = report.kept_open().collect();
    if !kept.is_empty() {
        let _ = writeln!(out, "\n{}", style.bold("Code changed, kept open"));
        for r in kept {
            let _ = writeln!(out, "  {} {}: {}", r.title, style.dim(&r.id), r.reason);
        }
    }
    let earlier: Vec<_> = report.open_from_earlier().collect();
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
}

/// What publishing did besides posting: findings over the comment limit, findings changed or
/// dropped on the way, and replies answered.
fn publishing_notes(out: &mut String, report: &ReviewReport, style: Style) {
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
                    d.stage,
                    one_line(&d.title),
                    one_line(&d.location),
                    one_line(&d.reason)
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
}

/// What the review could not cover: context refused to the model, conversation comments that
/// could not be read, and files not reviewed or parts that failed. Last, so a reader sees how
/// complete the review was.
fn left_out(out: &mut String, report: &ReviewReport, style: Style) {
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
    if !report.ignored.is_empty() {
        let line = ignored_line(report, "review.ignore_files", |n| one_line(n).into_owned());
        let _ = writeln!(out, "\n{}", style.yellow(&line));
    }
    if !report.unreviewed.is_empty() || !report.errors.is_empty() {
        let _ = writeln!(out, "\n{}", style.yellow("Not reviewed:"));
        for (reason, paths) in unreviewed_by_reason(&report.unreviewed) {
            let names = all_names(&paths, |p| one_line(p).into_owned());
            let _ = writeln!(out, "  {names}: {}", one_line(&reason));
        }
        for e in report.errors_beside_unreviewed() {
            let _ = writeln!(out, "  error: {e}");
        }
    }
}

/// Text the change or the model chose, on one terminal line: a line break or another control
/// character in it is shown quoted and escaped (git's form for such names), so it cannot start
/// a line of the report's own.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    bugloop_domain::paths::prompt_path(text)
}

/// The files `review.ignore_files` kept out of the review, said where the findings are read: a
/// branch's own configuration may set it, and a review of nothing must not read as a clean one.
/// `key` and `name` write the key and each file name as the report's format needs them.
pub fn ignored_line(report: &ReviewReport, key: &str, name: impl Fn(&str) -> String) -> String {
    let names: Vec<&str> = report.ignored.iter().map(String::as_str).collect();
    format!(
        "Not reviewed, ignored by {key}: {} file(s): {}",
        report.ignored.len(),
        some_names(&names, name)
    )
}

/// The converge report for a terminal, as the spec prints it.
pub fn converge(report: &ConvergeReport) -> String {
    let mut out = format!(
        "bugloop converge exit: {}\nLoops: {}\nStarting commit: {}\nFinal commit: {}\nNet change: {} files, +{}/-{}\n",
        report.exit.as_str(),
        report.loops,
        short_commit(&report.start_commit),
        short_commit(&report.final_commit),
        report.files_changed,
        report.additions,
        report.deletions
    );
    if !report.log.is_empty() {
        out.push_str("Loop log:\n");
        for line in &report.log {
            out.push_str(&format!("{} {}: {}\n", line.number, line.kind, line.text));
        }
    }
    if !report.quarantined.is_empty() {
        out.push_str(&format!("Quarantined ({}):\n", report.quarantined.len()));
        for q in &report.quarantined {
            out.push_str(&format!(
                "{} {}: {} ({}): {}\n",
                q.loop_number, q.auditor, q.title, q.location, q.reason
            ));
        }
    }
    if !report.detail.is_empty() {
        out.push_str(&format!("{}\n", report.detail));
    }
    match &report.landing {
        Some(Landing::FastForwarded { branch, commit }) => {
            out.push_str(&format!(
                "{branch} fast-forwarded to {}\n",
                short_commit(commit)
            ));
        }
        Some(Landing::Branch { name, reason, .. }) => {
            out.push_str(&format!("The commits wait on branch {name} ({reason}).\n"));
        }
        None => {}
    }
    if report.description.is_some() {
        out.push_str("The change's description says what the loops did.\n");
    }
    if let Some(error) = &report.description_error {
        out.push_str(&format!("warning: {error}\n"));
    }
    out
}

impl ConvergeReport {
    /// The final report, as the spec prints it ([`converge`]).
    pub fn text(&self) -> String {
        converge(self)
    }
}

/// A commit as people read it: its first 7 characters (git's own abbreviation length).
fn short_commit(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// The act report for a terminal: the one-line message, the verify runs (and the failing
/// command's output), the findings resolved and the answer.
pub fn act(report: &ActReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", report.message);
    if let Some(build) = &report.build {
        for run in &build.verify {
            let _ = writeln!(
                out,
                "  verify `{}`: {}",
                run.command,
                if run.passed { "passed" } else { "FAILED" }
            );
        }
        for left in &build.left_out {
            let _ = writeln!(out, "  left out: {left}");
        }
        if let BuildStatus::VerifyFailed { output, .. } = &build.status {
            let _ = writeln!(out, "\n{}", output.trim_end());
        }
    }
    if !report.resolved.is_empty() {
        let _ = writeln!(out, "resolved: {}", report.resolved.join(", "));
    }
    if let Some(answer) = &report.answer {
        let _ = writeln!(out, "\n{}", answer.trim_end());
    }
    out
}

/// A settled dispute for a terminal: the finding, what was decided, the thread's status and why.
pub fn dispute(outcome: &DisputeOutcome) -> String {
    format!(
        "{}: {} ({})\n\n{}\n",
        outcome.finding,
        outcome.decision_label(),
        outcome.status,
        outcome.reasoning
    )
}

/// What a Build run ended with, in one line.
pub fn build_status(status: &BuildStatus) -> String {
    match status {
        BuildStatus::Committed {
            commit, unverified, ..
        } => format!(
            "committed {}{}",
            short_commit(commit),
            if *unverified {
                " (no verify commands configured: unverified)"
            } else {
                ""
            }
        ),
        BuildStatus::NoChanges { .. } => "the agent changed nothing".to_owned(),
        BuildStatus::VerifyFailed { command, .. } => {
            format!("the verify command `{command}` failed; nothing was committed")
        }
        BuildStatus::Refused { reason, .. } if reason.ends_with("nothing was committed") => {
            reason.clone()
        }
        BuildStatus::Refused { reason, .. } => format!("{reason}; nothing was committed"),
        BuildStatus::AgentFailed { error } => format!("the agent did not finish: {error}"),
    }
}

/// What a Build run ended with and where its commit went, in one line (an act report's message).
pub fn build_outcome(status: &BuildStatus, landing: Option<&Landing>) -> String {
    match landing {
        Some(Landing::FastForwarded { branch, commit }) => {
            format!(
                "{}; {branch} fast-forwarded to {}",
                build_status(status),
                short_commit(commit)
            )
        }
        Some(Landing::Branch { name, reason, .. }) => format!(
            "{}; left on branch {name} because {reason} (merge it yourself)",
            build_status(status)
        ),
        None => build_status(status),
    }
}
