//! Issues and the pull requests a client opens: issues numbered with the pull requests, their
//! labels and conversation; pull requests created from branches of a git repository the test
//! names (GitHub's own git: the head and the diff are read from it, and follow pushes), listed by
//! head branch, merged by a test; reviews and check runs a test sets.

use std::path::Path;
use std::process::Command;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::answer::{Answer, Asked};
use crate::state::{Pull, PullSpec, SimIssue, State};

/// Answers the requests about issues and created pull requests; `None` for everything else.
pub(crate) fn route(state: &mut State, request: &Asked, rest: &[&str]) -> Option<Answer> {
    let Asked { login, body, .. } = *request;
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    let number = |n: &str| n.parse::<u64>().ok();
    Some(match (request.method, rest) {
        ("POST", ["issues"]) => {
            let Some(title) = text("title").filter(|t| !t.trim().is_empty()) else {
                return Some(Answer::unprocessable("title", "title is required"));
            };
            let body_text = text("body").unwrap_or_default();
            if body_text.chars().count() > crate::MAX_BODY_CHARS {
                return Some(Answer::unprocessable("body", "body is too long"));
            }
            let labels = strings(body.get("labels"));
            let number = state.next_number();
            let created_at = state.tick();
            state.issues.insert(
                number,
                SimIssue {
                    number,
                    title,
                    body: body_text,
                    author: login.to_owned(),
                    labels,
                    assignees: Vec::new(),
                    open: true,
                    created_at,
                },
            );
            Answer::json(StatusCode::CREATED, issue_json(state, number)?)
        }
        ("GET", ["issues"]) => {
            let param = |key: &str| query_param(request.query, key);
            let (label, creator) = (param("labels"), param("creator"));
            let all = param("state").as_deref() == Some("all");
            let numbers: Vec<u64> = state
                .issues
                .values()
                .rev()
                .filter(|i| all || i.open)
                .filter(|i| {
                    label
                        .as_deref()
                        .is_none_or(|l| i.labels.iter().any(|x| x == l))
                })
                .filter(|i| creator.as_deref().is_none_or(|c| i.author == c))
                .map(|i| i.number)
                .collect();
            let items: Vec<Value> = numbers
                .into_iter()
                .filter_map(|n| issue_json(state, n))
                .collect();
            Answer::ok(Value::Array(items))
        }
        ("PATCH", ["issues", n]) if state.issues.contains_key(&number(n)?) => {
            let n = number(n)?;
            let issue = state.issues.get_mut(&n)?;
            // Anyone who may write issues opens and closes them; only the author edits one.
            match text("state").as_deref() {
                Some("open") => issue.open = true,
                Some("closed") => issue.open = false,
                Some(_) => return Some(Answer::unprocessable("state", "is not open or closed")),
                None => {}
            }
            if issue.author != login && text("body").is_some() {
                return Some(Answer::error(
                    StatusCode::FORBIDDEN,
                    "Must have admin rights to Repository.",
                ));
            }
            if let Some(text) = text("body") {
                if text.chars().count() > crate::MAX_BODY_CHARS {
                    return Some(Answer::unprocessable("body", "body is too long"));
                }
                issue.body = text;
            }
            Answer::ok(issue_json(state, n)?)
        }
        ("GET", ["issues", n]) => {
            let n = number(n)?;
            refresh(state, n);
            issue_json(state, n).map_or_else(Answer::not_found, Answer::ok)
        }
        ("POST", ["issues", n, "labels"]) if state.issues.contains_key(&number(n)?) => {
            let labels = state.label_issue(number(n)?, strings(body.get("labels")), login);
            Answer::ok(labels_json(&labels))
        }
        ("GET", ["issues", n, "events"]) if state.issues.contains_key(&number(n)?) => {
            let n = number(n)?;
            let events: Vec<Value> = state
                .label_events
                .iter()
                .enumerate()
                .filter(|(_, e)| e.number == n)
                .map(|(i, e)| {
                    json!({
                        "id": 700_000_000 + i,
                        "node_id": format!("LE_sim{i}"),
                        "url": format!("{}/repos/{}/issues/events/{}", state.base_url, state.full_name(), 700_000_000 + i),
                        "actor": state.account(&e.actor),
                        "event": "labeled",
                        "commit_id": null,
                        "commit_url": null,
                        "created_at": crate::state::timestamp(e.created_at),
                        "label": {"name": e.label, "color": "ededed"},
                        "performed_via_github_app": null,
                    })
                })
                .collect();
            Answer::ok(Value::Array(events))
        }
        ("DELETE", ["issues", n, "labels", label]) if state.issues.contains_key(&number(n)?) => {
            let issue = state.issues.get_mut(&number(n)?)?;
            let label = percent_decode(label);
            if !issue.labels.contains(&label) {
                return Some(Answer::error(StatusCode::NOT_FOUND, "Label does not exist"));
            }
            issue.labels.retain(|l| *l != label);
            Answer::ok(labels_json(&issue.labels))
        }
        // GitHub takes only accounts that may be assigned (collaborators), ignoring the rest
        // without an error; the issue it answers with says who is assigned.
        ("POST" | "DELETE", ["issues", n, "assignees"])
            if state.issues.contains_key(&number(n)?) =>
        {
            let n = number(n)?;
            let assignable: Vec<String> = strings(body.get("assignees"))
                .into_iter()
                .filter(|login| state.permissions.contains_key(login))
                .collect();
            let issue = state.issues.get_mut(&n)?;
            for login in assignable {
                if request.method == "DELETE" {
                    issue.assignees.retain(|a| *a != login);
                } else if !issue.assignees.contains(&login) {
                    issue.assignees.push(login);
                }
            }
            Answer::json(StatusCode::CREATED, issue_json(state, n)?)
        }
        ("POST", ["pulls"]) => create_pull(state, login, body),
        ("PATCH", ["pulls", n]) if state.pulls.contains_key(&number(n)?) => {
            let n = number(n)?;
            if let Some(text) = text("body") {
                if text.chars().count() > crate::MAX_BODY_CHARS {
                    return Some(Answer::unprocessable("body", "body is too long"));
                }
                state.pulls.get_mut(&n)?.body = text;
            }
            pull_json(state, n)?
        }
        ("GET", ["pulls"]) => {
            let param = |key: &str| query_param(request.query, key);
            let head = param("head");
            let open_only = param("state").as_deref() != Some("all");
            let numbers: Vec<u64> = state
                .pulls
                .values()
                .filter(|p| !open_only || p.open)
                .filter(|p| {
                    head.as_deref().is_none_or(|h| {
                        h == format!("{}:{}", state.owner, p.spec.head_ref) && !p.spec.fork
                    })
                })
                .map(|p| p.spec.number)
                .collect();
            let mut items = Vec::new();
            for n in numbers {
                refresh(state, n);
                if let Answer {
                    body: Some(pull), ..
                } = pull_json(state, n)?
                {
                    items.push(pull);
                }
            }
            Answer::ok(Value::Array(items))
        }
        ("GET", ["pulls", n, "reviews"]) => {
            let n = number(n)?;
            if !state.pulls.contains_key(&n) {
                return Some(Answer::not_found());
            }
            let items: Vec<Value> = state
                .reviews
                .iter()
                .filter(|(pull, _, _)| *pull == n)
                .enumerate()
                .map(|(i, (_, user, review_state))| {
                    let id = 8_000_000_001u64 + i as u64;
                    json!({
                        "id": id,
                        "node_id": format!("PRR_kwDOsim{i}"),
                        "user": state.account(user),
                        "body": state.review_bodies.get(&id).cloned().unwrap_or_default(),
                        "state": review_state,
                        "commit_id": state.review_commits.get(&id).cloned().or_else(
                            || state.pulls.get(&n).map(|p| p.spec.head_sha.clone())
                        ),
                    })
                })
                .collect();
            Answer::ok(Value::Array(items))
        }
        ("GET", ["pulls", n, "reviews", id]) => {
            let n = number(n)?;
            let id = number(id)?;
            let full = state.full_name();
            let found = state
                .reviews
                .iter()
                .filter(|(pull, _, _)| *pull == n)
                .enumerate()
                .find(|(i, _)| 8_000_000_001u64 + *i as u64 == id);
            match found {
                Some((_, (_, user, review_state))) => Answer::ok(json!({
                    "id": id,
                    "user": state.account(user),
                    "body": state.review_bodies.get(&id).cloned().unwrap_or_default(),
                    "state": review_state,
                    "pull_request_url": format!("{}/repos/{full}/pulls/{n}", state.base_url),
                })),
                None => Answer::not_found(),
            }
        }
        ("GET", ["commits", sha, "check-runs"]) => {
            let runs: Vec<Value> = state
                .checks
                .iter()
                .filter(|(commit, _, _, _)| commit == sha || commit == "*")
                .enumerate()
                .map(|(i, (_, name, status, conclusion))| {
                    json!({"id": 9_000_000_001u64 + i as u64, "name": name, "status": status,
                           "conclusion": conclusion, "head_sha": sha})
                })
                .collect();
            Answer::ok(json!({"total_count": runs.len(), "check_runs": runs}))
        }
        _ => return None,
    })
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn labels_json(labels: &[String]) -> Value {
    json!(
        labels
            .iter()
            .map(|name| json!({"name": name}))
            .collect::<Vec<_>>()
    )
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = text.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An issue, or a pull request read as an issue (as GitHub answers both).
fn issue_json(state: &State, number: u64) -> Option<Value> {
    let full = state.full_name();
    if let Some(issue) = state.issues.get(&number) {
        return Some(json!({
            "id": 600_000_000 + number,
            "node_id": format!("I_kwDOsim{number}"),
            "number": number,
            "url": format!("{}/repos/{full}/issues/{number}", state.base_url),
            "html_url": format!("https://github.com/{full}/issues/{number}"),
            "title": issue.title,
            "body": issue.body,
            "user": state.account(&issue.author),
            "state": if issue.open { "open" } else { "closed" },
            "labels": labels_json(&issue.labels),
            "assignees": issue.assignees.iter().map(|a| state.account(a)).collect::<Vec<_>>(),
            "created_at": crate::state::timestamp(issue.created_at),
        }));
    }
    let pull = state.pulls.get(&number)?;
    Some(json!({
        "id": 600_000_000 + number,
        "node_id": format!("I_kwDOsim{number}"),
        "number": number,
        "url": format!("{}/repos/{full}/issues/{number}", state.base_url),
        "html_url": format!("https://github.com/{full}/pull/{number}"),
        "title": pull.spec.title,
        "body": pull.body,
        "user": state.account(&pull.spec.author),
        "state": if pull.open { "open" } else { "closed" },
        "labels": labels_json(&pull.labels),
        "pull_request": {"url": format!("{}/repos/{full}/pulls/{number}", state.base_url)},
    }))
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        // The repository may belong to the user bugloop runs as in a test.
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

fn branch_sha(dir: &Path, branch: &str) -> Option<String> {
    git(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}^{{commit}}"),
        ],
    )
    .map(|s| s.trim().to_owned())
}

/// A pull request opened from a branch follows the branch: a push moves its head and diff.
pub(crate) fn refresh(state: &mut State, number: u64) {
    let Some(dir) = state.git_dir.clone() else {
        return;
    };
    let Some(pull) = state.pulls.get_mut(&number) else {
        return;
    };
    if !pull.from_git || !pull.open {
        return;
    }
    let Some(head) = branch_sha(&dir, &pull.spec.head_ref) else {
        return;
    };
    if head != pull.spec.head_sha {
        pull.spec.diff = git(&dir, &["diff", &format!("{}...{head}", pull.spec.base_sha)]);
        pull.spec.head_sha.clone_from(&head);
        pull.heads.push(head);
    }
}

fn create_pull(state: &mut State, login: &str, body: &Value) -> Answer {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(title), Some(head), Some(base)) = (text("title"), text("head"), text("base")) else {
        return Answer::unprocessable("head", "title, head and base are required");
    };
    let head = head
        .strip_prefix(&format!("{}:", state.owner))
        .map_or(head.clone(), str::to_owned);
    let Some(dir) = state.git_dir.clone() else {
        return Answer::unprocessable(
            "head",
            "the simulator has no git repository to read branches from",
        );
    };
    let (Some(head_sha), Some(base_sha)) = (branch_sha(&dir, &head), branch_sha(&dir, &base))
    else {
        return Answer::unprocessable(
            "head",
            &format!("head {head} or base {base} is not a branch"),
        );
    };
    if state
        .pulls
        .values()
        .any(|p| p.open && p.spec.head_ref == head && !p.spec.fork)
    {
        return Answer::unprocessable(
            "head",
            &format!("A pull request already exists for {}:{head}.", state.owner),
        );
    }
    let merge_base = git(&dir, &["merge-base", &base_sha, &head_sha])
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| base_sha.clone());
    let number = state.next_number();
    let spec = PullSpec {
        number,
        title,
        author: login.to_owned(),
        base_ref: base,
        base_sha: merge_base.clone(),
        head_ref: head,
        head_sha: head_sha.clone(),
        fork: false,
        draft: body.get("draft").and_then(Value::as_bool).unwrap_or(false),
        diff: git(&dir, &["diff", &format!("{merge_base}...{head_sha}")]),
    };
    let mut pull = Pull::new(spec);
    pull.from_git = true;
    pull.body = text("body").unwrap_or_default();
    state.pulls.insert(number, pull);
    match pull_json(state, number) {
        Some(Answer {
            body: Some(created),
            ..
        }) => Answer::json(StatusCode::CREATED, created),
        _ => Answer::not_found(),
    }
}

