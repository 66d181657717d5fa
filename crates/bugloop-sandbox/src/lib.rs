//! The sandbox every process an agent or a verify step starts runs in, and the task trees tasks
//! work in.
//!
//! Confinement is bubblewrap (`bwrap`): a user namespace in which the command is an unprivileged
//! user without capabilities (also when bugloop runs as root), a minimal read-only view of the
//! system (see `view`), the home directory hidden (configured directories shown again read-only,
//! credentials masked), the workspace writable (or read-only under the read-only policy) with a
//! sanitized `.git`, a private `/tmp` of a fixed size, a new network namespace (no network, not
//! even the host's loopback), a new PID namespace that dies with its parent, limits on processes,
//! file size and workspace growth (see `limits`), and an environment reduced to an allowlist. Every process runs in its own process group, is killed as a group at the timeout, and
//! has its output capped. Where `bwrap` is missing or the kernel refuses namespaces, [`probe`] says
//! so and the configured [`WhenUnconfined`] decides between refusing and running with only the
//! environment, timeout and output limits.
//!
//! **Invariant:** nothing a task's code, tests or agent does reaches the host, whether bugloop runs
//! as root or not (bubblewrap, uid 65534 in a user namespace, no capabilities, seccomp, a minimal
//! read-only view, a shadow `.git`, limits, a rebuilt environment). `probe()` and `protections()`
//! say what is in force (`bugloop doctor`). `/etc` is one filtered copy bound whole (`etc.rs`, made
//! by a walk that never follows a link); `stage.rs` and `reach.rs` are the root path (what the
//! sandbox's user can open itself, what must be staged).

mod etc;
mod limits;
pub mod owner;
mod probe;
mod reach;
mod run;
mod seccomp;
mod settings;
mod stage;
mod tasktree;
mod view;

pub use limits::{LimitHit, Limits};
pub use probe::{Capabilities, Protection, probe, protections};
pub use run::{
    CommandSpec, Confinement, ExitState, Output, Policy, SandboxSettings, WhenUnconfined, run,
};
pub use settings::{GitMount, OBJECTS_MOUNT};
pub use tasktree::{Change, ChangeKind, Changes, ShadowGit, TaskTree, process_alive};
pub use view::{SYSTEM_PATHS, shown_to_every_command};

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
    #[error(transparent)]
    Git(#[from] bugloop_git::GitError),
    #[error("{0}")]
    Io(String),
    #[error("refused: {0}")]
    Refused(String),
}
