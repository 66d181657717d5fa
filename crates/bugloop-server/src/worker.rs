//! The App server's worker: it claims a queued job, keeps its lease alive while the job runs,
//! and runs it through the same entry as the Action (`run_github_event`) as the App's
//! installation, in a clone of the repository of its own. Every write to GitHub asks the fence first: once a
//! renewal fails, or the lease's time has passed without one, nothing more is written (another
//! worker may own the job by then). A transient failure is queued again with backoff, anything
//! else ends the job dead with its error.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use bugloop_forge::signing::StateKey;
use bugloop_github::{AppCredentials, Endpoint, Policy};
use bugloop_queue::{Failure, JobState, Lease, Queue, now_ms};
use bugloop_webhooks::Trigger;

use tracing::Instrument;

use crate::ServerError;
use crate::metrics::{ServerMetrics, Spent, ending};
use bugloop_app::{
    ConfigChoice, EventOutcome, GitHubCredentials, GitHubEvent, GitHubEventJob, GitHubEventRun,
    Workspace, run_github_event,
};

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
    /// How long a job in hand may go on once the server is told to stop; then it is handed
    /// back to the queue for another worker.
    pub shutdown_grace: Duration,
    /// How often a running job's clone gets a fresh installation token (tokens last an hour).
    pub git_token_refresh: Duration,
    /// The longest one job may run (the operator's; a repository's budgets cannot raise it): a
    /// job over it fails and the worker takes the next.
    pub job_timeout: Duration,
    /// Where the worker's figures go (`/metrics`).
    pub metrics: Arc<ServerMetrics>,
}

/// Tells workers to stop: they claim nothing more, and a job in hand gets the grace period.
#[derive(Debug, Clone)]
pub struct Stop(tokio::sync::watch::Receiver<bool>);

/// What says stop to every [`Stop`] made with it.
#[derive(Debug)]
pub struct StopHandle(tokio::sync::watch::Sender<bool>);

impl StopHandle {
    pub fn stop(&self) {
        self.0.send_replace(true);
    }
}

/// A stop handle and the signal it sends.
pub fn stop_signal() -> (StopHandle, Stop) {
    let (sender, receiver) = tokio::sync::watch::channel(false);
    (StopHandle(sender), Stop(receiver))
}

impl Stop {
    /// A stop that never comes.
    pub fn never() -> Stop {
        stop_signal().1
    }

