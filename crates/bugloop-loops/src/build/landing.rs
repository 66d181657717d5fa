//! Landing a verified commit: on the change's branch (compare-and-set, never blindly), and what
//! a landed change did (binary files, lines added, removed and files touched).

use bugloop_config::Config;
use bugloop_git::{Git, short};
use bugloop_report::build::Landing;

use super::{BuildError, Workbench};
use crate::env::{LoopEnv, WorkTarget};

/// Lands the work where `env.work` says: the user's branch, or the pull request's branch.
pub(crate) async fn land_on_target(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    label: &str,
) -> Result<Option<Landing>, BuildError> {
    match &env.work {
        WorkTarget::LocalBranch => land(bench, env.config(), label),
        WorkTarget::PullRequest {
            change,
            head,
            remote,
            branch,
            ..
        } => {
            let commit = bench.head()?;
            if commit == bench.start_head {
                return Ok(None);
            }
            // Pushed only onto the head the job started from; a push meanwhile wins.
            let now = env.forge.head(change).await.map_err(Box::new)?;
            let moved = now.as_deref().is_some_and(|now| now != head);
            let git = bench.git();
            if !moved {
                env.forge.may_push().map_err(Box::new)?;
                let pushed = git.run(&[
                    "push",
                    "--quiet",
                    "--no-verify",
                    remote,
                    &format!("{commit}:refs/heads/{branch}"),
                ]);
                match pushed {
                    Ok(_) => {
                        return Ok(Some(Landing::FastForwarded {
                            branch: branch.clone(),
                            commit,
                        }));
                    }
                    // Refused as not a fast-forward: the branch moved after the check.
                    Err(bugloop_git::GitError::Failed { .. }) => {}
                    Err(other) => return Err(other.into()),
                }
            }
            let name = format!("{}{label}-{}", env.config().branch_prefix, short(&commit));
            env.forge.may_push().map_err(Box::new)?;
            git.run(&[
                "push",
                "--quiet",
                "--no-verify",
                remote,
                &format!("{commit}:refs/heads/{name}"),
            ])?;
            Ok(Some(Landing::Branch {
                name,
                commit,
                reason: format!("the pull request's branch `{branch}` moved meanwhile"),
            }))
        }
    }
}

/// Lands the worktree's HEAD (when it advanced past the start) on the user's branch.
pub fn land(
    bench: &Workbench,
    config: &Config,
    label: &str,
) -> Result<Option<Landing>, BuildError> {
    let commit = bench.head()?;
    if commit == bench.start_head {
        return Ok(None);
    }
    let git = bench.git();
    let reason = match (&bench.start_branch, git.current_branch()) {
        (None, _) => Some("HEAD was detached when the work started".to_owned()),
        (Some(start), now) if now.as_deref() != Some(start.as_str()) => Some(format!(
            "the branch changed from {start} to {} meanwhile",
            now.as_deref().unwrap_or("a detached HEAD")
        )),
        _ if git.head().as_deref() != Some(bench.start_head.as_str()) => {
            Some("HEAD moved meanwhile".to_owned())
        }
        _ if !git.is_clean()? => Some("the working tree has uncommitted changes now".to_owned()),
        _ => None,
    };
    match (reason, &bench.start_branch) {
        (None, Some(branch)) => {
            git.run(&[
                "-c",
                "core.hooksPath=/dev/null",
                "merge",
                "-q",
                "--ff-only",
                &commit,
            ])?;
            Ok(Some(Landing::FastForwarded {
                branch: branch.clone(),
                commit,
            }))
        }
        (reason, _) => {
            let name = format!("{}{label}-{}", config.branch_prefix, short(&commit));
            git.run(&["branch", "-f", &name, &commit])?;
            Ok(Some(Landing::Branch {
                name,
                commit,
                reason: reason.unwrap_or_else(|| "HEAD was detached".to_owned()),
            }))
        }
    }
}

/// The files changed between two commits that git counts no lines of (binary files): a size
/// limit in lines cannot judge them.
pub fn binary_changes(git: &Git, from: &str, to: &str) -> Result<Vec<String>, BuildError> {
    let numstat = git.run(&["diff", "--numstat", from, to])?;
    Ok(numstat
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some("-"), Some("-"), Some(path)) => Some(path.to_owned()),
                _ => None,
            }
        })
        .collect())
}

/// The files and line counts between two commits (for reports).
pub fn net_change(git: &Git, from: &str, to: &str) -> Result<(usize, usize, usize), BuildError> {
    let numstat = git.run(&["diff", "--numstat", from, to])?;
    let mut files = 0;
    let mut added = 0;
    let mut removed = 0;
    for line in numstat.lines() {
        let mut parts = line.split('\t');
        files += 1;
        added += parts
            .next()
            .and_then(|a| a.parse::<usize>().ok())
            .unwrap_or(0);
        removed += parts
            .next()
            .and_then(|r| r.parse::<usize>().ok())
            .unwrap_or(0);
    }
    Ok((files, added, removed))
}
