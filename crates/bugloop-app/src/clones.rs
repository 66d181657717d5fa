//! The server's workspaces: one clone per repository under a root, fetched and pushed with the
//! installation's token through git's `http.extraheader` (as GitHub's own checkout action does;
//! the sandbox never shows a clone's git configuration to what runs in it). The token is renewed
//! while a job runs and removed when it ends, however it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bugloop_github::{GitHubClient, Repo};

use crate::AppError;

/// A job's clone and its hold on the clone's token: renewed while held, removed when dropped.
pub(crate) struct HeldClone {
    pub directory: PathBuf,
    renewer: tokio::task::JoinHandle<()>,
}

impl HeldClone {
    /// The clone of `repo` under `root` (made on first use from `<git_base>/<owner>/<name>.git`),
    /// set to fetch and push with `client`'s token, renewed every `refresh` (installation tokens
    /// last an hour: a long job's push never meets an expired one).
    pub async fn open(
        root: &Path,
        git_base: &str,
        repo: &Repo,
        client: Arc<GitHubClient>,
        refresh: Duration,
    ) -> Result<HeldClone, AppError> {
        let token = client
            .current_token()
            .await
            .map_err(|e| AppError::GitHub(Box::new(e)))?;
        let directory = root.join(&repo.owner).join(&repo.name);
        let url = format!(
            "{}/{}/{}.git",
            git_base.trim_end_matches('/'),
            repo.owner,
            repo.name
        );
        if !directory.join(".git").exists() {
            std::fs::create_dir_all(&directory).map_err(|e| {
                AppError::Invalid(format!("cannot make {}: {e}", directory.display()))
            })?;
            bugloop_git::clone(
                &url,
                &directory,
                &[("http.extraheader".to_owned(), auth_header(&token))],
            )?;
        }
        set_git_token(&directory, &token)?;
        let renewer = {
            let directory = directory.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(refresh).await;
                    match client.current_token().await {
                        Ok(token) => {
                            if let Err(error) = set_git_token(&directory, &token) {
                                tracing::warn!(%error, "cannot renew the clone's token");
                            }
                        }
                        Err(error) => tracing::warn!(%error, "cannot renew the clone's token"),
                    }
                }
            })
        };
        Ok(HeldClone { directory, renewer })
    }
}

impl Drop for HeldClone {
    fn drop(&mut self) {
        self.renewer.abort();
        // The token does not outlive the job in the clone's configuration.
        if let Err(error) = forget_git_token(&self.directory) {
            tracing::warn!(%error, "cannot remove the clone's token");
        }
    }
}

fn auth_header(token: &str) -> String {
    format!(
        "AUTHORIZATION: basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    )
}

/// Removes the token [`set_git_token`] wrote (the next job writes a fresh one).
fn forget_git_token(directory: &Path) -> Result<(), AppError> {
    let git = bugloop_git::Git::open(directory)?;
    if git
        .run(&["config", "--local", "--get-all", "http.extraheader"])
        .is_ok()
    {
        git.run(&["config", "--local", "--unset-all", "http.extraheader"])?;
    }
    Ok(())
}

/// The clone fetches and pushes with `token` (git reads its configuration at each command, and
/// writes it whole by renaming, so a command running meanwhile sees the old token or the new).
fn set_git_token(directory: &Path, token: &str) -> Result<(), AppError> {
    let git = bugloop_git::Git::open(directory)?;
    git.run(&["config", "--local", "http.extraheader", &auth_header(token)])?;
    Ok(())
}
