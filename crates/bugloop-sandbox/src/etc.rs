//! `/etc` as one directory: a filtered copy of the host's, made once and bound whole, instead of
//! a bind per entry (about 130 entries, each a bind and a read-only remount, were most of a
//! sandboxed command's start-up).
//!
//! The copy holds what the per-entry view showed: the world-readable entries of `/etc` but the
//! denied ones (absent, as before), symlinks as symlinks, and inside the directories whatever is
//! not world-readable as an empty file or directory (masked, as before).
//!
//! Whoever owns a part of `/etc` (a service's directory) may swap an entry for a link while the
//! copy is made, and bugloop may run as root: so the walk never follows a link. Every directory
//! and file is opened relative to its parent's handle with `O_NOFOLLOW`, what it is and who may
//! read it is decided on the opened handle, and a file's bytes are read from that handle within
//! the size limit, to a limited depth, never into another file system. The copy is built in a
//! private directory (`mkdtemp`, `0700`) and stays private: as root it is opened to the
//! sandbox's group alone (`root:<its gid>`, `0750`), so no other local user reads a snapshot of
//! `/etc`; it is used again only while it is the same directory (owner, device, inode, mode),
//! only in a temporary directory no one else can rename it in and outside the workspace.
//!
//! It is made again when any entry of `/etc` changed (a hash of every entry's inode, mode, size
//! and ctime, taken by the same walk: a `chmod` or an edit is seen by the commands that start a
//! second later), or after [`REFRESH`]; a replaced copy is removed [`KEEP_REPLACED`] later (a
//! command that started with it may still be running), and copies of processes that are gone
//! are removed when a new one is made. A copy that could not be made is not tried again until
//! `/etc` changes or [`REFRESH`] passes (entries are bound one by one meanwhile). One difference
//! remains: access is decided from the mode bits, not ACLs.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, fstatat};

use crate::owner::{Claim, remove_stale};
use crate::reach::{reachable_by_others, safe_dir, stage_root};

/// How long `/etc` is taken as unchanged after it was looked at (looking costs a few ms, and
/// an agent may run commands in quick succession).
const UNCHANGED_FOR: Duration = Duration::from_secs(1);
/// How long a copy is used at most before it is made again.
const REFRESH: Duration = Duration::from_secs(15 * 60);
/// How long a replaced copy is kept for the commands that may still use it.
const KEEP_REPLACED: Duration = Duration::from_secs(2 * 60 * 60);
/// Directories deeper than this make `/etc` too unusual to copy.
const MAX_DEPTH: usize = 40;
/// An `/etc` larger than this is bound entry by entry rather than copied.
const MAX_ENTRIES: u64 = 20_000;
const MAX_BYTES: u64 = 64 << 20;

/// Entries of `/etc` never shown, even when world-readable: system-wide git configuration (it can
/// name credential helpers and programs), environment files (proxies with passwords), and
/// everything about authentication.
pub(crate) const ETC_DENIED: &[&str] = &[
    "gitconfig",
    "environment",
    "netrc",
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "security",
    "docker",
    "containerd",
    "kubernetes",
    "wireguard",
    "NetworkManager",
    "ppp",
    "letsencrypt",
    "krb5.keytab",
    "credstore",
    "credstore.encrypted",
    "subuid",
    "subgid",
    "machine-id",
];

/// Copies are named `<PREFIX><pid>-<random>`.
const PREFIX: &str = "bugloop-etc-";

/// What `/etc` looked like: a hash of every entry the copy would see (name, inode, mode, size,
/// ctime), or `None` when it could not be walked within the limits.
type Fingerprint = Option<u64>;

struct Copy {
    dir: PathBuf,
    /// The directory's device and inode: a copy is used only while it is this one.
    identity: (u64, u64),
    etc: Fingerprint,
    made: Instant,
    /// When `/etc` was last seen unchanged since the copy.
    checked: Instant,
    /// Held while the copy may be in use, so another run never takes it for a leftover.
    claim: Claim,
}

