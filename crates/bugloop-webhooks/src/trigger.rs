//! The job an event asks for, or why it asks for none. Decided from the payload alone, before
//! any work: events sent by bots (bugloop's own included) are dropped, comments must address
//! bugloop (a mention) or answer a review thread, and only the actions a loop handles count.

use bugloop_domain::job::JobKind;
use bugloop_domain::mention::mentions;

use crate::payload::{
    Account, CheckSuiteEvent, Event, Installation, IssueCommentEvent, IssuesEvent,
    PullRequestEvent, Repository, ReviewCommentEvent, ReviewEvent, WorkflowDispatchEvent,
};

/// Where a developer's comment was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommentKind {
    /// On the pull request's conversation.
    Issue,
    /// On a line of the diff (possibly a reply in a review thread).
    Review,
    /// The body of a submitted review.
    ReviewBody,
}

/// The priority of a job a person waits on (a review, an answer, a report to file): above
/// every issue's severity rank, so solving never holds them back.
pub const PRIORITY_WAITED_ON: i64 = 10;

/// What an event asks bugloop to do.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", tag = "job")]
pub enum Trigger {
    /// Review the pull request at this head (detection on push).
    Review {
        repository: String,
        number: u64,
        head: String,
        base: String,
        /// From a fork: review only, no writes to its branch and no secrets.
        fork: bool,
        installation: Option<u64>,
    },
    /// Act on a developer's comment (fix, do, think, or a reply in a finding's thread).
    Comment {
        repository: String,
        number: u64,
        kind: CommentKind,
        id: u64,
        body: String,
        author: String,
        in_reply_to: Option<u64>,
        installation: Option<u64>,
    },
    /// Audit and fix a pull request until an audit is clean, asked for by hand (a
    /// `workflow_dispatch` with the input `pull-request`).
    Converge {
        repository: String,
        number: u64,
        /// Who asked: they must have write access.
        requested_by: String,
    },
    /// An issue labelled for autofix (the solve pipeline), or one whose solving goes on.
    /// (Queued jobs keep the name `autofix`.)
    #[serde(rename = "autofix")]
    Solve {
        repository: String,
        issue: u64,
        installation: Option<u64>,
        /// The label that asked for it, which must be the repository's `labels.trigger`; `None`
        /// when no label did (a review of its draft, a report bugloop filed).
        #[serde(default)]
        label: Option<String>,
        /// Who put the label on: they must be able to change the repository.
        #[serde(default)]
        labelled_by: Option<String>,
        /// The issue's title and body when it was labelled
        /// (`bugloop_domain::solve::approval_digest`): what the labeller approved.
        #[serde(default)]
        approved: Option<String>,
        /// Filed by bugloop from an error report, and solved as the pipeline does: no label
        /// event of its own reaches the server (the App's events are dropped).
        #[serde(default)]
        filed_from_report: bool,
        /// How severe the issue is (`bugloop_domain::urgency`'s rank), when the event said:
        /// solving jobs are claimed most severe first.
        #[serde(default)]
        urgency: Option<u8>,
    },
    /// An error report sent to the server's report endpoint, to file as an issue (or count on
    /// the issue of its fingerprint); the installation is looked up when not known.
    /// (Queued jobs keep the name `report`.)
    #[serde(rename = "report")]
    ErrorReport {
        repository: String,
        report: String,
        installation: Option<u64>,
    },
}

impl Trigger {
    /// What kind of job it asks for.
    pub fn kind(&self) -> JobKind {
        match self {
            Trigger::Review { .. } => JobKind::Review,
            Trigger::Comment { .. } => JobKind::Comment,
            Trigger::Converge { .. } => JobKind::Converge,
            Trigger::Solve { .. } => JobKind::Solve,
            Trigger::ErrorReport { .. } => JobKind::ErrorReport,
        }
    }

    /// The conversation it is about, as the GitHub forge keys it (`github:owner/repo#7`): a
    /// server runs one job per conversation at a time. A repository's reports are one
    /// conversation (`github:owner/repo#reports`), so two of the same error file one issue.
    pub fn conversation(&self) -> String {
        let (repository, number) = match self {
            Trigger::ErrorReport { repository, .. } => {
                return format!("github:{repository}#reports");
            }
            Trigger::Review {
                repository, number, ..
            }
            | Trigger::Comment {
                repository, number, ..
            }
            | Trigger::Converge {
                repository, number, ..
            } => (repository, number),
            Trigger::Solve {
                repository, issue, ..
            } => (repository, issue),
        };
        format!("github:{repository}#{number}")
    }

