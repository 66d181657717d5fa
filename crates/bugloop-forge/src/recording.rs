//! A forge for dry runs: it reads from the forge it wraps and records every write instead of
//! making it. Later reads of the same run see the recorded writes (a comment it "added" is in the
//! conversation, an "updated" body replaces the old one), so a dry run goes through the same steps
//! as a real one and its report says what a real run would have done; nothing reaches the forge.

use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use bugloop_domain::thread::{Comment, CommentKind};
use serde::Serialize;

use crate::{Change, ChangeKey, CommentRef, Forge, ForgeError, LineAnchor, Permission};

/// One write a real run would have made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "write")]
pub enum RecordedWrite {
    AddComment {
        change: ChangeKey,
        body: String,
        anchor: Option<LineAnchor>,
    },
    UpdateComment {
        change: ChangeKey,
        comment: String,
        body: String,
    },
    Reply {
        change: ChangeKey,
        to: String,
        body: String,
    },
    SetThreadResolved {
        change: ChangeKey,
        thread: String,
        resolved: bool,
    },
    SetDescription {
        change: ChangeKey,
        body: String,
    },
}

#[derive(Debug, Default)]
struct Recorded {
    writes: Vec<RecordedWrite>,
    /// Comments the run would have added, by conversation.
    added: Vec<(ChangeKey, Comment)>,
    /// New bodies of existing comments.
    edited: Vec<(String, String)>,
    /// Threads whose resolved flag the run would have set.
    resolved: Vec<(String, bool)>,
    /// Descriptions the run would have written, by conversation.
    descriptions: Vec<(ChangeKey, String)>,
}

/// Wraps a forge for a run that must write nothing.
#[derive(Debug)]
pub struct RecordingForge<'a> {
    inner: &'a dyn Forge,
    recorded: Mutex<Recorded>,
}

impl<'a> RecordingForge<'a> {
    pub fn new(inner: &'a dyn Forge) -> Self {
        RecordingForge {
            inner,
            recorded: Mutex::new(Recorded::default()),
        }
    }

    /// The writes a real run would have made, in order.
    pub fn writes(&self) -> Vec<RecordedWrite> {
        self.lock().writes.clone()
    }

    // A poisoned lock only means another task panicked mid-record; the record is still a list.
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn record_comment(
        &self,
        change: &ChangeKey,
        mut comment: Comment,
        write: RecordedWrite,
    ) -> Comment {
        let mut recorded = self.lock();
        comment.id = format!("recorded-{}", recorded.added.len() + 1);
        if comment.kind == CommentKind::Review && comment.thread_id.is_none() {
            comment.thread_id = Some(comment.id.clone());
        }
        recorded.writes.push(write);
        recorded.added.push((change.clone(), comment.clone()));
        comment
    }
}

#[async_trait]
impl Forge for RecordingForge<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn bot_login(&self) -> &str {
        self.inner.bot_login()
    }

    fn publishes(&self) -> bool {
        false
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        self.inner.may_push()
    }

    fn max_body_chars(&self) -> Option<usize> {
        self.inner.max_body_chars()
    }

    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner.head(change).await
    }

    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        self.inner.change(change).await
    }

    async fn comment_by_id(
        &self,
        change: &ChangeKey,
        comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        self.inner.comment_by_id(change, comment).await
    }

    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let written = self
            .lock()
            .descriptions
            .iter()
            .rev()
            .find(|(key, _)| key == change)
            .map(|(_, body)| body.clone());
        match written {
            Some(body) => Ok(Some(body)),
            None => self.inner.description(change).await,
        }
    }

    async fn set_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        let mut recorded = self.lock();
        recorded.writes.push(RecordedWrite::SetDescription {
            change: change.clone(),
            body: body.to_owned(),
        });
        recorded
            .descriptions
            .push((change.clone(), body.to_owned()));
        Ok(())
    }

    fn forget_listings(&self) {
        self.inner.forget_listings();
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        let mut comments = self.inner.comments(change).await?;
        let recorded = self.lock();
        comments.extend(
            recorded
                .added
                .iter()
                .filter(|(key, _)| key == change)
                .map(|(_, comment)| comment.clone()),
        );
        for comment in &mut comments {
            if let Some((_, body)) = recorded
                .edited
                .iter()
                .rev()
                .find(|(id, _)| *id == comment.id)
            {
                comment.body.clone_from(body);
            }
            if let Some(thread) = &comment.thread_id
                && let Some((_, resolved)) =
                    recorded.resolved.iter().rev().find(|(id, _)| id == thread)
            {
                comment.thread_resolved = *resolved;
            }
        }
        Ok(comments)
    }

    async fn add_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        let comment = Comment {
            id: String::new(),
            author: self.inner.bot_login().to_owned(),
            body: body.to_owned(),
            created_at: jiff::Timestamp::now(),
            kind: if anchor.is_some() {
                CommentKind::Review
            } else {
                CommentKind::Issue
            },
            in_reply_to: None,
            thread_id: None,
            path: anchor.map(|a| a.path.clone()),
            line: anchor.map(|a| a.line),
            thread_resolved: false,
            by_bugloop: true,
        };
        let write = RecordedWrite::AddComment {
            change: change.clone(),
            body: body.to_owned(),
            anchor: anchor.cloned(),
        };
        Ok(self.record_comment(change, comment, write))
    }

    async fn update_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        let mut recorded = self.lock();
        recorded.writes.push(RecordedWrite::UpdateComment {
            change: change.clone(),
            comment: comment.id.clone(),
            body: body.to_owned(),
        });
        recorded.edited.push((comment.id.clone(), body.to_owned()));
        Ok(())
    }

    async fn reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let comment = Comment {
            id: String::new(),
            author: self.inner.bot_login().to_owned(),
            body: body.to_owned(),
            created_at: jiff::Timestamp::now(),
            kind: to.kind,
            in_reply_to: Some(to.id.clone()),
            thread_id: to.thread_id.clone(),
            path: to.path.clone(),
            line: to.line,
            thread_resolved: to.thread_resolved,
            by_bugloop: true,
        };
        let write = RecordedWrite::Reply {
            change: change.clone(),
            to: to.id.clone(),
            body: body.to_owned(),
        };
        Ok(self.record_comment(change, comment, write))
    }

    async fn set_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        let mut recorded = self.lock();
        recorded.writes.push(RecordedWrite::SetThreadResolved {
            change: change.clone(),
            thread: thread_id.to_owned(),
            resolved,
        });
        recorded.resolved.push((thread_id.to_owned(), resolved));
        Ok(())
    }

    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError> {
        self.inner.permission(actor).await
    }

    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        self.inner.own_comments_since(since).await
    }

    async fn change_author(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner.change_author(change).await
    }

    async fn human_reviewers(&self, change: &ChangeKey) -> Result<Vec<String>, ForgeError> {
        self.inner.human_reviewers(change).await
    }
}
