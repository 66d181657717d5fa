//! Who can reach what, for bugloop as root: the sandbox's host user, whether it can open a
//! path itself, and the temporary directory it can reach (where stages go, and what processes
//! that are gone left there is removed).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The host user (and group) a sandbox runs as when bugloop runs as root: one of this process's
/// own, drawn from ids no account has. Not `nobody`: any process running as `nobody` could
/// trace a sandboxed command of the same user, read its files through `/proc` and change what
/// an analyzer reports.
pub(crate) fn sandbox_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UID.get_or_init(|| {
        let draw = || fastrand::u32(SANDBOX_IDS);
        std::iter::repeat_with(draw)
            .take(16)
            .find(|&uid| {
                let id = nix::unistd::Uid::from_raw(uid);
                nix::unistd::User::from_uid(id).is_ok_and(|user| user.is_none())
            })
            .unwrap_or_else(draw)
    })
}

/// Where [`sandbox_uid`] is drawn: above the ids of accounts and of the ranges containers
/// commonly map, below the 32-bit ids some tools still mistake for negative.
const SANDBOX_IDS: std::ops::Range<u32> = 1_500_000_000..2_000_000_000;

/// The temporary directory, then the places tried when it will not do.
fn temporary_places() -> impl Iterator<Item = PathBuf> {
    std::iter::once(std::env::temp_dir()).chain(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from))
}

/// Where stages go: the first of the temporary directory, `/tmp`, `/var/tmp` and `/dev/shm`
/// that the sandbox's user can reach (not a `TMPDIR` inside a `0700` directory, such as a
/// private runner temp: bubblewrap, running as that user, opens the stage) and that is a
/// [`safe_dir`], resolved. The temporary directory when none is: a stage is not made there
/// ([`safe_dir`] says no), and the review says so.
pub(crate) fn stage_root() -> PathBuf {
    temporary_places()
        .filter(|dir| reachable_by_others(dir))
        .find_map(|dir| safe_dir(&dir))
        .unwrap_or_else(std::env::temp_dir)
}

/// Where bugloop's own temporary directories go (the analyzers' configuration, the base's
/// files): the first [`safe_dir`] of the temporary directory, `/tmp`, `/var/tmp` and `/dev/shm`.
pub(crate) fn temp_root() -> std::io::Result<PathBuf> {
    temporary_places()
        .find_map(|dir| safe_dir(&dir))
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "no temporary directory where other users cannot replace what bugloop makes: \
             {} (TMPDIR), /tmp, /var/tmp and /dev/shm, or a directory above one, belong to \
             another user or let others write in them without the sticky bit",
                std::env::temp_dir().display()
            ))
        })
}

/// `dir` resolved (no link left in its path, so none is followed again) when no other user can
/// rename or replace what bugloop makes in it: it and every directory above it are ours or
/// root's, and sticky where others may write in them.
pub(crate) fn safe_dir(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    (dir.is_dir() && dir.ancestors().all(safe_place)).then_some(dir)
}

/// One directory of [`safe_dir`]'s path.
fn safe_place(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir).is_ok_and(|m| {
        let owner = m.uid() == 0 || m.uid() == nix::unistd::Uid::effective().as_raw();
        let shared = m.mode() & 0o022 != 0;
        m.is_dir() && owner && (!shared || m.mode() & 0o1000 != 0)
    })
}

/// Whether a user that is neither the owner nor in the group can go through `dir` and every
/// directory above it (mode `o+x` all the way up), and `dir` is a directory.
pub(crate) fn reachable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    dir.is_dir()
        && dir
            .ancestors()
            .all(|up| std::fs::metadata(up).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Whether the sandbox's user (bugloop as root) can open `source` itself, so it need not be
/// staged: every directory above it lets others through, and it is that user's own or, shown
/// read-only, readable by all. bubblewrap then opens it as that user, which can reach nothing
/// more than the user could anyway (a staged source is opened by root).
pub(crate) fn sandbox_can_open(source: &Path, writable: bool) -> bool {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Ok(source) = source.canonicalize() else {
        return false;
    };
    let Ok(metadata) = std::fs::metadata(&source) else {
        return false;
    };
    let others = metadata.permissions().mode() & 0o007;
    let own = metadata.uid() == sandbox_uid() && metadata.gid() == sandbox_uid();
    let readable = if metadata.is_dir() {
        others & 0o005 == 0o005
    } else {
        others & 0o004 != 0
    };
    (own || (readable && !writable))
        && source.parent().is_none_or(|parent| {
            parent
                .ancestors()
                .all(|up| std::fs::metadata(up).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
        })
}

/// Whether every user may read `metadata`'s file (and go through its directory).
pub(crate) fn world_readable(metadata: &std::fs::Metadata) -> bool {
    let mode = metadata.permissions().mode();
    if metadata.is_dir() {
        mode & 0o005 == 0o005
    } else {
        mode & 0o004 != 0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    pub(crate) fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A place is safe when no other user can rename or replace what is made in it: resolved
    /// through links once, and refused when it, or a directory above it, is open to others'
    /// writes without the sticky bit, or another user's.
    #[test]
    fn a_safe_place_is_ours_all_the_way_up_and_resolved() {
        let root = tempfile::tempdir().unwrap();
        let ours = root.path().join("ours");
        std::fs::create_dir(&ours).unwrap();
        mode(&ours, 0o755);
        let canonical = ours.canonicalize().unwrap();
        assert_eq!(safe_dir(&ours), Some(canonical.clone()));
        // Through a link: the directory it names, so the link is never followed again.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&ours, &link).unwrap();
        assert_eq!(safe_dir(&link), Some(canonical));
        // Shared: sticky is safe, open to all writes is not, nor is anything below it.
        let shared = ours.join("shared");
        let below = shared.join("below");
        std::fs::create_dir_all(&below).unwrap();
        mode(&shared, 0o1777);
        assert!(safe_dir(&below).is_some());
        mode(&shared, 0o777);
        assert_eq!(safe_dir(&shared), None);
        assert_eq!(safe_dir(&below), None);
        mode(&shared, 0o755);
        if nix::unistd::Uid::effective().is_root() {
            // Another user's, as a root TMPDIR in a directory that user owns.
            std::os::unix::fs::chown(&shared, Some(65534), Some(65534)).unwrap();
            assert_eq!(safe_dir(&shared), None);
            assert_eq!(safe_dir(&below), None);
        }
        assert_eq!(safe_dir(&root.path().join("missing")), None);
    }

    /// The sandbox's user as root is one no account has, and the same for the whole process.
    #[test]
    fn the_sandbox_user_is_no_account_and_stays() {
        let uid = sandbox_uid();
        assert!(SANDBOX_IDS.contains(&uid));
        assert_eq!(sandbox_uid(), uid);
        let account = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).unwrap();
        assert!(account.is_none(), "{account:?}");
    }
}
