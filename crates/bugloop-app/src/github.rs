//! Opening bugloop on a GitHub pull request. What the pull request's head contains is untrusted:
//! the configuration comes from its **base** commit (the head's own file chooses nothing), the
//! commits are fetched into the local clone under bugloop's own refs, and bugloop's state is
//! trusted only from its login, signed with a key from the environment where that login is
//! shared (an Action's `github-actions[bot]`). A pull request from a fork, or a run without the
//! key where it is needed, is reviewed without writing anything.

use std::sync::Arc;

use bugloop_forge::fencing::FencedForge;
use bugloop_forge::github::GitHubForge;
use bugloop_forge::signing::{SigningForge, StateKey};
use bugloop_forge::{ChangeKey, Forge};
use bugloop_git::Git;
use bugloop_github::{GitHubClient, Repo};

use crate::AppError;

/// The pull request a run is about, and how to reach it.
#[derive(Debug, Clone)]
pub struct GitHubTarget {
    /// The job's one GitHub client.
    pub client: Arc<GitHubClient>,
    /// bugloop writes as a workflow token's login, which every workflow of the repository
    /// shares (an Action); an App's login is its own.
    pub shared_login: bool,
    pub repo: Repo,
    pub number: u64,
    /// The login bugloop writes as; `None` resolves it (`GET /app` for an App, `GET /user` for
    /// a token).
    pub bot_login: Option<String>,
    /// Signs bugloop's state (`BUGLOOP_STATE_KEY`).
    pub state_key: Option<StateKey>,
    /// The remote the pull request's commits are fetched from (`origin`), when they are not in
    /// the clone yet.
    pub remote: String,
    /// Asked before every write (the server's worker: while its lease holds); `None`: always.
    pub fence: Option<bugloop_forge::fencing::Fence>,
}

/// The pull request as it was when the run started.
#[derive(Debug, Clone)]
pub struct PullRequestRun {
    pub key: ChangeKey,
    pub number: u64,
    pub title: String,
    pub author: Option<String>,
    /// The base branch's commit: where the configuration is read from.
    pub base_sha: String,
    pub base_branch: String,
    /// The head pinned at start; a run publishes and pushes only while it is still the head.
    pub head_sha: String,
    pub head_branch: String,
    /// The remote the head branch is pushed to.
    pub remote: String,
    /// From another repository: reviewed only, nothing written, no secrets.
    pub fork: bool,
    /// Why this run may not write to the pull request (a fork, no state key), if it may not.
    pub read_only: Option<String>,
}

/// What opening a pull request gives the application.
pub(crate) struct OpenedPullRequest {
    pub forge: Arc<dyn Forge>,
    pub run: PullRequestRun,
}

/// The base commit's rule files (`AGENTS.md`, `.cursor/rules/*`, ...) copied into a directory
/// of their own, read as data from git: the instructions the reviewer and the agents follow come
/// from the base, never from the pull request.
pub(crate) fn base_rules(
    git: &Git,
    base: &str,
) -> Result<bugloop_sandbox::owner::OwnedDir, AppError> {
    let dir = bugloop_sandbox::owner::temp_dir("rules").map_err(|e| {
        AppError::Invalid(format!(
            "cannot make a directory for the base's rule files: {e}"
        ))
    })?;
    for entry in bugloop_loops::context::RULE_FILES {
        // A directory's files (one level, as the reader lists them), or the file itself.
        let listing = git
            .run(&["ls-tree", "--name-only", &format!("{base}:{entry}")])
            .unwrap_or_default();
        let paths: Vec<String> = if listing.is_empty() {
            vec![(*entry).to_owned()]
        } else {
            listing
                .lines()
                .map(|name| format!("{entry}/{name}"))
                .collect()
        };
        for path in paths {
            let Some(bytes) = git.show(base, &path) else {
                continue;
            };
            let target = dir.path().join(&path);
            let written = target
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&target, bytes));
            written
                .map_err(|e| AppError::Invalid(format!("cannot copy the base's {path}: {e}")))?;
        }
    }
    Ok(dir)
}

impl std::fmt::Debug for OpenedPullRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedPullRequest")
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

/// The login bugloop writes as: the one given, else the App's or the token's as GitHub says.
async fn bot_login(target: &GitHubTarget) -> Result<String, AppError> {
    let github = |e| AppError::GitHub(Box::new(e));
    match &target.bot_login {
        Some(login) => Ok(login.clone()),
        None if target.shared_login => target.client.user_login().await.map_err(github),
        None => target.client.app_bot_login().await.map_err(github),
    }
}

/// An issue of a GitHub repository, opened for the solve pipeline.
#[derive(Debug, Clone)]
pub(crate) struct GitHubIssueRun {
    pub forge: Arc<GitHubForge>,
    pub remote: String,
    /// The default branch, which the solution goes into, and its commit on the remote now.
    pub base_branch: String,
    pub base_sha: String,
    pub fence: Option<bugloop_forge::fencing::Fence>,
}

