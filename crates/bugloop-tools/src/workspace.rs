//! Paths as the model gives them, resolved inside the workspace or refused.

use std::fs::{File, FileType, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;

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
        let full = self.root.join(lexically_relative(raw)?);
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
        self.check_real(raw, &real)?;
        Ok(full)
    }

    /// Opens an existing regular file for reading, never blocking and never following a symlink
    /// that was not checked: the path is resolved as by [`Workspace::resolve`], its real location
    /// (an in-tree symlink's target) is opened with `O_NOFOLLOW | O_NONBLOCK`, and the opened file
    /// itself must be a regular file. So a FIFO cannot hang the open, and a FIFO, device or
    /// outside link swapped in after the check is refused, not read.
    pub fn open_file(&self, raw: &str) -> Result<File, ToolError> {
        let cannot = |e: std::io::Error| ToolError::Model(format!("cannot read {raw}: {e}"));
        let real = self.existing(raw, "read")?;
        // Refuse by the path first, so a socket or device is not even opened.
        let kind = real.symlink_metadata().map_err(cannot)?.file_type();
        refuse_unless_regular(raw, kind)?;
        let (file, kind) = open_no_follow(&real).map_err(cannot)?;
        refuse_unless_regular(raw, kind)?;
        Ok(file)
    }

    /// The real location (every symlink followed) of an existing path, checked as by
    /// [`Workspace::resolve`]; a path that does not exist cannot be `verb`ed.
    pub(crate) fn existing(&self, raw: &str, verb: &str) -> Result<PathBuf, ToolError> {
        let real = self
            .resolve(raw)?
            .canonicalize()
            .map_err(|e| ToolError::Model(format!("cannot {verb} {raw}: {e}")))?;
        // Checked again: a link may have been swapped in since `resolve` looked.
        self.check_real(raw, &real)?;
        Ok(real)
    }

    /// The real location of a path must be inside the workspace and outside any `.git` (the
    /// repository's, or a nested one's reached through a link: its config may hold a token).
    fn check_real(&self, raw: &str, real: &Path) -> Result<(), ToolError> {
        if !real.starts_with(&self.root) {
            return Err(ToolError::Model(format!(
                "path {raw:?} leads outside the repository (through a symbolic link)"
            )));
        }
        if real.strip_prefix(&self.root).is_ok_and(|inside| {
            inside
                .components()
                .any(|part| part == Component::Normal(".git".as_ref()))
        }) {
            return Err(ToolError::Model(format!(
                "path {raw:?} leads into .git, which tools may not touch"
            )));
        }
        Ok(())
    }

    /// The workspace-relative form of a path under the root, with `/` separators.
    pub fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// The lexical rules of [`Workspace::resolve`], without looking at the file system: the path made
/// relative and clean, or refused for being absolute, using `..`, or naming `.git`.
fn lexically_relative(raw: &str) -> Result<PathBuf, ToolError> {
    let trimmed = raw.trim();
    if trimmed.contains('\0') {
        return Err(ToolError::Model(format!(
            "path {raw:?} contains a NUL byte"
        )));
    }
    // A name that is not UTF-8 is shown (in diffs and findings) in git's quoted form; it names
    // the bytes on disk.
    let unquoted = match trimmed.strip_prefix('"') {
        Some(_) => bugloop_domain::paths::path_bytes(trimmed).ok_or_else(|| {
            ToolError::Model(format!(
                "path {raw:?} starts with a double quote but is not a quoted name like \"bad\\377.py\""
            ))
        })?,
        None => trimmed.as_bytes().to_vec(),
    };
    if unquoted.contains(&0) {
        return Err(ToolError::Model(format!(
            "path {raw:?} contains a NUL byte"
        )));
    }
    let path = Path::new(std::ffi::OsStr::from_bytes(&unquoted));
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
    Ok(clean)
}

/// Opens a path for reading without following a final symlink and without blocking (a FIFO opens
/// at once; `O_NOCTTY` keeps a terminal from becoming ours), and says what the opened file is.
pub(crate) fn open_no_follow(path: &Path) -> std::io::Result<(File, FileType)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    let kind = file.metadata()?.file_type();
    Ok((file, kind))
}

/// What a file that is not a regular file is, for telling the model; `None` for a regular file.
pub(crate) fn special_kind(kind: FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_char_device() {
        Some("a character device")
    } else if kind.is_block_device() {
        Some("a block device")
    } else {
        Some("not a regular file")
    }
}

fn refuse_unless_regular(raw: &str, kind: FileType) -> Result<(), ToolError> {
    match special_kind(kind) {
        None => Ok(()),
        Some(_) if kind.is_dir() => Err(ToolError::Model(format!(
            "{raw} is a directory; use list_dir"
        ))),
        Some(what) => Err(ToolError::Model(format!(
            "{raw} is {what}, not a regular file; only regular files can be read"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn open_no_follow_refuses_a_final_symlink() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "text").unwrap();
        std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
        let (_, kind) = open_no_follow(&dir.path().join("file")).unwrap();
        assert!(kind.is_file());
        // ELOOP: a link swapped in after the path check is not followed.
        assert!(open_no_follow(&dir.path().join("link")).is_err());
    }

    #[test]
    fn a_quoted_name_reads_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let name = std::ffi::OsStr::from_bytes(b"bad\xff.py");
        std::fs::write(dir.path().join(name), "x = 1\n").unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut workspace.open_file(r#""bad\377.py""#).unwrap(),
            &mut text,
        )
        .unwrap();
        assert_eq!(text, "x = 1\n");
        for refused in [
            r#""..\057etc/passwd""#,
            r#""\057etc/passwd""#,
            r#""a\000""#,
            r#""open"#,
        ] {
            assert!(workspace.resolve(refused).is_err(), "{refused}");
        }
    }
}
