//! `report`: an error report filed as an issue of the local forge (`bugloop-intake` reads,
//! locates and fingerprints it against the commit checked out), or counted on the issue
//! already filed for its fingerprint.

use bugloop_git::Git;
use bugloop_intake::{Located, Repository, Severity};
use bugloop_store::NewIssue;
use serde::Serialize;

use crate::{App, AppError, Outcome, Verdict};

/// What filing an error report did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReportOutcome {
    /// The issue's number.
    pub issue: i64,
    /// Reports of this fingerprint so far, this one included.
    pub count: i64,
    /// Filed by this report (`false`: counted on the issue filed before).
    pub filed: bool,
    pub fingerprint: String,
    pub title: String,
    pub severity: Severity,
    pub labels: Vec<String>,
    /// The report's frames in the repository, innermost first.
    pub located: Vec<Located>,
}

/// The repository as the intake sees it: the files tracked at the commit checked out.
struct Tracked<'g> {
    git: &'g Git,
    head: Option<String>,
    files: Vec<String>,
}

impl<'g> Tracked<'g> {
    fn of(git: &'g Git) -> Result<Tracked<'g>, AppError> {
        let head = git.head();
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
    /// and `labels.trigger`, or counts it on the issue of its fingerprint.
    pub async fn report(&self, input: &[u8]) -> Result<Outcome<ReportOutcome>, AppError> {
        let report = bugloop_intake::read(input).map_err(|e| AppError::Invalid(e.to_string()))?;
        let repository = Tracked::of(&self.git)?;
        let located = bugloop_intake::locate(&report, &repository);
        let fingerprint = bugloop_intake::fingerprint(&report, &located);
        let text = bugloop_intake::issue(&report, &located, &fingerprint, &repository);
        let local = self.local_store("bugloop report")?;
        let labels = vec![
            "bug".to_owned(),
            self.settings.config.labels.trigger.clone(),
        ];
        let reported = local
            .store()
            .report(
                &fingerprint,
                NewIssue {
                    title: text.title.clone(),
                    body: text.body,
                    author: self.settings.config.identity.local_bot_name.clone(),
                    labels,
                },
            )
            .await
            .map_err(|source| AppError::Store {
                repository: self.git.root().to_path_buf(),
                source: source.into(),
            })?;
        let issue = reported.issue;
        Ok(Outcome::new(
            ReportOutcome {
                issue: issue.number,
                count: issue.reports,
                filed: reported.filed,
                fingerprint,
                title: issue.title,
                severity: text.severity,
                labels: issue.labels,
                located,
            },
            Verdict::Done,
        ))
    }
}
