//! The code at a change's head, where the reviewer reads and grounding looks: the repository
//! itself when it already is the head (clean tree at that commit, or a working-tree review), else
//! a task worktree that is removed when dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bugloop_forge::git::{Git, HeadState, SelectedChange};
use bugloop_sandbox::Worktree;

#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error("cannot check out the change's head: {0}")]
    Worktree(#[from] bugloop_sandbox::SandboxError),
    #[error(transparent)]
    Git(#[from] bugloop_forge::git::GitError),
    #[error("cannot apply the staged changes to the review worktree: {0}")]
    Apply(String),
}

#[derive(Debug)]
pub enum Checkout {
    InPlace(PathBuf),
    Worktree {
        worktree: Worktree,
        git_dir: PathBuf,
    },
}

impl Checkout {
    pub fn path(&self) -> &Path {
        match self {
            Checkout::InPlace(path) => path,
            Checkout::Worktree { worktree, .. } => worktree.path(),
        }
    }

    /// Paths sandboxed git commands must read besides the checkout (a worktree's git directory).
    pub fn read_only_paths(&self) -> Vec<PathBuf> {
        match self {
            Checkout::InPlace(_) => Vec::new(),
            Checkout::Worktree { git_dir, .. } => vec![git_dir.clone()],
        }
    }
}

/// Makes the change's head readable.
pub fn checkout(git: &Git, change: &SelectedChange) -> Result<Checkout, CheckoutError> {
    match &change.head {
        HeadState::WorkingTree => Ok(Checkout::InPlace(git.root().to_path_buf())),
        HeadState::Commit(sha) => {
            if git.head().as_deref() == Some(sha.as_str()) && git.is_clean()? {
                return Ok(Checkout::InPlace(git.root().to_path_buf()));
            }
            let worktree = Worktree::create(git.root(), sha, "review")?;
            Ok(Checkout::Worktree {
                worktree,
                git_dir: git.common_dir()?,
            })
        }
        HeadState::Index => {
            let Some(head) = git.head() else {
                // No commit to start a worktree from: the working tree is the closest there is.
                return Ok(Checkout::InPlace(git.root().to_path_buf()));
            };
            let worktree = Worktree::create(git.root(), &head, "review-staged")?;
            let patch = git.run_bytes(&[
                "diff",
                "--cached",
                "--binary",
                "--no-ext-diff",
                "--no-textconv",
            ])?;
            if !patch.is_empty() {
                apply(worktree.path(), &patch)?;
            }
            Ok(Checkout::Worktree {
                worktree,
                git_dir: git.common_dir()?,
            })
        }
    }
}

fn apply(dir: &Path, patch: &[u8]) -> Result<(), CheckoutError> {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["apply", "--whitespace=nowarn", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| CheckoutError::Apply(e.to_string()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(patch)
            .map_err(|e| CheckoutError::Apply(e.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| CheckoutError::Apply(e.to_string()))?;
    if !output.status.success() {
        return Err(CheckoutError::Apply(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    Ok(())
}
