//! The REST operations a review bot needs, typed, with only the fields bugloop reads. Listings
//! follow every page (100 a page).

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::transport::Safety;
use crate::{GitHubClient, GitHubError, Repo, check_body};

mod types;

pub use self::types::{
    Account, CollaboratorPermission, CommitChecks, Issue, IssueComment, Label, LabelEvent,
    NewPullRequest, NewReviewComment, PullRequest, PullRequestSide, RepoRef, Review, ReviewComment,
};

/// A repository-wide comment listing (`issues` or `pulls`) since a time, as GitHub writes times.
fn since_path(repo: &Repo, kind: &str, since: jiff::Timestamp) -> String {
    format!(
        "/repos/{repo}/{kind}/comments?since={}",
        since.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
}

fn decode<T: DeserializeOwned>(operation: &str, value: Value) -> Result<T, GitHubError> {
    serde_json::from_value(value).map_err(|e| GitHubError::Decode {
        operation: operation.to_owned(),
        message: e.to_string(),
    })
}

impl GitHubClient {
    /// Every item of a listing, page by page.
    async fn list<T: DeserializeOwned>(&self, path: &str) -> Result<Vec<T>, GitHubError> {
        Ok(self.list_at_most(path, usize::MAX).await?.0)
    }

    /// Like `list`, but at most `pages` pages: the items and whether they are all there is.
    async fn list_at_most<T: DeserializeOwned>(
        &self,
        path: &str,
        pages: usize,
    ) -> Result<(Vec<T>, bool), GitHubError> {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut url = Some(format!("{}{separator}per_page=100", self.url(path)));
        let mut items = Vec::new();
        for _ in 0..pages {
            let Some(current) = url else {
                return Ok((items, true));
            };
            let page = self
                .transport
                .send(Method::GET, &current, None, Safety::Read)
                .await?;
            let batch: Vec<T> = decode(&format!("GET {path}"), page.body)?;
            items.extend(batch);
            url = page.next;
        }
        let complete = url.is_none();
        Ok((items, complete))
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        safety: Safety,
    ) -> Result<T, GitHubError> {
        let operation = format!("{method} {path}");
        let page = self
            .transport
            .send(method, &self.url(path), body, safety)
            .await?;
        decode(&operation, page.body)
    }

    /// A write whose JSON is `{"body": body}` (comments and replies), refused before sending
    /// when GitHub would refuse the body's length.
    async fn with_body<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: &str,
        safety: Safety,
    ) -> Result<T, GitHubError> {
        check_body(&format!("{method} {path}"), body)?;
        self.call(method, path, Some(&json!({"body": body})), safety)
            .await
    }

    pub async fn issue_comments(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        self.list(&format!("/repos/{repo}/issues/{number}/comments"))
            .await
    }

    /// The conversation comments in the repository updated at or after `since` (GitHub filters
    /// by the last update), at most `pages` pages of 100: the comments and whether that is all.
    pub async fn repository_issue_comments_since(
        &self,
        repo: &Repo,
        since: jiff::Timestamp,
        pages: usize,
    ) -> Result<(Vec<IssueComment>, bool), GitHubError> {
        self.list_at_most(&since_path(repo, "issues", since), pages)
            .await
    }

    /// The line comments in the repository updated at or after `since`, as above.
    pub async fn repository_review_comments_since(
        &self,
        repo: &Repo,
        since: jiff::Timestamp,
        pages: usize,
    ) -> Result<(Vec<ReviewComment>, bool), GitHubError> {
        self.list_at_most(&since_path(repo, "pulls", since), pages)
            .await
    }

    pub async fn create_issue_comment(
        &self,
        repo: &Repo,
        number: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        let path = format!("/repos/{repo}/issues/{number}/comments");
        self.with_body(Method::POST, &path, body, Safety::Create)
            .await
    }

    pub async fn update_issue_comment(
        &self,
        repo: &Repo,
        id: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        let path = format!("/repos/{repo}/issues/comments/{id}");
        self.with_body(Method::PATCH, &path, body, Safety::Idempotent)
            .await
    }

    pub async fn review_comments(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<ReviewComment>, GitHubError> {
        self.list(&format!("/repos/{repo}/pulls/{number}/comments"))
            .await
    }

    pub async fn create_review_comment(
        &self,
        repo: &Repo,
        number: u64,
        comment: &NewReviewComment,
    ) -> Result<ReviewComment, GitHubError> {
        let path = format!("/repos/{repo}/pulls/{number}/comments");
        check_body(&format!("POST {path}"), &comment.body)?;
        let mut body = json!({
            "body": comment.body,
            "commit_id": comment.commit_id,
            "path": comment.path,
        });
        match comment.line {
            Some(line) => {
                body["line"] = json!(line);
                body["side"] = json!(comment.side);
                if let Some(start) = comment.start_line.filter(|start| *start < line) {
                    body["start_line"] = json!(start);
                    body["start_side"] = json!(comment.side);
                }
            }
            None => body["subject_type"] = json!("file"),
        }
        self.call(Method::POST, &path, Some(&body), Safety::Create)
            .await
    }

    pub async fn reply_to_review_comment(
        &self,
        repo: &Repo,
        number: u64,
        to: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError> {
        let path = format!("/repos/{repo}/pulls/{number}/comments/{to}/replies");
        self.with_body(Method::POST, &path, body, Safety::Create)
            .await
    }

    pub async fn update_review_comment(
        &self,
        repo: &Repo,
        id: u64,
        body: &str,
    ) -> Result<ReviewComment, GitHubError> {
        let path = format!("/repos/{repo}/pulls/comments/{id}");
        self.with_body(Method::PATCH, &path, body, Safety::Idempotent)
            .await
    }

    /// One conversation comment by its id, when GitHub has it and it is on issue or pull
    /// request `number` of `repo` (what an event says about a comment is never taken as is).
    pub async fn issue_comment(
        &self,
        repo: &Repo,
        number: u64,
        id: u64,
    ) -> Result<Option<IssueComment>, GitHubError> {
        let found: Result<IssueComment, _> = self
            .call(
                Method::GET,
                &format!("/repos/{repo}/issues/comments/{id}"),
                None,
                Safety::Idempotent,
            )
            .await;
        match found {
            Ok(comment) if on(comment.issue_url.as_deref(), "issues", number) => Ok(Some(comment)),
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// One review comment by its id, when GitHub has it on pull request `number` of `repo`.
    pub async fn review_comment(
        &self,
        repo: &Repo,
        number: u64,
        id: u64,
    ) -> Result<Option<ReviewComment>, GitHubError> {
        let found: Result<ReviewComment, _> = self
            .call(
                Method::GET,
                &format!("/repos/{repo}/pulls/comments/{id}"),
                None,
                Safety::Idempotent,
            )
            .await;
        match found {
            Ok(comment) if on(comment.pull_request_url.as_deref(), "pulls", number) => {
                Ok(Some(comment))
            }
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// One submitted review of pull request `number` by its id, when GitHub has it.
    pub async fn pull_review(
        &self,
        repo: &Repo,
        number: u64,
        id: u64,
    ) -> Result<Option<Review>, GitHubError> {
        let found: Result<Review, _> = self
            .call(
                Method::GET,
                &format!("/repos/{repo}/pulls/{number}/reviews/{id}"),
                None,
                Safety::Idempotent,
            )
            .await;
        match found {
            Ok(review) if on(review.pull_request_url.as_deref(), "pulls", number) => {
                Ok(Some(review))
            }
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Deletes one of the bot's conversation comments; one already gone counts as deleted.
    pub async fn delete_issue_comment(&self, repo: &Repo, id: u64) -> Result<(), GitHubError> {
        self.delete(&format!("/repos/{repo}/issues/comments/{id}"))
            .await
    }

    /// Deletes one of the bot's review comments; one already gone counts as deleted.
    pub async fn delete_review_comment(&self, repo: &Repo, id: u64) -> Result<(), GitHubError> {
        self.delete(&format!("/repos/{repo}/pulls/comments/{id}"))
            .await
    }

    async fn delete(&self, path: &str) -> Result<(), GitHubError> {
        match self
            .call::<Value>(Method::DELETE, path, None, Safety::Idempotent)
            .await
        {
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    pub async fn pull_request(&self, repo: &Repo, number: u64) -> Result<PullRequest, GitHubError> {
        self.call(
            Method::GET,
            &format!("/repos/{repo}/pulls/{number}"),
            None,
            Safety::Read,
        )
        .await
    }

    /// Replaces a pull request's description.
    pub async fn set_pull_request_body(
        &self,
        repo: &Repo,
        number: u64,
        body: &str,
    ) -> Result<PullRequest, GitHubError> {
        self.call(
            Method::PATCH,
            &format!("/repos/{repo}/pulls/{number}"),
            Some(&json!({"body": body})),
            Safety::Idempotent,
        )
        .await
    }

    pub async fn collaborator_permission(
        &self,
        repo: &Repo,
        user: &str,
    ) -> Result<CollaboratorPermission, GitHubError> {
        self.call(
            Method::GET,
            &format!("/repos/{repo}/collaborators/{user}/permission"),
            None,
            Safety::Read,
        )
        .await
    }

    pub async fn add_labels(
        &self,
        repo: &Repo,
        number: u64,
        labels: &[&str],
    ) -> Result<(), GitHubError> {
        let path = format!("/repos/{repo}/issues/{number}/labels");
        let _: Value = self
            .call(
                Method::POST,
                &path,
                Some(&json!({"labels": labels})),
                Safety::Idempotent,
            )
            .await?;
        Ok(())
    }

    /// Assigns `login` to an issue (`assigned`) or takes it off. GitHub ignores a login that
    /// may not be assigned (not a collaborator) and says nothing; the issue it returns says
    /// who is assigned.
    pub async fn set_assignee(
        &self,
        repo: &Repo,
        number: u64,
        login: &str,
        assigned: bool,
    ) -> Result<Issue, GitHubError> {
        let path = format!("/repos/{repo}/issues/{number}/assignees");
        let method = if assigned {
            Method::POST
        } else {
            Method::DELETE
        };
        self.call(
            method,
            &path,
            Some(&json!({"assignees": [login]})),
            Safety::Idempotent,
        )
        .await
    }

    /// Removes a label; one that is not there is not an error.
    pub async fn remove_label(
        &self,
        repo: &Repo,
        number: u64,
        label: &str,
    ) -> Result<(), GitHubError> {
        let encoded: String = label
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let path = format!("/repos/{repo}/issues/{number}/labels/{encoded}");
        match self
            .call::<Value>(Method::DELETE, &path, None, Safety::Idempotent)
            .await
        {
            Ok(_) | Err(GitHubError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The people asked to review a pull request (who decide disputes bot and author cannot).
    pub async fn requested_reviewers(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<String>, GitHubError> {
        let value: Value = self
            .call(
                Method::GET,
                &format!("/repos/{repo}/pulls/{number}/requested_reviewers"),
                None,
                Safety::Read,
            )
            .await?;
        let users: Vec<Account> = decode(
            "GET requested_reviewers",
            value.get("users").cloned().unwrap_or(json!([])),
        )?;
        Ok(users.into_iter().map(|u| u.login).collect())
    }

    pub async fn create_pull_request(
        &self,
        repo: &Repo,
        pull: &NewPullRequest,
    ) -> Result<PullRequest, GitHubError> {
        let path = format!("/repos/{repo}/pulls");
        check_body(&format!("POST {path}"), &pull.body)?;
        let body = json!({"title": pull.title, "body": pull.body, "head": pull.head,
                          "base": pull.base, "draft": pull.draft});
        self.call(Method::POST, &path, Some(&body), Safety::Create)
            .await
    }

    pub async fn create_issue(
        &self,
        repo: &Repo,
        title: &str,
        body: &str,
        labels: &[&str],
    ) -> Result<Issue, GitHubError> {
        let path = format!("/repos/{repo}/issues");
        check_body(&format!("POST {path}"), body)?;
        let request = json!({"title": title, "body": body, "labels": labels});
        self.call(Method::POST, &path, Some(&request), Safety::Create)
            .await
    }

    pub async fn issue(&self, repo: &Repo, number: u64) -> Result<Issue, GitHubError> {
        self.call(
            Method::GET,
            &format!("/repos/{repo}/issues/{number}"),
            None,
            Safety::Read,
        )
        .await
    }

    /// The issues (open and closed) labelled `label` that `creator` opened, newest first; pull
    /// requests are left out.
    pub async fn issues_labelled(
        &self,
        repo: &Repo,
        label: &str,
        creator: &str,
    ) -> Result<Vec<Issue>, GitHubError> {
        let encode = |text: &str| -> String {
            text.bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect()
        };
        let issues: Vec<Issue> = self
            .list(&format!(
                "/repos/{repo}/issues?state=all&labels={}&creator={}",
                encode(label),
                encode(creator)
            ))
            .await?;
        Ok(issues
            .into_iter()
            .filter(|i| i.pull_request.is_none())
            .collect())
    }

    /// The `labeled` events of issue `number`, oldest first: who put which label on, when.
    pub async fn label_events(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<LabelEvent>, GitHubError> {
        #[derive(Deserialize)]
        struct Event {
            event: String,
            #[serde(default)]
            actor: Option<Account>,
            #[serde(default)]
            label: Option<Label>,
            created_at: String,
        }
        let events: Vec<Event> = self
            .list(&format!("/repos/{repo}/issues/{number}/events"))
            .await?;
        Ok(events
            .into_iter()
            .filter(|e| e.event == "labeled")
            .filter_map(|e| {
                Some(LabelEvent {
                    label: e.label?.name,
                    actor: e.actor?.login,
                    created_at: e.created_at,
                })
            })
            .collect())
    }

    /// Replaces an issue's body.
    pub async fn update_issue_body(
        &self,
        repo: &Repo,
        number: u64,
        body: &str,
    ) -> Result<Issue, GitHubError> {
        self.with_body(
            Method::PATCH,
            &format!("/repos/{repo}/issues/{number}"),
            body,
            Safety::Idempotent,
        )
        .await
    }

    /// Opens or closes an issue (`open` or `closed`).
    pub async fn set_issue_state(
        &self,
        repo: &Repo,
        number: u64,
        state: &str,
    ) -> Result<Issue, GitHubError> {
        self.call(
            Method::PATCH,
            &format!("/repos/{repo}/issues/{number}"),
            Some(&json!({"state": state})),
            Safety::Idempotent,
        )
        .await
    }

    /// The App's installation on `repo` (asked with the App's JWT: any of the App's clients may
    /// ask, whatever installation it was made for).
    pub async fn repository_installation(&self, repo: &Repo) -> Result<u64, GitHubError> {
        let operation = format!("GET /repos/{repo}/installation");
        let page = self
            .transport
            .send_as_app(
                Method::GET,
                &self.url(&format!("/repos/{repo}/installation")),
                Safety::Read,
            )
            .await?;
        page.body
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| GitHubError::Decode {
                operation,
                message: "no `id`".to_owned(),
            })
    }

    /// The open pull requests from `branch` of `repo` itself.
    pub async fn open_pull_requests_from(
        &self,
        repo: &Repo,
        branch: &str,
    ) -> Result<Vec<PullRequest>, GitHubError> {
        let head: String = format!("{}:{branch}", repo.owner)
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b':') {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        self.list(&format!("/repos/{repo}/pulls?state=open&head={head}"))
            .await
    }

    /// A pull request's reviews, oldest first.
    pub async fn pull_reviews(&self, repo: &Repo, number: u64) -> Result<Vec<Review>, GitHubError> {
        self.list(&format!("/repos/{repo}/pulls/{number}/reviews"))
            .await
    }

    /// The check runs and the combined status of a commit.
    pub async fn commit_checks(
        &self,
        repo: &Repo,
        commit: &str,
    ) -> Result<CommitChecks, GitHubError> {
        // Check runs come a hundred a page, the total beside them: every page is read (up to
        // ten), so a failing run on a later page is not missed.
        let mut all: Vec<Value> = Vec::new();
        for page in 1..=10 {
            let runs: Value = self
                .call(
                    Method::GET,
                    &format!("/repos/{repo}/commits/{commit}/check-runs?per_page=100&page={page}"),
                    None,
                    Safety::Read,
                )
                .await?;
            let batch = runs["check_runs"].as_array().cloned().unwrap_or_default();
            let total = runs["total_count"].as_u64().unwrap_or(0);
            let empty = batch.is_empty();
            all.extend(batch);
            if empty || all.len() as u64 >= total {
                break;
            }
        }
        let status: Value = self
            .call(
                Method::GET,
                &format!("/repos/{repo}/commits/{commit}/status"),
                None,
                Safety::Read,
            )
            .await?;
        Ok(CommitChecks {
            runs: all
                .iter()
                .map(|run| {
                    (
                        run["name"].as_str().unwrap_or_default().to_owned(),
                        run["status"].as_str().unwrap_or_default().to_owned(),
                        run["conclusion"].as_str().map(str::to_owned),
                    )
                })
                .collect(),
            combined_status: status["state"].as_str().unwrap_or("pending").to_owned(),
            statuses: status["total_count"].as_u64().unwrap_or(0),
        })
    }

    /// The login the token writes as, for a user token (`GET /user`).
    pub async fn user_login(&self) -> Result<String, GitHubError> {
        let account: Account = self.call(Method::GET, "/user", None, Safety::Read).await?;
        Ok(account.login)
    }

    /// An App's bot login (`<slug>[bot]`), from `GET /app` with the App's JWT.
    pub async fn app_bot_login(&self) -> Result<String, GitHubError> {
        let page = self
            .transport
            .send_as_app(Method::GET, &self.url("/app"), Safety::Read)
            .await?;
        let app: Value = page.body;
        let slug = app
            .get("slug")
            .and_then(Value::as_str)
            .ok_or_else(|| GitHubError::Decode {
                operation: "GET /app".to_owned(),
                message: "no `slug`".to_owned(),
            })?;
        Ok(format!("{slug}[bot]"))
    }
}

/// Whether `url` (an API address such as `.../repos/o/r/issues/7`) is `<kind>/<number>`.
fn on(url: Option<&str>, kind: &str, number: u64) -> bool {
    url.is_some_and(|url| url.ends_with(&format!("/{kind}/{number}")))
}
