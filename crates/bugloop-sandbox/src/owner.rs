//! Who left a directory on disk (a stage, a copy of `/etc`, a task tree, a cgroup, the
//! analyzers' configuration): a run killed before its drops leaves them, and the next run
//! removes those whose run is over.
//!
//! A run holds each directory it makes locked (the kernel's `flock` on its claim mark, a file
//! in it that only this user can open) until it removes it: the lock ends with the process
//! whatever PID namespace either run is in,
//! so a run as process 1 of a container and one on the host never take each other's live
//! directories for leftovers. Names carry the owner too, the process id and its start time: an
//! entry is a leftover once no one holds it and that process is gone (its id free, or taken by a
//! process started at another time); what no lock can be held on (a cgroup, a file) goes by its
//! name once a minute old.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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

/// What says that a directory of this run's is in use: its mark ([`CLAIMED`]), a file only this
/// user can open, held locked (the kernel's `flock`) until the directory is removed. Not the
/// directory itself: any user who can read it (a stage is `0755` for its mount points) could
/// lock that and keep a killed run's directory from ever being removed. Nothing stands beside
/// it whose name another user could take first.
#[derive(Debug)]
pub struct Claim {
    _lock: File,
    dir: PathBuf,
}

/// What this run holds now, for [`held`]: its claimed directories and its cgroups.
static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// One entry of [`HELD`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    /// A directory held by a [`Claim`].
    Dir(PathBuf),
    /// A cgroup (no lock can be held on one; it goes once its processes have).
    Cgroup(PathBuf),
}

fn held_now() -> std::sync::MutexGuard<'static, Vec<Held>> {
    // A panic while the list was held leaves it whole: each change is one push or removal.
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Notes `entry` as this run's until [`release`]d.
pub(crate) fn hold(entry: Held) {
    held_now().push(entry);
}

/// The end of what [`hold`] noted.
pub(crate) fn release(entry: &Held) {
    held_now().retain(|held| held != entry);
}

/// What this run holds now: at Ctrl-C, what [`remove_when_released`] removes once this run
/// has stopped.
pub fn held() -> Vec<Held> {
    held_now().clone()
}

impl Drop for Claim {
    fn drop(&mut self) {
        release(&Held::Dir(std::mem::take(&mut self.dir)));
    }
}

/// Put in a directory once it is locked: found with the lock free, the run that held it is
/// over (without it, the directory may be one a run has made and not yet locked).
const CLAIMED: &str = ".bugloop-claimed";

impl Claim {
    /// Claims the directory `dir`, of ours (never through a link): marks it claimed and holds
    /// the mark locked.
    pub fn on(dir: &Path) -> std::io::Result<Claim> {
        open_dir(dir)?;
        let lock = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(dir.join(CLAIMED))?;
        lock.try_lock()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        hold(Held::Dir(dir.to_path_buf()));
        Ok(Claim {
            _lock: lock,
            dir: dir.to_path_buf(),
        })
    }
}

/// Whether `dir`'s claim is held: its mark is locked by a run, or is there and cannot be opened
/// to tell (not ours, not a file: nothing bugloop removes). `None` when `dir` has no mark.
fn claim_held(dir: &Path) -> Option<bool> {
    let mark = dir.join(CLAIMED);
    std::fs::symlink_metadata(&mark).ok()?;
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&mark);
    Some(match opened {
        Ok(file) => {
            let ours = file
                .metadata()
                .is_ok_and(|m| m.is_file() && m.uid() == nix::unistd::Uid::effective().as_raw());
            !ours || file.try_lock().is_err()
        }
        Err(_) => true,
    })
}

/// `dir` opened: a directory of ours, never a link, never waiting (a FIFO put in its place
/// since it was looked at is not opened).
fn open_dir(dir: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(dir)?;
    let metadata = file.metadata()?;
    if !metadata.is_dir() || metadata.uid() != nix::unistd::Uid::effective().as_raw() {
        return Err(std::io::Error::other("not a directory of ours"));
    }
    Ok(file)
}

/// Makes a directory of ours in `parent`, `<prefix><token>-<random>` (made as `mkdtemp` does:
/// a name no one can guess, never one that is there, `0700`), and claims it.
pub(crate) fn claimed_dir(parent: &Path, prefix: &str) -> std::io::Result<(PathBuf, Claim)> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", token()))
        .rand_bytes(12)
        // Private: the base's files, a task's tree. Where others must read, the caller opens it.
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)?
        .keep();
    match Claim::on(&dir) {
        Ok(claim) => Ok((dir, claim)),
        Err(error) => {
            let _ = std::fs::remove_dir(&dir);
            Err(error)
        }
    }
}

/// How long after it is made a directory may still be unclaimed: it is made, then locked.
const CLAIMING: Duration = Duration::from_secs(5);

