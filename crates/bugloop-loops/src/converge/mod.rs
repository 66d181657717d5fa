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

mod audit;
mod gate;
mod judge;
mod record;
mod validate;

use std::sync::Arc;

use bugloop_domain::finding::Finding;
use bugloop_forge::ChangeKey;
use bugloop_git::{Selection, short};
use bugloop_llm::{LlmError, Provider};
use bugloop_report::build::BuildStatus;
use bugloop_report::converge::{ConvergeReport, Exit, LoopKind, LoopLine};

use crate::act::ActError;
use crate::build::{BuildTask, Workbench, build, land, net_change};
use crate::env::LoopEnv;
use crate::prompt::fill;

use self::audit::{Audit, audit};
use self::gate::gate;
use self::record::{counts, is_clean, loop_body};
use self::validate::findings_prompt;

pub use self::audit::focus_prompt;
pub use self::validate::{AuditFindings, validate_and_merge};

pub const GATE_FIX_PROMPT: &str = include_str!("../../prompts/gate-fix.md");
const FIX_PROMPT: &str = include_str!("../../prompts/fix.md");
/// Tags the loop reviews in the conversation: `<!-- bugloop:converge loop=3 head=<sha> -->`.
pub const LOOP_TAG: &str = "<!-- bugloop:converge";
/// How a clean loop review ends.
pub const CLEAN_MARK: &str = "→ clean";

enum LastAction {
    Fresh,
    Audited(Vec<Finding>),
    Fixed { before: String },
}

/// Connects a model string of `converge.auditors` (metered by the run's meter, so every auditor
/// spends from the same budget).
pub type Connect<'a> = &'a (dyn Fn(&str) -> Result<Arc<dyn Provider>, LlmError> + Send + Sync);

