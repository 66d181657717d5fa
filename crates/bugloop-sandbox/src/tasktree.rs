//! Task trees: the directory an agent and its commands work in, and how bugloop gets a commit out
//! of it without trusting anything in it.
//!
//! A task tree is a plain directory with the files of a commit, written by bugloop from git's
//! object store (no `.git` in it, so no hook, filter, fsmonitor or config of the tree's can ever
//! run on the host). Commands inside the sandbox see a sanitized git directory at its `.git`
//! ([`ShadowGit`]: HEAD, a minimal config, the repository's objects read-only). After a run,
//! [`TaskTree::changes`] walks the tree as data (regular files; symlinks only when their target
//! stays inside the tree; everything else skipped) and [`TaskTree::commit`] writes the result
//! with `git fast-import` into the repository's object store, with bugloop's own git directory
//! and no working tree at all.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use bugloop_git::{GitCommand, GitError};

use crate::SandboxError;
use crate::settings::{GitMount, OBJECTS_MOUNT};

/// Files larger than this are not committed (they are reported instead).
const MAX_COMMITTED_FILE: u64 = 100 << 20;
/// A commit whose files add up to more than this is not checked out: a small repository can name
/// one large blob a thousand times.
const MAX_TREE_BYTES: u64 = 8 << 30;

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

fn io_error(path: &Path, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Io(format!("{}: {error}", path.display()))
}

/// git run by bugloop on the host: always against an explicit git directory, from inside it (so
/// no discovery ever starts in a tree an agent wrote), hardened by [`GitCommand::in_git_dir`].
fn host_git(git_dir: &Path) -> GitCommand {
    GitCommand::in_git_dir(git_dir)
}

fn git_text(git_dir: &Path, args: &[&str]) -> Result<String, SandboxError> {
    Ok(host_git(git_dir).args(args).text()?)
}

/// One entry of a git tree: mode, object id, path (bytes, as git stores it).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TreeEntry {
    mode: u32,
    oid: String,
}

fn list_tree(
    git_dir: &Path,
    source: &TreeSource,
) -> Result<BTreeMap<Vec<u8>, TreeEntry>, SandboxError> {
    let command = host_git(git_dir);
    let raw = match source {
        TreeSource::Commit(commit) => command
            .args(["ls-tree", "-r", "-z", "-l", "--full-tree", commit])
            .output()?,
        TreeSource::Index { index } => command
            .env("GIT_INDEX_FILE", index)
            .args(["ls-files", "-s", "-z"])
            .output()?,
    };
    let mut entries = BTreeMap::new();
    let mut total = 0u64;
    for record in raw.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let Some(tab) = record.iter().position(|b| *b == b'\t') else {
            continue;
        };
        let (meta, path) = (&record[..tab], &record[tab + 1..]);
        let fields: Vec<&[u8]> = meta
            .split(|b| *b == b' ')
            .filter(|f| !f.is_empty())
            .collect();
        // ls-tree -l: mode type oid size; ls-files -s: mode oid stage.
        let (mode, oid) = match (source, fields.as_slice()) {
            (TreeSource::Commit(_), [mode, _, oid, size]) => {
                total =
                    total.saturating_add(String::from_utf8_lossy(size).parse::<u64>().unwrap_or(0));
                (*mode, *oid)
            }
            (TreeSource::Index { .. }, [mode, oid, stage]) if *stage == b"0" => (*mode, *oid),
            _ => continue,
        };
        let Ok(mode) = u32::from_str_radix(&String::from_utf8_lossy(mode), 8) else {
            continue;
        };
        entries.insert(
            path.to_vec(),
            TreeEntry {
                mode,
                oid: String::from_utf8_lossy(oid).into_owned(),
            },
        );
    }
    if total > MAX_TREE_BYTES {
        return Err(SandboxError::Refused(format!(
            "the commit's files add up to {} MiB, more than the {} MiB bugloop checks out",
            total >> 20,
            MAX_TREE_BYTES >> 20
        )));
    }
    Ok(entries)
}

/// Where a task tree's files come from.
#[derive(Debug, Clone)]
enum TreeSource {
    Commit(String),
    /// The user's index (staged changes), read through a copy of it.
    Index {
        index: PathBuf,
    },
}

