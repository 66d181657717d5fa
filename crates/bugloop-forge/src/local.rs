//! The local forge: a git repository whose conversations live in the embedded store at
//! `<git common dir>/bugloop/store.db`. bugloop writes as its bot name; the developer writes as
//! themself (their git `user.name`), and owns the repository, so may do everything.

use std::path::PathBuf;

use async_trait::async_trait;
use bugloop_domain::thread::{Comment, CommentKind};
use bugloop_store::{Anchor, NewComment, Store, StoredComment, StoredKind};

use crate::layer::{WriteOps, dispatch};
use crate::{Change, ChangeKey, Forge, ForgeError, LineAnchor, Permission, Write, Written};
use bugloop_git::{Git, HeadState, Selection};

#[derive(Debug, Clone)]
pub struct LocalForge {
    git: Git,
    store: Store,
    bot: String,
    developer: String,
}

/// The branch a `branch:<name>` conversation is: only a branch has a description.
fn described_branch(change: &ChangeKey) -> Result<&str, ForgeError> {
    change.0.strip_prefix("branch:").ok_or_else(|| {
        ForgeError::Invalid(format!(
            "{change} is not a branch; only a branch has a description"
        ))
    })
}

/// Where the local store of a repository is.
pub fn store_path(git: &Git) -> Result<PathBuf, ForgeError> {
    Ok(git.common_dir()?.join("bugloop").join("store.db"))
}

/// The lease a run that writes to `change`'s conversation holds in the repository's git
/// directory: two reviews of one conversation at once would each publish the findings the
/// other had not yet (the conversation is read before either writes), and two weighings of one
/// reply would answer it twice. `bugloop review`, `solve`'s review of its draft, `fix`,
/// `comment` and `reply --now` take the same one. The inner error: another run holds it.
pub fn conversation_lease(
    git: &Git,
    change: &ChangeKey,
) -> Result<Result<bugloop_store::Lease, bugloop_store::LeaseError>, ForgeError> {
    let store = store_path(git)?;
    let digest = ring::digest::digest(&ring::digest::SHA256, change.0.as_bytes());
    let name = hex::encode(&digest.as_ref()[..16]);
    Ok(bugloop_store::Lease::take(
        store.parent().unwrap_or(&store),
        &format!("review-{name}"),
        &format!("the conversation of {change}"),
    ))
}

/// `bot` decides only for comments stored before the store recorded who wrote what.
fn to_comment(stored: StoredComment, bot: &str) -> Comment {
    let by_bugloop = stored.by_bugloop.unwrap_or(stored.author == bot);
    Comment {
        by_bugloop,
        id: stored.id.to_string(),
        author: stored.author,
        body: stored.body,
        created_at: stored.created_at,
        kind: match stored.kind {
            StoredKind::Issue => CommentKind::Issue,
            StoredKind::Review => CommentKind::Review,
        },
        in_reply_to: stored.in_reply_to.map(|id| id.to_string()),
        thread_id: Some(stored.thread_id.to_string()),
        path: stored.path,
        line: stored.line,
        thread_resolved: stored.thread_resolved,
    }
}

fn local_id(id: &str) -> Result<i64, ForgeError> {
    id.parse()
        .map_err(|_| ForgeError::Invalid(format!("{id:?} is not a local comment id")))
}

impl LocalForge {
    /// Stores a comment of bugloop's own on `change`.
    async fn add_own(
        &self,
        change: &ChangeKey,
        body: &str,
        in_reply_to: Option<i64>,
        anchor: Option<Anchor>,
    ) -> Result<Comment, ForgeError> {
        let comment = NewComment {
            author: self.bot.clone(),
            by_bugloop: true,
            body: body.to_owned(),
            in_reply_to,
            anchor,
        };
        let stored = self.store.add(&change.0, comment).await?;
        Ok(to_comment(stored, &self.bot))
    }

    /// Opens the repository's store (creating it on first use).
    pub async fn open(git: Git, bot: &str) -> Result<LocalForge, ForgeError> {
        let store = Store::open(&store_path(&git)?).await?;
        Ok(Self::with_store(git, store, bot))
    }

    /// A forge over an already opened store (tests use an in-memory one).
    pub fn with_store(git: Git, store: Store, bot: &str) -> LocalForge {
        let developer = git
            .run(&["config", "user.name"])
            .ok()
            .filter(|n| !n.is_empty())
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "developer".to_owned());
        LocalForge {
            git,
            store,
            bot: bot.to_owned(),
            developer,
        }
    }

    pub fn git(&self) -> &Git {
        &self.git
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// bugloop's own name here.
    pub fn bot(&self) -> &str {
        &self.bot
    }

    /// The developer's name (who `reply` and `comment` write as).
    pub fn developer(&self) -> &str {
        &self.developer
    }

    /// Adds a comment as the developer (a reply when `in_reply_to` is given).
    pub async fn developer_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        in_reply_to: Option<&str>,
    ) -> Result<Comment, ForgeError> {
        let parent = in_reply_to.map(local_id).transpose()?;
        let stored = self
            .store
            .add(
                &change.0,
                NewComment {
                    author: self.developer.clone(),
                    by_bugloop: false,
                    body: body.to_owned(),
                    in_reply_to: parent,
                    anchor: None,
                },
            )
            .await?;
        Ok(to_comment(stored, &self.bot))
    }

    /// A line comment of a review (`path:line` of `commit`) by `reviewer`, entered by the
    /// repository's owner: another person's review comment on a local change request.
    pub async fn review_comment(
        &self,
        change: &ChangeKey,
        reviewer: &str,
        body: &str,
        anchor: &LineAnchor,
    ) -> Result<Comment, ForgeError> {
        if reviewer != self.developer {
            self.store.add_reviewer(reviewer).await?;
        }
        let stored = self
            .store
            .add(
                &change.0,
                NewComment {
                    author: reviewer.to_owned(),
                    by_bugloop: false,
                    body: body.to_owned(),
                    in_reply_to: None,
                    anchor: Some(Anchor {
                        path: anchor.path.clone(),
                        line: anchor.line,
                        commit: anchor.commit.clone(),
                    }),
                },
            )
            .await?;
        Ok(to_comment(stored, &self.bot))
    }
}

