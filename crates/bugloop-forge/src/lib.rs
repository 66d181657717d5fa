//! Where changes and their conversations live. The loops talk to a [`Forge`]: the change under
//! review, its conversation (issue-level comments and line comments in threads, with authors,
//! replies and resolved flags), and the few writes bugloop makes as its bot identity (add or update
//! a comment, reply, resolve or unresolve a thread), plus an actor's permission.
//!
//! Implementations: [`local::LocalForge`] (a git repository with the conversation in the embedded
//! store) and [`github::GitHubForge`]. Every write goes through one method, [`Forge::write`]; the
//! policy layers (a fence, signatures, answer marks, a dry run's record) are [`ForgeLayer`]s that
//! state only what they change. No forge wire type leaves this crate: everything is expressed in
//! `bugloop_domain` types and the small types below.
//!
//! **Never:** leak wire types (only `bugloop_domain` types cross it), retry an ambiguous create, or
//! move a branch blindly (`publish_branch` is compare-and-set: created only if absent, moved only
//! from the commit named). Errors are classified (`RateLimited`, `Unprocessable`, `Forbidden`,
//! `Transient`, `Ambiguous`, `TooLarge`) so a loop can react. It re-exports `ChangeKey`,
//! `ChangedFile` and `FileStatus` from `bugloop-git`.

pub mod answering;
pub mod fencing;
pub mod github;
mod layer;
pub mod local;
pub mod recording;
pub mod signing;
pub mod tracker;

pub use bugloop_git::{ChangeKey, ChangedFile, FileStatus};
pub use layer::{ForgeLayer, Write, Written};

use async_trait::async_trait;
use bugloop_domain::finding::FindingId;
use bugloop_domain::marker::MarkerSyntax;
use bugloop_domain::thread::Comment;
use serde::Serialize;

/// What went wrong, classified so a loop can react: wait and retry later, fall back (a line the
/// forge will not anchor a comment to), or stop. Every message names the operation.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error(transparent)]
    Store(#[from] bugloop_store::StoreError),
    #[error(transparent)]
    Git(#[from] bugloop_git::GitError),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    /// The forge asks to wait (a primary or secondary rate limit).
    #[error("{message} (rate limited{})", retry_after.map(|d| format!("; retry after {} s", d.as_secs())).unwrap_or_default())]
    RateLimited {
        message: String,
        retry_after: Option<std::time::Duration>,
    },
    /// The forge refused the request's content (GitHub's 422), such as a line comment on a line
    /// outside the pull request's diff.
    #[error("{0}")]
    Unprocessable(String),
    /// The credentials may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// A failure that may pass after the retries that were safe: the forge unreachable or
    /// failing (a dropped connection, a 5xx: `unreachable`), or a refusal or an answer of this
    /// request's own that a later attempt may not meet.
    #[error("{message}")]
    Transient { message: String, unreachable: bool },
    /// A write that may or may not have happened (it failed after it was sent): look before
    /// writing again.
    #[error("{0}")]
    Ambiguous(String),
    /// A body or request over the forge's limits.
    #[error("{0}")]
    TooLarge(String),
}

impl ForgeError {
    /// A refusal of a comment's anchor (its line), which a comment without one may not meet.
    pub fn refuses_anchor(&self) -> bool {
        matches!(self, ForgeError::Unprocessable(_))
    }
}

/// A change under review: a pull request, or a local branch against its base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub key: ChangeKey,
    /// For humans (`feature against main (merge base 1a2b3c4)`, a pull request's title).
    pub description: String,
    pub base: String,
    pub head: String,
    pub files: Vec<ChangedFile>,
    /// The unified diff of the change (base -> head).
    #[serde(skip)]
    pub diff: Vec<u8>,
}

/// Where a line comment goes. bugloop comments on head lines only (the new side of the diff;
/// GitHub's `side: RIGHT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineAnchor {
    pub path: String,
    /// New-side line; it must be shown in the change's diff.
    pub line: u32,
    /// The last line of a range starting at `line` (GitHub's multi-line comment: `start_line` is
    /// `line`, `line` is this), also in the diff.
    pub end_line: Option<u32>,
    /// The head commit the line refers to.
    pub commit: String,
}

/// What an actor may do in the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    None,
    Read,
    Write,
    Admin,
}

impl Permission {
    /// May this actor have bugloop change files and commit for them?
    pub fn may_modify_files(self) -> bool {
        self >= Permission::Write
    }
}

/// How an upsert ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Upsert {
    /// A new comment, with the forge's id of it (a run that raced another looks for its own
    /// comments by it).
    Added(String),
    Updated,
    Unchanged,
}

impl Upsert {
    pub fn added(&self) -> bool {
        matches!(self, Upsert::Added(_))
    }
}

/// Writes `body` as bugloop's comment: `existing` is updated when it says something else and left
/// when it says the same; without one, a new comment is added (at `anchor`, or in the
/// conversation).
pub async fn put_comment<F: Forge + ?Sized>(
    forge: &F,
    change: &ChangeKey,
    existing: Option<&Comment>,
    body: &str,
    anchor: Option<&LineAnchor>,
) -> Result<Upsert, ForgeError> {
    match existing {
        Some(comment) if comment.body == body => Ok(Upsert::Unchanged),
        Some(comment) => {
            forge.update_comment(change, comment, body).await?;
            Ok(Upsert::Updated)
        }
        None => Ok(Upsert::Added(
            forge.add_comment(change, body, anchor).await?.id,
        )),
    }
}