/// A path git may have written, safe to create below a root: relative, no `.`/`..`/empty
/// components, nothing named `.git` (in any case).
fn safe_relative(path: &[u8]) -> Option<&Path> {
    let path = Path::new(OsStr::from_bytes(path));
    let mut any = false;
    for component in path.components() {
        match component {
            Component::Normal(name) if !name.as_bytes().eq_ignore_ascii_case(b".git") => {
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(path)
}

/// Creates the directories of `relative` below `root`, refusing to pass through anything that is
/// not a real directory (a symlink planted as a parent).
fn create_parents(root: &Path, relative: &Path) -> Result<(), SandboxError> {
    let mut current = root.to_path_buf();
    if let Some(parent) = relative.parent() {
        for component in parent.components() {
            current.push(component);
            match std::fs::symlink_metadata(&current) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(io_error(&current, "exists and is not a directory"));
                }
                Err(_) => std::fs::create_dir(&current).map_err(|e| io_error(&current, e))?,
            }
        }
    }
    Ok(())
}

/// Streams blobs out of the object store (`git cat-file --batch`, which applies no filter).
fn for_each_blob(
    git_dir: &Path,
    oids: &[String],
    mut each: impl FnMut(usize, &[u8]) -> Result<(), SandboxError>,
) -> Result<(), SandboxError> {
    if oids.is_empty() {
        return Ok(());
    }
    let mut child = host_git(git_dir).args(["cat-file", "--batch"]).spawn(
        Stdio::piped(),
        Stdio::piped(),
        Stdio::null(),
    )?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| SandboxError::Io("cat-file: no stdin".into()))?;
    let requests: Vec<u8> = oids
        .iter()
        .flat_map(|o| format!("{o}\n").into_bytes())
        .collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&requests);
    });
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| SandboxError::Io("cat-file: no stdout".into()))?;
    let mut reader = BufReader::new(stdout);
    let mut result = Ok(());
    for (index, oid) in oids.iter().enumerate() {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            result = Err(SandboxError::Git(GitError::Failed {
                args: "cat-file --batch".into(),
                message: format!("no answer for {oid}"),
            }));
            break;
        }
        let size = header
            .split_whitespace()
            .nth(2)
            .and_then(|s| s.parse::<u64>().ok());
        let Some(size) = size else {
            result = Err(SandboxError::Git(GitError::Failed {
                args: "cat-file --batch".into(),
                message: format!("{oid}: {}", header.trim()),
            }));
            break;
        };
        let mut content = Vec::new();
        if let Err(error) = (&mut reader).take(size).read_to_end(&mut content) {
            result = Err(SandboxError::Io(format!("cat-file: {error}")));
            break;
        }
        let mut newline = [0u8; 1];
        let _ = reader.read_exact(&mut newline);
        if let Err(error) = each(index, &content) {
            result = Err(error);
            break;
        }
    }
    drop(reader);
    let _ = child.kill();
    let _ = child.wait();
    let _ = writer.join();
    result
}

/// What a file looked like when bugloop wrote it: unchanged inode, size, mtime and ctime mean
/// unchanged content (ctime cannot be set from user space).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Stamp {
    fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            ino: metadata.ino(),
            size: metadata.size(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
            mode: metadata.mode(),
        }
    }
}

/// Writes the files of `entries` below `root` (which must be empty).
fn export(
    git_dir: &Path,
    root: &Path,
    entries: &BTreeMap<Vec<u8>, TreeEntry>,
) -> Result<BTreeMap<Vec<u8>, Stamp>, SandboxError> {
    let mut stamps = BTreeMap::new();
    let mut blobs: Vec<(&Vec<u8>, &TreeEntry)> = Vec::new();
    for (path, entry) in entries {
        let Some(relative) = safe_relative(path) else {
            tracing::warn!(path = %String::from_utf8_lossy(path), "unsafe path in the tree not checked out");
            continue;
        };
        if entry.mode == 0o160000 {
            // A submodule: an empty directory, as git leaves one that is not initialized.
            create_parents(root, relative)?;
            let _ = std::fs::create_dir(root.join(relative));
            continue;
        }
        blobs.push((path, entry));
    }
    let oids: Vec<String> = blobs.iter().map(|(_, e)| e.oid.clone()).collect();
    for_each_blob(git_dir, &oids, |index, content| {
        let (path, entry) = blobs[index];
        let Some(relative) = safe_relative(path) else {
            return Ok(());
        };
        create_parents(root, relative)?;
        let target = root.join(relative);
        if entry.mode == 0o120000 {
            std::os::unix::fs::symlink(OsStr::from_bytes(content), &target)
                .map_err(|e| io_error(&target, e))?;
            return Ok(());
        }
        let mode = if entry.mode == 0o100755 { 0o755 } else { 0o644 };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&target)
            .map_err(|e| io_error(&target, e))?;
        file.write_all(content).map_err(|e| io_error(&target, e))?;
        // The umask may have taken bits away; the mode is what git recorded.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_error(&target, e))?;
        let metadata = file.metadata().map_err(|e| io_error(&target, e))?;
        stamps.insert(path.clone(), Stamp::of(&metadata));
        Ok(())
    })?;
    Ok(stamps)
}

