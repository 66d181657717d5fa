//! The client against a local HTTP server: pagination, ETags, rate limits waited out (the waits
//! are recorded, never slept), creates never retried blindly, safe writes retried, GitHub's
//! refusals kept with their message, spaced writes, and GraphQL.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bugloop_github::{
    Endpoint, GitHubClient, GitHubError, NewReviewComment, Policy, PullRequestSide, Repo, Sleeper,
};
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Records what the client asked to wait for.
#[derive(Debug, Default)]
struct Waits(Mutex<Vec<Duration>>);

impl Sleeper for Waits {
    fn sleep(&self, duration: Duration) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

struct Setup {
    server: MockServer,
    client: GitHubClient,
    waits: Arc<Waits>,
}

async fn setup(write_spacing: Duration) -> Setup {
    let server = MockServer::start().await;
    let waits = Arc::new(Waits::default());
    let endpoint = Endpoint::from_values(Some(&server.uri()), None);
    let policy = Policy {
        write_spacing,
        ..Policy::default()
    };
    let client =
        GitHubClient::with_sleeper(endpoint, "t0ken".to_owned(), policy, waits.clone()).unwrap();
    Setup {
        server,
        client,
        waits,
    }
}

fn repo() -> Repo {
    Repo::parse("octo/hello").unwrap()
}

/// An issue comment as GitHub answers it; ids above 2^31.
fn comment(id: u64, body: &str) -> Value {
    json!({"id": id, "body": body, "user": {"login": "octocat", "type": "User"},
           "created_at": "2026-11-20T10:00:00Z", "node_id": "IC_x"})
}

/// Answers every `verb` request for `at` with `response` (once those mounted before have had
/// their turns).
async fn answer(s: &Setup, verb: &str, at: &str, response: ResponseTemplate) {
    Mock::given(method(verb))
        .and(path(at))
        .respond_with(response)
        .mount(&s.server)
        .await;
}

/// [`answer`] for the first such request only.
async fn answer_once(s: &Setup, verb: &str, at: &str, response: ResponseTemplate) {
    Mock::given(method(verb))
        .and(path(at))
        .respond_with(response)
        .up_to_n_times(1)
        .mount(&s.server)
        .await;
}

fn waits(setup: &Setup) -> Vec<Duration> {
    setup.waits.0.lock().unwrap().clone()
}

#[tokio::test]
async fn listings_follow_every_page_and_keep_u64_ids() {
    let s = setup(Duration::ZERO).await;
    let base = s.server.uri();
    let page = |ids: std::ops::Range<u64>, next: Option<u32>| {
        let items: Vec<Value> = ids.map(|id| comment(3_000_000_000 + id, "x")).collect();
        let mut response = ResponseTemplate::new(200).set_body_json(items);
        if let Some(next) = next {
            response = response.insert_header(
                "link",
                format!(
                    "<{base}/repos/octo/hello/issues/7/comments?per_page=100&page={next}>; rel=\"next\", <{base}/x?page=3>; rel=\"last\""
                )
                .as_str(),
            );
        }
        response
    };
    for (number, ids, next) in [
        (1, 0..100, Some(2)),
        (2, 100..200, Some(3)),
        (3, 200..250, None),
    ] {
        let mut mock = Mock::given(method("GET"))
            .and(path("/repos/octo/hello/issues/7/comments"))
            .and(query_param("per_page", "100"))
            .and(header("authorization", "Bearer t0ken"));
        if number > 1 {
            mock = mock.and(query_param("page", number.to_string()));
        }
        mock.respond_with(page(ids, next))
            .up_to_n_times(1)
            .mount(&s.server)
            .await;
    }
    let comments = s.client.issue_comments(&repo(), 7).await.unwrap();
    assert_eq!(comments.len(), 250);
    assert_eq!(comments[249].id, 3_000_000_249);
    assert_eq!(s.client.counters().requests, 3);
}

#[tokio::test]
async fn an_unchanged_listing_is_answered_from_the_cache() {
    let s = setup(Duration::ZERO).await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .and(header("if-none-match", "\"v1\""))
        .respond_with(ResponseTemplate::new(304))
        .mount(&s.server)
        .await;
    let review_comment = json!({"id": 4_000_000_001_u64, "body": "b", "user": {"login": "octocat"},
        "created_at": "2026-11-20T10:00:00Z", "path": "a.rs", "line": 3, "commit_id": "abc"});
    answer(
        &s,
        "GET",
        "/repos/octo/hello/pulls/7/comments",
        ResponseTemplate::new(200)
            .insert_header("etag", "\"v1\"")
            .set_body_json(json!([review_comment])),
    )
    .await;
    let first = s.client.review_comments(&repo(), 7).await.unwrap();
    let again = s.client.review_comments(&repo(), 7).await.unwrap();
    assert_eq!(first, again);
    assert_eq!(again[0].line, Some(3));
    let counters = s.client.counters();
    assert_eq!((counters.requests, counters.not_modified), (2, 1));
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_as_github_asks() {
    let s = setup(Duration::ZERO).await;
    answer_once(
        &s,
        "GET",
        "/repos/octo/hello/collaborators/dev/permission",
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_json(json!({"message": "You have exceeded a secondary rate limit"})),
    )
    .await;
    answer(
        &s,
        "GET",
        "/repos/octo/hello/collaborators/dev/permission",
        ResponseTemplate::new(200)
            .insert_header("x-ratelimit-limit", "5000")
            .insert_header("x-ratelimit-remaining", "4990")
            .insert_header("x-ratelimit-reset", "1800000000")
            .set_body_json(json!({"permission": "write", "role_name": "maintain"})),
    )
    .await;
    let permission = s
        .client
        .collaborator_permission(&repo(), "dev")
        .await
        .unwrap();
    assert!(permission.can_write());
    assert_eq!(waits(&s), [Duration::from_secs(7)]);
    assert_eq!(s.client.rate_limit().unwrap().remaining, 4990);

    // Longer than the client will wait: the error says how long.
    answer(
        &s,
        "GET",
        "/repos/octo/hello/pulls/9",
        ResponseTemplate::new(403).insert_header("retry-after", "3600"),
    )
    .await;
    match s.client.pull_request(&repo(), 9).await {
        Err(GitHubError::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Duration::from_secs(3600));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_secondary_limit_naming_no_time_is_waited_out_for_a_minute_and_a_plain_403_is_not() {
    let s = setup(Duration::ZERO).await;
    let limited = json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."});
    let comments = "/repos/octo/hello/issues/7/comments";
    answer_once(
        &s,
        "POST",
        comments,
        ResponseTemplate::new(403).set_body_json(limited),
    )
    .await;
    let created = ResponseTemplate::new(201).set_body_json(comment(5_000_000_001, "hi"));
    answer(&s, "POST", comments, created).await;
    s.client
        .create_issue_comment(&repo(), 7, "hi")
        .await
        .unwrap();
    assert_eq!(waits(&s), [Duration::from_secs(60)]);
    answer(
        &s,
        "GET",
        "/repos/octo/hello/pulls/8",
        ResponseTemplate::new(403)
            .set_body_json(json!({"message": "Resource not accessible by integration"})),
    )
    .await;
    let refused = s.client.pull_request(&repo(), 8).await;
    assert!(
        matches!(refused, Err(GitHubError::Forbidden { .. })),
        "{refused:?}"
    );
    assert_eq!(waits(&s).len(), 1, "no wait for a refusal");
}

#[tokio::test]
async fn a_create_that_failed_after_it_was_sent_is_never_sent_again() {
    let s = setup(Duration::ZERO).await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/issues/7/comments"))
        .respond_with(ResponseTemplate::new(502))
        .expect(1)
        .mount(&s.server)
        .await;
    let error = s
        .client
        .create_issue_comment(&repo(), 7, "<!-- bugloop:summary -->")
        .await
        .unwrap_err();
    assert!(matches!(error, GitHubError::Ambiguous { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .contains("POST /repos/octo/hello/issues/7/comments")
    );
    s.server.verify().await;
}

#[tokio::test]
async fn a_safe_write_is_retried_after_a_server_error() {
    let s = setup(Duration::ZERO).await;
    answer_once(
        &s,
        "PATCH",
        "/repos/octo/hello/issues/comments/3000000001",
        ResponseTemplate::new(502),
    )
    .await;
    Mock::given(method("PATCH"))
        .and(path("/repos/octo/hello/issues/comments/3000000001"))
        .and(body_partial_json(json!({"body": "new"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(comment(3_000_000_001, "new")))
        .mount(&s.server)
        .await;
    let updated = s
        .client
        .update_issue_comment(&repo(), 3_000_000_001, "new")
        .await
        .unwrap();
    assert_eq!(updated.body.as_deref(), Some("new"));
    assert_eq!(s.client.counters().requests, 2);
    assert_eq!(waits(&s).len(), 1, "one backoff");
}

#[tokio::test]
async fn a_refused_line_keeps_githubs_words_and_a_file_comment_has_no_line() {
    let s = setup(Duration::ZERO).await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .and(body_partial_json(json!({"line": 40, "side": "RIGHT"})))
        .respond_with(ResponseTemplate::new(422).set_body_json(json!({
            "message": "Validation Failed",
            "errors": [{"resource": "PullRequestReviewComment", "code": "custom",
                        "field": "pull_request_review_thread.line",
                        "message": "pull_request_review_thread.line must be part of the diff"}]
        })))
        .mount(&s.server)
        .await;
    let created = json!({"id": 4_000_000_002_u64, "body": "b", "user": {"login": "bot[bot]"},
        "created_at": "2026-11-20T10:00:00Z", "path": "a.rs", "line": null, "commit_id": "abc"});
    Mock::given(method("POST"))
        .and(path("/repos/octo/hello/pulls/7/comments"))
        .and(body_partial_json(json!({"subject_type": "file"})))
        .respond_with(ResponseTemplate::new(201).set_body_json(created))
        .mount(&s.server)
        .await;
    let mut comment = NewReviewComment {
        body: "b".to_owned(),
        commit_id: "abc".to_owned(),
        path: "a.rs".to_owned(),
        line: Some(40),
        start_line: None,
        side: PullRequestSide::Right,
    };
    let error = s
        .client
        .create_review_comment(&repo(), 7, &comment)
        .await
        .unwrap_err();
    match &error {
        GitHubError::Unprocessable { errors, .. } => {
            assert!(errors[0].contains("must be part of the diff"), "{errors:?}");
        }
        other => panic!("{other:?}"),
    }
    comment.line = None;
    let on_file = s
        .client
        .create_review_comment(&repo(), 7, &comment)
        .await
        .unwrap();
    assert_eq!(on_file.line, None);
}

#[tokio::test]
async fn writes_are_spaced_and_bodies_over_the_cap_are_refused_before_sending() {
    let s = setup(Duration::from_secs(1)).await;
    answer(
        &s,
        "POST",
        "/repos/octo/hello/issues/7/comments",
        ResponseTemplate::new(201).set_body_json(comment(3_000_000_003, "a")),
    )
    .await;
    s.client
        .create_issue_comment(&repo(), 7, "a")
        .await
        .unwrap();
    s.client
        .create_issue_comment(&repo(), 7, "b")
        .await
        .unwrap();
    let asked = waits(&s);
    assert_eq!(asked.len(), 1, "the second write waited: {asked:?}");
    assert!(asked[0] <= Duration::from_secs(1) && asked[0] > Duration::ZERO);

    let huge = "x".repeat(bugloop_github::MAX_BODY_CHARS + 1);
    let before = s.client.counters().requests;
    let error = s
        .client
        .create_issue_comment(&repo(), 7, &huge)
        .await
        .unwrap_err();
    assert!(matches!(error, GitHubError::TooLarge { .. }), "{error:?}");
    assert_eq!(s.client.counters().requests, before);
}

#[tokio::test]
async fn graphql_threads_page_and_errors_in_a_200_are_errors() {
    let s = setup(Duration::ZERO).await;
    let thread = |id: &str, resolved: bool| {
        json!({"id": id, "isResolved": resolved, "isOutdated": false, "path": "a.rs", "line": 3,
               "comments": {"nodes": [{"fullDatabaseId": "4000000010"}]}})
    };
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(body_partial_json(
            json!({"operationName": "ReviewThreads", "variables": {"after": null}}),
        ))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"data": {"repository": {
            "pullRequest": {"reviewThreads": {"nodes": [thread("PRRT_1", false)],
                "pageInfo": {"hasNextPage": true, "endCursor": "c1"}}}}}})),
        )
        .mount(&s.server)
        .await;
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(body_partial_json(
            json!({"operationName": "ReviewThreads", "variables": {"after": "c1"}}),
        ))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"data": {"repository": {
            "pullRequest": {"reviewThreads": {"nodes": [thread("PRRT_2", true)],
                "pageInfo": {"hasNextPage": false, "endCursor": null}}}}}})),
        )
        .mount(&s.server)
        .await;
    let threads = s.client.review_threads(&repo(), 7).await.unwrap();
    assert_eq!(threads.len(), 2);
    assert!(threads[1].is_resolved);
    assert_eq!(threads[0].first_comment, Some(4_000_000_010));

    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(body_partial_json(json!({"operationName": "ResolveThread"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "data": null,
            "errors": [{"message": "Resource not accessible by integration"}]
        })))
        .mount(&s.server)
        .await;
    let error = s
        .client
        .set_thread_resolved("PRRT_1", true)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, GitHubError::GraphQl { messages, .. } if messages[0].contains("not accessible")),
        "{error:?}"
    );
}

#[test]
fn repositories_and_endpoints_are_read_as_actions_give_them() {
    assert_eq!(repo().to_string(), "octo/hello");
    for bad in [
        "octo",
        "octo/",
        "/hello",
        "octo/../x",
        "o/h/x",
        "octo/hel lo",
    ] {
        assert_eq!(Repo::parse(bad), None, "{bad}");
    }
    let ghes = Endpoint::from_values(Some("https://ghe.example.com/api/v3/"), None);
    assert_eq!(ghes.api_url, "https://ghe.example.com/api/v3");
    assert_eq!(ghes.graphql_url, "https://ghe.example.com/api/v3/graphql");
    let explicit = Endpoint::from_values(
        Some("https://ghe.example.com/api/v3"),
        Some("https://ghe.example.com/api/graphql"),
    );
    assert_eq!(explicit.graphql_url, "https://ghe.example.com/api/graphql");
    assert_eq!(Endpoint::from_values(None, None), Endpoint::default());
}
