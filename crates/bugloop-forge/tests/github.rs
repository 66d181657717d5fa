//! The GitHub forge against a local server: one conversation from GitHub's two kinds of comments
//! and its review threads, a refused line tried again on the file and then refused, a create
//! that may have happened found by looking (never written twice), and permissions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bugloop_domain::thread::CommentKind;
use bugloop_forge::github::GitHubForge;
use bugloop_forge::{Forge, ForgeError, LineAnchor, Permission};
use bugloop_github::{Endpoint, GitHubClient, Policy, Repo};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BOT: &str = "bugloop-app[bot]";

fn forge(server: &MockServer) -> GitHubForge {
    let client = GitHubClient::new(
        Endpoint::from_values(Some(&server.uri()), None),
        "t0ken".to_owned(),
        Policy {
            write_spacing: Duration::ZERO,
            ..Policy::default()
        },
    )
    .unwrap();
    GitHubForge::new(client, Repo::parse("octo/hello").unwrap(), BOT, None)
}

fn issue_comment(id: u64, login: &str, body: &str) -> Value {
    json!({"id": id, "body": body, "user": {"login": login}, "created_at": "2026-11-20T10:00:00Z"})
}

fn review_comment(id: u64, login: &str, body: &str, reply_to: Option<u64>) -> Value {
    json!({"id": id, "body": body, "user": {"login": login}, "created_at": "2026-11-20T10:00:00Z",
           "path": "src/lib.rs", "line": 12, "commit_id": "abc", "in_reply_to_id": reply_to})
}

async fn listings(server: &MockServer, issue: Vec<Value>, review: Vec<Value>, threads: Vec<Value>) {
    Mock::given(method("GET"))
        .and(path("/repos/octo/hello/issues/7/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(issue))
        .mount(server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .respond_with(ResponseTemplate::new(200).set_body_json(review))
        .mount(server)
        .await;
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(body_partial_json(json!({"operationName": "ReviewThreads"})))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"data": {"repository": {
            "pullRequest": {"reviewThreads": {"nodes": threads,
                "pageInfo": {"hasNextPage": false, "endCursor": null}}}}}})),
        )
        .mount(server)
        .await;
}

fn change() -> bugloop_forge::ChangeKey {
    GitHubForge::change_key(&Repo::parse("octo/hello").unwrap(), 7)
}

#[tokio::test]
async fn one_conversation_from_both_kinds_of_comments_and_the_threads() {
    let server = MockServer::start().await;
    let big = 3_000_000_000_u64;
    listings(
        &server,
        vec![
            issue_comment(big + 1, BOT, "<!-- bugloop:summary -->"),
            issue_comment(big + 2, "dev", "<!-- bugloop:reply-to issue-1 -->\nforged"),
            issue_comment(
                big + 3,
                BOT,
                &format!("<!-- bugloop:reply-to issue-{} -->\nanswer", big + 2),
            ),
        ],
        vec![
            review_comment(big + 1, BOT, "a finding", None),
            review_comment(big + 5, "dev", "this is intended", Some(big + 1)),
        ],
        vec![
            json!({"id": "PRRT_1", "isResolved": true, "isOutdated": false, "path": "src/lib.rs",
                    "line": 12, "comments": {"nodes": [{"fullDatabaseId": (big + 1).to_string()}]}}),
        ],
    )
    .await;
    let forge = forge(&server);
    let comments = forge.comments(&change()).await.unwrap();
    let by_id = |id: &str| comments.iter().find(|c| c.id == id).unwrap();
    // The same number in two kinds is two comments.
    assert_eq!(by_id("issue-3000000001").kind, CommentKind::Issue);
    assert_eq!(by_id("review-3000000001").kind, CommentKind::Review);
    assert!(by_id("issue-3000000001").by_bugloop);
    // A reply joins its root's thread, with the thread's resolved flag.
    let reply = by_id("review-3000000005");
    assert_eq!(reply.in_reply_to.as_deref(), Some("review-3000000001"));
    assert_eq!(reply.thread_id.as_deref(), Some("PRRT_1"));
    assert!(reply.thread_resolved && !reply.by_bugloop);
    // bugloop's reference to a conversation comment is read; anyone else's is text.
    assert_eq!(
        by_id("issue-3000000003").in_reply_to.as_deref(),
        Some("issue-3000000002")
    );
    assert_eq!(by_id("issue-3000000002").in_reply_to, None);
    // Someone else's comment is never edited.
    let error = forge
        .update_comment(&change(), by_id("review-3000000005"), "x")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("only edits its own"), "{error}");
}

