//! The GitHub App server's front door: `POST /webhook` checks the delivery's signature on the raw
//! body before anything else (401 otherwise, nothing stored), decides from the event whether it
//! asks for a job (bots and bugloop's own login dropped, comments without a mention dropped,
//! events no loop handles answered 204), and records the delivery with its job in one
//! transaction of the durable queue, answering 202; a redelivery is a no-op. `GET /healthz`
//! says the process runs, `GET /readyz` that the queue answers. With the App's credentials,
//! workers (`crate::worker`) run the queued jobs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use bugloop_queue::{Enqueued, NewJob, Queue};
use bugloop_webhooks::{Skip, Trigger, TriggerSettings};
use secrecy::{ExposeSecret, SecretSlice, SecretString};

use crate::ServerError;
pub use crate::report_endpoint::ReportAccess;
use crate::report_endpoint::same_secret;
pub use crate::store_location::StoreLocation;
pub use bugloop_queue::now_ms;

/// GitHub caps a webhook payload at 25 MB.
pub const MAX_BODY_BYTES: usize = 25 * 1024 * 1024;

/// What the endpoint needs. Its secrets print as `[REDACTED]`.
#[derive(Debug, Clone)]
pub struct WebhookState {
    pub secret: Arc<SecretSlice<u8>>,
    pub queue: Queue,
    pub settings: Arc<TriggerSettings>,
    /// What `/metrics` shows: deliveries since the process started, its jobs' figures.
    pub metrics: Arc<crate::metrics::ServerMetrics>,
    /// How long a delivery's body may take to arrive ([`BODY_TIMEOUT`]): a client that sends
    /// slowly does not hold the server.
    pub body_timeout: Duration,
    /// The bearer token that opens the status page and `/metrics` from anywhere; without one
    /// they answer only on loopback (they name private repositories and show jobs' errors).
    pub admin_token: Option<Arc<SecretString>>,
    /// The bearer token of `POST /report` and the repositories it may file in
    /// (`crate::report_endpoint`); `None`: reports are off.
    pub report_token: Option<Arc<ReportAccess>>,
    /// The Sentry integration's client secret and project mapping (`POST /sentry`); `None`:
    /// off.
    pub sentry: Option<Arc<crate::sentry_endpoint::SentryAccess>>,
    /// The bytes of the delivery bodies being read at once ([`body_budget`]).
    pub bodies: Arc<tokio::sync::Semaphore>,
    /// How many outsiders' comments are queued per repository in any hour.
    pub outsiders: Arc<crate::outsider_intake::OutsiderIntake>,
    /// Asks GitHub whether a member or collaborator may write (the App's credentials); `None`:
    /// their association counts them as the repository's.
    pub permissions: Option<Arc<crate::intake_permissions::IntakePermissions>>,
}

/// The most bytes of delivery bodies read at once (a few of the largest deliveries; GitHub's
/// are usually a few kilobytes).
pub const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// A budget of [`BODY_BUDGET_BYTES`] for [`WebhookState::bodies`].
pub fn body_budget() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(BODY_BUDGET_BYTES))
}

/// The address a connection came from, set by the server's accept loop.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub std::net::SocketAddr);

/// GitHub sends a delivery at once and waits ten seconds for the answer.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

impl WebhookState {
    /// The state of a server with only its secret, queue and trigger settings: no operator or
    /// report token, no Sentry, no permission checks, the default limits and fresh metrics.
    pub fn new(secret: Vec<u8>, queue: Queue, settings: TriggerSettings) -> WebhookState {
        WebhookState {
            secret: Arc::new(secret.into()),
            queue,
            settings: Arc::new(settings),
            metrics: Arc::default(),
            body_timeout: BODY_TIMEOUT,
            admin_token: None,
            report_token: None,
            sentry: None,
            bodies: body_budget(),
            outsiders: Arc::new(crate::outsider_intake::OutsiderIntake::new(
                crate::outsider_intake::DEFAULT_PER_HOUR,
            )),
            permissions: None,
        }
    }
}

/// The server's routes. The webhook and the health checks answer anyone; the status page and
/// the metrics only operators ([`WebhookState::admin_token`]).
pub fn router(state: WebhookState) -> axum::Router {
    let operations = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/", get(status_page))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            operators_only,
        ));
    let reports = crate::report_endpoint::router(crate::report_endpoint::ReportState {
        queue: state.queue.clone(),
        token: state.report_token.clone(),
        body_timeout: state.body_timeout,
    });
    let sentry = crate::sentry_endpoint::router(crate::sentry_endpoint::SentryState {
        queue: state.queue.clone(),
        access: state.sentry.clone(),
        body_timeout: state.body_timeout,
        bodies: state.bodies.clone(),
    });
    axum::Router::new()
        .route("/webhook", post(webhook))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .merge(operations)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
        .merge(reports)
        .merge(sentry)
}

