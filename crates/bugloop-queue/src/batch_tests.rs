//! SQLite intake's batch against the same deliveries written one by one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;

use sqlx::Row;

use crate::database::enqueue_in;
use crate::sqlite_batch::enqueue_batch;
use crate::{EnqueueRequest, Enqueued, JobKind, NewJob, Queue, Retries};

/// One delivery: its id's number, its job's kind (none: a delivery that asks for none) and
/// conversation.
type Delivery = (u8, Option<JobKind>, u8);

fn request(n: usize, (id, kind, conversation): &Delivery) -> EnqueueRequest {
    let (reply, _) = tokio::sync::oneshot::channel();
    EnqueueRequest {
        delivery: format!("d{id}"),
        event: "pull_request".to_owned(),
        job: kind.map(|kind| NewJob {
            kind,
            conversation: format!("github:acme/widgets#{conversation}"),
            installation: Some(42),
            head: Some(format!("{n:040x}")),
            payload: format!("{{\"n\":{n}}}"),
            priority: i64::from(*conversation),
        }),
        now: 1_000 + i64::try_from(n).unwrap(),
        reply,
    }
}

async fn one_by_one(queue: &Queue, requests: &[EnqueueRequest]) -> Vec<Enqueued> {
    let mut answers = Vec::new();
    for r in requests {
        let mut tx = queue.pool().begin().await.unwrap();
        let answer = enqueue_in(
            &mut tx,
            crate::Backend::Sqlite,
            &r.delivery,
            &r.event,
            r.job.clone(),
            r.now,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        answers.push(answer);
    }
    answers
}

async fn tables(queue: &Queue) -> Vec<String> {
    let mut rows = Vec::new();
    for text in [
        "SELECT id || ' ' || event || ' ' || received_at || ' ' || COALESCE(job_id, '-') \
         FROM deliveries ORDER BY id",
        "SELECT id || ' ' || kind || ' ' || conversation || ' ' || installation || ' ' || \
         head || ' ' || payload || ' ' || state || ' ' || attempts || ' ' || run_after || \
         ' ' || epoch || ' ' || created_at || ' ' || updated_at || ' ' || priority || ' ' || \
         COALESCE(finished_at, '-') || ' ' || COALESCE(started_at, '-') FROM jobs ORDER BY id",
    ] {
        for row in sqlx::query(text).fetch_all(queue.pool()).await.unwrap() {
            rows.push(row.try_get::<String, _>(0).unwrap());
        }
    }
    rows
}

fn sorted(answers: Vec<Enqueued>) -> Vec<Enqueued> {
    answers
        .into_iter()
        .map(|answer| match answer {
            Enqueued::Queued {
                job,
                mut superseded,
            } => {
                superseded.sort();
                Enqueued::Queued { job, superseded }
            }
            other => other,
        })
        .collect()
}

fn delivery() -> impl Strategy<Value = Delivery> {
    (
        0u8..24,
        prop_oneof![
            3 => Just(Some(JobKind::Review)),
            1 => Just(Some(JobKind::Comment)),
            1 => Just(None),
        ],
        0u8..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A batch written at once leaves the tables as the same deliveries written one after
    /// the other do, and answers each the same (after deliveries written before it):
    /// redeliveries inside the batch and of earlier ones, reviews superseding waiting ones
    /// and each other, deliveries that ask for no job.
    #[test]
    fn a_batch_written_at_once_is_the_deliveries_written_one_by_one(
        before in proptest::collection::vec(delivery(), 0..12),
        batch in proptest::collection::vec(delivery(), 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let at_once = Queue::open_sqlite(&dir.path().join("a.db"), Retries::default()).await.unwrap();
            let alone = Queue::open_sqlite(&dir.path().join("b.db"), Retries::default()).await.unwrap();
            let earlier: Vec<_> = before.iter().enumerate().map(|(n, d)| request(n, d)).collect();
            one_by_one(&at_once, &earlier).await;
            one_by_one(&alone, &earlier).await;
            let requests: Vec<_> = batch.iter().enumerate().map(|(n, d)| request(100 + n, d)).collect();
            let mut tx = at_once.pool().begin().await.unwrap();
            let batched = enqueue_batch(&mut tx, &requests).await.unwrap();
            tx.commit().await.unwrap();
            let expected = one_by_one(&alone, &requests).await;
            prop_assert_eq!(sorted(batched), sorted(expected));
            prop_assert_eq!(tables(&at_once).await, tables(&alone).await);
            Ok(())
        })?;
    }
}