#[tokio::test]
async fn a_refused_line_is_tried_on_the_file_then_refused() {
    let server = MockServer::start().await;
    let refused = ResponseTemplate::new(422).set_body_json(json!({"message": "Validation Failed",
        "errors": [{"message": "pull_request_review_thread.line must be part of the diff"}]}));
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .and(body_partial_json(
            json!({"line": 40, "start_line": 38, "side": "RIGHT"}),
        ))
        .respond_with(refused.clone())
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .and(body_partial_json(json!({"subject_type": "file"})))
        .respond_with(refused)
        .expect(1)
        .mount(&server)
        .await;
    let anchor = LineAnchor {
        path: "src/lib.rs".to_owned(),
        line: 38,
        end_line: Some(40),
        commit: "abc".to_owned(),
    };
    let error = forge(&server)
        .add_comment(&change(), "a finding", Some(&anchor))
        .await
        .unwrap_err();
    assert!(error.refuses_anchor(), "{error:?}");
    server.verify().await;
}

#[tokio::test]
async fn a_create_that_may_have_happened_is_looked_for_not_written_twice() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/issues/7/comments"))
        .respond_with(ResponseTemplate::new(502))
        .expect(2)
        .mount(&server)
        .await;
    // It was written: the listing shows it.
    listings(
        &server,
        vec![issue_comment(3_000_000_009, BOT, "the summary")],
        vec![],
        vec![],
    )
    .await;
    let forge = forge(&server);
    let written = forge
        .add_comment(&change(), "the summary", None)
        .await
        .unwrap();
    assert_eq!(written.id, "issue-3000000009");
    // Not in the listing: reported as ambiguous, and not sent a second time.
    let error = forge
        .add_comment(&change(), "another", None)
        .await
        .unwrap_err();
    assert!(matches!(error, ForgeError::Ambiguous(_)), "{error:?}");
    server.verify().await;
}

#[tokio::test]
async fn permission_comes_from_the_collaborator_endpoint() {
    let server = MockServer::start().await;
    for (user, permission, role) in [
        ("writer", "write", "maintain"),
        ("reader", "read", "triage"),
        ("owner", "admin", "admin"),
    ] {
        Mock::given(method("GET"))
            .and(path(format!(
                "/repos/octo/hello/collaborators/{user}/permission"
            )))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"permission": permission, "role_name": role})),
            )
            .mount(&server)
            .await;
    }
    Mock::given(method("GET"))
        .and(path("/repos/octo/hello/collaborators/stranger/permission"))
        .respond_with(ResponseTemplate::new(404).set_body_json(json!({"message": "Not Found"})))
        .mount(&server)
        .await;
    let forge = forge(&server);
    assert_eq!(forge.permission("writer").await.unwrap(), Permission::Write);
    assert_eq!(forge.permission("reader").await.unwrap(), Permission::Read);
    assert_eq!(forge.permission("owner").await.unwrap(), Permission::Admin);
    assert_eq!(
        forge.permission("stranger").await.unwrap(),
        Permission::None
    );
}

/// A body over GitHub's limit is cut to fit, keeping the marker and state at its end, and the
/// cut is said: the comment is written, not refused.
#[tokio::test]
async fn a_body_over_githubs_limit_is_cut_with_its_marker_intact() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/issues/7/comments"))
        .respond_with(ResponseTemplate::new(201).set_body_json(issue_comment(
            3_000_000_020,
            BOT,
            "x",
        )))
        .mount(&server)
        .await;
    let marker = "<!-- bugloop finding_id:\"a\" resolved:false -->\n";
    let body = format!("### A bug\n\n{}\n\n{marker}", "word ".repeat(20_000));
    forge(&server)
        .add_comment(&change(), &body, None)
        .await
        .unwrap();
    let sent = &server.received_requests().await.unwrap()[0];
    let sent: Value = serde_json::from_slice(&sent.body).unwrap();
    let text = sent["body"].as_str().unwrap();
    assert!(text.chars().count() <= bugloop_github::MAX_BODY_CHARS);
    assert!(
        text.ends_with(marker) && text.contains("cut here"),
        "{}",
        &text[text.len() - 200..]
    );
}
