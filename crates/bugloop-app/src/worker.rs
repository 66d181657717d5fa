//! The App server's worker: it claims a queued job, keeps its lease alive while the job runs,
//! and runs it through the same entry as the Action (`run_event`) as the App's installation,
//! in a clone of the repository of its own. Every write to GitHub asks the fence first: once a
//! renewal fails, or the lease's time has passed without one, nothing more is written (another
//! worker may own the job by then). A transient failure is queued again with backoff, anything
//! else ends the job dead with its error.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use bugloop_forge::ForgeError;
use bugloop_forge::signing::StateKey;
use bugloop_github::{AppCredentials, Endpoint, GitHubError, Policy, Repo};
use bugloop_queue::{Failure, JobState, Lease, Queue};
use bugloop_webhooks::Trigger;

use crate::{AppError, ConfigChoice, EventJob, EventOutcome, GitHubAuth, GitHubTarget, run_event};

/// How a worker runs jobs.
#[derive(Clone)]
pub struct WorkerSettings {
    /// Names the worker in leases (`host:pid:n`).
    pub id: String,
    pub lease: Duration,
    pub app: Arc<AppCredentials>,
    pub endpoint: Endpoint,
    /// Where repositories are cloned from: `https://github.com` (or a GitHub Enterprise
    /// Server's), the clone URL being `<base>/<owner>/<repo>.git`.
    pub git_base: String,
    /// Where the worker keeps its clones.
    pub workspaces: PathBuf,
    pub config: ConfigChoice,
    pub model: Option<String>,
    pub state_key: Option<StateKey>,
    pub policy: Policy,
}

impl std::fmt::Debug for WorkerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerSettings")
            .field("id", &self.id)
            .field("git_base", &self.git_base)
            .field("workspaces", &self.workspaces)
            .finish_non_exhaustive()
    }
}

/// What one claimed job came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRun {
    pub job: String,
    /// `Done`, `Queued` (to retry), `Dead`; `None` when the lease was lost meanwhile.
    pub state: Option<JobState>,
    pub error: Option<String>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Claims and runs one job; `None` when none may run now.
pub async fn run_next(
    queue: &Queue,
    settings: &WorkerSettings,
) -> Result<Option<JobRun>, AppError> {
    let Some(lease) = queue.claim(&settings.id, settings.lease, now_ms()).await? else {
        return Ok(None);
    };
    let lease_ms = i64::try_from(settings.lease.as_millis()).unwrap_or(i64::MAX);
    // The fence: held while renewals succeed and the lease's time has not passed.
    let held = Arc::new(AtomicBool::new(true));
    let until = Arc::new(AtomicI64::new(now_ms().saturating_add(lease_ms)));
    let heartbeat = {
        let (queue, lease, held, until) =
            (queue.clone(), lease.clone(), held.clone(), until.clone());
        let every = settings.lease / 3;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let now = now_ms();
                match queue
                    .heartbeat(
                        &lease,
                        Duration::from_millis(u64::try_from(lease_ms).unwrap_or(0)),
                        now,
                    )
                    .await
                {
                    Ok(true) => until.store(now.saturating_add(lease_ms), Ordering::SeqCst),
                    _ => {
                        held.store(false, Ordering::SeqCst);
                        break;
                    }
                }
            }
        })
    };
    let fence: bugloop_forge::fencing::Fence = {
        let (held, until) = (held.clone(), until.clone());
        Arc::new(move || held.load(Ordering::SeqCst) && now_ms() < until.load(Ordering::SeqCst))
    };
    let result = run_job(&lease, settings, fence).await;
    heartbeat.abort();
    let now = now_ms();
    let (state, error) = match result {
        Ok(()) => (
            queue.complete(&lease, now).await?.then_some(JobState::Done),
            None,
        ),
        Err((error, failure)) => {
            let message = error.to_string();
            (
                queue.fail(&lease, &message, failure, now).await?,
                Some(message),
            )
        }
    };
    Ok(Some(JobRun {
        job: lease.job.id.clone(),
        state,
        error,
    }))
}

