//! Errors, classified so callers know whether to retry, shrink the input or stop.

use std::time::Duration;

use crate::overrun::BudgetExceeded;

/// What a caller should do about an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Try the same call again later (the client already retried as often as configured).
    Retry,
    /// Send less: the input does not fit the model's context.
    ShrinkInput,
    /// Do not try again without a change (credentials, request, budget, configuration).
    Stop,
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth { status: u16, message: String },
    #[error("rate limited (HTTP {status}{}): {message}", retry_after_text(.retry_after))]
    RateLimited {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    #[error("the input is too long for the model's context: {message}")]
    ContextTooLong { message: String },
    #[error("the provider refused the request (HTTP {status}): {message}")]
    BadRequest { status: u16, message: String },
    #[error("the provider failed (HTTP {status}): {message}")]
    Server { status: u16, message: String },
    #[error("cannot reach the provider: {0}")]
    Connection(String),
    #[error("the provider sent nothing for {0:?}")]
    Timeout(Duration),
    #[error("the answer stream ended before it was complete: {0}")]
    StreamInterrupted(String),
    #[error("the provider's answer could not be read: {0}")]
    InvalidResponse(String),
    #[error(transparent)]
    Budget(#[from] BudgetExceeded),
    #[error("no recorded answer in {cassette} for request {key} ({summary})")]
    ReplayMiss {
        cassette: String,
        key: String,
        summary: String,
    },
    #[error("cassette {path}: {message}")]
    Cassette { path: String, message: String },
    #[error("{0}")]
    Config(String),
    #[error("{provider} does not support {what}")]
    Unsupported { provider: String, what: String },
    #[error("local model: {0}")]
    Local(String),
}

fn retry_after_text(retry_after: &Option<Duration>) -> String {
    retry_after
        .map(|d| format!(", retry after {}s", d.as_secs()))
        .unwrap_or_default()
}

impl LlmError {
    /// What may be published (a pull request's comment, an issue): the kind and the HTTP status,
    /// never the provider's message, an address, a path or a configuration value, which stay in
    /// the transcript and the log.
    pub fn public(&self) -> String {
        match self {
            LlmError::Auth { status, .. } => format!("authentication failed (HTTP {status})"),
            LlmError::RateLimited {
                status,
                retry_after,
                ..
            } => format!(
                "rate limited (HTTP {status}{})",
                retry_after_text(retry_after)
            ),
            LlmError::ContextTooLong { .. } => {
                "the input is too long for the model's context".to_owned()
            }
            LlmError::BadRequest { status, .. } => {
                format!("the provider refused the request (HTTP {status})")
            }
            LlmError::Server { status, .. } => format!("the provider failed (HTTP {status})"),
            LlmError::Connection(_) => "cannot reach the provider".to_owned(),
            LlmError::Timeout(_) | LlmError::Budget(_) | LlmError::Unsupported { .. } => {
                self.to_string()
            }
            LlmError::StreamInterrupted(_) => {
                "the answer stream ended before it was complete".to_owned()
            }
            LlmError::InvalidResponse(_) => "the provider's answer could not be read".to_owned(),
            LlmError::ReplayMiss { .. } | LlmError::Cassette { .. } => {
                "no recorded answer for this request".to_owned()
            }
            LlmError::Config(_) => "the model's configuration is unusable".to_owned(),
            LlmError::Local(_) => "the local model failed".to_owned(),
        }
    }

    /// The same error with `edit` applied to the text the provider sent (its message, or what
    /// could not be read of its answer); the kind, status and advice are unchanged.
    pub(crate) fn with_provider_text(self, edit: impl Fn(String) -> String) -> LlmError {
        match self {
            LlmError::Auth { status, message } => LlmError::Auth {
                status,
                message: edit(message),
            },
            LlmError::RateLimited {
                status,
                retry_after,
                message,
            } => LlmError::RateLimited {
                status,
                retry_after,
                message: edit(message),
            },
            LlmError::ContextTooLong { message } => LlmError::ContextTooLong {
                message: edit(message),
            },
            LlmError::BadRequest { status, message } => LlmError::BadRequest {
                status,
                message: edit(message),
            },
            LlmError::Server { status, message } => LlmError::Server {
                status,
                message: edit(message),
            },
            LlmError::StreamInterrupted(text) => LlmError::StreamInterrupted(edit(text)),
            LlmError::InvalidResponse(text) => LlmError::InvalidResponse(edit(text)),
            other => other,
        }
    }

    /// Whether the client retries this error by itself. A body that cannot be read (not JSON,
    /// cut short, the wrong shape) is retried like a cut stream: proxies and overloaded servers
    /// send such bodies with a success status, and the same request usually gets a whole answer.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Connection(_)
                | LlmError::Timeout(_)
                | LlmError::StreamInterrupted(_)
                | LlmError::InvalidResponse(_)
        )
    }

    pub fn advice(&self) -> Advice {
        match self {
            _ if self.is_retryable() => Advice::Retry,
            LlmError::ContextTooLong { .. } => Advice::ShrinkInput,
            _ => Advice::Stop,
        }
    }
}

/// Turns an HTTP error status and body into an error. Context-length errors are recognized by the
/// wording OpenAI-compatible servers and Anthropic use.
pub(crate) fn classify_status(status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
    let message = error_message(body);
    let lower = message.to_lowercase();
    let too_long = lower.contains("context_length_exceeded")
        || lower.contains("maximum context length")
        || lower.contains("context length")
        || lower.contains("prompt is too long")
        || lower.contains("too many tokens")
        || lower.contains("exceeds the context");
    match status {
        401 | 403 => LlmError::Auth { status, message },
        429 => LlmError::RateLimited {
            status,
            retry_after,
            message,
        },
        400 | 413 | 422 if too_long => LlmError::ContextTooLong { message },
        408 => LlmError::Timeout(Duration::ZERO),
        400..=499 => LlmError::BadRequest { status, message },
        _ => LlmError::Server { status, message },
    }
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic), else the text itself.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        let error = v.get("error").unwrap_or(v);
        let message = error.get("message").and_then(|m| m.as_str());
        let code = error
            .get("code")
            .or_else(|| error.get("type"))
            .and_then(|c| c.as_str())
            .filter(|c| !c.is_empty());
        match (message, code) {
            (Some(m), Some(c)) => Some(format!("{m} ({c})")),
            (Some(m), None) => Some(m.to_owned()),
            _ => error.as_str().map(str::to_owned),
        }
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    let text: String = text.chars().take(500).collect();
    if text.is_empty() {
        "(empty body)".to_owned()
    } else {
        text
    }
}