/// Creates `dir` (and its parents) reachable by its owner only: whatever a sandboxed command leaves
/// in a task tree (a setuid copy of a shell, say) is out of other local users' reach.
fn make_private_dir(dir: &Path) -> Result<(), SandboxError> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    for private in [Some(dir), dir.parent()].into_iter().flatten() {
        std::fs::set_permissions(private, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io_error(private, e))?;
    }
    Ok(())
}

/// Removes a tree an agent may have made hard to remove (directories without permissions).
fn force_remove(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return;
    }
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if metadata.is_dir() {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
            if let Ok(entries) = std::fs::read_dir(&dir) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(path);
}

/// A sanitized git directory for sandboxed commands: HEAD at a commit, a config with nothing in
/// it, an index of that commit, and the repository's objects through an alternate that points at
/// [`OBJECTS_MOUNT`] (where the sandbox shows them read-only). No hooks, no remotes, no
/// credentials: what commands inside need from git, and nothing of the repository's own config.
#[derive(Debug)]
pub struct ShadowGit {
    dir: PathBuf,
    objects: PathBuf,
    alternates: Vec<PathBuf>,
    /// A directory of its own to remove on drop (see [`ShadowGit::for_repository`]).
    owned: Option<PathBuf>,
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
        remove_stale(&common);
        let root = common.join("bugloop/tasks").join(format!(
            "shadow-{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        make_private_dir(&root)?;
        match ShadowGit::create(&common, &root.join("git"), commit) {
            Ok(mut shadow) => {
                shadow.owned = Some(root);
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
    raw: Vec<u8>,
    pub kind: ChangeKind,
    mode: u32,
    oid: String,
}

impl Change {
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
fn symlink_stays_inside(link: &Path, target: &[u8]) -> bool {
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
                if depth.is_empty() && name.as_bytes().eq_ignore_ascii_case(b".git") {
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

fn object_id(format_sha256: bool, kind: &str, content: &[u8]) -> String {
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
fn plain(relative: &Path) -> bool {
    !relative.as_os_str().is_empty()
        && relative.components().all(|c| {
            matches!(c, Component::Normal(name) if !name.as_bytes().eq_ignore_ascii_case(b".git"))
        })
}

/// Reads a regular file without following a symlink and without blocking on anything else.
fn read_regular(path: &Path, max: u64) -> Result<Result<Vec<u8>, String>, SandboxError> {
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

/// A task's tree of files and the commit it stands on. Removed when dropped.
#[derive(Debug)]
pub struct TaskTree {
    common: PathBuf,
    root: PathBuf,
    tree: PathBuf,
    shadow: ShadowGit,
    head: String,
    base_entries: BTreeMap<Vec<u8>, TreeEntry>,
    stamps: BTreeMap<Vec<u8>, Stamp>,
    sha256: bool,
    reference: String,
    removed: bool,
}

fn process_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Removes task trees (and worktrees of older versions) whose process is gone: a run that was
/// killed leaves its tree, and the next run clears it.
fn remove_stale(common: &Path) {
    for dir in ["bugloop/tasks", "bugloop/worktrees"] {
        let Ok(entries) = std::fs::read_dir(common.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .rsplit('-')
                .nth(if dir.ends_with("tasks") { 1 } else { 0 })
                .and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid
                && pid != std::process::id() as i32
                && !process_alive(pid)
            {
                let path = entry.path();
                force_remove(&path);
                let _ = std::fs::remove_file(path.with_extension("gitfile"));
            }
        }
    }
    let _ = git_text(common, &["worktree", "prune"]);
}

impl TaskTree {
    /// Writes the files of `revision` of the repository at `repo` into a new task tree under
    /// `<git common dir>/bugloop/tasks/`.
    pub fn create(repo: &Path, revision: &str, name: &str) -> Result<TaskTree, SandboxError> {
        let common = bugloop_git::common_dir(repo)?;
        let commit = git_text(
            &common,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{revision}^{{commit}}"),
            ],
        )?;
        Self::create_from(&common, &commit, &TreeSource::Commit(commit.clone()), name)
    }

    /// A task tree holding the user's index (what is staged) on top of `head`.
    pub fn from_index(repo: &Path, head: &str, name: &str) -> Result<TaskTree, SandboxError> {
        let common = bugloop_git::common_dir(repo)?;
        let index = PathBuf::from(
            GitCommand::in_work_tree(repo)
                .args(["rev-parse", "--path-format=absolute", "--git-path", "index"])
                .text()?,
        );
        // A copy, so git's own reads never touch the user's index file.
        let copy = common.join(format!(
            "bugloop/index-{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        if let Some(parent) = copy.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
        }
        std::fs::copy(&index, &copy).map_err(|e| io_error(&index, e))?;
        let tree = Self::create_from(
            &common,
            head,
            &TreeSource::Index {
                index: copy.clone(),
            },
            name,
        );
        let _ = std::fs::remove_file(&copy);
        tree
    }

    fn create_from(
        common: &Path,
        commit: &str,
        source: &TreeSource,
        name: &str,
    ) -> Result<TaskTree, SandboxError> {
        remove_stale(common);
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let label = format!(
            "{safe}-{}-{}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let root = common.join("bugloop/tasks").join(&label);
        make_private_dir(&root)?;
        let tree = root.join("tree");
        std::fs::create_dir(&tree).map_err(|e| io_error(&tree, e))?;
        let result = (|| {
            let base_entries = list_tree(common, source)?;
            let stamps = export(common, &tree, &base_entries)?;
            let shadow = ShadowGit::create(common, &root.join("git"), commit)?;
            let sha256 = git_text(common, &["rev-parse", "--show-object-format"])
                .is_ok_and(|f| f == "sha256");
            Ok::<_, SandboxError>((base_entries, stamps, shadow, sha256))
        })();
        match result {
            Ok((base_entries, stamps, shadow, sha256)) => Ok(TaskTree {
                common: common.to_path_buf(),
                root,
                tree,
                shadow,
                head: commit.to_owned(),
                base_entries,
                stamps,
                sha256,
                reference: format!("refs/bugloop/tasks/{label}"),
                removed: false,
            }),
            Err(error) => {
                force_remove(&root);
                Err(error)
            }
        }
    }

    /// The directory with the files.
    pub fn path(&self) -> &Path {
        &self.tree
    }

    /// The commit the tree stands on (advanced by [`TaskTree::commit`]).
    pub fn head(&self) -> &str {
        &self.head
    }

    /// The sanitized git directory sandboxed commands see at the tree's `.git`.
    pub fn git_mount(&self) -> GitMount {
        self.shadow.mount()
    }

    /// Reads the tree as data and compares it with HEAD.
    pub fn changes(&self) -> Result<Changes, SandboxError> {
        let mut result = Changes::default();
        let mut present: BTreeSet<Vec<u8>> = BTreeSet::new();
        for (raw, full) in self.current_files() {
            let shown = String::from_utf8_lossy(&raw).into_owned();
            let Ok(metadata) = std::fs::symlink_metadata(&full) else {
                continue;
            };
            let base = self.base_entries.get(&raw);
            if base.is_some_and(|b| b.mode == 0o160000) {
                present.insert(raw);
                continue;
            }
            let Some((mode, oid)) =
                self.recorded_as(&raw, &shown, &full, &metadata, base, &mut result)?
            else {
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
    /// sees it).
    fn current_files(&self) -> Vec<(Vec<u8>, PathBuf)> {
        let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
        let mut current: Vec<(Vec<u8>, PathBuf)> = Vec::new();
        let walker = ignore::WalkBuilder::new(&self.tree)
            .hidden(false)
            .ignore(false)
            .parents(false)
            .git_global(false)
            .git_exclude(false)
            .git_ignore(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| !e.file_name().as_bytes().eq_ignore_ascii_case(b".git"))
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
        current
    }

    /// The mode and object id git would record for the file at `full`, or `None` where it cannot
    /// be committed (the reason is added to `result`'s refused or skipped).
    fn recorded_as(
        &self,
        raw: &[u8],
        shown: &str,
        full: &Path,
        metadata: &std::fs::Metadata,
        base: Option<&TreeEntry>,
        result: &mut Changes,
    ) -> Result<Option<(u32, String)>, SandboxError> {
        if metadata.file_type().is_symlink() {
            self.recorded_symlink(raw, shown, full, base, result)
                .map(Some)
        } else if metadata.is_file() {
            self.recorded_file(raw, shown, full, metadata, base, result)
        } else {
            result
                .skipped
                .push(format!("{shown} is not a regular file or symlink"));
            Ok(None)
        }
    }

    /// A symlink is recorded by its target; one pointing outside the repository is refused
    /// unless HEAD already has it so (the agent did not make it).
    fn recorded_symlink(
        &self,
        raw: &[u8],
        shown: &str,
        full: &Path,
        base: Option<&TreeEntry>,
        result: &mut Changes,
    ) -> Result<(u32, String), SandboxError> {
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
        raw: &[u8],
        shown: &str,
        full: &Path,
        metadata: &std::fs::Metadata,
        base: Option<&TreeEntry>,
        result: &mut Changes,
    ) -> Result<Option<(u32, String)>, SandboxError> {
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

    /// The content of the regular file at `relative` in the tree, read as data: never through a
    /// symlink (neither the file nor a directory above it), never a FIFO or a device, at most
    /// `max` bytes. What an agent wrote is read on the host only this way.
    pub fn read_regular_file(&self, relative: &Path, max: u64) -> Result<Vec<u8>, String> {
        if !plain(relative) || !self.inside_real_directories(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        match read_regular(&self.tree.join(relative), max) {
            Ok(Ok(content)) if content.len() as u64 <= max => Ok(content),
            Ok(Ok(_)) => Err(format!("{} is larger than {max} bytes", relative.display())),
            Ok(Err(reason)) if reason.ends_with("bugloop commits") => {
                Err(format!("{} is larger than {max} bytes", relative.display()))
            }
            Ok(Err(reason)) => Err(format!("{} {reason}", relative.display())),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Puts `content` at `relative` as a regular file of mode 0644 (a test bugloop places),
    /// whatever the tree held there: a file or a symlink is replaced, never followed; missing
    /// directories above it are made, and one that is not a real directory (a symlink out of
    /// the tree, say) refuses the write. Nothing outside the tree is ever written.
    pub fn write_regular_file(&self, relative: &Path, content: &[u8]) -> Result<(), String> {
        if !plain(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        let mut current = self.tree.clone();
        if let Some(parent) = relative.parent() {
            for component in parent.components() {
                current.push(component);
                match std::fs::symlink_metadata(&current) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        return Err(format!(
                            "{} is not a directory of the tree",
                            current
                                .strip_prefix(&self.tree)
                                .unwrap_or(&current)
                                .display()
                        ));
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                        std::fs::create_dir(&current).map_err(|e| e.to_string())?;
                    }
                    Err(error) => return Err(error.to_string()),
                }
            }
        }
        self.remove_file(relative)?;
        let path = self.tree.join(relative);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(|e| format!("{}: {e}", relative.display()))?;
        file.write_all(content)
            .map_err(|e| format!("{}: {e}", relative.display()))
    }

    /// Removes the file or symlink at `relative` (a symlink itself, never what it points to); a
    /// path that holds nothing is fine, a directory is refused.
    pub fn remove_file(&self, relative: &Path) -> Result<(), String> {
        if !plain(relative) || !self.inside_real_directories(relative) {
            return Err(format!(
                "{} is not a plain path inside the tree",
                relative.display()
            ));
        }
        let path = self.tree.join(relative);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => Err(format!("{} is a directory", relative.display())),
            Ok(_) => {
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", relative.display()))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("{}: {error}", relative.display())),
        }
    }

    fn inside_real_directories(&self, relative: &Path) -> bool {
        let mut current = self.tree.clone();
        if let Some(parent) = relative.parent() {
            for component in parent.components() {
                current.push(component);
                match std::fs::symlink_metadata(&current) {
                    Ok(m) if m.is_dir() => {}
                    _ => return false,
                }
            }
        }
        true
    }

    /// Commits `changes` on top of HEAD with `git fast-import` into the repository's object store
    /// (no work tree, no hooks), and advances HEAD. Refuses changes that were refused.
    pub fn commit(
        &mut self,
        changes: &Changes,
        message: &str,
        author: (&str, &str),
    ) -> Result<String, SandboxError> {
        if let Some(reason) = changes.refused.first() {
            return Err(SandboxError::Refused(reason.clone()));
        }
        let commit = self.import(&self.reference, &changes.changes, message, author)?;
        self.advance(&commit)?;
        Ok(commit)
    }

    /// Writes the tree's `changes` as a commit on top of HEAD at `reference`, without moving
    /// HEAD (replacing what `reference` held): what an unfinished piece of work looked like, for
    /// a later run to [`restore`](TaskTree::restore). Symlinks leading out of the tree are left out (they could
    /// never be committed).
    pub fn snapshot(
        &self,
        changes: &Changes,
        message: &str,
        author: (&str, &str),
        reference: &str,
    ) -> Result<String, SandboxError> {
        let kept: Vec<Change> = changes
            .changes
            .iter()
            .filter(|change| {
                change.mode != 0o120000
                    || change.kind == ChangeKind::Deleted
                    || std::fs::read_link(self.tree.join(OsStr::from_bytes(&change.raw))).is_ok_and(
                        |target| {
                            symlink_stays_inside(
                                Path::new(OsStr::from_bytes(&change.raw)),
                                target.as_os_str().as_bytes(),
                            )
                        },
                    )
            })
            .cloned()
            .collect();
        // Replaces what the reference held: fast-import refuses to move a branch backwards.
        git_text(&self.common, &["update-ref", "-d", reference])?;
        self.import(reference, &kept, message, author)
    }

    /// Puts the files of `commit` (a [`snapshot`](TaskTree::snapshot) of this tree) in the tree,
    /// HEAD staying where it is: they read as changes against HEAD, as the work they were.
    pub fn restore(&mut self, commit: &str) -> Result<(), SandboxError> {
        let commit = git_text(
            &self.common,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{commit}^{{commit}}"),
            ],
        )?;
        let entries = list_tree(&self.common, &TreeSource::Commit(commit))?;
        force_remove(&self.tree);
        std::fs::create_dir(&self.tree).map_err(|e| io_error(&self.tree, e))?;
        let stamps = export(&self.common, &self.tree, &entries)?;
        // A stamp stands for HEAD's content: only files that are as HEAD has them keep one.
        self.stamps = stamps
            .into_iter()
            .filter(|(path, _)| self.base_entries.get(path) == entries.get(path))
            .collect();
        Ok(())
    }

    /// Writes `changes` (read from the tree) on top of HEAD at `reference` with `git
    /// fast-import`; returns the commit.
    fn import(
        &self,
        reference: &str,
        changes: &[Change],
        message: &str,
        author: (&str, &str),
    ) -> Result<String, SandboxError> {
        let clean = |s: &str| s.replace(['<', '>', '\n', '\r'], "");
        let mut stream: Vec<u8> = Vec::new();
        let message = message.as_bytes();
        stream.extend_from_slice(
            format!(
                "commit {}\ncommitter {} <{}> now\ndata {}\n",
                reference,
                clean(author.0),
                clean(author.1),
                message.len()
            )
            .as_bytes(),
        );
        stream.extend_from_slice(message);
        stream.extend_from_slice(format!("\nfrom {}\n", self.head).as_bytes());
        for change in changes {
            let path = quote_path(&change.raw);
            match change.kind {
                ChangeKind::Deleted => {
                    stream.extend_from_slice(b"D ");
                    stream.extend_from_slice(&path);
                    stream.push(b'\n');
                }
                ChangeKind::Added | ChangeKind::Modified => {
                    let full = self.tree.join(OsStr::from_bytes(&change.raw));
                    let content = if change.mode == 0o120000 {
                        std::fs::read_link(&full)
                            .map_err(|e| io_error(&full, e))?
                            .as_os_str()
                            .as_bytes()
                            .to_vec()
                    } else {
                        read_regular(&full, MAX_COMMITTED_FILE)?.map_err(|reason| {
                            SandboxError::Refused(format!("{} {reason}", change.path))
                        })?
                    };
                    if object_id(self.sha256, "blob", &content) != change.oid {
                        return Err(SandboxError::Refused(format!(
                            "{} changed after it was read; nothing was committed",
                            change.path
                        )));
                    }
                    stream.extend_from_slice(format!("M {:o} inline ", change.mode).as_bytes());
                    stream.extend_from_slice(&path);
                    stream.extend_from_slice(format!("\ndata {}\n", content.len()).as_bytes());
                    stream.extend_from_slice(&content);
                    stream.push(b'\n');
                }
            }
        }
        stream.extend_from_slice(b"done\n");
        let import =
            host_git(&self.common).args(["fast-import", "--quiet", "--done", "--date-format=now"]);
        let args = import.describe();
        let mut child = import.spawn(Stdio::piped(), Stdio::null(), Stdio::piped())?;
        if let Some(mut stdin) = child.stdin.take() {
            let writer = std::thread::spawn(move || stdin.write_all(&stream));
            let _ = writer.join();
        }
        GitCommand::finish(&args, child)?;
        git_text(&self.common, &["rev-parse", "--verify", reference])
    }

    /// HEAD moves to `commit` (a commit made from this tree's contents).
    fn advance(&mut self, commit: &str) -> Result<(), SandboxError> {
        self.base_entries = list_tree(&self.common, &TreeSource::Commit(commit.to_owned()))?;
        self.stamps.clear();
        self.head = commit.to_owned();
        self.shadow.set_head(commit)
    }

    /// Puts the tree back to HEAD: everything an attempt left is gone.
    pub fn reset(&mut self) -> Result<(), SandboxError> {
        force_remove(&self.tree);
        std::fs::create_dir(&self.tree).map_err(|e| io_error(&self.tree, e))?;
        self.stamps = export(&self.common, &self.tree, &self.base_entries)?;
        Ok(())
    }

    /// Removes the tree now (also done on drop).
    pub fn remove(mut self) -> Result<(), SandboxError> {
        self.cleanup();
        Ok(())
    }

    fn cleanup(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        force_remove(&self.root);
        let _ = std::fs::remove_file(self.root.join("git").with_extension("gitfile"));
        let _ = git_text(&self.common, &["update-ref", "-d", &self.reference]);
    }
}

impl Drop for ShadowGit {
    fn drop(&mut self) {
        if let Some(root) = self.owned.take() {
            force_remove(&root);
            let _ = std::fs::remove_file(self.dir.with_extension("gitfile"));
        }
    }
}

impl Drop for TaskTree {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// A path for fast-import: C-style quoted when it holds anything that could end or confuse a
/// command line.
fn quote_path(raw: &[u8]) -> Vec<u8> {
    let needs = raw.first() == Some(&b'"')
        || raw
            .iter()
            .any(|b| *b == b'\n' || *b == b'\\' || *b == b'"' || *b < 0x20 || *b == 0x7f);
    if !needs {
        return raw.to_vec();
    }
    let mut quoted = vec![b'"'];
    for byte in raw {
        match byte {
            b'"' => quoted.extend_from_slice(b"\\\""),
            b'\\' => quoted.extend_from_slice(b"\\\\"),
            b'\n' => quoted.extend_from_slice(b"\\n"),
            b'\t' => quoted.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => quoted.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
            _ => quoted.push(*byte),
        }
    }
    quoted.push(b'"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_must_stay_inside() {
        assert!(symlink_stays_inside(Path::new("a/link"), b"../b"));
        assert!(symlink_stays_inside(Path::new("link"), b"src/lib.rs"));
        assert!(!symlink_stays_inside(Path::new("link"), b"../outside"));
        assert!(!symlink_stays_inside(Path::new("a/link"), b"../../x"));
        assert!(!symlink_stays_inside(Path::new("link"), b"/etc/passwd"));
        assert!(!symlink_stays_inside(Path::new("link"), b".git/config"));
        assert!(!symlink_stays_inside(Path::new("a/link"), b"../.GIT/hooks"));
    }

    #[test]
    fn unsafe_tree_paths_are_not_written() {
        assert!(safe_relative(b"src/lib.rs").is_some());
        assert!(safe_relative(b"../x").is_none());
        assert!(safe_relative(b"a/.git/config").is_none());
        assert!(safe_relative(b"a/.GiT").is_none());
        assert!(safe_relative(b"/abs").is_none());
        assert!(safe_relative(b"").is_none());
    }

    /// A test bugloop places is written as a regular file inside the tree only: through a
    /// directory that is a symlink out of the tree, over a symlink, or above the tree, never.
    #[test]
    fn a_placed_file_never_goes_through_a_link() {
        let repo = bugloop_testkit::TestRepo::with_files(&[("kept.txt", "kept\n")]);
        let tree = TaskTree::create(repo.path(), &repo.head(), "placing").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("tests")).unwrap();
        let refused = tree
            .write_regular_file(Path::new("tests/test_x.py"), b"x")
            .unwrap_err();
        assert!(
            refused.contains("is not a directory of the tree"),
            "{refused}"
        );
        assert!(!outside.path().join("test_x.py").exists());
        let target = outside.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        std::os::unix::fs::symlink(&target, tree.path().join("linked.py")).unwrap();
        tree.write_regular_file(Path::new("linked.py"), b"ours")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        let placed = std::fs::symlink_metadata(tree.path().join("linked.py")).unwrap();
        assert!(placed.is_file(), "the link is replaced by a regular file");
        for path in ["../x.py", "/tmp/x.py", ".git/hooks/pre-commit"] {
            assert!(
                tree.write_regular_file(Path::new(path), b"x").is_err(),
                "{path}"
            );
        }
        tree.write_regular_file(Path::new("new/deep/test.py"), b"ok")
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.path().join("new/deep/test.py")).unwrap(),
            "ok"
        );
    }

    #[test]
    fn fast_import_paths_are_quoted() {
        assert_eq!(quote_path(b"plain path"), b"plain path".to_vec());
        assert_eq!(quote_path(b"a\nb"), b"\"a\\nb\"".to_vec());
        assert_eq!(quote_path(b"\"q"), b"\"\\\"q\"".to_vec());
        assert_eq!(quote_path(b"\x01"), b"\"\\001\"".to_vec());
    }

    /// What an attempt left in one tree (an edit, a new file, a deletion, a symlink out of the
    /// tree) is found again in another tree from the same commit, as the same changes.
    #[test]
    fn a_snapshot_restores_the_edits_in_another_tree() {
        let repo = bugloop_testkit::TestRepo::with_files(&[
            ("kept.txt", "kept\n"),
            ("edited.txt", "one\n"),
            ("gone.txt", "gone\n"),
        ]);
        let head = repo.head();
        let first = TaskTree::create(repo.path(), &head, "attempt").unwrap();
        std::fs::write(first.path().join("edited.txt"), "two\n").unwrap();
        std::fs::create_dir(first.path().join("tests")).unwrap();
        std::fs::write(first.path().join("tests/new.txt"), "new\n").unwrap();
        std::fs::remove_file(first.path().join("gone.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", first.path().join("out")).unwrap();
        let changes = first.changes().unwrap();
        let reference = "refs/bugloop/test/attempt-1";
        let snapshot = first
            .snapshot(&changes, "attempt 1", ("bot", "bot@x"), reference)
            .unwrap();
        assert_eq!(first.head(), head, "HEAD does not move");
        // Taken again (a second attempt 1 after a retry): replaced.
        let again = first
            .snapshot(&changes, "attempt 1", ("bot", "bot@x"), reference)
            .unwrap();
        assert_eq!(repo.git(&["rev-parse", reference]), again);
        drop(first);

        let mut second = TaskTree::create(repo.path(), &head, "resumed").unwrap();
        second.restore(&snapshot).unwrap();
        let restored = second.changes().unwrap();
        let shown: Vec<(String, ChangeKind)> = restored
            .changes
            .iter()
            .map(|c| (c.path.clone(), c.kind))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("edited.txt".to_owned(), ChangeKind::Modified),
                ("gone.txt".to_owned(), ChangeKind::Deleted),
                ("tests/new.txt".to_owned(), ChangeKind::Added),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(second.path().join("kept.txt")).unwrap(),
            "kept\n"
        );
        assert!(restored.refused.is_empty(), "{:?}", restored.refused);
        assert!(second.restore("0123456789abcdef").is_err());
    }

    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            object_id(false, "blob", b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }
}
