//! Running the job a GitHub event asks for: the one entry the Action (`bugloop action`) and the
//! App server share. The front end reads the event (a file or a webhook), decides with
//! `bugloop_webhooks::trigger` whether it asks for anything, and hands the [`Trigger`] here with
//! how to reach GitHub; this opens bugloop on the pull request and calls the same jobs as the CLI.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bugloop_github::Repo;
use bugloop_report::act::ActReport;
use bugloop_report::converge::ConvergeReport;
use bugloop_report::review::ReviewReport;
use bugloop_webhooks::{CommentKind, Trigger, TriggerSettings};

use crate::{
    App, AppError, AppOptions, ConfigChoice, ConvergeJob, ForgeChoice, GitHubTarget, Outcome,
    PullRequestComment, PullRequestCommentKind, PullRequestRun, ReviewJob,
};

/// What an Action run answers to, from the repository's trusted configuration (its default
/// branch's `.bugloop/config.yml`, the user's file, `BUGLOOP_*`; never a pull request's): the
/// label that asks for a fix (`labels.trigger`) and the prefix of solve drafts' branches
/// (`branch_prefix`). The App server takes these from its own configuration instead.
pub(crate) fn repository_trigger_settings(
    directory: &Path,
    choice: &ConfigChoice,
    bot_login: Option<&str>,
) -> Result<TriggerSettings, AppError> {
    let config = crate::configuration::load_trusted_configuration(directory, choice)?
        .loaded
        .config;
    Ok(TriggerSettings {
        bot_logins: bot_login.into_iter().map(str::to_owned).collect(),
        mention: "bugloop".to_owned(),
        autofix_label: config.labels.trigger,
        approve_label: config.labels.approve,
        solve_branch_prefix: config.branch_prefix,
    })
}

/// A job from an event.
#[derive(Debug, Clone)]
pub struct EventJob {
    /// The clone of the repository (an Action's `GITHUB_WORKSPACE`).
    pub directory: PathBuf,
    pub config: ConfigChoice,
    pub progress: Arc<dyn bugloop_loops::Progress>,
    /// How to reach GitHub; the repository and pull request number come from the trigger.
    pub github: GitHubTarget,
    pub trigger: Trigger,
    /// The model, instead of the configured one.
    pub model: Option<String>,
    /// A review's findings at or above this score make its verdict a failure.
    pub fail_on: Option<u8>,
}

/// What an event's job did.
#[derive(Debug)]
pub enum EventOutcome {
    Review {
        pull_request: PullRequestRun,
        outcome: Box<Outcome<Option<ReviewReport>>>,
    },
    Comment {
        pull_request: PullRequestRun,
        outcome: Box<Outcome<ActReport>>,
    },
    Converge {
        pull_request: PullRequestRun,
        outcome: Box<Outcome<ConvergeReport>>,
    },
    /// An error report, filed as an issue or counted on its fingerprint's.
    ErrorReport {
        outcome: Box<Outcome<crate::ErrorReportOutcome>>,
    },
    /// An issue labelled for autofix, moved through the solve pipeline.
    Solve {
        issue: u64,
        outcome: Box<Outcome<bugloop_report::solve::SolveReport>>,
    },
    /// The event asks for a job that was not run; the reason says why.
    NotRun { reason: String },
}

impl EventOutcome {
    /// What the job warned about (settings ignored, and the like).
    pub fn warnings(&self) -> &[String] {
        match self {
            EventOutcome::Review { outcome, .. } => &outcome.warnings,
            EventOutcome::Comment { outcome, .. } => &outcome.warnings,
            EventOutcome::Converge { outcome, .. } => &outcome.warnings,
            EventOutcome::ErrorReport { outcome } => &outcome.warnings,
            EventOutcome::Solve { outcome, .. } => &outcome.warnings,
            EventOutcome::NotRun { .. } => &[],
        }
    }

    /// Why the job did nothing, when it did nothing by design (a comment over the outsiders'
    /// rate, one already answered, an event that asks for nothing).
    pub fn skipped(&self) -> Option<&str> {
        let verdict = match self {
            EventOutcome::Review { outcome, .. } => &outcome.verdict,
            EventOutcome::Comment { outcome, .. } => &outcome.verdict,
            EventOutcome::Converge { outcome, .. } => &outcome.verdict,
            EventOutcome::ErrorReport { outcome } => &outcome.verdict,
            EventOutcome::Solve { outcome, .. } => &outcome.verdict,
            EventOutcome::NotRun { reason } => return Some(reason),
        };
        match verdict {
            crate::Verdict::Skipped { reason } | crate::Verdict::NothingToDo { reason } => {
                Some(reason)
            }
            _ => None,
        }
    }
}