/// Lets a request through with the admin token, or, when none is set, from loopback only (a
/// request whose peer is unknown is refused).
async fn operators_only(
    State(state): State<WebhookState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let allowed = match &state.admin_token {
        Some(token) => request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| same_secret(given.as_bytes(), token.expose_secret().as_bytes())),
        // A request a proxy on this machine passed on comes from loopback too: one that says
        // it was forwarded is not the operator's own.
        None => {
            let forwarded = ["forwarded", "x-forwarded-for", "x-real-ip"]
                .iter()
                .any(|name| request.headers().contains_key(*name));
            !forwarded
                && request
                    .extensions()
                    .get::<Peer>()
                    .is_some_and(|peer| peer.0.ip().is_loopback())
        }
    };
    if allowed {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "the status page and /metrics answer on loopback, or to the admin token \
             (BUGLOOP_ADMIN_TOKEN) as `Authorization: Bearer ...`\n",
        )
            .into_response()
    }
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

/// Prometheus' text format (see `crate::metrics`).
async fn metrics(State(state): State<WebhookState>) -> (StatusCode, String) {
    match state.queue.counts().await {
        Ok(counts) => (StatusCode::OK, state.metrics.render(&counts)),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")),
    }
}

/// The status page (`crate::status_page`).
async fn status_page(
    State(state): State<WebhookState>,
) -> (StatusCode, [(&'static str, &'static str); 2], String) {
    crate::status_page::render(&state.queue).await
}

