//! What the REST operations send and read: GitHub's objects with only the fields bugloop reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Account {
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

/// A comment on a pull request's conversation (an issue comment).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    pub user: Option<Account>,
    pub created_at: jiff::Timestamp,
    /// The issue or pull request it is on (`.../issues/<number>`).
    #[serde(default)]
    pub issue_url: Option<String>,
}

/// A comment on a line (or a file) of a pull request's diff.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    pub body: String,
    pub user: Option<Account>,
    pub created_at: jiff::Timestamp,
    pub path: String,
    #[serde(default)]
    pub line: Option<u32>,
    #[serde(default)]
    pub start_line: Option<u32>,
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    pub commit_id: String,
    /// The pull request it is on (`.../pulls/<number>`).
    #[serde(default)]
    pub pull_request_url: Option<String>,
}

/// Which side of the diff a line comment is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum PullRequestSide {
    Left,
    Right,
}

/// A new review comment: on a line (or a range ending at `line`) of the head side, or, with no
/// line, on the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewReviewComment {
    pub body: String,
    pub commit_id: String,
    pub path: String,
    pub line: Option<u32>,
    pub start_line: Option<u32>,
    pub side: PullRequestSide,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RepoRef {
    pub full_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestSideRef {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
    #[serde(default)]
    pub repo: Option<RepoRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub node_id: String,
    #[serde(default)]
    pub title: String,
    pub state: String,
    #[serde(default)]
    pub draft: Option<bool>,
    pub user: Option<Account>,
    pub head: PullRequestSideRef,
    pub base: PullRequestSideRef,
    /// Whether it was merged (the single pull request's read says; listings leave it out).
    #[serde(default)]
    pub merged: Option<bool>,
    /// Once merged, the commit on the base that brought it in (merge, squash or rebase).
    #[serde(default)]
    pub merge_commit_sha: Option<String>,
    /// Its description.
    #[serde(default)]
    pub body: Option<String>,
}

/// A label's name, as GitHub lists an issue's labels.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    pub name: String,
}

/// Who put a label on an issue, and when: one of its `labeled` events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelEvent {
    pub label: String,
    pub actor: String,
    /// RFC 3339, as GitHub gives it.
    pub created_at: String,
}

/// A review of a pull request: who, and `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`,
/// `DISMISSED` or `PENDING`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    pub user: Option<Account>,
    pub state: String,
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub submitted_at: Option<jiff::Timestamp>,
    /// The head it was given on.
    #[serde(default)]
    pub commit_id: Option<String>,
    /// The pull request it is on (`.../pulls/<number>`).
    #[serde(default)]
    pub pull_request_url: Option<String>,
}

/// What a user may do in a repository.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CollaboratorPermission {
    /// `admin`, `write`, `read` or `none` (GitHub folds maintain into write, triage into read).
    pub permission: String,
    /// The role itself: `admin`, `maintain`, `write`, `triage`, `read` or a custom role.
    #[serde(default)]
    pub role_name: Option<String>,
}

impl CollaboratorPermission {
    /// May this user have bugloop change the branch, or get a finding conceded?
    pub fn can_write(&self) -> bool {
        matches!(self.permission.as_str(), "admin" | "write")
            || matches!(
                self.role_name.as_deref(),
                Some("admin" | "maintain" | "write")
            )
    }
}

/// A new pull request (bugloop opens drafts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPullRequest {
    pub title: String,
    pub body: String,
    /// The branch with the change.
    pub head: String,
    /// The branch it goes into.
    pub base: String,
    pub draft: bool,
}

/// An issue, as created or read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub state: String,
    #[serde(default)]
    pub user: Option<Account>,
    #[serde(default)]
    pub labels: Vec<Label>,
    #[serde(default)]
    pub assignees: Vec<Account>,
    /// Present when the issue is a pull request (GitHub numbers both alike).
    #[serde(default)]
    pub pull_request: Option<Value>,
    /// When it was opened.
    #[serde(default)]
    pub created_at: Option<jiff::Timestamp>,
}

/// What the checks and statuses on a commit say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommitChecks {
    /// Check runs by name: (status, conclusion once completed).
    pub runs: Vec<(String, String, Option<String>)>,
    /// The combined commit status: `success`, `pending` or `failure` (`pending` also when
    /// there is no status at all).
    pub combined_status: String,
    /// How many commit statuses there are.
    pub statuses: u64,
}

impl CommitChecks {
    /// Every check run completed without failing, and the combined status is not a failure.
    pub fn all_green(&self) -> bool {
        self.runs.iter().all(|(_, status, conclusion)| {
            status == "completed"
                && matches!(
                    conclusion.as_deref(),
                    Some("success" | "neutral" | "skipped")
                )
        }) && self.combined_status != "failure"
            && self.combined_status != "error"
    }
}
