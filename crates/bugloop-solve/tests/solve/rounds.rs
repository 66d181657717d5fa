//! A review round resolves only the threads whose code its commit changed: an agent asked to
//! address two threads that changes one file leaves the other thread open, told why, and the
//! issue goes on (here: escalated at the round limit) with it open.

use std::sync::Arc;

use bugloop_domain::solve::SolveState;
use bugloop_forge::Forge;
use bugloop_forge::tracker::Tracker;
use bugloop_llm::scripted::{text_reply, tool_reply};

use super::{SOLVED, config, drafted_script, run_solve, scenario, write};
use crate::support::{local_forge, push_session, usage};

#[tokio::test]
async fn a_round_resolves_only_the_threads_whose_code_it_changed() {
    let (repo, issue) = scenario().await;
    let model = drafted_script();
    // Round 1: asked about both threads, it changes app/models.py only.
    model.push(tool_reply(
        &[write(
            "app/models.py",
            &SOLVED.replace("items[-1]\n", "items[-1] if items else None\n"),
        )],
        usage(),
    ));
    model.push(text_reply("Both threads addressed.", usage()));
    push_session(&model, vec![], vec![]);
    let mut config = config(10);
    config.solve.max_review_iterations = 1;
    let report = run_solve(&repo, config, Arc::new(model), None, issue)
        .await
        .unwrap();
    assert_eq!(report.rounds.len(), 1, "{}", report.to_text());
    assert_eq!(
        report.state,
        Some(SolveState::Escalated),
        "{}",
        report.to_text()
    );

    let forge = local_forge(repo.path()).await;
    let request = forge
        .change_request(report.change_request.unwrap())
        .await
        .unwrap();
    let comments = forge.comments(&request.conversation).await.unwrap();
    let root = |path: &str| {
        comments
            .iter()
            .find(|c| c.by_bugloop && c.in_reply_to.is_none() && c.path.as_deref() == Some(path))
            .unwrap_or_else(|| panic!("{comments:#?}"))
    };
    let replies = |path: &str| -> Vec<&str> {
        let id = &root(path).id;
        comments
            .iter()
            .filter(|c| c.by_bugloop && c.in_reply_to.as_deref() == Some(id.as_str()))
            .map(|c| c.body.as_str())
            .collect()
    };
    let fixed = replies("app/models.py");
    assert!(
        fixed.iter().any(|b| b.contains("Addressed in")),
        "{fixed:#?}"
    );
    let kept = replies("tests/test_models.py");
    assert_eq!(kept.len(), 1, "{kept:#?}");
    assert!(
        kept[0].contains("This thread stays open: the fix did not change the code it quotes in tests/test_models.py"),
        "{}",
        kept[0]
    );
    let state = bugloop_domain::thread::reconstruct(
        &comments,
        &bugloop_domain::marker::MarkerSyntax::default(),
    );
    let status = |path: &str| {
        state
            .threads
            .iter()
            .find(|t| t.file.as_deref() == Some(path))
            .map(|t| t.status)
            .unwrap()
    };
    assert_eq!(
        status("app/models.py"),
        bugloop_domain::status::ThreadStatus::Resolved
    );
    assert_eq!(
        status("tests/test_models.py"),
        bugloop_domain::status::ThreadStatus::Pending
    );
}
