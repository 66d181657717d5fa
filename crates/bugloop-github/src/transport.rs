//! The one place requests go through, with GitHub's rules for integrators: pagination by `Link`,
//! ETags on listings (a 304 is answered from the cache and costs no rate limit), waiting out
//! primary and secondary rate limits (`Retry-After`, `x-ratelimit-reset`), content-creating
//! requests spaced apart, retries only where repeating is safe, and a create that failed after it
//! was sent reported as ambiguous (the caller looks before writing again), never retried.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::GitHubError;

/// Whether a request may be sent again after a failure that left its effect unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Safety {
    /// A read.
    Read,
    /// A write whose repetition changes nothing more (PATCH, PUT, DELETE, a thread resolve).
    Idempotent,
    /// A write that creates (a POST of a comment): sent at most once unless GitHub said it was
    /// not done.
    Create,
}

impl Safety {
    fn writes(self) -> bool {
        self != Safety::Read
    }
}

/// Waits, so tests can see what the client asked to wait for instead of waiting.
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    fn sleep(&self, duration: Duration) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;
}

/// Waits for real.
#[derive(Debug, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// How patient and how careful the client is.
#[derive(Debug, Clone)]
pub struct Policy {
    /// GitHub asks for about a second between content-creating requests.
    pub write_spacing: Duration,
    /// A rate limit that asks to wait longer than this is returned as an error instead.
    pub max_wait: Duration,
    /// Retries of a safe request after a transient failure.
    pub retries: u32,
    pub backoff: Duration,
    pub timeout: Duration,
    /// Told each rate limit GitHub reports (the App server's metrics show the headroom).
    pub rate_limit_observer: Option<RateLimitObserver>,
}

/// What a [`RateLimitObserver`] calls.
pub type RateLimitCallback = dyn Fn(&str, RateLimit) + Send + Sync;

/// Called with the resource (`core`, `graphql`, ...) and its limit as GitHub reported it.
#[derive(Clone)]
pub struct RateLimitObserver(pub Arc<RateLimitCallback>);

impl std::fmt::Debug for RateLimitObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateLimitObserver")
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            write_spacing: Duration::from_secs(1),
            max_wait: Duration::from_secs(120),
            retries: 3,
            backoff: Duration::from_millis(500),
            timeout: Duration::from_secs(30),
            rate_limit_observer: None,
        }
    }
}

/// The rate limit as GitHub last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimit {
    pub limit: u64,
    pub remaining: u64,
    /// Seconds since the Unix epoch when the window resets.
    pub reset: u64,
}

/// Requests made, for benchmarks and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub requests: u64,
    /// Listing pages answered `304 Not Modified` (served from the cache, free of rate limit).
    pub not_modified: u64,
    pub writes: u64,
}

/// A listing page as last answered: its ETag, its body and where the next page is.
type CachedPage = (HeaderValue, Value, Option<String>);

#[derive(Debug, Default)]
struct State {
    last_write: Option<std::time::Instant>,
    /// URL -> (ETag, body, next page) of listing pages.
    etags: HashMap<String, CachedPage>,
    /// By resource (`core`, `graphql`, ...): each has a budget of its own.
    rate: HashMap<String, RateLimit>,
    counters: Counters,
}

/// A response's JSON and where the next page is.
pub(crate) struct Page {
    pub body: Value,
    pub next: Option<String>,
}

/// How requests are authenticated.
pub(crate) enum Auth {
    /// A token (an Action's `GITHUB_TOKEN`, a personal token).
    Token(String),
    /// An App installation's token, renewed before it expires.
    Installation {
        installation: crate::app::Installation,
        /// The token and when it expires (seconds since the epoch).
        cached: tokio::sync::Mutex<Option<(String, u64)>>,
    },
}

#[derive(Debug)]
pub(crate) struct Transport {
    http: reqwest::Client,
    api_url: String,
    auth: Auth,
    policy: Policy,
    sleeper: Arc<dyn Sleeper>,
    state: Mutex<State>,
}

/// Says which kind of authentication, never a token: a client is printed in errors and logs.
impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Token(_) => f.write_str("Token(..)"),
            Auth::Installation { installation, .. } => f
                .debug_struct("Installation")
                .field("installation", installation)
                .finish_non_exhaustive(),
        }
    }
}

