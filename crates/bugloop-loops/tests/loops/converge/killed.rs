//! Converge runs stopped at the worst moments (their future dropped where a kill would stop
//! them): after a loop's fix was committed, and after the commits landed but before the
//! description was written. The next run goes on from where the first one got to.

use std::sync::Arc;

use bugloop_forge::local::LocalForge;
use bugloop_forge::{Forge, Write};
use bugloop_git::Git;
use bugloop_llm::scripted::ScriptedProvider;
use bugloop_loops::converge::converge;
use bugloop_report::converge::Exit;
use tokio::sync::Notify;

use super::{Held, Hold, audit, converging_after_one_fix, found_and_clamped, no_models, run};
use crate::support::{self, Repo, StallingForge, git, stop_when};

/// Converge on the checked-out branch, as `bugloop converge` runs it.
async fn converging(
    env: &bugloop_loops::LoopEnv<'_>,
) -> Result<bugloop_report::converge::ConvergeReport, bugloop_loops::act::ActError> {
    converge(env, &env.git.conversation_key(), None, &no_models).await
}

/// Stopped while auditing after its fix was committed, a run leaves the user's branch as it was;
/// the next run on that HEAD goes on from the fix (the model is not asked to fix again), and its
/// report says so.
#[tokio::test]
async fn a_run_stopped_after_a_verified_fix_is_gone_on_from_there() {
    let repo = Repo::with_feature();
    let start = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = Arc::new(found_and_clamped(&repo));
    let model = Arc::new(Held::new(
        script.clone(),
        Hold::After {
            answers: script.remaining(),
            stalled: Notify::new(),
        },
    ));
    let Hold::After { stalled, .. } = &model.hold else {
        unreachable!()
    };
    let forge = LocalForge::open(Git::open(repo.path()).unwrap(), "bugloop")
        .await
        .unwrap();
    stop_when(&repo, &forge, model.clone(), stalled, converging).await;
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), start);
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");

    let script = ScriptedProvider::new([]);
    audit(&script, vec![]);
    let (report, script) = run(&repo, support::config(), script).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    assert!(
        script
            .requests()
            .iter()
            .all(|r| !r.tools.iter().any(|t| t.name == "edit_file")),
        "only audited: no fix was asked for again"
    );
    assert_eq!(report.start_commit, start);
    assert_eq!(
        git(repo.path(), &["rev-parse", "HEAD"]),
        report.final_commit
    );
    assert!(repo.read("src/stats.rs").contains("index.min("));
    assert!(
        report.detail.starts_with("Went on from "),
        "{}",
        report.detail
    );
    // Once landed, there is nothing left to go on from.
    let (again, script) = run(&repo, support::config(), ScriptedProvider::new([])).await;
    assert_eq!(again.loops, 0);
    assert!(script.requests().is_empty());
}

/// Stopped after its commits landed but before the description was written, a run leaves the
/// description to the next, which writes it from the first run's report and asks no model.
#[tokio::test]
async fn a_run_stopped_after_landing_leaves_its_description_to_the_next() {
    let repo = Repo::with_feature();
    let start = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = converging_after_one_fix(&repo);
    let forge =
        StallingForge::new(&repo, |write| matches!(write, Write::SetDescription { .. })).await;
    stop_when(&repo, &forge, Arc::new(script), &forge.stalled, converging).await;
    let landed = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_ne!(landed, start, "the commits landed");
    let key = Git::open(repo.path()).unwrap().conversation_key();
    assert!(forge.inner.description(&key).await.unwrap().is_none());

    let (report, script) = run(&repo, support::config(), ScriptedProvider::new([])).await;
    assert!(script.requests().is_empty(), "no model call");
    assert_eq!((report.loops, report.exit), (3, Exit::Converged));
    assert_eq!(report.start_commit, start);
    let section = report.description.expect("the description is written");
    assert!(section.contains("after 3 loops"), "{section}");
    let written = forge.inner.description(&key).await.unwrap().unwrap();
    assert!(written.contains(&section), "{written}");
    // Written once: the run after that has nothing to do.
    let (again, _) = run(&repo, support::config(), ScriptedProvider::new([])).await;
    assert!(again.description.is_none() && again.loops == 0);
}