/// bugloop opened on the repository's issues (`issue`: the one the job is about, 0 for none).
async fn open_issues(job: &EventJob, issue: u64) -> Result<App, AppError> {
    App::open(AppOptions {
        directory: job.directory.clone(),
        config: job.config.clone(),
        progress: job.progress.clone(),
        forge: ForgeChoice::GitHubIssues(Box::new(GitHubTarget {
            number: issue,
            ..job.github.clone()
        })),
    })
    .await
}

/// The app's warnings before the job's own.
fn with_app_warnings(app: &App, mut warnings: Vec<String>) -> Vec<String> {
    let mut all = app.warnings().to_vec();
    all.append(&mut warnings);
    all
}

/// The event's repository, which must be the one the front end was given (if it was given one).
pub(crate) fn event_repository(trigger: &Trigger, given: Option<&Repo>) -> Result<Repo, AppError> {
    let named = trigger.repository();
    let repo = Repo::parse(named).ok_or_else(|| {
        AppError::Invalid(format!(
            "the event names the repository {named:?}, which is not owner/name"
        ))
    })?;
    match given {
        Some(given) if *given != repo => Err(AppError::Invalid(format!(
            "the event is about {repo}, but bugloop was given {given}"
        ))),
        _ => Ok(repo),
    }
}

/// Opens bugloop on the trigger's pull request (or, for autofix, the repository's issues) and
/// runs its job. The trigger must be about `job.github.repo`.
pub async fn run_event(job: EventJob) -> Result<EventOutcome, AppError> {
    event_repository(&job.trigger, Some(&job.github.repo))?;
    run_checked(job).await
}

/// [`run_event`] once the trigger's repository is known to be the target's.
pub(crate) async fn run_checked(job: EventJob) -> Result<EventOutcome, AppError> {
    match &job.trigger {
        Trigger::Review { number, .. }
        | Trigger::Comment { number, .. }
        | Trigger::Converge { number, .. } => {
            let number = *number;
            run_on_pull_request(job, number).await
        }
        Trigger::Solve { .. } => solve_issue(job).await,
        Trigger::ErrorReport { report, .. } => {
            let report = report.clone();
            let app = open_issues(&job, 0).await?;
            let mut outcome = app.file_error_report(report.as_bytes()).await?;
            outcome.warnings = with_app_warnings(&app, outcome.warnings);
            Ok(EventOutcome::ErrorReport {
                outcome: Box::new(outcome),
            })
        }
    }
}

/// An issue labelled for autofix (or a draft's review, or a report just filed) moved through
/// the solve pipeline, when the label is this repository's and whoever set it may change the
/// repository.
async fn solve_issue(job: EventJob) -> Result<EventOutcome, AppError> {
    let Trigger::Solve {
        issue,
        label,
        labelled_by,
        approved,
        filed_from_report,
        ..
    } = &job.trigger
    else {
        return Err(AppError::Invalid("not an autofix trigger".to_owned()));
    };
    let issue = *issue;
    // A workflow's token is shared by every workflow of the repository: it cannot keep a solve
    // record (see `open_issue`). An Action run ends here, neutral.
    if matches!(job.github.auth, crate::GitHubAuth::Token(_)) {
        return Ok(EventOutcome::NotRun {
            reason: format!(
                "issue #{issue}: solving runs as a GitHub App (`bugloop serve`), whose own login \
                 keeps the solve record; nothing was done"
            ),
        });
    }
    let app = open_issues(&job, issue).await?;
    let trigger_label = app.settings.config.labels.trigger.clone();
    if let Some(label) = label
        && let Some(reason) =
            refusal_of_label(&app, issue, label, labelled_by.as_deref(), &trigger_label).await?
    {
        return Ok(EventOutcome::NotRun { reason });
    }
    let mut outcome = app
        .solve(crate::SolveJob {
            issue,
            base: None,
            // A writer's label (checked above) on an escalated issue is a person sending it back
            // to bugloop, as `--retry` is locally (a pattern the learning record skipped too).
            retry: label.is_some(),
            // On GitHub a maintainer approves on the issue (`@bugloop approve`), never a run.
            approve: false,
            model: job.model.clone(),
            approved: approved.clone(),
            // A review of a draft goes on with an issue taken; it never starts one.
            resume_only: label.is_none() && !filed_from_report,
            require_label: Some(trigger_label),
        })
        .await?;
    outcome.warnings = with_app_warnings(&app, outcome.warnings);
    Ok(EventOutcome::Solve {
        issue,
        outcome: Box::new(outcome),
    })
}

