//! A commit's files written into a task tree from git's object store: its tree listed as data
//! (modes, ids and raw paths), every path checked before it is written, and the stamps that tell
//! a file the agent changed from one it left alone.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use bugloop_git::GitError;

use crate::SandboxError;

use super::{MAX_TREE_BYTES, host_git, io_error};

/// One entry of a git tree: mode, object id, path (bytes, as git stores it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TreeEntry {
    pub(super) mode: u32,
    pub(super) oid: String,
}

pub(super) fn list_tree(
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
pub(super) enum TreeSource {
    Commit(String),
    /// The user's index (staged changes), read through a copy of it.
    Index {
        index: PathBuf,
    },
}

/// Whether git takes the path component `name` for `.git`, and refuses a path through it: `.git`
/// in any case, with spaces or dots after it or a stream name (as NTFS reads it), holding
/// characters HFS+ ignores (zero-width joiners, direction marks, the byte-order mark), or
/// `git~1` (NTFS's short name for it).
pub(super) fn is_git_like(name: &[u8]) -> bool {
    let ignorable = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{206A}'..='\u{206F}' | '\u{FEFF}');
    let seen: String = String::from_utf8_lossy(name)
        .chars()
        .filter(|c| !ignorable(*c))
        .collect();
    let stem = seen.split(':').next().unwrap_or_default();
    let stem = stem.trim_end_matches([' ', '.']);
    stem.eq_ignore_ascii_case(".git") || stem.eq_ignore_ascii_case("git~1")
}

/// A path git may have written, safe to create below a root: relative, no `.`/`..`/empty
/// components, nothing git takes for `.git` ([`is_git_like`]).
pub(super) fn safe_relative(path: &[u8]) -> Option<&Path> {
    let path = Path::new(OsStr::from_bytes(path));
    let mut any = false;
    for component in path.components() {
        match component {
            Component::Normal(name) if !is_git_like(name.as_bytes()) => {
                any = true;
            }
            _ => return None,
        }
    }
    any.then_some(path)
}

/// Creates the directories of `relative` below `root`, refusing to pass through anything that is
/// not a real directory (a symlink planted as a parent).
pub(super) fn create_parents(root: &Path, relative: &Path) -> Result<(), SandboxError> {
    for current in parents_below(root, relative) {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(io_error(&current, "exists and is not a directory"));
            }
            Err(_) => std::fs::create_dir(&current).map_err(|e| io_error(&current, e))?,
        }
    }
    Ok(())
}

/// The directories `relative` lies in below `root`, outermost first: `root` joined with each
/// longer prefix of `relative`'s parent.
pub(super) fn parents_below(root: &Path, relative: &Path) -> impl Iterator<Item = PathBuf> {
    let mut current = root.to_path_buf();
    relative
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .map(move |component| {
            current.push(component);
            current.clone()
        })
}

/// Streams blobs out of the object store (`git cat-file --batch`, which applies no filter).
pub(super) fn for_each_blob(
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
pub(super) struct Stamp {
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Stamp {
    pub(super) fn of(metadata: &std::fs::Metadata) -> Stamp {
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
pub(super) fn write_files(
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
