//! The GitHub App server's durable job queue. A webhook delivery is recorded in the same
//! transaction as the job it creates, so a redelivery is a no-op; a worker claims a job with a
//! lease it renews while it works, and every claim raises the job's epoch, so a worker whose
//! lease ran out (it stalled, or died and was taken over) is fenced: [`Queue::holds`] says no and
//! it stops writing. One job runs per conversation (pull request or issue) at a time; a newer
//! push supersedes a review still waiting; a transient failure is retried with backoff, anything
//! else (or too many attempts) ends dead with its error.
//!
//! Times are milliseconds since the epoch, passed in by the caller (the server's clock; tests
//! move their own). SQLite (WAL) by default; the schema (`migrations/`) is portable SQL meant to
//! serve PostgreSQL too.
//!
//! **Invariants:** a redelivery is a no-op; one job per conversation at a time; a waiting job gains
//! priority, so none waits for good; every claim raises the job's epoch, so a worker whose lease
//! ran out is fenced; intake never waits behind the workers (on SQLite they share the process's
//! second connection, `Queue::for_workers`, and a claim reads its candidates outside any write and
//! takes one with a single checked update, so SQLite's one write lock is held only for single
//! statements and intake's batches; the process's writes take turns at one FIFO gate, so none
//! sleeps in SQLite's busy handler; a batch of deliveries is a handful of statements,
//! `sqlite_batch.rs`, held by a property test to the answers and rows of the same deliveries
//! written one by one). Used by `bugloop-server` alone.

mod database;
mod redact;
mod sqlite_batch;

use std::time::Duration;

use serde::Serialize;

pub use self::database::{Backend, Queue};
pub use self::redact::without_password;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("cannot open the job queue {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("job queue query failed ({what}): {source}")]
    Query {
        what: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

pub(crate) fn query_error(what: &'static str) -> impl FnOnce(sqlx::Error) -> QueueError {
    move |source| QueueError::Query { what, source }
}

/// The time the queue is told, from the system clock: milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub use bugloop_domain::job::JobKind;

/// The name a job kind is stored under in the queue's rows. Rows written before the kinds had
/// their present names keep theirs (`autofix` for solving, `report` for an error report): this
/// is the one place those names are spoken.
pub(crate) fn stored_kind(kind: JobKind) -> &'static str {
    match kind {
        JobKind::Solve => "autofix",
        JobKind::ErrorReport => "report",
        other => other.name(),
    }
}

/// The kind a row's stored name stands for.
pub(crate) fn parse_stored_kind(text: &str) -> Option<JobKind> {
    JobKind::ALL
        .into_iter()
        .find(|&kind| stored_kind(kind) == text)
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum JobState {
    /// Waiting to be claimed (a retry waits for its `run_after`).
    Queued,
    Running,
    Done,
    /// Failed for good; the error says why.
    Dead,
    /// A newer push made this waiting review pointless.
    Superseded,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    fn parse(text: &str) -> Option<JobState> {
        text.parse().ok()
    }
}

/// A job to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    pub kind: JobKind,
    /// `github:owner/repo#7`.
    pub conversation: String,
    pub installation: Option<i64>,
    /// The head a review is for.
    pub head: Option<String>,
    /// What the job needs to run (the trigger, as JSON).
    pub payload: String,
    /// Claimed before jobs of a lower one, and after older ones of its own (the server gives
    /// what a person waits on the highest, and solving an issue its severity's rank); a job
    /// gains a step for every `AGING_MS` it waited, so none waits for good.
    pub priority: i64,
}

/// A job as the queue holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Job {
    pub id: String,
    pub kind: JobKind,
    pub conversation: String,
    pub installation: Option<i64>,
    pub head: Option<String>,
    pub payload: String,
    pub state: JobState,
    pub attempts: i64,
    pub run_after: i64,
    /// The worker that holds it, or last held it (kept once it ended, to say who ran it).
    pub lease_owner: Option<String>,
    pub lease_until: Option<i64>,
    pub epoch: i64,
    pub error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// When its last attempt started.
    pub started_at: Option<i64>,
    /// When it ended: done, dead or superseded.
    pub finished_at: Option<i64>,
}

/// What recording a delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// A new job, and the waiting reviews of the same conversation it superseded.
    Queued {
        job: String,
        superseded: Vec<String>,
    },
    /// A delivery that asks for no job, recorded.
    Recorded,
    /// The delivery was recorded before: nothing new (its job, if it made one).
    Redelivered { job: Option<String> },
}

/// A claimed job: the worker holds it while its lease lasts and its epoch is the job's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job: Job,
    pub worker: String,
    pub epoch: i64,
}

/// How a failed attempt ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// May pass (GitHub unreachable, rate limited): retried with backoff until the attempts run
    /// out.
    Transient,
    /// Will not pass by retrying (bad input, refused): dead at once.
    Permanent,
}

/// How many jobs may run at once, counted over every process sharing the queue (a job whose
/// lease ran out no longer counts). `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub running: Option<i64>,
    /// Per GitHub App installation, so one busy organisation cannot take every worker.
    pub per_installation: Option<i64>,
}

/// Retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    pub max_attempts: i64,
    /// The first wait; each next one doubles, up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for Retries {
    fn default() -> Self {
        Retries {
            max_attempts: 5,
            backoff: Duration::from_secs(30),
            max_backoff: Duration::from_secs(3600),
        }
    }
}

impl Retries {
    /// The wait before attempt `attempts + 1`, in milliseconds.
    pub fn wait_ms(&self, attempts: i64) -> i64 {
        let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
        let wait = self
            .backoff
            .saturating_mul(2u32.saturating_pow(doublings))
            .min(self.max_backoff);
        i64::try_from(wait.as_millis()).unwrap_or(i64::MAX)
    }
}

/// One delivery for intake's writer, answered once it is on disk.
#[derive(Debug)]
pub(crate) struct EnqueueRequest {
    pub(crate) delivery: String,
    pub(crate) event: String,
    pub(crate) job: Option<NewJob>,
    pub(crate) now: i64,
    pub(crate) reply: tokio::sync::oneshot::Sender<Result<Enqueued, QueueError>>,
}

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod tests;
