//! Reading a task tree as data after a run: what changed against its HEAD, what is refused
//! (a symlink leaving the tree, a file too large) and what is skipped (FIFOs, sockets, devices).

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::SandboxError;

use super::export::{Stamp, TreeEntry, is_git_like, safe_relative};
use super::{MAX_COMMITTED_FILE, TaskTree, io_error};

/// What changed in a task tree against its HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path for people (lossy where it is not UTF-8).
    pub path: String,
    pub(super) raw: Vec<u8>,
    pub kind: ChangeKind,
    pub(super) mode: u32,
    pub(super) oid: String,
}

impl Change {
    /// Whether it is (or, deleted, was) a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.mode == 0o120000
    }

    /// Whether it is a regular file (not a symlink, a submodule, or gone).
    pub fn is_regular_file(&self) -> bool {
        self.kind != ChangeKind::Deleted && (self.mode == 0o100644 || self.mode == 0o100755)
    }
}

/// The result of reading a task tree as data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub changes: Vec<Change>,
    /// Reasons the tree cannot be committed (a symlink pointing outside it, a file too large).
    pub refused: Vec<String>,
    /// What was left out, and why (FIFOs, sockets, devices).
    pub skipped: Vec<String>,
}

impl Changes {
    pub fn paths(&self) -> Vec<String> {
        self.changes.iter().map(|c| c.path.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Only the changes to the paths `other` changed (compared as bytes, not as display names).
    pub fn restricted_to(&self, other: &Changes) -> Changes {
        let paths: BTreeSet<&[u8]> = other.changes.iter().map(|c| c.raw.as_slice()).collect();
        Changes {
            changes: self
                .changes
                .iter()
                .filter(|c| paths.contains(c.raw.as_slice()))
                .cloned()
                .collect(),
            refused: self.refused.clone(),
            skipped: self.skipped.clone(),
        }
    }

    /// The paths whose change is not the same in `other` (other content, mode or kind, or gone).
    /// Without the changes that are exactly one of `left_out` (the same path, kind and content):
    /// what commands left in the tree, as long as nothing changed it since.
    pub fn without(&self, left_out: &[Change]) -> Changes {
        Changes {
            changes: self
                .changes
                .iter()
                .filter(|c| !left_out.contains(c))
                .cloned()
                .collect(),
            refused: self.refused.clone(),
            skipped: self.skipped.clone(),
        }
    }

    /// The changes in `self` that `before` does not have as they are now (new, or different),
    /// on paths `agent` did not change.
    pub fn made_since(&self, before: &Changes, agent: &Changes) -> Vec<Change> {
        self.changes
            .iter()
            .filter(|c| !before.changes.contains(c))
            .filter(|c| !agent.changes.iter().any(|a| a.raw == c.raw))
            .cloned()
            .collect()
    }

    pub fn differences(&self, other: &Changes) -> Vec<String> {
        self.changes
            .iter()
            .filter(|mine| !other.changes.iter().any(|theirs| theirs == *mine))
            .map(|c| c.path.clone())
            .collect()
    }
}

/// Where a symlink at `link` (relative to the tree) pointing at `target` lands, if it stays
/// inside the tree (and out of `.git`).
pub(super) fn symlink_stays_inside(link: &Path, target: &[u8]) -> bool {
    let target = Path::new(OsStr::from_bytes(target));
    if target.is_absolute() {
        return false;
    }
    let mut depth: Vec<&OsStr> = link
        .parent()
        .map(|p| {
            p.components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for component in target.components() {
        match component {
            Component::Normal(name) => {
                if depth.is_empty() && is_git_like(name.as_bytes()) {
                    return false;
                }
                depth.push(name);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

pub(super) fn object_id(format_sha256: bool, kind: &str, content: &[u8]) -> String {
    fn hex<D: sha2::Digest>(header: &str, content: &[u8]) -> String {
        let mut hasher = D::new();
        hasher.update(header.as_bytes());
        hasher.update(content);
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
    let header = format!("{kind} {}\0", content.len());
    if format_sha256 {
        hex::<sha2::Sha256>(&header, content)
    } else {
        hex::<sha1::Sha1>(&header, content)
    }
}

/// A relative path of plain names: nothing absolute, no `.` or `..`.
/// A relative path of the tree's own files: no `..`, no root, and nothing under a `.git` (a
/// task tree's git metadata, its hooks and configuration, is never read or written here).
pub(super) fn plain(relative: &Path) -> bool {
    !relative.as_os_str().is_empty()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(name) if !is_git_like(name.as_bytes())))
}

/// Reads a regular file without following a symlink and without blocking on anything else.
pub(super) fn read_regular(path: &Path, max: u64) -> Result<Result<Vec<u8>, String>, SandboxError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path);
    let mut file = match file {
        Ok(file) => file,
        Err(error) => return Ok(Err(format!("cannot be opened: {error}"))),
    };
    let metadata = file.metadata().map_err(|e| io_error(path, e))?;
    if !metadata.is_file() {
        return Ok(Err("is not a regular file".into()));
    }
    if metadata.len() > max {
        return Ok(Err(format!(
            "is {} MiB, more than the {} MiB bugloop commits",
            metadata.len() >> 20,
            max >> 20
        )));
    }
    let mut content = Vec::with_capacity(metadata.len() as usize);
    (&mut file)
        .take(max + 1)
        .read_to_end(&mut content)
        .map_err(|e| io_error(path, e))?;
    Ok(Ok(content))
}

/// A file of the tree as the walk found it, with HEAD's entry for its path.
#[derive(Clone, Copy)]
struct Found<'a> {
    raw: &'a [u8],
    shown: &'a str,
    full: &'a Path,
    metadata: &'a std::fs::Metadata,
    base: Option<&'a TreeEntry>,
}

impl TaskTree {
    /// Reads the tree as data and compares it with HEAD.
    pub fn changes(&self) -> Result<Changes, SandboxError> {
        let mut result = Changes::default();
        let mut present: BTreeSet<Vec<u8>> = BTreeSet::new();
        let (files, git_named) = self.current_files();
        result.skipped.extend(
            git_named
                .into_iter()
                .map(|dir| format!("`{dir}`: named like .git, which git never commits")),
        );
        for (raw, full) in files {
            let shown = String::from_utf8_lossy(&raw).into_owned();
            let Ok(metadata) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            let base = self.base_entries.get(&raw);
            if base.is_some_and(|b| b.mode == 0o160000) {
                present.insert(raw);
                continue;
            }
            let found = Found {
                raw: &raw,
                shown: &shown,
                full: &full,
                metadata: &metadata,
                base,
            };
            let Some((mode, oid)) = self.recorded_as(&found, &mut result)? else {
                continue;
            };
            present.insert(raw.clone());
            let kind = match base {
                None => ChangeKind::Added,
                Some(b) if b.mode == mode && b.oid == oid => continue,
                Some(_) => ChangeKind::Modified,
            };
            result.changes.push(Change {
                path: shown,
                raw,
                kind,
                mode,
                oid,
            });
        }
        self.push_deleted(&present, &mut result);
        result.changes.sort_by(|a, b| a.raw.cmp(&b.raw));
        Ok(result)
    }

    /// The files of the tree, each as its raw relative path and its full path: what the walk
    /// finds (`.gitignore` applies, `.git` never entered), then the tracked files the walk
    /// skipped because `.gitignore` now matches them, which are still tracked (as `git add -A`
    /// sees it); and the directories named like `.git` the walk did not enter (the tree's own
    /// mount point aside).
    fn current_files(&self) -> (Vec<(Vec<u8>, PathBuf)>, Vec<String>) {
        let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut current: Vec<(Vec<u8>, PathBuf)> = Vec::new();
        let root = self.tree.clone();
        let git_named = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let found = git_named.clone();
        let walker = ignore::WalkBuilder::new(&self.tree)
            .hidden(false)
            .ignore(false)
            .parents(false)
            .git_global(false)
            .git_exclude(false)
            .git_ignore(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                if !is_git_like(e.file_name().as_bytes()) {
                    return true;
                }
                // The tree's own `.git` is the sandbox's mount point; anything else git takes
                // for `.git` (`.GIT`, `.git.`, a nested repository's) is never committed: said.
                if e.path() != root.join(".git") {
                    let relative = e.path().strip_prefix(&root).unwrap_or(e.path());
                    if let Ok(mut found) = found.lock() {
                        found.push(relative.to_string_lossy().into_owned());
                    }
                }
                false
            })
            .build();
        for entry in walker.flatten() {
            let Ok(relative) = entry.path().strip_prefix(&self.tree) else {
                continue;
            };
            if relative.as_os_str().is_empty() || entry.file_type().is_some_and(|t| t.is_dir()) {
                continue;
            }
            let raw = relative.as_os_str().as_bytes().to_vec();
            seen.insert(raw.clone());
            current.push((raw, entry.path().to_path_buf()));
        }
        for path in self.base_entries.keys() {
            if seen.contains(path) {
                continue;
            }
            let Some(relative) = safe_relative(path) else {
                continue;
            };
            if self.inside_real_directories(relative) {
                let full = self.tree.join(relative);
                if std::fs::symlink_metadata(&full).is_ok() {
                    current.push((path.clone(), full));
                }
            }
        }
        let mut git_named = git_named
            .lock()
            .map(|mut found| std::mem::take(&mut *found))
            .unwrap_or_default();
        git_named.sort();
        (current, git_named)
    }

    /// The mode and object id git would record for the file at `full`, or `None` where it cannot
    /// be committed (the reason is added to `result`'s refused or skipped).
    fn recorded_as(
        &self,
        found: &Found,
        result: &mut Changes,
    ) -> Result<Option<(u32, String)>, SandboxError> {
        if found.metadata.file_type().is_symlink() {
            self.recorded_symlink(found, result).map(Some)
        } else if found.metadata.is_file() {
            self.recorded_file(found, result)
        } else {
            result
                .skipped
                .push(format!("{} is not a regular file or symlink", found.shown));
            Ok(None)
        }
    }

    /// A symlink is recorded by its target; one pointing outside the repository is refused
    /// unless HEAD already has it so (the agent did not make it).
    fn recorded_symlink(
        &self,
        found: &Found,
        result: &mut Changes,
    ) -> Result<(u32, String), SandboxError> {
        let Found {
            raw,
            shown,
            full,
            base,
            ..
        } = *found;
        let target = std::fs::read_link(full).map_err(|e| io_error(full, e))?;
        let target = target.as_os_str().as_bytes().to_vec();
        let relative = Path::new(OsStr::from_bytes(raw));
        if !symlink_stays_inside(relative, &target) {
            let unchanged = base.is_some_and(|b| {
                b.mode == 0o120000 && b.oid == object_id(self.sha256, "blob", &target)
            });
            if !unchanged {
                result.refused.push(format!(
                    "{shown} is a symlink to {} outside the repository",
                    String::from_utf8_lossy(&target)
                ));
            }
        }
        Ok((0o120000, object_id(self.sha256, "blob", &target)))
    }

    /// A regular file is recorded by its content, read only where its stamp changed since the
    /// export; setuid or setgid files and ones that cannot be read as data are refused.
    fn recorded_file(
        &self,
        found: &Found,
        result: &mut Changes,
    ) -> Result<Option<(u32, String)>, SandboxError> {
        let Found {
            raw,
            shown,
            full,
            metadata,
            base,
        } = *found;
        if metadata.mode() & 0o6000 != 0 {
            result.refused.push(format!("{shown} is setuid or setgid"));
            return Ok(None);
        }
        let mode = if metadata.mode() & 0o100 != 0 {
            0o100755
        } else {
            0o100644
        };
        if let (Some(stamp), Some(base)) = (self.stamps.get(raw), base)
            && *stamp == Stamp::of(metadata)
        {
            return Ok(Some((base.mode, base.oid.clone())));
        }
        match read_regular(full, MAX_COMMITTED_FILE)? {
            Ok(content) => Ok(Some((mode, object_id(self.sha256, "blob", &content)))),
            Err(reason) => {
                result.refused.push(format!("{shown} {reason}"));
                Ok(None)
            }
        }
    }

    /// Every file of HEAD the tree no longer has is deleted (a submodule's entry excepted).
    fn push_deleted(&self, present: &BTreeSet<Vec<u8>>, result: &mut Changes) {
        for (raw, entry) in &self.base_entries {
            if !present.contains(raw) && entry.mode != 0o160000 {
                result.changes.push(Change {
                    path: String::from_utf8_lossy(raw).into_owned(),
                    raw: raw.clone(),
                    kind: ChangeKind::Deleted,
                    mode: entry.mode,
                    oid: entry.oid.clone(),
                });
            }
        }
    }
}
