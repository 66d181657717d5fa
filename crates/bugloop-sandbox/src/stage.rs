//! Running as root: the stage (mount points through which a private mount namespace shows the
//! sandbox's unprivileged user the sources it could not reach otherwise), the command line that
//! stages them, and handing the workspace over to that user.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::SandboxError;
use crate::limits::Cgroups;
use crate::owner::{Claim, claimed_dir, remove_stale};
use crate::reach::{sandbox_uid, stage_root};
use crate::settings::{Policy, SandboxSettings};
use crate::view::{Arguments, bwrap_arguments};

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

/// A directory of mount points for the sources of one root-run command, claimed while it is in
/// use; removed on drop (the mounts themselves only ever existed in the command's private mount
/// namespace).
#[derive(Debug)]
pub(crate) struct Stage {
    dir: PathBuf,
    _claim: Claim,
}

impl Stage {
    /// A new stage in the stage root, under a name no one can guess (in `/tmp` another user
    /// could otherwise make every name first, and stop the analyzers).
    fn create() -> Result<Stage, SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let root = stage_root();
        if crate::reach::safe_dir(&root).as_ref() != Some(&root) {
            return Err(SandboxError::Io(format!(
                "no place for the sandbox's stage: {} (TMPDIR), /tmp, /var/tmp and /dev/shm are \
                 each out of the sandbox user's reach, or belong to (or let write without the \
                 sticky bit) another user",
                root.display()
            )));
        }
        remove_stale(&root, "bugloop-stage-");
        let (dir, claim) = claimed_dir(&root, "bugloop-stage-")
            .map_err(|e| SandboxError::Io(format!("{}: {e}", root.display())))?;
        let stage = Stage { dir, _claim: claim };
        std::fs::set_permissions(&stage.dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| SandboxError::Io(format!("{}: {e}", stage.dir.display())))?;
        Ok(stage)
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
    // Handed over first, so a workspace the sandbox's user can reach is bound without a stage.
    if settings.policy == Policy::WorkspaceWrite {
        hand_over(workspace, sandbox_uid())?;
    }
    let built = bwrap_arguments(settings, workspace, cwd, Some(staging.path()));
    staging.prepare(&built.staged)?;
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
    let uid = sandbox_uid();
    argv.extend(
        [
            "setpriv".to_owned(),
            format!("--reuid={uid}"),
            format!("--regid={uid}"),
            "--clear-groups".to_owned(),
            "--".to_owned(),
        ]
        .map(Into::into),
    );
    Ok((staging, built))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::reach::sandbox_can_open;
    use crate::reach::tests::mode;

    /// Only what the sandbox's user could open itself skips the stage: a directory every user
    /// may read, read-only; its own, also writable; nothing behind a directory closed to others.
    #[test]
    fn only_what_the_sandbox_user_can_open_skips_the_stage() {
        let root = tempfile::tempdir_in(stage_root()).unwrap();
        mode(root.path(), 0o755);
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        mode(&open, 0o755);
        assert!(sandbox_can_open(&open, false));
        assert!(!sandbox_can_open(&open, true));
        let closed = root.path().join("closed");
        std::fs::create_dir_all(closed.join("inner")).unwrap();
        mode(&closed.join("inner"), 0o755);
        mode(&closed, 0o700);
        assert!(!sandbox_can_open(&closed, false));
        assert!(!sandbox_can_open(&closed.join("inner"), false));
        assert!(!sandbox_can_open(&root.path().join("missing"), false));
        if nix::unistd::Uid::effective().is_root() {
            let own = root.path().join("own");
            std::fs::create_dir(&own).unwrap();
            mode(&own, 0o700);
            hand_over(&own, sandbox_uid()).unwrap();
            assert!(sandbox_can_open(&own, true));
            let owned_inside = closed.join("inner");
            hand_over(&owned_inside, sandbox_uid()).unwrap();
            assert!(!sandbox_can_open(&owned_inside, true));
        }
    }
}
