//! Running one command under a policy.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::SandboxError;
use crate::limits::{Cgroups, LimitHit, Limits, disk_use, watch_workspace};
use crate::probe::{Capabilities, find_in_path, probe};
use crate::stage::{Stage, stage_as_root};
use crate::view::bwrap_arguments;

pub use crate::settings::{Policy, SandboxSettings, WhenUnconfined};

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
    /// Limits the command ran into.
    pub limits_hit: Vec<LimitHit>,
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
    if let Some(home) = &settings.home_dir {
        env.push(("HOME".into(), home.display().to_string()));
    }
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
    // Caches go to the private /tmp: the home directory is read-only, and tools that cache by
    // default (go's build cache, pip) fail rather than run without one.
    if !env.iter().any(|(name, _)| name == "XDG_CACHE_HOME") {
        env.push(("XDG_CACHE_HOME".into(), "/tmp/.cache".into()));
    }
    env.push(("TERM".into(), "dumb".into()));
    env.push(("NO_COLOR".into(), "1".into()));
    for (name, value) in &spec.env {
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value.clone()));
    }
    env
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
    let confined = capabilities.can_confine();
    if !confined {
        allow_unconfined(settings, spec, capabilities)?;
    }
    let cgroups = Cgroups::create(&settings.limits);
    let CommandLine {
        argv,
        filter,
        stage,
        confinement,
    } = command_line(
        settings,
        spec,
        capabilities,
        confined,
        &cgroups,
        &workspace,
        &cwd,
    )?;
    let mut command = process(&argv, &env, spec, confinement, &cwd);
    let started = Instant::now();
    let workspace_at_start = match settings.policy {
        Policy::WorkspaceWrite => Some(
            *settings
                .workspace_baseline
                .get_or_init(|| disk_use(&workspace)),
        ),
        Policy::ReadOnly => None,
    };
    let spawned = command.spawn();
    drop(filter);
    // The stage is only needed until the command's namespace has its mounts; it stays until the
    // command ends, which is simpler than knowing when that was.
    let _stage = stage;
    let mut child = spawned.map_err(|e| SandboxError::Spawn {
        program: spec.program.clone(),
        message: e.to_string(),
    })?;
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    let (stdout, stderr) = connect_pipes(&mut child, spec, settings.max_output_bytes);
    let (exit, mut limits_hit) =
        wait_for_exit(&mut child, settings, spec, &workspace, workspace_at_start).await?;
    // Whatever happened, nothing of the command's process group may outlive it.
    if let Some(group) = group {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(group),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait().await;
    let (stdout, stdout_total) = collect_output(stdout).await;
    let (stderr, stderr_total) = collect_output(stderr).await;
    limits_hit.extend(limits_from(settings, exit, &stderr, &cgroups));
    Ok(Output {
        exit,
        stdout,
        stderr,
        stdout_total,
        stderr_total,
        duration: started.elapsed(),
        confinement,
        limits_hit,
    })
}

/// Where the kernel cannot confine commands, the configured choice: refuse, or warn and run
/// with only the environment, timeout and output limits.
fn allow_unconfined(
    settings: &SandboxSettings,
    spec: &CommandSpec,
    capabilities: &Capabilities,
) -> Result<(), SandboxError> {
    let reason = capabilities
        .problem
        .clone()
        .unwrap_or_else(|| "unknown".into());
    if settings.when_unconfined == WhenUnconfined::Refuse {
        return Err(SandboxError::Unconfined(reason));
    }
    // Run as bugloop's own user, the command could read this process's environment (its tokens
    // and keys) and memory in /proc: not once this process may not be dumped. (A command run as
    // root reads anything.)
    nix::sys::prctl::set_dumpable(false).map_err(|error| {
        SandboxError::Unconfined(format!(
            "{reason}; and bugloop could not hide its own memory from the command ({error})"
        ))
    })?;
    tracing::warn!(%reason, program = %spec.program, "running a command UNCONFINED: no network or write isolation");
    Ok(())
}

