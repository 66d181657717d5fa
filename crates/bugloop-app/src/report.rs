//! `report`: an error report filed as an issue of the local forge (`bugloop-intake` reads,
//! locates and fingerprints it against the commit checked out), or counted on the issue
//! already filed for its fingerprint.

use bugloop_forge::github::GitHubTracker;
use bugloop_forge::tracker::{IssueDraft, Tracker};
use bugloop_git::Git;
use bugloop_intake::{Located, Repository, Severity};
use bugloop_report::solve::SolveReport;
use serde::Serialize;

use crate::{App, AppError, Outcome, Verdict};
use bugloop_solve::Regression;

/// What filing an error report did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorReportOutcome {
    /// The issue's number.
    pub issue: u64,
    /// Reports of this fingerprint so far, this one included.
    pub count: u64,
    /// Filed by this report (`false`: counted on the issue filed before).
    pub filed: bool,
    pub fingerprint: String,
    pub title: String,
    pub severity: Severity,
    pub labels: Vec<String>,
    /// The report's frames in the repository, innermost first.
    pub located: Vec<Located>,
    /// When the issue's solution had merged: the regression, as the issue's record now says
    /// (reopened, with the change request that reverts the solution, or escalated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regression: Option<SolveReport>,
    /// When the issue's solution had merged and its reproduction test still passes on the
    /// base's head: the report is another error, filed (or counted) as an issue of its own that
    /// names this one; the solution is left in place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub another_error: Option<AnotherError>,
}

/// A report counted on a solved issue that is not that issue's error coming back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnotherError {
    /// The issue it is filed or counted on.
    pub issue: u64,
    pub count: u64,
    pub filed: bool,
    /// Why it is not a regression of the solved issue.
    pub reason: String,
}

impl ErrorReportOutcome {
    /// Whether the report reopened its issue for solving again (a regression).
    pub fn reopened(&self) -> bool {
        self.regression.as_ref().and_then(|r| r.state)
            == Some(bugloop_domain::solve::SolveState::Open)
    }
}

/// The repository as the intake sees it: the files tracked at a commit (the one checked out;
/// on GitHub, the default branch's).
struct Tracked<'g> {
    git: &'g Git,
    head: Option<String>,
    files: Vec<String>,
}

impl<'g> Tracked<'g> {
    fn at(git: &'g Git, head: Option<String>) -> Result<Tracked<'g>, AppError> {
        let files = match &head {
            Some(head) => git
                .run_bytes(&["ls-tree", "-r", "-z", "--name-only", head])?
                .split(|b| *b == 0)
                .filter(|name| !name.is_empty())
                .filter_map(|name| std::str::from_utf8(name).ok().map(str::to_owned))
                .collect(),
            // A repository without a commit has nothing to find frames in.
            None => Vec::new(),
        };
        Ok(Tracked { git, head, files })
    }
}

impl Repository for Tracked<'_> {
    fn files(&self) -> &[String] {
        &self.files
    }

    fn read(&self, path: &str) -> Option<String> {
        let bytes = self.git.show(self.head.as_deref()?, path)?;
        String::from_utf8(bytes).ok()
    }
}

impl App {
    /// Files `input` (a stack trace, a log excerpt, JSON log lines) as an issue labelled `bug`
    /// and `labels.trigger`, or counts it on the issue of its fingerprint: in the local forge,
    /// or, opened on a GitHub repository's issues, on GitHub.
    /// The fingerprint `input` would be filed under (what `watch` dedupes by), without filing.
    pub fn error_fingerprint(&self, input: &[u8]) -> Result<String, AppError> {
        let report = bugloop_intake::read(input).map_err(|e| AppError::Invalid(e.to_string()))?;
        let repository = Tracked::at(&self.git, self.report_commit())?;
        let located = bugloop_intake::locate(&report, &repository);
        Ok(bugloop_intake::fingerprint(&report, &located, &repository))
    }

    /// The commit a report's frames are looked for in.
    fn report_commit(&self) -> Option<String> {
        match &self.github_issues {
            Some(github) => Some(github.base_sha.clone()),
            None => self.git.head(),
        }
    }

    /// Files `draft` under `fingerprint`, or counts it on the issue filed for it: on the local
    /// forge, or on GitHub's issues.
    async fn file_or_count(
        &self,
        fingerprint: &str,
        draft: &IssueDraft,
    ) -> Result<bugloop_forge::tracker::ReportCount, AppError> {
        let marker = bugloop_intake::fingerprint_marker(fingerprint);
        match &self.github_issues {
            Some(github) => Ok(
                GitHubTracker::new(&github.forge, self.git.clone(), &github.remote)
                    .fenced(github.fence.clone())
                    .report(fingerprint, &marker, draft)
                    .await?,
            ),
            None => self
                .tracker()?
                .report(fingerprint, &marker, draft)
                .await
                .map_err(|source| AppError::Store {
                    repository: self.git.root().to_path_buf(),
                    source,
                }),
        }
    }

