//! Disputes: a developer's reply weighed (concede, maintain, escalate, accepted), and the next
//! review answering replies left pending.

use super::*;

/// A model that weighs one reply: it decides `decision` for `reasoning`.
fn deciding(decision: &str, reasoning: &str) -> ScriptedProvider {
    ScriptedProvider::new([text_reply(
        json!({"decision": decision, "reasoning": reasoning}).to_string(),
        usage(),
    )])
    .with_capabilities(Capabilities {
        tools: true,
        json_schema: true,
        streaming: false,
        context_tokens: None,
        cache_at_breakpoints: false,
    })
}

/// The developer's reply to a finding, then the decision the model takes on it and its reasoning.
type Exchange<'a> = [&'a str; 3];

/// The developer disputes the finding, and the model maintains it.
const INSISTED: Exchange = [
    "it is fine",
    "maintain",
    "p = 1.0 is a valid input and panics.",
];

/// The developer explains why it is not a bug, and the model concedes.
const CONCEDED: Exchange = [
    "p is validated to be below 1.0 by every caller",
    "concede",
    "Callers validate p < 1.0.",
];

/// The developer defers the fix, and the model escalates to a human.
const ESCALATED: Exchange = [
    "we will fix it next quarter",
    "escalate",
    "Until then reports crash in production.",
];

/// The developer replies in the thread of finding `id` and the model weighs the reply.
async fn dispute(repo: &Repo, id: &str, exchange: Exchange<'_>) -> DisputeOutcome {
    let [reply, decision, reasoning] = exchange;
    with_env(
        repo,
        support::config(),
        deciding(decision, reasoning),
        async |env| {
            reply_in_thread(env, id, reply).await;
            let change = env.git.conversation_key();
            bugloop_loops::disputes::settle_dispute(env, &change, &FindingId::new(id))
                .await
                .unwrap()
        },
    )
    .await
}

/// A finding of a fresh review, then the developer's reply in its thread weighed: the
/// repository, the finding's id and what the weighing decided.
async fn freshly_disputed(exchange: Exchange<'_>) -> (Repo, String, DisputeOutcome) {
    let (repo, id) = reviewed().await;
    let outcome = dispute(&repo, &id, exchange).await;
    (repo, id, outcome)
}

/// The statuses of the threads tracked after a review that finds nothing new.
async fn tracked_after_a_quiet_review(repo: &Repo) -> Vec<ThreadStatus> {
    let (report, _) = run(repo, support::config(), session(vec![], vec![])).await;
    report.tracked.iter().map(|t| t.status).collect()
}

#[tokio::test]
async fn disputes_concede_maintain_or_escalate() {
    // Concede: resolved, and the same finding reported again is not raised.
    let (repo, _, outcome) = freshly_disputed(CONCEDED).await;
    assert_eq!(outcome.status, ThreadStatus::Resolved);
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    let again = session(vec![off_by_one(line)], vec![]);
    let (report, _) = support::review_branch(&repo, support::config(), Arc::new(again), true).await;
    assert!(report.findings.is_empty(), "{:#?}", report.findings);
    assert!(
        report.dropped.iter().any(|d| d.reason.contains("resolved")),
        "{:#?}",
        report.dropped
    );

    // Maintain: disputed; the developer insists and there is no human reviewer: they prevail.
    let (repo, id, outcome) = freshly_disputed(INSISTED).await;
    assert_eq!(outcome.status, ThreadStatus::Disputed);
    assert_eq!(
        tracked_after_a_quiet_review(&repo).await[0],
        ThreadStatus::Disputed
    );
    // The reply is weighed first: it still disputes, so the developer's decision stands.
    let outcome = dispute(
        &repo,
        &id,
        ["I still disagree", "maintain", "It still panics."],
    )
    .await;
    assert_eq!(outcome.status, ThreadStatus::Resolved);
    assert!(outcome.decision.is_none());

    // A reply after a dispute that accepts the finding ("you're right, I'll fix it") leaves it
    // open: pending again, not resolved by a decision the developer did not take.
    let (repo, id, _) = freshly_disputed(INSISTED).await;
    let outcome = dispute(
        &repo,
        &id,
        [
            "You are right, good catch. I will fix it tomorrow.",
            "accepted",
            "Thanks; it stays open until the fix lands.",
        ],
    )
    .await;
    assert_eq!(outcome.status, ThreadStatus::Pending);
    assert_eq!(outcome.decision, Some(Decision::Accepted));
    assert_eq!(
        tracked_after_a_quiet_review(&repo).await[0],
        ThreadStatus::Pending
    );

    // Escalate: a human must decide.
    let (_, _, outcome) = freshly_disputed(ESCALATED).await;
    assert_eq!(outcome.status, ThreadStatus::Escalated);
}

#[tokio::test]
async fn the_next_review_answers_pending_replies() {
    let (repo, id) = reviewed().await;
    with_env(
        &repo,
        support::config(),
        ScriptedProvider::new([]),
        async |env| reply_in_thread(env, &id, "the caller clamps p").await,
    )
    .await;
    // The review's model first weighs the reply, then reviews.
    let scripted = ScriptedProvider::new([text_reply(
        json!({"decision": "concede", "reasoning": "The caller clamps p."}).to_string(),
        usage(),
    )]);
    for reply in (0..4).map(|pass| {
        tool_reply(
            &[(
                "submit_pass_results",
                json!({"pass_number": pass + 1, "summary": "ok"}),
            )],
            usage(),
        )
    }) {
        scripted.push(reply);
    }
    let (report, _) = run(&repo, support::config(), scripted).await;
    assert_eq!(report.disputes.len(), 1, "{:#?}", report.errors);
    assert_eq!(report.disputes[0].decision, DisputeResult::Conceded);
    assert_eq!(report.tracked[0].status, ThreadStatus::Resolved);
}
