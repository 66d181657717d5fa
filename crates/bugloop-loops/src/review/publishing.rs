//! Stage 7 of a review: the conversation is brought up to date: a comment per new finding (a line
//! comment where its line is in the diff, else in the conversation; upserted by marker, so re-runs
//! never repeat one), rediscovered findings' comments refreshed, resolved threads flipped, and the
//! list of findings over the comment limit. A dry run goes through the same steps on a
//! [`bugloop_forge::recording::RecordingForge`]: nothing is written and the report says "not
//! published".

use bugloop_domain::filter::{Overflow, Rediscovered};
use bugloop_domain::finding::{Category, Finding, FindingId};
use bugloop_domain::grounding::Head;
use bugloop_domain::thread::{Comment, CommentKind, ThreadStatus};
use bugloop_forge::{ChangeKey, Forge, ForgeError, LineAnchor, Upsert};
use bugloop_report::review::{
    CommentAction, FindingProof, OverflowInfo, Placement, PublishedFinding, ResolvedFinding,
};
use std::collections::{BTreeMap, HashMap};

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::Conversation;
use super::filtering::Filtered;
use super::touched::Relocation;
use crate::comment_bodies::{
    OVERFLOW_TAG, ResolvedBy, find_tagged, finding_body, overflow_body, overflow_cleared_body,
    relocated_body, reopened_reply, resolve_thread,
};
use crate::env::LoopEnv;
use crate::head::HeadTree;

/// What the conversation shows after publishing.
pub(super) struct Published {
    /// Findings published or updated by this run, highest score first.
    pub findings: Vec<PublishedFinding>,
    pub resolved: Vec<ResolvedFinding>,
    pub overflow: OverflowInfo,
    /// The change's head moved during the review: nothing was written (not even the summary).
    pub head_moved: bool,
    /// What went wrong without stopping the run (a thread the forge would not mark resolved).
    pub problems: Vec<String>,
    /// The ids of the finding comments this run added.
    pub added: Vec<String>,
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
    // The head was pinned when the review started: findings about an older head are not
    // published on a newer one (their lines may be wrong); the next review covers the new head.
    if let Some(moved) = moved_head(env, request).await? {
        filtered.record.errors.push(moved);
        let findings = std::mem::take(&mut filtered.publish)
            .iter()
            .chain(filtered.rediscovered.iter().map(|r| &r.finding))
            .map(|finding| {
                published_finding(
                    finding,
                    Placement::Summary,
                    CommentAction::NotPublished,
                    None,
                    &filtered.head,
                    &filtered.notes,
                )
            })
            .collect();
        return Ok(Published {
            findings,
            resolved: Vec::new(),
            overflow: OverflowInfo::default(),
            head_moved: true,
            problems: Vec::new(),
            added: Vec::new(),
        });
    }
    let writer = Writer::new(env, request, conversation);
    let mut published = Vec::new();
    for finding in std::mem::take(&mut filtered.publish) {
        published.push(writer.new_finding(finding, filtered).await?);
    }
    let mut rediscovered_ids = Vec::new();
    let mut reopen_problems = Vec::new();
    for again in std::mem::take(&mut filtered.rediscovered) {
        rediscovered_ids.push(again.existing.clone());
        let (finding, problem) = writer.rediscovered(again, filtered).await?;
        published.push(finding);
        reopen_problems.extend(problem);
    }
    published.sort_by_key(|p| std::cmp::Reverse(p.finding.score));
    writer
        .relocate(&filtered.relocations, &rediscovered_ids)
        .await?;
    let (resolved, mut problems) = writer
        .resolve(&filtered.resolutions, &rediscovered_ids)
        .await?;
    problems.extend(reopen_problems);
    let overflow = writer
        .overflow(&filtered.overflow, brief.comment_limit)
        .await?;
    let added = std::mem::take(&mut *writer.lock_added());
    Ok(Published {
        findings: published,
        resolved,
        overflow,
        head_moved: false,
        problems,
        added,
    })
}

/// What publishing a part's findings came to: what was published before any error, the ids
/// of the comments added, and the error that stopped it.
#[derive(Debug, Default)]
pub(super) struct PublishedEarly {
    pub published: Vec<PublishedFinding>,
    pub added: Vec<String>,
    pub error: Option<String>,
}

