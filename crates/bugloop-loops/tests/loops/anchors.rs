//! A forge that refuses a line comment's anchor (GitHub's 422 for a line outside its view of the
//! diff): the finding is published in the conversation instead, never lost, and the run goes on.

use std::sync::Arc;

use async_trait::async_trait;
use bugloop_domain::thread::{Comment, CommentKind};
use bugloop_forge::local::LocalForge;
use bugloop_forge::{Change, ChangeKey, Forge, ForgeError, LineAnchor, Permission};
use bugloop_git::Git;
use bugloop_report::review::Placement;

use crate::support::{self, Repo, off_by_one, review_on, session};

/// The local forge, except that every line comment is refused as GitHub refuses one.
#[derive(Debug)]
struct RefusesLines<'a>(&'a LocalForge);

#[async_trait]
impl Forge for RefusesLines<'_> {
    fn name(&self) -> &str {
        "refuses-lines"
    }
    fn bot_login(&self) -> &str {
        self.0.bot_login()
    }
    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        self.0.change(change).await
    }
    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        self.0.description(change).await
    }
    async fn set_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        self.0.set_description(change, body).await
    }
    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        self.0.comments(change).await
    }
    async fn add_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        match anchor {
            Some(anchor) => Err(ForgeError::Unprocessable(format!(
                "POST pull request review comment: Validation Failed: line {} of {} must be part of the diff",
                anchor.line, anchor.path
            ))),
            None => self.0.add_comment(change, body, None).await,
        }
    }
    async fn update_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        self.0.update_comment(change, comment, body).await
    }
    async fn reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.0.reply(change, to, body).await
    }
    async fn set_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        self.0
            .set_thread_resolved(change, thread_id, resolved)
            .await
    }
    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError> {
        self.0.permission(actor).await
    }

    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        self.0.own_comments_since(since).await
    }
}

#[tokio::test]
async fn a_refused_line_anchor_publishes_the_finding_in_the_conversation() {
    let repo = Repo::with_feature();
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    let script = session(vec![off_by_one(line)], vec![]);
    let local = LocalForge::open(Git::open(repo.path()).unwrap(), "bugloop")
        .await
        .unwrap();
    let forge = RefusesLines(&local);
    let (report, comments) =
        review_on(&forge, &repo, support::config(), Arc::new(script), false).await;
    assert!(report.complete, "{:?}", report.errors);
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].placement, Placement::Summary);
    let id = report.findings[0].finding.id.as_str();
    let published: Vec<&Comment> = comments
        .iter()
        .filter(|c| c.by_bugloop && c.body.contains(id) && c.in_reply_to.is_none())
        .collect();
    assert_eq!(published.len(), 1, "{comments:#?}");
    assert_eq!(published[0].kind, CommentKind::Issue);
}
