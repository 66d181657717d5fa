//! The head is pinned when a review starts: when the branch moves while the model works (a push
//! during the review), nothing is published for the old head, the report says why and is
//! incomplete, and the next review publishes on the new head, each finding once.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bugloop_domain::thread::Comment;
use bugloop_llm::scripted::ScriptedProvider;
use bugloop_llm::{Capabilities, ChatRequest, ChatResult, Provider, Sink};

use crate::support::{self, Repo, off_by_one, review_branch, session};

/// The scripted model, and a developer who pushes to the branch while it answers the first call.
#[derive(Debug)]
struct PushDuringReview {
    model: ScriptedProvider,
    repo: PathBuf,
    pushed: AtomicBool,
}

#[async_trait]
impl Provider for PushDuringReview {
    fn name(&self) -> &str {
        self.model.name()
    }
    fn capabilities(&self) -> Capabilities {
        self.model.capabilities()
    }
    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        if !self.pushed.swap(true, Ordering::SeqCst) {
            std::fs::write(self.repo.join("NOTES.md"), "pushed during the review\n").unwrap();
            bugloop_testkit::git(&self.repo, &["add", "NOTES.md"]);
            bugloop_testkit::git(&self.repo, &["commit", "-qm", "a push during the review"]);
        }
        self.model.chat(request, sink).await
    }
}

/// bugloop's own top-level comments: findings and the summary.
fn bugloops(comments: &[Comment]) -> Vec<&Comment> {
    comments
        .iter()
        .filter(|c| c.by_bugloop && c.in_reply_to.is_none())
        .collect()
}

#[tokio::test]
async fn a_push_during_the_review_publishes_nothing_for_the_old_head() {
    let repo = Repo::with_feature();
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    let model = Arc::new(PushDuringReview {
        model: session(vec![off_by_one(line)], vec![]),
        repo: repo.path().to_path_buf(),
        pushed: AtomicBool::new(false),
    });
    let (report, comments) = review_branch(&repo, support::config(), model, false).await;
    assert!(!report.complete);
    assert!(
        report.errors.iter().any(|e| e.contains("head moved")),
        "{:?}",
        report.errors
    );
    assert!(bugloops(&comments).is_empty(), "{comments:#?}");
    assert_eq!(report.findings.len(), 1, "the finding is in the report");

    // The next review, on the new head, publishes it, once; and a review after it adds nothing.
    let (again, comments) = review_branch(
        &repo,
        support::config(),
        Arc::new(session(vec![off_by_one(line)], vec![])),
        false,
    )
    .await;
    assert!(again.complete, "{:?}", again.errors);
    let findings: Vec<_> = bugloops(&comments)
        .into_iter()
        .filter(|c| c.line.is_some())
        .collect();
    assert_eq!(findings.len(), 1, "{comments:#?}");
}