impl Transport {
    pub(crate) fn new(
        api_url: &str,
        auth: Auth,
        policy: Policy,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Transport, GitHubError> {
        let http = reqwest::Client::builder()
            .user_agent(concat!("bugloop/", env!("CARGO_PKG_VERSION")))
            .timeout(policy.timeout)
            .build()
            .map_err(|e| GitHubError::Transient {
                operation: "creating the HTTP client".to_owned(),
                message: e.to_string(),
            })?;
        Ok(Transport {
            http,
            api_url: api_url.to_owned(),
            auth,
            policy,
            sleeper,
            state: Mutex::new(State::default()),
        })
    }

    pub(crate) fn counters(&self) -> Counters {
        self.state.lock().map(|s| s.counters).unwrap_or_default()
    }

    pub(crate) fn rate_limit(&self, resource: &str) -> Option<RateLimit> {
        self.state
            .lock()
            .ok()
            .and_then(|s| s.rate.get(resource).copied())
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> Option<T> {
        self.state.lock().ok().map(|mut state| f(&mut state))
    }

    /// Sends one request (a listing page is cached by ETag) and returns its JSON.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        safety: Safety,
    ) -> Result<Page, GitHubError> {
        self.send_as(method, url, body, safety, false).await
    }

    /// Sends one request as the App itself (its JWT), for the endpoints about the App (`GET
    /// /app`); with a token, as [`Transport::send`].
    pub(crate) async fn send_as_app(
        &self,
        method: Method,
        url: &str,
        safety: Safety,
    ) -> Result<Page, GitHubError> {
        self.send_as(method, url, None, safety, true).await
    }

    /// Sends one request (as the App itself when `as_app`) until it has an answer, asking again
    /// only where that is safe: after a lost connection or a server error (never a create), an
    /// installation token refused on the way (once), and a rate limit GitHub asks to wait out.
    async fn send_as(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        safety: Safety,
        as_app: bool,
    ) -> Result<Page, GitHubError> {
        let operation = format!("{method} {}", path_of(url));
        let mut attempt = 0;
        let mut renewed_after_refusal = false;
        loop {
            attempt += 1;
            let (cached, request) = self
                .prepare(&method, url, body, safety, as_app, &operation)
                .await?;
            let response = match request.send().await {
                Ok(response) => response,
                Err(error) => {
                    // Sent or not, the effect of a create is unknown: the caller looks first.
                    self.back_off_or_fail(safety, attempt, &operation, with_causes(&error))
                        .await?;
                    continue;
                }
            };
            let status = response.status();
            let headers = response.headers().clone();
            self.note_rate_limit(&headers);
            if status == StatusCode::NOT_MODIFIED
                && let Some((_, body, next)) = cached
            {
                self.with_state(|s| s.counters.not_modified += 1);
                return Ok(Page { body, next });
            }
            // The body is read once, whatever the status. A connection dropped while a create's
            // answer is read leaves the create unknown.
            let text = match response.text().await {
                Ok(text) => text,
                Err(error) => {
                    self.back_off_or_fail(safety, attempt, &operation, with_causes(&error))
                        .await?;
                    continue;
                }
            };
            // An installation token that expired on the way (or was revoked) is refused before
            // anything is done: renew it once and ask again, even for a create.
            if status == StatusCode::UNAUTHORIZED
                && !as_app
                && !renewed_after_refusal
                && let Auth::Installation { cached, .. } = &self.auth
            {
                renewed_after_refusal = true;
                *cached.lock().await = None;
                continue;
            }
            if let Some(wait) = rate_limit_wait(status, &headers, &text) {
                // GitHub refused the request before doing it: waiting and asking again is safe,
                // even for a create.
                if wait <= self.policy.max_wait && attempt <= self.policy.retries + 1 {
                    self.sleeper.sleep(wait).await;
                    continue;
                }
                return Err(GitHubError::RateLimited {
                    operation,
                    retry_after: wait,
                    message: message_of(&text),
                });
            }
            if status.is_server_error() {
                let message = format!("{status}: {}", message_of(&text));
                self.back_off_or_fail(safety, attempt, &operation, message)
                    .await?;
                continue;
            }
            return self.page(&method, url, status, &headers, &text, &operation);
        }
    }

    /// Everything up to sending one attempt: the spacing of writes, a listing's cached page (its
    /// ETag asked about), the credential (the App's JWT or the bearer token) and GitHub's
    /// headers. The request is counted as made, and a write as the last write.
    async fn prepare(
        &self,
        method: &Method,
        url: &str,
        body: Option<&Value>,
        safety: Safety,
        as_app: bool,
        operation: &str,
    ) -> Result<(Option<CachedPage>, reqwest::RequestBuilder), GitHubError> {
        if safety.writes() {
            self.space_writes().await;
        }
        let cached = if *method == Method::GET {
            self.with_state(|s| s.etags.get(url).cloned()).flatten()
        } else {
            None
        };
        let bearer = match (&self.auth, as_app) {
            (Auth::Installation { installation, .. }, true) => {
                self.app_jwt(installation, operation)?
            }
            _ => self.bearer().await?,
        };
        let mut request = self
            .http
            .request(method.clone(), url)
            .header("authorization", format!("Bearer {bearer}"))
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28");
        if let Some((etag, _, _)) = &cached {
            request = request.header("if-none-match", etag.clone());
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        self.with_state(|s| {
            s.counters.requests += 1;
            if safety.writes() {
                s.counters.writes += 1;
                s.last_write = Some(std::time::Instant::now());
            }
        });
        Ok((cached, request))
    }

    /// After a failure that leaves the request's effect unknown (the connection failed, the
    /// answer could not be read, a server error): a create is reported ambiguous, and is never
    /// sent again (the caller looks before writing again); anything else waits its backoff and
    /// is sent again (`Ok`) while retries remain, and is transient after.
    async fn back_off_or_fail(
        &self,
        safety: Safety,
        attempt: u32,
        operation: &str,
        message: String,
    ) -> Result<(), GitHubError> {
        if safety == Safety::Create {
            return Err(GitHubError::Ambiguous {
                operation: operation.to_owned(),
                message,
            });
        }
        if attempt <= self.policy.retries {
            self.sleeper.sleep(self.backoff(attempt)).await;
            return Ok(());
        }
        Err(GitHubError::Transient {
            operation: operation.to_owned(),
            message,
        })
    }

    /// The answer to a request that was neither lost nor rate limited: a refusal, classified,
    /// or the page (a listing's cached with its ETag).
    fn page(
        &self,
        method: &Method,
        url: &str,
        status: StatusCode,
        headers: &HeaderMap,
        text: &str,
        operation: &str,
    ) -> Result<Page, GitHubError> {
        let next = next_link(headers);
        if !status.is_success() {
            return Err(classify(status, operation, text));
        }
        let body: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(text).map_err(|e| GitHubError::Decode {
                operation: operation.to_owned(),
                message: e.to_string(),
            })?
        };
        if *method == Method::GET
            && let Some(etag) = headers.get("etag")
        {
            let entry = (etag.clone(), body.clone(), next.clone());
            self.with_state(|s| s.etags.insert(url.to_owned(), entry));
        }
        Ok(Page { body, next })
    }

    /// The token to send: the configured one, or the installation's, renewed when fewer than
    /// five minutes remain.
    pub(crate) async fn current_token(&self) -> Result<String, GitHubError> {
        self.bearer().await
    }

    /// The App's own JWT, for the endpoints about the App.
    fn app_jwt(
        &self,
        installation: &crate::app::Installation,
        operation: &str,
    ) -> Result<String, GitHubError> {
        installation
            .credentials
            .jwt(installation.clock.now())
            .map_err(|e| GitHubError::Unauthorized {
                operation: operation.to_owned(),
                message: e.to_string(),
            })
    }

    async fn bearer(&self) -> Result<String, GitHubError> {
        let (installation, cached) = match &self.auth {
            Auth::Token(token) => return Ok(token.clone()),
            Auth::Installation {
                installation,
                cached,
            } => (installation, cached),
        };
        let mut cached = cached.lock().await;
        let now = installation.clock.now();
        if let Some((token, expires)) = cached.as_ref()
            && expires.saturating_sub(now) > crate::app::RENEW_BEFORE_SECONDS
        {
            return Ok(token.clone());
        }
        let operation = format!("POST /app/installations/{}/access_tokens", installation.id);
        let jwt = installation
            .credentials
            .jwt(now)
            .map_err(|e| GitHubError::Unauthorized {
                operation: operation.clone(),
                message: e.to_string(),
            })?;
        let url = format!(
            "{}/app/installations/{}/access_tokens",
            self.api_url, installation.id
        );
        let response = self
            .http
            .post(&url)
            .header("authorization", format!("Bearer {jwt}"))
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .send()
            .await
            .map_err(|e| GitHubError::Transient {
                operation: operation.clone(),
                message: with_causes(&e),
            })?;
        self.with_state(|s| s.counters.requests += 1);
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            return Err(classify(status, &operation, &text));
        }
        let decode = |message: String| GitHubError::Decode {
            operation: operation.clone(),
            message,
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| decode(e.to_string()))?;
        let token = value["token"]
            .as_str()
            .ok_or_else(|| decode("no `token`".to_owned()))?
            .to_owned();
        let expires = value["expires_at"]
            .as_str()
            .and_then(|at| at.parse::<jiff::Timestamp>().ok())
            .and_then(|at| u64::try_from(at.as_second()).ok())
            .ok_or_else(|| decode("no `expires_at`".to_owned()))?;
        *cached = Some((token.clone(), expires));
        Ok(token)
    }

