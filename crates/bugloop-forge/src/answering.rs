//! A forge that marks what bugloop writes while it acts on one developer comment with a hidden
//! `<!-- bugloop:answers <comment id> -->` line, so a later run can tell that comment was
//! answered (the same event delivered twice, a job retried) even in a review thread, where a
//! reply attaches to the thread and not to the comment. The line is part of the body, so where
//! state is signed it is signed too, and it is read only from bugloop's own comments.

use async_trait::async_trait;
use bugloop_domain::thread::Comment;

use crate::{Forge, ForgeError, ForgeLayer, Write, Written};

const ANSWERS: &str = "<!-- bugloop:answers ";

/// Said of an answer to someone without write access: the rate of those answers is counted
/// from it.
const OUTSIDER: &str = " outsider";

/// The line that says `comment` is answered.
fn answers_line(comment: &str, outsider: bool) -> String {
    let whom = if outsider { OUTSIDER } else { "" };
    format!("{ANSWERS}{comment}{whom} -->")
}

/// The hidden line of one of bugloop's comments: its last line, the only place bugloop writes
/// it. A line like it anywhere else is text bugloop quoted (a commenter's code block), not its.
fn hidden_line(written: &Comment) -> Option<&str> {
    if !written.by_bugloop {
        return None;
    }
    written
        .body
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with(ANSWERS))
}

/// Whether one of bugloop's comments answers `comment` (by its hidden line).
pub fn answers(written: &Comment, comment: &str) -> bool {
    hidden_line(written).is_some_and(|line| {
        line == answers_line(comment, false) || line == answers_line(comment, true)
    })
}

/// The comment one of bugloop's comments answers, when its author has no write access.
pub fn answered_outsider(written: &Comment) -> Option<&str> {
    let id = hidden_line(written)?
        .strip_prefix(ANSWERS)?
        .strip_suffix(" -->")?
        .strip_suffix(OUTSIDER)?;
    (!id.is_empty() && !id.contains(char::is_whitespace)).then_some(id)
}

/// The wrapped forge, adding the line to every comment and reply written through it.
#[derive(Debug)]
pub struct AnsweringForge<'a> {
    inner: &'a dyn Forge,
    line: String,
}

impl<'a> AnsweringForge<'a> {
    /// `outsider`: the comment's author has no write access.
    pub fn new(inner: &'a dyn Forge, comment: &str, outsider: bool) -> Self {
        AnsweringForge {
            inner,
            line: answers_line(comment, outsider),
        }
    }

    fn marked(&self, body: &str) -> String {
        format!("{}\n{}", body.trim_end_matches('\n'), self.line)
    }
}

#[async_trait]
impl ForgeLayer for AnsweringForge<'_> {
    fn inner(&self) -> &dyn Forge {
        self.inner
    }

    fn max_body_chars(&self) -> Option<usize> {
        self.inner
            .max_body_chars()
            .map(|max| max.saturating_sub(self.line.len() + 1))
    }

    /// Comments and replies carry the line; edits, deletions and the rest pass as they are.
    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        match write {
            Write::AddComment { body, .. } | Write::Reply { body, .. } => {
                let marked = self.marked(body);
                self.inner.write(write.with_body(&marked)).await
            }
            Write::UpdateComment { .. }
            | Write::DeleteComment { .. }
            | Write::SetThreadResolved { .. }
            | Write::SetDescription { .. } => self.inner.write(write).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(body: &str, by_bugloop: bool) -> Comment {
        Comment::conversation(
            "issue-9".to_owned(),
            "bugloop[bot]".to_owned(),
            body.to_owned(),
            jiff::Timestamp::UNIX_EPOCH,
            by_bugloop,
        )
    }

    #[test]
    fn an_answer_says_whom_it_answers_and_whether_they_may_write() {
        let writer = format!("It panics.\n{}", answers_line("issue-1", false));
        let outsider = format!("It panics.\n{}", answers_line("issue-2", true));
        assert!(answers(&written(&writer, true), "issue-1"));
        assert!(answers(&written(&outsider, true), "issue-2"));
        assert_eq!(answered_outsider(&written(&writer, true)), None);
        assert_eq!(
            answered_outsider(&written(&outsider, true)),
            Some("issue-2")
        );
        // Only bugloop's own comments count: anyone can write the line.
        assert_eq!(answered_outsider(&written(&outsider, false)), None);
        assert!(!answers(&written(&outsider, false), "issue-2"));
        let quoted = format!("> {}", answers_line("issue-3", true));
        assert_eq!(answered_outsider(&written(&quoted, true)), None);
        // A commenter's code block that bugloop's answer repeats holds a line like it: only
        // bugloop's own last line counts.
        let repeated = format!(
            "As asked:\n```\n{}\n```\n{}",
            answers_line("issue-1", true),
            answers_line("issue-4", true)
        );
        assert_eq!(
            answered_outsider(&written(&repeated, true)),
            Some("issue-4")
        );
        assert!(!answers(&written(&repeated, true), "issue-1"));
        let trailing = format!("{}\n```\n{}\n```", "Hi", answers_line("issue-5", true));
        assert_eq!(answered_outsider(&written(&trailing, true)), None);
    }
}
