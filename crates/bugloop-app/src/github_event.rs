//! The one path of a GitHub event, shared by the Action (`bugloop action`) and the App server's
//! worker, read top to bottom. Each front end only gathers its inputs (Actions' environment and
//! event file, a queue row) into a [`GitHubEventJob`]; [`run_github_event`] decides what the
//! event asks for (with the repository's trusted settings), finds the App's installation, makes
//! the job's one GitHub client, prepares the workspace (the Action's checkout, or the server's
//! clone holding a renewed installation token), matches the trigger once and runs its job
//! through the same [`App`] entries as the CLI.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bugloop_config::Config;
use bugloop_forge::fencing::Fence;
use bugloop_forge::signing::StateKey;
use bugloop_github::{
    AppCredentials, Endpoint, GitHubClient, Installation, Policy, RateLimit, RateLimitObserver,
    Repo,
};
use bugloop_report::act::ActReport;
use bugloop_report::converge::ConvergeReport;
use bugloop_report::review::ReviewReport;
use bugloop_webhooks::{CommentKind, Trigger, TriggerSettings};

use crate::clones::HeldClone;
use crate::github::GitHubTarget;
use crate::{
    App, AppError, AppOptions, ConfigChoice, ConvergeJob, ForgeChoice, Outcome, PullRequestComment,
    PullRequestCommentKind, PullRequestRun, ReviewJob, SolveAsk, SolveJob,
};

/// What happened on GitHub.
#[derive(Debug, Clone)]
pub enum GitHubEvent {
    /// A delivery as GitHub sent it (an Action's event file): what it asks for is decided here,
    /// with the labels and prefix of the repository's trusted configuration.
    Delivery { name: String, payload: Vec<u8> },
    /// What a delivery asked for, decided when it arrived (the server's queue row).
    Decided(Trigger),
}

/// Who bugloop is on GitHub.
#[derive(Clone)]
pub enum GitHubCredentials {
    /// A token (an Action's `GITHUB_TOKEN`).
    Token(String),
    /// A GitHub App: each job runs as the installation the event came through.
    App(Arc<AppCredentials>),
}

/// Never prints the token or the key.
impl std::fmt::Debug for GitHubCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GitHubCredentials::Token(_) => "Token(..)",
            GitHubCredentials::App(_) => "App(..)",
        })
    }
}

/// Where the repository's files are.
#[derive(Debug, Clone)]
pub enum Workspace {
    /// Checked out already (an Action's `GITHUB_WORKSPACE`).
    Checkout(PathBuf),
    /// One clone per repository under `root`, made on first use from
    /// `<git_base>/<owner>/<name>.git` (`https://github.com`, or a GitHub Enterprise Server's),
    /// fetching and pushing with the installation's token, renewed every `token_refresh` while
    /// the job runs and removed when it ends.
    Clones {
        root: PathBuf,
        git_base: String,
        token_refresh: Duration,
    },
}

/// Told each rate limit GitHub reports, with the installation it was reported for.
pub type RateLimitSink = Arc<dyn Fn(u64, &str, RateLimit) + Send + Sync>;

/// One GitHub event to act on, and how.
#[derive(Clone)]
pub struct GitHubEventJob {
    pub event: GitHubEvent,
    /// The repository the front end was given (Actions' `GITHUB_REPOSITORY`), which the event
    /// must be about; `None`: the event's own.
    pub repository: Option<Repo>,
    /// `None`: there are none (a fork's pull request gets no secrets on Actions); the event is
    /// decided and nothing more is done.
    pub credentials: Option<GitHubCredentials>,
    pub endpoint: Endpoint,
    pub policy: Policy,
    pub rate_limits: Option<RateLimitSink>,
    /// Signs bugloop's state where its login is shared (`BUGLOOP_STATE_KEY`).
    pub state_key: Option<StateKey>,
    /// The login bugloop writes as; `None` asks GitHub. On a delivery, events by it are dropped.
    pub bot_login: Option<String>,
    pub workspace: Workspace,
    pub config: ConfigChoice,
    pub progress: Arc<dyn bugloop_loops::Progress>,
    /// The model, instead of the configured one.
    pub model: Option<String>,
    /// A review's findings at or above this score make its verdict a failure.
    pub fail_on: Option<u8>,
    /// Asked before every write (the server's worker: while its lease holds).
    pub fence: Option<Fence>,
}

impl std::fmt::Debug for GitHubEventJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GitHubEventJob")
            .field("event", &self.event)
            .field("repository", &self.repository)
            .field("credentials", &self.credentials)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

