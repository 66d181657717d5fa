//! The conversation of a GitHub pull request, on [`bugloop_github::GitHubClient`]. A change is
//! `github:<owner>/<repo>#<number>`. Comment ids keep their kind (`issue-<id>`, `review-<id>`:
//! GitHub numbers the two apart); review threads and their resolved flags come from GraphQL; a
//! line GitHub will not anchor a comment to is tried again as a comment on the file, then
//! refused as [`ForgeError::Unprocessable`] (the review publishes the finding in the
//! conversation); a create that may have happened is looked for before it is reported, never
//! sent twice. GitHub has no replies to conversation comments, so bugloop's answer to one
//! starts with a hidden reference to it, read back only from bugloop's own comments.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bugloop_domain::markdown::cap_body;
use bugloop_domain::thread::{BotIdentity, Comment, CommentKind};
use bugloop_git::Git;
use bugloop_github::{
    GitHubClient, GitHubError, IssueComment, NewReviewComment, PullRequestSide, Repo, ReviewComment,
};

use crate::layer::{WriteOps, dispatch};
use crate::{
    Change, ChangeKey, CommentRef, Forge, ForgeError, LineAnchor, Permission, Write, Written,
};

mod tracker;
pub use self::tracker::GitHubTracker;

const REPLY_PREFIX: &str = "<!-- bugloop:reply-to ";
/// The reference line: the prefix, a comment id (`issue-` and up to 20 digits) and ` -->`.
const REPLY_REFERENCE_ROOM: usize = 64;

/// A pull request's forge.
#[derive(Debug)]
pub struct GitHubForge {
    client: Arc<GitHubClient>,
    repo: Repo,
    /// The login bugloop writes as, resolved at start (`GET /app` for an App,
    /// `github-actions[bot]` in an Action).
    bot: String,
    identity: BotIdentity,
    /// The local clone, where the change's diff comes from (GitHub's diff endpoint refuses
    /// large pull requests).
    git: Option<Git>,
    /// The conversation as last listed, until bugloop writes: a job's stages (disputes, the
    /// review, its publishing) share one listing instead of each paging through it again.
    snapshot: std::sync::Mutex<Option<(ChangeKey, Vec<Comment>)>>,
}

impl GitHubForge {
    /// `client` may be shared with the rest of the job (one client per job).
    pub fn new(
        client: impl Into<Arc<GitHubClient>>,
        repo: Repo,
        bot: &str,
        git: Option<Git>,
    ) -> GitHubForge {
        GitHubForge {
            client: client.into(),
            repo,
            bot: bot.to_owned(),
            identity: BotIdentity::new([bot]),
            git,
            snapshot: std::sync::Mutex::new(None),
        }
    }

    fn snapshot(&self) -> std::sync::MutexGuard<'_, Option<(ChangeKey, Vec<Comment>)>> {
        self.snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A write makes the next read list the conversation again.
    fn forget(&self) {
        *self.snapshot() = None;
    }

    /// The change key of pull request `number` of `repo`.
    pub fn change_key(repo: &Repo, number: u64) -> ChangeKey {
        ChangeKey(format!("github:{repo}#{number}"))
    }

