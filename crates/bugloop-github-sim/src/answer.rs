//! What a handler answers, before the server adds headers.

use axum::http::StatusCode;
use serde_json::{Value, json};

/// An answer before headers: status and JSON (or nothing).
pub(crate) struct Answer {
    pub status: StatusCode,
    pub body: Option<Value>,
    pub link: Option<String>,
    pub retry_after: Option<u64>,
    /// A listing's body hashes to an ETag.
    pub etag: bool,
}

impl Answer {
    pub fn json(status: StatusCode, body: Value) -> Answer {
        Answer {
            status,
            body: Some(body),
            link: None,
            retry_after: None,
            etag: false,
        }
    }

    pub fn ok(body: Value) -> Answer {
        Answer::json(StatusCode::OK, body)
    }

    pub fn error(status: StatusCode, message: &str) -> Answer {
        Answer::json(
            status,
            json!({"message": message, "documentation_url": "https://docs.github.com/rest"}),
        )
    }

    pub fn not_found() -> Answer {
        Answer::error(StatusCode::NOT_FOUND, "Not Found")
    }

    pub fn unprocessable(field: &str, message: &str) -> Answer {
        Answer::json(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({
                "message": "Validation Failed",
                "errors": [{"resource": "PullRequestReviewComment", "code": "custom", "field": field, "message": message}],
                "documentation_url": "https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request"
            }),
        )
    }
}

/// An authenticated request as the routers read it: who sent it, its method, query and body
/// (each router takes the part of the path it answers below).
#[derive(Clone, Copy)]
pub(crate) struct Asked<'a> {
    pub login: &'a str,
    pub method: &'a str,
    pub query: &'a str,
    pub body: &'a Value,
}