/// Everything the loops need from a forge.
/// A comment by where it was written and the forge's id of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentRef {
    /// On the conversation.
    Conversation(u64),
    /// On a line of the diff (or a reply in a review thread).
    Line(u64),
    /// The body of a submitted review.
    ReviewBody(u64),
}

#[async_trait]
pub trait Forge: Send + Sync + std::fmt::Debug {
    /// `local`, `github`, ... for reports.
    fn name(&self) -> &str;

    /// The login bugloop writes as here.
    fn bot_login(&self) -> &str;

    /// The longest comment body the forge takes, in characters (`None`: no limit). Bodies are
    /// cut to it with `bugloop_domain::markdown::cap_body`, which keeps markers and state.
    fn max_body_chars(&self) -> Option<usize> {
        None
    }

    /// Whether writes reach the conversation (false for a dry run's
    /// [`recording::RecordingForge`], which records them instead).
    fn publishes(&self) -> bool {
        true
    }

    /// One comment of `change`, read from the forge by its id (never from what an event said
    /// about it): `None` when the forge has no such comment on this change. Forges without
    /// events to act on have none.
    async fn comment_by_id(
        &self,
        _change: &ChangeKey,
        _comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        Ok(None)
    }

    /// Whether the job may still push to the repository (asked right before every push: a
    /// worker that lost its lease must not push any more than it may comment).
    fn may_push(&self) -> Result<(), ForgeError> {
        Ok(())
    }

    /// The change a conversation is about: its base and head, files and diff.
    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError>;

    /// The change's head commit now, to notice a push during a job (its head is pinned when it
    /// starts and checked again before anything is published or pushed). `None` when the forge
    /// cannot tell.
    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        Ok(Some(self.change(change).await?.head))
    }

    /// The change's description (a pull request's body; locally, its change request's body, or
    /// the one kept for a branch without one): `None` where it has none yet.
    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError>;

    /// Every comment of the change's conversation, oldest first: issue-level comments and line
    /// comments, with replies (`in_reply_to`), thread ids and the forge's resolved flags.
    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError>;

    /// Drops what the forge keeps of earlier listings, so the next [`Forge::comments`] asks
    /// again: a run waiting for its own writes to be listed (a listing can lag a write).
    fn forget_listings(&self) {}

    /// Makes one write as the bot: every write bugloop makes on a forge passes here, so a
    /// layer that must see every write (a fence, a signature, a dry run's record) sees the ones
    /// added later too. The methods below (`add_comment`, `reply`, ...) say it in words; a
    /// forge implements this one.
    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError>;

    /// Adds a comment as the bot: a line comment when `anchor` is given, otherwise a
    /// conversation comment.
    async fn add_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        let write = Write::AddComment {
            change,
            body,
            anchor,
        };
        self.write(write).await?.comment(write)
    }

    /// Replaces the body of one of the bot's comments.
    async fn update_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        let write = Write::UpdateComment {
            change,
            comment,
            body,
        };
        self.write(write).await?.done(write)
    }

    /// Replies as the bot in the thread of `to`.
    async fn reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let write = Write::Reply { change, to, body };
        self.write(write).await?.comment(write)
    }

    /// Deletes one of the bot's own comments: a duplicate left by two runs at once, or by a
    /// listing that lagged behind a write. `Ok(false)` where the forge does not delete (the
    /// local store, which one process writes; a dry run).
    async fn delete_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
    ) -> Result<bool, ForgeError> {
        let write = Write::DeleteComment { change, comment };
        self.write(write).await?.deleted(write)
    }

    /// Resolves or unresolves the thread `thread_id` (a comment's `thread_id`).
    async fn set_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        let write = Write::SetThreadResolved {
            change,
            thread: thread_id,
            resolved,
        };
        self.write(write).await?.done(write)
    }

    /// Replaces the change's description.
    async fn set_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        let write = Write::SetDescription { change, body };
        self.write(write).await?.done(write)
    }

    /// What `actor` may do in the repository.
    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError>;

    /// bugloop's own comments anywhere in the repository, written at or after `since` (by the
    /// forge's clock): what the rate of answers to people without write access is counted from.
    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError>;

    /// Who opened the change (a pull request's author), when the forge knows: with write
    /// access, the one person who may have a finding withdrawn.
    async fn change_author(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let _ = change;
        Ok(None)
    }

    /// The human reviewers of the change (who decide disputes the bot and the developer cannot
    /// settle); none locally.
    async fn human_reviewers(&self, change: &ChangeKey) -> Result<Vec<String>, ForgeError> {
        let _ = change;
        Ok(Vec::new())
    }

    /// Adds the comment carrying `id`'s marker, or updates the bot's comment that already carries
    /// it (of the same kind: a line comment and a conversation comment are separate places).
    /// `known` is the conversation as the run read it (one listing per run, not one per finding);
    /// a comment this run wrote is not in it, and one run writes each marker once. Idempotent
    /// across runs: running it twice leaves one comment.
    async fn upsert_by_marker(
        &self,
        change: &ChangeKey,
        markers: &MarkerSyntax,
        id: &FindingId,
        body: &str,
        anchor: Option<&LineAnchor>,
        known: &[Comment],
    ) -> Result<Upsert, ForgeError> {
        let comments = known;
        let want_review = anchor.is_some();
        let existing = comments.iter().find(|c| {
            c.by_bugloop
                && c.in_reply_to.is_none()
                && (c.kind == bugloop_domain::thread::CommentKind::Review) == want_review
                && markers.own(&c.body).is_some_and(|m| &m.finding_id == id)
        });
        put_comment(self, change, existing, body, anchor).await
    }
}
