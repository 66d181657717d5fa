//! Issues and change requests, for the solve pipeline: the issue it solves (with labels and
//! the record of its state machine), the branch a solution is published on, the draft change
//! request, its checks and the ready flag. The conversations themselves (the issue's comments,
//! the change request's review threads) go through [`crate::Forge`] under the keys given here.
//! Implementations: the local forge (the embedded store and the repository's branches) and
//! GitHub (issues and pull requests).

use async_trait::async_trait;
use bugloop_domain::learning::Pattern;
use bugloop_domain::solve::SolveState;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::{ChangeKey, ForgeError};

/// An issue as the solver reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrackedIssue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    /// Who it is assigned to.
    pub assignees: Vec<String>,
    pub open: bool,
    /// When it was opened, where the forge says.
    pub opened_at: Option<Timestamp>,
    /// Where its comments are.
    pub conversation: ChangeKey,
    /// The error pattern of an issue bugloop filed from reports (never read from anyone
    /// else's issue).
    pub pattern: Option<Pattern>,
}

/// An issue bugloop filed from reports, with its record: what the learning record is read
/// from.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternIssue {
    pub number: u64,
    pub pattern: Pattern,
    pub history: Vec<SolveTransition>,
}

/// The most issues of a pattern the learning record reads (the newest): each is a read of its
/// record on the forge.
pub const LEARNING_ISSUES: usize = 50;

/// A label put on an issue: by whom, when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Labelling {
    pub actor: String,
    pub at: Timestamp,
}

/// The label every issue filed from an error report carries (where a forge finds them again).
pub const REPORT_LABEL: &str = "bug";

/// Where a change request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeRequestState {
    Open,
    Closed,
    Merged,
}

/// A change request (a pull request on GitHub).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeRequest {
    pub number: u64,
    pub title: String,
    pub branch: String,
    pub base: String,
    pub draft: bool,
    pub state: ChangeRequestState,
    /// Where its review threads are.
    pub conversation: ChangeKey,
    /// Its address on the forge, where it has one.
    pub url: Option<String>,
    /// Once merged, the commit on its base that brought it in (a merge commit, a squash
    /// commit, or its own tip when its base was fast-forwarded), where the forge says.
    pub merge_commit: Option<String>,
}

/// A draft change request to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftRequest {
    pub title: String,
    pub body: String,
    pub branch: String,
    pub base: String,
    /// The issue it closes, if it closes one (a revert does not).
    pub closes: Option<u64>,
}

/// A step to record: `from -> to`, why, and what the pipeline resumes from.
#[derive(Debug, Clone, Copy)]
pub struct NewTransition<'a> {
    pub from: Option<SolveState>,
    pub to: SolveState,
    pub reason: &'a str,
    pub detail: &'a serde_json::Value,
}

impl NewTransition<'_> {
    /// The step as recorded at `at`.
    pub fn recorded_at(&self, at: Timestamp) -> SolveTransition {
        SolveTransition {
            from: self.from,
            to: self.to,
            reason: self.reason.to_owned(),
            detail: self.detail.clone(),
            at,
        }
    }
}

/// One recorded step of an issue's state machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SolveTransition {
    pub from: Option<SolveState>,
    pub to: SolveState,
    pub reason: String,
    /// What the pipeline resumes from (the branch, the change request, an attempt's outcome).
    pub detail: serde_json::Value,
    pub at: Timestamp,
}

/// A review given on one head of a change request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeadReview {
    pub reviewer: String,
    /// It asks for changes (a comment-only or approving review does not).
    pub changes_requested: bool,
}

/// A check on a commit (a CI job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    /// `None` while it runs.
    pub passed: Option<bool>,
}

/// An issue to file from an error report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueDraft {
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
}

/// What reporting an error did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportCount {
    pub number: u64,
    pub title: String,
    pub labels: Vec<String>,
    /// Reports of its fingerprint so far, this one included.
    pub count: u64,
    /// Filed by this report (`false`: counted on the issue filed before).
    pub filed: bool,
}

/// Refuses a name git would not take for a branch, before any branch is moved or pushed.
pub(crate) fn check_branch_name(git: &bugloop_git::Git, branch: &str) -> Result<(), ForgeError> {
    git.run(&["check-ref-format", "--branch", branch])
        .map(drop)
        .map_err(|_| ForgeError::Invalid(format!("{branch:?} is not a branch name")))
}