    fn number(&self, change: &ChangeKey) -> Result<u64, ForgeError> {
        let prefix = format!("github:{}#", self.repo);
        change
            .0
            .strip_prefix(&prefix)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| {
                ForgeError::Invalid(format!("{change} is not a pull request of {}", self.repo))
            })
    }

    fn is_bot(&self, login: Option<&str>) -> bool {
        login.is_some_and(|login| self.identity.is_bot(login))
    }

    fn issue_comment_of(&self, comment: IssueComment) -> Comment {
        let author = comment.user.map(|u| u.login);
        let by_bugloop = self.is_bot(author.as_deref());
        let mut body = comment.body.unwrap_or_default();
        // Only bugloop's own reference counts: anyone can type the hidden line. It is taken
        // off the body, which is what bugloop wrote (and signed, where state is signed).
        let mut in_reply_to = None;
        if by_bugloop
            && let Some(rest) = body.strip_prefix(REPLY_PREFIX)
            && let Some((id, text)) = rest.split_once(" -->\n")
        {
            in_reply_to = Some(id.to_owned());
            body = text.to_owned();
        }
        Comment {
            in_reply_to,
            ..Comment::conversation(
                format!("issue-{}", comment.id),
                author.unwrap_or_default(),
                body,
                comment.created_at,
                by_bugloop,
            )
        }
    }

    fn review_comment_of(&self, comment: ReviewComment) -> Comment {
        let author = comment.user.map(|u| u.login);
        let by_bugloop = self.is_bot(author.as_deref());
        Comment {
            id: format!("review-{}", comment.id),
            author: author.unwrap_or_default(),
            body: comment.body,
            created_at: comment.created_at,
            kind: CommentKind::Review,
            in_reply_to: comment.in_reply_to_id.map(|id| format!("review-{id}")),
            thread_id: None,
            // Named as bugloop names files ([`bugloop_domain::paths::display_path`]).
            path: Some(bugloop_domain::paths::display_path(comment.path.as_bytes())),
            line: comment.line,
            thread_resolved: false,
            by_bugloop,
        }
    }

    /// Writes a conversation comment (`sent`, which reads back as `body`: a reply's reference is
    /// taken off); one that may have been written is looked for before it is reported.
    async fn conversation_comment(
        &self,
        change: &ChangeKey,
        number: u64,
        sent: &str,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        let created = self
            .client
            .create_issue_comment(&self.repo, number, sent)
            .await
            .map(|comment| self.issue_comment_of(comment));
        self.settled(change, CommentKind::Issue, body, "a comment", created)
            .await
    }

    /// A create's comment. Where GitHub may have written it without saying so (`Ambiguous`), the
    /// comment bugloop wrote with this body if the listing shows it, never a second one; `what`
    /// names it when the listing does not.
    async fn settled(
        &self,
        change: &ChangeKey,
        kind: CommentKind,
        body: &str,
        what: &str,
        created: Result<Comment, GitHubError>,
    ) -> Result<Comment, ForgeError> {
        match created {
            Err(GitHubError::Ambiguous { .. }) => self
                .comments(change)
                .await?
                .into_iter()
                .rev()
                .find(|c| c.by_bugloop && c.kind == kind && c.body == body)
                .ok_or_else(|| {
                    ForgeError::Ambiguous(format!("{change}: {what} may not have been written"))
                }),
            created => Ok(created?),
        }
    }
}

impl GitHubForge {
    /// The conversation from GitHub: both kinds of comments, and the threads from GraphQL.
    async fn list(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        let number = self.number(change)?;
        let issue = self.client.issue_comments(&self.repo, number).await?;
        // An issue (the solve pipeline's) has a conversation and no review.
        let review = match self.client.review_comments(&self.repo, number).await {
            Ok(review) => review,
            Err(GitHubError::NotFound { .. }) => {
                return Ok(issue
                    .into_iter()
                    .map(|c| self.issue_comment_of(c))
                    .collect());
            }
            Err(other) => return Err(other.into()),
        };
        let threads = self.client.review_threads(&self.repo, number).await?;
        let mut comments: Vec<Comment> = issue
            .into_iter()
            .map(|c| self.issue_comment_of(c))
            .chain(review.into_iter().map(|c| self.review_comment_of(c)))
            .collect();
        // A thread is known by its first comment; replies join their root's thread.
        let by_root: HashMap<String, (&str, bool)> = threads
            .iter()
            .filter_map(|t| {
                Some((
                    format!("review-{}", t.first_comment?),
                    (t.id.as_str(), t.is_resolved),
                ))
            })
            .collect();
        for comment in comments
            .iter_mut()
            .filter(|c| c.kind == CommentKind::Review)
        {
            let root = comment
                .in_reply_to
                .clone()
                .unwrap_or_else(|| comment.id.clone());
            if let Some((thread, resolved)) = by_root.get(&root) {
                comment.thread_id = Some((*thread).to_owned());
                comment.thread_resolved = *resolved;
            }
        }
        Ok(comments)
    }
}

fn comment_id(id: &str, kind: &str) -> Result<u64, ForgeError> {
    id.strip_prefix(kind)
        .and_then(|n| n.strip_prefix('-'))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ForgeError::Invalid(format!("{id:?} is not a GitHub {kind} comment id")))
}

impl From<GitHubError> for ForgeError {
    fn from(error: GitHubError) -> Self {
        let message = error.to_string();
        match error {
            GitHubError::RateLimited { retry_after, .. } => ForgeError::RateLimited {
                message,
                retry_after: Some(retry_after),
            },
            GitHubError::Unprocessable { .. } => ForgeError::Unprocessable(message),
            GitHubError::Forbidden { .. } | GitHubError::Unauthorized { .. } => {
                ForgeError::Forbidden(message)
            }
            GitHubError::NotFound { .. } => ForgeError::NotFound(message),
            GitHubError::Ambiguous { .. } => ForgeError::Ambiguous(message),
            GitHubError::TooLarge { .. } => ForgeError::TooLarge(message),
            GitHubError::Transient { .. } => ForgeError::Transient {
                message,
                unreachable: true,
            },
            GitHubError::Refused { .. }
            | GitHubError::Decode { .. }
            | GitHubError::GraphQl { .. } => ForgeError::Transient {
                message,
                unreachable: false,
            },
        }
    }
}

