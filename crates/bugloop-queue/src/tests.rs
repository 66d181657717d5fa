//! The queue's rules on real databases, each test on SQLite and on PostgreSQL: a redelivery is
//! a no-op, one job per conversation runs at a time, a newer push supersedes a waiting review, a
//! lease that ran out is taken over and its old holder fenced, transient failures retry with
//! backoff, others die with the error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bugloop_testkit::postgres::Postgres;

use super::*;

const LEASE: Duration = Duration::from_secs(60);

/// Where a test's queue lives, so it can be opened again.
enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl Place {
    fn new(backend: Backend) -> Place {
        match backend {
            Backend::Sqlite => Place::Sqlite(tempfile::tempdir().unwrap()),
            Backend::Postgres => Place::Postgres(Postgres::shared().database()),
        }
    }

    async fn open(&self, retries: Retries) -> Result<Queue, QueueError> {
        match self {
            Place::Sqlite(dir) => Queue::open_sqlite(&dir.path().join("queue.db"), retries).await,
            Place::Postgres(url) => Queue::open_postgres(url, retries, 4).await,
        }
    }

    /// Runs a statement beside the queue, as another program would.
    async fn execute(&self, statement: &str) {
        match self {
            Place::Sqlite(dir) => {
                let url = format!("sqlite://{}", dir.path().join("queue.db").display());
                let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
                sqlx::query(statement).execute(&pool).await.unwrap();
                pool.close().await;
            }
            Place::Postgres(url) => {
                let database = url.rsplit('/').next().unwrap();
                Postgres::shared().psql(database, statement);
            }
        }
    }
}

async fn queue(backend: Backend) -> (Queue, Place) {
    let place = Place::new(backend);
    (place.open(Retries::default()).await.unwrap(), place)
}

/// Each test runs on both databases.
macro_rules! on_both {
    ($($test:ident),* $(,)?) => {
        $(
            mod $test {
                #[tokio::test]
                async fn sqlite() {
                    super::$test(super::Backend::Sqlite).await;
                }

                #[tokio::test]
                async fn postgres() {
                    super::$test(super::Backend::Postgres).await;
                }
            }
        )*
    };
}

on_both!(
    a_redelivery_changes_nothing,
    one_job_per_conversation_runs_at_a_time_in_order,
    a_newer_push_supersedes_a_waiting_review_not_a_running_one,
    a_lease_that_ran_out_is_taken_over_and_its_holder_fenced,
    transient_failures_retry_with_backoff_until_dead,
    the_queue_survives_a_reopen_and_refuses_a_newer_schema,
    deliveries_arriving_together_are_written_together_each_exactly_once,
    claims_keep_within_the_limits_global_and_per_installation,
    a_job_handed_back_runs_again_its_attempt_not_counted,
    claims_take_the_highest_priority_first_then_the_oldest,
    workers_claim_while_deliveries_arrive_each_job_once_one_per_conversation,
);

fn review(pr: u64, head: &str) -> NewJob {
    NewJob {
        kind: JobKind::Review,
        conversation: format!("github:acme/widgets#{pr}"),
        installation: Some(42),
        head: Some(head.to_owned()),
        payload: format!("{{\"pr\":{pr},\"head\":\"{head}\"}}"),
        priority: 0,
    }
}

fn comment(pr: u64) -> NewJob {
    NewJob {
        kind: JobKind::Comment,
        ..review(pr, "h")
    }
}

fn queued(enqueued: Enqueued) -> String {
    match enqueued {
        Enqueued::Queued { job, .. } => job,
        other => panic!("not queued: {other:?}"),
    }
}

async fn a_redelivery_changes_nothing(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    let first = queue
        .enqueue("d-1", "pull_request", Some(review(7, "a")), 1_000)
        .await
        .unwrap();
    let job = queued(first);
    let again = queue
        .enqueue("d-1", "pull_request", Some(review(7, "a")), 2_000)
        .await
        .unwrap();
    assert_eq!(again, Enqueued::Redelivered { job: Some(job) });
    assert_eq!(
        queue.enqueue("d-2", "ping", None, 2_000).await.unwrap(),
        Enqueued::Recorded
    );
    assert_eq!(
        queue.enqueue("d-2", "ping", None, 3_000).await.unwrap(),
        Enqueued::Redelivered { job: None }
    );
    assert_eq!(queue.jobs().await.unwrap().len(), 1);
}

