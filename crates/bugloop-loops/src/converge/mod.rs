//! The audit-fix loop (bugteam-audit-fix-loop.md): in a task worktree off HEAD, gate (formatters
//! and linters, with gate-fix rounds), audit from scratch, fix with a verified Build run, and again,
//! until an audit is clean (converged), the loop cap is reached, a fix leaves HEAD unchanged
//! (stuck), or something fails (error). Every audit is recorded in the conversation as
//! `loop <L> audit: <a>P0 / <b>P1 / <c>P2`; a run on a HEAD whose last loop was clean stops at
//! once. At the end the worktree's commits land on the user's branch (fast-forward) or wait on a
//! named branch; the worktree is always removed.
//!
//! From `parallel_from_loop` on, `parallel_auditors` auditors run at the same time, each with its
//! own focus (and model or temperature when configured); the validator grounds and merges their
//! findings and, with `converge.validator: model`, has the model judge each one. Nothing it
//! rejects is lost: it is quarantined, with the reason, in the loop review and the final report.
//!
//! At the end the change's description gets a marked section saying what the loops found and
//! fixed and how the loop ended (`describe.rs`); the author's text stays above it.

mod audit;
mod describe;
mod gate;
mod judge;
mod pending;
mod record;
mod rounds;
mod validate;

use std::sync::Arc;

use bugloop_forge::ChangeKey;
use bugloop_git::{SelectedChange, Selection, short};
use bugloop_llm::{LlmError, Provider};
use bugloop_report::build::{BuildStatus, Landing};
use bugloop_report::converge::{ConvergeReport, Exit, LoopLine};

use crate::act::ActError;
use crate::build::{WorkTarget, Workbench};
use crate::env::LoopEnv;
use crate::kept;

use self::rounds::{LastAction, Run};

pub(crate) const GATE_FIX_PROMPT: &str = include_str!("../../prompts/gate-fix.md");
const FIX_PROMPT: &str = include_str!("../../prompts/fix.md");
/// Tags the loop reviews in the conversation: `<!-- bugloop:converge loop=3 head=<sha> -->`.
pub(crate) const LOOP_TAG: &str = "<!-- bugloop:converge";
/// How a clean loop review ends.
pub(crate) const CLEAN_MARK: &str = "→ clean";

/// Connects a model string of `converge.auditors` (metered by the run's meter, so every auditor
/// spends from the same budget).
pub type Connect<'a> = &'a (dyn Fn(&str) -> Result<Arc<dyn Provider>, LlmError> + Send + Sync);

/// Runs the loop on the change of `change` (its conversation) from `base` (default: the merge
/// base with the default branch). `connect` gives the auditors configured with a model of their
/// own their provider. The stages: the change and the conversation's loop history, then rounds
/// of gate and audit, fix, until an audit is clean or the loop stops, then landing.
pub async fn converge(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    base: Option<String>,
    connect: Connect<'_>,
) -> Result<ConvergeReport, ActError> {
    let (selected, head_now) = select(env, base.as_deref())?;
    let history = record::history(&env.forge.comments(change).await?, &head_now);
    if history.clean_on_head {
        return Ok(match landed_undescribed(env, change, &head_now) {
            Some(report) => describe(env, change, report).await,
            None => clean_already(head_now),
        });
    }
    let (bench, resumed) = open_bench(env, change, &head_now)?;
    // A rerun goes on from an interrupted run's loops: its report and description say them.
    let (loops, log) = resumed
        .as_ref()
        .map(|r| (r.loops, r.log.clone()))
        .unwrap_or_default();
    let mut run = Run {
        env,
        connect,
        change,
        tree: bench.git().clone(),
        bench,
        merge_base: selected.base.clone(),
        // `converge.max_loops` counted anew from where the interrupted run's loops got to.
        cap: env.config().converge.max_loops.saturating_add(loops),
        loops,
        log,
        quarantined: Vec::new(),
        proven: Vec::new(),
    };
    let first = match &resumed {
        // It was stopped after a clean audit of that commit: only the landing was left.
        Some(r) if record::history(&env.forge.comments(change).await?, &r.tip).clean_on_head => {
            LastAction::Audited(Vec::new())
        }
        _ => LastAction::Fresh,
    };
    let stop = run.until_stopped(first).await?;
    let stop = match &resumed {
        Some(r) => stop.resumed_from(&r.tip),
        None => stop,
    };
    let report = run.finish(stop, history.earlier_dirty).await?;
    Ok(describe(env, change, report).await)
}

