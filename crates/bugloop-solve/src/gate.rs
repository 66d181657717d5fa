//! The ready-for-review gate: no unresolved thread (the caller checked), no review asking for
//! changes, every check on the head green, the test commands passed on the head, and the change
//! under `solve.max_diff_lines`. Passed: the draft is marked ready (READY). Checks still running,
//! or a reviewer who asked for changes and has not reviewed again since: wait (their decision is
//! theirs, and the round answered their threads). Anything else: escalated with every reason.

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{ChangeRequest, Check};
use bugloop_git::short;

use bugloop_loops::build::{binary_changes, net_change, run_commands};

use super::detail::ReviewedHead;
use super::{Flow, Run, SolveError};

pub(super) async fn decide(
    run: &mut Run<'_, '_>,
    request: &ChangeRequest,
) -> Result<Flow, SolveError> {
    let head = super::review::draft_head(run, request).await?;
    let mut failed = Vec::new();
    let changes_requested = run.tracker.changes_requested(request.number).await?;
    let checks = run.tracker.checks(&head).await?;
    let pending: Vec<&str> = checks
        .iter()
        .filter(|c| c.passed.is_none())
        .map(|c| c.name.as_str())
        .collect();
    failed.extend(
        failed_checks(&checks)
            .into_iter()
            .map(|name| format!("the check {name} failed")),
    );
    if let Some(failing) = failing_test(run, &head).await? {
        failed.push(failing);
    }
    let lines = check_size(run, &head, &mut failed)?;
    if !failed.is_empty() {
        return run
            .escalate(&format!("the ready gate failed: {}", failed.join("; ")))
            .await;
    }
    if changes_requested {
        return Ok(Flow::Stop(format!(
            "waiting for a reviewer who requested changes on #{} to review {} again; its \
             threads are answered",
            request.number,
            short(&head)
        )));
    }
    if !pending.is_empty() {
        return Ok(Flow::Stop(format!(
            "waiting for checks on {}: {}",
            short(&head),
            pending.join(", ")
        )));
    }
    run.tracker.mark_ready(request.number).await?;
    run.step(
        SolveState::Ready,
        &format!(
            "the gate passed on {}: no open threads, tests and checks green, {lines} lines changed; #{} is ready for review",
            short(&head),
            request.number
        ),
        &ReviewedHead { head: head.clone() },
    )
    .await?;
    Ok(Flow::Next)
}

/// The names of the checks that failed.
pub(super) fn failed_checks(checks: &[Check]) -> Vec<&str> {
    checks
        .iter()
        .filter(|c| c.passed == Some(false))
        .map(|c| c.name.as_str())
        .collect()
}

/// The test commands, on the head as it is (a push bugloop did not make is tested here): what
/// failed, if one did. Not run again on the head bugloop verified.
async fn failing_test(run: &Run<'_, '_>, head: &str) -> Result<Option<String>, SolveError> {
    if run.record.verified_head().as_deref() != Some(head) {
        let bench = bugloop_loops::build::Workbench::at(run.env.git, head, "gate")?;
        let runs = run_commands(
            run.env.config(),
            bench.path(),
            Some(bench.git_mount()),
            &run.env.settings.verify_commands,
        )
        .await?;
        if let Some(failing) = runs.iter().find(|r| !r.passed) {
            return Ok(Some(format!(
                "`{}` fails on {}",
                failing.command,
                short(head)
            )));
        }
    }
    Ok(None)
}

/// The change's size since solving started: binary files, or more lines than
/// `solve.max_diff_lines`, fail the gate (added to `failed`). Returns the lines changed.
fn check_size(run: &Run<'_, '_>, head: &str, failed: &mut Vec<String>) -> Result<u64, SolveError> {
    let start = run.record.solving().and_then(|s| {
        run.env
            .git
            .run(&["merge-base", &s.start, head])
            .ok()
            .filter(|base| !base.is_empty())
    });
    let limit = run.env.config().solve.max_diff_lines;
    let mut lines = 0;
    match start {
        // Without the commit it started from, the change's size cannot be told.
        None => failed.push(format!(
            "the head {} has no common history with where solving started",
            short(head)
        )),
        Some(start) => {
            let binary = binary_changes(run.env.git, &start, head)?;
            if !binary.is_empty() {
                failed.push(format!(
                    "the change has binary files: {}",
                    binary.join(", ")
                ));
            }
            let (_, added, removed) = net_change(run.env.git, &start, head)?;
            lines = (added + removed) as u64;
            if lines > limit {
                failed.push(format!(
                    "the change is {lines} lines, over solve.max_diff_lines ({limit})"
                ));
            }
        }
    }
    Ok(lines)
}
