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
use crate::worker::{JobRun, Stop, WorkerSettings, run_next};

/// How long an idle worker waits before looking for a job again.
const IDLE: Duration = Duration::from_millis(250);

/// How much lower than intake's the workers' threads run (a nice value added to the process's):
/// a delivery is answered first, whatever the workers are doing.
const WORKER_NICENESS: i32 = 10;

/// The longest pause after attempts in a row that failed in a way that may pass.
const MOST_PAUSE: Duration = Duration::from_secs(60);

/// A worker's attempts in a row that failed because GitHub itself could not be reached or
/// failed (a dropped connection, a 5xx). Such a failure says more about GitHub than about the
/// job: the next job would most likely fail the same way at once, so the worker pauses, a second
/// after the second failure in a row and twice as long after each next, up to [`MOST_PAUSE`],
/// rather than turning every queued job through a failure as fast as it can claim them. Any
/// other ending ends the streak, also failures that may pass but are one installation's or one
/// repository's (its rate limit, a refusal, a clone that could not be made): a writer of one
/// repository can cause those, and must not slow the jobs of every other (the queue already
/// waits before that job's next attempt).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct FailureStreak(u32);

impl FailureStreak {
    /// Counts what an attempt came to; the pause before claiming the next job.
    fn after(&mut self, run: &JobRun) -> Duration {
        self.0 = if run.github_unreachable {
            self.0.saturating_add(1)
        } else {
            0
        };
        match self.0 {
            0 | 1 => Duration::ZERO,
            n => Duration::from_secs(1)
                .saturating_mul(2u32.saturating_pow((n - 2).min(16)))
                .min(MOST_PAUSE),
        }
    }
}

/// Lowers the calling thread's priority by [`WORKER_NICENESS`]. On Linux a nice value is a
/// thread's own, so this leaves intake's threads as they are; what the worker starts (git, the
/// sandbox's commands, the embedded model's threads) inherits it.
fn yield_to_intake(worker: &str) {
    #[cfg(target_os = "linux")]
    {
        let thread = rustix::thread::gettid();
        let lowered = rustix::process::getpriority_process(Some(thread))
            .map(|nice| nice.saturating_add(WORKER_NICENESS).min(19))
            .and_then(|nice| rustix::process::setpriority_process(Some(thread), nice));
        if let Err(error) = lowered {
            tracing::warn!(%worker, %error, "cannot lower the worker's priority; it runs as intake does");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = worker;
}

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
                yield_to_intake(&settings.id);
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
    let mut failures = FailureStreak::default();
    while !stop.requested() {
        match run_next(&queue, &settings, &stop).await {
            Ok(Some(run)) => {
                let pause = failures.after(&run);
                if !pause.is_zero() {
                    tracing::info!(worker = %settings.id, seconds = pause.as_secs(), "jobs keep failing in a way that may pass; pausing");
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = stop.asked() => {}
                    }
                }
            }
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
    use bugloop_queue::JobState;

    fn ended(state: Option<JobState>, error: Option<&str>) -> JobRun {
        JobRun {
            job: "d1".to_owned(),
            state,
            error: error.map(str::to_owned),
            github_unreachable: false,
        }
    }

    #[test]
    fn github_unreachable_pauses_the_worker_longer_each_time_and_anything_else_ends_it() {
        let retry = JobRun {
            github_unreachable: true,
            ..ended(Some(JobState::Queued), Some("GitHub unreachable"))
        };
        let mut streak = FailureStreak::default();
        let pauses: Vec<u64> = (0..10).map(|_| streak.after(&retry).as_secs()).collect();
        assert_eq!(pauses, [0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
        // A job done, dead for good, or whose lease was lost ends the streak, and so does a
        // failure that may pass but is the job's own (its installation's rate limit).
        for other in [
            ended(Some(JobState::Done), None),
            ended(Some(JobState::Dead), Some("refused")),
            ended(None, None),
            // Handed back at a stop: queued, but no failure.
            ended(Some(JobState::Queued), None),
            ended(Some(JobState::Queued), Some("rate limited")),
        ] {
            streak.after(&retry);
            streak.after(&retry);
            assert_eq!(streak.after(&other), Duration::ZERO);
            assert_eq!(streak.after(&retry), Duration::ZERO);
            assert_eq!(streak.after(&retry), Duration::from_secs(1));
            streak.after(&other);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_worker_thread_runs_below_intake_and_leaves_the_other_threads_as_they_were() {
        let before = rustix::process::getpriority_process(None).unwrap();
        let worker = std::thread::spawn(|| {
            yield_to_intake("test");
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(worker, (before + WORKER_NICENESS).min(19));
        assert_eq!(
            rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap(),
            before
        );
    }

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
