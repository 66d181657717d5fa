//! What every loop works with, in one value: the forge, the repository, the resolved settings,
//! the metered model, where transcripts go and who watches progress. The review, act, build and
//! converge loops all take a [`LoopEnv`]; a loop that needs another model for a part of its work
//! (a converge auditor) derives one with [`LoopEnv::with_provider`].

use std::path::PathBuf;
use std::sync::Arc;

use bugloop_config::Config;
use bugloop_forge::Forge;
use bugloop_git::Git;
use bugloop_llm::Provider;
use bugloop_llm::budget::Meter;

use crate::Progress;
use crate::settings::LoopSettings;

#[derive(Clone)]
pub struct LoopEnv<'a> {
    pub forge: &'a dyn Forge,
    /// The repository the job is about (worktrees and task trees are made from it).
    pub git: &'a Git,
    pub settings: &'a LoopSettings,
    /// Metered by `meter`.
    pub provider: Arc<dyn Provider>,
    pub meter: Arc<Meter>,
    pub runs_dir: PathBuf,
    pub progress: Arc<dyn Progress>,
    /// Where changes bugloop makes start and land.
    pub work: WorkTarget,
}

impl<'a> LoopEnv<'a> {
    pub fn config(&self) -> &'a Config {
        &self.settings.config
    }

    /// The same environment with another model (spending from the same meter when `provider`
    /// is metered by it).
    pub fn with_provider(&self, provider: Arc<dyn Provider>) -> LoopEnv<'a> {
        LoopEnv {
            provider,
            ..self.clone()
        }
    }

    /// The same environment with other settings (an audit lifts the comment limit).
    pub fn with_settings<'b>(&self, settings: &'b LoopSettings) -> LoopEnv<'b>
    where
        'a: 'b,
    {
        LoopEnv {
            settings,
            ..self.clone()
        }
    }
}

impl std::fmt::Debug for LoopEnv<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopEnv")
            .field("forge", &self.forge.name())
            .field("provider", &self.provider.name())
            .finish_non_exhaustive()
    }
}

impl LoopEnv<'_> {
    /// The conversation of `change` and the review state rebuilt from it.
    pub async fn conversation(
        &self,
        change: &bugloop_forge::ChangeKey,
    ) -> Result<
        (
            Vec<bugloop_domain::thread::Comment>,
            bugloop_domain::thread::ReviewState,
        ),
        bugloop_forge::ForgeError,
    > {
        let comments = self.forge.comments(change).await?;
        let state = bugloop_domain::thread::reconstruct(&comments, &self.settings.markers);
        Ok((comments, state))
    }
}

/// Where a change bugloop makes starts and lands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WorkTarget {
    /// The user's checked-out branch: the work starts from HEAD (a dirty tree is refused) and
    /// lands by fast-forward when the branch has not moved.
    #[default]
    LocalBranch,
    /// A pull request's branch on a remote: the work starts from the head pinned when the job
    /// started (the clone's own checkout is not used) and lands as one pushed commit,
    /// fast-forward only, never forced.
    PullRequest {
        change: bugloop_git::ChangeKey,
        number: u64,
        head: String,
        remote: String,
        branch: String,
    },
}

impl WorkTarget {
    /// The conventional-commit scope of bugloop's commits: `(#12)` on a pull request.
    pub fn commit_scope(&self) -> String {
        match self {
            WorkTarget::LocalBranch => String::new(),
            WorkTarget::PullRequest { number, .. } => format!("(#{number})"),
        }
    }
}
