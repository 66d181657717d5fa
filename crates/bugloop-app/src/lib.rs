//! bugloop's application layer: the one entry per job that every front end calls. The CLI, the
//! GitHub Action and the server parse their input, open an [`App`] and call a job (review a
//! change, fix, do, ask, act on a comment, reply, converge); each job returns an [`Outcome`]: the
//! report to render and a [`Verdict`] the front end maps to its exit code, check result or job
//! state. No front end wires the crates below (forge, model, meter, checkout, sandbox) itself.
//!
//! **Invariants:** no front end opens a forge, connects a model, makes a meter or checks out a
//! change itself; they gather input, call a job, render its outcome. Nothing server-only (HTTP, the
//! queue, metrics) and nothing benchmark-only lives here, and no test support is exported.

mod act;
mod clones;
mod configuration;
mod converge;
mod conversation;
pub mod doctor;
mod error;
mod github;
mod github_event;
pub mod inspect;
mod item;
pub mod leftovers;
mod local_review;
mod models;
mod outcome;
mod outsider_reviews;
mod pull_request;
mod report;
mod review;
pub mod runs;
mod solve;
mod solve_all;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bugloop_config::Config;
use bugloop_forge::Forge;
use bugloop_forge::local::LocalForge;
use bugloop_git::Git;
use bugloop_loops::LoopSettings;

pub use self::act::{CommentJob, FixJob, ReplyJob, ReplyOutcome};
pub use self::configuration::{
    ConfigCheck, ConfigChoice, Configuration, OperatorConfig, check_configuration,
    load_configuration,
};
pub use self::converge::ConvergeJob;
pub use self::conversation::{FindingThread, StoreAction, StoreResult, store_action};
pub use self::error::AppError;
pub use self::github::PullRequestRun;
pub use self::github_event::{
    EventOutcome, GitHubCredentials, GitHubEvent, GitHubEventJob, GitHubEventRun, RateLimitSink,
    Workspace, run_github_event, trigger_settings,
};
pub use self::item::ItemView;
pub use self::local_review::{ChecksJob, ChecksView, ReviewCommentJob, ReviewDecisionJob};
pub use self::models::Models;
pub use self::outcome::{Outcome, Verdict};
pub use self::pull_request::{PullRequestComment, PullRequestCommentKind};
pub use self::report::ErrorReportOutcome;
pub use self::review::{ReviewJob, ReviewScope};
pub use self::solve::SolveJob;
pub use self::solve_all::{SolveAllJob, SolvedIssue, issue_severity};
pub use self::watch::{Watch, WatchEvent, WatchLimits};
pub use bugloop_sandbox::shown_to_every_command;
pub use bugloop_solve::SolveAsk;

/// Resolves when the process is asked to stop (Ctrl-C or SIGTERM): how a long-running front end
/// (`bugloop serve`, `bugloop watch`) knows to finish what it holds and end.
pub async fn stop_requested() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// What a front end renders, and the renderers, from the crates below: a front end depends on
/// this crate alone.
pub mod types {
    pub use bugloop_config::{schema as config_schema, to_json_with_sources, to_yaml_with_sources};
    pub use bugloop_diff::Diff;
    pub use bugloop_domain::Score;
    pub use bugloop_domain::score::RUBRIC;
    pub use bugloop_intake::read as read_report;
    pub use bugloop_intake::segment::Segmenter;
    pub use bugloop_intake::{Located, MAX_REPORT_BYTES, Severity};
    pub use bugloop_loops::{Progress, ProgressEvent, Silent};
    pub use bugloop_report::act::ActReport;
    pub use bugloop_report::converge::ConvergeReport;
    pub use bugloop_report::dispute::DisputeOutcome;
    pub use bugloop_report::review::ReviewReport;
    pub use bugloop_report::solve::SolveReport;
    /// The renderers (text, Markdown, SARIF, JSON) every front end prints reports with.
    pub use bugloop_report::{json, markdown, sarif, style, text};
    pub use bugloop_store::{CheckState, ReviewDecision};
}

/// What the Action names of GitHub: where it is, how to pace writes, the repository, the state
/// key, and what an event asked for.
pub mod github_types {
    pub use bugloop_forge::signing::StateKey;
    pub use bugloop_github::{Endpoint, Policy, Repo};
    pub use bugloop_webhooks::Trigger;
}

/// How to open an [`App`].
#[derive(Debug, Clone)]
pub struct AppOptions {
    /// A directory inside the repository to work on.
    pub directory: PathBuf,
    pub config: ConfigChoice,
    /// Where progress goes while a job runs (`Silent` for none).
    pub progress: Arc<dyn bugloop_loops::Progress>,
    /// Where the conversation is.
    pub forge: ForgeChoice,
}

/// Where a repository's conversations are.
#[derive(Debug, Clone, Default)]
pub enum ForgeChoice {
    /// In the embedded store of the repository (the local product).
    #[default]
    Local,
    /// On a GitHub pull request; the directory is a clone of its repository.
    GitHub(Box<github::GitHubTarget>),
    /// On a GitHub repository's issues (the solve pipeline; `number` is the issue's); the
    /// directory is a clone of the repository.
    GitHubIssues(Box<github::GitHubTarget>),
}

