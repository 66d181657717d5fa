//! Stage 1 of a review: the conversation as the review reads it: its comments, the review state
//! rebuilt from them, the findings it already holds and which of them are open. A clean room (a
//! converge audit) starts from an empty conversation.

use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::finding::FindingSource;
use bugloop_domain::thread::{Comment, ReviewState, ThreadState, reconstruct};
use bugloop_forge::ForgeError;
use bugloop_report::review::TrackedFinding;

use super::ReviewRequest;
use super::touched::Relocation;
use crate::env::LoopEnv;

/// What the review knows of the conversation before it starts.
pub(super) struct Conversation {
    pub comments: Vec<Comment>,
    pub state: ReviewState,
    pub existing: Vec<ExistingFinding>,
    /// The ids of the findings still open (not resolved).
    pub open_ids: Vec<String>,
}

pub(super) async fn load(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
) -> Result<Conversation, ForgeError> {
    let comments = if request.clean_room {
        Vec::new()
    } else {
        env.forge.comments(&request.change).await?
    };
    let state = reconstruct(&comments, &env.settings.markers);
    let existing = existing_of(&state);
    let open_ids = state
        .unresolved()
        .filter_map(|t| t.finding_id.as_ref().map(|id| id.as_str().to_owned()))
        .collect();
    Ok(Conversation {
        comments,
        state,
        existing,
        open_ids,
    })
}

impl Conversation {
    /// Open findings whose code moved within its file now point where it is, as their comments
    /// will once the review relocates them: new reports are compared with them there, and the
    /// model is told that place.
    pub(super) fn follow(&mut self, shifted: &[Relocation]) {
        for moved in shifted {
            let Some(existing) = self.existing.iter_mut().find(|e| e.id == moved.id) else {
                continue;
            };
            let span = existing
                .line
                .zip(existing.end_line)
                .map(|(line, end)| end.saturating_sub(line));
            existing.line = Some(moved.line);
            existing.end_line = span.map(|span| moved.line.saturating_add(span));
            let end_line = existing.end_line;
            let thread = self
                .state
                .threads
                .iter_mut()
                .find(|t| t.finding_id.as_ref() == Some(&moved.id));
            if let Some(thread) = thread {
                thread.line = Some(moved.line);
                if let Some(extra) = thread.assessment.as_mut().map(|a| &mut a.extra) {
                    extra.insert("line".to_owned(), serde_json::json!(moved.line));
                    if let Some(end) = end_line {
                        extra.insert("end_line".to_owned(), serde_json::json!(end));
                    }
                }
            }
        }
    }
}

pub(super) fn existing_of(state: &ReviewState) -> Vec<ExistingFinding> {
    state.threads.iter().filter_map(existing_finding).collect()
}

/// A finding's thread as the finding it records: where bugloop last placed it (its state
/// block, rewritten when the finding followed its code), else where the forge anchored its
/// comment, and the code it quoted.
pub(crate) fn existing_finding(thread: &ThreadState) -> Option<ExistingFinding> {
    let id = thread.finding_id.clone()?;
    let extra = thread.assessment.as_ref().map(|a| &a.extra);
    let file = extra
        .and_then(|e| e.get("file"))
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .or_else(|| thread.file.clone());
    let line = extra
        .and_then(|e| e.get("line"))
        .and_then(serde_json::Value::as_u64)
        .and_then(|l| u32::try_from(l).ok())
        .or(thread.line);
    let end_line = extra
        .and_then(|e| e.get("end_line"))
        .and_then(serde_json::Value::as_u64)
        .and_then(|l| u32::try_from(l).ok());
    let evidence = extra
        .and_then(|e| e.get("evidence"))
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let tool_rule = extra
        .and_then(|e| e.get("source"))
        .and_then(|v| serde_json::from_value::<FindingSource>(v.clone()).ok())
        .filter(|source| !source.model)
        .map(|source| (source.tool, source.rule));
    Some(ExistingFinding {
        id,
        title: thread.title.clone(),
        description: thread
            .assessment
            .as_ref()
            .map_or_else(|| thread.body.clone(), |a| a.assessment.clone()),
        file,
        line,
        end_line,
        evidence,
        status: thread.status,
        reopenable: thread.reopenable,
        moved: false,
        tool_rule,
    })
}

pub(super) fn tracked_of(state: &ReviewState) -> Vec<TrackedFinding> {
    let existing = existing_of(state);
    state
        .threads
        .iter()
        .filter_map(|thread| {
            let id = thread.finding_id.as_ref()?;
            let place = existing.iter().find(|e| &e.id == id);
            let recorded = |key: &str| thread.recorded(key).cloned();
            Some(TrackedFinding {
                id: id.as_str().to_owned(),
                title: thread.title.clone(),
                status: thread.status,
                score: thread.score.map(|s| s.get()),
                file: place.and_then(|p| p.file.clone()),
                line: place.and_then(|p| p.line),
                category: recorded("category").and_then(|v| serde_json::from_value(v).ok()),
                source: recorded("source").and_then(|v| serde_json::from_value(v).ok()),
                description: thread.assessment.as_ref().map(|a| a.assessment.clone()),
                comment: thread.id.clone(),
            })
        })
        .collect()
}