struct Copies {
    current: Option<Copy>,
    replaced: Vec<(PathBuf, Instant, Claim)>,
    /// `/etc` as it was when a copy could not be made, and when.
    failed: Option<(Fingerprint, Instant)>,
}

static COPIES: Mutex<Copies> = Mutex::new(Copies {
    current: None,
    replaced: Vec::new(),
    failed: None,
});

/// The directory to bind at `/etc`, made or made again as needed; `None` when no copy can be
/// made here (the caller then binds `/etc`'s entries one by one). `workspace` is where the
/// sandbox may write: a copy is never made under it.
pub(crate) fn etc_copy(workspace: &Path) -> Option<PathBuf> {
    let mut copies = COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // Where the sandbox may write, it could change the copy: none is used or made there.
    let under_workspace = |dir: &Path| {
        workspace
            .canonicalize()
            .ok()
            .zip(dir.canonicalize().ok())
            .is_none_or(|(workspace, dir)| dir.starts_with(workspace))
    };
    if under_workspace(&stage_root())
        || copies
            .current
            .as_ref()
            .is_some_and(|current| under_workspace(&current.dir))
    {
        return None;
    }
    if let Some(current) = &copies.current
        && current.checked.elapsed() < UNCHANGED_FOR
        && current.made.elapsed() < REFRESH
        && still_ours(&current.dir, current.identity)
    {
        return Some(current.dir.clone());
    }
    let etc = fingerprint(Path::new("/etc"));
    if let Some(current) = &mut copies.current
        && etc.is_some()
        && current.etc == etc
        && current.made.elapsed() < REFRESH
        && still_ours(&current.dir, current.identity)
    {
        current.checked = Instant::now();
        return Some(current.dir.clone());
    }
    if etc.is_none()
        || copies
            .failed
            .is_some_and(|(print, when)| print == etc && when.elapsed() < REFRESH)
    {
        return None;
    }
    let made = make_copy();
    let Some((dir, identity, claim)) = made else {
        copies.failed = Some((etc, Instant::now()));
        return None;
    };
    copies.failed = None;
    let copy = Copy {
        dir: dir.clone(),
        identity,
        etc,
        made: Instant::now(),
        checked: Instant::now(),
        claim,
    };
    if let Some(old) = copies.current.replace(copy) {
        copies.replaced.push((old.dir, Instant::now(), old.claim));
    }
    copies.replaced.retain(|(dir, when, _)| {
        let keep = when.elapsed() < KEEP_REPLACED;
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
        keep
    });
    Some(dir)
}

/// The mode a finished copy has: as root, open to the sandbox's group alone (bubblewrap runs
/// as the sandbox's own uid and gid then, see [`crate::reach::sandbox_uid`]); otherwise
/// private to us, who run bubblewrap.
fn finished_mode() -> u32 {
    if nix::unistd::Uid::effective().is_root() {
        0o750
    } else {
        0o700
    }
}

/// Makes a new copy in a private directory of its own; its path, identity and claim.
fn make_copy() -> Option<(PathBuf, (u64, u64), Claim)> {
    let root = stage_root();
    if !reachable_by_others(&root) || safe_dir(&root).as_ref() != Some(&root) {
        // The sandbox's user could not open the copy there, or someone else could replace it.
        return None;
    }
    remove_stale(&root, PREFIX);
    let (dir, claim) = crate::owner::claimed_dir(&root, PREFIX).ok()?;
    // Private while it is filled, as `mkdtemp` made it; opened to the sandbox's group once whole.
    if std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_err() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    let made = make(Path::new("/etc"), &dir).and_then(|()| {
        if nix::unistd::Uid::effective().is_root() {
            std::os::unix::fs::chown(&dir, Some(0), Some(crate::reach::sandbox_uid()))?;
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(finished_mode()))?;
        std::fs::symlink_metadata(&dir)
    });
    match made {
        Ok(metadata) => Some((dir, (metadata.dev(), metadata.ino()), claim)),
        Err(error) => {
            tracing::debug!(%error, "no copy of /etc: its entries are bound one by one");
            let _ = std::fs::remove_dir_all(&dir);
            None
        }
    }
}

