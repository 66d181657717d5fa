//! Writes as data, and forges that wrap forges. Every write bugloop makes is a [`Write`], made
//! through [`Forge::write`]; a policy layer (the server's fence, signatures where the login is
//! shared, a comment's answer mark, a dry run's record) is a [`ForgeLayer`] that states only what
//! it changes: the write, the comments it reads, a limit. Everything else reaches the forge it
//! wraps through the one implementation below, so a forge method added later needs no line in any
//! layer, and a write added later passes every layer's `write` (a fence cannot miss it).

use async_trait::async_trait;
use bugloop_domain::thread::Comment;

use crate::{Change, ChangeKey, CommentRef, Forge, ForgeError, LineAnchor, Permission};

/// One write bugloop makes, as the bot.
#[derive(Debug, Clone, Copy)]
pub enum Write<'a> {
    /// A comment: on a line when `anchor` is given, else on the conversation.
    AddComment {
        change: &'a ChangeKey,
        body: &'a str,
        anchor: Option<&'a LineAnchor>,
    },
    /// A new body for one of the bot's comments.
    UpdateComment {
        change: &'a ChangeKey,
        comment: &'a Comment,
        body: &'a str,
    },
    /// A reply in the thread of `to`.
    Reply {
        change: &'a ChangeKey,
        to: &'a Comment,
        body: &'a str,
    },
    /// One of the bot's own comments deleted.
    DeleteComment {
        change: &'a ChangeKey,
        comment: &'a Comment,
    },
    /// A thread resolved or unresolved.
    SetThreadResolved {
        change: &'a ChangeKey,
        thread: &'a str,
        resolved: bool,
    },
    /// The change's description replaced.
    SetDescription {
        change: &'a ChangeKey,
        body: &'a str,
    },
}

impl<'a> Write<'a> {
    /// The conversation it writes to.
    pub fn change(&self) -> &'a ChangeKey {
        match *self {
            Write::AddComment { change, .. }
            | Write::UpdateComment { change, .. }
            | Write::Reply { change, .. }
            | Write::DeleteComment { change, .. }
            | Write::SetThreadResolved { change, .. }
            | Write::SetDescription { change, .. } => change,
        }
    }

    /// What it does, in words, for errors.
    pub fn what(&self) -> &'static str {
        match self {
            Write::AddComment { .. } => "adding a comment",
            Write::UpdateComment { .. } => "updating a comment",
            Write::Reply { .. } => "replying",
            Write::DeleteComment { .. } => "deleting a comment",
            Write::SetThreadResolved { .. } => "setting a thread's resolved flag",
            Write::SetDescription { .. } => "setting the description",
        }
    }

    /// The same write with another body (a write without one is returned as it is).
    pub fn with_body<'b>(&self, body: &'b str) -> Write<'b>
    where
        'a: 'b,
    {
        match *self {
            Write::AddComment { change, anchor, .. } => Write::AddComment {
                change,
                body,
                anchor,
            },
            Write::UpdateComment {
                change, comment, ..
            } => Write::UpdateComment {
                change,
                comment,
                body,
            },
            Write::Reply { change, to, .. } => Write::Reply { change, to, body },
            Write::SetDescription { change, .. } => Write::SetDescription { change, body },
            // Listed, not matched by a wildcard: a write with a body added later must say here
            // how its body is replaced, or a layer's signed or marked body would not be sent.
            Write::DeleteComment { .. } | Write::SetThreadResolved { .. } => *self,
        }
    }

    /// The body it writes, if it writes one.
    pub fn body(&self) -> Option<&'a str> {
        match *self {
            Write::AddComment { body, .. }
            | Write::UpdateComment { body, .. }
            | Write::Reply { body, .. }
            | Write::SetDescription { body, .. } => Some(body),
            Write::DeleteComment { .. } | Write::SetThreadResolved { .. } => None,
        }
    }
}

/// What a write gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The comment or reply as the forge stored it.
    Comment(Comment),
    /// Whether a comment was deleted (`false` where the forge does not delete).
    Deleted(bool),
    /// Done, with nothing to tell.
    Done,
}

impl Written {
    /// The write was made, but its answer is not what it should be: whether it took effect is
    /// not known, so a caller looks before writing again.
    fn mismatch(&self, write: Write<'_>) -> ForgeError {
        ForgeError::Ambiguous(format!("the forge answered {} with {self:?}", write.what()))
    }

