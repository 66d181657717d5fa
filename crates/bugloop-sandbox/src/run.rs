//! Running one command under a policy.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::SandboxError;
use crate::probe::probe;

/// What a command may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Nothing but its private `/tmp`.
    ReadOnly,
    /// The workspace and its private `/tmp`.
    WorkspaceWrite,
}

/// What to do where the kernel cannot confine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenUnconfined {
    Refuse,
    /// Run with only the environment, timeout and output limits, and say so loudly.
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxSettings {
    /// The task's worktree: the working directory and the only writable place.
    pub workspace: PathBuf,
    pub policy: Policy,
    pub timeout: Duration,
    /// Bytes kept of each of stdout and stderr; the rest is counted and dropped.
    pub max_output_bytes: usize,
    /// Environment variables passed through besides PATH, LANG, LC_ALL and HOME.
    pub env_allowlist: Vec<String>,
    /// Directories under the home directory shown (read-only) although the home is hidden.
    pub visible_home_dirs: Vec<String>,
    /// More paths shown read-only (for example the repository's git directory, which a worktree
    /// needs and which may live under the hidden home).
    pub read_only_paths: Vec<PathBuf>,
    pub when_unconfined: WhenUnconfined,
}

impl SandboxSettings {
    pub fn new(workspace: impl Into<PathBuf>, policy: Policy) -> Self {
        SandboxSettings {
            workspace: workspace.into(),
            policy,
            timeout: Duration::from_secs(600),
            max_output_bytes: 1 << 20,
            env_allowlist: Vec::new(),
            visible_home_dirs: vec![".cargo".into(), ".rustup".into()],
            read_only_paths: Vec::new(),
            when_unconfined: WhenUnconfined::Refuse,
        }
    }
}

/// A command: program and arguments, never a shell line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CommandSpec {
    pub program: String,
    pub args: Vec<String>,
    /// Working directory relative to the workspace.
    pub cwd: Option<PathBuf>,
    pub stdin: Option<Vec<u8>>,
    /// Variables the runner sets explicitly (never copied from bugloop's own environment).
    pub env: Vec<(String, String)>,
}

impl CommandSpec {
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        CommandSpec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            ..CommandSpec::default()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confinement {
    Bubblewrap,
    Unconfined,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "value")]
pub enum ExitState {
    Exited(i32),
    Signaled(i32),
    /// Killed, with its whole process group, at the timeout.
    TimedOut,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Output {
    pub exit: ExitState,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes written in all, including those dropped over the cap.
    pub stdout_total: u64,
    pub stderr_total: u64,
    pub duration: Duration,
    pub confinement: Confinement,
}

impl Output {
    pub fn success(&self) -> bool {
        self.exit == ExitState::Exited(0)
    }

    /// Standard output as text, with a note when it was cut.
    pub fn stdout_text(&self) -> String {
        text(&self.stdout, self.stdout_total)
    }

    pub fn stderr_text(&self) -> String {
        text(&self.stderr, self.stderr_total)
    }
}

fn text(kept: &[u8], total: u64) -> String {
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if total > kept.len() as u64 {
        text.push_str(&format!(
            "\n[... {} more bytes not shown ...]",
            total - kept.len() as u64
        ));
    }
    text
}

/// Environment every command gets: a fixed PATH-like set from bugloop's own environment plus the
/// allowlist. Never tokens or keys unless a user put them on the allowlist.
fn environment(settings: &SandboxSettings, spec: &CommandSpec) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    for name in ["PATH", "LANG", "LC_ALL", "HOME"]
        .iter()
        .map(|n| (*n).to_owned())
        .chain(settings.env_allowlist.iter().cloned())
    {
        if let Ok(value) = std::env::var(&name)
            && !env.iter().any(|(n, _)| *n == name)
        {
            env.push((name, value));
        }
    }
    env.push(("TMPDIR".into(), "/tmp".into()));
    env.push(("TERM".into(), "dumb".into()));
    env.push(("NO_COLOR".into(), "1".into()));
    for (name, value) in &spec.env {
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value.clone()));
    }
    env
}

