//! A forge that writes only while a job still holds its lease: the App server's worker whose
//! lease ran out (it stalled, or another worker took the job over) must not write to GitHub any
//! more. Reads pass through; every write asks the fence first.

use std::sync::Arc;

use async_trait::async_trait;
use bugloop_domain::thread::Comment;

use crate::{Change, ChangeKey, CommentRef, Forge, ForgeError, LineAnchor, Permission};

/// Whether the job may still write (cheap: asked before every write).
pub type Fence = Arc<dyn Fn() -> bool + Send + Sync>;

pub struct FencedForge {
    inner: Arc<dyn Forge>,
    fence: Fence,
}

impl std::fmt::Debug for FencedForge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedForge")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl FencedForge {
    pub fn new(inner: Arc<dyn Forge>, fence: Fence) -> Self {
        FencedForge { inner, fence }
    }

    fn may_write(&self) -> Result<(), ForgeError> {
        if (self.fence)() {
            Ok(())
        } else {
            Err(ForgeError::Forbidden(
                "this job's lease was lost (another worker owns the job now); nothing more is \
                 written"
                    .to_owned(),
            ))
        }
    }
}

#[async_trait]
impl Forge for FencedForge {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn bot_login(&self) -> &str {
        self.inner.bot_login()
    }

    fn max_body_chars(&self) -> Option<usize> {
        self.inner.max_body_chars()
    }

    fn publishes(&self) -> bool {
        self.inner.publishes()
    }

    fn may_push(&self) -> Result<(), ForgeError> {
        self.may_write()?;
        self.inner.may_push()
    }

    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        self.inner.change(change).await
    }

    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner.head(change).await
    }

    async fn comment_by_id(
        &self,
        change: &ChangeKey,
        comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        self.inner.comment_by_id(change, comment).await
    }

    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.inner.description(change).await
    }

    async fn set_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        self.may_write()?;
        self.inner.set_description(change, body).await
    }

    fn forget_listings(&self) {
        self.inner.forget_listings();
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        self.inner.comments(change).await
    }

    async fn add_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        self.may_write()?;
        self.inner.add_comment(change, body, anchor).await
    }

    async fn update_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        self.may_write()?;
        self.inner.update_comment(change, comment, body).await
    }

    async fn reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.may_write()?;
        self.inner.reply(change, to, body).await
    }

    async fn delete_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
    ) -> Result<bool, ForgeError> {
        self.may_write()?;
        self.inner.delete_comment(change, comment).await
    }

    async fn set_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        self.may_write()?;
        self.inner
            .set_thread_resolved(change, thread_id, resolved)
            .await
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
