//! The server's workspaces: one clone per repository under a root, fetched and pushed with the
//! installation's token through git's `http.extraheader` (as GitHub's own checkout action does).
//! The header is in a file of its own (mode 0600, under the root's `.tokens`, outside every
//! clone) that the clone's configuration includes: written by bugloop, never given to a command
//! on its command line (which every local user can read in `/proc`), never in a clone's own
//! configuration, and never shown to what runs in the sandbox. The token is renewed while a job
//! runs and removed when it ends, however it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bugloop_github::{GitHubClient, Repo};

use crate::AppError;

/// A job's clone and its hold on the clone's token: renewed while held, removed when dropped.
pub(crate) struct HeldClone {
    pub directory: PathBuf,
    /// The file holding the clone's token (see the module's doc).
    token_file: PathBuf,
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
        let token_file = root
            .join(".tokens")
            .join(&repo.owner)
            .join(format!("{}.gitconfig", repo.name));
        set_git_token(&directory, &token_file, &token)?;
        let renewer = {
            let token_file = token_file.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(refresh).await;
                    match client.current_token().await {
                        Ok(token) => {
                            if let Err(error) = write_token(&token_file, &token) {
                                tracing::warn!(%error, "cannot renew the clone's token");
                            }
                        }
                        Err(error) => tracing::warn!(%error, "cannot renew the clone's token"),
                    }
                }
            })
        };
        Ok(HeldClone {
            directory,
            token_file,
            renewer,
        })
    }
}

impl Drop for HeldClone {
    fn drop(&mut self) {
        self.renewer.abort();
        // The token does not outlive the job (git passes over an included file that is gone).
        match std::fs::remove_file(&self.token_file) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(%error, "cannot remove the clone's token");
            }
            _ => {}
        }
    }
}

fn auth_header(token: &str) -> String {
    format!(
        "AUTHORIZATION: basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"))
    )
}

/// The clone fetches and pushes with `token`: its configuration includes `token_file`, which
/// holds the header. A header an earlier bugloop wrote into the clone's own configuration goes.
fn set_git_token(directory: &Path, token_file: &Path, token: &str) -> Result<(), AppError> {
    write_token(token_file, token)?;
    let git = bugloop_git::Git::open(directory)?;
    if git
        .run(&["config", "--local", "--get-all", "http.extraheader"])
        .is_ok()
    {
        git.run(&["config", "--local", "--unset-all", "http.extraheader"])?;
    }
    let included = token_file.display().to_string();
    let now = git.run(&["config", "--local", "--get-all", "include.path"]);
    if !now.is_ok_and(|paths| paths.lines().any(|p| p == included)) {
        git.run(&["config", "--local", "--add", "include.path", &included])?;
    }
    Ok(())
}

/// Writes the header for `token` to `token_file`, readable by the server's user only, whole: a
/// git command reading it meanwhile sees the old token or the new.
fn write_token(token_file: &Path, token: &str) -> Result<(), AppError> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    let failed = |e: std::io::Error| {
        AppError::Invalid(format!(
            "cannot write the clone's token to {}: {e}",
            token_file.display()
        ))
    };
    let dir = token_file
        .parent()
        .ok_or_else(|| failed(std::io::ErrorKind::InvalidInput.into()))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(failed)?;
    // A temporary file is made readable by its owner only.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    writeln!(file, "[http]\n\textraheader = {}", auth_header(token)).map_err(failed)?;
    file.persist(token_file).map_err(|e| failed(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// The header git would send from the clone, as git reads it (through the include).
    fn header(clone: &Path) -> Option<String> {
        let git = bugloop_git::Git::open(clone).unwrap();
        git.run(&["config", "--get", "http.extraheader"]).ok()
    }

    #[test]
    fn the_token_is_in_a_private_file_the_clone_includes_never_in_its_own_configuration() {
        let root = tempfile::tempdir().unwrap();
        let clone = root.path().join("acme/widgets");
        std::fs::create_dir_all(&clone).unwrap();
        bugloop_testkit::git(&clone, &["init", "-q"]);
        // What an earlier bugloop left in the clone's own configuration goes.
        bugloop_testkit::git(
            &clone,
            &["config", "http.extraheader", "AUTHORIZATION: old"],
        );
        let token_file = root.path().join(".tokens/acme/widgets.gitconfig");
        for token in ["ghs_first", "ghs_second"] {
            set_git_token(&clone, &token_file, token).unwrap();
            assert_eq!(header(&clone), Some(auth_header(token)));
        }
        let own = std::fs::read_to_string(clone.join(".git/config")).unwrap();
        assert!(
            !own.contains("AUTHORIZATION") && !own.contains("extraheader"),
            "{own}"
        );
        assert_eq!(own.matches("path = ").count(), 1, "included once: {own}");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&token_file), 0o600);
        assert_eq!(mode(token_file.parent().unwrap()), 0o700);
        // A renewal rewrites the file only.
        write_token(&token_file, "ghs_third").unwrap();
        assert_eq!(header(&clone), Some(auth_header("ghs_third")));
        // Gone with the job: git passes over the missing file.
        std::fs::remove_file(&token_file).unwrap();
        assert_eq!(header(&clone), None);
        let status = bugloop_git::Git::open(&clone)
            .unwrap()
            .run(&["status", "--short"]);
        assert!(status.is_ok(), "{status:?}");
    }
}
