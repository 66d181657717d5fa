//! The HTTP side: every request is authenticated, logged, checked against the injected faults,
//! then routed by method and path to the REST operation (or to GraphQL), all under one lock.

use axum::body::{Body, to_bytes};
use axum::extract::State as AxumState;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::answer::{Answer, Asked};
use crate::state::{Fault, IssueComment, RequestRecord, ReviewComment, State, timestamp};
use crate::{MAX_BODY_CHARS, Shared, lock};

mod comments;

pub(crate) use self::comments::{NewReview, create_issue_comment, create_review_comment, reply};
use self::comments::{created_review, issue_json, new_review_comment, review_json};

pub(crate) async fn handle(
    AxumState(shared): AxumState<Shared>,
    request: Request<Body>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    let method = parts.method.as_str().to_owned();
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path_is_graphql = path == "/graphql";
    let operation = path_is_graphql.then(|| {
        json.get("operationName")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned()
    });
    let latency = lock(&shared).latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let mut state = lock(&shared);
    let (answer, after_write_status) =
        answer(&mut state, &parts.headers, &method, &path, &query, &json);
    let mut status = after_write_status.unwrap_or(answer.status);
    // GitHub tags every successful read; one whose body the client already has costs nothing
    // and carries nothing.
    let tagged = answer.etag || (method == "GET" && answer.status == StatusCode::OK);
    let etag = tagged.then(|| {
        let text = answer
            .body
            .as_ref()
            .map(Value::to_string)
            .unwrap_or_default();
        format!("W/\"{}\"", hex::encode(Sha256::digest(text.as_bytes())))
    });
    let not_modified = etag.as_deref().is_some_and(|etag| {
        parts
            .headers
            .get("if-none-match")
            .and_then(|v| v.to_str().ok())
            == Some(etag)
    });
    if not_modified {
        status = StatusCode::NOT_MODIFIED;
    } else {
        state.rate_remaining = state.rate_remaining.saturating_sub(1);
    }
    state.requests.push(RequestRecord {
        method,
        path,
        query,
        status: status.as_u16(),
        operation,
    });
    // GraphQL has a budget of its own, as on GitHub.
    let resource = if path_is_graphql { "graphql" } else { "core" };
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .header("x-ratelimit-limit", "5000")
        .header("x-ratelimit-remaining", state.rate_remaining.to_string())
        .header(
            "x-ratelimit-used",
            (5000 - state.rate_remaining).to_string(),
        )
        .header("x-ratelimit-reset", (state.clock + 3600).to_string())
        .header("x-ratelimit-resource", resource);
    drop(state);
    if let Some(etag) = &etag {
        builder = builder.header("etag", etag);
    }
    if let Some(link) = &answer.link {
        builder = builder.header("link", link);
    }
    if let Some(seconds) = answer.retry_after {
        builder = builder.header("retry-after", seconds.to_string());
    }
    let text = match (after_write_status, not_modified, &answer.body) {
        (Some(_), _, _) => "<html><body><h1>502 Bad Gateway</h1></body></html>".to_owned(),
        (None, true, _) | (None, false, None) => String::new(),
        (None, false, Some(body)) => body.to_string(),
    };
    builder
        .body(Body::from(text))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}

/// The answer, and the status a fault puts in its place after the work was done.
fn answer(
    state: &mut State,
    headers: &HeaderMap,
    method: &str,
    path: &str,
    query: &str,
    body: &Value,
) -> (Answer, Option<StatusCode>) {
    // An App's JWT is taken by the App's own endpoints only.
    if path == "/app" || path.starts_with("/app/") || path.ends_with("/installation") {
        return (app_endpoint(state, headers, method, path), None);
    }
    let Some(login) = authenticated(state, headers) else {
        return (
            Answer::error(StatusCode::UNAUTHORIZED, "Bad credentials"),
            None,
        );
    };
    let request = Asked {
        login: &login,
        method,
        query,
        body,
    };
    let fault = state
        .faults
        .iter()
        .position(|f| f.matches(method, path))
        .map(|at| state.faults.remove(at));
    match fault {
        Some(Fault::Fail { status, .. }) => (
            Answer::error(
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                "Server Error",
            ),
            None,
        ),
        Some(Fault::SecondaryRateLimit {
            retry_after_secs, ..
        }) => {
            let mut answer = Answer::error(
                StatusCode::FORBIDDEN,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            );
            answer.retry_after = Some(retry_after_secs);
            (answer, None)
        }
        Some(Fault::FailAfterWrite { status, .. }) => (
            route(state, &request, path),
            Some(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY)),
        ),
        _ => (route(state, &request, path), None),
    }
}