/// A part's findings published as the part ends (`findings`: what [`super::filtering::early`]
/// kept), unless the change's head moved: then nothing, and the review's end says why.
pub(super) async fn publish_early(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
    findings: Vec<Finding>,
    head: &HeadTree<'_>,
    notes: &HashMap<FindingId, String>,
) -> PublishedEarly {
    let mut outcome = PublishedEarly::default();
    if findings.is_empty() {
        return outcome;
    }
    match moved_head(env, request).await {
        Ok(None) => {}
        Ok(Some(_)) => return outcome,
        Err(error) => {
            outcome.error = Some(error.to_string());
            return outcome;
        }
    }
    let writer = Writer::new(env, request, conversation);
    for finding in findings {
        match writer.new_finding_at(finding, head, notes, None).await {
            Ok(published) => outcome.published.push(published),
            Err(error) => {
                outcome.error = Some(error.to_string());
                break;
            }
        }
    }
    outcome.added = std::mem::take(&mut *writer.lock_added());
    outcome
}

/// Why nothing may be published: the change's head is no longer the reviewed commit.
async fn moved_head(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
) -> Result<Option<String>, ForgeError> {
    let reviewed = &request.head;
    // Uncommitted changes have no head to move; a clean room reviews a copy of its own.
    let is_commit =
        matches!(reviewed.len(), 40 | 64) && reviewed.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_commit || request.clean_room {
        return Ok(None);
    }
    Ok(match env.forge.head(&request.change).await? {
        Some(now) if &now != reviewed => Some(format!(
            "the change's head moved from {} to {} during the review: nothing was published \
             at its end, the next review covers {}",
            bugloop_git::short(reviewed),
            bugloop_git::short(&now),
            bugloop_git::short(&now)
        )),
        _ => None,
    })
}

/// Writes one review's comments to the conversation.
struct Writer<'w, 'e> {
    env: &'w LoopEnv<'e>,
    request: &'w ReviewRequest,
    conversation: &'w Conversation,
    /// False for a dry run: its actions are reported as not published.
    publishing: bool,
    /// The ids of the comments this run added.
    added: std::sync::Mutex<Vec<String>>,
}

impl<'w, 'e> Writer<'w, 'e> {
    fn new(
        env: &'w LoopEnv<'e>,
        request: &'w ReviewRequest,
        conversation: &'w Conversation,
    ) -> Self {
        Writer {
            env,
            request,
            conversation,
            publishing: env.forge.publishes(),
            added: std::sync::Mutex::default(),
        }
    }

