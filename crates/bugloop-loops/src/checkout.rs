//! The code at a change's head, where the reviewer reads and grounding looks: a commit's tracked
//! files in a task tree that is removed when dropped (never the checkout, whose ignored files are
//! not the commit's), the index's and the working tree's likewise (tracked and untracked files,
//! never ignored ones), and the repository itself only where there is no commit to start from.
//! Either way, sandboxed commands see a sanitized git directory, never the repository's own.

use std::path::Path;

use bugloop_git::{Git, HeadState, SelectedChange};
use bugloop_sandbox::{GitMount, ShadowGit, TaskTree};

#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("cannot check out the change's head: {0}")]
    Tree(#[from] bugloop_sandbox::SandboxError),
    #[error(transparent)]
    Git(#[from] bugloop_git::GitError),
}

#[derive(Debug)]
pub enum Checkout {
    /// The repository itself, with a sanitized git directory at its HEAD (none without commits).
    InPlace {
        root: std::path::PathBuf,
        shadow: Option<ShadowGit>,
    },
    Tree(TaskTree),
}

impl Checkout {
    pub fn path(&self) -> &Path {
        match self {
            Checkout::InPlace { root, .. } => root,
            Checkout::Tree(tree) => tree.path(),
        }
    }

    /// The git directory sandboxed commands see at the checkout's `.git`.
    pub fn git_mount(&self) -> Option<GitMount> {
        match self {
            Checkout::InPlace { shadow, .. } => shadow.as_ref().map(ShadowGit::mount),
            Checkout::Tree(tree) => Some(tree.git_mount()),
        }
    }
}

fn in_place(git: &Git) -> Result<Checkout, CheckoutError> {
    let shadow = match git.head() {
        Some(head) => Some(ShadowGit::for_repository(git.root(), &head)?),
        None => None,
    };
    Ok(Checkout::InPlace {
        root: git.root().to_path_buf(),
        shadow,
    })
}

/// Makes the change's head readable.
pub fn checkout(git: &Git, change: &SelectedChange) -> Result<Checkout, CheckoutError> {
    match &change.head {
        // A copy of the working tree: the repository's own directory may be closed to the
        // sandbox's user (mode 0700), and it holds ignored files (`.env`) no reviewer may read.
        HeadState::WorkingTree => match git.head() {
            Some(head) => Ok(Checkout::Tree(TaskTree::from_working_tree(
                git.root(),
                &head,
                "review-working",
            )?)),
            None => in_place(git),
        },
        // Always the commit's tracked files, even when the checkout is at that commit and
        // clean: `git status` does not show ignored files, and a checkout holds them (an `.env`
        // an earlier CI step wrote, build output), which the reviewer must never read.
        HeadState::Commit(sha) => Ok(Checkout::Tree(TaskTree::create(git.root(), sha, "review")?)),
        HeadState::Index => {
            let Some(head) = git.head() else {
                // No commit to start from: the working tree is the closest there is.
                return in_place(git);
            };
            Ok(Checkout::Tree(TaskTree::from_index(
                git.root(),
                &head,
                "review-staged",
            )?))
        }
    }
}
