//! The server's error intake: `POST /report?repository=owner/name` with the report (a stack
//! trace, a log excerpt, JSON log lines) as the body and `Authorization: Bearer <report token>`.
//! The report is read at once (an empty, binary or unreadable one is a 400 saying why), queued
//! as a job and answered 202; a worker files it as an issue of the repository, or counts it on the
//! issue of its fingerprint, and solves a newly filed one. Without a report token the endpoint
//! answers 404: nobody may file issues through it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bugloop_queue::{JobKind, NewJob, Queue};
use bugloop_webhooks::Trigger;
use secrecy::{ExposeSecret, SecretString};

/// Who may file reports, and in which repositories: a report token files issues only in the
/// repositories the operator scoped it to (`owner/name`, or `owner/*` for an owner's).
#[derive(Debug, Clone)]
pub struct ReportAccess {
    pub token: SecretString,
    pub repositories: Vec<String>,
}

impl ReportAccess {
    /// Whether the token may file an issue in `repository` (`owner/name`; owners and names
    /// compare as GitHub does, without case).
    pub fn allows(&self, repository: &str) -> bool {
        let repository = repository.to_ascii_lowercase();
        self.repositories.iter().any(|scope| {
            let scope = scope.trim().to_ascii_lowercase();
            match scope.strip_suffix("/*") {
                Some(owner) => repository
                    .split_once('/')
                    .is_some_and(|(of, _)| of == owner),
                None => scope == repository,
            }
        })
    }
}

/// What the endpoint needs.
#[derive(Clone)]
pub struct ReportState {
    pub queue: Queue,
    /// The bearer token senders present and its scope; `None`: the endpoint is off.
    pub token: Option<Arc<ReportAccess>>,
    /// How long a report's body may take to arrive.
    pub body_timeout: std::time::Duration,
}

impl std::fmt::Debug for ReportState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportState")
            .field("queue", &self.queue)
            .field("on", &self.token.is_some())
            .finish()
    }
}

/// `repository=owner/name` from a query string (`%2F` for the slash is taken too).
fn repository_of(uri: &axum::http::Uri) -> Option<String> {
    let value = uri
        .query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("repository="))?;
    let value = value.replace("%2F", "/").replace("%2f", "/");
    bugloop_github::Repo::parse(&value).map(|_| value)
}

pub fn router(state: ReportState) -> axum::Router {
    axum::Router::new()
        .route("/report", post(report))
        .layer(axum::extract::DefaultBodyLimit::max(
            bugloop_intake::MAX_REPORT_BYTES,
        ))
        .with_state(state)
}

/// Compares in time that does not depend on where the two differ.
pub(crate) fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// `POST /report?repository=owner/name`: an error report, queued to be filed as an issue.
async fn report(
    State(state): State<ReportState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Answer {
    let repository = match allowed_repository(&state, &uri, &headers) {
        Ok(repository) => repository,
        Err(answer) => return answer,
    };
    let body = match receive(&state, body).await {
        Ok(body) => body,
        Err(answer) => return answer,
    };
    queue_report(&state, repository, &body).await
}

/// What the endpoint answers.
type Answer = (StatusCode, String);

/// The repository the report is for, when reports are on, the token is the report token and it
/// may file there.
fn allowed_repository(
    state: &ReportState,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Result<String, Answer> {
    let Some(token) = &state.token else {
        return Err((
            StatusCode::NOT_FOUND,
            "error reports are off on this server: set report_token (BUGLOOP_REPORT_TOKEN)\n"
                .to_owned(),
        ));
    };
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same_secret(given.as_bytes(), token.token.expose_secret().as_bytes()));
    if !authorized {
        return Err((
            StatusCode::UNAUTHORIZED,
            "a report needs the server's report token as `Authorization: Bearer ...`\n".to_owned(),
        ));
    }
    let Some(repository) = repository_of(uri) else {
        return Err((
            StatusCode::BAD_REQUEST,
            "name the repository to file the issue in: ?repository=owner/name\n".to_owned(),
        ));
    };
    if !token.allows(&repository) {
        return Err((
            StatusCode::FORBIDDEN,
            format!(
                "the report token may not file issues in {repository}: it is scoped to \
                 report_repositories (BUGLOOP_REPORT_REPOSITORIES)\n"
            ),
        ));
    }
    Ok(repository)
}

/// The report's body, in time and within the size limit, and readable as a report: a sender
/// learns at once that its report is unusable.
async fn receive(state: &ReportState, body: axum::body::Body) -> Result<Bytes, Answer> {
    // A sender that sends slowly does not hold the server.
    let limit = bugloop_intake::MAX_REPORT_BYTES;
    let body: Bytes =
        match tokio::time::timeout(state.body_timeout, axum::body::to_bytes(body, limit)).await {
            Ok(Ok(body)) => body,
            Ok(Err(_)) => {
                return Err((
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("a report is at most {limit} bytes\n"),
                ));
            }
            Err(_) => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    "the report did not arrive in time\n".to_owned(),
                ));
            }
        };
    // Off the server's threads, which answer GitHub's deliveries.
    let read = {
        let body = body.clone();
        tokio::task::spawn_blocking(move || bugloop_intake::read(&body).map(drop)).await
    };
    match read {
        Ok(Ok(())) => Ok(body),
        Ok(Err(error)) => Err((StatusCode::BAD_REQUEST, format!("{error}\n"))),
        Err(_) => Err((
            StatusCode::INTERNAL_SERVER_ERROR,
            "the report could not be read\n".to_owned(),
        )),
    }
}

/// Queues the report's job; every report counts, even one sent twice: each is a delivery of its
/// own.
async fn queue_report(state: &ReportState, repository: String, body: &Bytes) -> Answer {
    let report = String::from_utf8_lossy(body).into_owned();
    queue_error_report(&state.queue, "report", repository, report, None).await
}

/// Queues an error report for `repository` as the delivery `<event>-<id>` (`id` random when
/// none is given: then every report is a delivery of its own); a delivery queued before is not
/// queued again. Shared by `POST /report` and `POST /sentry`.
pub(crate) async fn queue_error_report(
    queue: &Queue,
    event: &str,
    repository: String,
    report: String,
    id: Option<&str>,
) -> Answer {
    let trigger = Trigger::ErrorReport {
        repository,
        report,
        installation: None,
    };
    let Ok(payload) = serde_json::to_string(&trigger) else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot queue the report\n".to_owned(),
        );
    };
    let delivery = match id {
        Some(id) => format!("{event}-{id}"),
        None => {
            let mut id = [0u8; 16];
            if ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id).is_err() {
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "no randomness for the report's id\n".to_owned(),
                );
            }
            format!("{event}-{}", hex::encode(id))
        }
    };
    let queued = queue
        .enqueue(
            &delivery,
            event,
            Some(NewJob {
                kind: JobKind::ErrorReport,
                conversation: trigger.conversation(),
                installation: None,
                head: None,
                payload,
                priority: trigger.priority(),
            }),
            bugloop_queue::now_ms(),
        )
        .await;
    match queued {
        Ok(bugloop_queue::Enqueued::Redelivered { .. }) => (
            StatusCode::OK,
            format!("{delivery} was queued before; not again\n"),
        ),
        Ok(_) => (StatusCode::ACCEPTED, format!("queued {delivery}\n")),
        Err(error) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the job queue does not answer: {error}\n"),
        ),
    }
}
