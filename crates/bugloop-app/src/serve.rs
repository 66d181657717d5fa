//! The GitHub App server's front door: `POST /webhook` checks the delivery's signature on the raw
//! body before anything else (401 otherwise, nothing stored), decides from the event whether it
//! asks for a job (bots and bugloop's own login dropped, comments without a mention dropped,
//! events no loop handles answered 204), and records the delivery with its job in one
//! transaction of the durable queue, answering 202; a redelivery is a no-op. `GET /healthz`
//! says the process runs, `GET /readyz` that the queue answers. The workers that run the queued
//! jobs come with the rest of the server (issue 15).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use bugloop_queue::{Enqueued, JobKind, NewJob, SqliteQueue};
use bugloop_webhooks::{Skip, Trigger, TriggerSettings};

/// GitHub caps a webhook payload at 25 MB.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// What the endpoint needs.
#[derive(Clone)]
pub struct WebhookState {
    pub secret: Arc<Vec<u8>>,
    pub queue: SqliteQueue,
    pub settings: Arc<TriggerSettings>,
}

impl std::fmt::Debug for WebhookState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookState")
            .field("queue", &self.queue)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The server's routes.
pub fn router(state: WebhookState) -> axum::Router {
    axum::Router::new()
        .route("/webhook", post(webhook))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

async fn ready(State(state): State<WebhookState>) -> (StatusCode, &'static str) {
    match tokio::time::timeout(Duration::from_secs(2), state.queue.job("readyz")).await {
        Ok(Ok(_)) => (StatusCode::OK, "ready\n"),
        _ => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the job queue does not answer\n",
        ),
    }
}

fn kind_of(trigger: &Trigger) -> JobKind {
    match trigger {
        Trigger::Review { .. } => JobKind::Review,
        Trigger::Comment { .. } => JobKind::Comment,
        Trigger::Converge { .. } => JobKind::Converge,
        Trigger::Autofix { .. } => JobKind::Autofix,
    }
}

async fn webhook(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // Nothing is read from a body whose signature does not verify.
    let signed = header("x-hub-signature-256")
        .is_some_and(|sig| bugloop_webhooks::signature_is_valid(&state.secret, &body, sig));
    if !signed {
        return (
            StatusCode::UNAUTHORIZED,
            "the X-Hub-Signature-256 header is missing or does not match the body\n".to_owned(),
        );
    }
    let (Some(event), Some(delivery)) = (header("x-github-event"), header("x-github-delivery"))
    else {
        return (
            StatusCode::BAD_REQUEST,
            "X-GitHub-Event and X-GitHub-Delivery are required\n".to_owned(),
        );
    };
    let parsed = match bugloop_webhooks::parse(event, &body) {
        Ok(parsed) => parsed,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("{error}\n")),
    };
    let job = match bugloop_webhooks::trigger(&parsed, &state.settings) {
        Ok(trigger) => {
            let payload = match serde_json::to_string(&trigger) {
                Ok(payload) => payload,
                Err(error) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")),
            };
            Some(NewJob {
                kind: kind_of(&trigger),
                conversation: trigger.conversation(),
                installation: trigger.installation().and_then(|i| i64::try_from(i).ok()),
                head: trigger.head().map(str::to_owned),
                payload,
            })
        }
        Err(Skip::Unhandled(name)) => {
            return (
                StatusCode::NO_CONTENT,
                format!("bugloop does not handle {name} events\n"),
            );
        }
        Err(_) => None,
    };
    match state.queue.enqueue(delivery, event, job, now_ms()).await {
        Ok(Enqueued::Queued { job, .. }) => (StatusCode::ACCEPTED, format!("queued {job}\n")),
        Ok(Enqueued::Recorded) => (StatusCode::NO_CONTENT, String::new()),
        Ok(Enqueued::Redelivered { .. }) => (
            StatusCode::ACCEPTED,
            format!("delivery {delivery} was received before\n"),
        ),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")),
    }
}
