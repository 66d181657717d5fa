//! When the App cannot finish alone: an issue the solver cannot solve is escalated on GitHub, and
//! an external reviewer's threads are addressed and its review awaited.

use super::*;
use bugloop_testkit::labels::assert_solve_ended;

/// A repository whose solver works as `bugsolver-bot` (who may write), `solve` added to the base
/// configuration's `solve:` and `agents` to its `agents:`; alice's crash issue labelled for
/// solving.
async fn with_solver_account(solve: &str, agents: &str) -> (Setup, u64) {
    let setup = setup_with(&format!(
        "{CONFIG}{solve}agents:\n  bugsolver:\n    assignee: bugsolver-bot\n{agents}"
    ))
    .await;
    let sim = &setup.fixture.sim;
    sim.set_permission("bugsolver-bot", "write");
    let issue = crash_issue(sim);
    (setup, issue)
}

/// A solver that never passes on GitHub: escalated after `solve.max_iterations`, the issue
/// labelled for a person with a comment listing the attempts, nothing pushed, no draft.
#[tokio::test]
async fn an_issue_the_solver_cannot_solve_is_escalated_on_github() {
    let (mut setup, issue) = with_solver_account("  max_iterations: 2\n", "").await;
    let sim = &setup.fixture.sim;
    let dir = tempfile::tempdir().unwrap();
    let tries: Vec<Value> = (1..=2)
        .flat_map(|n| {
            [
                json!({"tool_calls": [write("app/models.py", &format!("def last(items):\n    return items[len(items) - {n}0]\n"))]}),
                json!({"text": format!("try {n}")}),
            ]
        })
        .collect();
    setup.settings.model = Some(script_file(dir.path(), &tries));
    first_solving(&setup.queue, &setup.settings, sim, issue).await;
    let said = said(sim, issue);
    assert_eq!(said.len(), 2, "the record and the escalation: {said:#?}");
    let escalation = said
        .iter()
        .find(|b| b.starts_with("bugloop could not finish"))
        .unwrap();
    for n in 1..=2 {
        assert!(
            escalation.contains(&format!("- attempt {n}: `grep -qF")),
            "{escalation}"
        );
    }
    assert!(
        said.iter()
            .any(|b| b.contains("### bugloop solve: ESCALATED"))
    );
    assert_solve_ended(&sim.issue_labels(issue), true);
    assert_eq!(sim.pulls().len(), 1, "no draft");
    assert_eq!(
        git(setup.fixture.origin(), &["branch", "--list", "bugloop/*"]),
        "",
        "nothing pushed"
    );
    // Assigned to the solver's account when taken, unassigned when handed to a person.
    let assignments: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with(&format!("/issues/{issue}/assignees")))
        .map(|r| format!("{} {}", r.method, r.status))
        .collect();
    assert_eq!(assignments, ["POST 201", "DELETE 201"]);
    assert!(sim.assignees(issue).is_empty());
}

/// The seed's `agents.reviewer.external`: bugloop does not review its draft; each head waits
/// for the external reviewer (an App's bot, not a collaborator), whose thread a round addresses
/// and resolves; a stranger's review is not the one awaited; the reviewer's approval of the new
/// head lets the gate mark the draft ready. The issue is assigned to the solver's account.
#[tokio::test]
async fn an_external_reviewers_threads_are_addressed_and_its_review_awaited() {
    const RABBIT: &str = "coderabbitai[bot]";
    let (mut setup, issue) = with_solver_account(
        "",
        &format!("  reviewer:\n    external: true\n    logins: [\"{RABBIT}\"]\n"),
    )
    .await;
    let sim = &setup.fixture.sim;
    let dir = first_solution(&setup.queue, &mut setup.settings, sim, issue).await;
    assert_eq!(sim.assignees(issue), ["bugsolver-bot"]);
    let (number, _, branch, draft, ..) = the_draft(sim);
    assert!(draft, "waits as a draft");
    assert!(
        sim.review_comments(number).is_empty(),
        "bugloop did not review it"
    );
    assert_recorded(sim, issue, "REVIEWING");
    // The wait is looked at again when it ends (120 minutes), once however many runs see it.
    let wake = jobs_where(&setup.queue, |j| j.id.contains(":wake:")).await;
    assert_eq!(wake.len(), 1, "{wake:#?}");
    let in_two_hours = bugloop_queue::now_ms() + 119 * 60_000;
    assert!(wake[0].run_after > in_two_hours, "{wake:#?}");

    // A stranger's review is not the external reviewer's: still waiting, nothing asked.
    sim.add_review(number, "mallory", "APPROVED");
    setup.settings.model = Some(script_file(dir.path(), &[]));
    let resume = resume(issue);
    run_done(&setup.queue, &setup.settings, "delivery-2", &resume).await;
    assert!(sim.is_draft(number) == Some(true));

    // The external reviewer reviews the head with a thread: a round addresses it.
    let thread = sim.review_comment_as(
        number,
        RABBIT,
        "app/models.py",
        2,
        "An empty list still raises IndexError.",
    );
    sim.submit_review(number, RABBIT, "COMMENTED", "Actionable comments posted: 1");
    setup.settings.model = Some(script_file(
        dir.path(),
        &[
            json!({"tool_calls": [write("app/models.py", "def last(items):\n    return items[-1] if items else None\n")]}),
            json!({"text": "Guarded the empty list."}),
        ],
    ));
    run_done(&setup.queue, &setup.settings, "delivery-3", &resume).await;
    let answers = replies_to(sim, number, thread);
    assert_eq!(answers.len(), 1, "{answers:#?}");
    assert!(sim.threads(number).iter().all(|t| t.resolved));
    assert!(
        git(
            setup.fixture.origin(),
            &["show", &format!("{branch}:app/models.py")]
        )
        .contains("if items else None")
    );
    assert_eq!(
        sim.is_draft(number),
        Some(true),
        "the new head waits for its review"
    );

    // The reviewer asks for changes on the new head without a thread: theirs to change.
    sim.add_review(number, RABBIT, "CHANGES_REQUESTED");
    setup.settings.model = Some(script_file(dir.path(), &[]));
    run_done(&setup.queue, &setup.settings, "delivery-3b", &resume).await;
    assert_eq!(sim.is_draft(number), Some(true), "{}", record(sim, issue));

    // The reviewer approves the new head: the gate passes.
    sim.add_review(number, RABBIT, "APPROVED");
    setup.settings.model = Some(script_file(dir.path(), &[]));
    run_done(&setup.queue, &setup.settings, "delivery-4", &resume).await;
    assert_eq!(sim.is_draft(number), Some(false), "{}", record(sim, issue));
    assert_recorded(sim, issue, "READY");
    assert_eq!(sim.assignees(issue), ["bugsolver-bot"]);
}