/// The writes themselves, which [`Forge::write`] dispatches to.
#[async_trait]
impl WriteOps for LocalForge {
    async fn write_description(&self, change: &ChangeKey, body: &str) -> Result<(), ForgeError> {
        let branch = described_branch(change)?;
        if let Some(item) = self.store.change_request_of(branch).await? {
            return Ok(self.store.set_item_body(item.number, body).await?);
        }
        Ok(self.git.set_branch_description(branch, body)?)
    }

    async fn post_comment(
        &self,
        change: &ChangeKey,
        body: &str,
        anchor: Option<&LineAnchor>,
    ) -> Result<Comment, ForgeError> {
        let anchor = anchor.map(|a| Anchor {
            path: a.path.clone(),
            line: a.line,
            commit: a.commit.clone(),
        });
        self.add_own(change, body, None, anchor).await
    }

    async fn edit_comment(
        &self,
        change: &ChangeKey,
        comment: &Comment,
        body: &str,
    ) -> Result<(), ForgeError> {
        let id = local_id(&comment.id)?;
        // Judged by what the store recorded, not by the caller's copy of the comment.
        let stored = to_comment(self.store.comment(id).await?, &self.bot);
        if !stored.by_bugloop {
            return Err(ForgeError::Invalid(format!(
                "comment {id} was not written by bugloop; bugloop only edits its own comments"
            )));
        }
        Ok(self.store.update_body(&change.0, id, body).await?)
    }

    async fn post_reply(
        &self,
        change: &ChangeKey,
        to: &Comment,
        body: &str,
    ) -> Result<Comment, ForgeError> {
        self.add_own(change, body, Some(local_id(&to.id)?), None)
            .await
    }

    async fn mark_thread_resolved(
        &self,
        change: &ChangeKey,
        thread_id: &str,
        resolved: bool,
    ) -> Result<(), ForgeError> {
        Ok(self
            .store
            .set_resolved(&change.0, local_id(thread_id)?, resolved)
            .await?)
    }
}

#[async_trait]
impl Forge for LocalForge {
    fn name(&self) -> &str {
        "local"
    }

    fn bot_login(&self) -> &str {
        &self.bot
    }

    /// `branch:<name>` and `commit:<sha>` conversations are the branch or commit against its merge
    /// base with the default branch.
    async fn change(&self, change: &ChangeKey) -> Result<Change, ForgeError> {
        let head = change
            .0
            .strip_prefix("branch:")
            .or_else(|| change.0.strip_prefix("commit:"))
            .ok_or_else(|| {
                ForgeError::Invalid(format!(
                    "{change} is not a local change (branch:<name> or commit:<sha>)"
                ))
            })?;
        let selected = self.git.select(&Selection::Range {
            base: None,
            head: Some(head.to_owned()),
        })?;
        let HeadState::Commit(head_commit) = &selected.head else {
            return Err(ForgeError::Invalid(format!("{change} has no head commit")));
        };
        let files = self.git.changed_files(&selected.base, head_commit)?;
        Ok(Change {
            key: change.clone(),
            description: selected.description,
            base: selected.base.clone(),
            head: head_commit.clone(),
            files,
            diff: selected.diff,
        })
    }

    /// The branch's tip (a `commit:` conversation's commit never moves), without a diff.
    async fn head(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let name = change
            .0
            .strip_prefix("branch:")
            .map(|branch| format!("refs/heads/{branch}"))
            .or_else(|| change.0.strip_prefix("commit:").map(str::to_owned));
        Ok(name.and_then(|name| self.git.resolve(&name)))
    }

    /// A branch's open change request's body, else git's own description of the branch
    /// (`branch.<name>.description`, as `git branch --edit-description` writes it).
    async fn description(&self, change: &ChangeKey) -> Result<Option<String>, ForgeError> {
        let branch = described_branch(change)?;
        if let Some(item) = self.store.change_request_of(branch).await? {
            return Ok(Some(item.body));
        }
        Ok(self.git.branch_description(branch)?)
    }

    async fn comments(&self, change: &ChangeKey) -> Result<Vec<Comment>, ForgeError> {
        Ok(self
            .store
            .comments(&change.0)
            .await?
            .into_iter()
            .map(|stored| to_comment(stored, &self.bot))
            .collect())
    }

    async fn permission(&self, actor: &str) -> Result<Permission, ForgeError> {
        // The local repository belongs to whoever runs bugloop in it; the reviewers whose
        // comments and reviews they recorded here may change it, as a GitHub reviewer with
        // write access.
        Ok(if actor == self.developer || actor == self.bot {
            Permission::Admin
        } else if self.store.is_reviewer(actor).await? {
            Permission::Write
        } else {
            Permission::Read
        })
    }

    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        Ok(self
            .store
            .comments_by_bugloop(&self.bot)
            .await?
            .into_iter()
            .filter(|c| c.created_at >= since)
            .map(|c| to_comment(c, &self.bot))
            .collect())
    }

    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        dispatch(self, write).await
    }
}

#[cfg(test)]
mod tests;
mod tracker;
