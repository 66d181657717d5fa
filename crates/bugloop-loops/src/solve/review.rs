//! PR_DRAFT and REVIEWING: the draft is reviewed by the review loop; then, round by round, its
//! unresolved threads are addressed in one Build run (grouped by file), the tests run again, the
//! commit is pushed to the draft's branch, every addressed thread is answered and resolved, and
//! the new head is reviewed. With no thread open, the gate decides. At
//! `solve.max_review_iterations` rounds the issue is escalated.

use std::collections::BTreeMap;

use bugloop_domain::solve::SolveState;
use bugloop_domain::thread::ThreadStatus;
use bugloop_forge::tracker::ChangeRequestState;
use bugloop_git::{Selection, short};
use bugloop_report::build::{BuildResult, BuildStatus};

use crate::build::{BuildTask, Workbench, build};
use crate::comment_bodies::{ResolvedBy, resolve_thread};
use crate::prompt::fill;
use crate::review::{ReviewRequest, review};

use super::detail::{BuiltRound, Empty, ReviewedHead, RoundStep};
use super::{Flow, RESOLVE_PROMPT, Run, SolveError};
use crate::prompt::quoted;

/// The draft's number, from the record.
fn draft(run: &Run<'_, '_>) -> Result<u64, SolveError> {
    run.record.change_request().ok_or_else(|| {
        SolveError::Invalid(format!(
            "issue #{}'s record has no draft to review",
            run.number()
        ))
    })
}

/// Reviews the draft at `head` with the review loop, publishing in its conversation; the number
/// of findings it left open.
async fn review_draft(run: &Run<'_, '_>, head: &str) -> Result<usize, SolveError> {
    let number = draft(run)?;
    let request = run.tracker.change_request(number).await?;
    // The commit solving started from: the clone's branch of that name may lag behind.
    let base = run
        .record
        .solving()
        .map(|s| s.start)
        .unwrap_or_else(|| request.base.clone());
    let mut change = run.env.git.select(&Selection::Range {
        base: Some(base),
        head: Some(head.to_owned()),
    })?;
    change.key = request.conversation.clone();
    change.description = format!("#{number} {}", request.title);
    let checkout = crate::checkout::checkout(run.env.git, &change)?;
    let report = review(
        run.env,
        ReviewRequest {
            change: change.key.clone(),
            description: change.description.clone(),
            base: change.base.clone(),
            head: head.to_owned(),
            diff: bugloop_diff::parse(&change.diff),
            workspace: checkout.path().to_path_buf(),
            git_mount: checkout.git_mount(),
            clean_room: false,
            focus: None,
            full: false,
        },
    )
    .await?;
    Ok(report
        .tracked
        .iter()
        .filter(|t| t.status != ThreadStatus::Resolved)
        .count())
}

/// PR_DRAFT -> REVIEWING: the draft's first review.
pub(super) async fn first_review(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    let number = draft(run)?;
    let branch = run.tracker.change_request(number).await?.branch;
    let head = run
        .tracker
        .branch_head(&branch)
        .await?
        .ok_or_else(|| SolveError::Invalid(format!("the draft's branch {branch} is gone")))?;
    let open = review_draft(run, &head).await?;
    run.step(
        SolveState::Reviewing,
        &format!(
            "draft #{number} reviewed: {open} finding{} open",
            if open == 1 { "" } else { "s" }
        ),
        &ReviewedHead { head: head.clone() },
    )
    .await?;
    Ok(Flow::Next)
}

/// REVIEWING: finishes a round a run before this one built, runs the next round, or, with no
/// thread open, the gate.
pub(super) async fn round_or_gate(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    if let Some(built) = run.record.unfinished_round() {
        return finish_round(run, &built).await;
    }
    let number = draft(run)?;
    let request = run.tracker.change_request(number).await?;
    let (comments, state) = run.env.conversation(&request.conversation).await?;
    let open = super::threads::open(run.env.forge, &comments, &state).await?;
    if open.is_empty() {
        return super::gate::decide(run, &request).await;
    }
    let rounds = run.record.rounds().len() as u64;
    let limit = u64::from(run.env.config().solve.max_review_iterations);
    if rounds >= limit {
        return run
            .escalate(&format!(
                "{} review thread{} still open after {rounds} round{} (solve.max_review_iterations)",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                if rounds == 1 { "" } else { "s" }
            ))
            .await;
    }
    let round = rounds + 1;
    let head = run
        .tracker
        .branch_head(&request.branch)
        .await?
        .ok_or_else(|| {
            SolveError::Invalid(format!("the draft's branch {} is gone", request.branch))
        })?;
    let ids: Vec<String> = open.iter().map(|t| t.id.clone()).collect();
    let bench = Workbench::at(run.env.git, &head, "resolve")?;
    let result = build(
        run.env,
        &bench,
        BuildTask {
            name: format!("resolve-{}-{round}", run.number()),
            prompt: prompt(run, &open),
            commit_message: format!(
                "fix: address review of #{number} (round {round}: {})",
                ids.join(", ")
            ),
            keep_failed: false,
            proofs: Vec::new(),
        },
    )
    .await;
    drop(bench);
    record_round(run, round, head, ids, &result).await
}

/// Records what came of round `round`'s build, and finishes the round when it committed.
async fn record_round(
    run: &mut Run<'_, '_>,
    round: u64,
    head: String,
    ids: Vec<String>,
    result: &BuildResult,
) -> Result<Flow, SolveError> {
    match &result.status {
        BuildStatus::Committed { commit, .. } => {
            let built = BuiltRound {
                number: round,
                commit: commit.clone(),
                previous: head,
                threads: ids,
                summary: result.summary.clone(),
            };
            run.step(
                SolveState::Reviewing,
                &format!("round {round}: built {}", short(commit)),
                &RoundStep::built(&built),
            )
            .await?;
            finish_round(run, &built).await
        }
        other => {
            let outcome = bugloop_report::text::build_status(other);
            run.step(
                SolveState::Reviewing,
                &format!("round {round}: {outcome}"),
                &RoundStep::failed(round, ids, outcome.clone()),
            )
            .await?;
            Ok(Flow::Next)
        }
    }
}

