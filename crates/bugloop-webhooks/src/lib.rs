//! GitHub's events as bugloop reads them, from an Action's event file (`GITHUB_EVENT_NAME`,
//! `GITHUB_EVENT_PATH`) or from the App's webhooks: the payloads bugloop handles, parsed with
//! errors that name the field; the webhook signature (`X-Hub-Signature-256`) checked in constant
//! time; and the job an event asks for ([`trigger`]), or why it asks for none. Events sent by bots,
//! bugloop's own included, are dropped here, before any work.
//!
//! **Invariant:** events sent by bots, bugloop's own included, are dropped here, before any work.

mod payload;
mod trigger;

pub use self::payload::{
    Account, Comment, Event, Issue, IssueCommentEvent, IssuesEvent, Label, PullRequest,
    PullRequestEvent, Ref, Repository, Review, ReviewCommentEvent, ReviewEvent, Standing,
    WorkflowDispatchEvent,
};
pub use self::trigger::{CommentKind, Skip, Trigger, TriggerSettings, trigger};

/// An event that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("the {event} event is not JSON bugloop can read: at `{path}`: {message}")]
    Payload {
        event: String,
        path: String,
        message: String,
    },
}

/// The events a GitHub App running `bugloop serve` subscribes to: every event a loop handles but
/// `workflow_dispatch`, which only Actions sends.
pub const APP_EVENTS: [&str; 6] = [
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "issue_comment",
    "issues",
    "check_suite",
];

/// Reads the payload of the event called `name` (`X-GitHub-Event`, `GITHUB_EVENT_NAME`). Events
/// bugloop does not handle are [`Event::Unhandled`], not errors.
pub fn parse(name: &str, body: &[u8]) -> Result<Event, WebhookError> {
    payload::parse(name, body)
}

/// The `X-Hub-Signature-256` value GitHub sends with `body` (for tests and load generators that
/// play GitHub).
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    format!(
        "sha256={}",
        hex::encode(ring::hmac::sign(&key, body).as_ref())
    )
}

/// Whether `header` (`X-Hub-Signature-256: sha256=<hex>`) is the HMAC-SHA256 of `body` under the
/// webhook secret. Checked on the raw body before anything is parsed, in constant time.
pub fn signature_is_valid(secret: &[u8], body: &[u8], header: &str) -> bool {
    let Some(tag) = header
        .strip_prefix("sha256=")
        .and_then(|hex_tag| hex::decode(hex_tag).ok())
    else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    ring::hmac::verify(&key, body, &tag).is_ok()
}

#[cfg(test)]
mod tests;
