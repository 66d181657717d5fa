//! The queue in a database, through sqlx's `Any` driver so one implementation serves both:
//! SQLite (WAL, two connections per process, intake's and the workers': nothing to install,
//! one server process) and PostgreSQL (several server processes on several machines).
//! Statements are written once with `?` placeholders and numbered for PostgreSQL; only the claim
//! differs: PostgreSQL's concurrent claimers lock rows, SQLite's take a job with one checked
//! update.

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::sync::Once;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyConnection, AnyPool, Row};
use tokio::sync::mpsc;

use crate::{
    EnqueueRequest, Enqueued, Job, JobKind, JobState, Limits, NewJob, QueueError, Retries,
    query_error,
};

mod jobs;

const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_queue.sql"),
    include_str!("../migrations/0002_job_times.sql"),
    include_str!("../migrations/0003_job_priority.sql"),
];

const COLUMNS: &str = "id, kind, conversation, installation, head, payload, state, attempts, \
     run_after, lease_owner, lease_until, epoch, error, created_at, updated_at, started_at, \
     finished_at";

/// How many writers record deliveries at once on PostgreSQL.
// Measured on 2 cores (BENCHMARKS.md, 2026-11-26): with one statement per delivery, one writer
// takes as many deliveries as two and its tail is shorter (p99 about 19 ms against 30 at 64
// clients): a second writer's batches wait on the first's row locks.
const POSTGRES_WRITERS: usize = 1;

/// The most deliveries written in one transaction.
const BATCH: usize = 256;

/// How many candidates a claim tries (others may hold the first ones, or their conversations).
const CLAIM_CANDIDATES: i64 = 16;

/// What makes the job `j` claimable now: queued and due, or running under a lease that ran
/// out, in a conversation with no other job running under a live lease, within `limits`. Every
/// `?` is now ([`claimable_binds`] of them).
fn claimable_condition(limits: Limits) -> String {
    let mut text = String::from(
        "((j.state = 'queued' AND j.run_after <= ?) \
                OR (j.state = 'running' AND j.lease_until <= ?)) \
           AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.conversation = j.conversation \
                           AND r.id <> j.id AND r.state = 'running' AND r.lease_until > ?)",
    );
    if let Some(running) = limits.running {
        text.push_str(&format!(
            " AND (SELECT COUNT(*) FROM jobs r WHERE r.state = 'running' \
               AND r.lease_until > ?) < {running}"
        ));
    }
    if let Some(per_installation) = limits.per_installation {
        text.push_str(&format!(
            " AND (SELECT COUNT(*) FROM jobs r WHERE r.installation = j.installation \
               AND r.state = 'running' AND r.lease_until > ?) < {per_installation}"
        ));
    }
    text
}

/// The jobs that may be claimed now ([`claimable_condition`]), highest priority (aged by
/// waiting) first and then oldest.
fn claimable(limits: Limits) -> String {
    // Priority ages: a job that waited AGING_MS longer counts as one step higher, so a stream
    // of higher jobs (reviews anyone can ask for with a fork's pushes) never holds one back
    // for good.
    format!(
        "SELECT j.id, j.conversation FROM jobs j WHERE {} \
         ORDER BY (j.priority * {AGING_MS} - j.created_at) DESC, j.created_at, j.id",
        claimable_condition(limits)
    )
}

/// The update that takes the job `j` whose id is bound after the worker, the lease's end and now
/// twice, when `and` (more conditions, or nothing) holds too.
fn taking(and: &str) -> String {
    format!(
        "UPDATE jobs AS j SET state = 'running', lease_owner = ?, lease_until = ?, \
         epoch = epoch + 1, attempts = attempts + 1, updated_at = ?, started_at = ? \
         WHERE j.id = ? {and} RETURNING {COLUMNS}"
    )
}

/// How long a job waits to count as one priority step higher (5 minutes).
pub const AGING_MS: i64 = 300_000;

/// How many times [`claimable`]'s text binds now.
fn claimable_binds(limits: Limits) -> usize {
    3 + usize::from(limits.running.is_some()) + usize::from(limits.per_installation.is_some())
}

/// The PostgreSQL advisory lock claims take when limits are set, so their counts are exact.
const LIMITS_LOCK: i64 = 0x0062_7567_6c69_6d74;