async fn webhook(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> (StatusCode, String) {
    let counts = state.metrics.clone();
    let (status, text) = receive(state, &headers, body).await;
    let counter = match status {
        StatusCode::ACCEPTED if text.starts_with("queued") => &counts.deliveries.queued,
        StatusCode::ACCEPTED => &counts.deliveries.redelivered,
        StatusCode::NO_CONTENT => &counts.deliveries.ignored,
        StatusCode::UNAUTHORIZED => &counts.deliveries.refused,
        StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE | StatusCode::REQUEST_TIMEOUT => {
            &counts.deliveries.invalid
        }
        _ => &counts.deliveries.failed,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    (status, text)
}

/// Reads a delivery's body only when it can be checked and afforded: a delivery without a
/// signature is refused before a byte of its body is read, its length must be declared and
/// within [`MAX_BODY_BYTES`], and the bodies being read at once share [`BODY_BUDGET_BYTES`]
/// (over it: 503, and GitHub redelivers), so unsigned or slow bodies cannot fill the memory.
async fn receive(
    state: WebhookState,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> (StatusCode, String) {
    if !headers.contains_key("x-hub-signature-256") {
        return unsigned();
    }
    let what = "a delivery";
    match crate::body::read_declared(
        &state.bodies,
        state.body_timeout,
        headers,
        body,
        (MAX_BODY_BYTES, what),
    )
    .await
    {
        Ok((body, _reading)) => answer(state, headers, &body).await,
        Err(refusal) => refusal,
    }
}

fn unsigned() -> (StatusCode, String) {
    (
        StatusCode::UNAUTHORIZED,
        "the X-Hub-Signature-256 header is missing or does not match the body\n".to_owned(),
    )
}

async fn answer(state: WebhookState, headers: &HeaderMap, body: &Bytes) -> (StatusCode, String) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // Nothing is read from a body whose signature does not verify.
    let signed = header("x-hub-signature-256").is_some_and(|sig| {
        bugloop_webhooks::signature_is_valid(state.secret.expose_secret(), body, sig)
    });
    if !signed {
        return unsigned();
    }
    let (Some(event), Some(delivery)) = (header("x-github-event"), header("x-github-delivery"))
    else {
        return (
            StatusCode::BAD_REQUEST,
            "X-GitHub-Event and X-GitHub-Delivery are required\n".to_owned(),
        );
    };
    let parsed = match bugloop_webhooks::parse(event, body) {
        Ok(parsed) => parsed,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("{error}\n")),
    };
    let triggered = bugloop_webhooks::trigger(&parsed, &state.settings);
    let outsider = match &triggered {
        Ok(trigger) => comment_by_outsider(&state, &parsed, trigger).await,
        Err(_) => false,
    };
    let job = match triggered {
        Ok(trigger)
            if outsider
                && !state
                    .outsiders
                    .admit(trigger.repository(), std::time::Instant::now()) =>
        {
            // Recorded, so a redelivery is known, but no job.
            tracing::info!(
                delivery,
                repository = %trigger.repository(),
                per_hour = state.outsiders.per_hour(),
                "an outsider's comment over the repository's hourly intake: not queued"
            );
            None
        }
        Ok(trigger) => {
            let payload = match serde_json::to_string(&trigger) {
                Ok(payload) => payload,
                Err(error) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("{error}\n")),
            };
            Some(NewJob {
                kind: trigger.kind(),
                conversation: trigger.conversation(),
                installation: trigger.installation().and_then(|i| i64::try_from(i).ok()),
                head: trigger.head().map(str::to_owned),
                payload,
                priority: trigger.priority(),
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

/// Whether the event is a comment by someone who may not write to the repository: no role in
/// it, or (asked of GitHub when the server has the App's credentials) a member or collaborator
/// without write access.
async fn comment_by_outsider(
    state: &WebhookState,
    parsed: &bugloop_webhooks::Event,
    trigger: &Trigger,
) -> bool {
    match parsed.comment_standing() {
        Some(bugloop_webhooks::Standing::Outsider) => true,
        Some(bugloop_webhooks::Standing::Associated(login)) => {
            match (&state.permissions, trigger.installation()) {
                // GitHub not answering in time counts against the hour, not for it.
                (Some(permissions), Some(installation)) => {
                    permissions
                        .may_write(installation, trigger.repository(), &login)
                        .await
                        != Some(true)
                }
                _ => false,
            }
        }
        Some(bugloop_webhooks::Standing::Owner) | None => false,
    }
}

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub listen: std::net::SocketAddr,
    /// `BUGLOOP_WEBHOOK_SECRET` (printed as `[REDACTED]`, like the admin token).
    pub secret: SecretSlice<u8>,
    pub store: StoreLocation,
    /// What a delivery may ask for: the logins whose events are dropped besides every bot's (the
    /// App's own, `slug[bot]`), the label whose `issues.labeled` events are queued for solving
    /// (`BUGLOOP_AUTOFIX_LABEL`; the configuration's `labels.trigger`: a repository whose own
    /// differs is told so by the job), the label that lets a solution waiting for approval go
    /// on (the operator's `labels.approve`) and the solve branches' prefix
    /// (`BUGLOOP_SOLVE_BRANCH_PREFIX`; the configuration's `branch_prefix`).
    pub trigger: TriggerSettings,
    /// How queued jobs are run, and by how many workers (none: the server only queues).
    pub workers: Option<(crate::worker::WorkerSettings, usize)>,
    /// How many jobs may run at once over every process sharing the queue.
    pub limits: bugloop_queue::Limits,
    /// Opens the status page and `/metrics` beyond loopback (`BUGLOOP_ADMIN_TOKEN`).
    pub admin_token: Option<SecretString>,
    /// Opens `POST /report` (`BUGLOOP_REPORT_TOKEN`) for the repositories it is scoped to
    /// (`BUGLOOP_REPORT_REPOSITORIES`); without it the endpoint is off.
    pub report_token: Option<ReportAccess>,
    /// Opens `POST /sentry` (`BUGLOOP_SENTRY_CLIENT_SECRET` and `sentry_projects`).
    pub sentry: Option<crate::sentry_endpoint::SentryAccess>,
    /// How many comments of people GitHub says are not the repository's are queued per
    /// repository in any hour, in this process (`outsider_comments_per_hour`; 20).
    pub outsider_comments_per_hour: u32,
}

/// Serves until SIGTERM or Ctrl-C; `bound` is told the address once it listens (port 0 picks a
/// free one). Starts without reaching GitHub: webhooks are queued whatever GitHub's state.
pub async fn run(
    options: ServeOptions,
    bound: impl FnOnce(std::net::SocketAddr),
) -> Result<(), ServerError> {
    run_until(options, bound, shutdown()).await
}

/// Makes `dir` (created when missing) readable by the server's user only.
fn private_directory(dir: &std::path::Path) -> Result<(), ServerError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| ServerError::Invalid(format!("cannot make {} private: {e}", dir.display())))
}

/// Makes the file at `path`, when there is one, readable by the server's user only.
fn private_file(path: &std::path::Path) -> Result<(), ServerError> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(|e| {
                ServerError::Invalid(format!("cannot make {} private: {e}", path.display()))
            })
        }
        _ => Ok(()),
    }
}

/// Below this many bytes a webhook secret can be guessed (GitHub suggests a long random one).
const STRONG_SECRET_BYTES: usize = 16;

/// Why the webhook secret is weak, if it is: anyone who guesses it can send deliveries.
pub(crate) fn weak_secret(secret: &[u8]) -> Option<String> {
    (secret.len() < STRONG_SECRET_BYTES).then(|| {
        format!(
            "BUGLOOP_WEBHOOK_SECRET is {} byte(s) long: whoever guesses it can send deliveries; \
             use at least {STRONG_SECRET_BYTES} random bytes (`openssl rand -hex 32`)",
            secret.len()
        )
    })
}