/// Runs the loop on the change of `change` (its conversation) from `base` (default: the merge
/// base with the default branch). `connect` gives the auditors configured with a model of their
/// own their provider.
pub async fn converge(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    base: Option<String>,
    connect: Connect<'_>,
) -> Result<ConvergeReport, ActError> {
    let git = env.git;
    let selection = match &base {
        Some(base) => Selection::Range {
            base: Some(base.clone()),
            head: None,
        },
        None => Selection::Branch,
    };
    let selected = git
        .select(&selection)
        .map_err(bugloop_forge::ForgeError::from)?;
    if selected.diff.is_empty() {
        return Err(ActError::Invalid(format!(
            "No upstream diff: {} has nothing to converge.",
            selected.description
        )));
    }
    let head_now = git.head().unwrap_or_default();
    // Earlier loop reviews, newest first: a clean one on this HEAD means there is nothing to do.
    let comments = env.forge.comments(change).await?;
    let mut loop_reviews: Vec<&bugloop_domain::thread::Comment> = comments
        .iter()
        .filter(|c| c.by_bugloop && c.body.starts_with(LOOP_TAG))
        .collect();
    loop_reviews
        .sort_by_key(|c| std::cmp::Reverse((c.created_at, c.id.parse::<u64>().unwrap_or(0))));
    let mut earlier_dirty = 0;
    for review in &loop_reviews {
        let clean = is_clean(&review.body);
        if clean {
            if review.body.contains(&format!("head={head_now} ")) && earlier_dirty == 0 {
                return Ok(ConvergeReport {
                    exit: Exit::Converged,
                    detail: "The last loop was clean on this HEAD: nothing to do.".to_owned(),
                    loops: 0,
                    start_commit: head_now.clone(),
                    final_commit: head_now,
                    files_changed: 0,
                    additions: 0,
                    deletions: 0,
                    log: Vec::new(),
                    landing: None,
                    earlier_dirty_loops: 0,
                    quarantined: Vec::new(),
                });
            }
            break;
        }
        earlier_dirty += 1;
    }

    let bench = Workbench::open(git, "converge")?;
    let tree = bench.git().clone();
    let merge_base = selected.base.clone();
    let cap = env.config().converge.max_loops;
    let mut loop_count: u32 = 0;
    let mut log = Vec::new();
    let mut quarantined = Vec::new();
    let mut last = LastAction::Fresh;
    let (exit, detail) = loop {
        match last {
            LastAction::Audited(ref findings) if findings.is_empty() => {
                break (Exit::Converged, String::new());
            }
            LastAction::Audited(ref findings) => {
                loop_count += 1;
                if loop_count > cap {
                    break (
                        Exit::CapReached,
                        format!(
                            "{} finding(s) still open after {cap} loops; review them with `bugloop review`.",
                            findings.len()
                        ),
                    );
                }
                let before = bench.head()?;
                let ids: Vec<String> = findings.iter().map(|f| f.id.as_str().to_owned()).collect();
                let prompt = fill(
                    FIX_PROMPT,
                    &[("findings", &findings_prompt(findings)), ("comment", "")],
                );
                let result = build(
                    env,
                    &bench,
                    BuildTask {
                        name: "converge-fix".to_owned(),
                        prompt,
                        commit_message: format!(
                            "fix: bugloop converge loop {loop_count} - resolve {}",
                            ids.join(", ")
                        ),
                    },
                )
                .await;
                let text = match &result.status {
                    BuildStatus::Committed { commit, files, .. } => {
                        let expected: Vec<&str> =
                            findings.iter().filter_map(|f| f.file.as_deref()).collect();
                        let outside: Vec<&String> = files
                            .iter()
                            .filter(|f| !expected.contains(&f.as_str()))
                            .collect();
                        if outside.is_empty() {
                            format!("{} -> {} (verified)", short(&before), short(commit))
                        } else {
                            format!(
                                "{} -> {} (unverified: commit touched unexpected files: {})",
                                short(&before),
                                short(commit),
                                outside
                                    .iter()
                                    .map(|s| s.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    }
                    BuildStatus::AgentFailed { error } => {
                        record(
                            &mut log,
                            env.progress.as_ref(),
                            LoopLine {
                                number: loop_count,
                                kind: LoopKind::Fix,
                                text: format!("error: {error}"),
                            },
                        );
                        break (Exit::Error, format!("loop {loop_count} fix: {error}"));
                    }
                    other => format!("no commit: {}", status_text(other)),
                };
                record(
                    &mut log,
                    env.progress.as_ref(),
                    LoopLine {
                        number: loop_count,
                        kind: LoopKind::Fix,
                        text,
                    },
                );
                last = LastAction::Fixed { before };
            }
            LastAction::Fixed { ref before } if bench.head()? == *before => {
                let ids: Vec<String> = log
                    .iter()
                    .rev()
                    .find(|l| l.kind == LoopKind::Audit)
                    .map(|l| vec![l.text.clone()])
                    .unwrap_or_default();
                break (
                    Exit::Stuck,
                    format!(
                        "The fix left HEAD unchanged; still open: {}",
                        ids.join("; ")
                    ),
                );
            }
            LastAction::Fresh | LastAction::Fixed { .. } => {
                if let Err(detail) = gate(env, &bench, loop_count + 1, &mut log).await? {
                    break (Exit::Error, detail);
                }
                loop_count += 1;
                if loop_count > cap {
                    break (
                        Exit::CapReached,
                        format!("{cap} loops used before the audit."),
                    );
                }
                let head = bench.head()?;
                let Audit {
                    findings,
                    quarantined: rejected,
                } = match audit(env, connect, &bench, &tree, change, &merge_base, loop_count).await
                {
                    Ok(audit) => audit,
                    Err(error) => {
                        record(
                            &mut log,
                            env.progress.as_ref(),
                            LoopLine {
                                number: loop_count,
                                kind: LoopKind::Audit,
                                text: format!("error: {error}"),
                            },
                        );
                        break (Exit::Error, format!("loop {loop_count} audit: {error}"));
                    }
                };
                let (p0, p1, p2) = counts(&findings);
                env.forge
                    .add_comment(
                        change,
                        &loop_body(loop_count, &head, &findings, &rejected),
                        None,
                    )
                    .await?;
                let aside = if rejected.is_empty() {
                    String::new()
                } else {
                    format!(" ({} quarantined)", rejected.len())
                };
                quarantined.extend(rejected);
                record(
                    &mut log,
                    env.progress.as_ref(),
                    LoopLine {
                        number: loop_count,
                        kind: LoopKind::Audit,
                        text: if findings.is_empty() {
                            format!("{p0}P0 {p1}P1 {p2}P2 (clean){aside}")
                        } else {
                            format!(
                                "{p0}P0 {p1}P1 {p2}P2: {}{aside}",
                                findings
                                    .iter()
                                    .map(|f| f.title.as_str())
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            )
                        },
                    },
                );
                last = LastAction::Audited(findings);
            }
        }
    };
    let final_commit = bench.head()?;
    let (files_changed, additions, deletions) =
        net_change(&tree, &bench.start_head, &final_commit)?;
    let landing = land(&bench, env.config(), "converge")?;
    let start_commit = bench.start_head.clone();
    drop(bench);
    Ok(ConvergeReport {
        exit,
        detail,
        // The count is raised before the cap is checked; report the loops that ran.
        loops: loop_count.min(cap),
        start_commit,
        final_commit,
        files_changed,
        additions,
        deletions,
        log,
        landing,
        earlier_dirty_loops: earlier_dirty,
        quarantined,
    })
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
        BuildStatus::Refused { reason } => reason.clone(),
        BuildStatus::AgentFailed { error } => error.clone(),
        BuildStatus::Committed { commit, .. } => format!("committed {}", short(commit)),
    }
}

#[cfg(test)]
mod tests;