/// Whether the entry at `path`, owned by `token`, is a leftover: its owner is gone (see
/// [`gone`]) and it is not held: a directory marked claimed that no process holds locked, or an
/// unmarked one a few seconds old (the moment between making and locking it); an entry no lock
/// can be held on (a file, a cgroup) only once a minute old.
pub(crate) fn abandoned(path: &Path, token: &str) -> bool {
    if open_dir(path).is_err() {
        return left_by(path, token);
    }
    match claim_held(path) {
        Some(held) => !held && gone(token),
        None => older_than(path, CLAIMING) && gone(token),
    }
}

/// Whether the entry at `path` is a gone owner's and older than [`GRACE`] (by its name alone:
/// for what no lock is held on).
pub(crate) fn left_by(path: &Path, token: &str) -> bool {
    older_than(path, GRACE) && gone(token)
}

fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|made| made.elapsed().is_ok_and(|elapsed| elapsed > age))
}

/// The directories in `root` named `<prefix><token>-...` that are leftovers ([`abandoned`]) and
/// this user's own (in a shared directory anyone can make a directory of that name).
pub(crate) fn stale_entries(root: &Path, prefix: &str) -> Vec<PathBuf> {
    entries_where(root, prefix, abandoned)
}

/// The same for directories no run claims (cgroups): by their name, once a minute old.
pub(crate) fn unclaimed_leftovers(root: &Path, prefix: &str) -> Vec<PathBuf> {
    entries_where(root, prefix, left_by)
}

fn entries_where(root: &Path, prefix: &str, left: fn(&Path, &str) -> bool) -> Vec<PathBuf> {
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
        let ours = std::fs::symlink_metadata(entry.path())
            .is_ok_and(|m| m.is_dir() && m.uid() == nix::unistd::Uid::effective().as_raw());
        if ours && left(&entry.path(), token) {
            stale.push(entry.path());
        }
    }
    stale
}

/// Removes the leftovers in `root` (`<prefix><token>-...`, see [`stale_entries`]).
pub fn remove_stale(root: &Path, prefix: &str) {
    for stale in stale_entries(root, prefix) {
        force_remove(&stale);
    }
}

/// Removes what this process holds ([`held`]), at its end: nothing uses it any more.
pub fn remove_own() {
    for entry in held() {
        match &entry {
            Held::Dir(dir) => force_remove(dir),
            Held::Cgroup(dir) => {
                let _ = std::fs::remove_dir(dir);
            }
        }
        release(&entry);
    }
}

/// Removes what an interrupted run (`owner`) held, once it has let go of it: run by a process
/// of its own, started at Ctrl-C, so nothing the stopping run still does races the removal.
/// A directory goes once its claim is free and only when its name and mark say it is one of
/// `owner`'s claimed directories; a cgroup once its processes are gone (the kernel refuses to
/// remove one that has any). What is still held after `wait` stays for the next run.
pub fn remove_when_released(owner: &str, entries: &[Held], wait: Duration) {
    let until = Instant::now() + wait;
    let mut left: Vec<&Held> = entries.iter().collect();
    while !left.is_empty() {
        left.retain(|entry| match entry {
            Held::Dir(dir) => !remove_released_dir(owner, dir),
            Held::Cgroup(dir) => {
                let named_ours = dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("bugloop-{owner}-")));
                named_ours
                    && std::fs::remove_dir(dir)
                        .is_err_and(|e| e.kind() != std::io::ErrorKind::NotFound)
            }
        });
        if Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Whether `dir` is done with: removed now (`owner`'s, marked claimed, its claim free), gone
/// already, or never one to remove.
fn remove_released_dir(owner: &str, dir: &Path) -> bool {
    let named_ours = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains(&format!("{owner}-")));
    if open_dir(dir).is_err() || !named_ours {
        return true;
    }
    match claim_held(dir) {
        None => true,
        Some(true) => false,
        Some(false) => {
            force_remove(dir);
            true
        }
    }
}