    async fn space_writes(&self) {
        let since = self
            .with_state(|s| s.last_write.map(|at| at.elapsed()))
            .flatten();
        if let Some(since) = since
            && since < self.policy.write_spacing
        {
            self.sleeper.sleep(self.policy.write_spacing - since).await;
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        self.policy.backoff * 2_u32.saturating_pow(attempt.saturating_sub(1))
    }

    fn note_rate_limit(&self, headers: &HeaderMap) {
        let number = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if let (Some(limit), Some(remaining), Some(reset)) = (
            number("x-ratelimit-limit"),
            number("x-ratelimit-remaining"),
            number("x-ratelimit-reset"),
        ) {
            let resource = headers
                .get("x-ratelimit-resource")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("core")
                .to_owned();
            let rate = RateLimit {
                limit,
                remaining,
                reset,
            };
            if let Some(observer) = &self.policy.rate_limit_observer {
                (observer.0)(&resource, rate);
            }
            self.with_state(|s| {
                s.rate.insert(resource, rate);
            });
        }
    }
}

/// An error with what caused it ("error sending request ...: tcp connect error: Connection
/// refused"): reqwest's own message leaves the cause out, and the cause is what an operator
/// needs.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// How long to wait before asking again, when GitHub refused the request for a rate limit: as
/// its headers say ([`rate_limited`]), or, since a secondary limit may come as a 403 naming no
/// time, a minute, as GitHub asks.
fn rate_limit_wait(status: StatusCode, headers: &HeaderMap, text: &str) -> Option<Duration> {
    rate_limited(status, headers).or_else(|| {
        (status == StatusCode::FORBIDDEN && text.to_lowercase().contains("secondary rate limit"))
            .then(|| Duration::from_secs(60))
    })
}

/// How long GitHub asks to wait, when the answer is a rate limit: `Retry-After` (secondary
/// limits), else until `x-ratelimit-reset` when none remain (the primary limit), else a minute
/// for a secondary limit that names no time (GitHub's advice).
fn rate_limited(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::FORBIDDEN && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(seconds) = header("retry-after").and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(seconds));
    }
    if header("x-ratelimit-remaining") == Some("0") {
        let reset = header("x-ratelimit-reset")?.parse::<u64>().ok()?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        return Some(Duration::from_secs(reset.saturating_sub(now).max(1)));
    }
    (status == StatusCode::TOO_MANY_REQUESTS).then(|| Duration::from_secs(60))
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    let link = headers.get("link")?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
    })
}

