//! The simulator driven by bugloop's real client: what it answers is what the client reads.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bugloop_github::{
    Endpoint, GitHubClient, GitHubError, NewReviewComment, Policy, PullRequestSide, Repo, Sleeper,
};

use super::*;

#[derive(Debug, Default)]
struct Waits(Mutex<Vec<Duration>>);

impl Sleeper for Waits {
    fn sleep(&self, duration: Duration) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,5 @@\n a\n+b\n+c\n d\n e\n";

async fn setup() -> (Simulator, GitHubClient, Arc<Waits>) {
    let sim = Simulator::start("acme/widgets").await.unwrap();
    sim.add_token("t-bot", "github-actions[bot]");
    sim.add_pull_request(PullSpec {
        number: 7,
        title: "Add b and c".to_owned(),
        author: "alice".to_owned(),
        base_ref: "main".to_owned(),
        base_sha: "b".repeat(40),
        head_ref: "feature".to_owned(),
        head_sha: "a".repeat(40),
        fork: false,
        draft: false,
        diff: Some(DIFF.to_owned()),
    });
    let waits = Arc::new(Waits::default());
    let policy = Policy {
        write_spacing: Duration::ZERO,
        ..Policy::default()
    };
    let client = GitHubClient::with_sleeper(
        Endpoint::from_values(Some(&sim.api_url()), Some(&sim.graphql_url())),
        "t-bot".to_owned(),
        policy,
        waits.clone(),
    )
    .unwrap();
    (sim, client, waits)
}

fn repo() -> Repo {
    Repo::parse("acme/widgets").unwrap()
}

fn line_comment(line: Option<u32>) -> NewReviewComment {
    NewReviewComment {
        body: "finding".to_owned(),
        commit_id: "a".repeat(40),
        path: "src/lib.rs".to_owned(),
        line,
        start_line: None,
        side: PullRequestSide::Right,
    }
}

#[tokio::test]
async fn comments_threads_and_edits_round_trip_with_ids_above_two_to_the_32() {
    let (sim, client, _) = setup().await;
    let pull = client.pull_request(&repo(), 7).await.unwrap();
    assert_eq!(pull.head.sha, "a".repeat(40));
    assert_eq!(pull.base.branch, "main");
    let issue = client
        .create_issue_comment(&repo(), 7, "summary")
        .await
        .unwrap();
    assert!(issue.id > 1 << 32);
    assert_eq!(issue.user.unwrap().login, "github-actions[bot]");
    client
        .update_issue_comment(&repo(), issue.id, "summary v2")
        .await
        .unwrap();
    let review = client
        .create_review_comment(&repo(), 7, &line_comment(Some(2)))
        .await
        .unwrap();
    assert!(review.id > 1 << 32 && review.id != issue.id);
    let person = sim.reply_as(7, "alice", review.id, "not a bug").unwrap();
    let reply = client
        .reply_to_review_comment(&repo(), 7, person, "it is")
        .await
        .unwrap();
    // A reply to a reply joins the root's thread.
    assert_eq!(reply.in_reply_to_id, Some(review.id));
    let threads = client.review_threads(&repo(), 7).await.unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].first_comment, Some(review.id));
    client
        .set_thread_resolved(&threads[0].id, true)
        .await
        .unwrap();
    assert!(sim.threads(7)[0].resolved);
    // REST and GraphQL budgets are told apart.
    assert!(client.graphql_rate_limit().is_some() && client.rate_limit().is_some());
    let listed = client.issue_comments(&repo(), 7).await.unwrap();
    assert_eq!(listed[0].body.as_deref(), Some("summary v2"));
    assert_eq!(client.review_comments(&repo(), 7).await.unwrap().len(), 3);
    // Someone else's comment is not the bot's to edit.
    let theirs = sim.comment_as(7, "alice", "hello");
    let refused = client.update_issue_comment(&repo(), theirs, "x").await;
    assert!(
        matches!(refused, Err(GitHubError::Forbidden { .. })),
        "{refused:?}"
    );
}

