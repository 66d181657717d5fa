//! Sentry's webhook: `POST /sentry`, where a Sentry internal integration sends its issue alerts
//! (`Sentry-Hook-Resource: event_alert`, or `error`). The body must carry
//! `Sentry-Hook-Signature`, the HMAC-SHA256 of the raw body under the integration's client
//! secret (checked in constant time before anything is read: a forged delivery is a 401 and
//! files nothing). The event's project names the repository (`sentry_projects`: a project's slug
//! or id to `owner/name`); its exception and stack frames become a report, queued as
//! `POST /report` queues one, so a Sentry alert and the same trace reported by hand are one
//! issue. One event (its signed `event_id`) is queued once, however often it is delivered. An
//! unsigned delivery, or one whose length is not declared or too large, is refused before its
//! body is read, and bodies share the server's byte budget with GitHub's deliveries.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bugloop_queue::Queue;
use secrecy::{ExposeSecret, SecretString};

/// The integration's client secret and where each Sentry project's errors are filed.
#[derive(Debug, Clone)]
pub struct SentryAccess {
    pub client_secret: SecretString,
    /// A project's slug or numeric id -> `owner/name`.
    pub projects: BTreeMap<String, String>,
}

#[derive(Clone)]
pub struct SentryState {
    pub queue: Queue,
    /// `None`: the endpoint is off.
    pub access: Option<Arc<SentryAccess>>,
    pub body_timeout: std::time::Duration,
    /// The byte budget of the bodies the server reads at once (shared with `/webhook`).
    pub bodies: Arc<tokio::sync::Semaphore>,
}

impl std::fmt::Debug for SentryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentryState")
            .field("on", &self.access.is_some())
            .finish_non_exhaustive()
    }
}

/// The most of a Sentry delivery that is read (an event with its frames and contexts).
pub const MAX_SENTRY_BYTES: usize = 1024 * 1024;

pub fn router(state: SentryState) -> axum::Router {
    axum::Router::new()
        .route("/sentry", post(sentry))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_SENTRY_BYTES))
        .with_state(state)
}

type Answer = (StatusCode, String);

fn unsigned() -> Answer {
    (
        StatusCode::UNAUTHORIZED,
        "Sentry-Hook-Signature is missing or is not the HMAC-SHA256 of the body under the \
         integration's client secret\n"
            .to_owned(),
    )
}

/// Whether `signature` (hex) is the HMAC-SHA256 of `body` under `secret`, in constant time.
pub fn signature_is_valid(secret: &[u8], body: &[u8], signature: &str) -> bool {
    let Ok(tag) = hex::decode(signature.trim()) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    ring::hmac::verify(&key, body, &tag).is_ok()
}

/// The `Sentry-Hook-Signature` Sentry sends with `body` (for tests that play Sentry).
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    hex::encode(ring::hmac::sign(&key, body).as_ref())
}

async fn sentry(
    State(state): State<SentryState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let Some(access) = state.access.clone() else {
        return (
            StatusCode::NOT_FOUND,
            "Sentry's webhook is off on this server: set sentry_client_secret \
             (BUGLOOP_SENTRY_CLIENT_SECRET) and sentry_projects\n"
                .to_owned(),
        );
    };
    let body = match receive(&state, &access, &headers, body).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let resource = header("sentry-hook-resource").unwrap_or_default();
    if !matches!(resource, "event_alert" | "error") {
        // Signed, but not an error (an installation, an issue's state, a comment): Sentry is
        // told it arrived, and nothing is filed.
        return (
            StatusCode::OK,
            format!("Sentry's {resource:?} resource files nothing\n"),
        );
    }
    let report = {
        let body = body.clone();
        let resource = resource.to_owned();
        tokio::task::spawn_blocking(move || bugloop_intake::sentry::report(&resource, &body)).await
    };
    let report = match report {
        Ok(Ok(report)) => report,
        Ok(Err(error)) => return (StatusCode::BAD_REQUEST, format!("{error}\n")),
        Err(_) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the delivery could not be read\n".to_owned(),
            );
        }
    };
    let repository = [&report.project_slug, &report.project_id]
        .into_iter()
        .flatten()
        .find_map(|project| access.projects.get(project));
    let Some(repository) = repository.cloned() else {
        return (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "no repository for the Sentry project {}: map it in sentry_projects \
                 (its slug or id: owner/name)\n",
                report
                    .project_slug
                    .as_deref()
                    .or(report.project_id.as_deref())
                    .unwrap_or("(unnamed)")
            ),
        );
    };
    // The event's id is signed (the request's is not): Sentry's retries, and a captured
    // delivery replayed under another request id, are one job.
    crate::report_endpoint::queue_error_report(
        &state.queue,
        "sentry",
        repository,
        report.text,
        report.event_id.as_deref(),
    )
    .await
}

/// The delivery's body, when it is signed with the client secret: the signature header and a
/// declared length within [`MAX_SENTRY_BYTES`] first, then the body within the server's body
/// budget and in time, then the signature checked on it.
async fn receive(
    state: &SentryState,
    access: &SentryAccess,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<axum::body::Bytes, Answer> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // Unsigned, or a length not declared or too large: refused before a byte is read.
    let Some(signature) = header("sentry-hook-signature")
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
    else {
        return Err(unsigned());
    };
    let what = "a Sentry delivery";
    let (body, _reading) = crate::body::read_declared(
        &state.bodies,
        state.body_timeout,
        headers,
        body,
        (MAX_SENTRY_BYTES, what),
    )
    .await?;
    if !signature_is_valid(
        access.client_secret.expose_secret().as_bytes(),
        &body,
        signature,
    ) {
        return Err(unsigned());
    }
    Ok(body)
}