/// The full command line of one run, and what must live while it starts.
#[derive(Debug)]
struct CommandLine {
    argv: Vec<OsString>,
    /// The seccomp filter's descriptor lives until bubblewrap has started (it reads it then).
    filter: Option<OwnedFd>,
    /// The mount points of a root-run command's sources.
    stage: Option<Stage>,
    confinement: Confinement,
}

/// The command line: bubblewrap's part when the command is confined, the resource limits, then
/// the command itself. As root, this stages the sources and hands the workspace over.
fn command_line(
    settings: &SandboxSettings,
    spec: &CommandSpec,
    capabilities: &Capabilities,
    confined: bool,
    cgroups: &Cgroups,
    workspace: &Path,
    cwd: &Path,
) -> Result<CommandLine, SandboxError> {
    let mut line = CommandLine {
        argv: Vec::new(),
        filter: None,
        stage: None,
        confinement: Confinement::Unconfined,
    };
    if let (Some(bwrap), true) = (&capabilities.bwrap, confined) {
        confine(&mut line, settings, bwrap, cgroups, workspace, cwd)?;
    }
    push_resource_limits(&mut line.argv, &settings.limits);
    line.argv.push(spec.program.clone().into());
    line.argv.extend(spec.args.iter().map(Into::into));
    Ok(line)
}

/// Puts bubblewrap in front of the command (behind the staging namespace and the switch to the
/// sandbox's user when bugloop runs as root), with the seccomp filter when there is one.
fn confine(
    line: &mut CommandLine,
    settings: &SandboxSettings,
    bwrap: &Path,
    cgroups: &Cgroups,
    workspace: &Path,
    cwd: &Path,
) -> Result<(), SandboxError> {
    let arguments = if nix::unistd::Uid::effective().is_root() {
        let (staging, built) = stage_as_root(&mut line.argv, settings, cgroups, workspace, cwd)?;
        line.stage = Some(staging);
        built
    } else {
        bwrap_arguments(settings, workspace, cwd, None)
    };
    line.argv.push(bwrap.into());
    line.argv.extend(arguments.args.into_iter().map(Into::into));
    match crate::seccomp::program() {
        Ok(program) => {
            let fd = crate::seccomp::descriptor(program)?;
            line.argv.push("--seccomp".into());
            line.argv
                .push(std::os::fd::AsRawFd::as_raw_fd(&fd).to_string().into());
            line.filter = Some(fd);
        }
        Err(reason) => tracing::warn!(%reason, "commands run without a seccomp filter"),
    }
    line.argv.push("--".into());
    line.confinement = Confinement::Bubblewrap;
    Ok(())
}

/// Resource limits are set inside the sandbox's user namespace, where the kernel counts only the
/// sandbox's own processes (outside, every process of the same user on the host counts).
fn push_resource_limits(argv: &mut Vec<OsString>, limits: &Limits) {
    use nix::sys::resource::{Resource, getrlimit};
    // No more than this process may have: prlimit cannot raise a hard limit, and would fail
    // every command (`sandbox.max_processes: 100000` on a host whose limit is lower).
    let at_most =
        |resource, wanted: u64| getrlimit(resource).map_or(wanted, |(_, hard)| wanted.min(hard));
    if let Some(prlimit) = find_in_path("prlimit") {
        let processes = at_most(Resource::RLIMIT_NPROC, limits.max_processes);
        let file_bytes = at_most(Resource::RLIMIT_FSIZE, limits.max_file_bytes);
        argv.push(prlimit.into());
        argv.push(format!("--nproc={processes}:{processes}").into());
        argv.push(format!("--fsize={file_bytes}:{file_bytes}").into());
        argv.push("--".into());
    }
}

/// The process to spawn: its own process group, killed on drop, piped output. The environment
/// goes through the process environment, not the command line (which every local user can read
/// in /proc).
fn process(
    argv: &[OsString],
    env: &[(String, String)],
    spec: &CommandSpec,
    confinement: Confinement,
    cwd: &Path,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_clear()
        .envs(env.iter().map(|(n, v)| (n, v)));
    if confinement == Confinement::Unconfined {
        command.current_dir(cwd);
    } else {
        command.current_dir("/");
    }
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
    command
}

