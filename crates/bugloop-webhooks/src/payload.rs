//! The payloads of the events bugloop handles, with only the fields it reads. GitHub's older
//! payloads lack some fields newer ones have, so whatever a job can do without is optional.

use serde::Deserialize;

use crate::WebhookError;

/// A user, an organisation or a bot.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Account {
    pub login: String,
    /// `User`, `Bot` or `Organization`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl Account {
    pub fn is_bot(&self) -> bool {
        self.kind.as_deref() == Some("Bot") || self.login.ends_with("[bot]")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Repository {
    pub full_name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Installation {
    pub id: u64,
}

/// One side of a pull request: its branch and commit, and the repository it lives in (none when
/// a fork was deleted).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Ref {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
    #[serde(default)]
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub draft: Option<bool>,
    pub user: Account,
    pub head: Ref,
    pub base: Ref,
}

impl PullRequest {
    /// From another repository (a fork, or a deleted one): review only, never writes or secrets.
    pub fn is_from_fork(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => head.full_name != base.full_name,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Label {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Issue {
    pub number: u64,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub user: Account,
    /// Present when the issue is a pull request.
    #[serde(default)]
    pub pull_request: Option<serde_json::Value>,
    #[serde(default)]
    pub labels: Vec<Label>,
}

/// An issue comment or a pull request review comment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    pub user: Account,
    /// A review comment's thread: the comment it answers.
    #[serde(default)]
    pub in_reply_to_id: Option<u64>,
    /// The author's standing in the repository, as GitHub says it (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `FIRST_TIME_CONTRIBUTOR`, `FIRST_TIMER`, `NONE`, ...).
    #[serde(default)]
    pub author_association: Option<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub line: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Review {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    pub user: Account,
    /// `commented`, `approved`, `changes_requested`, `dismissed`.
    #[serde(default)]
    pub state: Option<String>,
    /// The reviewer's standing in the repository, as on a comment.
    #[serde(default)]
    pub author_association: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub pull_request: PullRequest,
    pub repository: Repository,
    pub sender: Account,
    #[serde(default)]
    pub installation: Option<Installation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub issue: Issue,
    pub comment: Comment,
    pub repository: Repository,
    pub sender: Account,
    #[serde(default)]
    pub installation: Option<Installation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewCommentEvent {
    pub action: String,
    pub pull_request: PullRequest,
    pub comment: Comment,
    pub repository: Repository,
    pub sender: Account,
    #[serde(default)]
    pub installation: Option<Installation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReviewEvent {
    pub action: String,
    pub pull_request: PullRequest,
    pub review: Review,
    pub repository: Repository,
    pub sender: Account,
    #[serde(default)]
    pub installation: Option<Installation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct IssuesEvent {
    pub action: String,
    pub issue: Issue,
    #[serde(default)]
    pub label: Option<Label>,
    pub repository: Repository,
    pub sender: Account,
    #[serde(default)]
    pub installation: Option<Installation>,
}

/// A commit's checks finished (`check_suite`): a solve draft waiting for them may go on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuiteEvent {
    pub action: String,
    pub check_suite: CheckSuite,
    pub repository: Repository,
    #[serde(default)]
    pub installation: Option<Installation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuite {
    /// The branch the checked commit was pushed to (none for a tag or a detached commit).
    #[serde(default)]
    pub head_branch: Option<String>,
}

/// A workflow started by hand (an Action's `workflow_dispatch`), with its inputs as given.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WorkflowDispatchEvent {
    #[serde(default)]
    pub inputs: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    pub repository: Repository,
    pub sender: Account,
}

/// A comment author's standing, as GitHub's `author_association` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// The repository's owner (or no association given).
    Owner,
    /// A member of its organisation or a collaborator, of any permission (read included).
    Associated(String),
    /// No role in the repository.
    Outsider,
}

/// An event bugloop handles, or the name of one it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    PullRequest(Box<PullRequestEvent>),
    IssueComment(Box<IssueCommentEvent>),
    ReviewComment(Box<ReviewCommentEvent>),
    Review(Box<ReviewEvent>),
    Issues(Box<IssuesEvent>),
    CheckSuite(Box<CheckSuiteEvent>),
    WorkflowDispatch(Box<WorkflowDispatchEvent>),
    Unhandled(String),
}

impl Event {
    /// Whether the event is a comment (or a review's body) whose author GitHub says is neither the repository's
    /// owner, a member of its organisation nor a collaborator: anyone at all, on a public
    /// repository. (Who may have files changed is still asked of GitHub when the job runs.)
    pub fn comment_from_outsider(&self) -> bool {
        self.comment_standing() == Some(Standing::Outsider)
    }

    /// The standing of a comment's (or a review body's) author, as far as GitHub's association
    /// tells it; `None` for other events.
    pub fn comment_standing(&self) -> Option<Standing> {
        let (association, login) = match self {
            Event::IssueComment(event) => (&event.comment.author_association, &event.comment.user),
            Event::ReviewComment(event) => (&event.comment.author_association, &event.comment.user),
            // A review's body asks bugloop as a comment does.
            Event::Review(event) => (&event.review.author_association, &event.review.user),
            _ => return None,
        };
        Some(match association.as_deref() {
            Some("OWNER") | None => Standing::Owner,
            // A read-only collaborator or member is associated too: only GitHub's permission
            // tells whether they may write.
            Some("MEMBER" | "COLLABORATOR") => Standing::Associated(login.login.clone()),
            Some(_) => Standing::Outsider,
        })
    }
}

pub(crate) fn parse(name: &str, body: &[u8]) -> Result<Event, WebhookError> {
    fn read<T: serde::de::DeserializeOwned>(name: &str, body: &[u8]) -> Result<T, WebhookError> {
        let deserializer = &mut serde_json::Deserializer::from_slice(body);
        serde_path_to_error::deserialize(deserializer).map_err(|error| WebhookError::Payload {
            event: name.to_owned(),
            path: error.path().to_string(),
            message: error.into_inner().to_string(),
        })
    }
    Ok(match name {
        "pull_request" => Event::PullRequest(Box::new(read(name, body)?)),
        "issue_comment" => Event::IssueComment(Box::new(read(name, body)?)),
        "pull_request_review_comment" => Event::ReviewComment(Box::new(read(name, body)?)),
        "pull_request_review" => Event::Review(Box::new(read(name, body)?)),
        "issues" => Event::Issues(Box::new(read(name, body)?)),
        "check_suite" => Event::CheckSuite(Box::new(read(name, body)?)),
        "workflow_dispatch" => Event::WorkflowDispatch(Box::new(read(name, body)?)),
        other => Event::Unhandled(other.to_owned()),
    })
}