/// The writes themselves, which [`Forge::write`] dispatches to.
#[async_trait]
impl WriteOps for GitHubForge {
    async fn write_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        let number = self.number(change)?;
        self.client
            .set_pull_request_body(&self.repo, number, body)
            .await?;
        Ok(())
    }

    async fn post_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        self.forget();
        let number = self.number(change)?;
        let body = &*cap_body(body, bugloop_github::MAX_BODY_CHARS);
        let Some(anchor) = anchor else {
            return self.conversation_comment(change, number, body, body).await;
        };
        let mut comment = NewReviewComment {
            body: body.to_owned(),
            commit_id: anchor.commit.clone(),
            path: bugloop_domain::paths::forge_path(&anchor.path),
            line: Some(anchor.end_line.unwrap_or(anchor.line)),
            start_line: anchor.end_line.map(|_| anchor.line),
            side: PullRequestSide::Right,
        };
        let mut result = self
            .client
            .create_review_comment(&self.repo, number, &comment)
            .await;
        if matches!(result, Err(GitHubError::Unprocessable { .. })) {
            // The line is outside GitHub's view of the diff: the file, then the conversation.
            comment.line = None;
            comment.start_line = None;
            result = self
                .client
                .create_review_comment(&self.repo, number, &comment)
                .await;
        }
        let created = result.map(|created| self.review_comment_of(created));
        self.settled(change, CommentKind::Review, body, "a line comment", created)
            .await
    }

    async fn edit_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        self.forget();
        self.number(change)?;
        if !comment.by_bugloop {
            return Err(ForgeError::Invalid(format!(
                "comment {} was not written by bugloop; bugloop only edits its own comments",
                comment.id
            )));
        }
        let body = &*cap_body(body, bugloop_github::MAX_BODY_CHARS);
        match comment.kind {
            CommentKind::Issue => {
                let id = comment_id(&comment.id, "issue")?;
                self.client
                    .update_issue_comment(&self.repo, id, body)
                    .await?;
            }
            CommentKind::Review => {
                let id = comment_id(&comment.id, "review")?;
                self.client
                    .update_review_comment(&self.repo, id, body)
                    .await?;
            }
        }
        Ok(())
    }

    async fn remove_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
    ) -> Result<bool, ForgeError> {
        self.forget();
        self.number(change)?;
        if !comment.by_bugloop {
            return Err(ForgeError::Invalid(format!(
                "comment {} was not written by bugloop; bugloop only deletes its own comments",
                comment.id
            )));
        }
        match comment.kind {
            CommentKind::Issue => {
                let id = comment_id(&comment.id, "issue")?;
                self.client.delete_issue_comment(&self.repo, id).await?;
            }
            CommentKind::Review => {
                let id = comment_id(&comment.id, "review")?;
                self.client.delete_review_comment(&self.repo, id).await?;
            }
        }
        Ok(true)
    }

    async fn post_reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.forget();
        let number = self.number(change)?;
        let body = &*cap_body(body, bugloop_github::MAX_BODY_CHARS);
        match to.kind {
            CommentKind::Review => {
                let id = comment_id(to.in_reply_to.as_deref().unwrap_or(&to.id), "review")?;
                let created = self
                    .client
                    .reply_to_review_comment(&self.repo, number, id, body)
                    .await
                    .map(|reply| self.review_comment_of(reply));
                self.settled(change, CommentKind::Review, body, "a reply", created)
                    .await
            }
            CommentKind::Issue => {
                let root = to.in_reply_to.as_deref().unwrap_or(&to.id);
                let referenced = format!("{REPLY_PREFIX}{root} -->\n{body}");
                let referenced = &*cap_body(&referenced, bugloop_github::MAX_BODY_CHARS);
                self.conversation_comment(change, number, referenced, body)
                    .await
            }
        }
    }

    async fn mark_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        self.forget();
        self.number(change)?;
        Ok(self.client.set_thread_resolved(thread_id, resolved).await?)
    }
}

#[async_trait]
impl Forge for GitHubForge {
    fn name(&self) -> &str {
        "github"
    }

    fn bot_login(&self) -> &str {
        &self.bot
    }

