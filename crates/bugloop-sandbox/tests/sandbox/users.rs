//! Every escape attempt runs as this test's user and, when that is root, again as an unprivileged
//! user (uid 65534) in a copy of this test binary: root outside must be no one inside, and an
//! ordinary user must not get further either.

use std::path::PathBuf;
use std::sync::OnceLock;

const CHILD: &str = "BUGLOOP_ESCAPE_CHILD";

/// A copy of this test binary that uid 65534 can execute (the original may sit under `/root`).
fn world_executable_copy() -> PathBuf {
    static COPY: OnceLock<PathBuf> = OnceLock::new();
    COPY.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("bugloop-escape-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copy = dir.join("sandbox-tests");
        bugloop_testkit::users::copy_program(&std::env::current_exe().unwrap(), &copy);
        copy
    })
    .clone()
}

/// Call first in an escape test. In the unprivileged child it returns at once; as root it runs
/// the same test as uid 65534 and requires it to pass, then the caller runs it as root. As any
/// other user it says that the root variant needs root, and the caller runs it as that user.
pub fn also_unprivileged(test: &str) {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    if !bugloop_testkit::users::is_root() {
        eprintln!("{test}: running as this (unprivileged) user only; the root variant needs root");
        return;
    }
    let home = std::env::temp_dir().join(format!("bugloop-escape-home-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    bugloop_testkit::users::chown_all(&home, bugloop_testkit::users::NOBODY);
    let output = bugloop_testkit::users::command_as(
        Some(bugloop_testkit::users::NOBODY),
        world_executable_copy(),
    )
    .args(["--exact", test, "--nocapture", "--test-threads=1"])
    .env_clear()
    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
    .env("HOME", &home)
    .env("TMPDIR", "/tmp")
    .env(CHILD, "1")
    .output()
    .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success() && text.contains("1 passed"),
        "{test} as uid 65534 failed:\n{text}"
    );
}
