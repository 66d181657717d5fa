//! The review job: select the change, check it out, run the review loop against the
//! conversation, and judge the report.

use bugloop_forge::ChangeKey;
use bugloop_forge::recording::RecordingForge;
use bugloop_loops::LoopEnv;
use bugloop_loops::review::{ReviewRequest, review_with};
use bugloop_report::review::ReviewReport;

use crate::outcome::review_verdict;
use crate::outsider_reviews::OutsiderReview;
use crate::{App, AppError, Outcome, Verdict};

/// Which change a review covers: the branch (the default), a range, what is staged, or every
/// uncommitted change. The selection git makes, named for the front ends.
pub use bugloop_git::Selection as ReviewScope;

/// A review to run.
#[derive(Debug, Clone, Default)]
pub struct ReviewJob {
    pub scope: ReviewScope,
    /// Open findings at or above this score make the verdict [`Verdict::FindingsAtThreshold`].
    pub fail_on: Option<u8>,
    /// The model, instead of the configured one.
    pub model: Option<String>,
    /// Report only: publish nothing.
    pub dry_run: bool,
    /// Show the model the whole change, not only what changed since the last review.
    pub full: bool,
}

impl App {
    /// Reviews a change and tracks its findings in the conversation. An empty change is
    /// [`Verdict::NothingToDo`] with no report.
    pub async fn review(&self, job: ReviewJob) -> Result<Outcome<Option<ReviewReport>>, AppError> {
        let change = self.change_to_review(&job.scope)?;
        let diff = bugloop_diff::parse(&change.diff);
        // A change that became empty (its one line put back as the base has it) still has its
        // open findings to settle: they are reviewed, and resolve when their code is gone.
        if diff.files.is_empty() && !self.has_open_findings(&change.key).await? {
            return Ok(Outcome::new(
                None,
                Verdict::NothingToDo {
                    reason: format!("Nothing to review: no changes in {}.", change.description),
                },
            ));
        }
        let warnings = diff_warnings(&diff);
        // The branch's ignored changes to trusted settings, or its file that does not read, are
        // reported as a finding of their own.
        let own_findings: Vec<_> =
            bugloop_config::branch_config_finding(&self.ignored, self.branch_unreadable.as_deref())
                .into_iter()
                .collect();
        let summary_footer = match self.within_outsiders_budget(job.dry_run).await? {
            Ok(footer) => footer,
            Err(reason) => {
                let reason = format!("Not reviewed: {reason}.");
                return Ok(Outcome::new(None, Verdict::NothingToDo { reason }));
            }
        };
        let env = self.loop_env(job.model.as_deref())?;
        let checkout = bugloop_loops::checkout::checkout(&self.git, &change)?;
        let head = change.head.name();
        let request = ReviewRequest {
            change: change.key.clone(),
            description: change.description.clone(),
            base: change.base,
            head,
            diff,
            workspace: checkout.path().to_path_buf(),
            git_mount: checkout.git_mount(),
            clean_room: false,
            focus: None,
            full: job.full,
            summary_footer,
        };
        // A dry run takes the same steps on a forge that records its writes instead of making them.
        let recording = RecordingForge::new(self.forge.as_ref());
        let read_only = self
            .pull_request
            .as_ref()
            .is_some_and(|p| p.read_only.is_some());
        let publishes = !(job.dry_run || read_only);
        let env = if publishes {
            env
        } else {
            LoopEnv {
                forge: &recording,
                ..env
            }
        };
        // Locally, one publishing review of a change at a time: two at once would each publish
        // the findings the other had not yet (the conversation is read before either writes).
        // On GitHub runs have checkouts of their own, and publishing guards against another
        // run's duplicates itself.
        let _lease = if publishes {
            self.local_lease(&change.key)?
        } else {
            None
        };
        let report = review_with(&env, request, own_findings).await?;
        drop(checkout);
        let verdict = review_verdict(&report, job.fail_on);
        Ok(Outcome {
            report: Some(report),
            verdict,
            warnings,
        })
    }

    /// A pull request by someone who cannot write is reviewed within the outsiders' budget: the
    /// summary's footer saying so (none for an insider), or why it is not reviewed now (said on
    /// the pull request unless this is a dry run).
    async fn within_outsiders_budget(
        &self,
        dry_run: bool,
    ) -> Result<Result<Option<String>, String>, AppError> {
        Ok(match self.outsider_review().await? {
            OutsiderReview::Insider => Ok(None),
            OutsiderReview::Within { footer } => Ok(Some(footer)),
            OutsiderReview::Over { reason } => {
                if !dry_run {
                    self.say_review_deferred(&reason).await?;
                }
                Err(reason)
            }
        })
    }

    /// Locally, the lease a run that writes to `change`'s conversation holds (in the
    /// repository's git directory). On GitHub runs have checkouts of their own, and publishing
    /// guards against another run's duplicates itself: `None`.
    pub(crate) fn local_lease(
        &self,
        change: &ChangeKey,
    ) -> Result<Option<bugloop_store::Lease>, AppError> {
        if self.pull_request.is_some() {
            return Ok(None);
        }
        let lease = bugloop_forge::local::conversation_lease(&self.git, change)?
            .map_err(|error| AppError::Invalid(error.to_string()))?;
        Ok(Some(lease))
    }

    /// The change a review is about: on a pull request, the head pinned when the run started
    /// against the merge base with the base branch's commit (the change as GitHub shows it);
    /// locally, what `scope` selects.
    fn change_to_review(
        &self,
        scope: &ReviewScope,
    ) -> Result<bugloop_git::SelectedChange, AppError> {
        Ok(match &self.pull_request {
            Some(pull) => bugloop_git::SelectedChange {
                key: pull.key.clone(),
                description: format!("#{} {}", pull.number, pull.title),
                ..self.git.select(&ReviewScope::Range {
                    base: Some(pull.base_sha.clone()),
                    head: Some(pull.head_sha.clone()),
                })?
            },
            None => self.git.select(scope)?,
        })
    }

    async fn has_open_findings(&self, change: &ChangeKey) -> Result<bool, AppError> {
        let comments = self.forge.comments(change).await?;
        let state = bugloop_domain::thread::reconstruct(&comments, &self.settings.markers);
        Ok(state.unresolved().any(|thread| thread.finding_id.is_some()))
    }
}

/// What the diff's parser could not read, said as warnings: the rest of the change is reviewed.
fn diff_warnings(diff: &bugloop_diff::Diff) -> Vec<String> {
    diff.problems
        .iter()
        .map(|problem| {
            format!(
                "diff line {}: {} (the rest of the change is reviewed)",
                problem.line, problem.message
            )
        })
        .collect()
}