/// A branch that is no longer where the run left it is never overwritten: this says it was not
/// `done` (moved, pushed) and why.
pub(crate) fn branch_moved(branch: &str, done: &str, error: impl std::fmt::Display) -> ForgeError {
    ForgeError::Invalid(format!(
        "branch {branch} was not where this run left it, so it was not {done}: {error}"
    ))
}

#[async_trait]
pub trait Tracker: Send + Sync + std::fmt::Debug {
    /// An error report: counted on the issue filed for `fingerprint`, or filed as `draft` when
    /// there is none. `marker` is the fingerprint's hidden line in the draft's body, which finds
    /// the issue again where the forge keeps no fingerprints of its own.
    async fn report(
        &self,
        fingerprint: &str,
        marker: &str,
        draft: &IssueDraft,
    ) -> Result<ReportCount, ForgeError>;

    async fn issue(&self, number: u64) -> Result<TrackedIssue, ForgeError>;

    /// The issues bugloop filed from reports that share `pattern`'s fingerprint or class,
    /// with their records, newest first, at most [`LEARNING_ISSUES`].
    async fn pattern_issues(&self, pattern: &Pattern) -> Result<Vec<PatternIssue>, ForgeError>;

    async fn add_labels(&self, issue: u64, labels: &[String]) -> Result<(), ForgeError>;

    /// Who put `label` on the issue and when, oldest first (where the forge records it: the
    /// local forge has no one but bugloop label issues, and says none).
    async fn labellings(&self, issue: u64, label: &str) -> Result<Vec<Labelling>, ForgeError>;

    /// Removes a label the issue may not have.
    async fn remove_label(&self, issue: u64, label: &str) -> Result<(), ForgeError>;

    /// Assigns the issue to `login` (`assigned`) or takes it off; as it is already is no error.
    async fn set_assignee(&self, issue: u64, login: &str, assigned: bool)
    -> Result<(), ForgeError>;

    /// The issue's transitions, oldest first.
    async fn solve_history(&self, issue: u64) -> Result<Vec<SolveTransition>, ForgeError>;

    /// Records `from -> to`; refused (`Invalid`) when the record does not end in `from`, so two
    /// runs cannot both take the same step.
    async fn record_transition(
        &self,
        issue: u64,
        step: NewTransition<'_>,
    ) -> Result<SolveTransition, ForgeError>;

    /// The commit `branch` points at on the forge, if it exists.
    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError>;

    /// Points `branch` at `commit`, only if it points at `previous` now (`None`: creates it,
    /// only if it does not exist). Never forced.
    async fn publish_branch(
        &self,
        branch: &str,
        commit: &str,
        previous: Option<&str>,
    ) -> Result<(), ForgeError>;

    /// Opens a draft change request, or returns the one open for its branch (a run that died
    /// after opening it does not open a second).
    async fn open_draft(&self, draft: &DraftRequest) -> Result<ChangeRequest, ForgeError>;

    async fn change_request(&self, number: u64) -> Result<ChangeRequest, ForgeError>;

    /// Closes an issue its merged change request closes (where the forge does not itself, as
    /// GitHub does for `Closes #N`).
    async fn close_solved(&self, issue: u64) -> Result<(), ForgeError>;

    /// Reopens a closed issue (an open one stays as it is).
    async fn reopen(&self, issue: u64) -> Result<(), ForgeError>;

    /// Marks a draft ready for review.
    async fn mark_ready(&self, number: u64) -> Result<(), ForgeError>;

    /// The checks on `commit` (none where the forge runs none).
    async fn checks(&self, commit: &str) -> Result<Vec<Check>, ForgeError>;

    /// Whether the latest review of a reviewer who may change the repository asks for changes.
    async fn changes_requested(&self, number: u64) -> Result<bool, ForgeError>;

    /// The reviews of change request `number` given on `commit` (any decision, a comment-only
    /// review too), oldest first, bugloop's own included where it reviewed.
    async fn reviews_of(&self, number: u64, commit: &str) -> Result<Vec<HeadReview>, ForgeError>;
}