/// The change converge works on (from `base`, or the merge base with the default branch) and
/// the head it starts from: on a pull request, its pinned head; locally, HEAD.
fn select(env: &LoopEnv<'_>, base: Option<&str>) -> Result<(SelectedChange, String), ActError> {
    let pinned = match &env.work {
        WorkTarget::PullRequest { head, .. } => Some(head.clone()),
        WorkTarget::LocalBranch => None,
    };
    let selection = match (base, &pinned) {
        (None, None) => Selection::Branch,
        (base, head) => Selection::Range {
            base: base.map(str::to_owned),
            head: head.clone(),
        },
    };
    let selected = env
        .git
        .select(&selection)
        .map_err(bugloop_forge::ForgeError::from)?;
    if selected.diff.is_empty() {
        return Err(ActError::Invalid(format!(
            "No upstream diff: {} has nothing to converge.",
            selected.description
        )));
    }
    let head_now = pinned.unwrap_or_else(|| env.git.head().unwrap_or_default());
    Ok((selected, head_now))
}

/// The report of a run killed after its commits landed as `head_now`, whose description is
/// still to be written.
fn landed_undescribed(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    head_now: &str,
) -> Option<ConvergeReport> {
    let mut report = pending::landed_on(kept::dir(env)?, change, head_now)?;
    env.progress.event(crate::ProgressEvent::Step(
        "the last run stopped after its commits landed: writing its description".to_owned(),
    ));
    // Stopped before it could say where they landed: they are what HEAD is now.
    if report.landing.is_none() && report.final_commit != report.start_commit {
        report.landing = env
            .git
            .current_branch()
            .map(|branch| Landing::FastForwarded {
                branch,
                commit: head_now.to_owned(),
            });
    }
    Some(report)
}

/// The task tree the loops work in: locally, at the commit an interrupted run on this HEAD got
/// to (returned with it), else at the head.
fn open_bench(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    head_now: &str,
) -> Result<(Workbench, Option<pending::Resumed>), ActError> {
    let resumed = kept::dir(env).and_then(|dir| pending::resumable(dir, change, head_now, env.git));
    let bench = match &resumed {
        Some(resumed) => {
            env.progress.event(crate::ProgressEvent::Step(format!(
                "going on from {}, where an interrupted run's loops got to",
                short(&resumed.tip)
            )));
            Workbench::resume(env.git, "converge", &resumed.tip)?
        }
        None => Workbench::open(env.git, "converge", &env.work)?,
    };
    Ok((bench, resumed))
}

/// Writes the change's description for a run whose commits have landed, and forgets the report
/// kept for a rerun. A description the forge refuses is said, not a failed run.
async fn describe(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    mut report: ConvergeReport,
) -> ConvergeReport {
    match describe::rewrite(env.forge, change, &report).await {
        Ok(section) => report.description = Some(section),
        Err(error) => {
            report.description_error = Some(format!("the description was not updated: {error}"));
        }
    }
    if let Some(dir) = kept::dir(env) {
        pending::forget(dir, change);
    }
    report
}

/// The report when the last loop was clean on this head: nothing to do, nothing run.
fn clean_already(head: String) -> ConvergeReport {
    ConvergeReport {
        exit: Exit::Converged,
        detail: "The last loop was clean on this HEAD: nothing to do.".to_owned(),
        loops: 0,
        start_commit: head.clone(),
        final_commit: head,
        files_changed: 0,
        additions: 0,
        deletions: 0,
        log: Vec::new(),
        landing: None,
        earlier_dirty_loops: 0,
        quarantined: Vec::new(),
        description: None,
        description_error: None,
    }
}

/// Adds a line to the loop log and reports it as progress.
fn record(log: &mut Vec<LoopLine>, progress: &dyn crate::Progress, line: LoopLine) {
    progress.event(crate::ProgressEvent::Step(format!(
        "{} {}: {}",
        line.number, line.kind, line.text
    )));
    log.push(line);
}

fn status_text(status: &BuildStatus) -> String {
    match status {
        BuildStatus::NoChanges { .. } => "the fix changed nothing".to_owned(),
        BuildStatus::VerifyFailed { command, .. } => format!("verify `{command}` failed"),
        BuildStatus::Refused { reason, .. } => reason.clone(),
        BuildStatus::AgentFailed { error } => error.clone(),
        BuildStatus::Committed { commit, .. } => format!("committed {}", short(commit)),
    }
}

#[cfg(test)]
mod tests;
