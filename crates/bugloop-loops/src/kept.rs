//! What a run keeps for the next one on the same change, should it be killed between two steps
//! that cannot be one (a branch moved, then the conversation told): one JSON file per kind of
//! run and change, written whole or not at all, with the writer's process (its id and start
//! time, [`bugloop_sandbox::owner`]).
//!
//! Only locally ([`dir`]): there the repository's git directory is the user's own, and bugloop's
//! directory in it (`runs_dir`) is written by nothing but bugloop (not a change, its
//! conversation, a fetch, or a sandboxed command). On a pull request, a runner's checkout may
//! have been written by the pull request's own code in an earlier step, and a server's clone is
//! shared by the jobs of many changes over days: a record there could resolve a finding nobody
//! fixed, so none is kept or read, and a killed job is left to the next review.
//!
//! A record whose writer still runs is another run's work in progress, not a leftover: it is
//! not read.

use std::path::{Path, PathBuf};

use bugloop_forge::ChangeKey;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::env::{LoopEnv, WorkTarget};

/// The most bytes of a kept record read back.
const MAX_BYTES: u64 = 4 << 20;

/// Where `env`'s runs keep records: locally only.
pub(crate) fn dir<'e>(env: &'e LoopEnv<'_>) -> Option<&'e Path> {
    match env.work {
        WorkTarget::LocalBranch => Some(env.runs_dir.as_path()),
        WorkTarget::PullRequest { .. } => None,
    }
}

#[derive(Serialize, Deserialize)]
struct Record<T> {
    pid: u32,
    /// The writer as [`bugloop_sandbox::owner::token`] names it (older versions wrote the pid
    /// alone).
    #[serde(default)]
    owner: Option<String>,
    value: T,
}

/// One file per kind and change, named by a digest of the change's key: `feature/x` and
/// `feature_x` differ.
fn path_of(runs_dir: &Path, kind: &str, change: &ChangeKey) -> PathBuf {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(change.0.as_bytes()));
    runs_dir.join(format!("{kind}-{}.json", &digest[..32]))
}

/// Keeps `value` for `change` (a temporary file of this process renamed over the old one).
pub(crate) fn keep<T: Serialize>(
    runs_dir: &Path,
    kind: &str,
    change: &ChangeKey,
    value: &T,
) -> Result<(), String> {
    let path = path_of(runs_dir, kind, change);
    let record = Record {
        pid: std::process::id(),
        owner: Some(bugloop_sandbox::owner::token().to_owned()),
        value,
    };
    let text = serde_json::to_vec(&record).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(runs_dir).map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    let partial = path.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&partial, text).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// What an earlier run (this process, or one that is gone) kept for `change`, if anything
/// readable was.
pub(crate) fn read<T: DeserializeOwned>(
    runs_dir: &Path,
    kind: &str,
    change: &ChangeKey,
) -> Option<T> {
    use std::io::Read;
    let file = std::fs::File::open(path_of(runs_dir, kind, change)).ok()?;
    let mut text = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut text).ok()?;
    let record: Record<T> = serde_json::from_slice(&text).ok()?;
    let running = match &record.owner {
        Some(owner) => {
            owner != bugloop_sandbox::owner::token() && !bugloop_sandbox::owner::gone(owner)
        }
        None => {
            let pid = i32::try_from(record.pid).ok()?;
            record.pid != std::process::id() && bugloop_sandbox::process_alive(pid)
        }
    };
    (!running).then_some(record.value)
}

/// Forgets what was kept for `change`: the run is over.
pub(crate) fn forget(runs_dir: &Path, kind: &str, change: &ChangeKey) {
    let _ = std::fs::remove_file(path_of(runs_dir, kind, change));
}

/// Whether `commit` is a full commit id (what bugloop writes; never a name like `HEAD`).
pub(crate) fn is_commit_id(commit: &str) -> bool {
    matches!(commit.len(), 40 | 64) && commit.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn kept_by_kind_and_change_and_torn_files_are_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let change = ChangeKey("local:feature/x".to_owned());
        let other = ChangeKey("local:feature_x".to_owned());
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
        keep(&runs, "fix", &change, &7u32).unwrap();
        assert_eq!(read::<u32>(&runs, "fix", &change), Some(7));
        assert_eq!(read::<u32>(&runs, "converge", &change), None);
        assert_eq!(read::<u32>(&runs, "fix", &other), None);
        std::fs::write(path_of(&runs, "fix", &change), b"[1,").unwrap();
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
        keep(&runs, "fix", &change, &8u32).unwrap();
        forget(&runs, "fix", &change);
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
    }

    /// A record another running process wrote is its work in progress: not read; once that
    /// process is gone, it is.
    #[test]
    fn a_running_writers_record_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let change = ChangeKey("local:main".to_owned());
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let path = path_of(dir.path(), "fix", &change);
        let record = format!("{{\"pid\":{},\"value\":5}}", child.id());
        std::fs::write(&path, &record).unwrap();
        assert_eq!(read::<u32>(dir.path(), "fix", &change), None);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(read::<u32>(dir.path(), "fix", &change), Some(5));
    }

    /// A record of a killed run whose process id came round to this run (process 1 of a
    /// container, run after run) is that killed run's, read; one of a live writer is not.
    #[test]
    fn a_killed_writer_with_this_runs_id_is_told_by_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let change = ChangeKey("local:main".to_owned());
        let path = path_of(dir.path(), "fix", &change);
        let pid = std::process::id();
        std::fs::write(
            &path,
            format!("{{\"pid\":{pid},\"owner\":\"{pid}_1\",\"value\":6}}"),
        )
        .unwrap();
        assert_eq!(read::<u32>(dir.path(), "fix", &change), Some(6));
        let live = format!("1_{}", "x");
        std::fs::write(
            &path,
            format!("{{\"pid\":1,\"owner\":\"{live}\",\"value\":7}}"),
        )
        .unwrap();
        // Process 1 runs, but not since "x": that writer is gone.
        assert_eq!(read::<u32>(dir.path(), "fix", &change), Some(7));
        keep(dir.path(), "fix", &change, &8u32).unwrap();
        assert_eq!(read::<u32>(dir.path(), "fix", &change), Some(8));
    }

    #[test]
    fn only_full_commit_ids_are_commits() {
        assert!(is_commit_id(&"a".repeat(40)));
        assert!(is_commit_id(&"0".repeat(64)));
        for not in ["HEAD", "main", "abc123", &"g".repeat(40), &"a".repeat(41)] {
            assert!(!is_commit_id(not), "{not}");
        }
    }
}
