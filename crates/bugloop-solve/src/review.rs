//! PR_DRAFT and REVIEWING: the draft is reviewed by the review loop; then, round by round, its
//! unresolved threads are addressed in one Build run (grouped by file), the tests run again, the
//! commit is pushed to the draft's branch, every addressed thread is answered and resolved, and
//! the new head is reviewed. With no thread open, the gate decides. At
//! `solve.max_review_iterations` rounds the issue is escalated. A review that is not complete
//! never reaches the gate: the head is recorded as unreviewed and reviewed again by the next run,
//! and the third such run in a row escalates the issue.
//!
//! With `agents.reviewer.external`, bugloop does not review its drafts: each head waits for the
//! external reviewer's review (CodeRabbit and the like, or a person), whose threads the rounds
//! address; a head left unreviewed for `agents.reviewer.wait_minutes` is escalated.

use std::collections::BTreeMap;

use bugloop_domain::solve::SolveState;
use bugloop_domain::thread::ThreadStatus;
use bugloop_forge::tracker::{ChangeRequest, ChangeRequestState};
use bugloop_git::{Selection, short};
use bugloop_report::build::{BuildResult, BuildStatus};

use bugloop_loops::act::FixCommit;
use bugloop_loops::build::{BuildTask, Workbench, build};
use bugloop_loops::comment_bodies::{ResolvedBy, resolve_thread};
use bugloop_loops::prompt::fill;
use bugloop_loops::review::{ReviewRequest, review};

use super::detail::{BuiltRound, Empty, ReviewedHead, RoundStep};
use super::{Flow, RESOLVE_PROMPT, Run, SolveError};
use bugloop_loops::prompt::quoted;

/// The commit the draft's branch points at on the forge.
pub(super) async fn draft_head(
    run: &Run<'_, '_>,
    request: &ChangeRequest,
) -> Result<String, SolveError> {
    run.tracker
        .branch_head(&request.branch)
        .await?
        .ok_or_else(|| {
            SolveError::Invalid(format!("the draft's branch {} is gone", request.branch))
        })
}

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
async fn review_draft(run: &Run<'_, '_>, head: &str) -> Result<Result<usize, String>, SolveError> {
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
    // As `bugloop review` does: one publishing review of a conversation at a time (a developer
    // may run it on the draft's branch while this run reviews it).
    let _lease = bugloop_forge::local::conversation_lease(run.env.git, &change.key)?
        .map_err(|held| SolveError::Invalid(held.to_string()))?;
    let checkout = bugloop_loops::checkout::checkout(run.env.git, &change)?;
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
            summary_footer: None,
        },
    )
    .await?;
    if !report.complete {
        let why = report.errors.first().cloned().unwrap_or_else(|| {
            format!(
                "{} part(s) of it were not reviewed",
                report.unreviewed.len()
            )
        });
        return Ok(Err(why));
    }
    Ok(Ok(report
        .tracked
        .iter()
        .filter(|t| t.status != ThreadStatus::Resolved)
        .count()))
}

/// The review of draft `number` at `head` (round `round`'s) was not complete (the model failed
/// or its budget ran out): its findings may be partial, so the head is recorded as unreviewed,
/// not reviewed, and the gate is not reached; the next run reviews it again. At the third such
/// run in a row the issue is escalated, as a failure that comes back every time (a change too
/// large for the budget, an analyzer over its cap) would otherwise be paid for on every run.
async fn review_incomplete(
    run: &mut Run<'_, '_>,
    (number, round): (u64, u64),
    head: &str,
    why: &str,
) -> Result<Flow, SolveError> {
    let said = format!(
        "the review of draft #{number} at {} was not complete ({why})",
        short(head)
    );
    if run.record.unreviewed_in_a_row() + 1 >= REVIEW_STOPS_TO_ESCALATE {
        return run
            .escalate(&format!(
                "{said}; it was not complete in {REVIEW_STOPS_TO_ESCALATE} runs in a row"
            ))
            .await;
    }
    run.step(
        SolveState::Reviewing,
        &said,
        &RoundStep::unreviewed(round, head, why.to_owned()),
    )
    .await?;
    run.stopped = Some("model".to_owned());
    Ok(Flow::Stop(format!("{said}; the next run reviews it again")))
}