    pub fn requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes once stopping was asked (never, when the handle is gone without a stop).
    pub async fn asked(&self) {
        let mut receiver = self.0.clone();
        if receiver.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Completes `grace` after stopping was asked.
    async fn grace_over(&self, grace: Duration) {
        self.asked().await;
        tokio::time::sleep(grace).await;
    }
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
    /// The job failed because GitHub itself could not be reached or failed (not because of
    /// its installation or repository): the next job would most likely fail the same way.
    pub github_unreachable: bool,
}

/// Claims and runs one job; `None` when none may run now. Once `stop` is asked, the job has
/// `settings.shutdown_grace` to end; then it is handed back to the queue.
pub async fn run_next(
    queue: &Queue,
    settings: &WorkerSettings,
    stop: &Stop,
) -> Result<Option<JobRun>, ServerError> {
    let Some(lease) = queue.claim(&settings.id, settings.lease, now_ms()).await? else {
        return Ok(None);
    };
    let (heartbeat, fence) = keep_lease(queue, &lease, settings.lease);
    let started = std::time::Instant::now();
    let waited_ms = now_ms().saturating_sub(lease.job.run_after.max(lease.job.created_at));
    let span = tracing::info_span!(
        "job",
        id = %lease.job.id,
        kind = lease.job.kind.name(),
        conversation = %lease.job.conversation,
        attempt = lease.job.attempts,
        worker = %settings.id,
    );
    tracing::info!(parent: &span, waited_ms, "job started");
    let job = run_job(queue, &lease, settings, fence).instrument(span.clone());
    let result = tokio::select! {
        result = job => Some(result),
        () = tokio::time::sleep(settings.job_timeout) => Some(Err((
            ServerError::Invalid(format!(
                "the job ran over the server's limit of {} s (job_timeout_seconds) and was stopped",
                settings.job_timeout.as_secs()
            )),
            Failure::Permanent,
        ))),
        () = stop.grace_over(settings.shutdown_grace) => None,
    };
    heartbeat.abort();
    let handed_back = result.is_none();
    let github_unreachable = matches!(&result, Some(Err((error, _))) if error.github_unreachable());
    let (state, error, spent) = settle(queue, &lease, result, settings.shutdown_grace).await?;
    let ran = started.elapsed();
    let ended = if handed_back && state.is_some() {
        "handed_back"
    } else {
        ending(state)
    };
    settings.metrics.job(
        lease.job.kind,
        Duration::from_millis(u64::try_from(waited_ms).unwrap_or(0)),
        ran,
        ended,
        spent,
    );
    match &error {
        None => tracing::info!(parent: &span, ended, seconds = ran.as_secs_f64(), "job ended"),
        Some(error) => {
            tracing::warn!(parent: &span, ended, seconds = ran.as_secs_f64(), %error, "job ended");
        }
    }
    Ok(Some(JobRun {
        job: lease.job.id.clone(),
        state,
        error,
        github_unreachable,
    }))
}

/// Renews `lease` every third of its length while the job runs; the fence holds while renewals
/// succeed and the lease's time has not passed (abort the handle when the job ends).
fn keep_lease(
    queue: &Queue,
    lease: &Lease,
    length: Duration,
) -> (tokio::task::JoinHandle<()>, bugloop_forge::fencing::Fence) {
    let lease_ms = i64::try_from(length.as_millis()).unwrap_or(i64::MAX);
    let held = Arc::new(AtomicBool::new(true));
    let until = Arc::new(AtomicI64::new(now_ms().saturating_add(lease_ms)));
    let heartbeat = {
        let (queue, lease, held, until) =
            (queue.clone(), lease.clone(), held.clone(), until.clone());
        let every = length / 3;
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
    let fence = bugloop_forge::fencing::Fence::new(move || {
        held.load(Ordering::SeqCst) && now_ms() < until.load(Ordering::SeqCst)
    });
    (heartbeat, fence)
}

/// Records how the job ended: done, failed (queued again or dead), or handed back to the queue
/// (`None`: the server stopped and the job did not end within `grace`). The state is `None` when
/// the lease was lost meanwhile.
async fn settle(
    queue: &Queue,
    lease: &Lease,
    result: Option<Result<Spent, (ServerError, Failure)>>,
    grace: Duration,
) -> Result<(Option<JobState>, Option<String>, Spent), ServerError> {
    let now = now_ms();
    Ok(match result {
        Some(Ok(spent)) => (
            queue.complete(lease, now).await?.then_some(JobState::Done),
            None,
            spent,
        ),
        Some(Err((error, failure))) => {
            let message = error.to_string();
            (
                queue.fail(lease, &message, failure, now).await?,
                Some(message),
                Spent::default(),
            )
        }
        None => {
            let message = format!(
                "handed back: the server stopped and the job did not end within {} s",
                grace.as_secs()
            );
            let state = queue.release(lease, now).await?.then_some(JobState::Queued);
            (state, Some(message), Spent::default())
        }
    })
}

/// Runs the job's trigger; an error says whether retrying may help.
async fn run_job(
    queue: &Queue,
    lease: &Lease,
    settings: &WorkerSettings,
    fence: bugloop_forge::fencing::Fence,
) -> Result<Spent, (ServerError, Failure)> {
    let failed = |error: ServerError| {
        let failure = if error.is_transient() {
            Failure::Transient
        } else {
            Failure::Permanent
        };
        (error, failure)
    };
    let trigger: Trigger = serde_json::from_str(&lease.job.payload).map_err(|e| {
        failed(ServerError::Invalid(format!(
            "job {}: its payload is not a trigger: {e}",
            lease.job.id
        )))
    })?;
    let repository = trigger.repository().to_owned();
    let metrics = settings.metrics.clone();
    let run = run_github_event(GitHubEventJob {
        event: GitHubEvent::Decided(trigger),
        repository: None,
        credentials: Some(GitHubCredentials::App(settings.app.clone())),
        endpoint: settings.endpoint.clone(),
        policy: settings.policy.clone(),
        rate_limits: Some(Arc::new(move |installation, resource, rate| {
            metrics.rate_limit(installation, resource, rate);
        })),
        state_key: settings.state_key.clone(),
        bot_login: None,
        workspace: Workspace::Clones {
            root: settings.workspaces.clone(),
            git_base: settings.git_base.clone(),
            token_refresh: settings.git_token_refresh,
        },
        config: settings.config.clone(),
        progress: Arc::new(bugloop_loops::Silent),
        model: settings.model.clone(),
        fail_on: None,
        fence: Some(fence),
    })
    .await
    .map_err(|error| failed(error.into()))?;
    // The repository's settings the operator keeps, and the like: the operator's to read.
    for warning in run.outcome.warnings() {
        tracing::warn!(job = %lease.job.id, %repository, "{warning}");
    }
    if let Some(reason) = run.outcome.skipped() {
        tracing::info!(job = %lease.job.id, %repository, "nothing done: {reason}");
    }
    what_it_came_to(queue, lease, repository, run).await
}

/// What a job that ran came to: the model's spending of a review, and the solving of an issue
/// an error report just filed (queued next, as if labelled: its own label event is the App's,
/// which the server drops).
async fn what_it_came_to(
    queue: &Queue,
    lease: &Lease,
    repository: String,
    run: GitHubEventRun,
) -> Result<Spent, (ServerError, Failure)> {
    match run.outcome {
        EventOutcome::Review { outcome, .. } => Ok(outcome
            .report
            .as_ref()
            .map(|report| Spent {
                input_tokens: report.usage.input_tokens,
                cached_input_tokens: report.usage.cached_input_tokens,
                output_tokens: report.usage.output_tokens,
                cost_usd: report.usage.cost_usd,
            })
            .unwrap_or_default()),
        // Filed, or reopened after a regression: solved (again) as if labelled.
        EventOutcome::ErrorReport { outcome }
            if outcome.report.filed || outcome.report.reopened() =>
        {
            let follow = Trigger::Solve {
                repository,
                issue: outcome.report.issue,
                installation: run.installation,
                label: None,
                labelled_by: None,
                approved: None,
                filed_from_report: true,
                urgency: bugloop_domain::urgency::Urgency::parse(outcome.report.severity.as_str())
                    .map(|u| u.rank),
            };
            follow_up(queue, lease, &follow)
                .await
                .map_err(|e| (e, Failure::Transient))?;
            Ok(Spent::default())
        }
        // A solve waiting for a reviewer until a time: looked at again then, if no event
        // comes first (one job per wait, however many runs saw it).
        EventOutcome::Solve { issue, outcome } if outcome.report.wake_at.is_some() => {
            let wake_at = outcome.report.wake_at.as_deref().unwrap_or_default();
            let due = wake_at
                .parse::<jiff::Timestamp>()
                .map_err(|e| {
                    (
                        ServerError::Invalid(format!("a solve's wake time {wake_at:?}: {e}")),
                        Failure::Permanent,
                    )
                })?
                .as_millisecond()
                // A minute after the wait ends, so the run finds it over.
                .saturating_add(60_000);
            let follow = Trigger::Solve {
                repository: repository.clone(),
                issue,
                installation: run.installation,
                label: None,
                labelled_by: None,
                approved: None,
                filed_from_report: false,
                urgency: None,
            };
            let delivery = format!("{repository}#{issue}:wake:{wake_at}");
            enqueue_solve(queue, &delivery, &follow, due.max(now_ms()))
                .await
                .map_err(|e| (e, Failure::Transient))?;
            Ok(Spent::default())
        }
        // Their reports do not carry the model's usage.
        EventOutcome::NotRun { .. }
        | EventOutcome::Comment { .. }
        | EventOutcome::Converge { .. }
        | EventOutcome::Solve { .. }
        | EventOutcome::ErrorReport { .. } => Ok(Spent::default()),
    }
}

/// Queues the solving of an issue (`trigger`, an autofix) after the job `lease` holds; its
/// delivery id is the job's, so a job run twice queues it once.
async fn follow_up(queue: &Queue, lease: &Lease, trigger: &Trigger) -> Result<(), ServerError> {
    enqueue_solve(
        queue,
        &format!("{}:follow-up", lease.job.id),
        trigger,
        now_ms(),
    )
    .await
}

/// Queues a solve job for `trigger` under `delivery` (a delivery seen before queues nothing),
/// to run from `run_after` (ms). The queue dates the delivery at the time it may run.
async fn enqueue_solve(
    queue: &Queue,
    delivery: &str,
    trigger: &Trigger,
    run_after: i64,
) -> Result<(), ServerError> {
    let payload = serde_json::to_string(trigger)
        .map_err(|e| ServerError::Invalid(format!("a follow-up job: {e}")))?;
    queue
        .enqueue(
            delivery,
            "bugloop",
            Some(bugloop_queue::NewJob {
                kind: bugloop_queue::JobKind::Solve,
                conversation: trigger.conversation(),
                installation: trigger.installation().and_then(|i| i64::try_from(i).ok()),
                head: None,
                payload,
                priority: trigger.priority(),
            }),
            run_after,
        )
        .await?;
    Ok(())
}