fn message_of(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| text.chars().take(300).collect())
}

/// A refusal, classified; GitHub's message and its `errors` kept (a 422 says which field).
fn classify(status: StatusCode, operation: &str, text: &str) -> GitHubError {
    let operation = operation.to_owned();
    let message = message_of(text);
    match status {
        StatusCode::UNAUTHORIZED => GitHubError::Unauthorized { operation, message },
        StatusCode::FORBIDDEN => GitHubError::Forbidden { operation, message },
        StatusCode::NOT_FOUND => GitHubError::NotFound { operation, message },
        StatusCode::UNPROCESSABLE_ENTITY => {
            let errors = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v.get("errors").and_then(Value::as_array).cloned())
                .unwrap_or_default()
                .iter()
                .map(|e| match e {
                    Value::String(text) => text.clone(),
                    other => other
                        .get("message")
                        .and_then(Value::as_str)
                        .map_or_else(|| other.to_string(), str::to_owned),
                })
                .collect();
            GitHubError::Unprocessable {
                operation,
                message,
                errors,
            }
        }
        StatusCode::PAYLOAD_TOO_LARGE => GitHubError::TooLarge { operation, message },
        _ if status.is_server_error() => GitHubError::Transient {
            operation,
            message: format!("{status}: {message}"),
        },
        _ => GitHubError::Refused {
            operation,
            message: format!("{status}: {message}"),
        },
    }
}

/// The path of a URL, for error messages (never the query, which may name things).
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("/", |at| &rest[at..]);
    path.split('?').next().unwrap_or(path)
}