/// Runs in a row whose review of the draft is not complete before the issue is escalated.
const REVIEW_STOPS_TO_ESCALATE: usize = 3;

/// REVIEWING, after a run whose review of the draft's `head` was not complete: reviews it again.
async fn review_again(run: &mut Run<'_, '_>, round: u64, head: &str) -> Result<Flow, SolveError> {
    let number = draft(run)?;
    let open = match review_draft(run, head).await? {
        Ok(open) => open,
        Err(why) => return review_incomplete(run, (number, round), head, &why).await,
    };
    let outcome = format!(
        "draft #{number} reviewed at {}: {open} finding{} open",
        short(head),
        if open == 1 { "" } else { "s" }
    );
    run.step(
        SolveState::Reviewing,
        &outcome,
        &RoundStep::reviewed(round, head, outcome.clone()),
    )
    .await?;
    Ok(Flow::Next)
}

/// The external reviewer's accounts, whose threads are addressed as a writer's.
fn external_reviewers<'r>(run: &'r Run<'_, '_>) -> &'r [String] {
    let reviewer = &run.env.config().agents.reviewer;
    if reviewer.external {
        &reviewer.logins
    } else {
        &[]
    }
}

/// What the external reviewer said of a head.
enum ExternalReview {
    /// No review of this head by them yet.
    Awaited,
    /// Their latest review of it asks for changes.
    ChangesRequested,
    Given,
}

/// The external reviewer's review of `head` of draft `number`: by one of
/// `agents.reviewer.logins` (GitHub's logins compare without case), or without them by anyone
/// but bugloop who may change the repository.
async fn external_review(
    run: &Run<'_, '_>,
    number: u64,
    head: &str,
) -> Result<ExternalReview, SolveError> {
    let logins = &run.env.config().agents.reviewer.logins;
    let mut latest = None;
    for review in run.tracker.reviews_of(number, head).await? {
        if review
            .reviewer
            .eq_ignore_ascii_case(run.env.forge.bot_login())
        {
            continue;
        }
        let counts = if logins.is_empty() {
            run.env
                .forge
                .permission(&review.reviewer)
                .await?
                .may_modify_files()
        } else {
            logins
                .iter()
                .any(|login| login.eq_ignore_ascii_case(&review.reviewer))
        };
        if counts {
            latest = Some(review.changes_requested);
        }
    }
    Ok(match latest {
        None => ExternalReview::Awaited,
        Some(true) => ExternalReview::ChangesRequested,
        Some(false) => ExternalReview::Given,
    })
}

/// REVIEWING with an external reviewer who has not reviewed `head` yet (or asked for changes
/// on it and left no thread to address): wait, or escalate once `agents.reviewer.wait_minutes`
/// have passed since the head was there (its last step, or its commit, whichever is later).
/// The run says when the wait ends, so the App looks again then.
async fn wait_for_external(
    run: &mut Run<'_, '_>,
    number: u64,
    head: &str,
    what: &str,
) -> Result<Flow, SolveError> {
    let wait = run.env.config().agents.reviewer.wait_minutes;
    let now = jiff::Timestamp::now();
    let recorded = run.record.last_at(SolveState::Reviewing).unwrap_or(now);
    let committed = run
        .env
        .git
        .run(&["log", "-1", "--format=%ct", head])
        .ok()
        .and_then(|seconds| seconds.parse::<i64>().ok())
        .and_then(|seconds| jiff::Timestamp::from_second(seconds).ok())
        .filter(|at| *at <= now);
    let since = committed.map_or(recorded, |at| at.max(recorded));
    let limit =
        jiff::SignedDuration::from_secs(i64::try_from(wait.saturating_mul(60)).unwrap_or(i64::MAX));
    let waited = now.duration_since(since);
    if waited >= limit {
        return run
            .escalate(&format!(
                "the external reviewer {what} {} of #{number} within {wait} minutes \
                 (agents.reviewer.wait_minutes)",
                short(head)
            ))
            .await;
    }
    run.wake_at = since.checked_add(limit).ok();
    Ok(Flow::Stop(format!(
        "waiting for the external reviewer: it {what} {} of #{number} yet ({} of {wait} \
         minutes waited)",
        short(head),
        waited.as_secs() / 60
    )))
}

