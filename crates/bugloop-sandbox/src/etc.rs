//! `/etc` as one directory: a filtered copy of the host's, made once and bound whole, instead of
//! a bind per entry (about 130 entries, each a bind and a read-only remount, were most of a
//! sandboxed command's start-up).
//!
//! The copy holds what the per-entry view showed: the world-readable entries of `/etc` but the
//! denied ones (absent, as before), symlinks as symlinks, and inside the directories whatever is
//! not world-readable as an empty file or directory (masked, as before). It lives in a fresh
//! directory of bugloop's own under a temporary directory every user can reach (the sandbox's
//! user must open it), readable by all and written by nobody else; what it holds was readable by
//! every local user in `/etc` already.
//!
//! It is made again when `/etc` itself changed (an entry added, removed or replaced, which
//! package installs and atomic rewrites do) or after [`REFRESH`]; a replaced copy is removed
//! [`KEEP_REPLACED`] later, since a command that started with it may still be running, and
//! copies of processes that are gone are removed when a new one is made.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use crate::reach::{reachable_by_others, remove_stale, stage_root, world_readable};

/// How long a copy is used before it is made again, changes inside `/etc`'s directories
/// included (a long-running server sees them within this time).
const REFRESH: Duration = Duration::from_secs(15 * 60);
/// How long a replaced copy is kept for the commands that may still use it.
const KEEP_REPLACED: Duration = Duration::from_secs(2 * 60 * 60);
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

/// Copies are named `<PREFIX><pid>-<n>`.
const PREFIX: &str = "bugloop-etc-";

struct Copy {
    dir: PathBuf,
    /// `/etc`'s modification time when the copy was made.
    etc_modified: Option<SystemTime>,
    made: Instant,
}

#[derive(Default)]
struct Copies {
    current: Option<Copy>,
    replaced: Vec<(PathBuf, Instant)>,
    made: u64,
}

static COPIES: Mutex<Copies> = Mutex::new(Copies {
    current: None,
    replaced: Vec::new(),
    made: 0,
});

/// The directory to bind at `/etc`, made or made again as needed; `None` when no copy can be
/// made here (the caller then binds `/etc`'s entries one by one).
pub(crate) fn etc_copy() -> Option<PathBuf> {
    let mut copies = COPIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let etc_modified = std::fs::metadata("/etc").and_then(|m| m.modified()).ok();
    if let Some(current) = &copies.current
        && current.etc_modified == etc_modified
        && current.made.elapsed() < REFRESH
        && current.dir.is_dir()
    {
        return Some(current.dir.clone());
    }
    let root = stage_root();
    if !reachable_by_others(&root) {
        // The sandbox's user could not open a copy there.
        return None;
    }
    remove_stale(&root, PREFIX);
    copies.replaced.retain(|(dir, when)| {
        let keep = when.elapsed() < KEEP_REPLACED;
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
        keep
    });
    let dir = root.join(format!("{PREFIX}{}-{}", std::process::id(), copies.made));
    copies.made += 1;
    match make(Path::new("/etc"), &dir) {
        Ok(()) => {
            let made = Copy {
                dir: dir.clone(),
                etc_modified,
                made: Instant::now(),
            };
            if let Some(old) = copies.current.replace(made) {
                copies.replaced.push((old.dir, Instant::now()));
            }
            Some(dir)
        }
        Err(error) => {
            tracing::debug!(%error, dir = %dir.display(), "no copy of /etc: its entries are bound one by one");
            let _ = std::fs::remove_dir_all(&dir);
            None
        }
    }
}

/// What is left of the copy's size limits.
struct Budget {
    entries: u64,
    bytes: u64,
}

impl Budget {
    fn spend(&mut self, bytes: u64) -> std::io::Result<()> {
        self.entries = self.entries.checked_sub(1).ok_or_else(too_large)?;
        self.bytes = self.bytes.checked_sub(bytes).ok_or_else(too_large)?;
        Ok(())
    }
}

fn too_large() -> std::io::Error {
    std::io::Error::other(format!(
        "/etc holds more than {MAX_ENTRIES} entries or {} MiB",
        MAX_BYTES >> 20
    ))
}

/// Makes `copy` (which must not exist) from `etc`: its world-readable entries but the denied
/// ones, each as [`copy_entry`] copies it.
fn make(etc: &Path, copy: &Path) -> std::io::Result<()> {
    let budget = &mut Budget {
        entries: MAX_ENTRIES,
        bytes: MAX_BYTES,
    };
    std::fs::create_dir(copy)?;
    std::fs::set_permissions(copy, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(etc)? {
        let entry = entry?;
        let name = entry.file_name();
        if ETC_DENIED.contains(&name.to_string_lossy().as_ref()) {
            continue;
        }
        let metadata = std::fs::symlink_metadata(entry.path())?;
        if !metadata.file_type().is_symlink() && !world_readable(&metadata) {
            continue;
        }
        copy_entry(&entry.path(), &copy.join(&name), &metadata, budget)?;
    }
    Ok(())
}

/// Copies one entry: a symlink as a symlink, a world-readable file with its content, a
/// world-readable directory with its entries; what is not world-readable becomes an empty file
/// or directory; sockets, pipes and devices are left out. Nothing is writable but by its owner,
/// and no set-id bit is kept.
fn copy_entry(
    source: &Path,
    target: &Path,
    metadata: &std::fs::Metadata,
    budget: &mut Budget,
) -> std::io::Result<()> {
    let kind = metadata.file_type();
    let readable = world_readable(metadata);
    let mode = metadata.mode() & 0o755;
    budget.spend(if readable && kind.is_file() {
        metadata.len()
    } else {
        0
    })?;
    if kind.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(source)?, target)
    } else if kind.is_dir() {
        std::fs::create_dir(target)?;
        if readable {
            for entry in std::fs::read_dir(source)? {
                let entry = entry?;
                let metadata = std::fs::symlink_metadata(entry.path())?;
                copy_entry(
                    &entry.path(),
                    &target.join(entry.file_name()),
                    &metadata,
                    budget,
                )?;
            }
        }
        std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))
    } else if kind.is_file() {
        if readable {
            std::fs::copy(source, target)?;
        } else {
            std::fs::File::create(target)?;
        }
        std::fs::set_permissions(
            target,
            std::fs::Permissions::from_mode(if readable { mode | 0o444 } else { 0o444 }),
        )
    } else {
        Ok(())
    }
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
        let copy = dir.path().join("copy");
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
    }
}
