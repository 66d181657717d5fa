//! Intents on a pull request: a fix asked for in a comment is made, verified with the base's
//! commands only, pushed to the pull request's branch as one fast-forward commit, and the
//! finding resolved; the same comment event twice does the work once.

use bugloop_app::EventOutcome;
use bugloop_testkit::git;
use serde_json::{Value, json};

use crate::support::{World, answers, off_by_one};

const BASE_CONFIG: &str = "fix:\n  verify_commands: [\"true\"]\n";
/// The pull request's own configuration tries to choose the commands bugloop runs.
const HEAD_CONFIG: &str = "fix:\n  verify_commands: [\"touch pwned\"]\n";

fn fixing(world: &World) -> String {
    let edit = json!({"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}});
    answers(
        world.scripts.path(),
        &[json!({"tool_calls": [edit]}), json!({"text": "Done."})],
    )
}

#[tokio::test]
async fn fix_all_pushes_one_verified_commit_with_the_bases_commands_and_resolves_the_finding() {
    let world = World::with_configs(Some(BASE_CONFIG), Some(HEAD_CONFIG), false).await;
    let (_, id) = world.reviewed().await;
    let said = "@bugloop fix all";
    let comment = world.sim.comment_as(7, "alice", said);
    let outcome = world
        .commented(
            world.comment_trigger(comment, "alice", said, None),
            fixing(&world),
        )
        .await;
    let report = &outcome.report;
    let build = report.build.as_ref().expect("a build");
    let commands: Vec<String> = serde_json::to_value(build)
        .unwrap()
        .pointer("/verify")
        .and_then(Value::as_array)
        .map(|runs| runs.iter().map(|r| r["command"].to_string()).collect())
        .unwrap_or_default();
    assert!(
        commands.iter().all(|c| !c.contains("pwned")),
        "{commands:?}"
    );
    assert!(
        commands.iter().any(|c| c.contains("true")),
        "{commands:?}: {report:#?}"
    );
    // One commit on top of the pull request's head, pushed to its branch.
    let pushed = world.origin_head();
    assert_ne!(pushed, world.head);
    let parent = git(world.origin(), &["rev-parse", &format!("{pushed}^")]);
    assert_eq!(parent, world.head);
    let message = git(world.origin(), &["log", "-1", "--format=%s", &pushed]);
    // The pull request's attempt on the configuration is a finding of its own, fixed with it.
    assert!(
        message.starts_with(&format!("fix(#7): bugloop autofix - resolve {id}")),
        "{message}"
    );
    let files = git(
        world.origin(),
        &["show", "--name-only", "--format=", &pushed],
    );
    assert_eq!(files, "lib.rs");
    assert!(world.sim.threads(7)[0].resolved, "the thread is resolved");
    assert!(report.resolved.contains(&id), "{report:?}");
}

/// A writer asks for a fix when no finding is open (one landed just before, or two people
/// asked at once): the comment is answered, nothing is pushed, and the job is done, not failed.
#[tokio::test]
async fn fix_all_with_nothing_open_is_answered_and_done() {
    let world = World::new().await;
    world.review(&[]).await;
    let said = "@bugloop fix all";
    let comment = world.sim.comment_as(7, "alice", said);
    let model = answers(world.scripts.path(), &[]);
    let outcome = world
        .commented(world.comment_trigger(comment, "alice", said, None), model)
        .await;
    assert!(
        matches!(outcome.verdict, bugloop_app::Verdict::Done),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(world.origin_head(), world.head);
    let last = world.sim.issue_comments(7).last().unwrap().clone();
    assert!(last.body.contains("nothing to fix"), "{}", last.body);
}

#[tokio::test]
async fn a_reader_asking_for_a_fix_gets_an_answer_and_no_commit() {
    let world = World::new().await;
    world.sim.set_permission("mallory", "read");
    world.review(&[off_by_one()]).await;
    let said = "@bugloop fix all";
    let comment = world.sim.comment_as(7, "mallory", said);
    let model = world.answering("It indexes one past the end.");
    world
        .on_conversation_comment(comment, "mallory", said, model)
        .await;
    assert_eq!(world.origin_head(), world.head);
    let last = world.sim.issue_comments(7).last().unwrap().clone();
    assert!(
        last.body.contains("may not have bugloop change files"),
        "{}",
        last.body
    );
}

#[tokio::test]
async fn a_push_before_the_fix_lands_leaves_it_on_a_branch_of_its_own() {
    let world = World::with_configs(Some(BASE_CONFIG), None, false).await;
    world.review(&[off_by_one()]).await;
    let said = "@bugloop fix all";
    let comment = world.sim.comment_as(7, "alice", said);
    // Someone pushes while the fix is being made: the pull request's head moves after the
    // run has read it (when it opens) and before the fix lands.
    let pushed = world.push("notes.txt", "more\n");
    world.sim.inject(bugloop_github_sim::Fault::MoveHead {
        number: 7,
        after_pull_reads: world.sim.pull_reads(7) + 1,
        sha: pushed.clone(),
    });
    world
        .on_conversation_comment(comment, "alice", said, fixing(&world))
        .await;
    assert_eq!(
        world.origin_head(),
        pushed,
        "the push is kept, never overwritten"
    );
    let branches = git(world.origin(), &["branch", "--list", "bugloop/*"]);
    assert!(branches.contains("bugloop/fix-"), "{branches}");
    assert!(!world.sim.threads(7)[0].resolved);
}

#[tokio::test]
async fn the_same_comment_event_twice_is_answered_once() {
    let world = World::new().await;
    world.review(&[off_by_one()]).await;
    let said = "@bugloop why does this panic?";
    let comment = world.sim.comment_as(7, "alice", said);
    for _ in 0..2 {
        // A question is told by its form, without the model.
        let model = world.answering("Because it indexes one past the end.");
        world
            .on_conversation_comment(comment, "alice", said, model)
            .await;
    }
    let answers: Vec<_> = world
        .bot_issue_comments()
        .into_iter()
        .filter(|c| c.body.contains(&format!("reply-to issue-{comment}")))
        .collect();
    assert_eq!(answers.len(), 1, "{answers:#?}");

    // A fix asked for twice: one commit.
    let said = "@bugloop fix all";
    let comment = world.sim.comment_as(7, "alice", said);
    world
        .on_conversation_comment(comment, "alice", said, fixing(&world))
        .await;
    let once = world.origin_head();
    world.sim.set_head(7, &once, None);
    world
        .on_conversation_comment(comment, "alice", said, fixing(&world))
        .await;
    assert_eq!(world.origin_head(), once);
}

fn converge_trigger(requested_by: &str) -> bugloop_webhooks::Trigger {
    bugloop_webhooks::Trigger::Converge {
        repository: "acme/widgets".to_owned(),
        number: 7,
        requested_by: requested_by.to_owned(),
    }
}

/// An audit's four passes, reporting `findings` in the first.
fn audit(findings: &[Value]) -> Vec<Value> {
    bugloop_github_sim::fixture::review_lines(findings)
}

#[tokio::test]
async fn converge_on_a_pull_request_audits_fixes_and_pushes_to_its_branch() {
    let world = World::with_configs(Some(BASE_CONFIG), None, false).await;
    let mut script = audit(&[off_by_one()]);
    script.push(json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}}]}));
    script.push(json!({"text": "Fixed."}));
    script.extend(audit(&[]));
    world
        .sim
        .set_pull_body(7, "Adds `last`.\n\ncc @alice for the API.");
    let EventOutcome::Converge { outcome, .. } = world
        .on_comment(
            converge_trigger("alice"),
            answers(world.scripts.path(), &script),
        )
        .await
    else {
        panic!("not a converge");
    };
    let report = &outcome.report;
    assert_eq!(
        format!("{:?}", report.exit),
        "Converged",
        "{}",
        report.text()
    );
    let pushed = world.origin_head();
    assert_eq!(pushed, report.final_commit);
    assert_eq!(
        git(world.origin(), &["rev-parse", &format!("{pushed}^")]),
        world.head
    );
    let message = git(world.origin(), &["log", "-1", "--format=%s", &pushed]);
    assert!(
        message.starts_with("fix(#7): bugloop converge loop 2 - resolve "),
        "{message}"
    );
    // The description: the author's text kept, then what the loops did.
    let body = world.sim.pull_body(7).unwrap();
    assert!(
        body.starts_with(
            "Adds `last`.\n\ncc @alice for the API.\n\n<!-- bugloop:converge-description -->\n"
        ),
        "{body}"
    );
    assert!(body.contains("**Final state:** converged"), "{body}");
    assert!(body.contains("| 2 | fix | "), "{body}");
    assert!(
        body.trim_end()
            .ends_with("<!-- /bugloop:converge-description -->"),
        "{body}"
    );
    assert_eq!(report.description_error, None);
    // The loop's record is in the pull request's conversation.
    assert!(
        world
            .bot_issue_comments()
            .iter()
            .any(|c| c.body.contains("bugloop loop 3 audit")),
        "{:#?}",
        world.bot_issue_comments()
    );

    // Someone without write access asking for it: nothing runs.
    world.sim.set_permission("mallory", "read");
    let outcome = world
        .on_comment(
            converge_trigger("mallory"),
            answers(world.scripts.path(), &[]),
        )
        .await;
    let EventOutcome::NotRun { reason } = outcome else {
        panic!("ran: {outcome:?}");
    };
    assert!(reason.contains("mallory may not"), "{reason}");
}