/// PR_DRAFT -> REVIEWING: the draft's first review (by the external reviewer, when there is
/// one: then only recorded as awaited).
pub(super) async fn first_review(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    let number = draft(run)?;
    let branch = run.tracker.change_request(number).await?.branch;
    let head = run
        .tracker
        .branch_head(&branch)
        .await?
        .ok_or_else(|| SolveError::Invalid(format!("the draft's branch {branch} is gone")))?;
    if run.env.config().agents.reviewer.external {
        run.step(
            SolveState::Reviewing,
            &format!("draft #{number} opened; its review is the external reviewer's"),
            &ReviewedHead { head: head.clone() },
        )
        .await?;
        return Ok(Flow::Next);
    }
    let reviewed = review_draft(run, &head).await?;
    let said = match &reviewed {
        Ok(open) => format!(
            "draft #{number} reviewed: {open} finding{} open",
            if *open == 1 { "" } else { "s" }
        ),
        Err(_) => format!("draft #{number} opened; its review was not complete"),
    };
    run.step(
        SolveState::Reviewing,
        &said,
        &ReviewedHead { head: head.clone() },
    )
    .await?;
    if let Err(why) = reviewed {
        return review_incomplete(run, (number, 0), &head, &why).await;
    }
    Ok(Flow::Next)
}

/// REVIEWING: finishes a round a run before this one built, runs the next round, or, with no
/// thread open, the gate.
pub(super) async fn round_or_gate(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    if let Some(built) = run.record.unfinished_round() {
        return finish_round(run, &built).await;
    }
    if let Some((round, head)) = run.record.unreviewed()
        && !run.env.config().agents.reviewer.external
    {
        return review_again(run, round, &head).await;
    }
    let number = draft(run)?;
    let request = run.tracker.change_request(number).await?;
    if run.env.config().agents.reviewer.external {
        let head = draft_head(run, &request).await?;
        let review = external_review(run, number, &head).await?;
        if let ExternalReview::Awaited = review {
            return wait_for_external(run, number, &head, "did not review").await;
        }
        let (comments, state) = run.env.conversation(&request.conversation).await?;
        let open =
            super::threads::open(run.env.forge, &comments, &state, external_reviewers(run)).await?;
        if open.is_empty() && matches!(review, ExternalReview::ChangesRequested) {
            // Their decision, with nothing of theirs left to address: theirs to change.
            return wait_for_external(run, number, &head, "asked for changes, and did not approve")
                .await;
        }
    }
    let (comments, state) = run.env.conversation(&request.conversation).await?;
    let open =
        super::threads::open(run.env.forge, &comments, &state, external_reviewers(run)).await?;
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
    let head = draft_head(run, &request).await?;
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
            tool_fixes: Vec::new(),
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
    let said = format!(
        "Addressed in {} (review round {}, the tests pass).",
        short(&built.commit),
        built.number
    );
    answer_addressed(run, &request, built, &said).await?;
    let addressed = format!(
        "{} thread{} addressed in {}, tests pass",
        built.threads.len(),
        if built.threads.len() == 1 { "" } else { "s" },
        short(&built.commit),
    );
    let outcome = if run.env.config().agents.reviewer.external {
        format!("{addressed}; its review is the external reviewer's")
    } else {
        let open = match review_draft(run, &built.commit).await? {
            Ok(open) => open,
            Err(why) => {
                return review_incomplete(run, (number, built.number), &built.commit, &why).await;
            }
        };
        format!(
            "{addressed}; {open} finding{} open after its review",
            if open == 1 { "" } else { "s" }
        )
    };
    run.step(
        SolveState::Reviewing,
        &format!("round {}: {outcome}", built.number),
        &RoundStep::done(built, outcome.clone()),
    )
    .await?;
    Ok(Flow::Next)
}