/// What a GitHub event came to.
#[derive(Debug)]
pub struct GitHubEventRun {
    /// What the event asked for; `None` when it asked for nothing.
    pub trigger: Option<Trigger>,
    /// The App installation the job ran as.
    pub installation: Option<u64>,
    pub outcome: EventOutcome,
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
    /// An issue labelled for solving, moved through the solve pipeline.
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

/// Decides what `job.event` asks for and runs it.
pub async fn run_github_event(job: GitHubEventJob) -> Result<GitHubEventRun, AppError> {
    let trigger = match &job.event {
        GitHubEvent::Decided(trigger) => trigger.clone(),
        GitHubEvent::Delivery { name, payload } => match decide(&job, name, payload)? {
            Ok(trigger) => trigger,
            Err(reason) => return Ok(not_run(None, reason)),
        },
    };
    let Some(credentials) = job.credentials.clone() else {
        return Ok(not_run(
            Some(trigger),
            "no GitHub token was given (GITHUB_TOKEN is not set: a fork's pull request gets no \
             secrets): nothing was done"
                .to_owned(),
        ));
    };
    let repo = event_repository(&trigger, job.repository.as_ref())?;
    let installation = match &credentials {
        GitHubCredentials::Token(_) => None,
        GitHubCredentials::App(app) => Some(installation(&job, &trigger, app, &repo).await?),
    };
    let policy = observed(&job, installation);
    let client = Arc::new(client(
        &job.endpoint,
        &credentials,
        installation.unwrap_or(0),
        &policy,
    )?);
    let (directory, held) = workspace(&job.workspace, &repo, &client).await?;
    let ready = Ready {
        directory,
        config: job.config,
        progress: job.progress,
        target: GitHubTarget {
            client,
            shared_login: matches!(credentials, GitHubCredentials::Token(_)),
            repo,
            number: 0,
            bot_login: job.bot_login,
            state_key: job.state_key,
            remote: "origin".to_owned(),
            fence: job.fence,
        },
        model: job.model,
        fail_on: job.fail_on,
    };
    let outcome = run_trigger(ready, trigger.clone()).await;
    // The clone's token goes when the job ends, whatever it came to.
    drop(held);
    Ok(GitHubEventRun {
        trigger: Some(trigger),
        installation,
        outcome: outcome?,
    })
}

fn not_run(trigger: Option<Trigger>, reason: String) -> GitHubEventRun {
    GitHubEventRun {
        trigger,
        installation: None,
        outcome: EventOutcome::NotRun { reason },
    }
}

/// What a delivery may ask for, from a configuration's labels (`labels.trigger`,
/// `labels.approve`) and solve branch prefix (`branch_prefix`): the one place these settings
/// are built, for the Action from the repository's trusted configuration and for the server
/// from its operator's.
pub fn trigger_settings(config: &Config, bot_logins: Vec<String>) -> TriggerSettings {
    TriggerSettings {
        bot_logins,
        mention: "bugloop".to_owned(),
        autofix_label: config.labels.trigger.clone(),
        approve_label: config.labels.approve.clone(),
        solve_branch_prefix: config.branch_prefix.clone(),
    }
}

/// What a delivery asks for, with the settings of the checkout's trusted configuration; the
/// reason when it asks for nothing.
fn decide(
    job: &GitHubEventJob,
    name: &str,
    payload: &[u8],
) -> Result<Result<Trigger, String>, AppError> {
    let Workspace::Checkout(directory) = &job.workspace else {
        return Err(AppError::Invalid(
            "a delivery is decided in the repository's checkout; the server decides when the \
             delivery arrives and queues what it asks for"
                .to_owned(),
        ));
    };
    let event =
        bugloop_webhooks::parse(name, payload).map_err(|e| AppError::Invalid(e.to_string()))?;
    // The repository's trusted configuration (its default branch's, the user's file,
    // `BUGLOOP_*`; never a pull request's).
    let config = crate::configuration::load_trusted_configuration(directory, &job.config)?
        .loaded
        .config;
    let settings = trigger_settings(&config, job.bot_login.iter().cloned().collect());
    Ok(bugloop_webhooks::trigger(&event, &settings)
        .map_err(|skip| format!("nothing to do: {skip}")))
}

/// The event's repository, which must be the one the front end was given (if it was given one).
fn event_repository(trigger: &Trigger, given: Option<&Repo>) -> Result<Repo, AppError> {
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

/// The App installation the event came through; a report names only its repository, so the
/// App's installation there is asked for (as the App itself, with its JWT).
async fn installation(
    job: &GitHubEventJob,
    trigger: &Trigger,
    app: &Arc<AppCredentials>,
    repo: &Repo,
) -> Result<u64, AppError> {
    match trigger.installation() {
        Some(installation) => Ok(installation),
        None if trigger.kind() == bugloop_domain::job::JobKind::ErrorReport => {
            let credentials = GitHubCredentials::App(app.clone());
            client(&job.endpoint, &credentials, 0, &job.policy)?
                .repository_installation(repo)
                .await
                .map_err(|e| AppError::GitHub(Box::new(e)))
        }
        None => Err(AppError::Invalid(format!(
            "the event about {repo} came through no App installation"
        ))),
    }
}

/// The job's policy, telling `job.rate_limits` each rate limit GitHub reports for the
/// installation.
fn observed(job: &GitHubEventJob, installation: Option<u64>) -> Policy {
    match (&job.rate_limits, installation) {
        (Some(sink), Some(installation)) => {
            let sink = sink.clone();
            Policy {
                rate_limit_observer: Some(RateLimitObserver(Arc::new(move |resource, rate| {
                    sink(installation, resource, rate);
                }))),
                ..job.policy.clone()
            }
        }
        _ => job.policy.clone(),
    }
}

/// The one place a GitHub client is made: with a token, or as an App's installation (id 0
/// opens only the App's own endpoints, which its JWT opens).
fn client(
    endpoint: &Endpoint,
    credentials: &GitHubCredentials,
    installation: u64,
    policy: &Policy,
) -> Result<GitHubClient, AppError> {
    let client = match credentials {
        GitHubCredentials::Token(token) => {
            GitHubClient::new(endpoint.clone(), token.clone(), policy.clone())
        }
        GitHubCredentials::App(credentials) => GitHubClient::for_installation(
            endpoint.clone(),
            Installation {
                credentials: credentials.clone(),
                id: installation,
                clock: Arc::new(bugloop_github::SystemClock),
            },
            policy.clone(),
            Arc::new(bugloop_github::TokioSleeper),
        ),
    };
    client.map_err(|e| AppError::GitHub(Box::new(e)))
}

/// Where the job's files are: the Action's checkout, or the server's clone of `repo` (and the
/// hold on its token, which ends when dropped).
async fn workspace(
    workspace: &Workspace,
    repo: &Repo,
    client: &Arc<GitHubClient>,
) -> Result<(PathBuf, Option<HeldClone>), AppError> {
    match workspace {
        Workspace::Checkout(directory) => Ok((directory.clone(), None)),
        Workspace::Clones {
            root,
            git_base,
            token_refresh,
        } => {
            let held = HeldClone::open(root, git_base, repo, client.clone(), *token_refresh)
                .await
                .map_err(|source| AppError::Workspace {
                    repository: repo.to_string(),
                    source: Box::new(source),
                })?;
            Ok((held.directory.clone(), Some(held)))
        }
    }
}

/// A job ready to run: its workspace, settings and GitHub target (the one client).
struct Ready {
    directory: PathBuf,
    config: ConfigChoice,
    progress: Arc<dyn bugloop_loops::Progress>,
    target: GitHubTarget,
    model: Option<String>,
    fail_on: Option<u8>,
}

impl Ready {
    /// bugloop opened on pull request `number` (`issues`: on the repository's issues, `number`
    /// the issue's, 0 for none).
    async fn open(&self, number: u64, issues: bool) -> Result<App, AppError> {
        let target = Box::new(GitHubTarget {
            number,
            ..self.target.clone()
        });
        App::open(AppOptions {
            directory: self.directory.clone(),
            config: self.config.clone(),
            progress: self.progress.clone(),
            forge: if issues {
                ForgeChoice::GitHubIssues(target)
            } else {
                ForgeChoice::GitHub(target)
            },
        })
        .await
    }

    /// bugloop opened on pull request `number`, and the pull request as the run started.
    async fn open_pull_request(&self, number: u64) -> Result<(App, PullRequestRun), AppError> {
        let app = self.open(number, false).await?;
        let pull_request = app
            .pull_request()
            .cloned()
            .ok_or_else(|| AppError::Invalid("no pull request was opened".to_owned()))?;
        Ok((app, pull_request))
    }
}

/// The job the trigger asks for: the one place a trigger's kinds are told apart.
async fn run_trigger(ready: Ready, trigger: Trigger) -> Result<EventOutcome, AppError> {
    match trigger {
        Trigger::Review { number, .. } => review_pull_request(ready, number).await,
        Trigger::Comment {
            number,
            kind,
            id,
            body,
            author,
            in_reply_to,
            ..
        } => {
            let comment = PullRequestComment {
                kind: match kind {
                    CommentKind::Issue => PullRequestCommentKind::Issue,
                    CommentKind::Review => PullRequestCommentKind::Review,
                    CommentKind::ReviewBody => PullRequestCommentKind::ReviewBody,
                },
                id,
                author,
                body,
                in_reply_to,
                model: ready.model.clone(),
            };
            answer_comment(ready, number, comment).await
        }
        Trigger::Converge {
            number,
            requested_by,
            ..
        } => converge(ready, number, &requested_by).await,
        Trigger::Solve {
            issue,
            label,
            labelled_by,
            approved,
            filed_from_report,
            ..
        } => {
            let asked = SolveAsked {
                issue,
                label,
                labelled_by,
                approved,
                filed_from_report,
            };
            solve_issue(ready, asked).await
        }
        Trigger::ErrorReport { report, .. } => {
            let app = ready.open(0, true).await?;
            let mut outcome = app.file_error_report(report.as_bytes()).await?;
            outcome.warnings = with_app_warnings(&app, outcome.warnings);
            Ok(EventOutcome::ErrorReport {
                outcome: Box::new(outcome),
            })
        }
    }
}

/// The app's warnings before the job's own.
fn with_app_warnings(app: &App, mut warnings: Vec<String>) -> Vec<String> {
    let mut all = app.warnings().to_vec();
    all.append(&mut warnings);
    all
}

/// A developer's comment on pull request `number`, answered.
async fn answer_comment(
    ready: Ready,
    number: u64,
    comment: PullRequestComment,
) -> Result<EventOutcome, AppError> {
    let (app, pull_request) = ready.open_pull_request(number).await?;
    let mut outcome = app.on_pull_request_comment(comment).await?;
    outcome.warnings = with_app_warnings(&app, outcome.warnings);
    Ok(EventOutcome::Comment {
        pull_request,
        outcome: Box::new(outcome),
    })
}

/// Pull request `number` audited and fixed until an audit is clean, when whoever asked may
/// change the repository.
async fn converge(ready: Ready, number: u64, requested_by: &str) -> Result<EventOutcome, AppError> {
    let (app, pull_request) = ready.open_pull_request(number).await?;
    if let Some(reason) = app.refusal_to_change(requested_by).await? {
        return Ok(EventOutcome::NotRun { reason });
    }
    let mut outcome = app
        .converge(ConvergeJob {
            base: Some(pull_request.base_sha.clone()),
            model: ready.model,
        })
        .await?;
    outcome.warnings = with_app_warnings(&app, outcome.warnings);
    Ok(EventOutcome::Converge {
        pull_request,
        outcome: Box::new(outcome),
    })
}

/// What a solve trigger asks for.
struct SolveAsked {
    issue: u64,
    /// The label that asked, if one did.
    label: Option<String>,
    labelled_by: Option<String>,
    approved: Option<String>,
    filed_from_report: bool,
}

/// An issue labelled for solving (or a draft's review, or a report just filed) moved through
/// the solve pipeline, when the label is this repository's and whoever set it may change the
/// repository.
async fn solve_issue(ready: Ready, asked: SolveAsked) -> Result<EventOutcome, AppError> {
    let issue = asked.issue;
    // A workflow's token is shared by every workflow of the repository: it cannot keep a solve
    // record (see `open_issue`). An Action run ends here, neutral.
    if ready.target.shared_login {
        return Ok(EventOutcome::NotRun {
            reason: format!(
                "issue #{issue}: solving runs as a GitHub App (`bugloop serve`), whose own login \
                 keeps the solve record; nothing was done"
            ),
        });
    }
    let app = ready.open(issue, true).await?;
    let trigger_label = app.settings.config.labels.trigger.clone();
    if let Some(label) = &asked.label
        && let Some(reason) = refusal_of_label(
            &app,
            issue,
            label,
            asked.labelled_by.as_deref(),
            &trigger_label,
        )
        .await?
    {
        return Ok(EventOutcome::NotRun { reason });
    }
    let mut outcome = app
        .solve(SolveJob {
            issue,
            base: None,
            model: ready.model,
            ask: SolveAsk {
                // A writer's label (checked above) on an escalated issue is a person sending it
                // back to bugloop, as `--retry` is locally (a pattern the learning record skipped
                // too).
                retry: asked.label.is_some(),
                // On GitHub a maintainer approves on the issue (`@bugloop approve`), never a run.
                approve: false,
                approved: asked.approved,
                // A review of a draft goes on with an issue taken; it never starts one.
                resume_only: asked.label.is_none() && !asked.filed_from_report,
                require_label: Some(trigger_label),
            },
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

/// The review a push asks for; on a fork's pull request, which gets no secrets, a model that
/// cannot be used is not a failure.
async fn review_pull_request(ready: Ready, number: u64) -> Result<EventOutcome, AppError> {
    let (app, pull_request) = ready.open_pull_request(number).await?;
    let reviewed = app
        .review(ReviewJob {
            fail_on: ready.fail_on,
            model: ready.model,
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
    outcome.warnings = with_app_warnings(&app, outcome.warnings);
    Ok(EventOutcome::Review {
        pull_request,
        outcome: Box::new(outcome),
    })
}