fn app_endpoint(state: &mut State, headers: &HeaderMap, method: &str, path: &str) -> Answer {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let jwt = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let Some(app) = jwt.and_then(|jwt| crate::app::app_of_jwt(state, jwt, now)) else {
        return Answer::error(
            StatusCode::UNAUTHORIZED,
            "A JSON web token could not be decoded",
        );
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let answer = match (method, segments.as_slice()) {
        ("GET", ["app"]) => crate::app::describe(state, app).map(Answer::ok),
        ("GET", ["repos", owner, name, "installation"])
            if *owner == state.owner && *name == state.name =>
        {
            let installation = state
                .apps
                .iter()
                .find(|a| a.id == app)
                .and_then(|a| a.installations.first().copied());
            installation.map(|id| Answer::ok(json!({"id": id, "app_id": app})))
        }
        ("POST", ["app", "installations", id, "access_tokens"]) => id
            .parse()
            .ok()
            .and_then(|id| crate::app::installation_token(state, app, id, now))
            .map(|token| Answer::json(StatusCode::CREATED, token)),
        _ => None,
    };
    answer.unwrap_or_else(|| Answer::error(StatusCode::NOT_FOUND, "Not Found"))
}

fn authenticated(state: &State, headers: &HeaderMap) -> Option<String> {
    let value = headers
        .get("authorization")
        .map(HeaderValue::to_str)?
        .ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("token "))?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if state
        .token_expiry
        .get(token)
        .is_some_and(|expires| *expires <= now)
    {
        return None;
    }
    state.tokens.get(token).cloned()
}

fn route(state: &mut State, request: &Asked, path: &str) -> Answer {
    let Asked {
        login,
        method,
        body,
        ..
    } = *request;
    if path == "/graphql" && method == "POST" {
        return crate::graphql::answer(state, body);
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["user"]) => Answer::ok(state.account(login)),
        (_, ["repos", owner, name, rest @ ..]) if *owner == state.owner && *name == state.name => {
            repository(state, request, rest)
        }
        _ => Answer::not_found(),
    }
}

fn number(text: &str) -> Option<u64> {
    text.parse().ok()
}

