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

    pub async fn file_error_report(
        &self,
        input: &[u8],
    ) -> Result<Outcome<ErrorReportOutcome>, AppError> {
        let report = bugloop_intake::read(input).map_err(|e| AppError::Invalid(e.to_string()))?;
        let repository = Tracked::at(&self.git, self.report_commit())?;
        let located = bugloop_intake::locate(&report, &repository);
        let fingerprint = bugloop_intake::fingerprint(&report, &located, &repository);
        let text = bugloop_intake::issue(&report, &located, &fingerprint, &repository);
        let marker = bugloop_intake::fingerprint_marker(&fingerprint);
        let draft = IssueDraft {
            title: text.title.clone(),
            body: text.body,
            labels: vec![
                bugloop_forge::tracker::REPORT_LABEL.to_owned(),
                self.settings.config.labels.trigger.clone(),
            ],
        };
        let counted = match &self.github_issues {
            Some(github) => {
                GitHubTracker::new(&github.forge, self.git.clone(), &github.remote)
                    .fenced(github.fence.clone())
                    .report(&fingerprint, &marker, &draft)
                    .await?
            }
            None => self
                .tracker()?
                .report(&fingerprint, &marker, &draft)
                .await
                .map_err(|source| AppError::Store {
                    repository: self.git.root().to_path_buf(),
                    source,
                })?,
        };
        // The report is counted already: a regression that stops half way is said, not an
        // error, since a retry would count the report twice. Its record says where it stopped,
        // and the next report of the error or `solve N` goes on from there.
        let mut warnings = Vec::new();
        let regression = if counted.filed {
            None
        } else {
            self.regression(counted.number, counted.count)
                .await
                .unwrap_or_else(|error| {
                    warnings.push(format!(
                        "issue #{}: the report was counted, but handling it as a regression \
                         stopped: {error}; the next report of this error, or `bugloop solve {}`, \
                         goes on",
                        counted.number, counted.number
                    ));
                    None
                })
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
            },
            Verdict::Done,
        );
        outcome.warnings = warnings;
        Ok(outcome)
    }
}