/// The key of the PostgreSQL advisory lock migrations take, so two servers starting together
/// do not both create the tables (`bugloop` in ASCII).
const MIGRATION_LOCK: i64 = 0x0062_7567_6c6f_6f70;

/// Which database holds the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The durable job queue.
#[derive(Debug, Clone)]
pub struct Queue {
    pool: AnyPool,
    backend: Backend,
    retries: Retries,
    limits: Limits,
    /// Deliveries go through one writer per process, which commits those that arrive together
    /// at once.
    writer: mpsc::Sender<EnqueueRequest>,
    /// SQLite's second connection, the workers' ([`Queue::for_workers`]).
    workers_pool: Option<AnyPool>,
    /// On SQLite the process's writes take turns here, intake's batches and the workers'
    /// statements alike (FIFO): SQLite itself would make the one that finds the database
    /// locked sleep in its busy handler, up to 100 ms at a time, with every delivery waiting.
    write_gate: WriteGate,
}

type WriteGate = std::sync::Arc<tokio::sync::Mutex<()>>;

/// A turn at `gate` on SQLite; PostgreSQL's writers need none (its row locks wait without
/// sleeping).
async fn turn(gate: &WriteGate, backend: Backend) -> Option<tokio::sync::MutexGuard<'_, ()>> {
    match backend {
        Backend::Sqlite => Some(gate.lock().await),
        Backend::Postgres => None,
    }
}