fn repository(state: &mut State, request: &Asked, rest: &[&str]) -> Answer {
    if let Some(answer) = crate::issues::route(state, request, rest) {
        return answer;
    }
    let Asked {
        login,
        method,
        query,
        body,
    } = *request;
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    match (method, rest) {
        // The repository's comments, `since` a time (GitHub compares the last update).
        ("GET", ["pulls", "comments"]) => comments_since::<ReviewComment>(state, query),
        ("GET", ["issues", "comments"]) => comments_since::<IssueComment>(state, query),
        ("GET", ["pulls", n]) => number(n).map_or_else(Answer::not_found, |n| pull(state, n)),
        ("GET", ["pulls", n, "comments"]) => match number(n) {
            Some(n) if state.pulls.contains_key(&n) => {
                comments_on::<ReviewComment>(state, n, query)
            }
            _ => Answer::not_found(),
        },
        ("POST", ["pulls", n, "comments"]) => match number(n) {
            Some(n) if state.pulls.contains_key(&n) => {
                crate::issues::refresh(state, n);
                new_review_comment(state, login, n, body)
            }
            _ => Answer::not_found(),
        },
        ("POST", ["pulls", n, "comments", id, "replies"]) => {
            let (Some(n), Some(id), Some(text)) = (number(n), number(id), text("body")) else {
                return Answer::not_found();
            };
            if let Some(too_long) = body_too_long(&text) {
                return too_long;
            }
            match reply(state, n, login, id, &text) {
                Some(created) => created_review(state, created),
                None => Answer::not_found(),
            }
        }
        ("PATCH", ["pulls", "comments", id]) => {
            edited::<ReviewComment>(state, number(id), login, text("body"))
        }
        ("GET", ["issues", n, "comments"]) => match number(n) {
            Some(n) if state.has_conversation(n) => comments_on::<IssueComment>(state, n, query),
            _ => Answer::not_found(),
        },
        ("POST", ["issues", n, "comments"]) => match (number(n), text("body")) {
            (Some(n), Some(text)) if state.has_conversation(n) => {
                if let Some(too_long) = body_too_long(&text) {
                    return too_long;
                }
                let id = create_issue_comment(state, n, login, &text);
                let comment = state.issue_comments.iter().find(|c| c.id == id).cloned();
                comment.map_or_else(Answer::not_found, |c| {
                    Answer::json(StatusCode::CREATED, issue_json(state, &c))
                })
            }
            _ => Answer::not_found(),
        },
        ("GET", ["issues", "comments", id]) => comment::<IssueComment>(state, id),
        ("GET", ["pulls", "comments", id]) => comment::<ReviewComment>(state, id),
        ("PATCH", ["issues", "comments", id]) => {
            edited::<IssueComment>(state, number(id), login, text("body"))
        }
        ("DELETE", ["issues", "comments", id]) => {
            let at = match own_position::<IssueComment>(state, number(id), login) {
                Ok(at) => at,
                Err(refused) => return refused,
            };
            state.issue_comments.remove(at);
            no_content()
        }
        ("DELETE", ["pulls", "comments", id]) => {
            let at = match own_position::<ReviewComment>(state, number(id), login) {
                Ok(at) => at,
                Err(refused) => return refused,
            };
            let gone = state.review_comments.remove(at);
            // A thread goes with its last comment; otherwise its first reply leads it.
            let next = state
                .review_comments
                .iter()
                .find(|c| c.thread == gone.thread)
                .map(|c| c.id);
            match next {
                Some(next) => {
                    for thread in state.threads.iter_mut().filter(|t| t.id == gone.thread) {
                        thread.root = next;
                    }
                }
                None => state.threads.retain(|t| t.id != gone.thread),
            }
            no_content()
        }
        ("GET", ["collaborators", user, "permission"]) => match state.permissions.get(*user) {
            Some(role) => {
                // The legacy field folds maintain into write and triage into read.
                let permission = match role.as_str() {
                    "admin" => "admin",
                    "maintain" | "write" => "write",
                    _ => "read",
                };
                Answer::ok(
                    json!({"permission": permission, "role_name": role, "user": state.account(user)}),
                )
            }
            None => Answer::error(StatusCode::NOT_FOUND, &format!("{user} is not a user")),
        },
        ("GET", ["pulls", n, "requested_reviewers"]) => {
            match number(n).and_then(|n| state.pulls.get(&n)) {
                Some(pull) => {
                    let users: Vec<Value> = pull
                        .requested_reviewers
                        .iter()
                        .map(|l| state.account(l))
                        .collect();
                    Answer::ok(json!({"users": users, "teams": []}))
                }
                None => Answer::not_found(),
            }
        }
        ("POST", ["issues", n, "labels"]) => {
            let labels: Vec<String> = body
                .get("labels")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            match number(n).and_then(|n| state.pulls.get_mut(&n)) {
                Some(pull) => {
                    for label in labels {
                        if !pull.labels.contains(&label) {
                            pull.labels.push(label);
                        }
                    }
                    Answer::ok(json!(
                        pull.labels
                            .iter()
                            .map(|name| json!({"name": name}))
                            .collect::<Vec<_>>()
                    ))
                }
                None => Answer::not_found(),
            }
        }
        ("DELETE", ["issues", n, "labels", label]) => {
            match number(n).and_then(|n| state.pulls.get_mut(&n)) {
                Some(pull) if pull.labels.iter().any(|l| l == label) => {
                    pull.labels.retain(|l| l != label);
                    Answer::ok(json!(
                        pull.labels
                            .iter()
                            .map(|name| json!({"name": name}))
                            .collect::<Vec<_>>()
                    ))
                }
                _ => Answer::error(StatusCode::NOT_FOUND, "Label does not exist"),
            }
        }
        ("GET", ["commits", _, "check-runs"]) => {
            Answer::ok(json!({"total_count": 0, "check_runs": []}))
        }
        ("GET", ["commits", _, "status"]) => {
            Answer::ok(json!({"state": "success", "statuses": [], "total_count": 0}))
        }
        _ => Answer::not_found(),
    }
}

