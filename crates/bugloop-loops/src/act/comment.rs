//! `on_comment`: what a developer's comment asks for (its intent, and whether its author may
//! have files changed), then the job that does it, or a dispute when it answers a finding.

use bugloop_domain::thread::{Comment, ReviewState, ThreadState, ThreadStatus};
use bugloop_forge::{ChangeKey, Permission};
use bugloop_report::act::{ActReport, ChosenBy, Intent};

use crate::comment_bodies::info_reply;
use crate::env::LoopEnv;
use crate::intent::{Classified, OpenFinding, classify};

use super::ask::ask;
use super::fix::fix;
use super::request::do_request;
use super::{ActError, Targets, open_threads};

/// A comment arrived (on GitHub: a webhook; locally: `bugloop comment`). Classify it, check the
/// author's permission, and fix, do, dispute or answer.
pub async fn on_comment(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comment: &Comment,
) -> Result<ActReport, ActError> {
    // Who may have files changed is known before any model call.
    let permission = env.forge.permission(&comment.author).await?;
    let allowed = permission.may_modify_files();
    let (comments, state) = env.conversation(change).await?;
    let open_findings = open_findings(&state);
    let parent_thread = parent_thread(&state, comment);
    let Classified { intent, by } =
        classify_comment(env, comment, allowed, parent_thread, &open_findings).await?;
    // Asked to have files changed by someone who may not: answered instead.
    let refused = matches!(intent, Intent::Fix(_) | Intent::Do) && !allowed;
    let mut report = match (&intent, allowed) {
        // Asked to fix when nothing is open (a fix landed just before, two people asked at
        // once): an answer, not a failure.
        (Intent::Fix(ids), true) => {
            // The ids were open when the comment was read; any resolved since are left out.
            let targets = Targets::StillOpen(ids.clone());
            let report = fix(env, change, &targets, Some(&comment.body)).await?;
            // A request in a finding's thread is answered there by the fix of that finding;
            // one in the conversation, or whose finding was not in the fix (resolved meanwhile),
            // gets the outcome as its answer.
            let fixed_here = parent_thread
                .and_then(|t| t.finding_id.as_ref())
                .is_some_and(|id| matches!(&report.action, Intent::Fix(built) if built.iter().any(|b| b == id.as_str())));
            if !fixed_here || report.build.is_none() {
                tell_outcome(env, change, comment, &report).await?;
            }
            report
        }
        (Intent::Do, true) => {
            let report = do_request(env, &comment.body).await?;
            tell_outcome(env, change, comment, &report).await?;
            report
        }
        (Intent::Acknowledge, _) => {
            ActReport::nothing_built(Intent::Acknowledge, by, "nothing to do")
        }
        (Intent::Think, _)
            if parent_thread.is_some_and(|t| t.status != ThreadStatus::Resolved)
                && !comment.body.trim_end().ends_with('?') =>
        {
            // A statement in a finding's thread is the developer disputing it.
            let thread = parent_thread.ok_or_else(|| ActError::Invalid("no thread".to_owned()))?;
            dispute(env, change, thread, by).await?
        }
        _ => {
            let refused = refused.then_some(permission);
            answer(env, change, comment, &comments, parent_thread, refused, by).await?
        }
    };
    report.chosen_by = by;
    if refused {
        report.message = format!(
            "{} (not permitted to change files: answered instead)",
            report.message
        );
    }
    Ok(report)
}

/// The open findings a comment may be about, as the classifier is told them.
fn open_findings(state: &ReviewState) -> Vec<OpenFinding> {
    open_threads(state)
        .iter()
        .filter_map(|t| {
            Some(OpenFinding {
                id: t.finding_id.as_ref()?.as_str().to_owned(),
                title: t.title.clone(),
                description: t.body.clone(),
            })
        })
        .collect()
}

/// The thread the comment is in, if any (not the comment itself when it opened a thread).
fn parent_thread<'a>(state: &'a ReviewState, comment: &Comment) -> Option<&'a ThreadState> {
    comment
        .thread_id
        .as_ref()
        .and_then(|thread| {
            state
                .threads
                .iter()
                .find(|t| t.forge_thread_id.as_ref() == Some(thread))
        })
        .filter(|t| t.id != comment.id)
}

/// What the comment asks for, in the light of the finding whose thread it is in.
async fn classify_comment(
    env: &LoopEnv<'_>,
    comment: &Comment,
    allowed: bool,
    parent_thread: Option<&ThreadState>,
    open_findings: &[OpenFinding],
) -> Result<Classified, ActError> {
    // The finding whose thread the comment is in, if any.
    let parent = parent_thread.and_then(|t| {
        t.finding_id
            .as_ref()
            .map(|id| (id.as_str().to_owned(), t.body.clone()))
    });
    let parent_ref = parent
        .as_ref()
        .map(|(id, body)| (id.as_str(), body.as_str()));
    // Someone who may not write cannot have anything fixed or done: their comment is a
    // question or a dispute, which the rules tell apart without spending the model.
    Ok(if allowed {
        classify(env, &comment.body, parent_ref, open_findings).await?
    } else {
        Classified {
            intent: crate::intent::by_rules(
                &comment.body,
                parent_ref.map(|(id, _)| id),
                open_findings,
            )
            .unwrap_or(Intent::Think),
            by: ChosenBy::Rules,
        }
    })
}

/// Settles the developer's dispute of the finding in `thread`.
async fn dispute(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    thread: &ThreadState,
    by: ChosenBy,
) -> Result<ActReport, ActError> {
    let id = thread
        .finding_id
        .clone()
        .ok_or_else(|| ActError::Invalid("no finding".to_owned()))?;
    let outcome = crate::disputes::settle_dispute(env, change, &id).await?;
    let message = format!("dispute: {} ({})", outcome.decision_label(), outcome.status);
    Ok(ActReport {
        answer: Some(outcome.reasoning.clone()),
        resolved: if outcome.status == ThreadStatus::Resolved {
            vec![id.as_str().to_owned()]
        } else {
            Vec::new()
        },
        ..ActReport::nothing_built(Intent::Think, by, message)
    })
}

/// Answers the comment in its thread, or in the conversation. `refused` is the author's
/// permission when they asked for a change they may not have made: the answer says so.
async fn answer(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comment: &Comment,
    comments: &[Comment],
    parent_thread: Option<&ThreadState>,
    refused: Option<Permission>,
    by: ChosenBy,
) -> Result<ActReport, ActError> {
    let mut answer = ask(env, change, &comment.body).await?;
    if let Some(permission) = refused {
        answer = format!(
            "{answer}\n\n_{} may not have bugloop change files here ({permission:?} permission); this is an answer only._",
            comment.author
        );
    }
    let reply_to = parent_thread
        .and_then(|t| comments.iter().find(|c| c.id == t.id))
        .unwrap_or(comment);
    let markers = &env.settings.markers;
    env.forge
        .reply(change, reply_to, &info_reply(markers, &answer))
        .await?;
    Ok(ActReport {
        answer: Some(answer),
        ..ActReport::nothing_built(Intent::Think, by, "answered")
    })
}

/// Answers the comment with what its request came to.
async fn tell_outcome(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comment: &Comment,
    report: &ActReport,
) -> Result<(), ActError> {
    let body = info_reply(
        &env.settings.markers,
        &format!("bugloop: {}", report.message),
    );
    env.forge.reply(change, comment, &body).await?;
    Ok(())
}