/// Pushes a built round's commit (unless it is there), answers and resolves the threads it
/// addressed (unless they are), reviews the new head, and records the round done.
async fn finish_round(run: &mut Run<'_, '_>, built: &BuiltRound) -> Result<Flow, SolveError> {
    let number = draft(run)?;
    let request = run.tracker.change_request(number).await?;
    let head = run.tracker.branch_head(&request.branch).await?;
    if head.as_deref() != Some(built.commit.as_str()) {
        run.tracker
            .publish_branch(&request.branch, &built.commit, Some(&built.previous))
            .await?;
    }
    let (comments, state) = run.env.conversation(&request.conversation).await?;
    let said = format!(
        "Addressed in {} (review round {}, the tests pass).",
        short(&built.commit),
        built.number
    );
    // Threads still open that the round addressed: a run that died answering some does not
    // answer them twice.
    for thread in super::threads::open(run.env.forge, &comments, &state).await? {
        if !built.threads.contains(&thread.id) {
            continue;
        }
        match &thread.finding {
            Some(id) => {
                resolve_thread(
                    run.env.forge,
                    &request.conversation,
                    &run.env.settings.markers,
                    thread.root,
                    (id, ResolvedBy::Code),
                    &said,
                )
                .await?;
            }
            None => {
                run.env
                    .forge
                    .reply(
                        &request.conversation,
                        thread.root,
                        &crate::comment_bodies::info_reply(&run.env.settings.markers, &said),
                    )
                    .await?;
                if let Some(thread_id) = &thread.root.thread_id {
                    run.env
                        .forge
                        .set_thread_resolved(&request.conversation, thread_id, true)
                        .await?;
                }
            }
        }
    }
    let open = review_draft(run, &built.commit).await?;
    let outcome = format!(
        "{} thread{} addressed in {}, tests pass; {open} finding{} open after its review",
        built.threads.len(),
        if built.threads.len() == 1 { "" } else { "s" },
        short(&built.commit),
        if open == 1 { "" } else { "s" }
    );
    run.step(
        SolveState::Reviewing,
        &format!("round {}: {outcome}", built.number),
        &RoundStep::done(built, outcome.clone()),
    )
    .await?;
    Ok(Flow::Next)
}

/// READY: merged by a person (-> MERGED), reopened by new review threads (-> REVIEWING), or
/// waiting for a person.
pub(super) async fn after_ready(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    let number = draft(run)?;
    let request = run.tracker.change_request(number).await?;
    match request.state {
        ChangeRequestState::Merged => {
            run.record_merge(number).await?;
            return Ok(Flow::Stop(format!("#{number} was merged")));
        }
        ChangeRequestState::Closed => {
            return Ok(Flow::Stop(format!("#{number} was closed without merging")));
        }
        ChangeRequestState::Open => {}
    }
    let (comments, state) = run.env.conversation(&request.conversation).await?;
    let open = super::threads::open(run.env.forge, &comments, &state)
        .await?
        .len();
    if open > 0 {
        run.step(
            SolveState::Reviewing,
            &format!(
                "{open} new review thread{} on #{number}",
                if open == 1 { "" } else { "s" }
            ),
            &Empty {},
        )
        .await?;
        return Ok(Flow::Next);
    }
    Ok(Flow::Stop(format!(
        "#{number} is ready for review; merging it is a person's decision"
    )))
}

/// The round's prompt: the open threads grouped by file.
fn prompt(run: &Run<'_, '_>, open: &[super::threads::OpenThread<'_>]) -> String {
    let mut by_file: BTreeMap<&str, Vec<&super::threads::OpenThread<'_>>> = BTreeMap::new();
    for thread in open {
        by_file
            .entry(thread.file.as_deref().unwrap_or("(the change as a whole)"))
            .or_default()
            .push(thread);
    }
    let mut threads = String::new();
    for (file, list) in by_file {
        threads.push_str(&format!("## {file}\n\n"));
        for thread in list {
            let line = thread
                .line
                .map(|l| format!(" (line {l})"))
                .unwrap_or_default();
            let who = if thread.finding.is_some() {
                "bugloop's review".to_owned()
            } else {
                format!("a review by {}", thread.root.author)
            };
            threads.push_str(&format!(
                "### Thread `{}`{line}, from {who}\n\n\"\"\"\n{}\n\"\"\"\n\n",
                thread.id,
                quoted(&thread.body, 4_000)
            ));
            for reply in &thread.replies {
                threads.push_str(&format!(
                    "A reply in this thread:\n\n\"\"\"\n{}\n\"\"\"\n\n",
                    quoted(reply, 2_000)
                ));
            }
        }
    }
    let rounds = run.record.rounds();
    let previous = if rounds.is_empty() {
        String::new()
    } else {
        let mut text = "## Rounds before this one\n\n".to_owned();
        for round in rounds {
            text.push_str(&format!("- round {}: {}\n", round.number, round.outcome));
        }
        text
    };
    fill(
        RESOLVE_PROMPT,
        &[
            ("number", &run.number().to_string()),
            ("title", &quoted(&run.issue.title, 200)),
            ("threads", &threads),
            ("previous", &previous),
            (
                "repository",
                &super::repository_instructions(
                    run.env.settings,
                    bugloop_config::PromptKind::ResolveComments,
                ),
            ),
        ],
    )
}
