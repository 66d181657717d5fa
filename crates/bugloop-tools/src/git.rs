//! Read-only git: diff, show, log, blame; run in the sandbox with the read-only policy.

use async_trait::async_trait;
use bugloop_sandbox::{CommandSpec, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{ToolContext, ToolError, TypedTool};

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitCommand {
    Diff,
    Show,
    Log,
    Blame,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GitParams {
    pub command: GitCommand,
    /// Arguments, e.g. `["HEAD~1", "--", "src/lib.rs"]` or `["--oneline", "-n", "20"]`.
    #[serde(default)]
    pub args: Vec<String>,
}

pub struct Git;

/// Options that make these commands write files or run programs.
const REFUSED: &[&str] = &[
    "--output",
    "--ext-diff",
    "--textconv",
    "--exec",
    "--upload-pack",
    "--contents",
];

#[async_trait]
impl TypedTool for Git {
    type Params = GitParams;
    const NAME: &'static str = "git";
    const DESCRIPTION: &'static str =
        "Read the repository's history: git diff, show, log or blame with arguments (read-only).";

    async fn run(&self, context: &ToolContext, params: GitParams) -> Result<String, ToolError> {
        for arg in &params.args {
            if REFUSED
                .iter()
                .any(|r| arg == r || arg.starts_with(&format!("{r}=")))
            {
                return Err(ToolError::Model(format!(
                    "git option {arg:?} is not allowed here"
                )));
            }
            if arg.contains('\0') {
                return Err(ToolError::Model(
                    "git arguments may not contain NUL bytes".into(),
                ));
            }
        }
        let sub = match params.command {
            GitCommand::Diff => "diff",
            GitCommand::Show => "show",
            GitCommand::Log => "log",
            GitCommand::Blame => "blame",
        };
        let mut args: Vec<String> = [
            "--no-pager",
            "-c",
            "core.pager=cat",
            "-c",
            "color.ui=never",
            "-c",
            "diff.external=",
            sub,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if !matches!(params.command, GitCommand::Blame) {
            args.push("--no-ext-diff".into());
        }
        args.extend(params.args);
        let mut settings = context.sandbox.clone();
        settings.policy = Policy::ReadOnly;
        let output = bugloop_sandbox::run(&settings, &CommandSpec::new("git", args))
            .await
            .map_err(|e| ToolError::Abort(format!("cannot run git: {e}")))?;
        if !output.success() {
            return Err(ToolError::Model(format!(
                "git {sub} failed: {}",
                output.stderr_text().trim()
            )));
        }
        let mut text = output.stdout_text();
        if text.len() > context.limits.max_read_bytes {
            let mut cut = context.limits.max_read_bytes;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[... output cut; narrow the command ...]");
        }
        if text.trim().is_empty() {
            text = format!("(git {sub} printed nothing)");
        }
        Ok(text)
    }
}