async fn one_job_per_conversation_runs_at_a_time_in_order(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    let a = queued(
        queue
            .enqueue("d-1", "issue_comment", Some(comment(7)), 1)
            .await
            .unwrap(),
    );
    let b = queued(
        queue
            .enqueue("d-2", "issue_comment", Some(comment(7)), 2)
            .await
            .unwrap(),
    );
    let c = queued(
        queue
            .enqueue("d-3", "issue_comment", Some(comment(8)), 3)
            .await
            .unwrap(),
    );
    let first = queue.claim("w1", LEASE, 10).await.unwrap().unwrap();
    assert_eq!(first.job.id, a);
    // #7 is busy: the next worker gets #8, then nothing.
    let second = queue.claim("w2", LEASE, 11).await.unwrap().unwrap();
    assert_eq!(second.job.id, c);
    assert!(queue.claim("w3", LEASE, 12).await.unwrap().is_none());
    assert!(queue.complete(&first, 20).await.unwrap());
    let third = queue.claim("w1", LEASE, 21).await.unwrap().unwrap();
    assert_eq!(third.job.id, b);
}

async fn a_newer_push_supersedes_a_waiting_review_not_a_running_one(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    let running = queued(
        queue
            .enqueue("d-1", "pull_request", Some(review(7, "a")), 1)
            .await
            .unwrap(),
    );
    let lease = queue.claim("w1", LEASE, 2).await.unwrap().unwrap();
    assert_eq!(lease.job.id, running);
    let waiting = queued(
        queue
            .enqueue("d-2", "pull_request", Some(review(7, "b")), 3)
            .await
            .unwrap(),
    );
    let newest = queue
        .enqueue("d-3", "pull_request", Some(review(7, "c")), 4)
        .await
        .unwrap();
    assert_eq!(
        newest,
        Enqueued::Queued {
            job: "d-3".to_owned(),
            superseded: vec![waiting.clone()]
        }
    );
    assert_eq!(
        queue.job(&waiting).await.unwrap().unwrap().state,
        JobState::Superseded
    );
    assert_eq!(
        queue.job(&running).await.unwrap().unwrap().state,
        JobState::Running
    );
    // A comment is never superseded by a push.
    queued(
        queue
            .enqueue("d-4", "issue_comment", Some(comment(7)), 5)
            .await
            .unwrap(),
    );
    queued(
        queue
            .enqueue("d-5", "pull_request", Some(review(7, "d")), 6)
            .await
            .unwrap(),
    );
    assert_eq!(
        queue.job("d-4").await.unwrap().unwrap().state,
        JobState::Queued
    );
}

async fn a_lease_that_ran_out_is_taken_over_and_its_holder_fenced(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    queued(
        queue
            .enqueue("d-1", "pull_request", Some(review(7, "a")), 0)
            .await
            .unwrap(),
    );
    let dead = queue.claim("w1", LEASE, 1_000).await.unwrap().unwrap();
    assert!(queue.holds(&dead, 30_000).await.unwrap());
    assert!(queue.heartbeat(&dead, LEASE, 30_000).await.unwrap());
    // w1 stops renewing; its lease runs out at 90 s and w2 takes the job over.
    assert!(queue.claim("w2", LEASE, 89_999).await.unwrap().is_none());
    let taken = queue.claim("w2", LEASE, 90_000).await.unwrap().unwrap();
    assert_eq!(
        (taken.job.id.as_str(), taken.epoch, taken.job.attempts),
        ("d-1", 2, 2)
    );
    // w1 wakes up: it holds nothing, can renew nothing, complete nothing.
    assert!(!queue.holds(&dead, 90_001).await.unwrap());
    assert!(!queue.heartbeat(&dead, LEASE, 90_001).await.unwrap());
    assert!(!queue.complete(&dead, 90_002).await.unwrap());
    assert_eq!(
        queue
            .fail(&dead, "late", Failure::Transient, 90_003)
            .await
            .unwrap(),
        None
    );
    assert!(queue.complete(&taken, 100_000).await.unwrap());
    assert_eq!(
        queue.job("d-1").await.unwrap().unwrap().state,
        JobState::Done
    );
}