pub(crate) fn bwrap_arguments(
    settings: &SandboxSettings,
    workspace: &Path,
    cwd: &Path,
) -> Vec<String> {
    let path = |p: &Path| p.display().to_string();
    let mut args: Vec<String> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    // Hide the home directory (keys, tokens, shell history); show the toolchains again read-only.
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_dir() && h != Path::new("/"));
    if let Some(home) = &home {
        args.extend(["--tmpfs".into(), path(home)]);
        for dir in &settings.visible_home_dirs {
            let shown = home.join(dir);
            if shown.exists() {
                args.extend(["--ro-bind".into(), path(&shown), path(&shown)]);
            }
        }
    }
    for shown in &settings.read_only_paths {
        if shown.exists() {
            args.extend(["--ro-bind".into(), path(shown), path(shown)]);
        }
    }
    let bind = match settings.policy {
        Policy::WorkspaceWrite => "--bind",
        Policy::ReadOnly => "--ro-bind",
    };
    args.extend([bind.into(), path(workspace), path(workspace)]);
    if let Some(home) = &home {
        args.extend(["--remount-ro".into(), path(home)]);
    }
    args.extend(
        [
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]
        .iter()
        .map(|s| (*s).to_owned()),
    );
    args.extend(["--chdir".into(), path(cwd)]);
    args
}

/// Runs a command in the sandbox and collects its output.
pub async fn run(settings: &SandboxSettings, spec: &CommandSpec) -> Result<Output, SandboxError> {
    let workspace = settings
        .workspace
        .canonicalize()
        .map_err(|_| SandboxError::NoWorkspace(settings.workspace.display().to_string()))?;
    let cwd = match &spec.cwd {
        Some(relative) => workspace.join(relative),
        None => workspace.clone(),
    };
    let capabilities = probe();
    let env = environment(settings, spec);
    let (mut command, confinement) = match (&capabilities.bwrap, capabilities.can_confine()) {
        (Some(bwrap), true) => {
            let mut command = tokio::process::Command::new(bwrap);
            command.args(bwrap_arguments(settings, &workspace, &cwd));
            for (name, value) in &env {
                command.args(["--setenv", name, value]);
            }
            command.arg("--").arg(&spec.program).args(&spec.args);
            command.env_clear();
            (command, Confinement::Bubblewrap)
        }
        _ => {
            let reason = capabilities
                .problem
                .clone()
                .unwrap_or_else(|| "unknown".into());
            if settings.when_unconfined == WhenUnconfined::Refuse {
                return Err(SandboxError::Unconfined(reason));
            }
            tracing::warn!(%reason, program = %spec.program, "running a command UNCONFINED: no network or write isolation");
            let mut command = tokio::process::Command::new(&spec.program);
            command
                .args(&spec.args)
                .current_dir(&cwd)
                .env_clear()
                .envs(env.iter().map(|(n, v)| (n, v)));
            (command, Confinement::Unconfined)
        }
    };
    command
        .process_group(0)
        .kill_on_drop(true)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| SandboxError::Spawn {
        program: spec.program.clone(),
        message: e.to_string(),
    })?;
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    if let (Some(input), Some(mut stdin)) = (&spec.stdin, child.stdin.take()) {
        let input = input.clone();
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let cap = settings.max_output_bytes;
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));
    let exit = match tokio::time::timeout(settings.timeout, child.wait()).await {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(code), _) => ExitState::Exited(code),
                (None, Some(signal)) => ExitState::Signaled(signal),
                (None, None) => ExitState::Exited(-1),
            }
        }
        Ok(Err(error)) => {
            return Err(SandboxError::Io(format!(
                "waiting for {}: {error}",
                spec.program
            )));
        }
        Err(_) => ExitState::TimedOut,
    };
    // Whatever happened, nothing of the command's process group may outlive it.
    if let Some(group) = group {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(group),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait().await;
    let collect = |handle: Option<tokio::task::JoinHandle<(Vec<u8>, u64)>>| async move {
        match handle {
            // A process that escaped the group could hold the pipe open: do not wait for it forever.
            Some(handle) => match tokio::time::timeout(Duration::from_secs(2), handle).await {
                Ok(Ok(read)) => read,
                _ => (Vec::new(), 0),
            },
            None => (Vec::new(), 0),
        }
    };
    let (stdout, stdout_total) = collect(stdout).await;
    let (stderr, stderr_total) = collect(stderr).await;
    Ok(Output {
        exit,
        stdout,
        stderr,
        stdout_total,
        stderr_total,
        duration: started.elapsed(),
        confinement,
    })
}

/// Reads everything, keeping the first `cap` bytes.
async fn read_capped(mut reader: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n as u64;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    (kept, total)
}
