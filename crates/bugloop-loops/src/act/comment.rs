//! `on_comment`: what a developer's comment asks for (its intent, and whether its author may
//! have files changed), then the job that does it, or a dispute when it answers a finding.

use bugloop_domain::thread::{Comment, ThreadStatus};
use bugloop_forge::ChangeKey;
use bugloop_report::act::{ActReport, Intent};

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
    let open = open_threads(&state);
    let open_findings: Vec<OpenFinding> = open
        .iter()
        .filter_map(|t| {
            Some(OpenFinding {
                id: t.finding_id.as_ref()?.as_str().to_owned(),
                title: t.title.clone(),
                description: t.body.clone(),
            })
        })
        .collect();
    // The finding whose thread the comment is in, if any.
    let parent_thread = comment
        .thread_id
        .as_ref()
        .and_then(|thread| {
            state
                .threads
                .iter()
                .find(|t| t.forge_thread_id.as_ref() == Some(thread))
        })
        .filter(|t| t.id != comment.id);
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
    let Classified { intent, by } = if allowed {
        classify(env, &comment.body, parent_ref, &open_findings).await?
    } else {
        Classified {
            intent: crate::intent::by_rules(
                &comment.body,
                parent_ref.map(|(id, _)| id),
                &open_findings,
            )
            .unwrap_or(Intent::Think),
            by: bugloop_report::act::ChosenBy::Rules,
        }
    };
    let mut report = match (&intent, allowed) {
        (Intent::Fix(ids), true) => {
            let report = fix(env, change, &Targets::Ids(ids.clone()), Some(&comment.body)).await?;
            // A request in a finding's thread is answered there by the fix itself; one in the
            // conversation gets the outcome as its answer.
            if parent_thread.is_none() {
                tell_outcome(env, change, comment, &report).await?;
            }
            report
        }
        (Intent::Do, true) => {
            let report = do_request(env, &comment.body).await?;
            tell_outcome(env, change, comment, &report).await?;
            report
        }
        (Intent::Acknowledge, _) => ActReport {
            action: Intent::Acknowledge,
            chosen_by: by,
            build: None,
            landing: None,
            answer: None,
            resolved: Vec::new(),
            message: "nothing to do".to_owned(),
        },
        (Intent::Think, _)
            if parent_thread.is_some_and(|t| t.status != ThreadStatus::Resolved)
                && !comment.body.trim_end().ends_with('?') =>
        {
            // A statement in a finding's thread is the developer disputing it.
            let thread = parent_thread.ok_or_else(|| ActError::Invalid("no thread".to_owned()))?;
            let id = thread
                .finding_id
                .clone()
                .ok_or_else(|| ActError::Invalid("no finding".to_owned()))?;
            let outcome = crate::disputes::settle_dispute(env, change, &id).await?;
            ActReport {
                action: Intent::Think,
                chosen_by: by,
                build: None,
                landing: None,
                answer: Some(outcome.reasoning.clone()),
                resolved: if outcome.status == ThreadStatus::Resolved {
                    vec![id.as_str().to_owned()]
                } else {
                    Vec::new()
                },
                message: format!("dispute: {} ({})", outcome.decision_label(), outcome.status),
            }
        }
        _ => {
            let mut answer = ask(env, change, &comment.body).await?;
            if matches!(intent, Intent::Fix(_) | Intent::Do) && !allowed {
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
            ActReport {
                action: Intent::Think,
                chosen_by: by,
                build: None,
                landing: None,
                answer: Some(answer),
                resolved: Vec::new(),
                message: "answered".to_owned(),
            }
        }
    };
    report.chosen_by = by;
    if !allowed && matches!(intent, Intent::Fix(_) | Intent::Do) {
        report.message = format!(
            "{} (not permitted to change files: answered instead)",
            report.message
        );
    }
    Ok(report)
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
