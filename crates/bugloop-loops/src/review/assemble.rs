//! Stage 8 of a review: the report (what every front end renders; its JSON schema is
//! `docs/review-report.schema.json`) and the summary comment made from it.

use std::time::Instant;

use bugloop_domain::thread::{Comment, ReviewState, reconstruct};
use bugloop_forge::{ForgeError, Upsert};
use bugloop_report::dispute::DisputeSummary;
use bugloop_report::review::{
    ChangeInfo, ModelAsked, REPORT_VERSION, ReviewReport, ReviewedScope, SensitivityInfo,
    Unreviewed, UsageInfo,
};
use bugloop_report::summary::{SUMMARY_TAG, comment_body as summary_body};

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::{Conversation, tracked_of};
use super::filtering::Filtered;
use super::publishing::{Published, upsert_tagged};
use crate::ProgressEvent;
use crate::comment_bodies::remove_duplicates_in;
use crate::env::LoopEnv;

/// Everything the stages produced, handed to the report.
pub(super) struct Stages<'a> {
    pub started: Instant,
    pub disputes: Vec<DisputeSummary>,
    pub conversation: Conversation,
    pub brief: Brief,
    pub scope: ReviewedScope,
    pub filtered: Filtered<'a>,
    pub published: Published,
    pub analysis: bugloop_report::review::AnalysisInfo,
}

pub(super) async fn report(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    stages: Stages<'_>,
) -> Result<ReviewReport, ForgeError> {
    let Stages {
        started,
        disputes,
        conversation,
        brief,
        scope,
        filtered,
        published,
        analysis,
    } = stages;
    // After publishing, from the forge (a dry run's recording forge shows what a real run would
    // track); a clean room ignores the conversation.
    let tracked = if request.clean_room {
        tracked_of(&conversation.state)
    } else {
        let after = env.forge.comments(&request.change).await?;
        tracked_of(&reconstruct(&after, &env.settings.markers))
    };
    let spent = env.meter.summary();
    let asked = asked(&brief);
    let mut report = ReviewReport {
        version: REPORT_VERSION,
        change: change_info(request),
        model: env.provider.name().to_owned(),
        findings: published.findings,
        resolved: published.resolved,
        rechecked: filtered.rechecked,
        tracked,
        dropped: filtered.record.dropped,
        changes: filtered.record.changes,
        stages: filtered.stage_counts,
        overflow: published.overflow,
        conversation_problems: conversation_problems(&conversation.state, &published.problems),
        disputes,
        refused_context: brief.refused_context,
        complete: filtered.record.errors.is_empty(),
        scope,
        unreviewed: once_each(filtered.record.unreviewed),
        summarized: brief.plan.summarized,
        ignored: brief.plan.ignored,
        passes: filtered.record.passes,
        usage: UsageInfo {
            input_tokens: spent.usage.input_tokens,
            cached_input_tokens: spent.usage.cached_input_tokens,
            output_tokens: spent.usage.output_tokens,
            cost_usd: spent.cost_usd,
            model_calls: spent.turns,
            sessions: brief.plan.batches.len(),
            seconds: 0.0,
        },
        errors: filtered.record.errors,
        proofs: filtered.proofs,
        analysis,
        asked,
        sensitive_data: SensitivityInfo {
            sensitive: brief.sensitivity.sensitive,
            reason: brief.sensitivity.reason,
        },
    };
    report.usage.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    publish_summary(
        env,
        request,
        &report,
        &conversation.comments,
        (published.head_moved, published.added),
    )
    .await?;
    Ok(report)
}

/// The reviewed change: its key, description, base and head, and the size of its diff.
fn change_info(request: &ReviewRequest) -> ChangeInfo {
    let (additions, deletions) = request.diff.stats();
    ChangeInfo {
        key: request.change.0.clone(),
        description: request.description.clone(),
        base: request.base.clone(),
        head: request.head.clone(),
        files: request.diff.files.len(),
        additions,
        deletions,
    }
}

/// What was wrong with the conversation: comments bugloop could not read, what publishing ran
/// into, and markers in comments by others (ignored, so they cannot steer bugloop).
fn conversation_problems(state: &ReviewState, published_problems: &[String]) -> Vec<String> {
    state
        .problems
        .iter()
        .map(|p| format!("comment {}: {}", p.comment_id, p.message))
        .chain(published_problems.iter().cloned())
        .chain((state.ignored_untrusted > 0).then(|| {
            format!(
                "{} comment(s) by others carried bugloop markers or state blocks and were ignored",
                state.ignored_untrusted
            )
        }))
        .collect()
}

