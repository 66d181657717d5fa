//! The queue on SQLite (WAL): nothing to install. Writers take the database's one write lock in
//! turn (`BEGIN IMMEDIATE` semantics through a one-connection write pool), so a claim's read and
//! its update cannot interleave with another claim's.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Row, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use crate::{
    Enqueued, Failure, Job, JobKind, JobState, Lease, NewJob, QueueError, Retries, query_error,
};

const MIGRATIONS: &[&str] = &[include_str!("../migrations/0001_queue.sql")];

const COLUMNS: &str = "id, kind, conversation, installation, head, payload, state, attempts, \
     run_after, lease_owner, lease_until, epoch, error, created_at, updated_at";

/// The most deliveries written in one transaction.
const BATCH: usize = 256;

/// The job queue in a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteQueue {
    pool: SqlitePool,
    retries: Retries,
    /// Deliveries go through one writer, which commits those that arrive together at once.
    writer: mpsc::Sender<EnqueueRequest>,
}

#[derive(Debug)]
struct EnqueueRequest {
    delivery: String,
    event: String,
    job: Option<NewJob>,
    now: i64,
    reply: oneshot::Sender<Result<Enqueued, QueueError>>,
}

/// Writes the deliveries that are waiting, up to [`BATCH`] at a time, each batch in one
/// transaction; runs until every handle of the queue is gone.
async fn write_deliveries(pool: SqlitePool, mut requests: mpsc::Receiver<EnqueueRequest>) {
    while let Some(first) = requests.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match requests.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        write_batch(&pool, batch).await;
    }
}

async fn write_batch(pool: &SqlitePool, batch: Vec<EnqueueRequest>) {
    let failed = |error: &dyn std::fmt::Display| {
        QueueError::Invalid(format!(
            "the job queue could not record the delivery: {error}"
        ))
    };
    let mut tx = match pool.begin().await {
        Ok(tx) => tx,
        Err(error) => {
            for request in batch {
                let _ = request.reply.send(Err(failed(&error)));
            }
            return;
        }
    };
    let mut answers = Vec::with_capacity(batch.len());
    let mut retry_alone = false;
    for request in &batch {
        match enqueue_in(
            &mut tx,
            &request.delivery,
            &request.event,
            request.job.clone(),
            request.now,
        )
        .await
        {
            Ok(result) => answers.push(result),
            Err(_) => {
                retry_alone = true;
                break;
            }
        }
    }
    if retry_alone {
        // Something in the batch could not be written (rare): undo it, and write each delivery
        // in a transaction of its own, so one bad delivery fails alone.
        drop(tx);
        for request in batch {
            let result = async {
                let mut tx = pool.begin().await.map_err(query_error("enqueue"))?;
                let result = enqueue_in(
                    &mut tx,
                    &request.delivery,
                    &request.event,
                    request.job,
                    request.now,
                )
                .await?;
                tx.commit().await.map_err(query_error("enqueue"))?;
                Ok(result)
            }
            .await;
            let _ = request.reply.send(result);
        }
        return;
    }
    let answers: Vec<_> = batch
        .into_iter()
        .map(|request| request.reply)
        .zip(answers.into_iter().map(Ok))
        .collect();
    // Answered only once on disk.
    match tx.commit().await {
        Ok(()) => {
            for (reply, result) in answers {
                let _ = reply.send(result);
            }
        }
        Err(error) => {
            for (reply, _) in answers {
                let _ = reply.send(Err(failed(&error)));
            }
        }
    }
}

fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl SqliteQueue {
    /// Opens (creating) the queue at `path` and brings its schema up to date.
    pub async fn open(path: &Path, retries: Retries) -> Result<SqliteQueue, QueueError> {
        let url = format!("sqlite://{}", path.display());
        let open_error = |source| QueueError::Open {
            url: url.clone(),
            source,
        };
        let options = SqliteConnectOptions::from_str(&url)
            .map_err(open_error)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // Every commit is on disk before a delivery is answered.
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(10));
        // One connection: every statement of the queue is short, and one writer at a time is
        // what SQLite allows anyway; transactions then never meet a busy database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(open_error)?;
        migrate(&pool).await?;
        let (writer, requests) = mpsc::channel(4 * BATCH);
        tokio::spawn(write_deliveries(pool.clone(), requests));
        Ok(SqliteQueue {
            pool,
            retries,
            writer,
        })
    }
}