async fn transient_failures_retry_with_backoff_until_dead(backend: Backend) {
    let place = Place::new(backend);
    let retries = Retries {
        max_attempts: 3,
        backoff: Duration::from_secs(10),
        max_backoff: Duration::from_secs(15),
    };
    let queue = place.open(retries).await.unwrap();
    queued(
        queue
            .enqueue("d-1", "pull_request", Some(review(7, "a")), 0)
            .await
            .unwrap(),
    );
    let mut now = 0;
    let mut waits = Vec::new();
    for attempt in 1..=3 {
        let lease = queue.claim("w", LEASE, now).await.unwrap().unwrap();
        assert_eq!(lease.job.attempts, attempt);
        let state = queue
            .fail(&lease, "GitHub unreachable", Failure::Transient, now)
            .await
            .unwrap();
        let job = queue.job("d-1").await.unwrap().unwrap();
        assert_eq!(job.error.as_deref(), Some("GitHub unreachable"));
        if attempt < 3 {
            assert_eq!(state, Some(JobState::Queued));
            waits.push(job.run_after - now);
            // Not before its time.
            assert!(
                queue
                    .claim("w", LEASE, job.run_after - 1)
                    .await
                    .unwrap()
                    .is_none()
            );
            now = job.run_after;
        } else {
            assert_eq!(state, Some(JobState::Dead));
        }
    }
    assert_eq!(waits, [10_000, 15_000]);
    // Queued again by hand, it runs again.
    let retried = queue.retry("d-1", now + 1).await.unwrap();
    assert_eq!((retried.state, retried.attempts), (JobState::Queued, 0));
    let lease = queue.claim("w", LEASE, now + 2).await.unwrap().unwrap();
    assert_eq!(
        queue
            .fail(&lease, "bad payload", Failure::Permanent, now + 3)
            .await
            .unwrap(),
        Some(JobState::Dead)
    );
    assert!(queue.retry("nope", now).await.is_err());
}

async fn the_queue_survives_a_reopen_and_refuses_a_newer_schema(backend: Backend) {
    let place = Place::new(backend);
    {
        let queue = place.open(Retries::default()).await.unwrap();
        queued(
            queue
                .enqueue("d-1", "pull_request", Some(review(7, "a")), 0)
                .await
                .unwrap(),
        );
    }
    let queue = place.open(Retries::default()).await.unwrap();
    assert_eq!(queue.jobs().await.unwrap().len(), 1);
    drop(queue);
    place
        .execute("INSERT INTO queue_schema (version) VALUES (99)")
        .await;
    let error = place.open(Retries::default()).await.unwrap_err();
    assert!(error.to_string().contains("newer bugloop"), "{error}");
}

/// Enqueues delivery `d-{n}` (a comment in one of `conversations` conversations) in a task of its
/// own, as deliveries arriving together are.
fn deliver_at_once(queue: &Queue, n: u64, conversations: u64) -> tokio::task::JoinHandle<Enqueued> {
    let queue = queue.clone();
    tokio::spawn(async move {
        queue
            .enqueue(
                &format!("d-{n}"),
                "issue_comment",
                Some(comment(n % conversations)),
                1,
            )
            .await
            .unwrap()
    })
}

