//! How the analyzers' runs are told: the progress line, each run in the report (with what a
//! type checker found in the files importing the change), and the files a tool could not check
//! or be given, which make the review incomplete.

use bugloop_analyzers::{AnalyzerRun, RunStatus};
use bugloop_report::review::{AnalyzerRunInfo, Unreviewed};

/// The files each analyzer could not check (it timed out, crashed, or said more than is read
/// on them), as files not reviewed, and one error per analyzer.
pub(super) fn failed_files(runs: &[AnalyzerRun]) -> (Vec<Unreviewed>, Vec<String>) {
    let mut files = Vec::new();
    let mut failures = Vec::new();
    for run in runs {
        let Some(first) = run.unanalyzed.first() else {
            continue;
        };
        for failed in &run.unanalyzed {
            files.push(Unreviewed {
                path: failed.path.clone(),
                reason: format!("{} could not check it: {}", run.name, failed.reason),
            });
        }
        failures.push(bugloop_report::review::analyzer_failure(
            &run.name,
            run.unanalyzed.len(),
            &first.path,
            &first.reason,
        ));
    }
    (files, failures)
}

/// The files with added lines whose name is not UTF-8 (shown in git's quoted form): an
/// analyzer is given file names as text, so none reads them, and the review says so rather
/// than let such a name be a way past the analyzers.
pub(super) fn unnamed_files(diff: &bugloop_diff::Diff) -> Vec<Unreviewed> {
    diff.files
        .iter()
        .filter(|f| !f.binary && bugloop_domain::paths::text_name(f.path()).is_none())
        .filter(|f| {
            f.hunks
                .iter()
                .flat_map(|h| &h.lines)
                .any(|l| l.kind == bugloop_diff::LineKind::Added)
        })
        .map(|f| Unreviewed {
            path: f.path().to_owned(),
            reason: "its name is not UTF-8: no analyzer could be given it".to_owned(),
        })
        .collect()
}

/// The progress line for the analyzers that ran: each with its files, hits on the change and
/// time.
pub(super) fn analyzers_done(runs: &[AnalyzerRun]) -> String {
    let ran: Vec<String> = runs
        .iter()
        .filter_map(|run| match &run.status {
            RunStatus::Ran {
                files, candidates, ..
            } => Some(format!(
                "{} on {files} file(s), {candidates} on the change, {:.1} s",
                run.name, run.seconds
            )),
            RunStatus::NotRun { .. } => None,
        })
        .collect();
    if ran.is_empty() {
        "analyzers: none applied".to_owned()
    } else {
        format!("analyzers: {}", ran.join("; "))
    }
}

pub(super) fn not_run(name: &str, reason: &str) -> AnalyzerRun {
    AnalyzerRun {
        importers: None,
        name: name.to_owned(),
        status: RunStatus::NotRun {
            reason: reason.to_owned(),
        },
        seconds: 0.0,
        unanalyzed: Vec::new(),
    }
}

pub(super) fn run_info(run: &AnalyzerRun) -> AnalyzerRunInfo {
    let (ran, reason, files, hits, candidates) = match &run.status {
        RunStatus::Ran {
            files,
            hits,
            candidates,
        } => (true, None, *files, *hits, *candidates),
        RunStatus::NotRun { reason } => (false, Some(reason.clone()), 0, 0, 0),
    };
    AnalyzerRunInfo {
        name: run.name.clone(),
        ran,
        reason,
        files,
        hits,
        candidates,
        seconds: run.seconds,
        importers: run.importers.as_ref().map(importers_said),
    }
}

/// What a type checker's check of the files importing the change came to, in a sentence.
fn importers_said(checked: &bugloop_analyzers::ImportersChecked) -> String {
    if checked.whole_project {
        return match &checked.not_checked {
            Some(reason) => format!(
                "a compile error outside the change's lines, not compared with the base: {reason}"
            ),
            None => format!(
                "a compile error outside the change's lines: the project compiled again at head \
                 and at the base, {} error(s) new since the base",
                checked.broken
            ),
        };
    }
    let files = match checked.left_out {
        0 => format!("{} file(s)", checked.files.len()),
        more => format!(
            "{} of {} file(s) (the limit)",
            checked.files.len(),
            checked.files.len() + more
        ),
    };
    match &checked.not_checked {
        Some(reason) => {
            format!("{files} importing the change not compared with the base: {reason}")
        }
        None => format!(
            "{files} importing the change checked: {} diagnostic(s) new since the base",
            checked.broken
        ),
    }
}
