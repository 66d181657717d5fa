//! A READY draft is ready only while the gate would still pass: a reviewer's request for changes
//! or a failing check on its head after the gate passed sends it back to REVIEWING, where the
//! gate decides again (waiting for the reviewer; escalating on the check).

use std::sync::Arc;

use bugloop_domain::solve::SolveState;
use bugloop_llm::scripted::ScriptedProvider;
use bugloop_report::solve::SolveReport;
use bugloop_store::{CheckState, ReviewDecision};
use bugloop_testkit::TestRepo;

use super::{config, ends_in, happy_script, run_solve, scenario};
use crate::support::{git, local_forge};

/// The issue solved to READY: the repository, the issue, the draft's number and its head.
async fn ready() -> (TestRepo, u64, u64, String) {
    let (repo, issue) = scenario().await;
    let report = ends_in(
        &repo,
        config(10),
        Arc::new(happy_script()),
        issue,
        SolveState::Ready,
    )
    .await;
    let head = git(repo.path(), &["rev-parse", &report.branch.clone().unwrap()]);
    (repo, issue, report.change_request.unwrap(), head)
}

/// Runs solve again with a model that must not be asked.
async fn again(repo: &TestRepo, issue: u64) -> SolveReport {
    let model = Arc::new(ScriptedProvider::new([]));
    run_solve(repo, config(10), model, None, issue)
        .await
        .unwrap()
}

fn steps(report: &SolveReport) -> String {
    report.history_text()
}

#[tokio::test]
async fn a_request_for_changes_after_ready_makes_the_gate_wait_for_the_reviewer() {
    let (repo, issue, draft, head) = ready().await;
    let forge = local_forge(repo.path()).await;
    forge
        .store()
        .add_review(
            i64::try_from(draft).unwrap(),
            "alice",
            ReviewDecision::ChangesRequested,
            "not like this",
            &head,
        )
        .await
        .unwrap();
    let report = again(&repo, issue).await;
    assert_eq!(
        report.state,
        Some(SolveState::Reviewing),
        "{}",
        steps(&report)
    );
    assert!(
        steps(&report).contains("was ready, but since then a reviewer requested changes"),
        "{}",
        steps(&report)
    );
    assert!(
        report
            .message
            .contains("waiting for a reviewer who requested changes"),
        "{}",
        report.message
    );
    // Asked again, it still waits, and records nothing new.
    let waited = again(&repo, issue).await;
    assert_eq!(waited.state, Some(SolveState::Reviewing));
    assert_eq!(waited.history.len(), report.history.len());
}

#[tokio::test]
async fn a_check_that_fails_on_a_ready_draft_escalates_it() {
    let (repo, issue, _, head) = ready().await;
    let forge = local_forge(repo.path()).await;
    forge
        .store()
        .set_check(&head, "ci", CheckState::Failed, "2 tests failed")
        .await
        .unwrap();
    let report = again(&repo, issue).await;
    assert_eq!(
        report.state,
        Some(SolveState::Escalated),
        "{}",
        steps(&report)
    );
    let text = steps(&report);
    assert!(text.contains("the check ci failed"), "{text}");
}
