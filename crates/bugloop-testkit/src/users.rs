//! Running a scenario as this test's user and again as an unprivileged one: what every trust
//! test repeats. As root a test runs bugloop (or git, or itself) a second time as [`NOBODY`],
//! uid 65534 (as the Dockerfile runs the server), from a copy of the program it can execute and
//! on files given to it, so that what root could reach and what an ordinary user could reach are
//! both checked.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The unprivileged user of the second run: `nobody`.
pub const NOBODY: u32 = 65534;

/// Whether this test runs as root (and so can run a scenario again as [`NOBODY`]).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| output.stdout.trim_ascii() == b"0")
}

/// The users a trust scenario runs as: this test's (`None`), and [`NOBODY`] too when this test
/// runs as root.
pub fn scenario_users() -> Vec<Option<u32>> {
    if is_root() {
        vec![None, Some(NOBODY)]
    } else {
        vec![None]
    }
}

/// Gives `path` (and everything below it) to `uid`.
pub fn chown_all(path: &Path, uid: u32) {
    let status = Command::new("chown")
        .args(["-R", &format!("{uid}:{uid}")])
        .arg(path)
        .status()
        .unwrap_or_else(|error| panic!("cannot run chown: {error}"));
    assert!(status.success(), "chown -R {uid} {}", path.display());
}

/// `program`, to be run as `user` (`None`: this test's user): with root's identity dropped for
/// the user's, and no supplementary group kept.
pub fn command_as(user: Option<u32>, program: impl AsRef<OsStr>) -> Command {
    match user {
        Some(uid) => {
            let mut command = Command::new("setpriv");
            command
                .args([
                    &format!("--reuid={uid}"),
                    &format!("--regid={uid}"),
                    "--clear-groups",
                    "--",
                ])
                .arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Copies the executable `program` to `copy`, mode 0755, by a `cp` of its own: a copy written
/// by this process would hold a writable descriptor that a child another test thread forks
/// meanwhile inherits, and running the copy then fails with "Text file busy" (ETXTBSY).
pub fn copy_program(program: &Path, copy: &Path) {
    let status = Command::new("cp")
        .arg("--")
        .arg(program)
        .arg(copy)
        .status()
        .unwrap_or_else(|error| panic!("cannot run cp: {error}"));
    assert!(status.success(), "cannot copy {}", program.display());
    std::fs::set_permissions(copy, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The program `user` runs: `program` itself for this test's user; for another, a copy in `dir`
/// that anyone may execute (the build may sit under `/root`, which others cannot enter).
pub fn program_for(user: Option<u32>, program: &Path, dir: &Path) -> PathBuf {
    match user {
        None => program.to_path_buf(),
        Some(_) => {
            let name = program.file_name().unwrap_or(OsStr::new("program"));
            let copy = dir.join(name);
            copy_program(program, &copy);
            copy
        }
    }
}
