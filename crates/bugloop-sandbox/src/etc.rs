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
//! the size limit. The copy is built in a private directory (`mkdtemp`, `0700`) and opened to
//! others only when whole; it is used again only while it is the same directory (owner, device,
//! inode, mode) and only in a temporary directory no one else can rename it in.
//!
//! It is made again when any entry of `/etc` changed (an entry's ctime or their number: a
//! `chmod` or an edit is seen by the commands that start a second later), or after
//! [`REFRESH`]; a replaced copy is removed [`KEEP_REPLACED`] later (a command that started with
//! it may still be running; at most [`MAX_REPLACED`] are kept), and copies of processes that are
//! gone are removed when a new one is made. What the copy holds every local user could read in
//! `/etc`. One difference remains: access is decided from the mode bits, not ACLs.

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

use crate::reach::{reachable_by_others, remove_stale, stage_root};

/// How long `/etc` is taken as unchanged after it was looked at (looking costs a few ms, and
/// an agent may run commands in quick succession).
const UNCHANGED_FOR: Duration = Duration::from_secs(1);
/// How long a copy is used at most before it is made again.
const REFRESH: Duration = Duration::from_secs(15 * 60);
/// How long a replaced copy is kept for the commands that may still use it.
const KEEP_REPLACED: Duration = Duration::from_secs(2 * 60 * 60);
/// Replaced copies kept at most (the oldest goes first).
const MAX_REPLACED: usize = 4;
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

/// What `/etc` looked like: how many entries the copy would see and the latest change among
/// them (seconds and nanoseconds of their ctimes).
type Fingerprint = (u64, i64, i64);

struct Copy {
    dir: PathBuf,
    /// The directory's device and inode: a copy is used only while it is this one.
    identity: (u64, u64),
    etc: Fingerprint,
    made: Instant,
    /// When `/etc` was last seen unchanged since the copy.
    checked: Instant,
}

struct Copies {
    current: Option<Copy>,
    replaced: Vec<(PathBuf, Instant)>,
}

static COPIES: Mutex<Copies> = Mutex::new(Copies {
    current: None,
    replaced: Vec::new(),
});

/// The directory to bind at `/etc`, made or made again as needed; `None` when no copy can be
/// made here (the caller then binds `/etc`'s entries one by one).
pub(crate) fn etc_copy() -> Option<PathBuf> {
    let mut copies = COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(current) = &copies.current
        && current.checked.elapsed() < UNCHANGED_FOR
        && current.made.elapsed() < REFRESH
        && still_ours(&current.dir, current.identity)
    {
        return Some(current.dir.clone());
    }
    let etc = fingerprint(Path::new("/etc"));
    if let Some(current) = &mut copies.current
        && current.etc == etc
        && current.made.elapsed() < REFRESH
        && still_ours(&current.dir, current.identity)
    {
        current.checked = Instant::now();
        return Some(current.dir.clone());
    }
    let root = stage_root();
    if !reachable_by_others(&root) || !safe_place(&root) {
        // The sandbox's user could not open a copy there, or someone else could replace it.
        return None;
    }
    remove_stale(&root, PREFIX);
    let template = root.join(format!("{PREFIX}{}-XXXXXX", std::process::id()));
    let dir = nix::unistd::mkdtemp(&template).ok()?;
    let made = make(Path::new("/etc"), &dir).and_then(|()| {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        std::fs::symlink_metadata(&dir)
    });
    let metadata = match made {
        Ok(metadata) => metadata,
        Err(error) => {
            tracing::debug!(%error, "no copy of /etc: its entries are bound one by one");
            let _ = std::fs::remove_dir_all(&dir);
            return None;
        }
    };
    let copy = Copy {
        dir: dir.clone(),
        identity: (metadata.dev(), metadata.ino()),
        etc,
        made: Instant::now(),
        checked: Instant::now(),
    };
    if let Some(old) = copies.current.replace(copy) {
        copies.replaced.push((old.dir, Instant::now()));
    }
    let excess = copies.replaced.len().saturating_sub(MAX_REPLACED);
    let mut index = 0;
    copies.replaced.retain(|(dir, when)| {
        index += 1;
        let keep = index > excess && when.elapsed() < KEEP_REPLACED;
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
        keep
    });
    Some(dir)
}

