//! The review loop (bugbot detection + the multi-pass reviewer), as a sequence of stages with
//! typed hand-offs, one file each:
//!
//! ```text
//! disputes      developers' replies since the last run are answered first
//! conversation  the review state rebuilt from the forge's comments       -> Conversation
//! increment     the whole change, or what changed since the last review, and the open
//!               findings whose code changed (touched)                    -> Shown
//! brief         rules, sensitivity, system prompt, web, the session plan -> Brief
//! sessions      the model sessions (four passes, or one structured answer) -> Reported
//! analysis      beside them: the static analyzers, their hits triaged or published -> Analyzed
//! filtering     path safety, grounding, the filter pipeline             -> Filtered
//! prove         the most severe findings proven by a test at head (into Filtered)
//! proven        a proven finding said to be resolved stays open unless its test passes
//! publishing    comments upserted by marker, resolutions, overflow      -> Published
//! assemble      the report and the summary comment                      -> ReviewReport
//! ```
//!
//! A dry run is the same sequence on a [`bugloop_forge::recording::RecordingForge`]; only two
//! things depend on it: disputes are not weighed (that would ask the model) and the report marks
//! findings "not published".

mod analysis;
mod analyzer_runs;
mod assemble;
mod base_tree;
mod brief;
mod conversation;
pub(crate) use conversation::existing_finding;
mod early;
mod evidence;
mod filtering;
mod increment;
pub(crate) mod near;
mod prove;
mod proven;

pub(crate) use self::prove::{ProofContext, prove_findings};
mod publishing;
mod questions;
mod recheck;
mod sessions;
mod shifted;
#[cfg(test)]
mod test_findings;
pub mod tools;
mod touched;
mod unbroken;
pub(crate) use touched::MAX_QUOTE_BYTES;
mod undone;
pub(crate) mod web;

pub use self::web::WebError;

use std::path::PathBuf;
use std::time::Instant;

use bugloop_config::ConfigError;
use bugloop_diff::Diff;
use bugloop_domain::finding::Finding;
use bugloop_forge::{ChangeKey, ForgeError};
use bugloop_report::dispute::DisputeSummary;
use bugloop_report::review::{ProofStatus, ReviewReport};

use crate::env::LoopEnv;

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Config(Box<ConfigError>),
    #[error("the review workspace {path}: {message}")]
    Workspace { path: PathBuf, message: String },
    #[error(transparent)]
    Web(#[from] WebError),
}

/// The change to review and where its head is checked out.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    pub change: ChangeKey,
    pub description: String,
    pub base: String,
    /// The head commit, or `index` / `working-tree`; line comments are anchored to it.
    pub head: String,
    pub diff: Diff,
    /// The code at head (a worktree or the repository itself).
    pub workspace: PathBuf,
    /// The sanitized git directory sandboxed commands see in the workspace (none: `.git` hidden).
    pub git_mount: Option<bugloop_sandbox::GitMount>,
    /// Ignore the conversation: no previous findings, no dedup against them, no disputes (the
    /// converge loop's audits start from scratch every loop).
    pub clean_room: bool,
    /// What this reviewer looks at first (a converge auditor's focus, markdown), added to the
    /// system prompt.
    pub focus: Option<String>,
    /// Show the model the whole change even when an earlier head was reviewed (otherwise only
    /// what changed since is shown).
    pub full: bool,
    /// Hidden lines bugloop appends to its summary comment (what a later run counts, such as a
    /// review of a pull request whose author cannot write); bugloop's own text, never a model's.
    pub summary_footer: Option<String>,
}

impl From<ConfigError> for ReviewError {
    fn from(error: ConfigError) -> Self {
        ReviewError::Config(Box::new(error))
    }
}

/// Runs one review.
pub async fn review(
    env: &LoopEnv<'_>,
    request: ReviewRequest,
) -> Result<ReviewReport, ReviewError> {
    review_with(env, request, Vec::new()).await
}

