//! `solve` and `status`: an issue moved through the solve pipeline (`bugloop_solve`), and
//! where each issue stands.

use bugloop_domain::solve::SolveState;
use bugloop_forge::github::GitHubTracker;
use bugloop_forge::tracker::Tracker;
use bugloop_report::solve::SolveReport;
use bugloop_solve::{SolveAsk, SolveError, SolveOptions};
use bugloop_store::ItemKind;

use crate::{App, AppError, Outcome, Verdict};

/// An issue to solve.
#[derive(Debug, Clone, Default)]
pub struct SolveJob {
    pub issue: u64,
    /// The branch the solution goes into; the default branch when not given.
    pub base: Option<String>,
    pub model: Option<String>,
    pub ask: SolveAsk,
}

impl From<SolveError> for AppError {
    fn from(error: SolveError) -> Self {
        match error {
            SolveError::Forge(e) => e.into(),
            SolveError::Build(e) => AppError::Act(Box::new(e.into())),
            SolveError::Review(e) => e.into(),
            SolveError::Checkout(e) => e.into(),
            SolveError::Git(e) => e.into(),
            SolveError::Invalid(message) => AppError::Invalid(message),
        }
    }
}

impl App {
    /// Where issues are tracked locally: the local forge (the embedded store).
    pub(crate) fn tracker(&self) -> Result<&dyn Tracker, AppError> {
        Ok(self.local_store("solving an issue")?)
    }

    /// Moves an issue through the pipeline as far as it can go now: on GitHub, the
    /// repository's issue (the App's run), otherwise the local forge's.
    pub async fn solve(&self, job: SolveJob) -> Result<Outcome<SolveReport>, AppError> {
        if let Some(github) = &self.github_issues {
            let tracker = GitHubTracker::new(&github.forge, self.git.clone(), &github.remote)
                .fenced(github.fence.clone());
            let options = self.solve_options(&job)?;
            return self.solve_with(&tracker, &job, &options).await;
        }
        let tracker = self.tracker()?;
        // One run solves an issue at a time; another is told who does, before it spends anything.
        let _lease = self.solve_lease(job.issue)?;
        let options = self.solve_options(&job)?;
        self.solve_with(tracker, &job, &options).await
    }

    /// The lease a local run holds on an issue while it moves it.
    fn solve_lease(&self, issue: u64) -> Result<bugloop_store::Lease, AppError> {
        self.take_solve_lease(issue)?
            .map_err(|error| AppError::Invalid(error.to_string()))
    }

    /// [`App::solve_lease`], with the lease's own refusal (another run holds it) to look at.
    fn take_solve_lease(
        &self,
        issue: u64,
    ) -> Result<Result<bugloop_store::Lease, bugloop_store::LeaseError>, AppError> {
        let store = bugloop_forge::local::store_path(&self.git)?;
        Ok(bugloop_store::Lease::take(
            store.parent().unwrap_or(&store),
            &format!("solve-{issue}"),
            &format!("issue #{issue}"),
        ))
    }

    /// Where `job`'s solution goes: on GitHub the default branch at the commit the job
    /// checked out, locally the branch named or the default one.
    fn solve_options(&self, job: &SolveJob) -> Result<SolveOptions, AppError> {
        let (base, start) = match &self.github_issues {
            Some(github) => (
                job.base
                    .clone()
                    .unwrap_or_else(|| github.base_branch.clone()),
                Some(github.base_sha.clone()),
            ),
            None => {
                let base = match job.base.clone() {
                    Some(base) => base,
                    // Never the branch checked out: a draft on a feature branch would carry
                    // the user's unfinished work.
                    None => self.git.default_branch().ok_or_else(|| {
                        AppError::Invalid(
                            "no default branch to solve against (no origin/HEAD, \
                             init.defaultBranch, main or master); name one with --base"
                                .to_owned(),
                        )
                    })?,
                };
                (base, None)
            }
        };
        Ok(SolveOptions {
            base,
            start,
            ask: job.ask.clone(),
        })
    }

    /// An error reported again on `issue` (`reports` so far): a regression when the issue's
    /// solution has merged and its reproduction test fails on the base's head
    /// (`bugloop_solve::regression`). It runs no model.
    pub(crate) async fn regression(
        &self,
        issue: u64,
        reports: u64,
    ) -> Result<bugloop_solve::Regression, AppError> {
        let env = self.loop_env_without_model();
        let options = self.solve_options(&SolveJob {
            issue,
            ..SolveJob::default()
        })?;
        if let Some(github) = &self.github_issues {
            let tracker = GitHubTracker::new(&github.forge, self.git.clone(), &github.remote)
                .fenced(github.fence.clone());
            return Ok(bugloop_solve::regression(&env, &tracker, issue, &options, reports).await?);
        }
        // A run moving the issue now (`solve N`) is not after a merge: the report is a repeat.
        let _lease = match self.take_solve_lease(issue)? {
            Ok(lease) => lease,
            Err(bugloop_store::LeaseError::Held { .. }) => {
                return Ok(bugloop_solve::Regression::Repeat);
            }
            Err(other) => return Err(AppError::Invalid(other.to_string())),
        };
        Ok(bugloop_solve::regression(&env, self.tracker()?, issue, &options, reports).await?)
    }

    async fn solve_with(
        &self,
        tracker: &dyn Tracker,
        job: &SolveJob,
        options: &SolveOptions,
    ) -> Result<Outcome<SolveReport>, AppError> {
        // An issue that is not there is said before the model is opened.
        tracker.issue(job.issue).await?;
        let env = self.loop_env(job.model.as_deref())?;
        let report = bugloop_solve::solve(&env, tracker, job.issue, options).await?;
        let verdict = match (report.state, report.stopped.as_deref()) {
            (Some(SolveState::Escalated), _) => Verdict::NotConverged {
                why: report.message.clone(),
            },
            (_, Some("budget" | "model")) => Verdict::Incomplete {
                cause: report.message.clone(),
            },
            _ => Verdict::Done,
        };
        Ok(Outcome::new(report, verdict))
    }

    /// One issue's state and history, or every issue's state (those bugloop took, and open
    /// ones it may take).
    pub async fn solve_status(&self, issue: Option<u64>) -> Result<Vec<SolveReport>, AppError> {
        let tracker = self.tracker()?;
        if let Some(issue) = issue {
            return Ok(vec![bugloop_solve::status(tracker, issue).await?]);
        }
        let local = self.local_store("bugloop status")?;
        let mut reports = Vec::new();
        for item in local.store().items(ItemKind::Issue, false).await? {
            let number = u64::try_from(item.number).unwrap_or_default();
            let report = bugloop_solve::status(tracker, number).await?;
            // Closed issues bugloop never took are not its business.
            if report.state.is_some() || item.state == bugloop_store::ItemState::Open {
                reports.push(report);
            }
        }
        Ok(reports)
    }
}
