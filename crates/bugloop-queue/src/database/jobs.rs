//! The queue's operations on jobs: enqueue (deliveries in batches), claim under the limits and
//! with aging, the lease's heartbeat, completion, release and failure, retries, and listings.

use std::time::Duration;

use sqlx::any::AnyRow;
use tokio::sync::oneshot;

use super::{
    CLAIM_CANDIDATES, COLUMNS, LIMITS_LOCK, claimable, claimable_binds, claimable_condition,
    conversation_is_free, job_of, ms, numbered, taking,
};
use crate::{
    Backend, EnqueueRequest, Enqueued, Failure, Job, JobKind, JobState, Lease, Limits, NewJob,
    Queue, QueueError, query_error,
};

impl Queue {
    /// Records a delivery and, when it asks for one, its job; a delivery seen before changes
    /// nothing. A review supersedes the reviews of the same conversation still waiting. The
    /// deliveries that arrive together are written in one transaction (one sync to disk for
    /// all; on SQLite in a few statements for all, `sqlite_batch`), and each is answered once
    /// it is on disk; if the batch fails, each is written again alone, so one bad delivery
    /// fails alone.
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
        let row = match self.backend {
            Backend::Sqlite => self.claim_sqlite(worker, lease, now).await?,
            Backend::Postgres => self.claim_postgres(worker, lease, now).await?,
        };
        let Some(row) = row else {
            return Ok(None);
        };
        let job = job_of(&row)?;
        Ok(Some(Lease {
            worker: worker.to_owned(),
            epoch: job.epoch,
            job,
        }))
    }

    /// On SQLite the candidates are read outside any write, and each is taken by one
    /// statement that checks again that it may run: SQLite's write lock is then held for one
    /// short update, never across the search, so intake's writer (on a connection of its own)
    /// waits for no claim's query. Several workers may read the same first candidate; one
    /// update takes it and the others' change nothing, so they try the next.
    async fn claim_sqlite(
        &self,
        worker: &str,
        lease: Duration,
        now: i64,
    ) -> Result<Option<AnyRow>, QueueError> {
        let select = format!("{} LIMIT {CLAIM_CANDIDATES}", claimable(self.limits));
        let mut query = sqlx::query_as(&select);
        for _ in 0..claimable_binds(self.limits) {
            query = query.bind(now);
        }
        let candidates: Vec<(String, String)> = query
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("find a job to claim"))?;
        let take = taking(&format!("AND {}", claimable_condition(self.limits)));
        for (id, _) in candidates {
            let mut query = sqlx::query(&take)
                .bind(worker)
                .bind(now.saturating_add(ms(lease)))
                .bind(now)
                .bind(now)
                .bind(&id);
            for _ in 0..claimable_binds(self.limits) {
                query = query.bind(now);
            }
            let turn = self.turn().await;
            let taken = query
                .fetch_optional(&self.pool)
                .await
                .map_err(query_error("claim the job"))?;
            drop(turn);
            if let Some(row) = taken {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// On PostgreSQL other processes claim at the same time: the candidates are locked,
    /// skipping those another claim holds, so no two claims wait on each other or take the
    /// same job.
    async fn claim_postgres(
        &self,
        worker: &str,
        lease: Duration,
        now: i64,
    ) -> Result<Option<AnyRow>, QueueError> {
        let mut tx = self.pool.begin().await.map_err(query_error("claim"))?;
        if self.limits != Limits::default() {
            // Counting running jobs is exact only if claims take turns: with limits they do (a
            // claim is a few milliseconds).
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(LIMITS_LOCK)
                .execute(&mut *tx)
                .await
                .map_err(query_error("take the claim lock"))?;
        }
        let text = numbered(&format!(
            "{} LIMIT {CLAIM_CANDIDATES} FOR UPDATE OF j SKIP LOCKED",
            claimable(self.limits)
        ));
        let mut query = sqlx::query_as(&text);
        for _ in 0..claimable_binds(self.limits) {
            query = query.bind(now);
        }
        let candidates: Vec<(String, String)> = query
            .fetch_all(&mut *tx)
            .await
            .map_err(query_error("find a job to claim"))?;
        let mut chosen = None;
        for (id, conversation) in candidates {
            if conversation_is_free(&mut tx, &id, &conversation, now).await? {
                chosen = Some(id);
                break;
            }
        }
        let Some(id) = chosen else {
            return Ok(None);
        };
        let row = sqlx::query(&numbered(&taking("")))
            .bind(worker)
            .bind(now.saturating_add(ms(lease)))
            .bind(now)
            .bind(now)
            .bind(&id)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("claim the job"))?;
        tx.commit().await.map_err(query_error("claim"))?;
        Ok(Some(row))
    }

    /// Whether the lease still holds: the job is running under this epoch and its lease has not
    /// run out. A worker checks it before every write to GitHub.
    pub async fn holds(&self, lease: &Lease, now: i64) -> Result<bool, QueueError> {
        let held: Option<i64> = sqlx::query_scalar(&self.sql(
            "SELECT 1 FROM jobs WHERE id = ? AND epoch = ? AND state = 'running' \
             AND lease_until > ?",
        ))
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
        let _turn = self.turn().await;
        let renewed = sqlx::query(&self.sql(
            "UPDATE jobs SET lease_until = ?, updated_at = ? \
             WHERE id = ? AND epoch = ? AND state = 'running' AND lease_until > ?",
        ))
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
        self.end_attempt(
            "UPDATE jobs SET state = 'done', lease_until = NULL, \
             error = NULL, updated_at = ?, finished_at = ? \
             WHERE id = ? AND epoch = ? AND state = 'running'",
            lease,
            now,
            "complete a job",
        )
        .await
    }

    /// Hands a job back unfinished (the server is stopping): queued again at once, the attempt
    /// not counted; `false` when the lease was lost meanwhile.
    pub async fn release(&self, lease: &Lease, now: i64) -> Result<bool, QueueError> {
        self.end_attempt(
            "UPDATE jobs SET state = 'queued', lease_owner = NULL, lease_until = NULL, \
             attempts = attempts - 1, run_after = ?, started_at = NULL, updated_at = ? \
             WHERE id = ? AND epoch = ? AND state = 'running'",
            lease,
            now,
            "hand a job back",
        )
        .await
    }

    /// Ends the attempt `lease` holds with `update`, whose parameters are `now` twice, then the
    /// job's id and the lease's epoch; `false` when the lease was lost meanwhile.
    async fn end_attempt(
        &self,
        update: &str,
        lease: &Lease,
        now: i64,
        what: &'static str,
    ) -> Result<bool, QueueError> {
        let _turn = self.turn().await;
        let changed = sqlx::query(&self.sql(update))
            .bind(now)
            .bind(now)
            .bind(&lease.job.id)
            .bind(lease.epoch)
            .execute(&self.pool)
            .await
            .map_err(query_error(what))?
            .rows_affected();
        Ok(changed == 1)
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
        let _turn = self.turn().await;
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
        let changed = sqlx::query(&self.sql(
            "UPDATE jobs SET state = ?, run_after = ?, lease_until = NULL, \
             error = ?, updated_at = ?, finished_at = ? \
             WHERE id = ? AND epoch = ? AND state = 'running'",
        ))
        .bind(state.as_str())
        .bind(run_after)
        .bind(error)
        .bind(now)
        .bind((state == JobState::Dead).then_some(now))
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
        let _turn = self.turn().await;
        let row = sqlx::query(&self.sql(&format!(
            "UPDATE jobs SET state = 'queued', attempts = 0, run_after = ?, error = NULL, \
             updated_at = ?, started_at = NULL, finished_at = NULL WHERE id = ? AND state IN ('dead', 'done', 'superseded') \
             RETURNING {COLUMNS}"
        )))
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
        let rows = sqlx::query(&self.sql(&format!(
            "SELECT {COLUMNS} FROM jobs ORDER BY created_at DESC, id DESC"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("list jobs"))?;
        rows.iter().map(job_of).collect()
    }

    /// How many jobs there are of each kind in each state.
    pub async fn counts(&self) -> Result<Vec<(JobKind, JobState, i64)>, QueueError> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(&self.sql(
            "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY kind, state",
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("count jobs"))?;
        rows.into_iter()
            .map(|(kind, state, count)| {
                let kind = crate::parse_stored_kind(&kind).ok_or_else(|| {
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
        let row = sqlx::query(&self.sql(&format!("SELECT {COLUMNS} FROM jobs WHERE id = ?")))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(query_error("read a job"))?;
        row.as_ref().map(job_of).transpose()
    }
}
