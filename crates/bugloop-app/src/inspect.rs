//! How bugloop reads an input, for `bugloop inspect`: a unified diff, or a comment's state (its
//! own marker, reply tag and state block) beside every marker typed in it.

use bugloop_config::Config;
use bugloop_diff::Diff;
use bugloop_domain::marker::{Marker, ReplyKind};
use bugloop_domain::rmcoc::{ParsedRmcoc, parse_comment};

use crate::AppError;

/// A diff as the review reads it (files, hunks, and the problems it skipped over).
pub fn diff(bytes: &[u8]) -> Diff {
    bugloop_diff::parse(bytes)
}

/// What bugloop reads in a comment body.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CommentReading {
    /// The comment's own marker: the one place bugloop writes it.
    pub own_marker: Option<Marker>,
    pub reply_tag: Option<ReplyKind>,
    /// Every marker outside code (quoted text; never read as state).
    pub markers: Vec<Marker>,
    /// The state block that ends the body, and the problems found reading it.
    pub rmcoc: ParsedRmcoc,
}

/// Reads `body` with the configured marker prefix.
pub fn comment(body: &str, config: &Config) -> Result<CommentReading, AppError> {
    let syntax = bugloop_config::marker_syntax(config)?;
    Ok(CommentReading {
        own_marker: syntax.own(body),
        reply_tag: syntax.read_reply_tag(body),
        markers: syntax.parse_all(body),
        rmcoc: parse_comment(body),
    })
}