/// Runs the job's trigger; an error says whether retrying may help.
async fn run_job(
    lease: &Lease,
    settings: &WorkerSettings,
    fence: bugloop_forge::fencing::Fence,
) -> Result<(), (AppError, Failure)> {
    let permanent = |error: AppError| (error, Failure::Permanent);
    let trigger: Trigger = serde_json::from_str(&lease.job.payload).map_err(|e| {
        permanent(AppError::Invalid(format!(
            "job {}: its payload is not a trigger: {e}",
            lease.job.id
        )))
    })?;
    let installation = trigger.installation().ok_or_else(|| {
        permanent(AppError::Invalid(format!(
            "job {}: the event came through no App installation",
            lease.job.id
        )))
    })?;
    let repository = match &trigger {
        Trigger::Review { repository, .. }
        | Trigger::Comment { repository, .. }
        | Trigger::Converge { repository, .. }
        | Trigger::Autofix { repository, .. } => repository.clone(),
    };
    let repo = Repo::parse(&repository).ok_or_else(|| {
        permanent(AppError::Invalid(format!(
            "job {}: {repository:?} is not owner/name",
            lease.job.id
        )))
    })?;
    let directory = clone_of(settings, &repo, installation)
        .await
        .map_err(|e| (e, Failure::Transient))?;
    let job = EventJob {
        directory,
        config: settings.config.clone(),
        progress: Arc::new(bugloop_loops::Silent),
        github: GitHubTarget {
            endpoint: settings.endpoint.clone(),
            auth: GitHubAuth::App {
                credentials: settings.app.clone(),
                installation_id: installation,
            },
            repo,
            number: 0,
            bot_login: None,
            state_key: settings.state_key.clone(),
            policy: settings.policy.clone(),
            remote: "origin".to_owned(),
            fence: Some(fence),
        },
        trigger,
        model: settings.model.clone(),
        fail_on: None,
    };
    match run_event(job).await {
        Ok(EventOutcome::NotRun { .. })
        | Ok(EventOutcome::Review { .. })
        | Ok(EventOutcome::Comment { .. })
        | Ok(EventOutcome::Converge { .. }) => Ok(()),
        Err(error) => {
            let failure = if transient(&error) {
                Failure::Transient
            } else {
                Failure::Permanent
            };
            Err((error, failure))
        }
    }
}

/// Whether waiting may help: GitHub or the network failing, a rate limit, a write that may
/// or may not have happened (the next attempt looks first).
fn transient(error: &AppError) -> bool {
    match error {
        AppError::GitHub(error) => matches!(
            **error,
            GitHubError::Transient { .. }
                | GitHubError::RateLimited { .. }
                | GitHubError::Ambiguous { .. }
        ),
        AppError::Forge(error) => matches!(
            **error,
            ForgeError::Transient(_) | ForgeError::RateLimited { .. } | ForgeError::Ambiguous(_)
        ),
        AppError::Review(error) => error.to_string().contains("rate limited"),
        _ => false,
    }
}

/// The worker's clone of `repo` (made on first use), set to fetch and push with a fresh
/// installation token (git's `http.extraheader`, as GitHub's own checkout action does; the
/// sandbox never shows a clone's git configuration to what runs in it).
async fn clone_of(
    settings: &WorkerSettings,
    repo: &Repo,
    installation: u64,
) -> Result<PathBuf, AppError> {
    let client = bugloop_github::GitHubClient::for_installation(
        settings.endpoint.clone(),
        bugloop_github::Installation {
            credentials: settings.app.clone(),
            id: installation,
            clock: Arc::new(bugloop_github::SystemClock),
        },
        settings.policy.clone(),
        Arc::new(bugloop_github::TokioSleeper),
    )
    .map_err(|e| AppError::GitHub(Box::new(e)))?;
    let token = client
        .current_token()
        .await
        .map_err(|e| AppError::GitHub(Box::new(e)))?;
    let header = format!(
        "AUTHORIZATION: basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    );
    let directory = settings.workspaces.join(&repo.owner).join(&repo.name);
    let url = format!(
        "{}/{}/{}.git",
        settings.git_base.trim_end_matches('/'),
        repo.owner,
        repo.name
    );
    if !directory.join(".git").exists() {
        std::fs::create_dir_all(&directory)
            .map_err(|e| AppError::Invalid(format!("cannot make {}: {e}", directory.display())))?;
        bugloop_git::clone(&url, &directory, &[format!("http.extraheader={header}")])?;
    }
    let git = bugloop_git::Git::open(&directory)?;
    git.run(&["config", "--local", "http.extraheader", &header])?;
    Ok(directory)
}