/// Writes the summary comment made from the report (unless the head moved or nothing is new),
/// then removes duplicate comments that runs at the same time may have left.
async fn publish_summary(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    report: &ReviewReport,
    comments: &[Comment],
    (head_moved, mut added): (bool, Vec<String>),
) -> Result<(), ForgeError> {
    if env.forge.publishes() {
        env.progress.event(ProgressEvent::Publishing);
    }
    // The same head reviewed again with nothing new to say: the summary already says it all
    // (rewriting it would only change its model line and counters, and cost a write).
    let nothing_new = matches!(
        &report.scope,
        ReviewedScope::Incremental { since, files, .. }
            if *since == request.head && files.is_empty()
    ) && report.findings.is_empty()
        && report.resolved.is_empty()
        && report.disputes.is_empty();
    if !head_moved && !nothing_new {
        let summary = upsert_tagged(
            env.forge,
            &request.change,
            comments,
            SUMMARY_TAG,
            &match &request.summary_footer {
                Some(footer) => format!("{}\n{footer}", summary_body(report)),
                None => summary_body(report),
            },
        )
        .await?;
        if let Upsert::Added(id) = summary {
            added.push(id);
        }
    }
    // A run at the same time, or a listing that lagged behind a write, may have left a
    // second comment for something this run added (listed again), or an earlier run did (in
    // the listing this run started from).
    if env.forge.publishes() {
        let markers = &env.settings.markers;
        if !added.is_empty() {
            settled_without_duplicates(env.forge, &request.change, markers, &added).await?;
        } else {
            remove_duplicates_in(env.forge, &request.change, markers, comments).await?;
        }
    }
    Ok(())
}

/// After adding comments (`added`, their ids): lists the conversation until all of them show
/// (a listing can lag a write by seconds), then removes duplicates. Two runs on the same push
/// that each wrote a finding before seeing the other's: the later one to settle sees both (the
/// earlier write shows no later than its own) and removes the newer, so one comment stays
/// whatever the lag. Waits at most about 15 seconds, then removes what the listing shows.
async fn settled_without_duplicates(
    forge: &dyn bugloop_forge::Forge,
    change: &bugloop_forge::ChangeKey,
    markers: &bugloop_domain::marker::MarkerSyntax,
    added: &[String],
) -> Result<usize, ForgeError> {
    let mut wait = std::time::Duration::from_millis(250);
    forge.forget_listings();
    let mut comments = forge.comments(change).await?;
    for _ in 0..6 {
        let shown = added.iter().all(|id| comments.iter().any(|c| &c.id == id));
        if shown {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
        forge.forget_listings();
        comments = forge.comments(change).await?;
    }
    remove_duplicates_in(forge, change, markers, &comments).await
}

/// Each file not reviewed for one reason once, however many of its parts it was (a large file
/// a small model is asked about in hundreds of questions, once the budget ran out), with how
/// many.
fn once_each(unreviewed: Vec<Unreviewed>) -> Vec<Unreviewed> {
    let mut counts: std::collections::HashMap<(String, String), usize> = Default::default();
    for u in &unreviewed {
        *counts
            .entry((u.path.clone(), u.reason.clone()))
            .or_default() += 1;
    }
    let mut said = std::collections::HashSet::new();
    unreviewed
        .into_iter()
        .filter(|u| said.insert((u.path.clone(), u.reason.clone())))
        .map(|u| match counts.get(&(u.path.clone(), u.reason.clone())) {
            Some(&parts) if parts > 1 => Unreviewed {
                reason: format!("{} (in {parts} of its parts)", u.reason),
                ..u
            },
            _ => u,
        })
        .collect()
}

/// What the model was asked: the planned sessions or a small model's questions, and the files
/// it was shown.
fn asked(brief: &Brief) -> ModelAsked {
    let mut shown: Vec<&str> = brief
        .plan
        .batches
        .iter()
        .flat_map(|b| b.files.iter().map(String::as_str))
        .collect();
    shown.sort_unstable();
    shown.dedup();
    ModelAsked {
        kind: if brief.questions {
            "questions"
        } else {
            "review"
        }
        .to_owned(),
        calls: brief.plan.batches.len(),
        files_shown: shown.len(),
        left_to_analyzers: brief.plan.left_to_analyzers.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_not_reviewed_in_many_parts_is_said_once_with_how_many() {
        let entry = |path: &str, reason: &str| Unreviewed {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let mut unreviewed = vec![entry("huge.py", "budget exhausted"); 532];
        unreviewed.insert(1, entry("b.py", "the model failed"));
        unreviewed.push(entry("huge.py", "the model failed"));
        assert_eq!(
            once_each(unreviewed),
            [
                entry("huge.py", "budget exhausted (in 532 of its parts)"),
                entry("b.py", "the model failed"),
                entry("huge.py", "the model failed"),
            ]
        );
    }
}
