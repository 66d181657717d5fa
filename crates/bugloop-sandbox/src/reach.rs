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

/// Whether every user may read `metadata`'s file (and go through its directory).
pub(crate) fn world_readable(metadata: &std::fs::Metadata) -> bool {
    let mode = metadata.permissions().mode();
    if metadata.is_dir() {
        mode & 0o005 == 0o005
    } else {
        mode & 0o004 != 0
    }
}