    /// A report counted on solved issue `solved` that its solution's reproduction test says is
    /// another error (`reason`): filed as an issue of its own, under a fingerprint of its own
    /// (the error's and the solved issue's number), naming the solved issue; repeats count there.
    async fn file_another_error(
        &self,
        text: &bugloop_intake::IssueText,
        fingerprint: &str,
        solved: u64,
        reason: &str,
    ) -> Result<AnotherError, AppError> {
        let own = bugloop_intake::fingerprint_after(fingerprint, solved);
        let note = format!(
            "This error was reported after the solution of #{solved} merged, but it is not #{solved}'s \
             error coming back: {}. So it is filed as an issue of its own, and #{solved}'s \
             solution is left in place.\n\n",
            bugloop_domain::markdown::quiet(reason)
        );
        // The marker ends the body; the report quoted above it may hold look-alikes.
        let marker = bugloop_intake::fingerprint_marker(fingerprint);
        let body = match text.body.rfind(&marker) {
            Some(at) => format!(
                "{}{}{}",
                &text.body[..at],
                bugloop_intake::fingerprint_marker(&own),
                &text.body[at + marker.len()..]
            ),
            None => text.body.clone(),
        };
        let draft = IssueDraft {
            title: text.title.clone(),
            body: format!("{note}{body}"),
            labels: vec![
                bugloop_forge::tracker::REPORT_LABEL.to_owned(),
                self.settings.config.labels.trigger.clone(),
            ],
        };
        let counted = self.file_or_count(&own, &draft).await?;
        Ok(AnotherError {
            issue: counted.number,
            count: counted.count,
            filed: counted.filed,
            reason: reason.to_owned(),
        })
    }

    pub async fn file_error_report(
        &self,
        input: &[u8],
    ) -> Result<Outcome<ErrorReportOutcome>, AppError> {
        let report = bugloop_intake::read(input).map_err(|e| AppError::Invalid(e.to_string()))?;
        let repository = Tracked::at(&self.git, self.report_commit())?;
        let located = bugloop_intake::locate(&report, &repository);
        let fingerprint = bugloop_intake::fingerprint(&report, &located, &repository);
        let text = bugloop_intake::issue(&report, &located, &fingerprint, &repository);
        let draft = IssueDraft {
            title: text.title.clone(),
            body: text.body.clone(),
            labels: vec![
                bugloop_forge::tracker::REPORT_LABEL.to_owned(),
                self.settings.config.labels.trigger.clone(),
            ],
        };
        let counted = self.file_or_count(&fingerprint, &draft).await?;
        // The report is counted already: a regression that stops half way is said, not an
        // error, since a retry would count the report twice. Its record says where it stopped,
        // and the next report of the error or `solve N` goes on from there.
        let mut warnings = Vec::new();
        let mut another_error = None;
        let regression = if counted.filed {
            None
        } else {
            match self.regression(counted.number, counted.count).await {
                Ok(Regression::Repeat) => None,
                Ok(Regression::Handled(report)) => Some(*report),
                Ok(Regression::AnotherError { reason }) => {
                    let filed = self
                        .file_another_error(&text, &fingerprint, counted.number, &reason)
                        .await;
                    match filed {
                        Ok(filed) => another_error = Some(filed),
                        Err(error) => warnings.push(format!(
                            "issue #{}: the report was counted; it is not #{}'s error coming \
                             back ({reason}), but filing it as an issue of its own failed: {error}",
                            counted.number, counted.number
                        )),
                    }
                    None
                }
                Err(error) => {
                    warnings.push(format!(
                        "issue #{}: the report was counted, but handling it as a regression \
                         stopped: {error}; the next report of this error, or `bugloop solve {}`, \
                         goes on",
                        counted.number, counted.number
                    ));
                    None
                }
            }
        };
        let mut outcome = Outcome::new(
            ErrorReportOutcome {
                issue: counted.number,
                count: counted.count,
                filed: counted.filed,
                fingerprint,
                title: counted.title,
                severity: text.severity,
                labels: counted.labels,
                located,
                regression,
                another_error,
            },
            Verdict::Done,
        );
        outcome.warnings = warnings;
        Ok(outcome)
    }
}