async fn migrate(pool: &SqlitePool) -> Result<(), QueueError> {
    let mut tx = pool.begin().await.map_err(query_error("migrate"))?;
    sqlx::query("CREATE TABLE IF NOT EXISTS queue_schema (version INTEGER NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(query_error("migrate"))?;
    let version: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM queue_schema")
        .fetch_one(&mut *tx)
        .await
        .map_err(query_error("migrate"))?;
    let done = usize::try_from(version.unwrap_or(0)).unwrap_or(0);
    if done > MIGRATIONS.len() {
        return Err(QueueError::Invalid(format!(
            "the job queue was written by a newer bugloop (schema {done}, this one knows {})",
            MIGRATIONS.len()
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(done) {
        sqlx::raw_sql(migration)
            .execute(&mut *tx)
            .await
            .map_err(query_error("migrate"))?;
        sqlx::query("INSERT INTO queue_schema (version) VALUES (?)")
            .bind(i64::try_from(index + 1).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await
            .map_err(query_error("migrate"))?;
    }
    tx.commit().await.map_err(query_error("migrate"))
}

impl SqliteQueue {
    /// Records a delivery and, when it asks for one, its job; a delivery seen before changes
    /// nothing. A review supersedes the reviews of the same conversation still waiting. The
    /// deliveries that arrive together are written in one transaction (one sync to disk for
    /// all), each in a savepoint of its own, and each is answered once it is on disk.
    pub async fn enqueue(
        &self,
        delivery: &str,
        event: &str,
        job: Option<NewJob>,
        now: i64,
    ) -> Result<Enqueued, QueueError> {
        let (reply, answer) = oneshot::channel();
        let request = EnqueueRequest {
            delivery: delivery.to_owned(),
            event: event.to_owned(),
            job,
            now,
            reply,
        };
        let stopped = || QueueError::Invalid("the job queue's writer has stopped".to_owned());
        self.writer.send(request).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }

    /// Claims the oldest job that may run now: queued and due, or running under a lease that
    /// ran out (its worker died: taken over), in a conversation with no other job running.
    pub async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        now: i64,
    ) -> Result<Option<Lease>, QueueError> {
        let mut tx = self.pool.begin().await.map_err(query_error("claim"))?;
        let candidate: Option<String> = sqlx::query_scalar(
            "SELECT j.id FROM jobs j \
             WHERE ((j.state = 'queued' AND j.run_after <= ?) \
                    OR (j.state = 'running' AND j.lease_until <= ?)) \
               AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.conversation = j.conversation \
                               AND r.id <> j.id AND r.state = 'running' AND r.lease_until > ?) \
             ORDER BY j.created_at, j.id LIMIT 1",
        )
        .bind(now)
        .bind(now)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(query_error("find a job to claim"))?;
        let Some(id) = candidate else {
            return Ok(None);
        };
        let row = sqlx::query(&format!(
            "UPDATE jobs SET state = 'running', lease_owner = ?, lease_until = ?, \
             epoch = epoch + 1, attempts = attempts + 1, updated_at = ? \
             WHERE id = ? RETURNING {COLUMNS}"
        ))
        .bind(worker)
        .bind(now.saturating_add(ms(lease)))
        .bind(now)
        .bind(&id)
        .fetch_one(&mut *tx)
        .await
        .map_err(query_error("claim the job"))?;
        tx.commit().await.map_err(query_error("claim"))?;
        let job = job_of(&row)?;
        Ok(Some(Lease {
            worker: worker.to_owned(),
            epoch: job.epoch,
            job,
        }))
    }

    /// Whether the lease still holds: the job is running under this epoch and its lease has not
    /// run out. A worker checks it before every write to GitHub.
    pub async fn holds(&self, lease: &Lease, now: i64) -> Result<bool, QueueError> {
        let held: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM jobs WHERE id = ? AND epoch = ? AND state = 'running' \
             AND lease_until > ?",
        )
        .bind(&lease.job.id)
        .bind(lease.epoch)
        .bind(now)
        .fetch_optional(&self.pool)
        .await
        .map_err(query_error("check a lease"))?;
        Ok(held.is_some())
    }

    /// Renews a lease that still holds; `false` when it was lost (the worker must stop).
    pub async fn heartbeat(
        &self,
        lease: &Lease,
        extend: Duration,
        now: i64,
    ) -> Result<bool, QueueError> {
        let renewed = sqlx::query(
            "UPDATE jobs SET lease_until = ?, updated_at = ? \
             WHERE id = ? AND epoch = ? AND state = 'running' AND lease_until > ?",
        )
        .bind(now.saturating_add(ms(extend)))
        .bind(now)
        .bind(&lease.job.id)
        .bind(lease.epoch)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(query_error("renew a lease"))?
        .rows_affected();
        Ok(renewed == 1)
    }

    /// The job is done; `false` when the lease was lost meanwhile (someone else owns it now).
    pub async fn complete(&self, lease: &Lease, now: i64) -> Result<bool, QueueError> {
        let done = sqlx::query(
            "UPDATE jobs SET state = 'done', lease_owner = NULL, lease_until = NULL, \
             error = NULL, updated_at = ? WHERE id = ? AND epoch = ? AND state = 'running'",
        )
        .bind(now)
        .bind(&lease.job.id)
        .bind(lease.epoch)
        .execute(&self.pool)
        .await
        .map_err(query_error("complete a job"))?
        .rows_affected();
        Ok(done == 1)
    }

    /// The attempt failed: retried later (transient, attempts left) or dead, with the error
    /// kept either way. Returns the state the job is in, `None` when the lease was lost.
    pub async fn fail(
        &self,
        lease: &Lease,
        error: &str,
        failure: Failure,
        now: i64,
    ) -> Result<Option<JobState>, QueueError> {
        let attempts = lease.job.attempts;
        let retry = failure == Failure::Transient && attempts < self.retries.max_attempts;
        let (state, run_after) = if retry {
            (
                JobState::Queued,
                now.saturating_add(self.retries.wait_ms(attempts)),
            )
        } else {
            (JobState::Dead, now)
        };
        let changed = sqlx::query(
            "UPDATE jobs SET state = ?, run_after = ?, lease_owner = NULL, lease_until = NULL, \
             error = ?, updated_at = ? WHERE id = ? AND epoch = ? AND state = 'running'",
        )
        .bind(state.as_str())
        .bind(run_after)
        .bind(error)
        .bind(now)
        .bind(&lease.job.id)
        .bind(lease.epoch)
        .execute(&self.pool)
        .await
        .map_err(query_error("fail a job"))?
        .rows_affected();
        Ok((changed == 1).then_some(state))
    }

    /// A dead or done job queued again at once (`bugloop jobs retry`), attempts counted anew.
    pub async fn retry(&self, id: &str, now: i64) -> Result<Job, QueueError> {
        let row = sqlx::query(&format!(
            "UPDATE jobs SET state = 'queued', attempts = 0, run_after = ?, error = NULL, \
             updated_at = ? WHERE id = ? AND state IN ('dead', 'done', 'superseded') \
             RETURNING {COLUMNS}"
        ))
        .bind(now)
        .bind(now)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(query_error("retry a job"))?;
        match row {
            Some(row) => job_of(&row),
            None => Err(QueueError::Invalid(format!(
                "no job {id:?} that is dead, done or superseded (a queued or running job is \
                 not retried)"
            ))),
        }
    }

    /// Every job, newest first.
    pub async fn jobs(&self) -> Result<Vec<Job>, QueueError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM jobs ORDER BY created_at DESC, id DESC"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("list jobs"))?;
        rows.iter().map(job_of).collect()
    }

    /// How many jobs there are of each kind in each state.
    pub async fn counts(&self) -> Result<Vec<(JobKind, JobState, i64)>, QueueError> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY kind, state",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("count jobs"))?;
        rows.into_iter()
            .map(|(kind, state, count)| {
                let kind = JobKind::parse(&kind).ok_or_else(|| {
                    QueueError::Invalid(format!("a job of an unknown kind {kind:?}"))
                })?;
                let state = JobState::parse(&state).ok_or_else(|| {
                    QueueError::Invalid(format!("a job in an unknown state {state:?}"))
                })?;
                Ok((kind, state, count))
            })
            .collect()
    }

    /// One job by its id.
    pub async fn job(&self, id: &str) -> Result<Option<Job>, QueueError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(query_error("read a job"))?;
        row.as_ref().map(job_of).transpose()
    }
}

fn job_of(row: &SqliteRow) -> Result<Job, QueueError> {
    let get = |what: &'static str| query_error(what);
    let kind: String = row.try_get("kind").map_err(get("read kind"))?;
    let state: String = row.try_get("state").map_err(get("read state"))?;
    Ok(Job {
        id: row.try_get("id").map_err(get("read id"))?,
        kind: JobKind::parse(&kind)
            .ok_or_else(|| QueueError::Invalid(format!("a job of an unknown kind {kind:?}")))?,
        conversation: row
            .try_get("conversation")
            .map_err(get("read conversation"))?,
        installation: row
            .try_get("installation")
            .map_err(get("read installation"))?,
        head: row.try_get("head").map_err(get("read head"))?,
        payload: row.try_get("payload").map_err(get("read payload"))?,
        state: JobState::parse(&state)
            .ok_or_else(|| QueueError::Invalid(format!("a job in an unknown state {state:?}")))?,
        attempts: row.try_get("attempts").map_err(get("read attempts"))?,
        run_after: row.try_get("run_after").map_err(get("read run_after"))?,
        lease_owner: row
            .try_get("lease_owner")
            .map_err(get("read lease_owner"))?,
        lease_until: row
            .try_get("lease_until")
            .map_err(get("read lease_until"))?,
        epoch: row.try_get("epoch").map_err(get("read epoch"))?,
        error: row.try_get("error").map_err(get("read error"))?,
        created_at: row.try_get("created_at").map_err(get("read created_at"))?,
        updated_at: row.try_get("updated_at").map_err(get("read updated_at"))?,
    })
}

/// One delivery's rows, written inside the batch's transaction.
async fn enqueue_in(
    tx: &mut sqlx::SqliteConnection,
    delivery: &str,
    event: &str,
    job: Option<NewJob>,
    now: i64,
) -> Result<Enqueued, QueueError> {
    // A delivery's job has the delivery's id.
    let job_id = job.as_ref().map(|_| delivery);
    let inserted = sqlx::query(
        "INSERT INTO deliveries (id, event, received_at, job_id) VALUES (?, ?, ?, ?) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(delivery)
    .bind(event)
    .bind(now)
    .bind(job_id)
    .execute(&mut *tx)
    .await
    .map_err(query_error("record the delivery"))?
    .rows_affected();
    if inserted == 0 {
        let job: Option<String> = sqlx::query_scalar("SELECT job_id FROM deliveries WHERE id = ?")
            .bind(delivery)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("read the delivery"))?;
        return Ok(Enqueued::Redelivered { job });
    }
    let Some(job) = job else {
        return Ok(Enqueued::Recorded);
    };
    let mut superseded = Vec::new();
    if job.kind == JobKind::Review {
        superseded = sqlx::query_scalar(
            "UPDATE jobs SET state = 'superseded', updated_at = ? \
             WHERE conversation = ? AND kind = 'review' AND state = 'queued' RETURNING id",
        )
        .bind(now)
        .bind(&job.conversation)
        .fetch_all(&mut *tx)
        .await
        .map_err(query_error("supersede waiting reviews"))?;
    }
    let id = delivery.to_owned();
    sqlx::query(
        "INSERT INTO jobs (id, kind, conversation, installation, head, payload, state, \
         attempts, run_after, epoch, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, 'queued', 0, ?, 0, ?, ?)",
    )
    .bind(&id)
    .bind(job.kind.as_str())
    .bind(&job.conversation)
    .bind(job.installation)
    .bind(&job.head)
    .bind(&job.payload)
    .bind(now)
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(query_error("queue the job"))?;
    Ok(Enqueued::Queued {
        job: id,
        superseded,
    })
}