    /// The repository it is about (`owner/name`).
    pub fn repository(&self) -> &str {
        match self {
            Trigger::Review { repository, .. }
            | Trigger::Comment { repository, .. }
            | Trigger::Converge { repository, .. }
            | Trigger::Solve { repository, .. }
            | Trigger::ErrorReport { repository, .. } => repository,
        }
    }

    /// The App installation the event came through.
    pub fn installation(&self) -> Option<u64> {
        match self {
            Trigger::Review { installation, .. }
            | Trigger::Comment { installation, .. }
            | Trigger::Solve { installation, .. }
            | Trigger::ErrorReport { installation, .. } => *installation,
            Trigger::Converge { .. } => None,
        }
    }

    /// The order its job is claimed in (`bugloop_queue::NewJob::priority`): what a person
    /// waits on first, then solving by the issue's severity (medium when unknown).
    pub fn priority(&self) -> i64 {
        match self {
            Trigger::Solve { urgency, .. } => {
                i64::from(urgency.unwrap_or(bugloop_domain::urgency::Urgency::MEDIUM.rank))
            }
            _ => PRIORITY_WAITED_ON,
        }
    }

    /// The head a review is for.
    pub fn head(&self) -> Option<&str> {
        match self {
            Trigger::Review { head, .. } => Some(head),
            _ => None,
        }
    }
}

/// Why an event asks for nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error("sent by {0}, a bot")]
    FromBot(String),
    #[error("{event} `{action}` is not something bugloop acts on")]
    Action { event: String, action: String },
    #[error("the pull request is a draft")]
    Draft,
    #[error("the comment does not mention @{0}")]
    NoMention(String),
    #[error("issue #{0} is not a pull request")]
    NotAPullRequest(u64),
    #[error("the label `{0}` is not bugloop's")]
    Label(String),
    #[error("bugloop does not handle {0} events")]
    Unhandled(String),
    #[error("the branch `{0}` is not one of the solve pipeline's")]
    NotSolving(String),
    #[error("the workflow's input `{0}` is missing or not a pull request number")]
    Input(String),
}

/// Who bugloop is and what it answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerSettings {
    /// The logins bugloop writes as (`my-app[bot]`, `github-actions[bot]`).
    pub bot_logins: Vec<String>,
    /// The name developers mention (`bugloop` for `@bugloop`).
    pub mention: String,
    /// The label that asks for a fix of an issue (`labels.trigger`).
    pub autofix_label: String,
    /// The label that approves a solution waiting for approval (`labels.approve`): put on an
    /// issue, its solving goes on (the job checks who put it on, and when).
    pub approve_label: String,
    /// The prefix of the solve pipeline's branches (`branch_prefix`): a review of a pull
    /// request from `<prefix><issue>-...` asks that issue's solving to go on.
    pub solve_branch_prefix: String,
}

/// The issue a solve pipeline's pull request is for, from its branch (`bugloop/12-slug`), when
/// it is one of the repository's own branches.
fn solving(pr: &crate::payload::PullRequest, prefix: &str) -> Option<u64> {
    if pr.is_from_fork() {
        return None;
    }
    issue_of_branch(&pr.head.branch, prefix)
}

/// The issue a solve branch (`<prefix><issue>-<slug>`) is for.
fn issue_of_branch(branch: &str, prefix: &str) -> Option<u64> {
    if prefix.is_empty() {
        return None;
    }
    let (number, _) = branch.strip_prefix(prefix)?.split_once('-')?;
    number.parse().ok().filter(|n| *n > 0)
}

/// A comment or review that does not address bugloop: on a solve draft the solving goes on
/// (and addresses it); elsewhere it asks for nothing.
fn unaddressed(
    pull_request: &crate::payload::PullRequest,
    repository: &Repository,
    installation: Option<&Installation>,
    settings: &TriggerSettings,
) -> Result<Trigger, Skip> {
    match solving(pull_request, &settings.solve_branch_prefix) {
        Some(issue) => Ok(solving_goes_on(repository, issue, installation)),
        None => Err(Skip::NoMention(settings.mention.clone())),
    }
}

/// The solving of `issue` going on (a review of its draft, its checks done): never a start.
fn solving_goes_on(
    repository: &Repository,
    issue: u64,
    installation: Option<&Installation>,
) -> Trigger {
    Trigger::Solve {
        repository: repository.full_name.clone(),
        issue,
        installation: installation.map(|i| i.id),
        label: None,
        labelled_by: None,
        approved: None,
        filed_from_report: false,
        urgency: None,
    }
}