/// Whether `dir` is still the copy made there: a directory (not a link), ours, with the
/// finished copy's mode, the same device and inode.
fn still_ours(dir: &Path, identity: (u64, u64)) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir()
            && m.uid() == nix::unistd::Uid::effective().as_raw()
            && m.mode() & 0o7777 == finished_mode()
            && (m.dev(), m.ino()) == identity
    })
}

/// A hash of every entry a copy of `etc` would see (its name, inode, mode, size and ctime),
/// walked as the copy is (never through a link, never into another file system, within the
/// limits); `None` when `etc` is beyond them.
fn fingerprint(etc: &Path) -> Fingerprint {
    use std::hash::{Hash, Hasher};
    fn walk(
        parent: &OwnedFd,
        device: u64,
        depth: usize,
        hasher: &mut std::hash::DefaultHasher,
        left: &mut u64,
    ) -> std::io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_large());
        }
        for name in names(parent)? {
            if depth == 0 && ETC_DENIED.contains(&name.to_string_lossy().as_ref()) {
                continue;
            }
            *left = left.checked_sub(1).ok_or_else(too_large)?;
            let Ok(seen) = fstatat(
                parent.as_fd(),
                name.as_os_str(),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            ) else {
                continue;
            };
            (name.as_bytes(), seen.st_ino, seen.st_mode, seen.st_size).hash(hasher);
            (seen.st_ctime, seen.st_ctime_nsec).hash(hasher);
            let directory = seen.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits();
            if directory && readable(&seen, true) && seen.st_dev == device {
                let Ok(handle) = openat(parent.as_fd(), name.as_os_str(), DIRECTORY, Mode::empty())
                else {
                    continue;
                };
                walk(&handle, device, depth + 1, hasher, left)?;
            }
        }
        Ok(())
    }
    let handle = nix::fcntl::open(etc, DIRECTORY, Mode::empty()).ok()?;
    let top = fstat(handle.as_fd()).ok()?;
    let mut hasher = std::hash::DefaultHasher::new();
    (top.st_ino, top.st_mode, top.st_ctime, top.st_ctime_nsec).hash(&mut hasher);
    walk(
        &handle,
        top.st_dev,
        0,
        &mut hasher,
        &mut MAX_ENTRIES.clone(),
    )
    .ok()?;
    Some(hasher.finish())
}

/// What is left of the copy's size limits.
struct Budget {
    entries: u64,
    bytes: u64,
}

fn too_large() -> std::io::Error {
    std::io::Error::other(format!(
        "/etc holds more than {MAX_ENTRIES} entries or {} MiB",
        MAX_BYTES >> 20
    ))
}

const DIRECTORY: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);
const FILE: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_NONBLOCK)
    .union(OFlag::O_NOCTTY)
    .union(OFlag::O_CLOEXEC);

/// Makes the copy in `copy` (an empty directory of ours) from `etc`: its world-readable entries
/// but the denied ones, each as [`copy_entry`] copies it.
fn make(etc: &Path, copy: &Path) -> std::io::Result<()> {
    let budget = &mut Budget {
        entries: MAX_ENTRIES,
        bytes: MAX_BYTES,
    };
    let handle = nix::fcntl::open(etc, DIRECTORY, Mode::empty())?;
    let device = fstat(handle.as_fd())?.st_dev;
    for name in names(&handle)? {
        if ETC_DENIED.contains(&name.to_string_lossy().as_ref()) {
            continue;
        }
        let at = Place {
            parent: &handle,
            device,
            depth: 0,
        };
        copy_entry(&at, &name, &copy.join(&name), budget)?;
    }
    Ok(())
}

/// Where an entry is read from: its directory's handle, `/etc`'s device and the depth.
struct Place<'a> {
    parent: &'a OwnedFd,
    device: u64,
    depth: usize,
}