    fn lock_added(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.added
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new finding's comment, upserted by its marker: a line comment where its line is in the
    /// diff, else in the conversation.
    async fn new_finding(
        &self,
        finding: Finding,
        filtered: &Filtered<'_>,
    ) -> Result<PublishedFinding, ForgeError> {
        let proof = filtered.proofs.iter().find(|p| p.id == finding.id.as_str());
        self.new_finding_at(finding, &filtered.head, &filtered.notes, proof)
            .await
    }

    /// [`Writer::new_finding`] with the code at head, grounding's notes and the proof, if any.
    async fn new_finding_at(
        &self,
        finding: Finding,
        head: &HeadTree<'_>,
        notes: &HashMap<FindingId, String>,
        proof: Option<&FindingProof>,
    ) -> Result<PublishedFinding, ForgeError> {
        let markers = &self.env.settings.markers;
        let placement = match (&finding.file, finding.line) {
            (Some(file), Some(line)) if head.in_diff(file, line) == Some(true) => Placement::Line,
            _ => Placement::Summary,
        };
        let body = crate::comment_bodies::proven_finding_body(&finding, markers, proof);
        let anchor = anchor_for(&finding, placement, &self.request.head, head);
        let forge = self.env.forge;
        let known = &self.conversation.comments;
        let change = &self.request.change;
        let (upsert, placement) = match forge
            .upsert_by_marker(change, markers, &finding.id, &body, anchor.as_ref(), known)
            .await
        {
            // The forge will not anchor it there (GitHub: a line outside its view of the diff):
            // one refused line never loses the finding, it goes to the conversation instead.
            Err(error) if anchor.is_some() && error.refuses_anchor() => (
                forge
                    .upsert_by_marker(change, markers, &finding.id, &body, None, known)
                    .await?,
                Placement::Summary,
            ),
            other => (other?, placement),
        };
        let action = shown(
            self.publishing,
            match upsert {
                Upsert::Added(id) => {
                    self.lock_added().push(id);
                    CommentAction::Added
                }
                Upsert::Updated => CommentAction::Updated,
                Upsert::Unchanged => CommentAction::Unchanged,
            },
        );
        Ok(published_finding(
            &finding, placement, action, None, head, notes,
        ))
    }

    /// A finding the conversation already holds: it keeps its id and its comment is refreshed.
    async fn rediscovered(
        &self,
        again: Rediscovered,
        filtered: &Filtered<'_>,
    ) -> Result<(PublishedFinding, Option<String>), ForgeError> {
        let by_finding = self.conversation.state.by_finding();
        let mut finding = again.finding;
        let reported_as = finding.id.as_str().to_owned();
        finding.id = again.existing.clone();
        let thread = by_finding.get(&again.existing);
        // Said again in other words, a finding keeps the weight it was raised with, and its
        // kind: a security finding stays one, and another kind changes only to security, so
        // code scanning keeps one alert for it under its rule (a SARIF result's rule is its
        // category).
        if let Some(raised) = thread.and_then(|t| t.score)
            && raised > finding.score
        {
            finding.score = raised;
        }
        let filed = thread
            .and_then(|t| t.recorded("category"))
            .and_then(|v| serde_json::from_value::<Category>(v.clone()).ok());
        if let Some(filed) = filed
            && (filed == Category::Security || finding.category != Category::Security)
        {
            finding.category = filed;
        }
        let placement = thread.map_or(Placement::Summary, |t| {
            if t.kind == CommentKind::Review {
                Placement::Line
            } else {
                Placement::Summary
            }
        });
        let mut problem = None;
        let action = match thread {
            Some(thread) => {
                let body = finding_body(&finding, &self.env.settings.markers, false);
                let root = self
                    .conversation
                    .comments
                    .iter()
                    .find(|c| c.id == thread.id);
                match root {
                    Some(root) if again.reopens => {
                        problem = self
                            .reopen(root, &body, thread.forge_thread_id.as_deref())
                            .await?;
                        CommentAction::Reopened
                    }
                    Some(root) if root.body == body => CommentAction::Unchanged,
                    Some(root) => {
                        self.env
                            .forge
                            .update_comment(&self.request.change, root, &body)
                            .await?;
                        CommentAction::Updated
                    }
                    None => CommentAction::Unchanged,
                }
            }
            None => CommentAction::NotPublished,
        };
        let published = published_finding(
            &finding,
            placement,
            shown(self.publishing, action),
            Some(reported_as),
            &filtered.head,
            &filtered.notes,
        );
        Ok((published, problem))
    }

    /// A finding resolved when its code changed, found again (the fix was reverted, or the
    /// problem came back): its comment says it is open again, its thread says why and is
    /// reopened. The same thread, never a second comment.
    async fn reopen(
        &self,
        root: &Comment,
        body: &str,
        forge_thread: Option<&str>,
    ) -> Result<Option<String>, ForgeError> {
        let (forge, change) = (self.env.forge, &self.request.change);
        if root.body != body {
            forge.update_comment(change, root, body).await?;
        }
        let why = format!(
            "The problem is in the code again at {}: this finding is open again.",
            bugloop_git::short(&self.request.head)
        );
        forge
            .reply(
                change,
                root,
                &reopened_reply(&self.env.settings.markers, &why),
            )
            .await?;
        // As when resolving, the forge's own flag is a convenience: a refusal is reported.
        if let Some(thread) = forge_thread
            && let Err(error) = forge.set_thread_resolved(change, thread, false).await
        {
            return Ok(Some(format!(
                "finding {} is open again, but its thread could not be reopened: {error}",
                root.id
            )));
        }
        Ok(None)
    }

    /// Findings that stay open but whose code moved now point where it is; one reported again
    /// in this run is where its new report put it (its comment was rewritten from that report,
    /// and the place it had before must not overwrite it).
    async fn relocate(
        &self,
        relocations: &[Relocation],
        rediscovered: &[FindingId],
    ) -> Result<(), ForgeError> {
        let by_finding = self.conversation.state.by_finding();
        for moved in relocations {
            if rediscovered.contains(&moved.id) {
                continue;
            }
            let root = by_finding.get(&moved.id).and_then(|thread| {
                self.conversation
                    .comments
                    .iter()
                    .find(|c| c.id == thread.id)
            });
            let Some(root) = root else {
                continue;
            };
            if let Some(body) = relocated_body(&root.body, &moved.file, moved.line)
                && body != root.body
            {
                self.env
                    .forge
                    .update_comment(&self.request.change, root, &body)
                    .await?;
            }
        }
        Ok(())
    }

    /// Open findings the model resolved, or whose code is gone; one reported again in this same
    /// run is evidently not fixed.
    async fn resolve(
        &self,
        resolutions: &BTreeMap<String, String>,
        rediscovered: &[FindingId],
    ) -> Result<(Vec<ResolvedFinding>, Vec<String>), ForgeError> {
        let by_finding = self.conversation.state.by_finding();
        let mut resolved = Vec::new();
        let mut problems = Vec::new();
        for (id, reason) in resolutions {
            let id = FindingId::new(id);
            if rediscovered.contains(&id) {
                continue;
            }
            let Some(thread) = by_finding.get(&id) else {
                continue;
            };
            if thread.status == ThreadStatus::Resolved {
                continue;
            }
            let root = self
                .conversation
                .comments
                .iter()
                .find(|c| c.id == thread.id);
            if let Some(root) = root {
                // The reply names the commit it was resolved at, as every resolution by code
                // does: a copy of it later in the thread is then known as a copy.
                let at = bugloop_git::short(&self.request.head);
                let said = if reason.contains(at) {
                    reason.clone()
                } else {
                    format!("{} (at {at})", reason.trim())
                };
                // The model's words never read as `bugloop fix`'s resolution, which names the
                // commit a later review checks the branch still holds.
                let said = said.replace(bugloop_domain::thread::FIXED_IN, "Fixed in the commit ");
                let note = resolve_thread(
                    self.env.forge,
                    &self.request.change,
                    &self.env.settings.markers,
                    root,
                    (&id, ResolvedBy::Code),
                    &said,
                )
                .await?;
                problems.extend(note);
            }
            resolved.push(ResolvedFinding {
                id: id.as_str().to_owned(),
                title: thread.title.clone(),
                reason: reason.clone(),
            });
        }
        Ok((resolved, problems))
    }

    /// The list of findings over the comment limit; when none is over it any more, an earlier
    /// list is replaced (it would otherwise claim findings that now have comments).
    async fn overflow(
        &self,
        overflow: &Overflow,
        comment_limit: usize,
    ) -> Result<OverflowInfo, ForgeError> {
        let comments = &self.conversation.comments;
        let text = if overflow.count > 0 {
            Some(overflow_body(
                overflow.count,
                &overflow.titles,
                comment_limit,
            ))
        } else {
            find_tagged(comments, OVERFLOW_TAG).map(|_| overflow_cleared_body(comment_limit))
        };
        if let Some(body) = text {
            upsert_tagged(
                self.env.forge,
                &self.request.change,
                comments,
                OVERFLOW_TAG,
                &body,
            )
            .await?;
        }
        Ok(OverflowInfo {
            count: overflow.count,
            titles: overflow.titles.clone(),
        })
    }
}

fn anchor_for(
    finding: &Finding,
    placement: Placement,
    commit: &str,
    head: &HeadTree<'_>,
) -> Option<LineAnchor> {
    match (placement, &finding.file, finding.line) {
        (Placement::Line, Some(path), Some(line)) => Some(LineAnchor {
            path: path.clone(),
            line,
            // A range only when its end is in the diff too, as its start is.
            end_line: finding
                .end_line
                .filter(|end| *end > line && head.in_diff(path, *end) == Some(true)),
            commit: commit.to_owned(),
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
    // An analyzer's finding shows its evidence, the line up to any key on it: a report never
    // repeats a committed key.
    let code = match (&finding.file, finding.line) {
        (Some(_), Some(_)) if finding.source.is_some() => finding.evidence.clone(),
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
) -> Result<Upsert, ForgeError> {
    let existing = find_tagged(comments, tag);
    bugloop_forge::put_comment(forge, change, existing, body, None).await
}