/// A pull request as GitHub answers for it.
pub(crate) fn pull_json(state: &State, number: u64) -> Option<Answer> {
    let full_name = state.full_name();
    let pull = state.pulls.get(&number)?;
    let spec = pull.spec.clone();
    let node_id = pull.node_id.clone();
    let head_repo = if spec.fork {
        format!(
            "{}/{}",
            spec.author,
            full_name.split('/').nth(1).unwrap_or_default()
        )
    } else {
        full_name.clone()
    };
    Some(Answer::ok(json!({
        "url": format!("{}/repos/{full_name}/pulls/{number}", state.base_url),
        "id": 900_000_000 + number,
        "node_id": node_id,
        "number": number,
        "state": if pull.open { "open" } else { "closed" },
        "merged": pull.merged,
        "merge_commit_sha": pull.merge_commit,
        "locked": false,
        "title": spec.title,
        "user": state.account(&spec.author),
        "body": pull.body,
        "draft": spec.draft,
        "head": {"label": format!("{}:{}", spec.author, spec.head_ref), "ref": spec.head_ref, "sha": spec.head_sha, "repo": {"full_name": head_repo, "fork": spec.fork}},
        "base": {"label": format!("{}:{}", state.owner, spec.base_ref), "ref": spec.base_ref, "sha": spec.base_sha, "repo": {"full_name": full_name, "fork": false}},
        "html_url": format!("https://github.com/{full_name}/pull/{number}"),
    })))
}

/// The value of `key` in a request's query (`a=1&b=2`), decoded.
fn query_param(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
        .map(percent_decode)
}
