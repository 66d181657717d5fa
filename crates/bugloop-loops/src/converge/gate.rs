//! The gate before an audit: the configured commands (formatters, linters) must pass, with at
//! most `max_fix_rounds` gate-fix rounds by a Build agent.

use bugloop_report::build::BuildStatus;
use bugloop_report::converge::{LoopKind, LoopLine};

use crate::act::ActError;
use crate::build::{BuildTask, Workbench, build, run_commands};
use crate::env::LoopEnv;
use crate::prompt::fill;

use super::{GATE_FIX_PROMPT, record};

/// The gate before an audit: the configured commands must pass, with at most `max_fix_rounds`
/// gate-fix rounds. `Ok(Err(detail))` stops the loop with an error.
pub(super) async fn gate(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    number: u32,
    log: &mut Vec<LoopLine>,
) -> Result<Result<(), String>, ActError> {
    let commands = &env.settings.gate_commands;
    if commands.is_empty() {
        return Ok(Ok(()));
    }
    let mut failed_rounds = 0;
    loop {
        let runs = run_commands(
            env.config(),
            bench.path(),
            Some(bench.git_mount()),
            commands,
        )
        .await?;
        // What the gate wrote (bytecode, a formatter's rewrite, anything the branch's code
        // run by a linter made) is nobody's edit: the tree goes back to its HEAD before an
        // agent builds on it, so none of it is blamed on a fix or committed with one.
        if !bench.changes()?.is_empty() {
            bench.discard()?;
        }
        let failures: Vec<_> = runs.iter().filter(|r| !r.passed).collect();
        if failures.is_empty() {
            return Ok(Ok(()));
        }
        failed_rounds += 1;
        let names: Vec<&str> = failures.iter().map(|f| f.command.as_str()).collect();
        record(
            log,
            env.progress.as_ref(),
            LoopLine {
                number,
                kind: LoopKind::Gate,
                text: format!("failed: {} (round {failed_rounds})", names.join(", ")),
            },
        );
        if failed_rounds > env.config().gate.max_fix_rounds {
            // What each command said, its last lines: why the gate failed, not only which.
            let said: String = failures
                .iter()
                .map(|f| {
                    let tail = crate::context::last_lines(&bench.relative(&f.output), 20);
                    let (tail, _) = crate::context::cut(&tail, 4_000);
                    format!("\n`{}` said:\n{}", f.command, tail.trim_end())
                })
                .collect();
            return Ok(Err(format!(
                "the gate failed before audit {number} after {} fix rounds: {}{said}",
                env.config().gate.max_fix_rounds,
                names.join(", ")
            )));
        }
        let text: String = failures
            .iter()
            .map(|f| format!("### `{}`\n\n```\n{}\n```\n", f.command, f.output.trim_end()))
            .collect();
        let result = build(
            env,
            bench,
            BuildTask {
                name: "gate-fix".to_owned(),
                prompt: fill(GATE_FIX_PROMPT, &[("failures", &text)]),
                commit_message: "style: bugloop gate fixes".to_owned(),
                keep_failed: false,
                proofs: Vec::new(),
                tool_fixes: Vec::new(),
            },
        )
        .await;
        if let BuildStatus::AgentFailed { error } = &result.status {
            return Ok(Err(format!(
                "the gate-fix agent failed before audit {number}: {error}"
            )));
        }
    }
}