/// The names in the directory open as `handle`, but `.` and `..`.
fn names(handle: &OwnedFd) -> std::io::Result<Vec<OsString>> {
    let mut dir = Dir::openat(handle.as_fd(), ".", DIRECTORY, Mode::empty())?;
    Ok(dir
        .iter()
        .filter_map(Result::ok)
        .map(|entry| OsStr::from_bytes(entry.file_name().to_bytes()).to_owned())
        .filter(|name| name != "." && name != "..")
        .collect())
}

fn readable(stat: &FileStat, directory: bool) -> bool {
    let others = stat.st_mode & 0o007;
    if directory {
        others & 0o005 == 0o005
    } else {
        others & 0o004 != 0
    }
}

/// Copies the entry `name` of the directory at `at` to `target`: a symlink as a symlink, a
/// world-readable file with its content, a world-readable directory with its entries; what is
/// not world-readable becomes an empty file or directory (at the top of `/etc` it is left out);
/// sockets, pipes, devices, other file systems and entries that change kind or go away while
/// read are left out. What an entry is and who may read it is decided on the opened handle,
/// never by following a path.
fn copy_entry(
    at: &Place<'_>,
    name: &OsStr,
    target: &Path,
    budget: &mut Budget,
) -> std::io::Result<()> {
    budget.entries = budget.entries.checked_sub(1).ok_or_else(too_large)?;
    if at.depth > MAX_DEPTH {
        return Err(too_large());
    }
    let top = at.depth == 0;
    let parent = at.parent;
    let Ok(seen) = fstatat(parent.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return Ok(());
    };
    let kind = SFlag::from_bits_truncate(seen.st_mode & SFlag::S_IFMT.bits());
    if kind == SFlag::S_IFLNK {
        let Ok(link) = readlinkat(parent.as_fd(), name) else {
            return Ok(());
        };
        return std::os::unix::fs::symlink(link, target);
    }
    if kind == SFlag::S_IFDIR {
        // A link swapped in since is refused by O_NOFOLLOW, and the entry left out.
        let Ok(handle) = openat(parent.as_fd(), name, DIRECTORY, Mode::empty()) else {
            return Ok(());
        };
        let stat = fstat(handle.as_fd())?;
        let shown = readable(&stat, true) && stat.st_dev == at.device;
        if top && !shown {
            return Ok(());
        }
        std::fs::create_dir(target)?;
        if shown {
            let inside = Place {
                parent: &handle,
                device: at.device,
                depth: at.depth + 1,
            };
            for inner in names(&handle)? {
                copy_entry(&inside, &inner, &target.join(&inner), budget)?;
            }
        }
        return std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755));
    }
    if kind != SFlag::S_IFREG {
        return Ok(());
    }
    copy_file(parent, name, target, budget, top)
}