#[tokio::test]
async fn a_review_body_asking_for_a_fix_is_acted_on_once() {
    let world = World::with_configs(Some(BASE_CONFIG), None, false).await;
    world.review(&[off_by_one()]).await;
    let id = world
        .sim
        .submit_review(7, "alice", "COMMENTED", "@bugloop fix all");
    let trigger = bugloop_webhooks::Trigger::Comment {
        repository: "acme/widgets".to_owned(),
        number: 7,
        kind: bugloop_webhooks::CommentKind::ReviewBody,
        id,
        body: "@bugloop fix all".to_owned(),
        author: "alice".to_owned(),
        in_reply_to: None,
        installation: None,
    };
    world.on_comment(trigger.clone(), fixing(&world)).await;
    let once = world.origin_head();
    assert_ne!(once, world.head, "a fix was pushed");
    let answered = world
        .bot_issue_comments()
        .into_iter()
        .filter(|c| c.body.contains(&format!("reply-to review-body-{id}")))
        .count();
    assert_eq!(answered, 1);
    world.sim.set_head(7, &once, None);
    let outcome = world.commented(trigger, fixing(&world)).await;
    assert!(
        matches!(outcome.verdict, bugloop_app::Verdict::Skipped { .. }),
        "{:?}",
        outcome.verdict
    );
    assert_eq!(world.origin_head(), once);
}

