//! What a sandboxed command may see and write: the policy and the settings every part of the
//! sandbox reads (the view, the probe, the runner), in their own module so none of those depends
//! on another for them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::limits::Limits;

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
    /// The home directory, hidden (from `HOME` by default).
    pub home_dir: Option<PathBuf>,
    /// Directories under the home directory shown (read-only) although the home is hidden.
    pub visible_home_dirs: Vec<String>,
    /// More paths shown read-only.
    pub read_only_paths: Vec<PathBuf>,
    /// System paths shown read-only besides [`crate::SYSTEM_PATHS`] (toolchains elsewhere).
    pub system_paths: Vec<PathBuf>,
    /// The sanitized git directory shown as the workspace's `.git`; without one, a `.git` in the
    /// workspace is hidden.
    pub git: Option<GitMount>,
    pub limits: Limits,
    pub when_unconfined: WhenUnconfined,
    /// The workspace's disk use when the first command of these settings (and their clones) ran:
    /// growth is counted from there, so a task's commands share one budget.
    #[serde(skip)]
    pub workspace_baseline: std::sync::Arc<std::sync::OnceLock<u64>>,
}

impl SandboxSettings {
    pub fn new(workspace: impl Into<PathBuf>, policy: Policy) -> Self {
        SandboxSettings {
            workspace: workspace.into(),
            policy,
            timeout: Duration::from_secs(600),
            max_output_bytes: 1 << 20,
            env_allowlist: Vec::new(),
            home_dir: home(),
            visible_home_dirs: vec![".cargo".into(), ".rustup".into()],
            read_only_paths: Vec::new(),
            system_paths: Vec::new(),
            git: None,
            limits: Limits::default(),
            when_unconfined: WhenUnconfined::Refuse,
            workspace_baseline: std::sync::Arc::default(),
        }
    }
}

/// Where the repository's object store is shown inside the sandbox; the sanitized git directory's
/// `objects/info/alternates` points here.
pub const OBJECTS_MOUNT: &str = "/run/bugloop/git-objects";

/// A sanitized git directory shown at the workspace's `.git` (see `ShadowGit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GitMount {
    /// The sanitized git directory on the host.
    pub shadow: PathBuf,
    /// The repository's object directory on the host, shown read-only at [`OBJECTS_MOUNT`].
    pub objects: PathBuf,
    /// Object directories the repository itself borrows from (its own alternates).
    pub alternates: Vec<PathBuf>,
}

/// The home directory, when there is one worth hiding.
pub(crate) fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_dir() && h != Path::new("/"))
}
