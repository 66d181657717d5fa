//! What only GraphQL can do: a pull request's review threads with their resolved flags, resolving
//! and unresolving them, and moving a pull request between draft and ready. Each document is a
//! `.graphql` file beside this one. A `200` answer with `errors` is an error.

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::transport::Safety;
use crate::{GitHubClient, GitHubError, Repo};

const REVIEW_THREADS: &str = include_str!("graphql/review_threads.graphql");
const RESOLVE_THREAD: &str = include_str!("graphql/resolve_thread.graphql");
const UNRESOLVE_THREAD: &str = include_str!("graphql/unresolve_thread.graphql");
const MARK_READY: &str = include_str!("graphql/mark_ready.graphql");
const CONVERT_TO_DRAFT: &str = include_str!("graphql/convert_to_draft.graphql");

/// Every document the client sends, by operation name (for the schema check).
pub const DOCUMENTS: [(&str, &str); 5] = [
    ("ReviewThreads", REVIEW_THREADS),
    ("ResolveThread", RESOLVE_THREAD),
    ("UnresolveThread", UNRESOLVE_THREAD),
    ("MarkReady", MARK_READY),
    ("ConvertToDraft", CONVERT_TO_DRAFT),
];

/// A review thread: its node id, flags, place, and the REST id of its first comment (how a
/// thread is matched to the comment bugloop wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewThread {
    pub id: String,
    pub is_resolved: bool,
    pub is_outdated: bool,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub first_comment: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ThreadNode {
    id: String,
    is_resolved: bool,
    is_outdated: bool,
    path: Option<String>,
    line: Option<u32>,
    comments: CommentNodes,
}

#[derive(Deserialize)]
struct CommentNodes {
    nodes: Vec<CommentNode>,
}

/// `fullDatabaseId` is a `BigInt`, which GitHub sends as a string (`databaseId`, an `Int`,
/// cannot hold ids past 2^31 and is deprecated for that reason).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommentNode {
    full_database_id: Option<BigInt>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum BigInt {
    Text(String),
    Number(u64),
}

impl BigInt {
    fn value(&self) -> Option<u64> {
        match self {
            BigInt::Text(text) => text.parse().ok(),
            BigInt::Number(number) => Some(*number),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

impl GitHubClient {
    async fn graphql(
        &self,
        operation: &str,
        query: &str,
        variables: Value,
        safety: Safety,
    ) -> Result<Value, GitHubError> {
        let body = json!({"query": query, "variables": variables, "operationName": operation});
        let page = self
            .transport
            .send(
                Method::POST,
                &self.endpoint.graphql_url,
                Some(&body),
                safety,
            )
            .await?;
        let name = format!("GraphQL {operation}");
        if let Some(errors) = page.body.get("errors").and_then(Value::as_array)
            && !errors.is_empty()
        {
            return Err(GitHubError::GraphQl {
                operation: name,
                messages: errors
                    .iter()
                    .map(|e| {
                        e.get("message")
                            .and_then(Value::as_str)
                            .map_or_else(|| e.to_string(), str::to_owned)
                    })
                    .collect(),
            });
        }
        page.body
            .get("data")
            .cloned()
            .ok_or_else(|| GitHubError::Decode {
                operation: name,
                message: "no `data`".to_owned(),
            })
    }

    /// Every review thread of a pull request, page by page.
    pub async fn review_threads(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<ReviewThread>, GitHubError> {
        let mut threads = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let data = self
                .graphql(
                    "ReviewThreads",
                    REVIEW_THREADS,
                    json!({"owner": repo.owner, "name": repo.name, "number": number, "after": after}),
                    Safety::Read,
                )
                .await?;
            let connection = data
                .pointer("/repository/pullRequest/reviewThreads")
                .cloned()
                .ok_or_else(|| GitHubError::NotFound {
                    operation: "GraphQL ReviewThreads".to_owned(),
                    message: format!("no pull request #{number} in {repo}"),
                })?;
            let decode = |e: serde_json::Error| GitHubError::Decode {
                operation: "GraphQL ReviewThreads".to_owned(),
                message: e.to_string(),
            };
            let nodes: Vec<ThreadNode> =
                serde_json::from_value(connection["nodes"].clone()).map_err(decode)?;
            let page: PageInfo =
                serde_json::from_value(connection["pageInfo"].clone()).map_err(decode)?;
            threads.extend(nodes.into_iter().map(|node| {
                ReviewThread {
                    id: node.id,
                    is_resolved: node.is_resolved,
                    is_outdated: node.is_outdated,
                    path: node.path,
                    line: node.line,
                    first_comment: node
                        .comments
                        .nodes
                        .first()
                        .and_then(|c| c.full_database_id.as_ref()?.value()),
                }
            }));
            match (page.has_next_page, page.end_cursor) {
                (true, Some(cursor)) => after = Some(cursor),
                _ => return Ok(threads),
            }
        }
    }

    /// Resolves or unresolves a thread (safe to repeat).
    pub async fn set_thread_resolved(
        &self,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), GitHubError> {
        let mutation = if resolved {
            ("ResolveThread", RESOLVE_THREAD)
        } else {
            ("UnresolveThread", UNRESOLVE_THREAD)
        };
        self.set_state(mutation, json!({"threadId": thread_id}))
            .await
    }

    /// Marks a draft pull request ready for review, or turns it back into a draft (by its node
    /// id; safe to repeat).
    pub async fn set_draft(&self, pull_request_id: &str, draft: bool) -> Result<(), GitHubError> {
        let mutation = if draft {
            ("ConvertToDraft", CONVERT_TO_DRAFT)
        } else {
            ("MarkReady", MARK_READY)
        };
        self.set_state(mutation, json!({"pullRequestId": pull_request_id}))
            .await
    }

    /// A mutation that sets a state (asking twice is asking once, so it may be retried), its
    /// answer unread.
    async fn set_state(
        &self,
        (name, document): (&str, &str),
        variables: Value,
    ) -> Result<(), GitHubError> {
        self.graphql(name, document, variables, Safety::Idempotent)
            .await
            .map(|_| ())
    }
}
