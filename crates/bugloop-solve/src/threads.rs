//! The draft's unresolved threads: bugloop's own findings, and the line comments of reviewers
//! who may change the repository (people and review bots with write access) whose thread is not
//! resolved, and those of the external reviewer's accounts (`agents.reviewer.logins`, which
//! need not be collaborators: an App's review bot is not one). A round addresses them all, and
//! the gate waits for none to be left. Anyone may
//! comment on a public pull request: a stranger's comment does not steer the code bugloop
//! writes, nor hold the draft back.

use std::collections::HashMap;

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

pub(super) async fn open<'c>(
    forge: &dyn bugloop_forge::Forge,
    comments: &'c [Comment],
    state: &ReviewState,
    reviewers: &[String],
) -> Result<Vec<OpenThread<'c>>, bugloop_forge::ForgeError> {
    // The external reviewer's accounts start threads a round addresses; their replies are not
    // instructions (a stranger can ask a review bot to answer in a thread).
    let configured = |author: &str| reviewers.iter().any(|r| r.eq_ignore_ascii_case(author));
    // Whether each author may change the repository, asked once per author.
    let mut may_write: HashMap<&'c str, bool> = HashMap::new();
    for c in comments.iter().filter(|c| !c.by_bugloop) {
        if !may_write.contains_key(c.author.as_str()) && !configured(&c.author) {
            let writer = forge.permission(&c.author).await?.may_modify_files();
            may_write.insert(&c.author, writer);
        }
    }
    let writer = |c: &Comment| c.by_bugloop || may_write.get(c.author.as_str()) == Some(&true);
    let starter = |c: &Comment| writer(c) || configured(&c.author);
    // What writers answered in a thread; a stranger's reply is not an instruction either.
    let replies = |root: &str| -> Vec<&'c str> {
        comments
            .iter()
            .filter(|c| !c.by_bugloop && c.in_reply_to.as_deref() == Some(root) && writer(c))
            .map(|c| c.body.as_str())
            .collect()
    };
    let mut open: Vec<OpenThread<'c>> = bugloop_loops::act::open_threads(state)
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
                    && starter(c)
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
    Ok(open)
}
