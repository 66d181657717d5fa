//! A tool's own fix for one of its rules (`ruff check --fix --select RULE`, biome's safe fixes,
//! `cargo clippy --fix`), run in the sandbox on a task tree the caller owns. What the fix changed
//! is the caller's to read, verify and commit like any other change.

use std::path::Path;

use bugloop_sandbox::{CommandSpec, ExitState, Output, Policy, SandboxSettings};

use crate::built_in;
use crate::builtin::BuiltIn;
use crate::invocation::Invocation;
use crate::locate::Toolbox;
use crate::run::show_read_only;

/// One fix to apply.
#[derive(Debug, Clone)]
pub struct FixRequest<'a> {
    /// The task tree the fix writes in.
    pub workspace: &'a Path,
    /// The built-in analyzer's name.
    pub tool: &'a str,
    pub rule: &'a str,
    /// The files to fix, relative to the workspace.
    pub files: Vec<String>,
    /// The sandbox (workspace-write) the fix runs in.
    pub sandbox: SandboxSettings,
    pub toolbox: Toolbox,
}

/// Whether `tool` (a built-in's name) has fixes of its own.
pub fn has_fix(tool: &str) -> bool {
    built_in(tool).is_some_and(|b| b.fixes())
}

/// Runs the tool's fix for the rule; an error says why it could not run. A fix that runs and
/// changes nothing is not an error: the caller sees no change.
pub async fn apply_fix(request: FixRequest<'_>) -> Result<(), String> {
    let tool = built_in(request.tool)
        .ok_or_else(|| format!("{} is no built-in analyzer", request.tool))?;
    let fix = tool
        .fix
        .ok_or_else(|| format!("{} has no fixes of its own", tool.name))?;
    let rule = request.rule;
    let (output, settings) =
        run_tool(request, tool, Policy::WorkspaceWrite, |i| fix(rule, i)).await?;
    match output.exit {
        ExitState::Exited(0) => Ok(()),
        ExitState::TimedOut => Err(format!(
            "{}'s fix timed out after {} s",
            tool.name,
            settings.timeout.as_secs()
        )),
        _ => {
            let stderr = output.stderr_text();
            let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
            Err(format!(
                "{}'s fix failed: {}",
                tool.name,
                line.chars().take(300).collect::<String>()
            ))
        }
    }
}

/// Whether the tool, run again with bugloop's rule set on the fix's file, still reports the rule
/// within three lines of `line` (a fix that does not remove the hit does not count).
pub async fn still_reports(request: FixRequest<'_>, line: u32) -> Result<bool, String> {
    let tool = built_in(request.tool)
        .ok_or_else(|| format!("{} is no built-in analyzer", request.tool))?;
    let (workspace, files, rule) = (request.workspace, request.files.clone(), request.rule);
    let (output, _) = run_tool(request, tool, Policy::ReadOnly, tool.args).await?;
    let hits = tool
        .format
        .read(&output.stdout, &output.stderr, workspace, &files)?;
    Ok(hits
        .iter()
        .any(|hit| hit.rule == rule && files.contains(&hit.file) && hit.line.abs_diff(line) <= 3))
}

/// Runs `tool` with the arguments `args` makes for the request's files, in the request's sandbox
/// under `policy`, with bugloop's configuration files shown read-only.
async fn run_tool(
    request: FixRequest<'_>,
    tool: &BuiltIn,
    policy: Policy,
    args: impl FnOnce(Invocation<'_>) -> Vec<String>,
) -> Result<(Output, SandboxSettings), String> {
    let installed = request
        .toolbox
        .find(tool.program)
        .ok_or_else(|| format!("{} is not installed", tool.program))?;
    let config = crate::run::write_config_dir()?;
    let config_dir = config.path().display().to_string();
    let args = args(Invocation {
        files: &request.files,
        config_dir: &config_dir,
        workspace: request.workspace,
        // A fix's tool reads no configuration of the project's (tsc has no fix).
        edited: &[],
    });
    let mut spec = CommandSpec::new(installed.path.display().to_string(), args);
    spec.env = crate::run::tool_env(tool.name);
    let mut settings = request.sandbox;
    settings.policy = policy;
    let mut mounts = vec![config.path().to_path_buf()];
    mounts.extend(installed.mounts);
    show_read_only(&mut settings, mounts);
    let output = bugloop_sandbox::run(&settings, &spec)
        .await
        .map_err(|e| e.to_string())?;
    Ok((output, settings))
}