/// Whether `dir` is still the copy made there: a directory (not a link), ours, opened to
/// others and nothing more, the same device and inode.
fn still_ours(dir: &Path, identity: (u64, u64)) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        m.is_dir()
            && m.uid() == nix::unistd::Uid::effective().as_raw()
            && m.mode() & 0o7777 == 0o755
            && (m.dev(), m.ino()) == identity
    })
}

/// A directory where no one but us (or root) can rename or replace our copy: ours or root's,
/// and sticky when others may write in it.
fn safe_place(root: &Path) -> bool {
    std::fs::metadata(root).is_ok_and(|m| {
        let owner = m.uid() == 0 || m.uid() == nix::unistd::Uid::effective().as_raw();
        let shared = m.mode() & 0o022 != 0;
        owner && (!shared || m.mode() & 0o1000 != 0)
    })
}

/// How many entries a copy of `etc` would see and their latest ctime; read with `lstat`, so
/// a link is never followed (a directory swapped for one changes the fingerprint, and so makes
/// a new copy, nothing more).
fn fingerprint(etc: &Path) -> Fingerprint {
    fn walk(dir: &Path, top: bool, print: &mut Fingerprint) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if top && ETC_DENIED.contains(&entry.file_name().to_string_lossy().as_ref()) {
                continue;
            }
            let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            print.0 += 1;
            let changed = (metadata.ctime(), metadata.ctime_nsec());
            if changed > (print.1, print.2) {
                (print.1, print.2) = changed;
            }
            if metadata.is_dir() && metadata.mode() & 0o005 == 0o005 {
                walk(&entry.path(), false, print);
            }
        }
    }
    let mut print = (0, 0, 0);
    if let Ok(metadata) = std::fs::symlink_metadata(etc) {
        print = (1, metadata.ctime(), metadata.ctime_nsec());
    }
    walk(etc, true, &mut print);
    print
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
    .union(OFlag::O_CLOEXEC);

/// Makes the copy in `copy` (an empty directory of ours) from `etc`: its world-readable entries
/// but the denied ones, each as [`copy_entry`] copies it.
fn make(etc: &Path, copy: &Path) -> std::io::Result<()> {
    let budget = &mut Budget {
        entries: MAX_ENTRIES,
        bytes: MAX_BYTES,
    };
    let handle = nix::fcntl::open(etc, DIRECTORY, Mode::empty())?;
    for name in names(&handle)? {
        if ETC_DENIED.contains(&name.to_string_lossy().as_ref()) {
            continue;
        }
        copy_entry(&handle, &name, &copy.join(&name), true, budget)?;
    }
    Ok(())
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

/// Copies the entry `name` of the directory open as `parent` to `target`: a symlink as a
/// symlink, a world-readable file with its content, a world-readable directory with its
/// entries; what is not world-readable becomes an empty file or directory (at the top of `/etc`
/// it is left out); sockets, pipes, devices and entries that change kind while read are left
/// out. What an entry is and who may read it is decided on the opened handle, never by
/// following a path.
fn copy_entry(
    parent: &OwnedFd,
    name: &OsStr,
    target: &Path,
    top: bool,
    budget: &mut Budget,
) -> std::io::Result<()> {
    budget.entries = budget.entries.checked_sub(1).ok_or_else(too_large)?;
    let seen = fstatat(parent.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW)?;
    let kind = SFlag::from_bits_truncate(seen.st_mode & SFlag::S_IFMT.bits());
    if kind == SFlag::S_IFLNK {
        let link = readlinkat(parent.as_fd(), name)?;
        return std::os::unix::fs::symlink(link, target);
    }
    if kind == SFlag::S_IFDIR {
        // A link swapped in since is refused by O_NOFOLLOW, and the entry left out.
        let Ok(handle) = openat(parent.as_fd(), name, DIRECTORY, Mode::empty()) else {
            return Ok(());
        };
        let stat = fstat(handle.as_fd())?;
        let shown = readable(&stat, true);
        if top && !shown {
            return Ok(());
        }
        std::fs::create_dir(target)?;
        if shown {
            for inner in names(&handle)? {
                copy_entry(&handle, &inner, &target.join(&inner), false, budget)?;
            }
        }
        return std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755));
    }
    if kind != SFlag::S_IFREG {
        return Ok(());
    }
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
}
