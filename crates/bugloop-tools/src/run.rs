//! `run`: a command in the sandbox (workspace-write policy), for Build runs.

use std::time::Duration;

use async_trait::async_trait;
use bugloop_sandbox::{CommandSpec, ExitState, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{ToolContext, ToolError, TypedTool};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct RunParams {
    /// The program, e.g. `cargo` (no shell line: use args).
    #[schemars(pattern(r"\S"))]
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Working directory relative to the repository root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Shorter than the configured limit if given.
    #[serde(default)]
    pub timeout_seconds: Option<u64>,
}

pub struct Run;

#[async_trait]
impl TypedTool for Run {
    type Params = RunParams;
    crate::tool_named!("run");

    async fn run(&self, context: &ToolContext, params: RunParams) -> Result<String, ToolError> {
        let mut settings = context.sandbox.clone();
        settings.policy = Policy::WorkspaceWrite;
        if let Some(seconds) = params.timeout_seconds {
            settings.timeout = settings.timeout.min(Duration::from_secs(seconds.max(1)));
        }
        let mut spec = CommandSpec::new(params.program.clone(), params.args.clone());
        if let Some(cwd) = &params.cwd {
            let resolved = context.workspace.resolve(cwd)?;
            spec.cwd = Some(
                resolved
                    .strip_prefix(context.workspace.root())
                    .unwrap_or(&resolved)
                    .to_path_buf(),
            );
        }
        let output = bugloop_sandbox::run(&settings, &spec)
            .await
            .map_err(|e| match e {
                bugloop_sandbox::SandboxError::Unconfined(_)
                | bugloop_sandbox::SandboxError::NoWorkspace(_) => ToolError::Abort(e.to_string()),
                other => ToolError::Model(other.to_string()),
            })?;
        let status = match output.exit {
            ExitState::Exited(code) => format!("exit code {code}"),
            ExitState::Signaled(signal) => format!("killed by signal {signal}"),
            ExitState::TimedOut => format!(
                "timed out after {}s and was killed",
                settings.timeout.as_secs()
            ),
        };
        let cap = context.limits.max_read_bytes / 2;
        let clipped = |text: String| {
            if text.len() <= cap {
                return text;
            }
            // Keep the end: errors are usually last.
            let mut start = text.len() - cap;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            format!("[... {} bytes cut ...]\n{}", start, &text[start..])
        };
        Ok(format!(
            "{status}\n--- stdout\n{}\n--- stderr\n{}",
            clipped(output.stdout_text()),
            clipped(output.stderr_text())
        ))
    }
}