/// A comment of either kind, as listing, reading, editing and deleting see it.
trait CommentKind: Clone {
    /// A review comment (on the diff), not a conversation one.
    const REVIEW: bool;
    /// The path segment of its kind: `pulls` or `issues`.
    const KIND: &'static str;
    fn all(state: &State) -> &[Self];
    fn all_mut(state: &mut State) -> &mut [Self];
    fn json(state: &State, comment: &Self) -> Value;
    fn id(&self) -> u64;
    fn number(&self) -> u64;
    fn updated_at(&self) -> u64;
    fn author(&self) -> &str;
    fn set_body(&mut self, body: String, now: u64);
}

/// The two comment records keep the same fields: the impl differs only in the kind's
/// constants, the list it lives in and how it is shown.
macro_rules! comment_kind {
    ($record:ty, review: $review:expr, kind: $kind:expr, list: $list:ident, json: $json:path) => {
        impl CommentKind for $record {
            const REVIEW: bool = $review;
            const KIND: &'static str = $kind;
            fn all(state: &State) -> &[Self] {
                &state.$list
            }
            fn all_mut(state: &mut State) -> &mut [Self] {
                &mut state.$list
            }
            fn json(state: &State, comment: &Self) -> Value {
                $json(state, comment)
            }
            fn id(&self) -> u64 {
                self.id
            }
            fn number(&self) -> u64 {
                self.number
            }
            fn updated_at(&self) -> u64 {
                self.updated_at
            }
            fn author(&self) -> &str {
                &self.author
            }
            fn set_body(&mut self, body: String, now: u64) {
                self.body = body;
                self.updated_at = now;
            }
        }
    };
}

comment_kind!(IssueComment, review: false, kind: "issues", list: issue_comments, json: issue_json);
comment_kind!(ReviewComment, review: true, kind: "pulls", list: review_comments, json: review_json);

/// The repository's comments of one kind, `since` a time (GitHub compares the last update).
fn comments_since<T: CommentKind>(state: &State, query: &str) -> Answer {
    let since = since(query);
    let items: Vec<Value> = T::all(state)
        .iter()
        .filter(|c| !state.is_hidden(T::REVIEW, c.id()))
        .filter(|c| {
            since
                .as_deref()
                .is_none_or(|s| timestamp(c.updated_at()).as_str() >= s)
        })
        .map(|c| T::json(state, c))
        .collect();
    page(
        state,
        &format!("/repos/{}/{}/comments", state.full_name(), T::KIND),
        query,
        items,
    )
}

/// The comments of one kind on pull request or issue `n`, a listing that hidden ones count.
fn comments_on<T: CommentKind>(state: &mut State, n: u64, query: &str) -> Answer {
    let items: Vec<Value> = T::all(state)
        .iter()
        .filter(|c| c.number() == n && !state.is_hidden(T::REVIEW, c.id()))
        .map(|c| T::json(state, c))
        .collect();
    state.listed(T::REVIEW);
    page(
        state,
        &format!("/repos/{}/{}/{n}/comments", state.full_name(), T::KIND),
        query,
        items,
    )
}

/// Comment `id` of one kind.
fn comment<T: CommentKind>(state: &State, id: &str) -> Answer {
    match number(id).and_then(|id| T::all(state).iter().find(|c| c.id() == id)) {
        Some(comment) => Answer::ok(T::json(state, comment)),
        None => Answer::not_found(),
    }
}

/// The edit of comment `id` of one kind by `login`, answered with the comment as edited.
fn edited<T: CommentKind>(
    state: &mut State,
    id: Option<u64>,
    login: &str,
    body: Option<String>,
) -> Answer {
    let now = state.tick();
    match edit(T::all_mut(state), id, login, body, now) {
        Ok(comment) => Answer::ok(T::json(state, &comment)),
        Err(refused) => refused,
    }
}