    /// GitHub's limit, less room for the reference a reply to a conversation comment starts
    /// with, so a reply never needs a second cut (which would break its signature).
    fn max_body_chars(&self) -> Option<usize> {
        Some(bugloop_github::MAX_BODY_CHARS - REPLY_REFERENCE_ROOM)
    }

    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let number = self.number(change)?;
        Ok(Some(
            self.client.pull_request(&self.repo, number).await?.head.sha,
        ))
    }

    /// The pull request's base and head from GitHub; its files and diff from the local clone
    /// (the merge base of the two commits), which must hold both.
    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        let number = self.number(change)?;
        let pull = self.client.pull_request(&self.repo, number).await?;
        let git = self.git.as_ref().ok_or_else(|| {
            ForgeError::Invalid(format!("{change}: no local clone to read the diff from"))
        })?;
        let missing = |sha: &str| {
            ForgeError::Invalid(format!(
                "{change}: commit {sha} is not in the local clone; fetch `refs/pull/{number}/head` and the base branch first"
            ))
        };
        let head = git
            .resolve(&pull.head.sha)
            .ok_or_else(|| missing(&pull.head.sha))?;
        let base_tip = git
            .resolve(&pull.base.sha)
            .ok_or_else(|| missing(&pull.base.sha))?;
        let base = git.run(&["merge-base", &base_tip, &head])?;
        let files = git.changed_files(&base, &head)?;
        let diff = git.run_bytes(&["diff", "--no-color", "--no-ext-diff", "-M", &base, &head])?;
        Ok(Change {
            key: change.clone(),
            description: format!("#{number} {}", pull.title),
            base,
            head,
            files,
            diff,
        })
    }

    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let number = self.number(change)?;
        Ok(self.client.pull_request(&self.repo, number).await?.body)
    }

    async fn comment_by_id(
        &self,
        change: &ChangeKey,
        comment: CommentRef,
    ) -> Result<Option<Comment>, ForgeError> {
        let number = self.number(change)?;
        Ok(match comment {
            CommentRef::Conversation(id) => self
                .client
                .issue_comment(&self.repo, number, id)
                .await?
                .map(|c| self.issue_comment_of(c)),
            CommentRef::Line(id) => self
                .client
                .review_comment(&self.repo, number, id)
                .await?
                .map(|c| self.review_comment_of(c)),
            CommentRef::ReviewBody(id) => self
                .client
                .pull_review(&self.repo, number, id)
                .await?
                .map(|review| {
                    let author = review.user.map(|u| u.login);
                    Comment::conversation(
                        format!("review-body-{id}"),
                        author.clone().unwrap_or_default(),
                        review.body.unwrap_or_default(),
                        review.submitted_at.unwrap_or_else(jiff::Timestamp::now),
                        self.is_bot(author.as_deref()),
                    )
                }),
        })
    }

    fn forget_listings(&self) {
        self.forget();
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        if let Some((key, comments)) = &*self.snapshot()
            && key == change
        {
            return Ok(comments.clone());
        }
        let comments = self.list(change).await?;
        *self.snapshot() = Some((change.clone(), comments.clone()));
        Ok(comments)
    }

    async fn change_author(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let number = self.number(change)?;
        let pull = self.client.pull_request(&self.repo, number).await?;
        Ok(pull.user.map(|user| user.login))
    }

    async fn human_reviewers(&self, change: &ChangeKey) -> Result<Vec<String>, ForgeError> {
        let number = self.number(change)?;
        Ok(self.client.requested_reviewers(&self.repo, number).await?)
    }

    /// From the collaborator endpoint: write, maintain or admin may have bugloop change the
    /// branch (and get a finding conceded); anyone else reads.
    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError> {
        match self.client.collaborator_permission(&self.repo, actor).await {
            Ok(permission) if permission.permission == "admin" => Ok(Permission::Admin),
            Ok(permission) if permission.can_write() => Ok(Permission::Write),
            Ok(permission) if permission.permission == "none" => Ok(Permission::None),
            Ok(_) => Ok(Permission::Read),
            // Not a collaborator at all.
            Err(GitHubError::NotFound { .. }) => Ok(Permission::None),
            Err(error) => Err(error.into()),
        }
    }

    /// From the repository's comment listings, both kinds (GitHub filters them by their last
    /// update; those written before `since` are left out here).
    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        // A repository busier than this in an hour is not counted page by page (each page is a
        // request of the installation's hourly allowance): the caller is told it is too many.
        const PAGES: usize = 10;
        let (conversation, all_conversation) = self
            .client
            .repository_issue_comments_since(&self.repo, since, PAGES)
            .await?;
        let (lines, all_lines) = self
            .client
            .repository_review_comments_since(&self.repo, since, PAGES)
            .await?;
        if !(all_conversation && all_lines) {
            return Err(ForgeError::TooLarge(format!(
                "{} has more than {} comments of each kind since {since}",
                self.repo,
                PAGES * 100
            )));
        }
        Ok(conversation
            .into_iter()
            .map(|c| self.issue_comment_of(c))
            .chain(lines.into_iter().map(|c| self.review_comment_of(c)))
            .filter(|c| c.by_bugloop && c.created_at >= since)
            .collect())
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        dispatch(self, write).await
    }
}