/// One repository's bugloop, opened once from resolved settings: its forge, a model factory
/// that gives each job a fresh budget meter, the runs directory and the progress sink.
#[derive(Debug)]
pub struct App {
    git: Git,
    /// Resolved once at open, so a bad value fails before any work.
    settings: LoopSettings,
    /// The branch's changes to trusted settings that were ignored (a review reports them as a
    /// finding of bugloop's own).
    ignored: Vec<bugloop_config::IgnoredBranchSetting>,
    /// Why the branch's configuration file did not read, when it did not (also a finding).
    branch_unreadable: Option<String>,
    warnings: Vec<String>,
    /// The forge every job reads and writes the conversation through.
    forge: Arc<dyn Forge>,
    /// The local store itself, where developers' comments are written by bugloop (`None` on
    /// GitHub, where they are written on the pull request).
    local: Option<Arc<LocalForge>>,
    /// The pull request of a GitHub run.
    pull_request: Option<PullRequestRun>,
    /// The repository's issues, on a GitHub solve run.
    github_issues: Option<github::GitHubIssueRun>,
    /// The base commit's rule files, on a pull request (kept while the app lives).
    _base_rules: Option<bugloop_sandbox::owner::OwnedDir>,
    models: Models,
    runs_dir: PathBuf,
    progress: Arc<dyn bugloop_loops::Progress>,
}

impl App {
    /// Opens the repository containing `options.directory`: its configuration (every layer,
    /// validated), the local conversation store and the model settings.
    pub async fn open(options: AppOptions) -> Result<App, AppError> {
        // Outside a repository this is the error to show, not a configuration problem.
        let git = Git::open(&options.directory)?;
        let mut github_issues = None;
        let (configuration, forge, local, pull_request, base_rules) = match &options.forge {
            ForgeChoice::Local => {
                let configuration = load_configuration(git.root(), &options.config)?;
                let local = LocalForge::open(
                    git.clone(),
                    &configuration.loaded.config.identity.local_bot_name,
                )
                .await
                .map_err(|source| AppError::Store {
                    repository: git.root().to_path_buf(),
                    source,
                })?;
                let local = Arc::new(local);
                let forge: Arc<dyn Forge> = local.clone();
                (configuration, forge, Some(local), None, None)
            }
            ForgeChoice::GitHub(target) => {
                let opened = github::open_pull_request(&git, target).await?;
                let configuration = configuration::load_for_pull_request(
                    &git,
                    &opened.run.base_sha,
                    Some(&opened.run.head_sha),
                    &options.config,
                )?;
                let rules = github::base_rules(&git, &opened.run.base_sha)?;
                (
                    configuration,
                    opened.forge,
                    None,
                    Some(opened.run),
                    Some(rules),
                )
            }
            ForgeChoice::GitHubIssues(target) => {
                let (forge, run) = github::open_issue(&git, target).await?;
                // The default branch's configuration and rules: an issue has no branch of its
                // own, and nothing an attacker could push reaches them.
                let configuration = configuration::load_for_pull_request(
                    &git,
                    &run.base_sha,
                    None,
                    &options.config,
                )?;
                let rules = github::base_rules(&git, &run.base_sha)?;
                github_issues = Some(run);
                (configuration, forge, None, None, Some(rules))
            }
        };
        let mut warnings = configuration.warnings;
        let prompts = configuration.prompts;
        warnings.extend(pull_request.as_ref().and_then(|p| p.read_only.clone()));
        let config = configuration.loaded.config;
        warnings.extend(doctor::unconfined_warning(&config));
        let runs_dir = runs::runs_dir(&git);
        let mut settings = LoopSettings::resolve(config.clone()).map_err(AppError::Config)?;
        settings.rules_root = base_rules.as_ref().map(|dir| dir.path().to_path_buf());
        settings.repository_prompts = prompts;
        Ok(App {
            models: Models::new(&config),
            settings,
            _base_rules: base_rules,
            git,
            ignored: configuration.loaded.ignored,
            branch_unreadable: configuration.loaded.branch_unreadable,
            warnings,
            forge,
            local,
            pull_request,
            github_issues,
            runs_dir,
            progress: options.progress,
        })
    }

    /// The pull request of a GitHub run.
    pub fn pull_request(&self) -> Option<&PullRequestRun> {
        self.pull_request.as_ref()
    }

    /// The local store, for the jobs that write a developer's comment into it.
    fn local_store(&self, what: &str) -> Result<&LocalForge, AppError> {
        self.local.as_deref().ok_or_else(|| {
            AppError::Invalid(format!(
                "{what} works on a local repository's conversation; on a pull request, write \
                 the comment there and bugloop acts on it"
            ))
        })
    }

    /// What the user should know before the job's output: the branch's ignored settings,
    /// commands that will run unconfined.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn config(&self) -> &Config {
        &self.settings.config
    }

    pub fn root(&self) -> &Path {
        self.git.root()
    }

    /// Where agent transcripts are kept.
    pub fn runs_dir(&self) -> &Path {
        &self.runs_dir
    }
}
