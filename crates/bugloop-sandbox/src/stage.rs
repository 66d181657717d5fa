//! Running as root: the stage (mount points through which a private mount namespace shows the
//! sandbox's unprivileged user the sources it could not reach otherwise), the command line that
//! stages them, and handing the workspace over to that user.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::SandboxError;
use crate::limits::Cgroups;
use crate::settings::{Policy, SandboxSettings};
use crate::view::{Arguments, bwrap_arguments};

/// The host user a sandbox runs as when bugloop runs as root.
const SANDBOX_UID: u32 = 65534;

/// Run as root in a private mount namespace: join the cgroups (if any), bind each real source onto
/// its place in the stage, then become the rest of the command line. Fixed text; everything it
/// works on comes as arguments.
const STAGE_SCRIPT: &str = r#"set -e
cgroups=$1; stage=$2; shift 2
for cgroup in $cgroups; do echo $$ > "$cgroup/cgroup.procs"; done
n=0
while [ "$1" != "--" ]; do mount --bind "$1" "$stage/$n"; n=$((n + 1)); shift; done
shift
exec "$@"
"#;

static STAGE_SEQUENCE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A directory of mount points for the sources of one root-run command; removed on drop (the
/// mounts themselves only ever existed in the command's private mount namespace).
#[derive(Debug)]
pub(crate) struct Stage {
    dir: PathBuf,
}

/// Where stages go: the temporary directory, unless the sandbox's user cannot reach it (a
/// `TMPDIR` inside a `0700` directory, such as a private runner temp), then the first of
/// `/tmp`, `/var/tmp` and `/dev/shm` it can. bubblewrap, running as that user, opens the stage.
fn stage_root() -> PathBuf {
    let preferred = std::env::temp_dir();
    std::iter::once(preferred.clone())
        .chain(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from))
        .find(|dir| reachable_by_others(dir))
        .unwrap_or(preferred)
}

/// Whether a user that is neither the owner nor in the group can go through `dir` and every
/// directory above it (mode `o+x` all the way up), and `dir` is a directory.
fn reachable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    dir.is_dir()
        && dir
            .ancestors()
            .all(|up| std::fs::metadata(up).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Removes stages left by runs that were killed (`bugloop-stage-<pid>-<n>` of a process that is
/// gone): their mounts only ever existed in the killed command's namespace, so what is left is
/// empty mount points.
fn remove_stale_stages(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("bugloop-stage-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
            == Err(nix::errno::Errno::ESRCH);
        // Only our own: in a shared directory anyone can make a directory of that name.
        let ours = std::fs::symlink_metadata(entry.path()).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == nix::unistd::Uid::effective().as_raw()
        });
        if gone && ours {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl Stage {
    fn create() -> Result<Stage, SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let root = stage_root();
        remove_stale_stages(&root);
        let dir = root.join(format!(
            "bugloop-stage-{}-{}",
            std::process::id(),
            STAGE_SEQUENCE.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir(&dir)
            .map_err(|e| SandboxError::Io(format!("{}: {e}", dir.display())))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| SandboxError::Io(format!("{}: {e}", dir.display())))?;
        Ok(Stage { dir })
    }

    fn path(&self) -> &Path {
        &self.dir
    }

    /// One mount point per source, of the source's kind.
    fn prepare(&self, sources: &[PathBuf]) -> Result<(), SandboxError> {
        for (index, source) in sources.iter().enumerate() {
            let point = self.dir.join(index.to_string());
            let made = if source.is_dir() {
                std::fs::create_dir(&point)
            } else {
                std::fs::File::create(&point).map(drop)
            };
            made.map_err(|e| SandboxError::Io(format!("{}: {e}", point.display())))?;
        }
        Ok(())
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Gives the workspace to the sandbox's user (bugloop as root): everything in it that is not
/// already its own, without following symlinks.
fn hand_over(workspace: &Path, uid: u32) -> Result<(), SandboxError> {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![workspace.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.uid() != uid || metadata.gid() != uid {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid))
                .map_err(|e| SandboxError::Io(format!("{}: {e}", path.display())))?;
        }
        if metadata.is_dir()
            && let Ok(entries) = std::fs::read_dir(&path)
        {
            stack.extend(entries.flatten().map(|e| e.path()));
        }
    }
    Ok(())
}

/// As root, bubblewrap runs as an unprivileged user, so the sandbox is that user on the host too
/// (a namespace root makes maps its user to root, the owner of /dev's nodes and every root-owned
/// file shown). That user cannot reach the workspace or the toolchains under /root, so a private
/// mount namespace of ours first binds them into a stage it can reach; the workspace becomes
/// that user's. Pushes that namespace's command line (up to the switch to the user) and returns
/// the stage and bubblewrap's arguments, which name the stage.
pub(crate) fn stage_as_root(
    argv: &mut Vec<OsString>,
    settings: &SandboxSettings,
    cgroups: &Cgroups,
    workspace: &Path,
    cwd: &Path,
) -> Result<(Stage, Arguments), SandboxError> {
    let staging = Stage::create()?;
    let built = bwrap_arguments(settings, workspace, cwd, Some(staging.path()));
    staging.prepare(&built.staged)?;
    if settings.policy == Policy::WorkspaceWrite {
        hand_over(workspace, SANDBOX_UID)?;
    }
    argv.extend(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-c",
            STAGE_SCRIPT,
            "sh",
        ]
        .map(Into::into),
    );
    argv.push(
        cgroups
            .dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(" ")
            .into(),
    );
    argv.push(staging.path().into());
    argv.extend(built.staged.iter().map(Into::into));
    argv.push("--".into());
    argv.extend(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]
        .map(Into::into),
    );
    Ok((staging, built))
}
