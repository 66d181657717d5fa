//! A forge for dry runs: it reads from the forge it wraps and records every write instead of
//! making it. Later reads of the same run see the recorded writes (a comment it "added" is in the
//! conversation, an "updated" body replaces the old one), so a dry run goes through the same steps
//! as a real one and its report says what a real run would have done; nothing reaches the forge.

use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use bugloop_domain::thread::{Comment, CommentKind};
use serde::Serialize;

use crate::{ChangeKey, Forge, ForgeError, ForgeLayer, LineAnchor, Write, Written};

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
}

impl Recorded {
    /// `write` recorded, with nothing to give back.
    fn done(&mut self, write: RecordedWrite) -> Written {
        self.writes.push(write);
        Written::Done
    }
}

/// A conversation comment of the bot's saying `body`, written now (its id is given when it is
/// recorded).
fn bots(bot: &str, body: &str) -> Comment {
    Comment::conversation(
        String::new(),
        bot.to_owned(),
        body.to_owned(),
        jiff::Timestamp::now(),
        true,
    )
}

/// `comment` recorded as written by `write`, with the id later reads will see.
fn record_comment(
    recorded: &mut Recorded,
    change: &ChangeKey,
    mut comment: Comment,
    write: RecordedWrite,
) -> Comment {
    comment.id = format!("recorded-{}", recorded.added.len() + 1);
    if comment.kind == CommentKind::Review && comment.thread_id.is_none() {
        comment.thread_id = Some(comment.id.clone());
    }
    recorded.writes.push(write);
    recorded.added.push((change.clone(), comment.clone()));
    comment
}

#[async_trait]
impl ForgeLayer for RecordingForge<'_> {
    fn inner(&self) -> &dyn Forge {
        self.inner
    }

    fn publishes(&self) -> bool {
        false
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

    /// Every write is recorded and never made; a comment or reply is given the id it will have
    /// in this run's later reads.
    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        let bot = self.inner.bot_login();
        let mut recorded = self.lock();
        Ok(match write {
            Write::AddComment {
                change,
                body,
                anchor,
            } => {
                let comment = Comment {
                    kind: if anchor.is_some() {
                        CommentKind::Review
                    } else {
                        CommentKind::Issue
                    },
                    path: anchor.map(|a| a.path.clone()),
                    line: anchor.map(|a| a.line),
                    ..bots(bot, body)
                };
                let write = RecordedWrite::AddComment {
                    change: change.clone(),
                    body: body.to_owned(),
                    anchor: anchor.cloned(),
                };
                Written::Comment(record_comment(&mut recorded, change, comment, write))
            }
            Write::Reply { change, to, body } => {
                let comment = Comment {
                    kind: to.kind,
                    in_reply_to: Some(to.id.clone()),
                    thread_id: to.thread_id.clone(),
                    path: to.path.clone(),
                    line: to.line,
                    thread_resolved: to.thread_resolved,
                    ..bots(bot, body)
                };
                let write = RecordedWrite::Reply {
                    change: change.clone(),
                    to: to.id.clone(),
                    body: body.to_owned(),
                };
                Written::Comment(record_comment(&mut recorded, change, comment, write))
            }
            Write::UpdateComment {
                change,
                comment,
                body,
            } => {
                recorded.edited.push((comment.id.clone(), body.to_owned()));
                recorded.done(RecordedWrite::UpdateComment {
                    change: change.clone(),
                    comment: comment.id.clone(),
                    body: body.to_owned(),
                })
            }
            // A dry run deletes nothing, and a duplicate it would delete is its own record's.
            Write::DeleteComment { .. } => Written::Deleted(false),
            Write::SetThreadResolved {
                change,
                thread,
                resolved,
            } => {
                recorded.resolved.push((thread.to_owned(), resolved));
                recorded.done(RecordedWrite::SetThreadResolved {
                    change: change.clone(),
                    thread: thread.to_owned(),
                    resolved,
                })
            }
            Write::SetDescription { change, body } => {
                let description = (change.clone(), body.to_owned());
                recorded.descriptions.push(description);
                recorded.done(RecordedWrite::SetDescription {
                    change: change.clone(),
                    body: body.to_owned(),
                })
            }
        })
    }
}
