//! The one path of a GitHub event, shared by the Action (`bugloop action`) and the App server's
//! worker. Each front end only gathers its inputs (Actions' environment and event file, a queue
//! row) into a [`GitHubEventJob`]; [`run_github_event`] decides what the event asks for (with
//! the repository's trusted settings), finds the App's installation, prepares the workspace (the
//! Action's checkout, or the server's clone holding a renewed installation token) and runs the
//! job through [`run_event`](crate::run_event).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bugloop_forge::fencing::Fence;
use bugloop_forge::signing::StateKey;
use bugloop_github::{AppCredentials, Endpoint, Policy, RateLimit, RateLimitObserver, Repo};
use bugloop_webhooks::Trigger;

use crate::clones::HeldClone;
use crate::event::repository_trigger_settings;
use crate::event::{event_repository, run_checked};
use crate::github::client;
use crate::{AppError, ConfigChoice, EventJob, EventOutcome, GitHubAuth, GitHubTarget};

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
    let (auth, installation) = match &credentials {
        GitHubCredentials::Token(token) => (GitHubAuth::Token(token.clone()), None),
        GitHubCredentials::App(app) => {
            let id = installation(&job, &trigger, app, &repo).await?;
            let auth = GitHubAuth::App {
                credentials: app.clone(),
                installation_id: id,
            };
            (auth, Some(id))
        }
    };
    let policy = observed(&job, installation);
    let (directory, held) = match &job.workspace {
        Workspace::Checkout(directory) => (directory.clone(), None),
        Workspace::Clones {
            root,
            git_base,
            token_refresh,
        } => {
            let opened = match client(&job.endpoint, &auth, &policy) {
                Ok(client) => HeldClone::open(root, git_base, &repo, client, *token_refresh).await,
                Err(error) => Err(error),
            };
            let held = opened.map_err(|source| AppError::Workspace {
                repository: repo.to_string(),
                source: Box::new(source),
            })?;
            (held.directory.clone(), Some(held))
        }
    };
    let outcome = run_checked(EventJob {
        directory,
        config: job.config,
        progress: job.progress,
        github: GitHubTarget {
            endpoint: job.endpoint,
            auth,
            repo,
            number: 0,
            bot_login: job.bot_login,
            state_key: job.state_key,
            policy,
            remote: "origin".to_owned(),
            fence: job.fence,
        },
        trigger: trigger.clone(),
        model: job.model,
        fail_on: job.fail_on,
    })
    .await;
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

/// What a delivery asks for, with the settings of the checkout's trusted configuration; the
/// reason when it asks for nothing.
fn decide(
    job: &GitHubEventJob,
    name: &str,
    payload: &[u8],
) -> Result<Result<Trigger, String>, AppError> {
    let Workspace::Checkout(directory) = &job.workspace else {
        return Err(AppError::Invalid(
            "a delivery is decided in the repository's checkout; the server decides when the              delivery arrives and queues what it asks for"
                .to_owned(),
        ));
    };
    let event =
        bugloop_webhooks::parse(name, payload).map_err(|e| AppError::Invalid(e.to_string()))?;
    let settings = repository_trigger_settings(directory, &job.config, job.bot_login.as_deref())?;
    Ok(bugloop_webhooks::trigger(&event, &settings)
        .map_err(|skip| format!("nothing to do: {skip}")))
}

/// The App installation the event came through; a report names only its repository, so the
/// App's installation there is asked for (with the App's JWT).
async fn installation(
    job: &GitHubEventJob,
    trigger: &Trigger,
    app: &Arc<AppCredentials>,
    repo: &Repo,
) -> Result<u64, AppError> {
    match (trigger.installation(), trigger) {
        (Some(installation), _) => Ok(installation),
        (None, Trigger::ErrorReport { .. }) => {
            let auth = GitHubAuth::App {
                credentials: app.clone(),
                installation_id: 0,
            };
            client(&job.endpoint, &auth, &job.policy)?
                .repository_installation(repo)
                .await
                .map_err(|e| AppError::GitHub(Box::new(e)))
        }
        (None, _) => Err(AppError::Invalid(format!(
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