/// Where comment `id` of one kind stands, when `login` wrote it and so may delete it.
fn own_position<T: CommentKind>(
    state: &State,
    id: Option<u64>,
    login: &str,
) -> Result<usize, Answer> {
    let Some(at) = id.and_then(|id| T::all(state).iter().position(|c| c.id() == id)) else {
        return Err(Answer::not_found());
    };
    if T::all(state)[at].author() != login {
        return Err(Answer::error(
            StatusCode::FORBIDDEN,
            "Must have admin rights to Repository.",
        ));
    }
    Ok(at)
}

/// An edit of comment `id` by `login`: only its author may, within the body limit.
fn edit<T: CommentKind>(
    comments: &mut [T],
    id: Option<u64>,
    login: &str,
    body: Option<String>,
    now: u64,
) -> Result<T, Answer> {
    let (Some(id), Some(body)) = (id, body) else {
        return Err(Answer::not_found());
    };
    if let Some(too_long) = body_too_long(&body) {
        return Err(too_long);
    }
    let comment = comments
        .iter_mut()
        .find(|c| c.id() == id)
        .ok_or_else(Answer::not_found)?;
    if comment.author() != login {
        return Err(Answer::error(
            StatusCode::FORBIDDEN,
            "Must have admin rights to Repository.",
        ));
    }
    comment.set_body(body, now);
    Ok(comment.clone())
}

fn no_content() -> Answer {
    Answer {
        status: StatusCode::NO_CONTENT,
        body: None,
        link: None,
        retry_after: None,
        etag: false,
    }
}

fn body_too_long(body: &str) -> Option<Answer> {
    (body.chars().count() > MAX_BODY_CHARS).then(|| {
        Answer::json(
            StatusCode::UNPROCESSABLE_ENTITY,
            json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": format!("body is too long (maximum is {MAX_BODY_CHARS} characters)")}]}),
        )
    })
}

fn pull(state: &mut State, number: u64) -> Answer {
    // A head move waiting on this many reads happens now.
    let reads = state.pulls.get(&number).map(|p| p.reads);
    let Some(reads) = reads else {
        return Answer::not_found();
    };
    let moved = state.faults.iter().position(|f| {
        matches!(f, Fault::MoveHead { number: n, after_pull_reads, .. } if *n == number && reads >= *after_pull_reads)
    });
    if let Some(at) = moved
        && let Fault::MoveHead { sha, .. } = state.faults.remove(at)
        && let Some(pull) = state.pulls.get_mut(&number)
    {
        pull.spec.head_sha.clone_from(&sha);
        pull.heads.push(sha);
    }
    crate::issues::refresh(state, number);
    let Some(pull) = state.pulls.get_mut(&number) else {
        return Answer::not_found();
    };
    pull.reads += 1;
    crate::issues::pull_json(state, number).unwrap_or_else(Answer::not_found)
}

/// A listing's `since` (RFC 3339 as GitHub's own times are written, `Z` and whole seconds).
fn since(query: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("since="))
        .map(|v| v.replace("%3A", ":"))
}

/// A listing page: `per_page` (default 30, at most 100) from `page` (default 1), with GitHub's
/// `Link` header.
fn page(state: &State, path: &str, query: &str, items: Vec<Value>) -> Answer {
    let param = |key: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
            .and_then(|v| v.parse::<usize>().ok())
    };
    let per_page = param("per_page").unwrap_or(30).clamp(1, 100);
    let page = param("page").unwrap_or(1).max(1);
    let last = items.len().div_ceil(per_page).max(1);
    let shown: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let url = |p: usize| format!("<{}{path}?per_page={per_page}&page={p}>", state.base_url);
    let mut links = Vec::new();
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
        links.push(format!("{}; rel=\"prev\"", url(page - 1)));
    }
    Answer {
        status: StatusCode::OK,
        body: Some(Value::Array(shown)),
        link: (!links.is_empty()).then(|| links.join(", ")),
        retry_after: None,
        etag: true,
    }
}