/// The job `event` asks for.
pub fn trigger(event: &Event, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    match event {
        Event::PullRequest(e) => pull_request(e, settings),
        Event::IssueComment(e) => issue_comment(e, settings),
        Event::ReviewComment(e) => review_comment(e, settings),
        Event::Review(e) => review(e, settings),
        Event::Issues(e) => labelled_issue(e, settings),
        Event::CheckSuite(e) => check_suite(e, settings),
        Event::WorkflowDispatch(e) => workflow_dispatch(e, settings),
        Event::Unhandled(name) => Err(Skip::Unhandled(name.clone())),
    }
}

/// Events sent by a bot, or by one of bugloop's own logins, ask for nothing.
fn not_from_bot(sender: &Account, settings: &TriggerSettings) -> Result<(), Skip> {
    if sender.is_bot() || settings.bot_logins.iter().any(|l| l == &sender.login) {
        return Err(Skip::FromBot(sender.login.clone()));
    }
    Ok(())
}

/// Only `expected` actions of `event` ask for anything.
fn expect_action(event: &str, action: &str, expected: &[&str]) -> Result<(), Skip> {
    if expected.contains(&action) {
        return Ok(());
    }
    Err(Skip::Action {
        event: event.to_owned(),
        action: action.to_owned(),
    })
}

/// A push to a pull request ready for review: a review.
fn pull_request(e: &PullRequestEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    not_from_bot(&e.sender, settings)?;
    expect_action(
        "pull_request",
        &e.action,
        &["opened", "synchronize", "reopened", "ready_for_review"],
    )?;
    let pr = &e.pull_request;
    if pr.draft == Some(true) {
        return Err(Skip::Draft);
    }
    Ok(Trigger::Review {
        repository: e.repository.full_name.clone(),
        number: pr.number,
        head: pr.head.sha.clone(),
        base: pr.base.sha.clone(),
        fork: pr.is_from_fork(),
        installation: e.installation.as_ref().map(|i| i.id),
    })
}

/// A comment on a pull request's conversation that mentions bugloop.
fn issue_comment(e: &IssueCommentEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    not_from_bot(&e.sender, settings)?;
    expect_action("issue_comment", &e.action, &["created"])?;
    let body = e.comment.body.clone().unwrap_or_default();
    if e.issue.pull_request.is_none() {
        // On an issue: `@bugloop approve` lets a solution waiting for approval go on (the job
        // checks who wrote it and that a solution waits); nothing else on an issue asks for one.
        if mentions(&body, &settings.mention) && body.to_lowercase().contains("approve") {
            return Ok(solving_goes_on(
                &e.repository,
                e.issue.number,
                e.installation.as_ref(),
            ));
        }
        return Err(Skip::NotAPullRequest(e.issue.number));
    }
    if !mentions(&body, &settings.mention) {
        return Err(Skip::NoMention(settings.mention.clone()));
    }
    Ok(Trigger::Comment {
        repository: e.repository.full_name.clone(),
        number: e.issue.number,
        kind: CommentKind::Issue,
        id: e.comment.id,
        body,
        author: e.comment.user.login.clone(),
        in_reply_to: None,
        installation: e.installation.as_ref().map(|i| i.id),
    })
}

/// A comment on a line of the diff: one that mentions bugloop, a reply in a review thread (it
/// may answer one of bugloop's findings: the job reads the thread to know), or a reviewer's new
/// thread on a solve draft (the solving goes on and addresses it).
fn review_comment(e: &ReviewCommentEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    not_from_bot(&e.sender, settings)?;
    expect_action("pull_request_review_comment", &e.action, &["created"])?;
    let body = e.comment.body.clone().unwrap_or_default();
    let addressed = mentions(&body, &settings.mention);
    if !addressed && e.comment.in_reply_to_id.is_none() {
        return unaddressed(
            &e.pull_request,
            &e.repository,
            e.installation.as_ref(),
            settings,
        );
    }
    Ok(Trigger::Comment {
        repository: e.repository.full_name.clone(),
        number: e.pull_request.number,
        kind: CommentKind::Review,
        id: e.comment.id,
        body,
        author: e.comment.user.login.clone(),
        in_reply_to: e.comment.in_reply_to_id,
        installation: e.installation.as_ref().map(|i| i.id),
    })
}