/// A task reading one output stream: what it kept and how many bytes there were.
type OutputReader = tokio::task::JoinHandle<(Vec<u8>, u64)>;

/// Feeds the command its input and starts reading its standard output and error, each capped
/// at `cap` bytes, so that a full pipe never blocks it.
fn connect_pipes(
    child: &mut tokio::process::Child,
    spec: &CommandSpec,
    cap: usize,
) -> (Option<OutputReader>, Option<OutputReader>) {
    if let (Some(input), Some(mut stdin)) = (&spec.stdin, child.stdin.take()) {
        let input = input.clone();
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let stdout = child
        .stdout
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));
    let stderr = child
        .stderr
        .take()
        .map(|s| tokio::spawn(read_capped(s, cap)));
    (stdout, stderr)
}

/// How the command ended: its own exit, the timeout, or the workspace growing past its limit
/// (with that limit among those hit). The caller then kills the whole process group.
async fn wait_for_exit(
    child: &mut tokio::process::Child,
    settings: &SandboxSettings,
    spec: &CommandSpec,
    workspace: &Path,
    workspace_at_start: Option<u64>,
) -> Result<(ExitState, Vec<LimitHit>), SandboxError> {
    let watchdog = async {
        match workspace_at_start {
            Some(start) => {
                watch_workspace(
                    workspace.to_path_buf(),
                    start,
                    settings.limits.workspace_growth_bytes,
                )
                .await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    let mut limits_hit = Vec::new();
    let exit = tokio::select! {
        waited = tokio::time::timeout(settings.timeout, child.wait()) => match waited {
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
        },
        () = watchdog => {
            limits_hit.push(LimitHit::Workspace {
                max_growth_bytes: settings.limits.workspace_growth_bytes,
            });
            ExitState::Signaled(nix::sys::signal::Signal::SIGKILL as i32)
        }
    };
    Ok((exit, limits_hit))
}

/// What an output reader read, or nothing when it fails or does not finish in time: a process
/// that escaped the group could hold the pipe open, so it is not waited for forever.
async fn collect_output(handle: Option<OutputReader>) -> (Vec<u8>, u64) {
    match handle {
        Some(handle) => match tokio::time::timeout(Duration::from_secs(2), handle).await {
            Ok(Ok(read)) => read,
            _ => (Vec::new(), 0),
        },
        None => (Vec::new(), 0),
    }
}

/// The limits a finished command ran into, from what it left: the cgroup's count of refused
/// forks, `SIGXFSZ`, and the errors programs print when a limit refuses them.
fn limits_from(
    settings: &SandboxSettings,
    exit: ExitState,
    stderr: &[u8],
    cgroups: &Cgroups,
) -> Vec<LimitHit> {
    let limits = &settings.limits;
    let errors = String::from_utf8_lossy(stderr);
    let mut hit = Vec::new();
    if cgroups.memory_hit() {
        hit.push(LimitHit::Memory {
            max_bytes: limits.max_memory_bytes,
        });
    }
    if cgroups.pids_hit()
        || (errors.contains("fork") && errors.contains("Resource temporarily unavailable"))
    {
        hit.push(LimitHit::Processes {
            max: limits.max_processes,
        });
    }
    if exit == ExitState::Signaled(nix::sys::signal::Signal::SIGXFSZ as i32)
        || errors.contains("File too large")
        || errors.contains("File size limit exceeded")
    {
        hit.push(LimitHit::FileSize {
            max_bytes: limits.max_file_bytes,
        });
    }
    // The host's disks are not the sandbox's to fill but through the workspace (watched above), so
    // a full device inside is the private /tmp.
    if errors.contains("No space left on device") {
        hit.push(LimitHit::Tmp {
            max_bytes: limits.tmp_bytes,
        });
    }
    hit
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
