//! The client against GitHub's own description of its REST API (`@octokit/openapi`, installed by
//! the test command): every request it sends matches exactly one operation (method and path
//! template; query parameters the operation declares), its JSON body validates against that
//! operation's request schema, and the answers it reads are the operations' own examples, with
//! every id moved above 2^32.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bugloop_github::{Endpoint, GitHubClient, NewReviewComment, Policy, PullRequestSide, Repo};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct OpenApi(Value);

impl OpenApi {
    fn load() -> OpenApi {
        OpenApi(bugloop_testkit::github::octokit_asset(
            "openapi/generated/api.github.com.json",
            "GitHub's OpenAPI description",
        ))
    }

    fn resolve<'a>(&'a self, value: &'a Value) -> &'a Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(reference) => self
                .0
                .pointer(reference.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("no {reference}")),
            None => value,
        }
    }

    /// The operations whose method and path template match a request.
    fn operations(&self, method: &str, path: &str) -> Vec<(String, &Value)> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        self.0["paths"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(template, _)| {
                let parts: Vec<&str> = template.trim_matches('/').split('/').collect();
                parts.len() == segments.len()
                    && parts.iter().zip(&segments).all(|(part, segment)| {
                        (part.starts_with('{') && part.ends_with('}') && !segment.is_empty())
                            || part == segment
                    })
            })
            .filter_map(|(template, item)| {
                item.get(method.to_lowercase())
                    .map(|operation| (template.clone(), operation))
            })
            .collect()
    }

    /// The first example of an operation's answer, ids moved above 2^32.
    fn example(&self, method: &str, template: &str, status: &str) -> Value {
        let operation = &self.0["paths"][template][method.to_lowercase()];
        let content = &self.resolve(&operation["responses"][status])["content"]["application/json"];
        let example = content["examples"]
            .as_object()
            .and_then(|examples| examples.values().next())
            .map(|example| {
                // The value may itself point at a shared example (`{summary, value}`).
                let value = self.resolve(&self.resolve(example)["value"]);
                match (
                    example.get("value").and_then(|v| v.get("$ref")),
                    value.get("value"),
                ) {
                    (Some(_), Some(inner)) => inner.clone(),
                    _ => value.clone(),
                }
            })
            .unwrap_or_else(|| panic!("no example for {method} {template} {status}"));
        big_ids(example)
    }

    /// The operation's request body schema, with `components` alongside so its `$ref`s resolve,
    /// and OpenAPI's `nullable` written as JSON Schema's null type.
    fn request_schema(&self, operation: &Value) -> Option<Value> {
        let body = self.resolve(operation.get("requestBody")?);
        let mut schema = body["content"]["application/json"]["schema"].clone();
        schema["components"] = self.0["components"].clone();
        nullable_as_null(&mut schema);
        Some(schema)
    }
}

fn big_ids(mut value: Value) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(object) => {
                for (key, child) in object.iter_mut() {
                    if (key == "id" || key.ends_with("_id"))
                        && let Some(id) = child.as_u64()
                    {
                        *child = json!(id + 5_000_000_000);
                    } else {
                        walk(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut value);
    value
}

fn nullable_as_null(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if object.remove("nullable") == Some(Value::Bool(true)) {
                match object.get("type").cloned() {
                    Some(Value::String(kind)) => {
                        object.insert("type".to_owned(), json!([kind, "null"]));
                    }
                    _ => {
                        let inner = Value::Object(object.clone());
                        object.clear();
                        object.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
                    }
                }
            }
            object.values_mut().for_each(nullable_as_null);
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_as_null),
        _ => {}
    }
}

/// Answers `method path` with the example of `template` at `status`.
async fn answer(server: &MockServer, api: &OpenApi, call: (&str, &str, &str, &str)) {
    let (verb, concrete, template, status) = call;
    let code = status.parse::<u16>().unwrap();
    // A 204 has no body (and the description no example); the operation must declare it.
    let response = if code == 204 {
        assert!(
            api.0["paths"][template][verb.to_lowercase()]["responses"]["204"].is_object(),
            "{verb} {template} answers no 204"
        );
        ResponseTemplate::new(code)
    } else {
        ResponseTemplate::new(code).set_body_json(api.example(verb, template, status))
    };
    Mock::given(method(verb))
        .and(path(concrete))
        .respond_with(response)
        .mount(server)
        .await;
}

