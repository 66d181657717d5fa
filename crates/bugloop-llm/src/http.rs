//! The HTTP side shared by the hosted providers: one client with connect and idle timeouts,
//! retries with exponential backoff and jitter that honour `Retry-After`, and server-sent events.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;

use crate::error::{LlmError, classify_status};
use crate::types::StreamEvent;
use crate::{ChatResult, Sink};

/// Timeouts and retry policy of the hosted providers.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSettings {
    pub connect_timeout: Duration,
    /// A response that sends nothing for this long is abandoned.
    pub idle_timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub base_backoff: Duration,
    pub max_backoff: Duration,
    /// A `Retry-After` longer than this is not waited for: the error is returned.
    pub max_retry_after: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            max_retries: 4,
            base_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

/// How a provider's answers read: a streamed answer assembled event by event, or a whole one.
pub(crate) trait WireFormat: Default {
    /// Folds one server-sent event into the answer so far, passing text on to `sink`.
    fn on_event(&mut self, event: &str, data: &str, sink: Sink<'_>) -> Result<(), LlmError>;
    /// The streamed answer, complete (`default_model` when the stream did not name one).
    fn finish(self, default_model: &str) -> ChatResult;
    /// A whole answer.
    fn parse(value: &serde_json::Value, default_model: &str) -> ChatResult;
}

#[derive(Debug, Clone)]
pub(crate) struct Http {
    client: reqwest::Client,
    pub(crate) settings: HttpSettings,
}

impl Http {
    pub(crate) fn new(settings: HttpSettings) -> Result<Self, LlmError> {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .read_timeout(settings.idle_timeout)
            .user_agent(concat!("bugloop/", env!("CARGO_PKG_VERSION")))
            // A redirect would carry the key (Anthropic's `x-api-key` is no header reqwest
            // drops across hosts) and the code under review to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Http { client, settings })
    }

    /// POSTs JSON; a non-success status becomes a classified error.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Result<reqwest::Response, LlmError> {
        let mut request = self.client.post(url).json(body);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.is_redirection() {
            return Err(redirected(url, status.as_u16(), response.headers()));
        }
        let retry_after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        Err(classify_status(status.as_u16(), &text, retry_after))
    }

    pub(crate) async fn read_json(
        &self,
        response: reqwest::Response,
    ) -> Result<serde_json::Value, LlmError> {
        let bytes = response
            .bytes()
            .await
            .map_err(|e| self.transport_error(&e))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            let shown: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
            LlmError::InvalidResponse(format!("not JSON ({e}): {shown}"))
        })
    }

    /// Posts `body` to `url` and reads the answer in the provider's `Wire` format: streamed
    /// (`stream`, its text passed on to `sink` as it comes), else one JSON body.
    pub(crate) async fn exchange<Wire: WireFormat>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
        stream: bool,
        sink: Sink<'_>,
        model: &str,
    ) -> ChatResult {
        let answer: ChatResult = async {
            let response = self.post_json(url, headers, body).await?;
            if stream {
                let mut state = Wire::default();
                self.read_events(response, |event, data| state.on_event(event, data, sink))
                    .await?;
                state.finish(model)
            } else {
                Wire::parse(&self.read_json(response).await?, model)
            }
        }
        .await;
        // A refusal, an error event inside a stream or an error body sent with a success status
        // may echo the key: every error's provider text goes without the request's credentials.
        answer.map_err(|e| e.with_provider_text(|text| without_credentials(text, headers)))
    }

    /// Reads a server-sent-events body, calling `on_event(event type, data)` for each event.
    pub(crate) async fn read_events(
        &self,
        response: reqwest::Response,
        mut on_event: impl FnMut(&str, &str) -> Result<(), LlmError>,
    ) -> Result<(), LlmError> {
        use eventsource_stream::Eventsource;
        let mut events = response.bytes_stream().eventsource();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(t) => self.transport_error(&t),
                other => LlmError::InvalidResponse(format!("bad event stream: {other}")),
            })?;
            on_event(&event.event, &event.data)?;
        }
        Ok(())
    }

    pub(crate) fn transport_error(&self, error: &reqwest::Error) -> LlmError {
        if error.is_timeout() {
            LlmError::Timeout(self.settings.idle_timeout)
        } else if error.is_body() || error.is_decode() {
            LlmError::StreamInterrupted(error.to_string())
        } else {
            LlmError::Connection(full_error(error))
        }
    }

    /// Runs `attempt` until it succeeds, fails with an error that is not retryable, or the retries
    /// are used up. Waits `Retry-After` when the server says so, else backs off exponentially
    /// with full jitter.
    pub(crate) async fn with_retries<T, F, Fut>(
        &self,
        sink: Sink<'_>,
        mut attempt: F,
    ) -> Result<T, LlmError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, LlmError>>,
    {
        let mut tries = 0u32;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retryable() && tries < self.settings.max_retries => {
                    let delay = match &error {
                        LlmError::RateLimited {
                            retry_after: Some(wait),
                            ..
                        } => {
                            if *wait > self.settings.max_retry_after {
                                return Err(error);
                            }
                            *wait
                        }
                        _ => backoff(&self.settings, tries),
                    };
                    tracing::warn!(%error, attempt = tries + 1, ?delay, "model call failed; retrying");
                    if let Some(sink) = sink {
                        sink(StreamEvent::Restart);
                    }
                    tokio::time::sleep(delay).await;
                    tries += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// `base * 2^tries`, capped, with full jitter.
fn backoff(settings: &HttpSettings, tries: u32) -> Duration {
    let ceiling = settings
        .base_backoff
        .saturating_mul(2u32.saturating_pow(tries))
        .min(settings.max_backoff);
    let millis = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(fastrand::u64(millis / 2..=millis.max(1)))
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        return Some(Duration::from_millis(ms.max(0.0) as u64));
    }
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return Some(Duration::from_millis((seconds.max(0.0) * 1000.0) as u64));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn full_error(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A redirect from a model server, not followed: where it pointed (its first 200 printable
/// characters; the server chose them), and what to do.
fn redirected(url: &str, status: u16, headers: &reqwest::header::HeaderMap) -> LlmError {
    let to: String = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("nowhere")
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    LlmError::Config(format!(
        "{url} answered HTTP {status}, a redirect to {to}: bugloop follows no model server's \
         redirect (the key and the code would go with it); set the provider's base_url to the \
         server that answers"
    ))
}

/// A provider's text without the credentials the request carried: a server or gateway that echoes
/// the key (refusing it, or in an error event of a stream) would otherwise put it in errors, run
/// logs and job errors.
fn without_credentials(mut text: String, headers: &[(&str, String)]) -> String {
    let credential = |name: &str| {
        let name = name.to_ascii_lowercase();
        name == "authorization" || ["key", "token", "secret"].iter().any(|w| name.contains(w))
    };
    for (_, value) in headers.iter().filter(|(name, _)| credential(name)) {
        // The key itself, and the whole value (`Bearer KEY`).
        let key = value.strip_prefix("Bearer ").unwrap_or(value);
        for secret in [value.as_str(), key] {
            if secret.len() >= 8 {
                text = text.replace(secret, "[REDACTED]");
            }
        }
    }
    text
}
