//! Who left a directory on disk (a stage, a copy of `/etc`, a task tree, a cgroup, the
//! analyzers' configuration): a run killed before its drops leaves them, and the next run
//! removes those whose run is over.
//!
//! A run holds `<dir>.lock` beside each directory it makes, locked (the kernel's `flock`) until
//! it removes the directory: the lock ends with the process whatever PID namespace either run is
//! in, so a run as process 1 of a container and one on the host never take each other's live
//! directories for leftovers. Names carry the owner too, the process id and its start time, for
//! what cannot hold a lock beside it (a cgroup) and what older versions left: such an entry is a
//! leftover once that process is gone (its id free, or taken by a process started at another
//! time) and it is a minute old.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// How long a directory without a lock beside it may be new before it is judged by its name
/// alone: one being made (its lock not yet beside it), or a cgroup whose command has not yet
/// joined it, is that young.
const GRACE: Duration = Duration::from_secs(60);

/// This process as the owner of what it makes: `<pid>_<start time>`, or the pid alone where
/// `/proc` does not say when it started. Never holds a `-`, so names built as
/// `<prefix><token>-<n>` read back.
pub fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let pid = std::process::id();
        match i32::try_from(pid).ok().and_then(start_time) {
            Some(start) => format!("{pid}_{start}"),
            None => pid.to_string(),
        }
    })
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`'s 22nd field).
fn start_time(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19).map(str::to_owned)
}

/// Whether the process `token` names is gone: no process has its id, or the one that has it
/// started at another time. A token of an older version (the pid alone) is gone when it is
/// this process's own id (this process names nothing so) or no process has it.
pub fn gone(token: &str) -> bool {
    let (pid, start) = token
        .split_once('_')
        .map_or((token, None), |(pid, start)| (pid, Some(start)));
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    let missing = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        == Err(nix::errno::Errno::ESRCH);
    match start {
        _ if missing => true,
        Some(start) => start_time(pid).is_some_and(|now| now != start),
        None => i64::from(pid) == i64::from(std::process::id()),
    }
}

/// What says that a directory of this run's is in use: `<dir>.lock` beside it, locked by this
/// process until the directory is removed (then the claim is dropped, and the lock file goes).
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    _lock: File,
}

impl Claim {
    /// Claims `dir`, before it is made: `<dir>.lock` appears already locked (a hidden file of
    /// ours, locked, then linked to that name, which fails if anything is there), so no other
    /// run ever sees it free while this one lives.
    pub fn on(dir: &Path) -> std::io::Result<Claim> {
        let parent = dir.parent().unwrap_or(Path::new("."));
        let (lock, hidden) = hidden_lock(parent)?;
        let path = lock_path(dir);
        std::fs::hard_link(&hidden, &path)?;
        drop(hidden);
        Ok(Claim { path, _lock: lock })
    }
}

/// A new file of ours in `parent`, locked, under a hidden name no sweep reads; the name is
/// removed when the path is dropped.
fn hidden_lock(parent: &Path) -> std::io::Result<(File, tempfile::TempPath)> {
    let (lock, hidden) = tempfile::Builder::new()
        .prefix(".bugloop-claim-")
        .rand_bytes(12)
        .tempfile_in(parent)?
        .into_parts();
    lock.try_lock()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok((lock, hidden))
}

/// Makes a directory of ours in `parent`, `<prefix><token>-<random>`, claimed before it is
/// made: in a shared directory another user can neither guess its name nor take its lock's.
/// Tries a few names when one is taken (someone made it first).
pub(crate) fn claimed_dir(parent: &Path, prefix: &str) -> std::io::Result<(PathBuf, Claim)> {
    let mut last = None;
    for _ in 0..8 {
        let (lock, hidden) = hidden_lock(parent)?;
        let random = hidden
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(".bugloop-claim-"))
            .unwrap_or_default()
            .to_owned();
        let dir = parent.join(format!("{prefix}{}-{random}", token()));
        let path = lock_path(&dir);
        if let Err(error) = std::fs::hard_link(&hidden, &path) {
            last = Some(error);
            continue;
        }
        drop(hidden);
        let claim = Claim { path, _lock: lock };
        // The default mode (0777 less the umask): the sandbox's user reads what is shown it.
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((dir, claim)),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no name was free")))
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The lock file beside `dir`.
pub(crate) fn lock_path(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// This user's own entry of `kind` at `path` (never a link).
fn ours(path: &Path, directory: bool) -> Option<std::fs::Metadata> {
    std::fs::symlink_metadata(path).ok().filter(|m| {
        let kind = if directory { m.is_dir() } else { m.is_file() };
        kind && m.uid() == nix::unistd::Uid::effective().as_raw()
    })
}

/// Whether the lock file at `path` is free (no process holds it: its run is over); `None`
/// when there is no lock file of ours there.
fn free_lock(path: &Path) -> Option<bool> {
    ours(path, false)?;
    // Non-blocking: what is there now may be a FIFO put in its place since (opening one for
    // reading waits for a writer); only a regular file of ours is a lock.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    file.metadata()
        .ok()
        .filter(|m| m.is_file() && m.uid() == nix::unistd::Uid::effective().as_raw())?;
    Some(file.try_lock().is_ok())
}

/// Whether the entry at `path`, owned by `token`, is a leftover: its lock beside it is free,
/// or, without one, its owner is gone and it is older than [`GRACE`].
pub(crate) fn abandoned(path: &Path, token: &str) -> bool {
    match free_lock(&lock_path(path)) {
        Some(free) => free,
        None => left_by(path, token),
    }
}

/// Whether the entry at `path` is a gone owner's and older than [`GRACE`] (by its name alone:
/// for what has no lock of ours beside it).
pub(crate) fn left_by(path: &Path, token: &str) -> bool {
    let old = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|made| made.elapsed().is_ok_and(|age| age > GRACE));
    old && gone(token)
}

/// The directories in `root` named `<prefix><token>-...` that are leftovers ([`abandoned`]) and
/// this user's own (in a shared directory anyone can make a directory of that name).
pub(crate) fn stale_entries(root: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return stale;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(token) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if ours(&entry.path(), true).is_some() && abandoned(&entry.path(), token) {
            stale.push(entry.path());
        }
    }
    stale
}

/// Removes the leftovers in `root` (`<prefix><token>-...`, see [`stale_entries`]), their lock
/// files, and lock files of ours whose directory is gone and whose lock is free.
pub fn remove_stale(root: &Path, prefix: &str) {
    for stale in stale_entries(root, prefix) {
        let _ = std::fs::remove_dir_all(&stale);
        let _ = std::fs::remove_file(lock_path(&stale));
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_str().unwrap_or_default();
        if name.starts_with(prefix) {
            remove_orphan_lock(&entry.path());
        } else if name.starts_with(".bugloop-claim-") {
            // A claim's hidden file a run was killed with, before it gave it its name.
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|made| made.elapsed().is_ok_and(|age| age > GRACE));
            if old && free_lock(&entry.path()) == Some(true) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Removes `path` when it is a lock file of ours whose directory is gone and whose lock is
/// free (a run killed between removing a directory and its lock file).
pub(crate) fn remove_orphan_lock(path: &Path) {
    let Some(dir) = path
        .to_str()
        .and_then(|p| p.strip_suffix(".lock"))
        .map(PathBuf::from)
    else {
        return;
    };
    if std::fs::symlink_metadata(&dir).is_err() && free_lock(path) == Some(true) {
        let _ = std::fs::remove_file(path);
    }
}

/// A directory of this run's in the temporary directory, `bugloop-<kind>-<token>-...`, claimed;
/// removed on drop.
#[derive(Debug)]
pub struct OwnedDir {
    path: PathBuf,
    _claim: Claim,
}

impl OwnedDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A new [`OwnedDir`] of `kind`; those a killed run left are removed first.
pub fn temp_dir(kind: &str) -> std::io::Result<OwnedDir> {
    let prefix = format!("bugloop-{kind}-");
    let root = std::env::temp_dir();
    remove_stale(&root, &prefix);
    let (path, claim) = claimed_dir(&root, &prefix)?;
    Ok(OwnedDir {
        path,
        _claim: claim,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_id_is_told_from_its_first_owner_by_its_start() {
        let own = token();
        assert!(!gone(own));
        let pid = std::process::id();
        // This process's id with another start: a killed run's that had the id before (process
        // 1 of a container, run after run).
        assert!(gone(&format!("{pid}_1")));
        // An older version's name with this process's id is not this process's.
        assert!(gone(&pid.to_string()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ended = child.id();
        child.wait().unwrap();
        assert!(gone(&ended.to_string()));
        assert!(gone(&format!("{ended}_5")));
        // Process 1 runs, and an older version's name for it cannot be told: kept.
        assert!(!gone("1"));
        assert!(!gone("not-a-pid"));
    }

    /// A directory whose claim is held is never a leftover, whatever its name says (a run in
    /// another PID namespace: its owner looks gone from here); once the claim is dropped (the
    /// run killed) it is.
    #[test]
    fn a_claimed_directory_is_kept_until_its_claim_ends() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bugloop-test-999999_1-0");
        std::fs::create_dir(&dir).unwrap();
        let claim = Claim::on(&dir).unwrap();
        // A lock file cannot be claimed twice.
        assert!(Claim::on(&dir).is_err());
        remove_stale(root.path(), "bugloop-test-");
        assert!(dir.exists(), "a live claim's directory was removed");
        // Killed: the lock is free, but its file stays beside the directory.
        std::mem::forget(claim);
        let lock = lock_path(&dir);
        std::fs::remove_file(&lock).unwrap();
        std::fs::write(&lock, "").unwrap();
        remove_stale(root.path(), "bugloop-test-");
        assert!(!dir.exists() && !lock.exists());
    }

    /// Without a lock beside it, a directory is a leftover only when its owner is gone and it
    /// is a minute old; a lock file whose directory went is removed when free.
    #[test]
    fn an_unclaimed_directory_goes_by_its_owner_and_age() {
        let root = tempfile::tempdir().unwrap();
        let young = root.path().join("bugloop-test-999999_1-0");
        let old = root.path().join("bugloop-test-999999_1-1");
        let mine = root.path().join(format!("bugloop-test-{}-2", token()));
        for dir in [&young, &old, &mine] {
            std::fs::create_dir(dir).unwrap();
        }
        let aged = std::process::Command::new("touch")
            .args(["-d", "2 minutes ago"])
            .args([&old, &mine])
            .status()
            .unwrap();
        assert!(aged.success());
        let orphan = root.path().join("bugloop-test-999999_1-3.lock");
        std::fs::write(&orphan, "").unwrap();
        remove_stale(root.path(), "bugloop-test-");
        assert_eq!(
            [&young, &old, &mine, &orphan].map(|p| p.exists()),
            [true, false, true, false]
        );
    }

    /// A claimed directory's lock is held from the moment its name appears: a sweep never
    /// takes it, and a name taken first (by another user, say) is passed over for another.
    #[test]
    fn a_claimed_directory_is_locked_before_it_is_seen() {
        let root = tempfile::tempdir().unwrap();
        let (first, first_claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        let (second, _second_claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        assert_ne!(first, second);
        assert_eq!(free_lock(&lock_path(&first)), Some(false));
        remove_stale(root.path(), "bugloop-test-");
        assert!(first.is_dir() && second.is_dir());
        // No hidden claim file is left once a name is given.
        let hidden = std::fs::read_dir(root.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".bugloop-claim-")
            })
            .count();
        assert_eq!(hidden, 0);
        drop(first_claim);
        assert!(!lock_path(&first).exists());
    }
}
