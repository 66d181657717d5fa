//! The jobs a developer's comment on a pull request asks for. The comment is already on GitHub
//! (the event says which); bugloop reads it back from the conversation (its thread tells which
//! finding it answers) and acts on it as on a local comment: fix, do, think, or weigh a dispute,
//! with the commenter's permission from the forge.

use std::sync::Arc;

use bugloop_domain::thread::Comment;
use bugloop_forge::answering::{AnsweringForge, answered_outsider, answers};
use bugloop_forge::{ChangeKey, CommentRef};
use bugloop_report::act::{ActReport, ChosenBy, Intent};

use crate::{App, AppError, Outcome, Verdict};

/// Where on a pull request a comment was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullRequestCommentKind {
    /// The conversation.
    Issue,
    /// A line of the diff, or a reply in a review thread.
    Review,
    /// The body of a submitted review.
    ReviewBody,
}

/// A developer's comment on the pull request, as its event describes it.
#[derive(Debug, Clone)]
pub struct PullRequestComment {
    pub kind: PullRequestCommentKind,
    /// GitHub's id of the comment (or review).
    pub id: u64,
    pub author: String,
    pub body: String,
    /// The review comment it answers.
    pub in_reply_to: Option<u64>,
    pub model: Option<String>,
}

impl App {
    /// Acts on a developer's comment on the pull request this app was opened on.
    pub async fn on_pull_request_comment(
        &self,
        job: PullRequestComment,
    ) -> Result<Outcome<ActReport>, AppError> {
        let pull = self.pull_request.as_ref().ok_or_else(|| {
            AppError::Invalid(
                "a pull request comment needs bugloop opened on a pull request".to_owned(),
            )
        })?;
        if let Some(reason) = &pull.read_only {
            return Ok(skipped(format!("not acting on the comment: {reason}")));
        }
        let change = pull.key.clone();
        let comments = self.forge.comments(&change).await?;
        let Some(comment) = self.comment_of(&change, &comments, &job).await? else {
            return Ok(skipped(format!(
                "comment {} is not on this pull request (GitHub has no such comment here); \
                 nothing was done",
                job.id
            )));
        };
        if comment.by_bugloop {
            return Ok(skipped("the comment is bugloop's own".to_owned()));
        }
        // The same event delivered twice (or a run retried) acts once.
        if answered(&comments, &comment) {
            return Ok(skipped(format!(
                "comment {} was already answered",
                comment.id
            )));
        }
        // Anyone may comment on a public repository, and every answer spends the model: who
        // has no write access is answered within the repository's rate, each answer under a
        // small budget, and checked before any model call.
        let permission = self.forge.permission(&comment.author).await?;
        let outsider = !permission.may_modify_files();
        if outsider && let Some(reason) = self.outsiders_over_rate(&comment).await? {
            return Ok(skipped(reason));
        }
        let env = self.loop_env(job.model.as_deref())?;
        let env = if outsider {
            self.outsider_budget(&env)
        } else {
            env
        };
        // What bugloop writes while acting on it says which comment it answers.
        let answering = AnsweringForge::new(env.forge, &comment.id, outsider);
        let env = bugloop_loops::LoopEnv {
            forge: &answering,
            ..env
        };
        let report = match bugloop_loops::act::on_comment(&env, &change, &comment).await {
            Ok(report) => report,
            // An answer to someone without write access that stopped still counts against the
            // repository's rate: it is said so, in a reply that carries the answer's line.
            Err(error) if outsider => {
                let reply_to = comment
                    .in_reply_to
                    .as_deref()
                    .and_then(|root| comments.iter().find(|c| c.id == root))
                    .unwrap_or(&comment);
                let said = bugloop_loops::comment_bodies::info_reply(
                    &self.settings.markers,
                    "bugloop stopped before it could answer this (an answer to someone without \
                     write access has a small budget of its own, or the model failed).",
                );
                if let Err(reply_error) = env.forge.reply(&change, reply_to, &said).await {
                    tracing::warn!(%reply_error, "cannot say the answer stopped");
                }
                return Err(error.into());
            }
            Err(error) => return Err(error.into()),
        };
        let verdict = crate::outcome::act_verdict(&report);
        Ok(Outcome::new(report, verdict))
    }

    /// The comment `job` names, read from GitHub: from the listing (with its thread), else by
    /// its id (a listing may lag behind the event, and a review's body is not in it); never
    /// taken from the event, whose author and body anyone holding the webhook secret could
    /// write. `None`: GitHub has no such comment on this pull request.
    async fn comment_of(
        &self,
        change: &ChangeKey,
        comments: &[Comment],
        job: &PullRequestComment,
    ) -> Result<Option<Comment>, AppError> {
        let listed = match job.kind {
            PullRequestCommentKind::Issue => find(comments, &format!("issue-{}", job.id)),
            PullRequestCommentKind::Review => find(comments, &format!("review-{}", job.id)),
            PullRequestCommentKind::ReviewBody => None,
        };
        if let Some(comment) = listed {
            return Ok(Some(comment));
        }
        let by_id = match job.kind {
            PullRequestCommentKind::Issue => CommentRef::Conversation(job.id),
            PullRequestCommentKind::Review => CommentRef::Line(job.id),
            PullRequestCommentKind::ReviewBody => CommentRef::ReviewBody(job.id),
        };
        Ok(self
            .forge
            .comment_by_id(change, by_id)
            .await?
            .map(|comment| in_its_thread(comment, comments)))
    }

