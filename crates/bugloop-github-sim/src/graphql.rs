//! The GraphQL operations bugloop sends, recognised by operation name and answered with exactly
//! the fields their documents select; anything else is a GraphQL error (a 200 with `errors`).

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::answer::Answer;
use crate::state::{Fault, State};

const PAGE: usize = 100;

pub(crate) fn answer(state: &mut State, body: &Value) -> Answer {
    let operation = body.get("operationName").and_then(Value::as_str);
    let injected = state.faults.iter().position(|f| {
        matches!(f, Fault::GraphQlError { operation: op, .. } if Some(op.as_str()) == operation)
    });
    if let Some(at) = injected
        && let Fault::GraphQlError { message, .. } = state.faults.remove(at)
    {
        return error("FORBIDDEN", &message);
    }
    let variables = body.get("variables").cloned().unwrap_or(Value::Null);
    let text = |key: &str| {
        variables
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match operation {
        Some("ReviewThreads") => {
            let owner_matches = text("owner").as_deref() == Some(state.owner.as_str())
                && text("name").as_deref() == Some(state.name.as_str());
            let number = variables.get("number").and_then(Value::as_u64);
            let Some(number) = number.filter(|n| owner_matches && state.pulls.contains_key(n))
            else {
                return error(
                    "NOT_FOUND",
                    "Could not resolve to a PullRequest with the number given.",
                );
            };
            review_threads(state, number, text("after"))
        }
        Some(op @ ("ResolveThread" | "UnresolveThread")) => {
            let resolved = op == "ResolveThread";
            let id = text("threadId").unwrap_or_default();
            let Some(thread) = state.threads.iter_mut().find(|t| t.id == id) else {
                return no_node(&id);
            };
            thread.resolved = resolved;
            let field = if resolved {
                "resolveReviewThread"
            } else {
                "unresolveReviewThread"
            };
            Answer::ok(
                json!({"data": {field: {"thread": {"id": thread.id, "isResolved": thread.resolved}}}}),
            )
        }
        Some(op @ ("MarkReady" | "ConvertToDraft")) => {
            let draft = op == "ConvertToDraft";
            let id = text("pullRequestId").unwrap_or_default();
            let Some(pull) = state.pulls.values_mut().find(|p| p.node_id == id) else {
                return no_node(&id);
            };
            pull.spec.draft = draft;
            let field = if draft {
                "convertPullRequestToDraft"
            } else {
                "markPullRequestReadyForReview"
            };
            Answer::ok(
                json!({"data": {field: {"pullRequest": {"id": pull.node_id, "isDraft": draft}}}}),
            )
        }
        other => error(
            "UNKNOWN",
            &format!("the simulator does not know the operation {other:?}"),
        ),
    }
}

fn review_threads(state: &mut State, number: u64, after: Option<String>) -> Answer {
    // A thread shows once its first comment shows.
    let visible: Vec<Value> = state
        .threads
        .iter()
        .filter(|t| t.number == number && !state.is_hidden(true, t.root))
        .map(|t| {
            json!({
                "id": t.id,
                "isResolved": t.resolved,
                "isOutdated": false,
                "path": t.path,
                "line": t.line,
                "comments": {"nodes": [{"fullDatabaseId": t.root.to_string()}]},
            })
        })
        .collect();
    let start = after
        .and_then(|cursor| cursor.strip_prefix("cursor:")?.parse::<usize>().ok())
        .unwrap_or(0);
    let end = (start + PAGE).min(visible.len());
    let nodes = visible.get(start..end).unwrap_or_default().to_vec();
    let has_next = end < visible.len();
    Answer::ok(
        json!({"data": {"repository": {"pullRequest": {"reviewThreads": {
            "nodes": nodes,
            "pageInfo": {"hasNextPage": has_next, "endCursor": format!("cursor:{end}")},
        }}}}}),
    )
}

/// GitHub's answer for a global node id that names nothing.
fn no_node(id: &str) -> Answer {
    error(
        "NOT_FOUND",
        &format!("Could not resolve to a node with the global id of '{id}'"),
    )
}

fn error(kind: &str, message: &str) -> Answer {
    Answer::json(
        StatusCode::OK,
        json!({"data": null, "errors": [{"type": kind, "message": message}]}),
    )
}
