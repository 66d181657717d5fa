//! Runs stopped where a kill would stop them: a forge whose chosen write never ends, and a job
//! dropped once it waits there.

use std::sync::Arc;

use bugloop_forge::local::LocalForge;
use bugloop_forge::{Forge, ForgeError, ForgeLayer, Write, Written};
use bugloop_git::Git;
use bugloop_llm::{BudgetLimits, Provider};
use bugloop_loops::LoopEnv;
use tokio::sync::Notify;

use super::{Repo, config, with_env_on};

/// The local forge of a repository, except that the first write `stops_at` picks never ends.
#[derive(Debug)]
pub struct StallingForge {
    pub inner: LocalForge,
    stops_at: fn(&Write<'_>) -> bool,
    pub stalled: Notify,
}

impl StallingForge {
    pub async fn new(repo: &Repo, stops_at: fn(&Write<'_>) -> bool) -> StallingForge {
        let git = Git::open(repo.path()).unwrap();
        StallingForge {
            inner: LocalForge::open(git, "bugloop").await.unwrap(),
            stops_at,
            stalled: Notify::new(),
        }
    }
}

#[async_trait::async_trait]
impl ForgeLayer for StallingForge {
    fn inner(&self) -> &dyn Forge {
        &self.inner
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        if (self.stops_at)(&write) {
            self.stalled.notify_one();
            std::future::pending::<()>().await;
        }
        self.inner.write(write).await
    }
}

/// Runs `work` over `forge` and `model` (the test configuration) until `stalled` is notified,
/// then drops it there, as a kill would stop it; a job that ends before is a failed test.
pub async fn stop_when<T: std::fmt::Debug>(
    repo: &Repo,
    forge: &dyn Forge,
    model: Arc<dyn Provider>,
    stalled: &Notify,
    work: impl AsyncFnOnce(&LoopEnv<'_>) -> T,
) {
    let git = Git::open(repo.path()).unwrap();
    with_env_on(
        forge,
        &git,
        config(),
        BudgetLimits::default(),
        model,
        async |env| {
            tokio::select! {
                done = work(env) => panic!("it finished: {done:?}"),
                () = stalled.notified() => {}
            }
        },
    )
    .await;
}