/// Removes a tree an agent may have made hard to remove (directories without permissions).
pub(crate) fn force_remove(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return;
    }
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if metadata.is_dir() {
            open_to_owner(&dir);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                stack.extend(entries.flatten().map(|e| e.path()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(path);
}

/// Gives the directory `dir` back to its owner (`0700`) through a handle opened without
/// following a link: one swapped for a link since it was looked at is left alone, where a
/// `chmod` by path would change, as root, whatever the link names. Without root a directory
/// that shuts its owner out cannot be opened: its mode is set by path, which can only ever
/// change a file of the same user.
fn open_to_owner(dir: &Path) {
    let mode = std::fs::Permissions::from_mode(0o700);
    let handle = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(dir);
    match handle {
        Ok(handle) => {
            let _ = handle.set_permissions(mode);
        }
        Err(_) if !nix::unistd::Uid::effective().is_root() => {
            let _ = std::fs::set_permissions(dir, mode);
        }
        Err(_) => {}
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

/// A new [`OwnedDir`] of `kind`; those a killed run left are removed first. The sandbox's user
/// may read what is put in it (the analyzers' configuration, the base's files), and no other
/// user: as root it is the sandbox's group's (`root:<gid>`, `0750`); otherwise ours alone
/// (`0700`), whom the sandbox runs as.
pub fn temp_dir(kind: &str) -> std::io::Result<OwnedDir> {
    let prefix = format!("bugloop-{kind}-");
    let root = crate::reach::temp_root()?;
    remove_stale(&root, &prefix);
    let (path, claim) = claimed_dir(&root, &prefix)?;
    let dir = OwnedDir {
        path,
        _claim: claim,
    };
    if nix::unistd::Uid::effective().is_root() {
        std::os::unix::fs::chown(&dir.path, Some(0), Some(crate::reach::sandbox_uid()))?;
        std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o750))?;
    }
    Ok(dir)
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

    /// A claimed directory is never a leftover, whatever its name says (a run in another PID
    /// namespace: its owner looks gone from here); once the claim ends (the run killed) it is.
    #[test]
    fn a_claimed_directory_is_kept_until_its_claim_ends() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bugloop-test-999999_1-0");
        std::fs::create_dir(&dir).unwrap();
        // Just made: its mark, not its age, says a run held it.
        let claim = Claim::on(&dir).unwrap();
        remove_stale(root.path(), "bugloop-test-");
        assert!(dir.exists(), "a live claim's directory was removed");
        drop(claim);
        remove_stale(root.path(), "bugloop-test-");
        assert!(!dir.exists());
    }

    /// An unclaimed directory is a leftover only when its owner is gone and it is older than
    /// the moment between making and claiming it.
    #[test]
    fn an_unclaimed_directory_goes_by_its_owner_and_age() {
        let root = tempfile::tempdir().unwrap();
        let young = root.path().join("bugloop-test-999999_1-0");
        let old = root.path().join("bugloop-test-999999_1-1");
        let mine = root.path().join(format!("bugloop-test-{}-2", token()));
        for dir in [&young, &old, &mine] {
            std::fs::create_dir(dir).unwrap();
        }
        age(&old);
        age(&mine);
        remove_stale(root.path(), "bugloop-test-");
        assert_eq!(
            [&young, &old, &mine].map(|p| p.exists()),
            [true, false, true]
        );
    }

    /// A claimed directory has a name no one can guess, and two are never one.
    #[test]
    fn claimed_directories_are_new_and_held() {
        let root = tempfile::tempdir().unwrap();
        let (first, _first_claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        let (second, _second_claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        assert_ne!(first, second);
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        age(&first);
        remove_stale(root.path(), "bugloop-test-");
        assert!(first.is_dir() && second.is_dir());
        assert_eq!(claim_held(&first), Some(true));
        // The mark is this user's alone: no other can open it to hold the lock.
        let mark = std::fs::symlink_metadata(first.join(CLAIMED)).unwrap();
        assert_eq!(mark.permissions().mode() & 0o777, 0o600);
    }

    /// A lock on the directory itself (which any user who can read it may take, as on a stage
    /// opened to the sandbox) keeps nothing: a killed run's directory still goes.
    #[test]
    fn a_lock_on_the_directory_itself_does_not_keep_a_leftover() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bugloop-test-999999_1-0");
        std::fs::create_dir(&dir).unwrap();
        drop(Claim::on(&dir).unwrap());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let others_lock = File::open(&dir).unwrap();
        others_lock.try_lock().unwrap();
        remove_stale(root.path(), "bugloop-test-");
        assert!(!dir.exists());
    }

    /// What a run stopped by Ctrl-C held goes once it lets go, and only that: a directory
    /// still held stays, as does one not named as the run's or not marked claimed.
    #[test]
    fn what_an_interrupted_run_held_goes_once_released() {
        let root = tempfile::tempdir().unwrap();
        let (released, claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        let (still_held, _held) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        assert!(held().contains(&Held::Dir(released.clone())));
        drop(claim);
        assert!(!held().contains(&Held::Dir(released.clone())));
        let unmarked = root.path().join(format!("bugloop-test-{}-x", token()));
        std::fs::create_dir(&unmarked).unwrap();
        // Released and marked, but another run's by its name.
        let (others, others_claim) = claimed_dir(root.path(), "bugloop-test-").unwrap();
        let renamed = root.path().join("bugloop-test-1_1-y");
        std::fs::rename(&others, &renamed).unwrap();
        drop(others_claim);
        let entries = [&released, &still_held, &unmarked, &renamed].map(|d| Held::Dir(d.clone()));
        remove_when_released(token(), &entries, Duration::from_millis(200));
        assert_eq!(
            [&released, &still_held, &unmarked, &renamed].map(|p| p.exists()),
            [false, true, true, true]
        );
    }

    /// Made two minutes ago (`touch -d`: the file system keeps the time it is given).
    fn age(path: &Path) {
        let aged = std::process::Command::new("touch")
            .args(["-d", "2 minutes ago"])
            .arg(path)
            .status()
            .unwrap();
        assert!(aged.success());
    }
}
