//! Who can reach what, for bugloop as root: the sandbox's host user, whether it can open a
//! path itself, and the temporary directory it can reach (where stages go, and what processes
//! that are gone left there is removed).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The host user a sandbox runs as when bugloop runs as root.
pub(crate) const SANDBOX_UID: u32 = 65534;

/// Where stages go: the temporary directory, unless the sandbox's user cannot reach it (a
/// `TMPDIR` inside a `0700` directory, such as a private runner temp), then the first of
/// `/tmp`, `/var/tmp` and `/dev/shm` it can. bubblewrap, running as that user, opens the stage.
pub(crate) fn stage_root() -> PathBuf {
    let preferred = std::env::temp_dir();
    std::iter::once(preferred.clone())
        .chain(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from))
        .find(|dir| reachable_by_others(dir))
        .unwrap_or(preferred)
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
    let own = metadata.uid() == SANDBOX_UID && metadata.gid() == SANDBOX_UID;
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

/// Removes what processes that are gone left in `root` (`<prefix><pid>-<n>`): stages of runs
/// that were killed (their mounts only ever existed in the killed command's namespace, so what
/// is left is empty mount points) and copies of `/etc`.
pub(crate) fn remove_stale(root: &Path, prefix: &str) {
    for stale in stale_entries(root, prefix) {
        let _ = std::fs::remove_dir_all(stale);
    }
}

/// The directories in `root` named `<prefix><pid>-<n>` whose process is gone, and which are this
/// user's own (in a shared directory anyone can make a directory of that name).
pub(crate) fn stale_entries(root: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return stale;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        let ours = std::fs::symlink_metadata(entry.path()).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == nix::unistd::Uid::effective().as_raw()
        });
        if gone && ours {
            stale.push(entry.path());
        }
    }
    stale
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