/// Opens the repository's issues: the App's own login (a workflow's token is shared by every
/// workflow, so it could not tell its solve record from another's), and the default branch as
/// the remote has it now.
pub(crate) async fn open_issue(
    git: &Git,
    target: &GitHubTarget,
) -> Result<(Arc<dyn Forge>, GitHubIssueRun), AppError> {
    if target.shared_login {
        return Err(AppError::Invalid(
            "solving an issue on GitHub runs as a GitHub App (`bugloop serve`): its own login \
             keeps the issue's solve record, which a workflow token, shared by every workflow of \
             the repository, could not tell from a look-alike"
                .to_owned(),
        ));
    }
    let bot = bot_login(target).await?;
    let remote = &target.remote;
    git.run(&[
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-recurse-submodules",
        remote,
    ])?;
    let base_branch = git
        .run(&[
            "symbolic-ref",
            "--short",
            &format!("refs/remotes/{remote}/HEAD"),
        ])
        .ok()
        .and_then(|name| name.strip_prefix(&format!("{remote}/")).map(str::to_owned))
        .or_else(|| git.default_branch())
        .ok_or_else(|| {
            AppError::Invalid(format!(
                "the clone at {} does not know {remote}'s default branch",
                git.root().display()
            ))
        })?;
    let base_sha = git
        .resolve(&format!("refs/remotes/{remote}/{base_branch}"))
        .or_else(|| git.resolve(&base_branch))
        .ok_or_else(|| {
            AppError::Invalid(format!(
                "the default branch {base_branch} is not in the clone at {}",
                git.root().display()
            ))
        })?;
    let forge = Arc::new(GitHubForge::new(
        target.client.clone(),
        target.repo.clone(),
        &bot,
        Some(git.clone()),
    ));
    let writes: Arc<dyn Forge> = match &target.fence {
        Some(fence) => Arc::new(FencedForge::new(forge.clone(), fence.clone())),
        None => forge.clone(),
    };
    Ok((
        writes,
        GitHubIssueRun {
            forge,
            remote: remote.clone(),
            base_branch,
            base_sha,
            fence: target.fence.clone(),
        },
    ))
}

/// Reads the pull request, fetches its commits when the clone lacks them, and opens its forge.
pub(crate) async fn open_pull_request(
    git: &Git,
    target: &GitHubTarget,
) -> Result<OpenedPullRequest, AppError> {
    let github = |e| AppError::GitHub(Box::new(e));
    let pull = target
        .client
        .pull_request(&target.repo, target.number)
        .await
        .map_err(github)?;
    if git.resolve(&pull.head.sha).is_none() || git.resolve(&pull.base.sha).is_none() {
        git.fetch_pull_request(&target.remote, pull.number, &pull.base.branch)?;
    }
    for (what, sha) in [("head", &pull.head.sha), ("base", &pull.base.sha)] {
        if git.resolve(sha).is_none() {
            return Err(AppError::Invalid(format!(
                "pull request #{}: its {what} commit {sha} is not in the clone at {} even after fetching from {}",
                pull.number,
                git.root().display(),
                target.remote
            )));
        }
    }
    let bot = bot_login(target).await?;
    let base_repo = pull.base.repo.as_ref().map(|r| r.full_name.as_str());
    // A deleted fork has no head repository: still someone else's.
    let fork =
        pull.head.repo.as_ref().map(|r| r.full_name.as_str()) != base_repo || base_repo.is_none();
    let shared_login = target.shared_login;
    let read_only = if fork {
        Some(format!(
            "pull request #{} comes from a fork: it is reviewed, and nothing is written to it",
            pull.number
        ))
    } else if shared_login && target.state_key.is_none() {
        Some(format!(
            "BUGLOOP_STATE_KEY is not set: {bot} is shared by every workflow of the repository, \
             so without a key bugloop cannot tell its own state from a look-alike; the review \
             is reported here and nothing is written to the pull request"
        ))
    } else {
        None
    };
    let key = GitHubForge::change_key(&target.repo, pull.number);
    let base: Arc<dyn Forge> = Arc::new(GitHubForge::new(
        target.client.clone(),
        target.repo.clone(),
        &bot,
        Some(git.clone()),
    ));
    let forge: Arc<dyn Forge> = match &target.state_key {
        Some(state_key) => Arc::new(SigningForge::new(base, state_key.clone())),
        None => base,
    };
    let forge: Arc<dyn Forge> = match &target.fence {
        Some(fence) => Arc::new(FencedForge::new(forge, fence.clone())),
        None => forge,
    };
    Ok(OpenedPullRequest {
        forge,
        run: PullRequestRun {
            key,
            number: pull.number,
            title: pull.title,
            author: pull.user.map(|u| u.login),
            base_sha: pull.base.sha,
            base_branch: pull.base.branch,
            head_sha: pull.head.sha,
            head_branch: pull.head.branch,
            remote: target.remote.clone(),
            fork,
            read_only,
        },
    })
}
