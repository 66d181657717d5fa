//! The App server's workers: threads that claim and run jobs until told to stop. A job's run
//! holds borrowed state across its awaits (it is not `Send`), so each worker is a thread with a
//! current-thread runtime of its own. Each worker keeps its clones in a workspace slot it locks
//! for its life (`slot-N.lock`), so two workers, of this process or of another sharing the data
//! directory, never work in the same clone, and a restarted server reuses the clones it made.

use std::fs::File;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use bugloop_queue::Queue;

use crate::ServerError;
use crate::store_location::StoreLocation;
use crate::worker::{Stop, WorkerSettings, run_next};

/// How long an idle worker waits before looking for a job again.
const IDLE: Duration = Duration::from_millis(250);

/// Running workers.
#[derive(Debug)]
pub struct Workers {
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `count` workers on `store`'s queue (`shared` is this process's handle of it).
    pub fn start(
        store: &StoreLocation,
        shared: &Queue,
        settings: &WorkerSettings,
        count: usize,
        stop: &Stop,
    ) -> Result<Workers, ServerError> {
        let mut threads = Vec::new();
        for n in 0..count.max(1) {
            let (slot, lock) = workspace_slot(&settings.workspaces)?;
            let mut settings = settings.clone();
            settings.id = format!("{}:{n}", settings.id);
            settings.workspaces = slot;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ServerError::Invalid(format!("cannot start a worker: {e}")))?;
            let (store, shared, stop) = (store.clone(), shared.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                // Held while the worker lives.
                let _lock = lock;
                runtime.block_on(work(store, shared, settings, stop));
            }));
        }
        Ok(Workers { threads })
    }

    /// Waits for every worker to end (after the stop, each within its grace period).
    pub fn join(self) {
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

async fn work(store: StoreLocation, shared: Queue, settings: WorkerSettings, stop: Stop) {
    let queue = loop {
        match store.open_for_worker(&shared).await {
            Ok(queue) => break queue,
            Err(error) => {
                tracing::warn!(worker = %settings.id, %error, "cannot open the job queue; trying again");
                if stop.requested() {
                    return;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    };
    while !stop.requested() {
        match run_next(&queue, &settings, &stop).await {
            Ok(Some(_)) => {}
            Ok(None) => tokio::time::sleep(IDLE).await,
            Err(error) => {
                tracing::warn!(worker = %settings.id, %error, "the job queue failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The first workspace slot under `workspaces` no other worker holds, locked.
fn workspace_slot(workspaces: &Path) -> Result<(std::path::PathBuf, File), ServerError> {
    std::fs::create_dir_all(workspaces)
        .map_err(|e| ServerError::Invalid(format!("cannot make {}: {e}", workspaces.display())))?;
    for n in 0..1024 {
        let path = workspaces.join(format!("slot-{n}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| ServerError::Invalid(format!("cannot open {}: {e}", path.display())))?;
        if file.try_lock().is_ok() {
            let slot = workspaces.join(format!("slot-{n}"));
            remove_stale_git_locks(&slot);
            return Ok((slot, file));
        }
    }
    Err(ServerError::Invalid(format!(
        "every workspace slot under {} is held",
        workspaces.display()
    )))
}

/// The lock files git left in a slot's clones (`<owner>/<repo>/.git`) when the worker before
/// was killed mid-command: no one else works in a held slot, so every one is stale, and left
/// there it would fail every later fetch.
fn remove_stale_git_locks(slot: &Path) {
    fn walk(dir: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && entry.file_name() != "objects" {
                walk(&path);
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "lock") {
                tracing::info!(path = %path.display(), "removing a lock git left behind");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    for owner in std::fs::read_dir(slot).into_iter().flatten().flatten() {
        for repo in std::fs::read_dir(owner.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            walk(&repo.path().join(".git"));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn each_worker_gets_a_slot_of_its_own_and_a_freed_slot_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let (first, first_lock) = workspace_slot(dir.path()).unwrap();
        let (second, _second_lock) = workspace_slot(dir.path()).unwrap();
        assert_eq!(first, dir.path().join("slot-0"));
        assert_eq!(second, dir.path().join("slot-1"));
        // A worker killed mid-fetch left git's locks in its clone.
        let git = first.join("acme/widgets/.git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("index.lock"), "").unwrap();
        std::fs::write(git.join("refs/heads/main.lock"), "").unwrap();
        std::fs::write(git.join("config"), "").unwrap();
        drop(first_lock);
        assert_eq!(workspace_slot(dir.path()).unwrap().0, first);
        assert!(!git.join("index.lock").exists());
        assert!(!git.join("refs/heads/main.lock").exists());
        assert!(git.join("config").exists());
    }
}