/// `?` placeholders numbered `$1`, `$2`, ... for PostgreSQL. The queue's statements hold no `?`
/// in a literal.
fn numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut n = 0;
    for c in text.chars() {
        if c == '?' {
            n += 1;
            out.push('$');
            out.push_str(&n.to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn sql(backend: Backend, text: &str) -> Cow<'_, str> {
    match backend {
        Backend::Sqlite => Cow::Borrowed(text),
        Backend::Postgres => Cow::Owned(numbered(text)),
    }
}

/// Writes the deliveries that are waiting, up to [`BATCH`] at a time, each batch in one
/// transaction; runs until every handle of the queue is gone. Several writers may share the
/// requests (PostgreSQL): each takes the waiting ones in turn and writes them on a connection
/// of its own, so one batch's round trips do not hold the next back.
async fn write_deliveries(
    pool: AnyPool,
    backend: Backend,
    requests: std::sync::Arc<tokio::sync::Mutex<mpsc::Receiver<EnqueueRequest>>>,
    gate: WriteGate,
) {
    loop {
        let batch = {
            let mut requests = requests.lock().await;
            let Some(first) = requests.recv().await else {
                return;
            };
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match requests.try_recv() {
                    Ok(request) => batch.push(request),
                    Err(_) => break,
                }
            }
            batch
        };
        let _turn = turn(&gate, backend).await;
        write_batch(&pool, backend, batch).await;
    }
}

async fn write_batch(pool: &AnyPool, backend: Backend, batch: Vec<EnqueueRequest>) {
    let failed = |error: &dyn std::fmt::Display| {
        QueueError::Invalid(format!(
            "the job queue could not record the delivery: {error}"
        ))
    };
    let mut tx = match begin_write(pool, backend).await {
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
    if backend == Backend::Sqlite {
        match crate::sqlite_batch::enqueue_batch(&mut tx, &batch).await {
            Ok(results) => answers = results,
            Err(error) => {
                tracing::warn!(%error, deliveries = batch.len(), "the batch of deliveries could not be written at once; writing each alone");
                retry_alone = true;
            }
        }
    } else {
        for request in &batch {
            match enqueue_in(
                &mut tx,
                backend,
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
    }
    if retry_alone {
        // Something in the batch could not be written (rare): undo it, and write each delivery
        // in a transaction of its own, so one bad delivery fails alone.
        drop(tx);
        write_each_alone(pool, backend, batch).await;
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

/// Writes each delivery of a batch in a transaction of its own, answering each with its own
/// result: what is done when the batch could not be written at once.
async fn write_each_alone(pool: &AnyPool, backend: Backend, batch: Vec<EnqueueRequest>) {
    for request in batch {
        let result = async {
            let mut tx = begin_write(pool, backend)
                .await
                .map_err(query_error("enqueue"))?;
            let result = enqueue_in(
                &mut tx,
                backend,
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
}

/// A transaction that writes. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`):
/// a deferred one that read first could not take it once the workers' connection wrote
/// meanwhile (SQLite answers busy at once then, without waiting).
async fn begin_write(
    pool: &AnyPool,
    backend: Backend,
) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
    match backend {
        Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
        Backend::Postgres => pool.begin().await,
    }
}

fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

fn install_drivers() {
    static DRIVERS: Once = Once::new();
    DRIVERS.call_once(sqlx::any::install_default_drivers);
}

impl Queue {
    /// Opens (creating) the queue in the SQLite file at `path` and brings its schema up to date.
    pub async fn open_sqlite(path: &Path, retries: Retries) -> Result<Queue, QueueError> {
        let text = path.to_str().ok_or_else(|| {
            QueueError::Invalid(format!(
                "the job queue's path {} is not UTF-8",
                path.display()
            ))
        })?;
        // Percent-encoded, so a path with `?`, `#` or `%` stays a path.
        let url = format!("sqlite://{}?mode=rwc", percent_encoded(text));
        install_drivers();
        let options = AnyConnectOptions::from_str(&url).map_err(|source| QueueError::Open {
            url: format!("sqlite:{}", path.display()),
            source,
        })?;
        // One connection for intake (its writer and the status page's reads), and one more,
        // made when first used, that every worker of the process shares ([`Queue::for_workers`]):
        // SQLite allows one writer at a time anyway, and each of the workers' statements is
        // short, so intake never waits behind a worker's queue of statements, only, at most,
        // for one statement's write.
        let workers_pool = AnyPoolOptions::new()
            .max_connections(1)
            .after_connect(sqlite_pragmas)
            .connect_lazy_with(options.clone());
        let pool = AnyPoolOptions::new()
            .max_connections(1)
            .after_connect(sqlite_pragmas)
            .connect_with(options)
            .await
            .map_err(|source| QueueError::Open {
                url: format!("sqlite:{}", path.display()),
                source,
            })?;
        let mut queue = Queue::start(pool, Backend::Sqlite, retries).await?;
        queue.workers_pool = Some(workers_pool);
        Ok(queue)
    }

    /// The handle the workers claim and settle jobs through: on SQLite it has a connection of
    /// its own, so their statements never queue before intake's; on PostgreSQL this handle (a
    /// worker thread opens a pool of its own there: a connection belongs to the runtime that
    /// made it).
    pub fn for_workers(&self) -> Queue {
        let mut queue = self.clone();
        if let Some(pool) = &self.workers_pool {
            queue.pool = pool.clone();
        }
        queue
    }

    /// Opens the queue in the PostgreSQL database `url` names (`postgres://...`) and brings its
    /// schema up to date; several processes may share it. `connections` bounds the pool.
    pub async fn open_postgres(
        url: &str,
        retries: Retries,
        connections: u32,
    ) -> Result<Queue, QueueError> {
        install_drivers();
        let shown = crate::redact::without_password(url);
        let options = AnyConnectOptions::from_str(url).map_err(|source| QueueError::Open {
            url: shown.clone(),
            source,
        })?;
        let pool = AnyPoolOptions::new()
            .max_connections(connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|source| QueueError::Open {
                url: shown.clone(),
                source,
            })?;
        Queue::start(pool, Backend::Postgres, retries).await
    }

    async fn start(pool: AnyPool, backend: Backend, retries: Retries) -> Result<Queue, QueueError> {
        migrate(&pool, backend).await?;
        let (writer, requests) = mpsc::channel(4 * BATCH);
        let requests = std::sync::Arc::new(tokio::sync::Mutex::new(requests));
        // SQLite has one connection, so one writer; PostgreSQL gets several.
        let writers = match backend {
            Backend::Sqlite => 1,
            Backend::Postgres => POSTGRES_WRITERS,
        };
        let write_gate = WriteGate::default();
        for _ in 0..writers {
            tokio::spawn(write_deliveries(
                pool.clone(),
                backend,
                requests.clone(),
                write_gate.clone(),
            ));
        }
        Ok(Queue {
            pool,
            backend,
            retries,
            limits: Limits::default(),
            writer,
            workers_pool: None,
            write_gate,
        })
    }

    /// The queue whose claims keep within `limits`.
    pub fn with_limits(mut self, limits: Limits) -> Queue {
        self.limits = limits;
        self
    }

    /// The limits its claims keep within.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Which database holds the queue.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool intake writes through (tests compare ways of writing on it).
    #[cfg(test)]
    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// This process's turn to write ([`Queue::write_gate`]).
    async fn turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        turn(&self.write_gate, self.backend).await
    }

    fn sql<'a>(&self, text: &'a str) -> Cow<'a, str> {
        sql(self.backend, text)
    }
}

/// WAL, and every commit on disk before a delivery is answered; set on every connection made.
fn sqlite_pragmas<'c>(
    connection: &'c mut AnyConnection,
    _: sqlx::pool::PoolConnectionMetadata,
) -> std::pin::Pin<Box<dyn Future<Output = Result<(), sqlx::Error>> + Send + 'c>> {
    Box::pin(async move {
        for pragma in [
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = FULL",
            "PRAGMA busy_timeout = 10000",
        ] {
            sqlx::Executor::execute(&mut *connection, pragma).await?;
        }
        Ok(())
    })
}

fn percent_encoded(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// On PostgreSQL: whether `conversation` may get a running job now. Two claims may each have
/// locked a different job of the same conversation, both seeing none running when they read; a
/// lock on the conversation (held to the end of the transaction) makes them take turns, and the
/// second, reading again once it has the lock, sees the first's job running.
async fn conversation_is_free(
    tx: &mut AnyConnection,
    id: &str,
    conversation: &str,
    now: i64,
) -> Result<bool, QueueError> {
    let locked: bool =
        sqlx::query_scalar("SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(conversation)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("lock a conversation"))?;
    if !locked {
        return Ok(false);
    }
    let running: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE conversation = $1 AND id <> $2 \
         AND state = 'running' AND lease_until > $3",
    )
    .bind(conversation)
    .bind(id)
    .bind(now)
    .fetch_one(&mut *tx)
    .await
    .map_err(query_error("check a conversation"))?;
    Ok(running == 0)
}

async fn migrate(pool: &AnyPool, backend: Backend) -> Result<(), QueueError> {
    let mut tx = begin_write(pool, backend)
        .await
        .map_err(query_error("migrate"))?;
    if backend == Backend::Postgres {
        // Released at commit; a second server waits here, then finds the schema made.
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(query_error("migrate"))?;
    }
    sqlx::query("CREATE TABLE IF NOT EXISTS queue_schema (version BIGINT NOT NULL)")
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
        sqlx::query(&sql(
            backend,
            "INSERT INTO queue_schema (version) VALUES (?)",
        ))
        .bind(i64::try_from(index + 1).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await
        .map_err(query_error("migrate"))?;
    }
    tx.commit().await.map_err(query_error("migrate"))
}

fn job_of(row: &AnyRow) -> Result<Job, QueueError> {
    let get = |what: &'static str| query_error(what);
    let kind: String = row.try_get("kind").map_err(get("read kind"))?;
    let state: String = row.try_get("state").map_err(get("read state"))?;
    Ok(Job {
        id: row.try_get("id").map_err(get("read id"))?,
        kind: crate::parse_stored_kind(&kind)
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
        started_at: row.try_get("started_at").map_err(get("read started_at"))?,
        finished_at: row
            .try_get("finished_at")
            .map_err(get("read finished_at"))?,
    })
}

/// [`enqueue_in`] on PostgreSQL: the delivery, the reviews it supersedes and its job in one
/// statement (one round trip instead of three; PostgreSQL's data-modifying `WITH`), the job
/// and the superseding only when the delivery is new.
async fn enqueue_in_one_statement(
    tx: &mut AnyConnection,
    delivery: &str,
    event: &str,
    job: Option<NewJob>,
    now: i64,
) -> Result<Enqueued, QueueError> {
    let (kind, conversation, installation, head, payload, priority) = match &job {
        Some(job) => (
            Some(crate::stored_kind(job.kind)),
            Some(job.conversation.as_str()),
            job.installation,
            job.head.as_deref(),
            Some(job.payload.as_str()),
            job.priority,
        ),
        None => (None, None, None, None, None, 0),
    };
    let (recorded, superseded): (i64, String) = sqlx::query_as(
        "WITH recorded AS ( \
             INSERT INTO deliveries (id, event, received_at, job_id) \
             VALUES ($1, $2, $3, CASE WHEN $4::text IS NULL THEN NULL ELSE $1 END) \
             ON CONFLICT (id) DO NOTHING RETURNING id), \
         superseded AS ( \
             UPDATE jobs SET state = 'superseded', updated_at = $3, finished_at = $3 \
             WHERE $4::text = 'review' AND kind = 'review' AND state = 'queued' \
               AND conversation = $5::text AND EXISTS (SELECT 1 FROM recorded) RETURNING id), \
         queued AS ( \
             INSERT INTO jobs (id, kind, conversation, installation, head, payload, state, \
                               attempts, run_after, epoch, created_at, updated_at, priority) \
             SELECT id, $4::text, $5::text, $6::bigint, $7::text, $8::text, 'queued', \
                    0, $3, 0, $3, $3, $9::bigint FROM recorded WHERE $4::text IS NOT NULL \
             RETURNING id) \
         SELECT (SELECT COUNT(*) FROM recorded), \
                COALESCE((SELECT string_agg(id, E'\\n' ORDER BY id) FROM superseded), '')",
    )
    .bind(delivery)
    .bind(event)
    .bind(now)
    .bind(kind)
    .bind(conversation)
    .bind(installation)
    .bind(head)
    .bind(payload)
    .bind(priority)
    .fetch_one(&mut *tx)
    .await
    .map_err(query_error("record the delivery"))?;
    if recorded == 0 {
        let job: Option<String> = sqlx::query_scalar("SELECT job_id FROM deliveries WHERE id = $1")
            .bind(delivery)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("read the delivery"))?;
        return Ok(Enqueued::Redelivered { job });
    }
    Ok(match job {
        None => Enqueued::Recorded,
        Some(_) => Enqueued::Queued {
            job: delivery.to_owned(),
            superseded: superseded
                .lines()
                .filter(|id| !id.is_empty())
                .map(str::to_owned)
                .collect(),
        },
    })
}

/// One delivery's rows, written inside the batch's transaction.
pub(crate) async fn enqueue_in(
    tx: &mut AnyConnection,
    backend: Backend,
    delivery: &str,
    event: &str,
    job: Option<NewJob>,
    now: i64,
) -> Result<Enqueued, QueueError> {
    if backend == Backend::Postgres {
        return enqueue_in_one_statement(tx, delivery, event, job, now).await;
    }
    // A delivery's job has the delivery's id.
    let job_id = job.as_ref().map(|_| delivery);
    let inserted = sqlx::query(&sql(
        backend,
        "INSERT INTO deliveries (id, event, received_at, job_id) VALUES (?, ?, ?, ?) \
         ON CONFLICT (id) DO NOTHING",
    ))
    .bind(delivery)
    .bind(event)
    .bind(now)
    .bind(job_id)
    .execute(&mut *tx)
    .await
    .map_err(query_error("record the delivery"))?
    .rows_affected();
    if inserted == 0 {
        let job: Option<String> =
            sqlx::query_scalar(&sql(backend, "SELECT job_id FROM deliveries WHERE id = ?"))
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
        superseded = sqlx::query_scalar(&sql(
            backend,
            "UPDATE jobs SET state = 'superseded', updated_at = ?, finished_at = ? \
             WHERE conversation = ? AND kind = 'review' AND state = 'queued' RETURNING id",
        ))
        .bind(now)
        .bind(now)
        .bind(&job.conversation)
        .fetch_all(&mut *tx)
        .await
        .map_err(query_error("supersede waiting reviews"))?;
    }
    let id = delivery.to_owned();
    sqlx::query(&sql(
        backend,
        "INSERT INTO jobs (id, kind, conversation, installation, head, payload, state, \
         attempts, run_after, epoch, created_at, updated_at, priority) \
         VALUES (?, ?, ?, ?, ?, ?, 'queued', 0, ?, 0, ?, ?, ?)",
    ))
    .bind(&id)
    .bind(crate::stored_kind(job.kind))
    .bind(&job.conversation)
    .bind(job.installation)
    .bind(&job.head)
    .bind(&job.payload)
    .bind(now)
    .bind(now)
    .bind(now)
    .bind(job.priority)
    .execute(&mut *tx)
    .await
    .map_err(query_error("queue the job"))?;
    Ok(Enqueued::Queued {
        job: id,
        superseded,
    })
}