#[tokio::test]
async fn two_questions_in_one_thread_are_each_answered_once_whatever_the_order() {
    let world = World::new().await;
    let (root, _) = world.reviewed().await;
    let first = "@bugloop why does this panic?";
    let second = "@bugloop can the slice be empty here?";
    let c1 = world.sim.reply_as(7, "alice", root, first).unwrap();
    let c2 = world.sim.reply_as(7, "alice", root, second).unwrap();
    // The first is answered after the second was written: the second still gets its answer.
    world
        .on_comment(
            world.comment_trigger(c1, "alice", first, Some(root)),
            world.answering("It indexes past the end."),
        )
        .await;
    let outcome = world
        .commented(
            world.comment_trigger(c2, "alice", second, Some(root)),
            world.answering("Yes, it can."),
        )
        .await;
    assert!(
        !matches!(outcome.verdict, bugloop_app::Verdict::Skipped { .. }),
        "{:?}",
        outcome.verdict
    );
    let outcome = world
        .commented(
            world.comment_trigger(c2, "alice", second, Some(root)),
            world.answering("Again."),
        )
        .await;
    assert!(matches!(
        outcome.verdict,
        bugloop_app::Verdict::Skipped { .. }
    ));
    let bot_replies: Vec<String> = world
        .sim
        .review_comments(7)
        .into_iter()
        .filter(|c| c.author == crate::support::BOT && c.in_reply_to.is_some())
        .map(|c| c.body)
        .collect();
    assert_eq!(bot_replies.len(), 2, "{bot_replies:#?}");
    assert!(bot_replies[0].contains(&format!("bugloop:answers review-{c1}")));
    assert!(bot_replies[1].contains(&format!("bugloop:answers review-{c2}")));
}
