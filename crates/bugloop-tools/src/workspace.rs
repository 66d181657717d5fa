//! Paths as the model gives them, resolved inside the workspace or refused.

use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// The root every tool works under (a task's worktree).
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ToolError> {
        let root = root
            .as_ref()
            .canonicalize()
            .map_err(|e| ToolError::Abort(format!("workspace {}: {e}", root.as_ref().display())))?;
        Ok(Workspace { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a workspace-relative path. Refused: absolute paths, any `..`, git's internals
    /// (`.git`), and anything that (through a symlink) leads outside the workspace. The path need
    /// not exist; its nearest existing ancestor must be inside.
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let trimmed = raw.trim();
        if trimmed.contains('\0') {
            return Err(ToolError::Model(format!(
                "path {raw:?} contains a NUL byte"
            )));
        }
        let path = Path::new(trimmed);
        if path.is_absolute() || trimmed.starts_with('~') {
            return Err(ToolError::Model(format!(
                "path {raw:?} is absolute; give a path relative to the repository root"
            )));
        }
        let mut clean = PathBuf::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => {
                    if part == ".git" {
                        return Err(ToolError::Model(format!(
                            "path {raw:?} is inside .git, which tools may not touch"
                        )));
                    }
                    clean.push(part);
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(ToolError::Model(format!(
                        "path {raw:?} uses `..`; paths must stay inside the repository"
                    )));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::Model(format!("path {raw:?} is absolute")));
                }
            }
        }
        let full = self.root.join(&clean);
        // Follow symlinks as far as the path exists; the real location must be inside.
        let mut existing = full.as_path();
        while !existing.exists() && existing.symlink_metadata().is_err() {
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = existing
            .canonicalize()
            .map_err(|_| ToolError::Model(format!("path {raw:?} leads through a broken link")))?;
        if !real.starts_with(&self.root) {
            return Err(ToolError::Model(format!(
                "path {raw:?} leads outside the repository (through a symbolic link)"
            )));
        }
        if real.strip_prefix(&self.root).is_ok_and(|inside| {
            inside.components().next() == Some(Component::Normal(".git".as_ref()))
        }) {
            return Err(ToolError::Model(format!(
                "path {raw:?} leads into .git, which tools may not touch"
            )));
        }
        Ok(full)
    }

    /// The workspace-relative form of a path under the root, with `/` separators.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}
