//! A batch of deliveries written to SQLite in a handful of statements, whatever its size: its
//! new deliveries in one insert, the waiting reviews they supersede in one update, their jobs in
//! one insert. Every statement sqlx runs on SQLite is a round trip to the connection's own
//! thread; written one delivery at a time (three statements each) those round trips were most
//! of what intake cost under load. The answers are the ones the deliveries would get written one
//! after the other in arrival order (the queue's tests hold both ways to it): a delivery id seen
//! twice is a redelivery the second time, and of two reviews of one conversation in a batch the
//! later supersedes the earlier, which is written superseded.

use std::collections::{HashMap, HashSet};

use sqlx::{AnyConnection, Row};

use crate::{EnqueueRequest, Enqueued, JobKind, QueueError, query_error};

/// At most this many rows per statement (SQLite allows 32,766 bound values; a job row binds 12,
/// a superseding conversation 5).
const ROWS_PER_STATEMENT: usize = 500;

/// What the batch's requests come to, in their order; an error leaves the transaction to be
/// rolled back (the caller then writes each delivery alone).
pub(crate) async fn enqueue_batch(
    tx: &mut AnyConnection,
    batch: &[EnqueueRequest],
) -> Result<Vec<Enqueued>, QueueError> {
    // The first request of each delivery id; a later one is a redelivery of it.
    let mut first_of: HashMap<&str, usize> = HashMap::new();
    let leaders: Vec<usize> = (0..batch.len())
        .filter(|&i| first_of.entry(batch[i].delivery.as_str()).or_insert(i) == &i)
        .collect();
    let new = record_deliveries(tx, batch, &leaders).await?;
    let seen_before: Vec<&str> = leaders
        .iter()
        .map(|&i| batch[i].delivery.as_str())
        .filter(|id| !new.contains(*id))
        .collect();
    let earlier_jobs = recorded_jobs(tx, &seen_before).await?;

    // The new reviews of each conversation in arrival order: each supersedes the one before it
    // in the batch, the first the conversation's reviews already waiting.
    let fresh: Vec<usize> = leaders
        .iter()
        .copied()
        .filter(|&i| new.contains(batch[i].delivery.as_str()))
        .collect();
    let mut reviews: HashMap<&str, Vec<usize>> = HashMap::new();
    for &i in &fresh {
        if let Some(job) = batch[i].job.as_ref().filter(|j| j.kind == JobKind::Review) {
            reviews
                .entry(job.conversation.as_str())
                .or_default()
                .push(i);
        }
    }
    let mut superseded_by: HashMap<usize, Vec<String>> = HashMap::new();
    // A review of the batch and the request (a later review) that supersedes it.
    let mut overtaken: HashMap<usize, usize> = HashMap::new();
    for requests in reviews.values() {
        for pair in requests.windows(2) {
            overtaken.insert(pair[0], pair[1]);
            superseded_by.insert(pair[1], vec![batch[pair[0]].delivery.clone()]);
        }
    }
    let firsts: Vec<(&str, usize)> = reviews.iter().map(|(c, r)| (*c, r[0])).collect();
    for (conversation, ids) in supersede_waiting(tx, batch, &firsts).await? {
        if let Some(&(_, first)) = firsts.iter().find(|(c, _)| *c == conversation) {
            superseded_by.entry(first).or_default().extend(ids);
        }
    }
    insert_jobs(tx, batch, &fresh, &overtaken).await?;

    Ok((0..batch.len())
        .map(|i| {
            let request = &batch[i];
            let leader = first_of
                .get(request.delivery.as_str())
                .copied()
                .unwrap_or(i);
            if leader != i || !new.contains(request.delivery.as_str()) {
                let job = if new.contains(request.delivery.as_str()) {
                    batch[leader].job.as_ref().map(|_| request.delivery.clone())
                } else {
                    earlier_jobs
                        .get(request.delivery.as_str())
                        .cloned()
                        .flatten()
                };
                return Enqueued::Redelivered { job };
            }
            match &request.job {
                None => Enqueued::Recorded,
                Some(_) => Enqueued::Queued {
                    job: request.delivery.clone(),
                    superseded: superseded_by.remove(&i).unwrap_or_default(),
                },
            }
        })
        .collect())
}

/// Inserts the deliveries of `leaders` that are new; their ids.
async fn record_deliveries(
    tx: &mut AnyConnection,
    batch: &[EnqueueRequest],
    leaders: &[usize],
) -> Result<HashSet<String>, QueueError> {
    let mut new = HashSet::new();
    for chunk in leaders.chunks(ROWS_PER_STATEMENT) {
        let text = format!(
            "INSERT INTO deliveries (id, event, received_at, job_id) VALUES {} \
             ON CONFLICT (id) DO NOTHING RETURNING id",
            rows(chunk.len(), 4)
        );
        let mut query = sqlx::query(&text);
        for &i in chunk {
            let request = &batch[i];
            query = query
                .bind(request.delivery.as_str())
                .bind(request.event.as_str())
                .bind(request.now)
                .bind(request.job.as_ref().map(|_| request.delivery.as_str()));
        }
        for row in query
            .fetch_all(&mut *tx)
            .await
            .map_err(query_error("record the deliveries"))?
        {
            new.insert(
                row.try_get::<String, _>(0)
                    .map_err(query_error("record the deliveries"))?,
            );
        }
    }
    Ok(new)
}

