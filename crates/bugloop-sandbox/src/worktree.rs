//! Task worktrees: a detached git worktree per task, so agents never touch the user's working tree.
//! Removed when dropped (and pruned), whatever happened in the task.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::SandboxError;

#[derive(Debug)]
pub struct Worktree {
    repo: PathBuf,
    path: PathBuf,
    removed: bool,
}

fn git(repo: &Path, args: &[&str]) -> Result<String, SandboxError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| SandboxError::Git {
            args: args.join(" "),
            message: e.to_string(),
        })?;
    if !output.status.success() {
        return Err(SandboxError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

impl Worktree {
    /// Checks out `revision` (detached) in a new worktree under `<git dir>/bugloop/worktrees/`.
    pub fn create(repo: &Path, revision: &str, name: &str) -> Result<Self, SandboxError> {
        let common = git(
            repo,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )?;
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let path = Path::new(&common)
            .join("bugloop/worktrees")
            .join(format!("{safe}-{}", std::process::id()));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SandboxError::Io(format!("{}: {e}", parent.display())))?;
        }
        let target = path.display().to_string();
        git(
            repo,
            &["worktree", "add", "--detach", "--force", &target, revision],
        )?;
        Ok(Worktree {
            repo: repo.to_path_buf(),
            path,
            removed: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the worktree now (also done on drop).
    pub fn remove(mut self) -> Result<(), SandboxError> {
        self.removed = true;
        let target = self.path.display().to_string();
        let result = git(
            &self.repo,
            &["worktree", "remove", "--force", "--force", &target],
        );
        let _ = git(&self.repo, &["worktree", "prune"]);
        result.map(|_| ())
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if !self.removed {
            let target = self.path.display().to_string();
            let _ = git(
                &self.repo,
                &["worktree", "remove", "--force", "--force", &target],
            );
            let _ = std::fs::remove_dir_all(&self.path);
            let _ = git(&self.repo, &["worktree", "prune"]);
        }
    }
}
