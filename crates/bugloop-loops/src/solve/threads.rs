//! The draft's unresolved threads, whoever opened them: bugloop's own findings, and the line
//! comments of reviewers (people, other review bots) whose thread is not resolved. A round
//! addresses them all, and the gate waits for none to be left.

use bugloop_domain::finding::FindingId;
use bugloop_domain::thread::{Comment, CommentKind, ReviewState};

/// One unresolved thread.
#[derive(Debug, Clone)]
pub(super) struct OpenThread<'c> {
    /// The finding's id, or `comment-<id>` for a reviewer's thread.
    pub id: String,
    pub finding: Option<FindingId>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub body: String,
    /// What others answered in it.
    pub replies: Vec<&'c str>,
    pub root: &'c Comment,
}

pub(super) fn open<'c>(comments: &'c [Comment], state: &ReviewState) -> Vec<OpenThread<'c>> {
    let replies = |root: &str| -> Vec<&'c str> {
        comments
            .iter()
            .filter(|c| !c.by_bugloop && c.in_reply_to.as_deref() == Some(root))
            .map(|c| c.body.as_str())
            .collect()
    };
    let mut open: Vec<OpenThread<'c>> = crate::act::open_threads(state)
        .into_iter()
        .filter_map(|thread| {
            let root = comments.iter().find(|c| c.id == thread.id)?;
            let finding = thread.finding_id.clone()?;
            Some(OpenThread {
                id: finding.as_str().to_owned(),
                finding: Some(finding),
                file: thread.file.clone(),
                line: thread.line,
                body: thread.body.clone(),
                replies: replies(&root.id),
                root,
            })
        })
        .collect();
    open.extend(
        comments
            .iter()
            .filter(|c| {
                c.kind == CommentKind::Review
                    && !c.by_bugloop
                    && c.in_reply_to.is_none()
                    && !c.thread_resolved
            })
            .map(|c| OpenThread {
                id: format!("comment-{}", c.id),
                finding: None,
                file: c.path.clone(),
                line: c.line,
                body: c.body.clone(),
                replies: replies(&c.id),
                root: c,
            }),
    );
    open
}