async fn deliveries_arriving_together_are_written_together_each_exactly_once(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    let mut sent = Vec::new();
    // 300 deliveries at once, every tenth sent twice: the duplicates meet in the same batch.
    for n in 0..300_u64 {
        for _ in 0..if n % 10 == 0 { 2 } else { 1 } {
            sent.push(deliver_at_once(&queue, n, 7));
        }
    }
    let mut queued = 0;
    let mut redelivered = 0;
    for answer in sent {
        match answer.await.unwrap() {
            Enqueued::Queued { .. } => queued += 1,
            Enqueued::Redelivered { job: Some(_) } => redelivered += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((queued, redelivered), (300, 30));
    assert_eq!(queue.jobs().await.unwrap().len(), 300);
}

/// What claimers saw: the conversations with a job running now, and how often each job ran.
#[derive(Clone, Default)]
struct Claimed {
    running: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    runs: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl Claimed {
    /// A worker named `name`: claims, renews, runs a moment and completes jobs on `queue`
    /// while `arriving` holds and until 20 claims in a row found nothing; two jobs of one
    /// conversation running at once fail the test.
    fn claimer(
        &self,
        queue: Queue,
        name: String,
        arriving: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> tokio::task::JoinHandle<()> {
        let claimed = self.clone();
        tokio::spawn(async move {
            let mut idle = 0;
            while arriving.load(std::sync::atomic::Ordering::SeqCst) || idle < 20 {
                let Some(lease) = queue.claim(&name, LEASE, 10).await.unwrap() else {
                    idle += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                idle = 0;
                let conversation = lease.job.conversation.clone();
                assert!(
                    claimed.running.lock().unwrap().insert(conversation.clone()),
                    "two jobs of {conversation} ran at once"
                );
                assert!(queue.heartbeat(&lease, LEASE, 10).await.unwrap());
                tokio::time::sleep(Duration::from_millis(2)).await;
                claimed.running.lock().unwrap().remove(&conversation);
                *claimed
                    .runs
                    .lock()
                    .unwrap()
                    .entry(lease.job.id.clone())
                    .or_default() += 1;
                assert!(queue.complete(&lease, 11).await.unwrap());
            }
        })
    }

    /// Every one of the `jobs` queued ran exactly once and is done.
    async fn each_ran_once(&self, jobs: usize, queue: &Queue) {
        let runs = self.runs.lock().unwrap().clone();
        assert_eq!(runs.len(), jobs);
        assert!(runs.values().all(|&runs| runs == 1));
        assert!(
            queue
                .jobs()
                .await
                .unwrap()
                .iter()
                .all(|job| job.state == JobState::Done)
        );
    }
}

/// Deliveries keep arriving through intake's writer while four workers claim and settle jobs
/// through the workers' handle (on SQLite a connection of its own, writing between intake's
/// batches): every delivery is answered without error, every job runs exactly once, never two
/// of one conversation at a time.
async fn workers_claim_while_deliveries_arrive_each_job_once_one_per_conversation(
    backend: Backend,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let (queue, _place) = queue(backend).await;
    let arriving = Arc::new(AtomicBool::new(true));
    let claimed = Claimed::default();
    let workers: Vec<_> = (0..4)
        .map(|n| claimed.claimer(queue.for_workers(), format!("w{n}"), arriving.clone()))
        .collect();
    let mut sent = Vec::new();
    for n in 0..400_u64 {
        sent.push(deliver_at_once(&queue, n, 13));
        if n % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    for answer in sent {
        queued(answer.await.unwrap());
    }
    arriving.store(false, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    claimed.each_ran_once(400, &queue).await;
}

/// Four queues on one PostgreSQL database (as four server processes would have) claim 200 jobs
/// over 20 conversations at once: every job runs exactly once, and never two of one
/// conversation at the same time.
#[tokio::test]
async fn claimers_on_one_postgres_database_share_the_work_and_take_turns_per_conversation() {
    let url = Postgres::shared().database();
    let first = Queue::open_postgres(&url, Retries::default(), 4)
        .await
        .unwrap();
    for n in 0..200_u64 {
        queued(
            first
                .enqueue(&format!("d-{n}"), "issue_comment", Some(comment(n % 20)), 1)
                .await
                .unwrap(),
        );
    }
    let claimed = Claimed::default();
    let all_queued = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut claimers = Vec::new();
    for worker in 0..4 {
        let queue = Queue::open_postgres(&url, Retries::default(), 4)
            .await
            .unwrap();
        claimers.push(claimed.claimer(queue, format!("w{worker}"), all_queued.clone()));
    }
    for claimer in claimers {
        claimer.await.unwrap();
    }
    claimed.each_ran_once(200, &first).await;
}

async fn claims_keep_within_the_limits_global_and_per_installation(backend: Backend) {
    let place = Place::new(backend);
    let queue = place
        .open(Retries::default())
        .await
        .unwrap()
        .with_limits(Limits {
            running: Some(3),
            per_installation: Some(2),
        });
    // Installation 1 has four conversations waiting, 2 and 3 one each.
    for (n, installation) in [1, 1, 1, 1, 2, 3].into_iter().enumerate() {
        let job = NewJob {
            installation: Some(installation),
            ..comment(u64::try_from(n).unwrap())
        };
        queued(
            queue
                .enqueue(&format!("d-{n}"), "issue_comment", Some(job), 1)
                .await
                .unwrap(),
        );
    }
    let mut held = Vec::new();
    while let Some(lease) = queue.claim("w", LEASE, 10).await.unwrap() {
        held.push(lease);
    }
    let installations: Vec<_> = held.iter().map(|l| l.job.installation.unwrap()).collect();
    // Two of installation 1 (its limit), then 2: three in all (the global limit).
    assert_eq!(installations, [1, 1, 2]);
    assert!(queue.complete(&held[0], 20).await.unwrap());
    // A place is free, but not for installation 1 beyond its limit... which now has one running.
    let next = queue.claim("w", LEASE, 21).await.unwrap().unwrap();
    assert_eq!(next.job.installation, Some(1));
    assert!(queue.claim("w", LEASE, 22).await.unwrap().is_none());
    // A lease that ran out does not count: its job is taken over within the limits.
    let later = 10 + 60_000;
    let taken = queue.claim("w2", LEASE, later).await.unwrap().unwrap();
    assert_eq!(taken.job.id, held[1].job.id);
    let done = queue.job(&held[0].job.id).await.unwrap().unwrap();
    assert_eq!((done.started_at, done.finished_at), (Some(10), Some(20)));
}

async fn a_job_handed_back_runs_again_its_attempt_not_counted(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    queued(
        queue
            .enqueue("d-1", "issue_comment", Some(comment(7)), 1)
            .await
            .unwrap(),
    );
    let lease = queue.claim("w1", LEASE, 10).await.unwrap().unwrap();
    assert!(queue.release(&lease, 11).await.unwrap());
    assert!(!queue.holds(&lease, 12).await.unwrap());
    let again = queue.claim("w2", LEASE, 12).await.unwrap().unwrap();
    assert_eq!((again.job.attempts, again.epoch), (1, 2));
    // The first holder can no longer hand it back or end it.
    assert!(!queue.release(&lease, 13).await.unwrap());
    assert!(!queue.complete(&lease, 13).await.unwrap());
}

async fn claims_take_the_highest_priority_first_then_the_oldest(backend: Backend) {
    let (queue, _place) = queue(backend).await;
    // Solving issues of ranks 1, 3, 3 and 2, and a comment someone waits on, queued last.
    let mut ids = Vec::new();
    for (n, priority) in [1, 3, 3, 2, 10].into_iter().enumerate() {
        let job = NewJob {
            priority,
            ..comment(u64::try_from(n).unwrap())
        };
        let at = i64::try_from(n).unwrap();
        ids.push(queued(
            queue
                .enqueue(&format!("d-{n}"), "issues", Some(job), at)
                .await
                .unwrap(),
        ));
    }
    let mut claimed = Vec::new();
    while let Some(lease) = queue.claim("w", LEASE, 100).await.unwrap() {
        claimed.push(lease.job.id.clone());
        assert!(queue.complete(&lease, 101).await.unwrap());
    }
    let order: Vec<&str> = [4, 1, 2, 3, 0].iter().map(|&i| ids[i].as_str()).collect();
    assert_eq!(claimed, order);
    // Priority ages: a low job that waited long enough goes before a fresh higher one.
    let waited = queued(
        queue
            .enqueue(
                "d-old",
                "issues",
                Some(NewJob {
                    priority: 1,
                    ..comment(20)
                }),
                1_000,
            )
            .await
            .unwrap(),
    );
    let steps = 10 - 1;
    let fresh = queued(
        queue
            .enqueue(
                "d-new",
                "pull_request",
                Some(NewJob {
                    priority: 10,
                    ..comment(21)
                }),
                1_000 + steps * database::AGING_MS + 1,
            )
            .await
            .unwrap(),
    );
    let now = 1_000 + steps * database::AGING_MS + 10;
    let first = queue.claim("w", LEASE, now).await.unwrap().unwrap();
    let second = queue.claim("w", LEASE, now).await.unwrap().unwrap();
    assert_eq!((first.job.id, second.job.id), (waited, fresh));
}