/// A regular file of [`copy_entry`]'s: opened without following a link and judged on the
/// opened handle (still a regular file, world-readable); its content within the budget, or an
/// empty file when it is not readable (left out at the top of `/etc`).
fn copy_file(
    parent: &OwnedFd,
    name: &OsStr,
    target: &Path,
    budget: &mut Budget,
    top: bool,
) -> std::io::Result<()> {
    let Ok(handle) = openat(parent.as_fd(), name, FILE, Mode::empty()) else {
        return Ok(());
    };
    let stat = fstat(handle.as_fd())?;
    if SFlag::from_bits_truncate(stat.st_mode & SFlag::S_IFMT.bits()) != SFlag::S_IFREG {
        return Ok(());
    }
    let shown = readable(&stat, false);
    if top && !shown {
        return Ok(());
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(target)?;
    if shown {
        // Read from the opened file, within what the budget has left (a file that grows past
        // it makes the copy too large).
        let mut bytes = Vec::new();
        std::fs::File::from(handle)
            .take(budget.bytes + 1)
            .read_to_end(&mut bytes)?;
        budget.bytes = budget
            .bytes
            .checked_sub(bytes.len() as u64)
            .ok_or_else(too_large)?;
        out.write_all(&bytes)?;
    }
    let mode = if shown {
        (stat.st_mode & 0o755) | 0o444
    } else {
        0o444
    };
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The copy holds what the per-entry view showed: denied and unreadable top-level entries
    /// absent, unreadable files and directories inside shown ones empty, symlinks kept, nothing
    /// writable by others.
    #[test]
    fn the_copy_shows_what_the_view_showed() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir_all(etc.join("app/private")).unwrap();
        std::fs::write(etc.join("hostname"), "box\n").unwrap();
        std::fs::write(etc.join("gitconfig"), "[credential]\n").unwrap();
        std::fs::write(etc.join("root-only"), "x").unwrap();
        std::fs::set_permissions(
            etc.join("root-only"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::fs::write(etc.join("app/settings"), "a=1\n").unwrap();
        std::fs::write(etc.join("app/key"), "secret").unwrap();
        std::fs::set_permissions(etc.join("app/key"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
        std::fs::write(etc.join("app/private/inner"), "secret").unwrap();
        std::fs::set_permissions(
            etc.join("app/private"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        std::os::unix::fs::symlink("/usr/share/zoneinfo/UTC", etc.join("localtime")).unwrap();
        // A link to a directory is a link in the copy: what it points at is never read.
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::write(private.join("key"), "secret").unwrap();
        std::os::unix::fs::symlink(&private, etc.join("app/linked")).unwrap();
        // A pipe is left out (and opening it does not wait for a writer).
        nix::unistd::mkfifo(&etc.join("app/pipe"), Mode::from_bits_truncate(0o644)).unwrap();
        let copy = dir.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        make(&etc, &copy).unwrap();
        assert_eq!(
            std::fs::read_to_string(copy.join("hostname")).unwrap(),
            "box\n"
        );
        assert!(!copy.join("gitconfig").exists());
        assert!(!copy.join("root-only").exists());
        assert_eq!(
            std::fs::read_to_string(copy.join("app/settings")).unwrap(),
            "a=1\n"
        );
        assert_eq!(std::fs::read(copy.join("app/key")).unwrap(), b"");
        assert!(copy.join("app/private").is_dir());
        assert!(!copy.join("app/private/inner").exists());
        assert_eq!(
            std::fs::read_link(copy.join("localtime")).unwrap(),
            Path::new("/usr/share/zoneinfo/UTC")
        );
        assert_eq!(
            std::fs::read_link(copy.join("app/linked")).unwrap(),
            private
        );
        assert!(!copy.join("app/pipe").exists());
        for path in [
            "",
            "hostname",
            "app",
            "app/settings",
            "app/key",
            "app/private",
        ] {
            let mode = std::fs::metadata(copy.join(path)).unwrap().mode();
            assert_eq!(mode & 0o022, 0, "{path}: {mode:o}");
        }
        // A copy is made only where nothing is yet.
        assert!(make(&etc, &copy).is_err());
        // A change anywhere in it changes the fingerprint; reading it twice does not.
        let before = fingerprint(&etc);
        assert_eq!(fingerprint(&etc), before);
        std::fs::set_permissions(
            etc.join("app/settings"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert_ne!(fingerprint(&etc), before);
    }

    /// A copy is private to whoever runs bubblewrap, and never made or used where the sandbox
    /// may write.
    #[test]
    fn a_copy_is_private_and_never_under_the_workspace() {
        assert_eq!(etc_copy(Path::new("/")), None);
        let workspace = tempfile::tempdir().unwrap();
        let Some(copy) = etc_copy(workspace.path()) else {
            // No place for a copy on this machine: entries are bound one by one.
            return;
        };
        let metadata = std::fs::symlink_metadata(&copy).unwrap();
        assert_eq!(metadata.mode() & 0o7777, finished_mode());
        assert!(copy.join("passwd").exists() || !Path::new("/etc/passwd").exists());
        assert!(!copy.join("shadow").exists());
        assert_eq!(etc_copy(workspace.path()), Some(copy.clone()));
        // The same copy is refused for a workspace that holds it.
        assert_eq!(etc_copy(copy.parent().unwrap()), None);
    }
}