#[tokio::test]
async fn lines_outside_the_diff_are_refused_and_files_are_not() {
    let (sim, client, _) = setup().await;
    let outside = client
        .create_review_comment(&repo(), 7, &line_comment(Some(40)))
        .await;
    assert!(
        matches!(outside, Err(GitHubError::Unprocessable { .. })),
        "{outside:?}"
    );
    sim.inject(Fault::RefuseAnchor {
        path: "src/lib.rs".to_owned(),
        line: 3,
    });
    assert!(
        client
            .create_review_comment(&repo(), 7, &line_comment(Some(3)))
            .await
            .is_err()
    );
    let file = client
        .create_review_comment(&repo(), 7, &line_comment(None))
        .await
        .unwrap();
    assert_eq!(file.line, None);
    let long = "x".repeat(MAX_BODY_CHARS + 1);
    // The client refuses it before sending; the simulator would too.
    assert!(
        client
            .create_issue_comment(&repo(), 7, &long)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn listings_page_by_link_and_answer_304_when_unchanged() {
    let (sim, client, _) = setup().await;
    for i in 0..250 {
        sim.comment_as(7, "alice", &format!("comment {i}"));
    }
    let all = client.issue_comments(&repo(), 7).await.unwrap();
    assert_eq!(all.len(), 250);
    assert_eq!(all[249].body.as_deref(), Some("comment 249"));
    sim.clear_requests();
    client.issue_comments(&repo(), 7).await.unwrap();
    let statuses: Vec<u16> = sim.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [304, 304, 304]);
    assert_eq!(client.counters().not_modified, 3);
}

#[tokio::test]
async fn a_write_that_fails_after_it_was_done_is_ambiguous_and_exists_once() {
    let (sim, client, _) = setup().await;
    sim.inject(Fault::FailAfterWrite {
        method: "POST".to_owned(),
        path_contains: "/issues/7/comments".to_owned(),
        status: 502,
    });
    let result = client.create_issue_comment(&repo(), 7, "once").await;
    assert!(
        matches!(result, Err(GitHubError::Ambiguous { .. })),
        "{result:?}"
    );
    assert_eq!(sim.issue_comments(7).len(), 1);
    // A PATCH may be retried: the fault is answered, the retry succeeds.
    let id = sim.issue_comments(7)[0].id;
    sim.inject(Fault::Fail {
        method: "PATCH".to_owned(),
        path_contains: "/issues/comments/".to_owned(),
        status: 502,
    });
    client
        .update_issue_comment(&repo(), id, "twice")
        .await
        .unwrap();
    assert_eq!(sim.issue_comments(7)[0].body, "twice");
}

#[tokio::test]
async fn a_secondary_rate_limit_is_waited_out_and_the_write_made_once() {
    let (sim, client, waits) = setup().await;
    sim.inject(Fault::SecondaryRateLimit {
        method: "POST".to_owned(),
        path_contains: "/comments".to_owned(),
        retry_after_secs: 7,
    });
    client
        .create_issue_comment(&repo(), 7, "after the wait")
        .await
        .unwrap();
    assert_eq!(*waits.0.lock().unwrap(), [Duration::from_secs(7)]);
    assert_eq!(sim.issue_comments(7).len(), 1);
}

#[tokio::test]
async fn a_lagging_listing_shows_a_new_comment_only_later() {
    let (sim, client, _) = setup().await;
    sim.inject(Fault::ListingLag {
        writes: 1,
        listings: 1,
    });
    client
        .create_review_comment(&repo(), 7, &line_comment(Some(2)))
        .await
        .unwrap();
    assert!(client.review_threads(&repo(), 7).await.unwrap().is_empty());
    assert!(client.review_comments(&repo(), 7).await.unwrap().is_empty());
    assert_eq!(client.review_comments(&repo(), 7).await.unwrap().len(), 1);
    assert_eq!(client.review_threads(&repo(), 7).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_head_moves_after_the_reads_a_test_asks_for() {
    let (sim, client, _) = setup().await;
    sim.inject(Fault::MoveHead {
        number: 7,
        after_pull_reads: 1,
        sha: "c".repeat(40),
    });
    assert_eq!(
        client.pull_request(&repo(), 7).await.unwrap().head.sha,
        "a".repeat(40)
    );
    assert_eq!(
        client.pull_request(&repo(), 7).await.unwrap().head.sha,
        "c".repeat(40)
    );
    // Comments may still refer to the earlier head.
    client
        .create_review_comment(&repo(), 7, &line_comment(Some(2)))
        .await
        .unwrap();
}

#[tokio::test]
async fn permissions_drafts_labels_and_logins() {
    let (sim, client, _) = setup().await;
    sim.set_permission("alice", "maintain");
    sim.set_permission("bob", "triage");
    let alice = client
        .collaborator_permission(&repo(), "alice")
        .await
        .unwrap();
    assert!(alice.can_write());
    let bob = client
        .collaborator_permission(&repo(), "bob")
        .await
        .unwrap();
    assert!(!bob.can_write());
    assert!(matches!(
        client.collaborator_permission(&repo(), "mallory").await,
        Err(GitHubError::NotFound { .. })
    ));
    let pull = client.pull_request(&repo(), 7).await.unwrap();
    client.set_draft(&pull.node_id, true).await.unwrap();
    assert_eq!(sim.is_draft(7), Some(true));
    client
        .add_labels(&repo(), 7, &["bugloop:solving"])
        .await
        .unwrap();
    assert_eq!(sim.labels(7), ["bugloop:solving"]);
    sim.request_reviewer(7, "carol");
    assert_eq!(
        client.requested_reviewers(&repo(), 7).await.unwrap(),
        ["carol"]
    );
    assert_eq!(client.user_login().await.unwrap(), "github-actions[bot]");
    let stranger = GitHubClient::new(
        Endpoint::from_values(Some(&sim.api_url()), None),
        "wrong".to_owned(),
        Policy::default(),
    )
    .unwrap();
    assert!(matches!(
        stranger.user_login().await,
        Err(GitHubError::Unauthorized { .. })
    ));
}

#[tokio::test]
async fn an_app_buys_installation_tokens_with_its_jwt_and_writes_as_its_bot() {
    let (sim, _, _) = setup().await;
    let pem = fixture::app_key();
    let credentials = Arc::new(bugloop_github::AppCredentials::from_pem(123, &pem).unwrap());
    sim.add_app(123, "bugloop-app", credentials.public_key_der(), &[42]);
    let client = GitHubClient::for_installation(
        Endpoint::from_values(Some(&sim.api_url()), Some(&sim.graphql_url())),
        bugloop_github::Installation {
            credentials: credentials.clone(),
            id: 42,
            clock: Arc::new(bugloop_github::SystemClock),
        },
        Policy {
            write_spacing: Duration::ZERO,
            ..Policy::default()
        },
        Arc::new(bugloop_github::TokioSleeper),
    )
    .unwrap();
    assert_eq!(client.app_bot_login().await.unwrap(), "bugloop-app[bot]");
    let written = client
        .create_issue_comment(&repo(), 7, "from the App")
        .await
        .unwrap();
    assert_eq!(written.user.unwrap().login, "bugloop-app[bot]");
    // Another installation, or another App's key, buys nothing.
    let other =
        Arc::new(bugloop_github::AppCredentials::from_pem(123, &fixture::app_key()).unwrap());
    let forged = GitHubClient::for_installation(
        Endpoint::from_values(Some(&sim.api_url()), None),
        bugloop_github::Installation {
            credentials: other,
            id: 42,
            clock: Arc::new(bugloop_github::SystemClock),
        },
        Policy::default(),
        Arc::new(bugloop_github::TokioSleeper),
    )
    .unwrap();
    assert!(forged.pull_request(&repo(), 7).await.is_err());
}
