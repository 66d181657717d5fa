//! Detection on a pull request: findings as review comments on their lines, one summary, and
//! nothing new when the same push is reviewed again.

use std::collections::BTreeMap;

use bugloop_app::EventOutcome;
use bugloop_github_sim::Fault;

use crate::support::{BOT, World, off_by_one};

#[tokio::test]
async fn a_review_publishes_each_finding_once_and_a_rerun_adds_nothing() {
    let world = World::new().await;
    let outcome = world.review(&[off_by_one()]).await;
    let EventOutcome::Review {
        outcome,
        pull_request,
    } = outcome
    else {
        panic!("not a review: {outcome:?}");
    };
    assert_eq!(pull_request.head_sha, world.head);
    let report = outcome.report.unwrap();
    assert_eq!(report.findings.len(), 1, "{report:#?}");
    let findings = world.finding_comments();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].line, Some(6));
    assert_eq!(findings[0].commit_id, world.head);
    assert!(findings[0].body.contains("Index one past the end"));
    // Signed: the state key's signature closes every body bugloop writes.
    assert!(findings[0].body.contains("<!-- bugloop:sig v1 "));
    let summaries = world.bot_issue_comments();
    assert_eq!(summaries.len(), 1, "{summaries:#?}");

    world.sim.clear_requests();
    world.review(&[off_by_one()]).await;
    assert_eq!(world.finding_comments().len(), 1);
    assert_eq!(world.bot_issue_comments().len(), 1);
    let writes: Vec<_> = world
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.method != "GET" && r.operation.as_deref() != Some("ReviewThreads"))
        .collect();
    assert!(
        writes.is_empty(),
        "a re-run of the same push wrote: {writes:#?}"
    );
    let _ = BOT;
}

/// bugloop's findings on the pull request by finding id: (line comments, conversation
/// comments) holding each one's marker.
fn published(world: &World) -> BTreeMap<String, (usize, usize)> {
    let mut by_id: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let id_of = |body: &str| {
        body.split("finding_id:\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .map(str::to_owned)
    };
    for comment in world.finding_comments() {
        if let Some(id) = id_of(&comment.body) {
            by_id.entry(id).or_default().0 += 1;
        }
    }
    for comment in world.bot_issue_comments() {
        if comment.body.starts_with("<!-- bugloop:summary") {
            continue;
        }
        if let Some(id) = id_of(&comment.body) {
            by_id.entry(id).or_default().1 += 1;
        }
    }
    by_id
}

/// After the fault's run and one more, every finding is on the pull request exactly once.
async fn survives(fault: Fault) -> World {
    let world = World::new().await;
    world.sim.inject(fault);
    let first = crate::support::run(world.job(
        world.review_trigger(),
        crate::support::review_script(world.scripts.path(), &[off_by_one()]),
    ))
    .await;
    let _ = first;
    world.review(&[off_by_one()]).await;
    let published = published(&world);
    assert_eq!(published.len(), 1, "{published:#?}");
    let (lines, conversation) = published.values().next().copied().unwrap();
    assert_eq!(lines + conversation, 1, "{published:#?}");
    assert_eq!(
        world
            .bot_issue_comments()
            .iter()
            .filter(|c| c.body.starts_with("<!-- bugloop:summary"))
            .count(),
        1
    );
    world
}

#[tokio::test]
async fn a_502_after_the_line_comment_was_written_leaves_one() {
    survives(Fault::FailAfterWrite {
        method: "POST".to_owned(),
        path_contains: "/pulls/7/comments".to_owned(),
        status: 502,
    })
    .await;
}

#[tokio::test]
async fn a_502_after_the_summary_was_written_leaves_one() {
    survives(Fault::FailAfterWrite {
        method: "POST".to_owned(),
        path_contains: "/issues/7/comments".to_owned(),
        status: 502,
    })
    .await;
}

#[tokio::test]
async fn a_502_after_a_write_the_listing_does_not_show_yet_leaves_one() {
    let world = World::new().await;
    world.sim.inject(Fault::ListingLag {
        writes: 1,
        listings: 2,
    });
    survives_on(
        world,
        Fault::FailAfterWrite {
            method: "POST".to_owned(),
            path_contains: "/pulls/7/comments".to_owned(),
            status: 502,
        },
    )
    .await;
}

async fn survives_on(world: World, fault: Fault) {
    world.sim.inject(fault);
    let _ = crate::support::run(world.job(
        world.review_trigger(),
        crate::support::review_script(world.scripts.path(), &[off_by_one()]),
    ))
    .await;
    world.review(&[off_by_one()]).await;
    let published = published(&world);
    let total: usize = published.values().map(|(l, c)| l + c).sum();
    assert_eq!((published.len(), total), (1, 1), "{published:#?}");
}

#[tokio::test]
async fn a_secondary_rate_limit_is_waited_out() {
    survives(Fault::SecondaryRateLimit {
        method: "POST".to_owned(),
        path_contains: "/comments".to_owned(),
        retry_after_secs: 1,
    })
    .await;
}

#[tokio::test]
async fn a_refused_line_falls_back_to_the_file() {
    let world = survives(Fault::RefuseAnchor {
        path: "lib.rs".to_owned(),
        line: 6,
    })
    .await;
    let comments = world.finding_comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].line, None, "a file comment");
}