#[tokio::test]
async fn every_request_matches_one_operation_of_githubs_description() {
    let api = OpenApi::load();
    let server = MockServer::start().await;
    let calls = [
        (
            "GET",
            "/repos/octo/hello/issues/7/comments",
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            "200",
        ),
        (
            "POST",
            "/repos/octo/hello/issues/7/comments",
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            "201",
        ),
        (
            "PATCH",
            "/repos/octo/hello/issues/comments/3000000001",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/pulls/7/comments",
            "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
            "200",
        ),
        (
            "POST",
            "/repos/octo/hello/pulls/7/comments",
            "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
            "201",
        ),
        (
            "POST",
            "/repos/octo/hello/pulls/7/comments/3000000010/replies",
            "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies",
            "201",
        ),
        (
            "PATCH",
            "/repos/octo/hello/pulls/comments/3000000010",
            "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/pulls/7",
            "/repos/{owner}/{repo}/pulls/{pull_number}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/collaborators/dev/permission",
            "/repos/{owner}/{repo}/collaborators/{username}/permission",
            "200",
        ),
        ("GET", "/user", "/user", "200"),
        ("GET", "/app", "/app", "200"),
        (
            "POST",
            "/repos/octo/hello/issues/7/labels",
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            "200",
        ),
        (
            "DELETE",
            "/repos/octo/hello/issues/7/labels/bug%3Aautofix",
            "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/pulls/7/requested_reviewers",
            "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
            "200",
        ),
        (
            "POST",
            "/repos/octo/hello/pulls",
            "/repos/{owner}/{repo}/pulls",
            "201",
        ),
        (
            "POST",
            "/repos/octo/hello/issues",
            "/repos/{owner}/{repo}/issues",
            "201",
        ),
        (
            "GET",
            "/repos/octo/hello/commits/abc123/check-runs",
            "/repos/{owner}/{repo}/commits/{ref}/check-runs",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/commits/abc123/status",
            "/repos/{owner}/{repo}/commits/{ref}/status",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/issues/7",
            "/repos/{owner}/{repo}/issues/{issue_number}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/pulls",
            "/repos/{owner}/{repo}/pulls",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/issues",
            "/repos/{owner}/{repo}/issues",
            "200",
        ),
        (
            "PATCH",
            "/repos/octo/hello/issues/7",
            "/repos/{owner}/{repo}/issues/{issue_number}",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/issues/7/events",
            "/repos/{owner}/{repo}/issues/{issue_number}/events",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/installation",
            "/repos/{owner}/{repo}/installation",
            "200",
        ),
        (
            "GET",
            "/repos/octo/hello/pulls/7/reviews",
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
            "200",
        ),
        (
            "DELETE",
            "/repos/octo/hello/issues/comments/3000000002",
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            "204",
        ),
        (
            "DELETE",
            "/repos/octo/hello/pulls/comments/3000000011",
            "/repos/{owner}/{repo}/pulls/comments/{comment_id}",
            "204",
        ),
    ];
    for call in calls {
        answer(&server, &api, call).await;
    }
    let client = GitHubClient::new(
        Endpoint::from_values(Some(&server.uri()), None),
        "t0ken".to_owned(),
        Policy {
            write_spacing: Duration::ZERO,
            ..Policy::default()
        },
    )
    .unwrap();
    let repo = Repo::parse("octo/hello").unwrap();

    // Every operation, reading GitHub's own example answers.
    let listed = client.issue_comments(&repo, 7).await.unwrap();
    assert!(listed[0].id > u64::from(u32::MAX));
    client
        .create_issue_comment(&repo, 7, "Me too")
        .await
        .unwrap();
    client
        .update_issue_comment(&repo, 3_000_000_001, "edited")
        .await
        .unwrap();
    let review = client.review_comments(&repo, 7).await.unwrap();
    assert!(review[0].id > u64::from(u32::MAX));
    for (line, start_line) in [(Some(12), None), (Some(14), Some(12)), (None, None)] {
        client
            .create_review_comment(
                &repo,
                7,
                &NewReviewComment {
                    body: "A finding".to_owned(),
                    commit_id: "6dcb09b5b57875f334f61aebed695e2e4193db5e".to_owned(),
                    path: "src/lib.rs".to_owned(),
                    line,
                    start_line,
                    side: PullRequestSide::Right,
                },
            )
            .await
            .unwrap();
    }
    client
        .reply_to_review_comment(&repo, 7, 3_000_000_010, "Fixed.")
        .await
        .unwrap();
    client
        .update_review_comment(&repo, 3_000_000_010, "edited")
        .await
        .unwrap();
    let pull = client.pull_request(&repo, 7).await.unwrap();
    assert!(!pull.head.sha.is_empty());
    let permission = client.collaborator_permission(&repo, "dev").await.unwrap();
    assert!(permission.can_write());
    assert!(!client.user_login().await.unwrap().is_empty());
    assert!(client.app_bot_login().await.unwrap().ends_with("[bot]"));
    client
        .add_labels(&repo, 7, &["bug", "bug:autofix"])
        .await
        .unwrap();
    client.remove_label(&repo, 7, "bug:autofix").await.unwrap();
    assert!(
        !client
            .requested_reviewers(&repo, 7)
            .await
            .unwrap()
            .is_empty()
    );
    let draft = bugloop_github::NewPullRequest {
        title: "fix(#12): division by zero".to_owned(),
        body: "Closes #12".to_owned(),
        head: "bugloop/12-division-by-zero".to_owned(),
        base: "main".to_owned(),
        draft: true,
    };
    client.create_pull_request(&repo, &draft).await.unwrap();
    let issue = client
        .create_issue(
            &repo,
            "ZeroDivisionError in restock_ratio",
            "trace",
            &["bug", "bug:autofix"],
        )
        .await
        .unwrap();
    assert!(issue.number > 0);
    let checks = client.commit_checks(&repo, "abc123").await.unwrap();
    assert!(!checks.runs.is_empty());
    let read = client.issue(&repo, 7).await.unwrap();
    assert!(!read.title.is_empty());
    let open = client
        .open_pull_requests_from(&repo, "bugloop/12-division-by-zero")
        .await
        .unwrap();
    assert!(!open.is_empty());
    let reviews = client.pull_reviews(&repo, 7).await.unwrap();
    assert!(!reviews[0].state.is_empty());
    client
        .issues_labelled(&repo, "bug", "bugloop[bot]")
        .await
        .unwrap();
    let labelled = client.label_events(&repo, 7).await.unwrap();
    assert!(
        labelled
            .iter()
            .all(|e| !e.actor.is_empty() && !e.label.is_empty())
    );
    client
        .update_issue_body(&repo, 7, "Reported twice")
        .await
        .unwrap();
    assert!(client.repository_installation(&repo).await.unwrap() > 0);
    client
        .delete_issue_comment(&repo, 3_000_000_002)
        .await
        .unwrap();
    client
        .delete_review_comment(&repo, 3_000_000_011)
        .await
        .unwrap();

    // Every request the client sent, against the description.
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 29);
    for request in requests {
        let verb = request.method.as_str();
        let target = request.url.path();
        let matched = api.operations(verb, target);
        assert_eq!(
            matched.len(),
            1,
            "{verb} {target}: {:?}",
            matched.iter().map(|m| &m.0).collect::<Vec<_>>()
        );
        let (template, operation) = &matched[0];
        let declared: Vec<&str> = operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| api.resolve(p))
            .filter(|p| p["in"] == "query")
            .filter_map(|p| p["name"].as_str())
            .collect();
        for (name, _) in request.url.query_pairs() {
            assert!(
                declared.contains(&name.as_ref()),
                "{verb} {template}: query `{name}`"
            );
        }
        if let Some(schema) = api.request_schema(operation) {
            let body: Value = serde_json::from_slice(&request.body).unwrap();
            bugloop_testkit::schema::assert_valid(&schema, &body, &format!("{verb} {template}"));
        }
    }
    // The checks can fail: a body without its required field, a path GitHub does not have.
    let (_, create) = &api.operations("POST", "/repos/octo/hello/issues/7/comments")[0];
    let schema = api.request_schema(create).unwrap();
    assert!(
        !jsonschema::validator_for(&schema)
            .unwrap()
            .is_valid(&json!({"text": "x"}))
    );
    assert!(
        api.operations("POST", "/repos/octo/hello/issues/7/remarks")
            .is_empty()
    );
}