/// The job each delivery of `ids` (recorded before) made, if any.
async fn recorded_jobs(
    tx: &mut AnyConnection,
    ids: &[&str],
) -> Result<HashMap<String, Option<String>>, QueueError> {
    let mut jobs = HashMap::new();
    for chunk in ids.chunks(ROWS_PER_STATEMENT) {
        let text = format!(
            "SELECT id, job_id FROM deliveries WHERE id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let mut query = sqlx::query(&text);
        for id in chunk {
            query = query.bind(*id);
        }
        for row in query
            .fetch_all(&mut *tx)
            .await
            .map_err(query_error("read the deliveries"))?
        {
            let id: String = row.try_get(0).map_err(query_error("read the deliveries"))?;
            let job: Option<String> = row.try_get(1).map_err(query_error("read the deliveries"))?;
            jobs.insert(id, job);
        }
    }
    Ok(jobs)
}

/// Supersedes the reviews already waiting in the conversations of `firsts` (each with the
/// batch's first new review of it, whose time they end at); the ids, by conversation.
async fn supersede_waiting(
    tx: &mut AnyConnection,
    batch: &[EnqueueRequest],
    firsts: &[(&str, usize)],
) -> Result<Vec<(String, Vec<String>)>, QueueError> {
    let mut ended: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in firsts.chunks(ROWS_PER_STATEMENT) {
        // Each conversation's reviews end at the time of the delivery that superseded them.
        // Looked up through the conversation's index (`IN`); a join with a `VALUES` list scanned
        // every job.
        let text = format!(
            "UPDATE jobs SET state = 'superseded', updated_at = CASE conversation {cases} END, \
             finished_at = CASE conversation {cases} END \
             WHERE conversation IN ({list}) AND kind = 'review' AND state = 'queued' \
             RETURNING id, conversation",
            cases = vec!["WHEN ? THEN ?"; chunk.len()].join(" "),
            list = vec!["?"; chunk.len()].join(", "),
        );
        let mut query = sqlx::query(&text);
        for _ in 0..2 {
            for &(conversation, i) in chunk {
                query = query.bind(conversation).bind(batch[i].now);
            }
        }
        for &(conversation, _) in chunk {
            query = query.bind(conversation);
        }
        for row in query
            .fetch_all(&mut *tx)
            .await
            .map_err(query_error("supersede waiting reviews"))?
        {
            let id: String = row
                .try_get(0)
                .map_err(query_error("supersede waiting reviews"))?;
            let conversation: String = row
                .try_get(1)
                .map_err(query_error("supersede waiting reviews"))?;
            ended.entry(conversation).or_default().push(id);
        }
    }
    Ok(ended.into_iter().collect())
}

/// Inserts the jobs of the new deliveries `fresh`; a review `overtaken` by a later one of the
/// batch is written superseded at that one's time.
async fn insert_jobs(
    tx: &mut AnyConnection,
    batch: &[EnqueueRequest],
    fresh: &[usize],
    overtaken: &HashMap<usize, usize>,
) -> Result<(), QueueError> {
    let with_jobs: Vec<usize> = fresh
        .iter()
        .copied()
        .filter(|&i| batch[i].job.is_some())
        .collect();
    for chunk in with_jobs.chunks(ROWS_PER_STATEMENT) {
        let text = format!(
            "INSERT INTO jobs (id, kind, conversation, installation, head, payload, state, \
             attempts, run_after, epoch, created_at, updated_at, priority, finished_at) VALUES {}",
            vec!["(?, ?, ?, ?, ?, ?, ?, 0, ?, 0, ?, ?, ?, ?)"; chunk.len()].join(", ")
        );
        let mut query = sqlx::query(&text);
        for &i in chunk {
            let request = &batch[i];
            let Some(job) = &request.job else { continue };
            let ended = overtaken.get(&i).map(|&later| batch[later].now);
            query = query
                .bind(request.delivery.as_str())
                .bind(crate::stored_kind(job.kind))
                .bind(job.conversation.as_str())
                .bind(job.installation)
                .bind(job.head.as_deref())
                .bind(job.payload.as_str())
                .bind(if ended.is_some() {
                    "superseded"
                } else {
                    "queued"
                })
                .bind(request.now)
                .bind(request.now)
                .bind(ended.unwrap_or(request.now))
                .bind(job.priority)
                .bind(ended);
        }
        query
            .execute(&mut *tx)
            .await
            .map_err(query_error("queue the jobs"))?;
    }
    Ok(())
}

/// `count` rows of `width` placeholders: `(?, ?), (?, ?)`.
fn rows(count: usize, width: usize) -> String {
    let row = format!("({})", vec!["?"; width].join(", "));
    vec![row; count].join(", ")
}