#[tokio::test]
async fn a_finding_github_will_not_anchor_at_all_goes_to_the_conversation() {
    let world = World::new().await;
    for _ in 0..4 {
        world.sim.inject(Fault::Fail {
            method: "POST".to_owned(),
            path_contains: "/pulls/7/comments".to_owned(),
            status: 422,
        });
    }
    world.review(&[off_by_one()]).await;
    let published = published(&world);
    assert_eq!(
        published.values().copied().collect::<Vec<_>>(),
        [(0, 1)],
        "{published:#?}"
    );
}

#[tokio::test]
async fn a_push_during_the_review_publishes_nothing_and_the_next_run_reviews_the_new_head() {
    let world = World::new().await;
    let pushed = world.push("notes.txt", "more\n");
    // Read once when the run opens the pull request; the next read (before publishing) sees
    // the push.
    world.sim.inject(Fault::MoveHead {
        number: 7,
        after_pull_reads: 1,
        sha: pushed.clone(),
    });
    world.review(&[off_by_one()]).await;
    assert!(world.finding_comments().is_empty());
    assert!(world.bot_issue_comments().is_empty());
    world.sim.set_head(7, &pushed, Some(world.diff_at(&pushed)));
    let EventOutcome::Review { pull_request, .. } = world.review(&[off_by_one()]).await else {
        panic!("not a review");
    };
    assert_eq!(pull_request.head_sha, pushed);
    let comments = world.finding_comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].commit_id, pushed);
}

#[tokio::test]
async fn a_finding_over_the_body_limit_is_cut_with_its_marker_and_signature_kept() {
    let world = World::new().await;
    world.review(&[crate::support::huge_finding()]).await;
    let comments = world.finding_comments();
    assert_eq!(comments.len(), 1);
    let body = &comments[0].body;
    assert!(body.chars().count() <= 65_536, "{}", body.chars().count());
    assert!(
        body.contains("finding_id:\""),
        "marker kept: {} chars: {} ... {}",
        body.chars().count(),
        &body[..600],
        &body[body.len().saturating_sub(300)..]
    );
    assert!(body.trim_end().ends_with("-->") && body.contains("<!-- bugloop:sig v1 "));
    // Read back as bugloop's: a second run changes nothing.
    world.sim.clear_requests();
    world.review(&[crate::support::huge_finding()]).await;
    assert_eq!(world.finding_comments().len(), 1);
}

#[tokio::test]
async fn two_runs_at_once_on_one_pull_request_leave_one_comment_each() {
    let world = World::new().await;
    let second = world.another_workspace();
    let mut other = world.job(
        world.review_trigger(),
        crate::support::review_script(world.scripts.path(), &[off_by_one()]),
    );
    other.workspace = bugloop_app::Workspace::Checkout(second.path().to_path_buf());
    let first = world.job(
        world.review_trigger(),
        crate::support::review_script(world.scripts.path(), &[off_by_one()]),
    );
    let (a, b) = tokio::join!(crate::support::run(first), crate::support::run(other));
    a.unwrap();
    b.unwrap();
    let published = published(&world);
    let total: usize = published.values().map(|(l, c)| l + c).sum();
    assert_eq!((published.len(), total), (1, 1), "{published:#?}");
    let summaries = world
        .bot_issue_comments()
        .into_iter()
        .filter(|c| c.body.starts_with("<!-- bugloop:summary"))
        .count();
    assert_eq!(summaries, 1);
}

#[tokio::test]
async fn a_thread_github_will_not_resolve_is_reported_and_the_finding_still_resolved() {
    let world = World::new().await;
    let (_, id) = world.reviewed().await;
    // The fix is pushed; the model says the finding is resolved; GitHub refuses the resolve.
    let fixed = world.push(
        "lib.rs",
        &format!(
            "{}\npub fn last(v: &[u8]) -> u8 {{\n    v[v.len() - 1]\n}}\n",
            crate::support::LIB
        ),
    );
    world.sim.set_head(7, &fixed, Some(world.diff_at(&fixed)));
    world.sim.inject(Fault::GraphQlError {
        operation: "ResolveThread".to_owned(),
        message: "Resource not accessible by integration".to_owned(),
    });
    let mut lines = vec![serde_json::json!({"tool_calls": [
        {"name": "resolve_finding", "arguments": {"id": id, "reason": "now indexes the last element"}},
        {"name": "submit_pass_results", "arguments": {"pass_number": 1, "summary": "diff"}}
    ]})];
    for pass in 2..=4 {
        lines.push(serde_json::json!({"tool_calls": [{"name": "submit_pass_results", "arguments": {"pass_number": pass, "summary": "ok"}}]}));
    }
    let model = crate::support::answers(world.scripts.path(), &lines);
    let EventOutcome::Review { outcome, .. } =
        crate::support::run(world.job(world.review_trigger(), model))
            .await
            .unwrap()
    else {
        panic!("not a review");
    };
    let report = outcome.report.unwrap();
    assert_eq!(report.resolved.len(), 1, "{report:#?}");
    assert!(
        report
            .conversation_problems
            .iter()
            .any(|p| p.contains("could not be marked resolved")
                && p.contains("Resource not accessible")),
        "{:?}",
        report.conversation_problems
    );
    assert!(world.finding_comments()[0].body.contains("resolved:true"));
    assert!(!world.sim.threads(7)[0].resolved);
}