/// Runs one review, adding findings of bugloop's own (not the model's) to what the model
/// reports, such as the branch's ignored changes to trusted configuration
/// (`bugloop_config::ignored_settings_finding`). They are grounded, filtered and published like
/// the model's.
pub async fn review_with(
    env: &LoopEnv<'_>,
    request: ReviewRequest,
    own_findings: Vec<Finding>,
) -> Result<ReviewReport, ReviewError> {
    let started = Instant::now();
    let (disputes, dispute_error) = settle_disputes(env, &request).await;
    let mut conversation = conversation::load(env, &request).await?;
    if !request.clean_room && undone::raise_again(env, &request, &conversation).await? {
        conversation = conversation::load(env, &request).await?;
    }
    let shown = increment::decide(env, &request, &conversation);
    conversation.follow(&shown.shifted);
    let brief = brief::prepare(env, &request, &conversation, &shown)?;
    let early = early::EarlyPublisher::for_review(env, &request, &conversation, &brief, &shown);
    let unchanged = evidence::unchanged(&conversation, &shown);
    // The analyzers run (and their hits are triaged) while the model reviews.
    let (mut reported, mut analyzed) = tokio::join!(
        sessions::run(
            env,
            &request,
            &brief,
            &shown.asked_ids,
            own_findings,
            dispute_error.into_iter().collect(),
            early.as_ref(),
        ),
        analysis::analyze(
            env,
            &request,
            &brief,
            // Tracked hits are not weighed again, unless a full review was asked for (after a
            // rebase the findings followed their code, and weighing them again cost a call and
            // could contradict the finding still open).
            (!request.full).then_some(&unchanged[..]),
        ),
    );
    evidence::hold_unchanged_findings(&conversation, &shown, &mut reported);
    reported
        .resolutions
        .extend(std::mem::take(&mut analyzed.no_longer_broken));
    evidence::follow_rewritten(&conversation, &shown, &mut analyzed.findings);
    let early = early.map(early::EarlyPublisher::finish).unwrap_or_default();
    reported.findings = early.merge_hits(std::mem::take(&mut reported.findings), analyzed.findings);
    reported.record.dropped.extend(analyzed.dismissed);
    reported.record.unreviewed.extend(analyzed.unanalyzed);
    reported.record.errors.extend(analyzed.failures);
    let published_early: Vec<Finding> = early.findings.iter().map(|(_, f)| f.clone()).collect();
    let mut filtered = filtering::ground_and_filter(
        &request,
        &conversation,
        &brief,
        &shown,
        reported,
        &published_early,
    );
    early.note_in(&mut filtered, brief.plan.batches.len());
    filtered.proofs = prove::prove(env, &request, &mut filtered.publish).await;
    proven::keep_unpassed_proofs_open(env, &request, &conversation, &mut filtered).await;
    // Proofs the budget cut short make the review incomplete (exit 3), as any budget stop does.
    let unproven = filtered
        .proofs
        .iter()
        .filter(|p| p.status == ProofStatus::NotTried && p.reason.starts_with(prove::OUT_OF_BUDGET))
        .count();
    if unproven > 0 {
        filtered.record.errors.push(format!(
            "proofs: the run's budget ran out; {unproven} finding(s) published without their proof"
        ));
    }
    if early.wrote() {
        // The comments published early are the conversation's now: the end updates them in
        // place, never adds them again.
        conversation.comments = env.forge.comments(&request.change).await?;
    }
    let mut published =
        publishing::publish(env, &request, &conversation, &brief, &mut filtered).await?;
    early.add_to(&mut published);
    let stages = assemble::Stages {
        started,
        disputes,
        conversation,
        brief,
        scope: shown.scope,
        filtered,
        published,
        analysis: analyzed.info,
    };
    Ok(assemble::report(env, &request, stages).await?)
}

/// Stage 0 (pr-reviewer-design.md 3.2): developers' replies since the last run are answered
/// before the review, so its findings see the threads' new statuses. Not in a clean room or a
/// dry run. A failure is reported with the review, not fatal to it.
async fn settle_disputes(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
) -> (Vec<DisputeSummary>, Option<String>) {
    if request.clean_room || !env.forge.publishes() {
        return (Vec::new(), None);
    }
    // Disputes read the code under review from the repository (a pull request's pinned head,
    // or the local checkout), never from the review's task tree, which is no repository.
    match crate::disputes::settle_all_disputes(env, &request.change).await {
        Ok(outcomes) => (
            outcomes.into_iter().map(DisputeSummary::from).collect(),
            None,
        ),
        Err(error) => (
            Vec::new(),
            Some(format!("answering developer replies: {error}")),
        ),
    }
}