/// Answers and resolves the threads still open that the round addressed; a finding whose code
/// its commit left alone stays open, told why (the round's review weighs it again, the next
/// round takes it). A run that died answering some does not answer them twice.
async fn answer_addressed(
    run: &Run<'_, '_>,
    request: &ChangeRequest,
    built: &BuiltRound,
    said: &str,
) -> Result<(), SolveError> {
    // What was written while the round ran (a forge keeps its earlier listing until it writes).
    run.env.forge.forget_listings();
    let (comments, state) = run.env.conversation(&request.conversation).await?;
    // A round runs the issue's tests, not the proven findings' (its task places none).
    let fix = FixCommit::read(run.env, &built.commit).without_proofs();
    for thread in
        super::threads::open(run.env.forge, &comments, &state, external_reviewers(run)).await?
    {
        if !built.threads.contains(&thread.id) {
            continue;
        }
        // A person's comment may ask for a change anywhere (a test in another file): its
        // author judges the round, and a reviewer who requested changes holds the gate.
        let missed = thread.finding.as_ref().and_then(|id| {
            state
                .threads
                .iter()
                .find(|t| t.finding_id.as_ref() == Some(id))
                .and_then(|t| fix.missed(t))
        });
        if let Some(why) = missed {
            let kept = format!("{said} This thread stays open: {why}.");
            let answered = comments.iter().any(|c| {
                c.by_bugloop
                    && c.in_reply_to.as_deref() == Some(thread.root.id.as_str())
                    && c.body.contains(&kept)
            });
            if !answered {
                let body =
                    bugloop_loops::comment_bodies::info_reply(&run.env.settings.markers, &kept);
                run.env
                    .forge
                    .reply(&request.conversation, thread.root, &body)
                    .await?;
            }
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
                    said,
                )
                .await?;
            }
            None => {
                run.env
                    .forge
                    .reply(
                        &request.conversation,
                        thread.root,
                        &bugloop_loops::comment_bodies::info_reply(&run.env.settings.markers, said),
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
    Ok(())
}

/// READY: merged by a person (-> MERGED), reopened by new review threads, or by what changed
/// since the gate passed (a request for changes, a failing check, a new head: -> REVIEWING,
/// where the gate decides again), or waiting for a person.
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
    let open = super::threads::open(run.env.forge, &comments, &state, external_reviewers(run))
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
    let since = since_ready(run, &request).await?;
    if !since.is_empty() {
        run.step(
            SolveState::Reviewing,
            &format!(
                "#{number} was ready, but since then {}: the gate decides again",
                since.join("; ")
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

/// What changed since the gate passed on a READY draft that the gate would not pass: a
/// reviewer's request for changes, a failing check on the head, a head it did not pass.
async fn since_ready(
    run: &Run<'_, '_>,
    request: &ChangeRequest,
) -> Result<Vec<String>, SolveError> {
    let head = draft_head(run, request).await?;
    let passed_on: ReviewedHead = run.record.last_detail();
    let mut since = Vec::new();
    if !passed_on.head.is_empty() && passed_on.head != head {
        since.push(format!(
            "its head moved from {} to {}",
            short(&passed_on.head),
            short(&head)
        ));
    }
    if run.tracker.changes_requested(request.number).await? {
        since.push("a reviewer requested changes".to_owned());
    }
    let checks = run.tracker.checks(&head).await?;
    since.extend(
        super::gate::failed_checks(&checks)
            .into_iter()
            .map(|name| format!("the check {name} failed on {}", short(&head))),
    );
    Ok(since)
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
