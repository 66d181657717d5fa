//! The sandbox every process an agent or a verify step starts runs in, and the git worktrees tasks
//! work in.
//!
//! Confinement is bubblewrap (`bwrap`): the whole file system read-only, the home directory hidden
//! (toolchain directories shown again read-only), the workspace writable (or read-only under the
//! read-only policy), a private `/tmp`, a new network namespace (no network, not even the host's
//! loopback), a new PID namespace that dies with its parent, and an environment reduced to an
//! allowlist. Every process runs in its own process group, is killed as a group at the timeout, and
//! has its output capped. Where `bwrap` is missing or the kernel refuses namespaces, [`probe`] says
//! so and the configured [`WhenUnconfined`] decides between refusing and running with only the
//! environment, timeout and output limits.

mod probe;
mod run;
mod worktree;

pub use probe::{Capabilities, probe};
pub use run::{
    CommandSpec, Confinement, ExitState, Output, Policy, SandboxSettings, WhenUnconfined, run,
};
pub use worktree::Worktree;

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "the kernel cannot confine commands here ({0}); refusing to run them unconfined (set sandbox.when_unconfined: warn to allow it)"
    )]
    Unconfined(String),
    #[error("cannot start {program:?}: {message}")]
    Spawn { program: String, message: String },
    #[error("the workspace {0} does not exist")]
    NoWorkspace(String),
    #[error("git {args}: {message}")]
    Git { args: String, message: String },
    #[error("{0}")]
    Io(String),
}
