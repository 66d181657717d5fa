//! Who left a directory on disk (a stage, a copy of `/etc`, a cgroup, a task tree, the
//! analyzers' configuration): a process named by its id and its start time. A run killed before
//! its drops leaves them, and the next run removes those whose process is gone; the start time
//! tells a killed run's from a live one where ids come round again at once (bugloop as process 1
//! of a container is process 1 on every run).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This process as the owner of what it makes: `<pid>_<start time>`, or the pid alone where
/// `/proc` does not say when it started. Never holds a `-`, so names built as
/// `<prefix><token>-<n>` read back.
pub fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| {
        let pid = std::process::id();
        match i32::try_from(pid).ok().and_then(start_time) {
            Some(start) => format!("{pid}_{start}"),
            None => pid.to_string(),
        }
    })
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`'s 22nd field).
fn start_time(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(19).map(str::to_owned)
}

/// Whether the process `token` names is gone: no process has its id, or the one that has it
/// started at another time. A token of an older version (the pid alone) is gone when it is
/// this process's own id (this process names nothing so) or no process has it.
pub fn gone(token: &str) -> bool {
    let (pid, start) = token
        .split_once('_')
        .map_or((token, None), |(pid, start)| (pid, Some(start)));
    let Ok(pid) = pid.parse::<i32>() else {
        return false;
    };
    let missing = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None)
        == Err(nix::errno::Errno::ESRCH);
    match start {
        _ if missing => true,
        Some(start) => start_time(pid).is_some_and(|now| now != start),
        None => i64::from(pid) == i64::from(std::process::id()),
    }
}

/// The directories in `root` named `<prefix><token>-...` whose owner is gone, and which are
/// this user's own (in a shared directory anyone can make a directory of that name).
pub(crate) fn stale_entries(root: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else {
        return stale;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(token) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(entry.path()).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt;
            m.is_dir() && m.uid() == nix::unistd::Uid::effective().as_raw()
        });
        if ours && gone(token) {
            stale.push(entry.path());
        }
    }
    stale
}

/// Removes what owners that are gone left in `root` (`<prefix><token>-...`).
pub fn remove_stale(root: &Path, prefix: &str) {
    for stale in stale_entries(root, prefix) {
        let _ = std::fs::remove_dir_all(stale);
    }
}

/// A new directory of this process's in the temporary directory, `bugloop-<kind>-<token>-...`,
/// removed on drop; those a killed run left are removed first.
pub fn temp_dir(kind: &str) -> std::io::Result<tempfile::TempDir> {
    let prefix = format!("bugloop-{kind}-");
    remove_stale(&std::env::temp_dir(), &prefix);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", token()))
        .tempdir()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reused_id_is_told_from_its_first_owner_by_its_start() {
        let own = token();
        assert!(!gone(own));
        let pid = std::process::id();
        // This process's id with another start: a killed run's that had the id before (process
        // 1 of a container, run after run).
        assert!(gone(&format!("{pid}_1")));
        // An older version's name with this process's id is not this process's.
        assert!(gone(&pid.to_string()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let ended = child.id();
        child.wait().unwrap();
        assert!(gone(&ended.to_string()));
        assert!(gone(&format!("{ended}_5")));
        // Process 1 runs, and an older version's name for it cannot be told: kept.
        assert!(!gone("1"));
        assert!(!gone("not-a-pid"));
    }
}