    /// The comment a comment or reply wrote.
    pub fn comment(self, write: Write<'_>) -> Result<Comment, ForgeError> {
        match self {
            Written::Comment(comment) => Ok(comment),
            other => Err(other.mismatch(write)),
        }
    }

    /// Whether a deletion deleted.
    pub fn deleted(self, write: Write<'_>) -> Result<bool, ForgeError> {
        match self {
            Written::Deleted(deleted) => Ok(deleted),
            other => Err(other.mismatch(write)),
        }
    }

    /// That a write with nothing to tell was made.
    pub fn done(self, write: Write<'_>) -> Result<(), ForgeError> {
        match self {
            Written::Done => Ok(()),
            other => Err(other.mismatch(write)),
        }
    }
}

/// A base forge's own writes, one method each; [`dispatch`] is its [`Forge::write`].
#[async_trait]
pub(crate) trait WriteOps: Sync {
    async fn post_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError>;

    async fn edit_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError>;

    async fn post_reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError>;

    /// Whether one of the bot's comments was deleted; a forge that does not delete (the local
    /// store, which one process writes) deletes nothing.
    async fn remove_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
    ) -> Result<bool, ForgeError> {
        let _ = (change, comment);
        Ok(false)
    }

    async fn mark_thread_resolved(
        &self,
        change: &ChangeKey,
        thread: &str,
        resolved: bool,
    ) -> Result<(), ForgeError>;

    async fn write_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError>;
}

/// `write` made with `ops`' own methods.
pub(crate) async fn dispatch(
    ops: &(impl WriteOps + ?Sized),
    write: Write<'_>,
) -> Result<Written, ForgeError> {
    Ok(match write {
        Write::AddComment {
            change,
            body,
            anchor,
        } => Written::Comment(ops.post_comment(change, body, anchor).await?),
        Write::UpdateComment {
            change,
            comment,
            body,
        } => {
            ops.edit_comment(change, comment, body).await?;
            Written::Done
        }
        Write::Reply { change, to, body } => {
            Written::Comment(ops.post_reply(change, to, body).await?)
        }
        Write::DeleteComment { change, comment } => {
            Written::Deleted(ops.remove_comment(change, comment).await?)
        }
        Write::SetThreadResolved {
            change,
            thread,
            resolved,
        } => {
            ops.mark_thread_resolved(change, thread, resolved).await?;
            Written::Done
        }
        Write::SetDescription { change, body } => {
            ops.write_description(change, body).await?;
            Written::Done
        }
    })
}

/// A forge wrapping another and changing part of what it does; what it does not change goes to
/// [`ForgeLayer::inner`]. Every layer is a [`Forge`] through the one implementation below, which
/// forwards every [`Forge`] method but the words for a write (`add_comment`, ...,
/// `upsert_by_marker`), which go through the layer's `write`; a test holds that. A layer that
/// refuses writes overrides `write`: its default lets them through.
#[async_trait]
pub trait ForgeLayer: Send + Sync + std::fmt::Debug {
    /// The forge it wraps.
    fn inner(&self) -> &dyn Forge;

    /// Every write, before (or instead of) the inner forge's.
    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        self.inner().write(write).await
    }

    /// Every comment the default `comments` and `comment_by_id` read from the inner forge
    /// passes here. Not what a write returns, nor `own_comments_since`, nor a listing a layer
    /// makes itself: a layer that must see those overrides `write` or the read.
    fn read(&self, change: &ChangeKey, comment: Comment) -> Comment {
        let _ = change;
        comment
    }

    fn max_body_chars(&self) -> Option<usize> {
        self.inner().max_body_chars()
    }

    fn publishes(&self) -> bool {
        self.inner().publishes()
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        self.inner().may_push()
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        Ok(self
            .inner()
            .comments(change)
            .await?
            .into_iter()
            .map(|comment| self.read(change, comment))
            .collect())
    }

    async fn comment_by_id(
        &self,
        change: &ChangeKey,
        comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        Ok(self
            .inner()
            .comment_by_id(change, comment)
            .await?
            .map(|comment| self.read(change, comment)))
    }

    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner().description(change).await
    }

    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        self.inner().own_comments_since(since).await
    }
}

/// A layer's forge: what it changes, else the inner forge's. The only forwarding in the crate.
#[async_trait]
impl<L: ForgeLayer> Forge for L {
    fn name(&self) -> &str {
        self.inner().name()
    }

