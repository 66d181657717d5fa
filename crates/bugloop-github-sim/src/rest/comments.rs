//! Comments as the simulator makes and shows them: a conversation comment, a review comment on
//! a line (or a reply in its thread), and their JSON as GitHub's REST API gives it.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::body_too_long;
use crate::answer::Answer;
use crate::state::{IssueComment, ReviewComment, State, Thread, timestamp};

pub(crate) fn create_issue_comment(state: &mut State, number: u64, login: &str, body: &str) -> u64 {
    let id = state.next_issue_id;
    state.next_issue_id += 1;
    let now = state.tick();
    state.issue_comments.push(IssueComment {
        id,
        number,
        author: login.to_owned(),
        body: body.to_owned(),
        created_at: now,
        updated_at: now,
    });
    state.note_created(false, id);
    id
}

/// What a new review comment says.
pub(crate) struct NewReview {
    pub body: String,
    pub path: String,
    pub line: Option<u32>,
    pub start_line: Option<u32>,
    pub commit_id: String,
    pub in_reply_to: Option<u64>,
}

pub(crate) fn create_review_comment(
    state: &mut State,
    number: u64,
    login: &str,
    new: NewReview,
) -> u64 {
    let id = state.next_review_id;
    state.next_review_id += 1;
    let now = state.tick();
    let root = new
        .in_reply_to
        .and_then(|to| state.review_comments.iter().find(|c| c.id == to))
        .map(|c| {
            (
                c.in_reply_to.unwrap_or(c.id),
                c.thread.clone(),
                c.path.clone(),
                c.line,
            )
        });
    let (in_reply_to, thread, path, line) = match root {
        Some((root, thread, path, line)) => (Some(root), thread, path, line),
        None => {
            let thread = format!("PRRT_kwDOsim{id}");
            state.threads.push(Thread {
                id: thread.clone(),
                number,
                root: id,
                resolved: false,
                path: new.path.clone(),
                line: new.line,
            });
            (None, thread, new.path, new.line)
        }
    };
    state.review_comments.push(ReviewComment {
        id,
        number,
        author: login.to_owned(),
        body: new.body,
        path,
        line,
        start_line: new.start_line.filter(|_| in_reply_to.is_none()),
        commit_id: new.commit_id,
        in_reply_to,
        thread,
        created_at: now,
        updated_at: now,
    });
    state.note_created(true, id);
    id
}

/// A reply in the thread of `to` (a reply to a reply joins the root's thread).
pub(crate) fn reply(
    state: &mut State,
    number: u64,
    login: &str,
    to: u64,
    body: &str,
) -> Option<u64> {
    let parent = state
        .review_comments
        .iter()
        .find(|c| c.id == to && c.number == number)?;
    let new = NewReview {
        body: body.to_owned(),
        path: parent.path.clone(),
        line: parent.line,
        start_line: None,
        commit_id: parent.commit_id.clone(),
        in_reply_to: Some(to),
    };
    Some(create_review_comment(state, number, login, new))
}

pub(super) fn new_review_comment(
    state: &mut State,
    login: &str,
    number: u64,
    body: &Value,
) -> Answer {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    let line = |key: &str| {
        body.get(key)
            .and_then(Value::as_u64)
            .and_then(|l| u32::try_from(l).ok())
    };
    let (Some(comment_body), Some(path), Some(commit_id)) =
        (text("body"), text("path"), text("commit_id"))
    else {
        return Answer::unprocessable("body", "body, path and commit_id are required");
    };
    if let Some(too_long) = body_too_long(&comment_body) {
        return too_long;
    }
    let Some(pull) = state.pulls.get(&number) else {
        return Answer::not_found();
    };
    if !pull.heads.contains(&commit_id) {
        return Answer::unprocessable("commit_id", "commit_id is not part of the pull request");
    }
    if !state.in_diff(pull, &path) {
        return Answer::unprocessable("path", "path could not be resolved");
    }
    let (line, start_line) = (line("line"), line("start_line"));
    if let Some(line) = line {
        let refused = [Some(line), start_line]
            .into_iter()
            .flatten()
            .any(|l| !state.commentable(pull, &path, l));
        if refused || start_line.is_some_and(|s| s > line) {
            return Answer::unprocessable(
                "pull_request_review_thread.line",
                "could not be resolved",
            );
        }
    } else if text("subject_type").as_deref() != Some("file") {
        return Answer::unprocessable("line", "line or subject_type file is required");
    }
    let in_reply_to = body.get("in_reply_to").and_then(Value::as_u64);
    let id = create_review_comment(
        state,
        number,
        login,
        NewReview {
            body: comment_body,
            path,
            line,
            start_line,
            commit_id,
            in_reply_to,
        },
    );
    created_review(state, id)
}

pub(super) fn created_review(state: &State, id: u64) -> Answer {
    match state.review_comments.iter().find(|c| c.id == id) {
        Some(comment) => Answer::json(StatusCode::CREATED, review_json(state, comment)),
        None => Answer::not_found(),
    }
}

pub(super) fn issue_json(state: &State, c: &IssueComment) -> Value {
    let full = state.full_name();
    json!({
        "id": c.id,
        "node_id": format!("IC_kwDOsim{}", c.id),
        "url": format!("{}/repos/{full}/issues/comments/{}", state.base_url, c.id),
        "html_url": format!("https://github.com/{full}/pull/{}#issuecomment-{}", c.number, c.id),
        "issue_url": format!("{}/repos/{full}/issues/{}", state.base_url, c.number),
        "body": c.body,
        "user": state.account(&c.author),
        "created_at": timestamp(c.created_at),
        "updated_at": timestamp(c.updated_at),
        "author_association": "CONTRIBUTOR",
    })
}

pub(super) fn review_json(state: &State, c: &ReviewComment) -> Value {
    let full = state.full_name();
    let mut value = json!({
        "id": c.id,
        "node_id": format!("PRRC_kwDOsim{}", c.id),
        "url": format!("{}/repos/{full}/pulls/comments/{}", state.base_url, c.id),
        "html_url": format!("https://github.com/{full}/pull/{}#discussion_r{}", c.number, c.id),
        "pull_request_url": format!("{}/repos/{full}/pulls/{}", state.base_url, c.number),
        "pull_request_review_id": c.id + 1,
        "diff_hunk": "@@ -1 +1 @@",
        "path": c.path,
        "commit_id": c.commit_id,
        "original_commit_id": c.commit_id,
        "user": state.account(&c.author),
        "body": c.body,
        "created_at": timestamp(c.created_at),
        "updated_at": timestamp(c.updated_at),
        "author_association": "CONTRIBUTOR",
        "line": c.line,
        "original_line": c.line,
        "start_line": c.start_line,
        "side": "RIGHT",
        "subject_type": if c.line.is_some() { "line" } else { "file" },
    });
    if let Some(to) = c.in_reply_to {
        value["in_reply_to_id"] = json!(to);
    }
    value
}
