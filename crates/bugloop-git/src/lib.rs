//! The one home of git on the host. [`GitCommand`] is how every bugloop crate runs git (hardened:
//! no hook, fsmonitor, external diff, pager or signing program runs, and output has the plain
//! form the parsers expect); [`Git`] is a repository's work tree and the queries bugloop asks of
//! it: which change to review and its diff, the conversation it belongs to, the trusted base, a
//! file at a commit, the shared git directory and what bugloop keeps there.
//!
//! git inside the sandbox is not run from here: that git sees only the sandbox's view (see
//! `bugloop-sandbox`).
//!
//! **Never:** let another crate start `git` (the agent's `git` tool runs inside the sandbox; the
//! tests' fixtures use `bugloop-testkit`). A failure is one `GitError` naming the command and git's
//! stderr (`git rev-parse --verify HEAD failed: ...`).

mod change;
mod command;
mod overlay;
mod repository;
mod revert;

pub use change::{ChangeKey, ChangedFile, FileStatus, HeadState, SelectedChange, Selection};
pub use command::{GitCommand, version};
pub use repository::{EMPTY_TREE, Git, clone, common_dir, short};
pub use revert::{Author, Revert};

/// Why git could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{0} is not inside a git repository")]
    NotARepository(std::path::PathBuf),
    #[error("{0} is not a directory here (it does not exist, or is a file)")]
    NotADirectory(std::path::PathBuf),
    /// git refuses a repository another user owns (`safe.directory`).
    #[error("git will not work in {} for this user: {message}", dir.display())]
    NotTrusted {
        dir: std::path::PathBuf,
        message: String,
    },
    #[error("cannot run git {args}: {source}")]
    Spawn {
        args: String,
        source: std::io::Error,
    },
    #[error("git {args} failed: {message}")]
    Failed { args: String, message: String },
    #[error("{0}")]
    Selection(String),
    /// A name from outside (a forge's branch name) that git must not be given.
    #[error("{0}")]
    Invalid(String),
}
