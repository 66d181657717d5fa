//! A forge that refuses a line comment's anchor (GitHub's 422 for a line outside its view of the
//! diff): the finding is published in the conversation instead, never lost, and the run goes on.

use std::sync::Arc;

use async_trait::async_trait;
use bugloop_domain::thread::{Comment, CommentKind};
use bugloop_forge::local::LocalForge;
use bugloop_forge::{Forge, ForgeError, ForgeLayer, Write, Written};
use bugloop_git::Git;
use bugloop_report::review::Placement;

use crate::support::{self, Repo, off_by_one, review_on, session};

/// The local forge, except that every line comment is refused as GitHub refuses one.
#[derive(Debug)]
struct RefusesLines<'a>(&'a LocalForge);

#[async_trait]
impl ForgeLayer for RefusesLines<'_> {
    fn inner(&self) -> &dyn Forge {
        self.0
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        match write {
            Write::AddComment {
                anchor: Some(anchor),
                ..
            } => Err(ForgeError::Unprocessable(format!(
                "POST pull request review comment: Validation Failed: line {} of {} must be part of the diff",
                anchor.line, anchor.path
            ))),
            other => self.0.write(other).await,
        }
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