    fn bot_login(&self) -> &str {
        self.inner().bot_login()
    }

    fn max_body_chars(&self) -> Option<usize> {
        ForgeLayer::max_body_chars(self)
    }

    fn publishes(&self) -> bool {
        ForgeLayer::publishes(self)
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        ForgeLayer::may_push(self)
    }

    async fn comment_by_id(
        &self,
        change: &ChangeKey,
        comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        ForgeLayer::comment_by_id(self, change, comment).await
    }

    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        self.inner().change(change).await
    }

    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner().head(change).await
    }

    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        ForgeLayer::description(self, change).await
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        ForgeLayer::comments(self, change).await
    }

    fn forget_listings(&self) {
        self.inner().forget_listings();
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        ForgeLayer::write(self, write).await
    }

    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError> {
        self.inner().permission(actor).await
    }

    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        ForgeLayer::own_comments_since(self, since).await
    }

    async fn change_author(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner().change_author(change).await
    }

    async fn human_reviewers(&self, change: &ChangeKey) -> Result<Vec<String>, ForgeError> {
        self.inner().human_reviewers(change).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::fencing::{Fence, FencedForge};
    use crate::recording::RecordingForge;

    /// A forge that counts the writes that reach it, and keeps the bodies they carry.
    #[derive(Debug, Default)]
    struct Counting {
        writes: AtomicUsize,
        bodies: std::sync::Mutex<Vec<String>>,
    }

    #[async_trait]
    impl Forge for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn bot_login(&self) -> &str {
            "bot"
        }
        async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
            Err(ForgeError::NotFound(change.0.clone()))
        }
        async fn description(&self, _: &ChangeKey) -> Result<Option<String>, ForgeError> {
            Ok(None)
        }
        async fn comments(&self, _: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
            Ok(Vec::new())
        }
        async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
            self.writes.fetch_add(1, Ordering::SeqCst);
            if let Some(body) = write.body() {
                self.bodies.lock().unwrap().push(body.to_owned());
            }
            Ok(match write {
                Write::AddComment { body, .. } | Write::Reply { body, .. } => {
                    Written::Comment(comment(body))
                }
                Write::DeleteComment { .. } => Written::Deleted(true),
                _ => Written::Done,
            })
        }
        async fn permission(&self, _: &str) -> Result<Permission, ForgeError> {
            Ok(Permission::Read)
        }
        async fn own_comments_since(&self, _: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
            Ok(Vec::new())
        }
    }

    fn comment(body: &str) -> Comment {
        Comment::conversation(
            "1".to_owned(),
            "bot".to_owned(),
            body.to_owned(),
            jiff::Timestamp::UNIX_EPOCH,
            true,
        )
    }

    /// One write of every kind. The match has no wildcard: a kind added later does not compile
    /// until it is listed here, and so is checked against every layer below.
    fn every_write<'a>(change: &'a ChangeKey, comment: &'a Comment) -> Vec<Write<'a>> {
        let all = vec![
            Write::AddComment {
                change,
                body: "b",
                anchor: None,
            },
            Write::UpdateComment {
                change,
                comment,
                body: "b",
            },
            Write::Reply {
                change,
                to: comment,
                body: "b",
            },
            Write::DeleteComment { change, comment },
            Write::SetThreadResolved {
                change,
                thread: "t",
                resolved: true,
            },
            Write::SetDescription { change, body: "b" },
        ];
        let mut kinds = std::collections::BTreeSet::new();
        for write in &all {
            kinds.insert(match write {
                Write::AddComment { .. } => 0,
                Write::UpdateComment { .. } => 1,
                Write::Reply { .. } => 2,
                Write::DeleteComment { .. } => 3,
                Write::SetThreadResolved { .. } => 4,
                Write::SetDescription { .. } => 5,
            });
        }
        assert_eq!(kinds.len(), 6, "every kind of write, once");
        all
    }

    #[tokio::test]
    async fn a_lost_lease_and_a_dry_run_let_no_write_of_any_kind_through() {
        let change = ChangeKey("github:o/r#1".to_owned());
        let written = comment("x");
        let base = Arc::new(Counting::default());
        let fenced = FencedForge::new(base.clone(), Fence::new(|| false));
        let recording = RecordingForge::new(&*base);
        for write in every_write(&change, &written) {
            let refused = Forge::write(&fenced, write).await;
            assert!(
                matches!(refused, Err(ForgeError::Forbidden(_))),
                "{}: {refused:?}",
                write.what()
            );
            Forge::write(&recording, write).await.unwrap();
        }
        assert!(Forge::may_push(&fenced).is_err());
        assert_eq!(base.writes.load(Ordering::SeqCst), 0);
        assert_eq!(
            recording.writes().len(),
            5,
            "every write but a deletion is recorded"
        );
        // An open fence lets each through, once.
        let open = FencedForge::new(base.clone(), Fence::new(|| true));
        for write in every_write(&change, &written) {
            Forge::write(&open, write).await.unwrap();
        }
        assert_eq!(base.writes.load(Ordering::SeqCst), 6);
    }

    #[tokio::test]
    async fn the_words_for_a_write_refuse_an_answer_of_the_wrong_kind() {
        #[derive(Debug)]
        struct Wrong(Counting);
        #[async_trait]
        impl ForgeLayer for Wrong {
            fn inner(&self) -> &dyn Forge {
                &self.0
            }
            async fn write(&self, _: Write<'_>) -> Result<Written, ForgeError> {
                Ok(Written::Deleted(true))
            }
        }
        let forge = Wrong(Counting::default());
        let change = ChangeKey("c".to_owned());
        let error = forge.add_comment(&change, "b", None).await.unwrap_err();
        assert!(error.to_string().contains("adding a comment"), "{error}");
        // What a layer does not change is the inner forge's.
        assert_eq!(forge.name(), "counting");
        assert!(forge.delete_comment(&change, &comment("x")).await.unwrap());
    }

    #[tokio::test]
    async fn signatures_and_answer_marks_go_on_the_bodies_they_always_went_on() {
        let change = ChangeKey("github:o/r#1".to_owned());
        let written = comment("x");
        let base = Arc::new(Counting::default());
        let key = crate::signing::StateKey::new(vec![7; 32]).unwrap();
        let signing = crate::signing::SigningForge::new(base.clone(), key);
        let answering = crate::answering::AnsweringForge::new(&*base, "issue-9", false);
        for write in every_write(&change, &written) {
            Forge::write(&signing, write).await.unwrap();
            Forge::write(&answering, write).await.unwrap();
        }
        let bodies = base.bodies.lock().unwrap().clone();
        let marks: Vec<(bool, bool)> = bodies
            .iter()
            .map(|body| {
                (
                    body.contains("<!-- bugloop:sig v1 "),
                    body.contains("<!-- bugloop:answers issue-9 -->"),
                )
            })
            .collect();
        // In order, signed then marked: a comment, an edit, a reply, the description.
        assert_eq!(
            marks,
            [
                (true, false),
                (false, true),
                (true, false),
                (false, false),
                (true, false),
                (false, true),
                (false, false),
                (false, false),
            ]
        );
    }

    /// The names of the `fn`s declared at one indent in the block that starts with `header`.
    fn methods_in(text: &str, header: &str) -> std::collections::BTreeSet<String> {
        let start = text.find(header).unwrap();
        let block = &text[start..start + text[start..].find("\n}\n").unwrap()];
        block
            .lines()
            .filter_map(|line| {
                let rest = line
                    .strip_prefix("    async fn ")
                    .or_else(|| line.strip_prefix("    fn "))?;
                Some(rest[..rest.find(['(', '<'])?].to_owned())
            })
            .collect()
    }

    #[test]
    fn the_shared_implementation_forwards_every_forge_method_but_the_words_for_a_write() {
        let words = [
            "add_comment",
            "update_comment",
            "reply",
            "delete_comment",
            "set_thread_resolved",
            "set_description",
            "upsert_by_marker",
        ];
        let forge = methods_in(include_str!("lib.rs"), "pub trait Forge:");
        let forwarded = methods_in(
            include_str!("layer.rs"),
            "impl<L: ForgeLayer> Forge for L {",
        );
        let expected: std::collections::BTreeSet<String> = forge
            .iter()
            .filter(|name| !words.contains(&name.as_str()))
            .cloned()
            .collect();
        assert!(forge.len() > expected.len() + 6, "{forge:?}");
        assert_eq!(
            forwarded, expected,
            "a Forge method the shared implementation leaves to its default answers for every layer"
        );
    }
}