/// [`run`] until `stop` completes instead of a signal.
pub async fn run_until(
    options: ServeOptions,
    bound: impl FnOnce(std::net::SocketAddr),
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    if options.secret.expose_secret().is_empty() {
        return Err(ServerError::Invalid(
            "BUGLOOP_WEBHOOK_SECRET is not set: the server verifies every delivery with it"
                .to_owned(),
        ));
    }
    if let Some(warning) = weak_secret(options.secret.expose_secret()) {
        tracing::warn!("{warning}");
    }
    raise_open_files_limit();
    let queue = options.store.open().await?.with_limits(options.limits);
    // The clones (a job's token is in their configuration while it runs) and the queue's
    // database are the server's own: no other local user reads them.
    if let Some((settings, _)) = &options.workers {
        private_directory(&settings.workspaces)?;
    }
    if let StoreLocation::Sqlite(path) = &options.store {
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            private_file(std::path::Path::new(&name))?;
        }
    }
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|e| ServerError::Invalid(format!("cannot listen on {}: {e}", options.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| ServerError::Invalid(format!("cannot read the address listened on: {e}")))?;
    bound(address);
    let state = webhook_state(&options, queue);
    // Workers stop claiming when the server is told to stop, and finish the job they hold
    // within their grace period (or hand it back).
    let (stop_workers, stopping) = crate::worker::stop_signal();
    let workers = match &options.workers {
        Some((settings, count)) => Some(crate::workers::Workers::start(
            &options.store,
            &state.queue,
            settings,
            *count,
            &stopping,
        )?),
        None => None,
    };
    tracing::info!(%address, workers = options.workers.as_ref().map_or(0, |w| w.1), "serving");
    let served = serve_http(listener, router(state), stop, HEADER_TIMEOUT).await;
    tracing::info!("stopping: no more jobs claimed; jobs in hand finish or are handed back");
    stop_workers.stop();
    if let Some(workers) = workers {
        let _ = tokio::task::spawn_blocking(move || workers.join()).await;
    }
    served.map_err(|e| ServerError::Invalid(format!("the server stopped: {e}")))
}

/// What the routes share: the queue, the secret and tokens the server was given, the intake's
/// limits and, with workers, their metrics and the App's permission lookups.
fn webhook_state(options: &ServeOptions, queue: Queue) -> WebhookState {
    let metrics = options
        .workers
        .as_ref()
        .map(|(settings, _)| settings.metrics.clone())
        .unwrap_or_default();
    WebhookState {
        admin_token: options.admin_token.clone().map(Arc::new),
        report_token: options.report_token.clone().map(Arc::new),
        sentry: options.sentry.clone().map(Arc::new),
        outsiders: Arc::new(crate::outsider_intake::OutsiderIntake::new(
            options.outsider_comments_per_hour,
        )),
        permissions: options.workers.as_ref().map(|(settings, _)| {
            Arc::new(crate::intake_permissions::IntakePermissions::new(
                settings.app.clone(),
                settings.endpoint.clone(),
                settings.policy.clone(),
            ))
        }),
        metrics,
        ..WebhookState::new(
            options.secret.expose_secret().to_vec(),
            queue,
            options.trigger.clone(),
        )
    }
}

/// How long a client may take to send a request's headers (hyper's timer; axum's own `serve`
/// sets none, so a client that never finishes them would hold its connection for good).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long connections still open at a stop get to finish their request.
const DRAIN: Duration = Duration::from_secs(10);

/// Serves `app` on `listener` until `stop`: HTTP/1.1 with a deadline for each request's headers
/// (`header_timeout`, [`HEADER_TIMEOUT`] in the server; the body's is the webhook's own,
/// [`BODY_TIMEOUT`]); at the stop, no new connection is taken
/// and open ones get [`DRAIN`] to finish.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    stop: impl Future<Output = ()>,
    header_timeout: Duration,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        // Out of descriptors, say: wait a moment rather than spin.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Over the cap, a connection is closed at once: descriptors and memory stay
                // for the connections being served (idle ones close at the header timeout).
                let Ok(slot) = connections.clone().try_acquire_owned() else {
                    drop(stream);
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let peer = stream.peer_addr().ok().map(Peer);
                let app = app.clone();
                let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                    if let Some(peer) = peer {
                        request.extensions_mut().insert(peer);
                    }
                    tower::ServiceExt::oneshot(app.clone(), request)
                });
                let connection = builder.serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    let _ = connection.await;
                    drop(slot);
                });
            }
            () = &mut stop => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
    Ok(())
}

/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 4096;

/// Raises the soft limit on open files to the hard one, so idle connections do not run the
/// server out of descriptors before the connection cap and the header timeout deal with them.
fn raise_open_files_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
        && let Err(error) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard)
    {
        tracing::warn!(%error, "cannot raise the limit on open files");
    }
}

/// SIGTERM or Ctrl-C.
async fn shutdown() {
    bugloop_app::stop_requested().await;
}
