//! Stage 6 of a review: the conversation is brought up to date: a comment per new finding (a line
//! comment where its line is in the diff, else in the conversation; upserted by marker, so re-runs
//! never repeat one), rediscovered findings' comments refreshed, resolved threads flipped, and the
//! list of findings over the comment limit. A dry run goes through the same steps on a
//! [`bugloop_forge::recording::RecordingForge`]: nothing is written and the report says "not
//! published".

use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding::Head;
use bugloop_domain::thread::{Comment, ThreadStatus};
use bugloop_forge::{ChangeKey, Forge, ForgeError, LineAnchor, Upsert};
use bugloop_report::review::{
    CommentAction, OverflowInfo, Placement, PublishedFinding, ResolvedFinding,
};
use std::collections::HashMap;

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::Conversation;
use super::filtering::Filtered;
use crate::env::LoopEnv;
use crate::head::HeadTree;
use crate::publish::{
    OVERFLOW_TAG, find_tagged, finding_body, overflow_body, overflow_cleared_body,
};

/// What the conversation shows after publishing.
pub(super) struct Published {
    /// Findings published or updated by this run, highest score first.
    pub findings: Vec<PublishedFinding>,
    pub resolved: Vec<ResolvedFinding>,
    pub overflow: OverflowInfo,
}

/// A dry run reports every finding as not published, whatever its recorded write was.
fn shown(publishing: bool, action: CommentAction) -> CommentAction {
    if publishing {
        action
    } else {
        CommentAction::NotPublished
    }
}

pub(super) async fn publish(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
    brief: &Brief,
    filtered: &mut Filtered<'_>,
) -> Result<Published, ForgeError> {
    let publishing = env.forge.publishes();
    let markers = &env.settings.markers;
    let (comments, state) = (&conversation.comments, &conversation.state);
    let comment_limit = brief.comment_limit;
    let placement_of = |finding: &Finding| match (&finding.file, finding.line) {
        (Some(file), Some(line)) if filtered.head.in_diff(file, line) == Some(true) => {
            Placement::Line
        }
        _ => Placement::Summary,
    };
    let by_finding = state.by_finding();
    let mut published = Vec::new();
    for finding in filtered.publish.drain(..) {
        let placement = placement_of(&finding);
        let body = finding_body(&finding, markers, false);
        let anchor = anchor_for(&finding, placement, &request.head);
        let upsert = env
            .forge
            .upsert_by_marker(
                &request.change,
                markers,
                &finding.id,
                &body,
                anchor.as_ref(),
            )
            .await?;
        let action = shown(
            publishing,
            match upsert {
                Upsert::Added => CommentAction::Added,
                Upsert::Updated => CommentAction::Updated,
                Upsert::Unchanged => CommentAction::Unchanged,
            },
        );
        published.push(published_finding(
            &finding,
            placement,
            action,
            None,
            &filtered.head,
            &filtered.notes,
        ));
    }
    let mut rediscovered_ids = Vec::new();
    for again in filtered.rediscovered.drain(..) {
        let mut finding = again.finding;
        let reported_as = finding.id.as_str().to_owned();
        finding.id = again.existing.clone();
        rediscovered_ids.push(again.existing.clone());
        let placement = by_finding
            .get(&again.existing)
            .map_or(Placement::Summary, |t| {
                if t.kind == bugloop_domain::thread::CommentKind::Review {
                    Placement::Line
                } else {
                    Placement::Summary
                }
            });
        let action = match by_finding.get(&again.existing) {
            Some(thread) => {
                let body = finding_body(&finding, markers, false);
                match comments.iter().find(|c| c.id == thread.id) {
                    Some(root) if root.body == body => CommentAction::Unchanged,
                    Some(root) => {
                        env.forge
                            .update_comment(&request.change, root, &body)
                            .await?;
                        CommentAction::Updated
                    }
                    None => CommentAction::Unchanged,
                }
            }
            None => CommentAction::NotPublished,
        };
        let action = shown(publishing, action);
        published.push(published_finding(
            &finding,
            placement,
            action,
            Some(reported_as),
            &filtered.head,
            &filtered.notes,
        ));
    }
    published.sort_by_key(|p| std::cmp::Reverse(p.finding.score));

    let mut resolved = Vec::new();
    for (id, reason) in &filtered.resolutions {
        let id = FindingId::new(id);
        // A finding reported again in this same run is evidently not fixed.
        if rediscovered_ids.contains(&id) {
            continue;
        }
        let Some(thread) = by_finding.get(&id) else {
            continue;
        };
        if thread.status == ThreadStatus::Resolved {
            continue;
        }
        if let Some(root) = comments.iter().find(|c| c.id == thread.id) {
            crate::publish::resolve_thread(env.forge, &request.change, markers, root, &id, reason)
                .await?;
        }
        resolved.push(ResolvedFinding {
            id: id.as_str().to_owned(),
            title: thread.title.clone(),
            reason: reason.clone(),
        });
    }

    let overflow_info = OverflowInfo {
        count: filtered.overflow.count,
        titles: filtered.overflow.titles.clone(),
    };
    let overflow_text = if filtered.overflow.count > 0 {
        Some(overflow_body(
            filtered.overflow.count,
            &filtered.overflow.titles,
            comment_limit,
        ))
    } else {
        // A list left by an earlier run would otherwise claim findings that now have comments.
        find_tagged(comments, OVERFLOW_TAG).map(|_| overflow_cleared_body(comment_limit))
    };
    if let Some(body) = overflow_text {
        upsert_tagged(env.forge, &request.change, comments, OVERFLOW_TAG, &body).await?;
    }
    Ok(Published {
        findings: published,
        resolved,
        overflow: overflow_info,
    })
}

fn anchor_for(finding: &Finding, placement: Placement, head: &str) -> Option<LineAnchor> {
    match (placement, &finding.file, finding.line) {
        (Placement::Line, Some(path), Some(line)) => Some(LineAnchor {
            path: path.clone(),
            line,
            commit: head.to_owned(),
        }),
        _ => None,
    }
}

fn published_finding(
    finding: &Finding,
    placement: Placement,
    action: CommentAction,
    rediscovered_as: Option<String>,
    head: &HeadTree<'_>,
    notes: &HashMap<FindingId, String>,
) -> PublishedFinding {
    let code = match (&finding.file, finding.line) {
        (Some(file), Some(line)) => head.line(file, line),
        _ => None,
    };
    PublishedFinding {
        severity: finding.severity(),
        priority: finding.priority(),
        placement,
        action,
        rediscovered_as,
        code,
        note: notes.get(&finding.id).cloned(),
        finding: finding.clone(),
    }
}

pub(super) async fn upsert_tagged(
    forge: &dyn Forge,
    change: &ChangeKey,
    comments: &[Comment],
    tag: &str,
    body: &str,
) -> Result<(), ForgeError> {
    match find_tagged(comments, tag) {
        Some(existing) if existing.body == body => Ok(()),
        Some(existing) => forge.update_comment(change, existing, body).await,
        None => forge.add_comment(change, body, None).await.map(|_| ()),
    }
}
