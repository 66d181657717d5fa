//! Reading the conversation: the findings tracked for a change and one finding's thread; and the
//! local store's own housekeeping, which works without opening the store (a damaged store must
//! still be movable aside).

use std::path::{Path, PathBuf};

use bugloop_domain::thread::{Comment, ThreadState, ThreadStatus, find_thread, reconstruct};
use bugloop_forge::ChangeKey;
use bugloop_forge::local::store_path;
use bugloop_git::Git;

use crate::{App, AppError};

/// A finding with the comments of its thread, oldest first.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FindingThread {
    pub finding: ThreadState,
    pub comments: Vec<Comment>,
}

/// What to do with the local store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreAction {
    /// Say where it is.
    Path,
    /// Move it aside (kept for recovery) so the next command starts an empty one.
    Reset,
}

/// What a store action did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreResult {
    Location(PathBuf),
    NothingToReset(PathBuf),
    MovedAside { from: PathBuf, to: PathBuf },
}

/// Escalated first (they wait on a person), then pending, disputed, resolved.
fn status_order(status: ThreadStatus) -> u8 {
    match status {
        ThreadStatus::Escalated => 0,
        ThreadStatus::Pending => 1,
        ThreadStatus::Disputed => 2,
        ThreadStatus::Resolved => 3,
    }
}

impl App {
    /// The conversation key of `change`, or the checked-out branch's.
    pub fn change_key(&self, change: Option<&str>) -> ChangeKey {
        change.map_or_else(|| self.git.conversation_key(), |c| ChangeKey(c.to_owned()))
    }

    /// Every finding tracked in a conversation: status order, then highest score, then oldest.
    pub async fn findings(&self, change: &ChangeKey) -> Result<Vec<ThreadState>, AppError> {
        let (_, threads) = self.threads(change).await?;
        Ok(threads)
    }

    /// The local conversations of branches that no longer exist (a branch renamed or deleted
    /// leaves its conversation under its old name), most recent first: what to point a user at
    /// who finds none for the branch they are on.
    pub async fn orphaned_conversations(&self) -> Result<Vec<String>, AppError> {
        let Some(local) = self.local.as_deref() else {
            return Ok(Vec::new());
        };
        let changes = local
            .store()
            .changes()
            .await
            .map_err(bugloop_forge::ForgeError::from)?;
        Ok(changes
            .into_iter()
            .filter(|summary| {
                summary
                    .change
                    .strip_prefix("branch:")
                    .is_some_and(|branch| {
                        self.git.resolve(&format!("refs/heads/{branch}")).is_none()
                    })
            })
            .map(|summary| summary.change)
            .collect())
    }

    /// One finding (by id or unique prefix) and its thread's comments.
    pub async fn finding(&self, change: &ChangeKey, id: &str) -> Result<FindingThread, AppError> {
        let (comments, threads) = self.threads(change).await?;
        let thread = find_thread(&threads, id)?.clone();
        let members = comments
            .into_iter()
            .filter(|c| c.thread_id.is_some() && c.thread_id == thread.forge_thread_id)
            .collect();
        Ok(FindingThread {
            finding: thread,
            comments: members,
        })
    }

    async fn threads(
        &self,
        change: &ChangeKey,
    ) -> Result<(Vec<Comment>, Vec<ThreadState>), AppError> {
        let comments = self.forge.comments(change).await?;
        let state = reconstruct(&comments, &self.settings.markers);
        let mut threads: Vec<ThreadState> = state
            .threads
            .into_iter()
            .filter(|t| t.finding_id.is_some())
            .collect();
        threads.sort_by_key(|t| {
            (
                status_order(t.status),
                std::cmp::Reverse(t.score),
                t.status_at,
            )
        });
        Ok((comments, threads))
    }
}

/// Runs a store action for the repository containing `directory`, without opening the store or
/// reading the configuration.
pub fn store_action(directory: &Path, action: StoreAction) -> Result<StoreResult, AppError> {
    let git = Git::open(directory)?;
    let path = store_path(&git)?;
    match action {
        StoreAction::Path => Ok(StoreResult::Location(path)),
        StoreAction::Reset if !path.exists() => Ok(StoreResult::NothingToReset(path)),
        StoreAction::Reset => {
            let moved = bugloop_store::Store::quarantine(&path)?;
            Ok(StoreResult::MovedAside {
                from: path,
                to: moved,
            })
        }
    }
}