/// Why a label on `issue` does not start solving it: not this repository's trigger label, or
/// set by someone who may not change the repository (triage may label).
async fn refusal_of_label(
    app: &App,
    issue: u64,
    label: &str,
    labelled_by: Option<&str>,
    trigger_label: &str,
) -> Result<Option<String>, AppError> {
    if label != trigger_label {
        return Ok(Some(format!(
            "issue #{issue} was labelled `{label}`, but this repository's labels.trigger is \
             `{trigger_label}`; nothing was done"
        )));
    }
    let writer = match labelled_by {
        Some(who) => app.forge.permission(who).await?.may_modify_files(),
        None => false,
    };
    Ok((!writer).then(|| {
        format!(
            "issue #{issue} was labelled `{label}` by {}, who may not change the repository; \
             nothing was done",
            labelled_by.unwrap_or("someone unknown")
        )
    }))
}

/// bugloop opened on pull request `number`, running the review, the comment or converge the
/// trigger asks for.
async fn run_on_pull_request(job: EventJob, number: u64) -> Result<EventOutcome, AppError> {
    let app = App::open(AppOptions {
        directory: job.directory,
        config: job.config,
        progress: job.progress,
        forge: ForgeChoice::GitHub(Box::new(GitHubTarget {
            number,
            ..job.github
        })),
    })
    .await?;
    let pull_request = app
        .pull_request()
        .cloned()
        .ok_or_else(|| AppError::Invalid("no pull request was opened".to_owned()))?;
    match job.trigger {
        Trigger::Review { .. } => {
            review_pull_request(&app, pull_request, job.fail_on, job.model).await
        }
        Trigger::Comment {
            kind,
            id,
            body,
            author,
            in_reply_to,
            ..
        } => {
            let mut outcome = app
                .on_pull_request_comment(PullRequestComment {
                    kind: match kind {
                        CommentKind::Issue => PullRequestCommentKind::Issue,
                        CommentKind::Review => PullRequestCommentKind::Review,
                        CommentKind::ReviewBody => PullRequestCommentKind::ReviewBody,
                    },
                    id,
                    author,
                    body,
                    in_reply_to,
                    model: job.model,
                })
                .await?;
            outcome.warnings = with_app_warnings(&app, outcome.warnings);
            Ok(EventOutcome::Comment {
                pull_request,
                outcome: Box::new(outcome),
            })
        }
        Trigger::Converge { requested_by, .. } => {
            if let Some(reason) = app.refusal_to_change(&requested_by).await? {
                return Ok(EventOutcome::NotRun { reason });
            }
            let mut outcome = app
                .converge(ConvergeJob {
                    base: Some(pull_request.base_sha.clone()),
                    model: job.model,
                })
                .await?;
            outcome.warnings = with_app_warnings(&app, outcome.warnings);
            Ok(EventOutcome::Converge {
                pull_request,
                outcome: Box::new(outcome),
            })
        }
        Trigger::Solve { .. } | Trigger::ErrorReport { .. } => Err(AppError::Invalid(
            "an autofix or report trigger has no pull request".to_owned(),
        )),
    }
}

/// The review a push asks for; on a fork's pull request, which gets no secrets, a model that
/// cannot be used is not a failure.
async fn review_pull_request(
    app: &App,
    pull_request: PullRequestRun,
    fail_on: Option<u8>,
    model: Option<String>,
) -> Result<EventOutcome, AppError> {
    let reviewed = app
        .review(ReviewJob {
            fail_on,
            model,
            ..ReviewJob::default()
        })
        .await;
    let mut outcome = match (reviewed, &pull_request.read_only) {
        (Err(AppError::Model { model, source }), Some(why)) => {
            return Ok(EventOutcome::NotRun {
                reason: format!("{why}; the model {model} cannot be used here: {source}"),
            });
        }
        (reviewed, _) => reviewed?,
    };
    outcome.warnings = with_app_warnings(app, outcome.warnings);
    Ok(EventOutcome::Review {
        pull_request,
        outcome: Box::new(outcome),
    })
}