    /// `env` with the small budget of an answer to someone without write access.
    fn outsider_budget<'a>(&self, env: &bugloop_loops::LoopEnv<'a>) -> bugloop_loops::LoopEnv<'a> {
        let limits = &self.settings.config.outsiders;
        let meter = Arc::new(bugloop_llm::Meter::new(
            env.meter.summary().model,
            bugloop_llm::BudgetLimits {
                max_input_tokens: Some(limits.max_input_tokens),
                max_output_tokens: Some(limits.max_output_tokens),
                max_turns: Some(limits.max_turns),
                ..bugloop_llm::BudgetLimits::default()
            },
            None,
        ));
        env.with_provider(Arc::new(bugloop_llm::Metered::new(
            env.provider.clone(),
            meter,
        )))
    }
}

/// Whether bugloop already answered `comment`: a reply that refers to it, or anything of
/// bugloop's that says it answers it.
fn answered(comments: &[Comment], comment: &Comment) -> bool {
    comments.iter().any(|c| {
        (c.by_bugloop && c.in_reply_to.as_deref() == Some(comment.id.as_str()))
            || answers(c, &comment.id)
    })
}

impl App {
    /// Why a comment from someone without write access goes unanswered, if it does: the
    /// repository's answers to such comments in the hour before it (by the forge's clock, from
    /// bugloop's own answers, so every run and server counts the same) reached
    /// `outsiders.answers_per_hour`.
    async fn outsiders_over_rate(&self, comment: &Comment) -> Result<Option<String>, AppError> {
        let limit = self.settings.config.outsiders.answers_per_hour;
        if limit == 0 {
            return Ok(Some(format!(
                "not answered: {} has no write access, and outsiders.answers_per_hour is 0",
                comment.author
            )));
        }
        let since = comment
            .created_at
            .checked_sub(jiff::SignedDuration::from_hours(1))
            .unwrap_or(comment.created_at);
        let written = match self.forge.own_comments_since(since).await {
            Ok(written) => written,
            // Too busy an hour to count in: not answered rather than answered uncounted.
            Err(bugloop_forge::ForgeError::TooLarge(what)) => {
                return Ok(Some(format!(
                    "not answered: {} has no write access, and bugloop cannot count its answers \
                     in this repository's last hour ({what})",
                    comment.author
                )));
            }
            Err(error) => return Err(error.into()),
        };
        let answered: std::collections::BTreeSet<&str> =
            written.iter().filter_map(answered_outsider).collect();
        Ok(
            (answered.len() >= usize::try_from(limit).unwrap_or(usize::MAX)).then(|| {
                format!(
                    "not answered: {} has no write access, and bugloop answered {} comment(s) from \
                 people without write access in this repository in the hour before it \
                 (outsiders.answers_per_hour: {limit})",
                    comment.author,
                    answered.len()
                )
            }),
        )
    }

    /// Why `actor` may not have bugloop change the pull request's branch, if they may not: a
    /// read-only run (a fork, no state key), or no write access.
    pub(crate) async fn refusal_to_change(&self, actor: &str) -> Result<Option<String>, AppError> {
        if let Some(reason) = self.pull_request.as_ref().and_then(|p| p.read_only.clone()) {
            return Ok(Some(reason));
        }
        let permission = self.forge.permission(actor).await?;
        Ok((!permission.may_modify_files()).then(|| {
            format!(
                "{actor} may not have bugloop change this pull request's branch ({permission:?} \
                 permission; write, maintain or admin is needed)"
            )
        }))
    }
}

fn find(comments: &[Comment], id: &str) -> Option<Comment> {
    comments.iter().find(|c| c.id == id).cloned()
}

/// A comment read by its id, placed in its thread as the listing has it (the thread's id, file
/// and line are the root's).
fn in_its_thread(mut comment: Comment, comments: &[Comment]) -> Comment {
    let parent = comment
        .in_reply_to
        .as_deref()
        .and_then(|to| comments.iter().find(|c| c.id == to));
    if let Some(parent) = parent {
        comment.in_reply_to = Some(
            parent
                .in_reply_to
                .clone()
                .unwrap_or_else(|| parent.id.clone()),
        );
        comment.thread_id = comment.thread_id.or_else(|| parent.thread_id.clone());
        comment.path = comment.path.or_else(|| parent.path.clone());
        comment.line = comment.line.or(parent.line);
    }
    comment
}

fn skipped(reason: String) -> Outcome<ActReport> {
    Outcome::new(
        ActReport::nothing_built(Intent::Acknowledge, ChosenBy::Rules, reason.clone()),
        Verdict::Skipped { reason },
    )
}
