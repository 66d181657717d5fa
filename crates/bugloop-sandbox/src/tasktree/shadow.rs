//! The sanitized git directory a sandboxed command sees at the task tree's `.git`.

use std::path::{Path, PathBuf};

use crate::SandboxError;
use crate::settings::{GitMount, OBJECTS_MOUNT};

use super::{claimed_task_dir, force_remove, git_text, host_git, io_error};

/// A sanitized git directory for sandboxed commands: HEAD at a commit, a config with nothing in
/// it, an index of that commit, and the repository's objects through an alternate that points at
/// [`OBJECTS_MOUNT`] (where the sandbox shows them read-only). No hooks, no remotes, no
/// credentials: what commands inside need from git, and nothing of the repository's own config.
#[derive(Debug)]
pub struct ShadowGit {
    dir: PathBuf,
    objects: PathBuf,
    alternates: Vec<PathBuf>,
    /// A directory of its own to remove on drop (see [`ShadowGit::for_repository`]), claimed
    /// while in use.
    owned: Option<(PathBuf, crate::owner::Claim)>,
}

impl ShadowGit {
    /// Makes one at `dir` (which must not exist) for `commit` of the repository whose common git
    /// directory is `common`.
    pub fn create(common: &Path, dir: &Path, commit: &str) -> Result<ShadowGit, SandboxError> {
        for sub in ["objects/info", "refs/heads", "refs/tags"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| io_error(dir, e))?;
        }
        let format = git_text(common, &["rev-parse", "--show-object-format"])
            .unwrap_or_else(|_| "sha1".into());
        let mut config = String::from(
            "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tfilemode = true\n",
        );
        if format != "sha1" {
            config.push_str(&format!("[extensions]\n\tobjectformat = {format}\n"));
        }
        let objects = common.join("objects");
        let alternates: Vec<PathBuf> = std::fs::read_to_string(objects.join("info/alternates"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| objects.join(l.trim()))
            .filter(|p| p.is_dir())
            .collect();
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).map_err(|e| io_error(&dir.join(name), e))
        };
        write("config", &config)?;
        write("HEAD", &format!("{commit}\n"))?;
        write("objects/info/alternates", &format!("{OBJECTS_MOUNT}\n"))?;
        std::fs::write(
            dir.with_extension("gitfile"),
            format!("gitdir: {}\n", dir.display()),
        )
        .map_err(|e| io_error(dir, e))?;
        let shadow = ShadowGit {
            dir: dir.to_path_buf(),
            objects,
            alternates,
            owned: None,
        };
        shadow.set_head(commit)?;
        Ok(shadow)
    }

    /// One for sandboxed commands that work in the user's own repository (a review of the working
    /// tree): at `commit`, in a directory of its own under the git directory, removed on drop.
    pub fn for_repository(repo: &Path, commit: &str) -> Result<ShadowGit, SandboxError> {
        let common = bugloop_git::common_dir(repo)?;
        let (root, claim) = claimed_task_dir(&common, "shadow")?;
        match ShadowGit::create(&common, &root.join("git"), commit) {
            Ok(mut shadow) => {
                shadow.owned = Some((root, claim));
                Ok(shadow)
            }
            Err(error) => {
                force_remove(&root);
                Err(error)
            }
        }
    }

    /// Moves HEAD (and the index) to `commit`.
    pub fn set_head(&self, commit: &str) -> Result<(), SandboxError> {
        std::fs::write(self.dir.join("HEAD"), format!("{commit}\n"))
            .map_err(|e| io_error(&self.dir, e))?;
        // The index is built with the repository's objects (the alternate points into the
        // sandbox's view, which does not exist out here).
        host_git(&self.dir)
            .env("GIT_OBJECT_DIRECTORY", &self.objects)
            .env(
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                std::env::join_paths(&self.alternates).unwrap_or_default(),
            )
            .env("GIT_INDEX_FILE", self.dir.join("index"))
            .args(["read-tree", commit])
            .output()?;
        Ok(())
    }

    pub fn mount(&self) -> GitMount {
        GitMount {
            shadow: self.dir.clone(),
            objects: self.objects.clone(),
            alternates: self.alternates.clone(),
        }
    }
}

impl Drop for ShadowGit {
    fn drop(&mut self) {
        if let Some((root, _claim)) = self.owned.take() {
            force_remove(&root);
            let _ = std::fs::remove_file(self.dir.with_extension("gitfile"));
        }
    }
}