/// A submitted review: its body when it mentions bugloop; on a solve draft (changes asked for,
/// say), the solving goes on. Another App's review of a solve draft (an external reviewer such
/// as CodeRabbit, `agents.reviewer.external`) has the solving go on too: it may be the review
/// the draft waits for. bugloop's own reviews ask for nothing: a server that does not know its
/// own login (`bot_logins` empty) takes no App's review, since it could be its own.
fn review(e: &ReviewEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    if let Err(skip) = not_from_bot(&e.sender, settings) {
        let other_app = !settings.bot_logins.is_empty()
            && !settings
                .bot_logins
                .iter()
                .any(|l| l.eq_ignore_ascii_case(&e.sender.login));
        return match solving(&e.pull_request, &settings.solve_branch_prefix) {
            Some(issue) if other_app && e.action == "submitted" => Ok(solving_goes_on(
                &e.repository,
                issue,
                e.installation.as_ref(),
            )),
            _ => Err(skip),
        };
    }
    expect_action("pull_request_review", &e.action, &["submitted"])?;
    let body = e.review.body.clone().unwrap_or_default();
    if !mentions(&body, &settings.mention) {
        return unaddressed(
            &e.pull_request,
            &e.repository,
            e.installation.as_ref(),
            settings,
        );
    }
    Ok(Trigger::Comment {
        repository: e.repository.full_name.clone(),
        number: e.pull_request.number,
        kind: CommentKind::ReviewBody,
        id: e.review.id,
        body,
        author: e.review.user.login.clone(),
        in_reply_to: None,
        installation: e.installation.as_ref().map(|i| i.id),
    })
}

/// An issue given the autofix label: solving it starts (the job checks who labelled it).
fn labelled_issue(e: &IssuesEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    not_from_bot(&e.sender, settings)?;
    expect_action("issues", &e.action, &["labeled"])?;
    let label = e.label.as_ref().map(|l| l.name.clone()).unwrap_or_default();
    if label == settings.approve_label && !label.is_empty() {
        return Ok(solving_goes_on(
            &e.repository,
            e.issue.number,
            e.installation.as_ref(),
        ));
    }
    if label != settings.autofix_label {
        return Err(Skip::Label(label));
    }
    Ok(Trigger::Solve {
        repository: e.repository.full_name.clone(),
        issue: e.issue.number,
        installation: e.installation.as_ref().map(|i| i.id),
        label: Some(label),
        labelled_by: Some(e.sender.login.clone()),
        approved: Some(bugloop_domain::solve::approval_digest(
            &e.issue.title,
            e.issue.body.as_deref().unwrap_or_default(),
        )),
        filed_from_report: false,
        urgency: Some(
            bugloop_domain::urgency::of_issue(
                e.issue.labels.iter().map(|l| l.name.as_str()),
                e.issue.body.as_deref().unwrap_or_default(),
                settings.bot_logins.contains(&e.issue.user.login),
            )
            .rank,
        ),
    })
}

/// Checks done on a solve draft's branch. Sent by whichever App ran the checks (often a bot):
/// it can only let an issue already taken go on, from the record, so who sent it does not
/// matter.
fn check_suite(e: &CheckSuiteEvent, settings: &TriggerSettings) -> Result<Trigger, Skip> {
    expect_action("check_suite", &e.action, &["completed"])?;
    let branch = e.check_suite.head_branch.as_deref().unwrap_or_default();
    let issue = issue_of_branch(branch, &settings.solve_branch_prefix)
        .ok_or_else(|| Skip::NotSolving(branch.to_owned()))?;
    Ok(solving_goes_on(
        &e.repository,
        issue,
        e.installation.as_ref(),
    ))
}

/// The workflow run by hand with a pull request's number: converge on it.
fn workflow_dispatch(
    e: &WorkflowDispatchEvent,
    settings: &TriggerSettings,
) -> Result<Trigger, Skip> {
    not_from_bot(&e.sender, settings)?;
    // Inputs arrive as strings; a number is accepted too.
    let number = e
        .inputs
        .as_ref()
        .and_then(|inputs| inputs.get("pull-request"))
        .and_then(|value| match value {
            serde_json::Value::String(text) => text.trim().trim_start_matches('#').parse().ok(),
            serde_json::Value::Number(number) => number.as_u64(),
            _ => None,
        })
        .ok_or_else(|| Skip::Input("pull-request".to_owned()))?;
    Ok(Trigger::Converge {
        repository: e.repository.full_name.clone(),
        number,
        requested_by: e.sender.login.clone(),
    })
}
