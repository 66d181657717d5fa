//! The local forge's issues and change requests: the embedded store's items, the repository's
//! own branches. A change request is merged when a person merges its branch into its base
//! (`git merge`): reading it notices that and records it.

use async_trait::async_trait;
use bugloop_domain::learning::Pattern;
use bugloop_domain::solve::SolveState;
use bugloop_store::{
    CheckState, Item, ItemKind, ItemState, NewChangeRequest, NewIssue, ReviewDecision, StoreError,
};

use crate::tracker::{
    ChangeRequest, ChangeRequestState, Check, DraftRequest, HeadReview, IssueDraft,
    LEARNING_ISSUES, Labelling, NewTransition, PatternIssue, ReportCount, SolveTransition,
    TrackedIssue, Tracker, branch_moved, check_branch_name,
};
use crate::{ChangeKey, ForgeError};

use super::LocalForge;

const NO_COMMIT: &str = "0000000000000000000000000000000000000000";

/// Where the local forge keeps the commit it last published on a draft's `branch`.
fn published_ref(branch: &str) -> String {
    format!("refs/bugloop/published/{branch}")
}

fn number(n: u64) -> Result<i64, ForgeError> {
    i64::try_from(n).map_err(|_| ForgeError::Invalid(format!("#{n} is not an item number")))
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or_default()
}

/// A refusal of the store (a transition from a state the record is not in) as the trait's.
fn refused(error: StoreError) -> ForgeError {
    match error {
        StoreError::Refused(message) => ForgeError::Invalid(message),
        other => ForgeError::Store(other),
    }
}

fn change_request(item: Item) -> Result<ChangeRequest, ForgeError> {
    let conversation = ChangeKey(item.conversation());
    match (item.kind, item.branch, item.base) {
        (ItemKind::Change, Some(branch), Some(base)) => Ok(ChangeRequest {
            number: unsigned(item.number),
            title: item.title,
            branch,
            base,
            draft: item.draft.unwrap_or(false),
            state: match item.state {
                ItemState::Open => ChangeRequestState::Open,
                ItemState::Closed => ChangeRequestState::Closed,
                ItemState::Merged => ChangeRequestState::Merged,
            },
            conversation,
            url: None,
            merge_commit: None,
        }),
        _ => Err(ForgeError::NotFound(format!(
            "#{} is an issue, not a change request",
            item.number
        ))),
    }
}

impl LocalForge {
    /// The error pattern of an issue bugloop filed from reports: its fingerprint as the store
    /// keeps it (only a report sets it), its class from the end of the body bugloop wrote.
    fn pattern_of(&self, item: &Item) -> Option<Pattern> {
        let fingerprint = item.fingerprint.as_ref()?;
        if item.kind != ItemKind::Issue || item.author != self.bot {
            return None;
        }
        let class = Pattern::at_end(&item.body)
            .filter(|written| written.fingerprint == *fingerprint)
            .and_then(|written| written.class);
        Some(Pattern {
            fingerprint: fingerprint.clone(),
            class,
        })
    }

    /// The commit that stands for the draft on `branch`: the branch's tip while it still holds
    /// what bugloop last published there (a developer's commits on top included), else that
    /// published commit. A branch reset onto its base, or anywhere else, is not its work
    /// merged: the tip of `git branch -f bugloop/solve-7 main` is on `main` already.
    fn draft_tip(&self, branch: &str) -> Option<String> {
        let tip = self.git.resolve(&format!("refs/heads/{branch}"));
        let Some(published) = self.git.resolve(&published_ref(branch)) else {
            return tip;
        };
        match tip {
            Some(tip)
                if self
                    .git
                    .run(&["merge-base", "--is-ancestor", &published, &tip])
                    .is_ok() =>
            {
                Some(tip)
            }
            _ => Some(published),
        }
    }

    /// Whether the draft on `branch` has been merged into `base` here.
    fn merged(&self, branch: &str, base: &str) -> bool {
        let (Some(tip), Some(_)) = (
            self.draft_tip(branch),
            self.git.resolve(&format!("refs/heads/{base}")),
        ) else {
            return false;
        };
        self.git
            .run(&[
                "merge-base",
                "--is-ancestor",
                &tip,
                &format!("refs/heads/{base}"),
            ])
            .is_ok()
            || self.squashed(branch, base).is_some()
    }

    /// The commit on `base`'s first-parent line since the branch forked that makes exactly the
    /// branch's change (`git merge --squash`, or a cherry-pick of it all): the same diff from
    /// its parent as the branch's from where it forked. The most recent 500 commits are looked
    /// at.
    fn squashed(&self, branch: &str, base: &str) -> Option<String> {
        let tip = self.draft_tip(branch)?;
        let base = format!("refs/heads/{base}");
        let fork = self.git.run(&["merge-base", &tip, &base]).ok()?;
        if fork.trim() == tip {
            return None;
        }
        let diff = |from: &str, to: &str| {
            self.git
                .run(&[
                    "diff",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--no-color",
                    from,
                    to,
                    "--",
                ])
                .ok()
        };
        let change = diff(fork.trim(), &tip).filter(|d| !d.is_empty())?;
        let line = self
            .git
            .run(&[
                "rev-list",
                "--first-parent",
                "--max-count=500",
                &format!("{}..{base}", fork.trim()),
                "--",
            ])
            .ok()?;
        line.lines().find_map(|commit| {
            let [parent] = self.git.parents(commit).ok()?.try_into().ok()?;
            (diff(&parent, commit)? == change).then(|| commit.to_owned())
        })
    }
}

impl LocalForge {
    /// The commit on `base`'s first-parent line that brought `branch` in: the oldest one that
    /// descends from the branch's tip (a merge), or the tip itself when `base` was
    /// fast-forwarded to it.
    fn merge_commit(&self, branch: &str, base: &str) -> Option<String> {
        let tip = self.draft_tip(branch)?;
        let base = format!("refs/heads/{base}");
        let line = self
            .git
            .run(&["rev-list", "--first-parent", &base, "--"])
            .ok()?;
        let line: Vec<&str> = line.lines().collect();
        if line.contains(&tip.as_str()) {
            return Some(tip);
        }
        if let Some(squash) = self.squashed(branch, base.trim_start_matches("refs/heads/")) {
            return Some(squash);
        }
        let descendants = self
            .git
            .run(&[
                "rev-list",
                "--ancestry-path",
                &format!("{tip}..{base}"),
                "--",
            ])
            .ok()?;
        let descendants: std::collections::HashSet<&str> = descendants.lines().collect();
        line.iter()
            .rev()
            .find(|commit| descendants.contains(*commit))
            .map(|commit| (*commit).to_owned())
    }
}

#[async_trait]
impl Tracker for LocalForge {
    /// The store keeps the fingerprint itself (one transaction counts or files).
    async fn report(
        &self,
        fingerprint: &str,
        _marker: &str,
        draft: &IssueDraft,
    ) -> Result<ReportCount, ForgeError> {
        let reported = self
            .store
            .report(
                fingerprint,
                NewIssue {
                    title: draft.title.clone(),
                    body: draft.body.clone(),
                    author: self.bot.clone(),
                    labels: draft.labels.clone(),
                },
            )
            .await?;
        Ok(ReportCount {
            number: unsigned(reported.issue.number),
            title: reported.issue.title,
            labels: reported.issue.labels,
            count: unsigned(reported.issue.reports),
            filed: reported.filed,
        })
    }

    async fn issue(&self, issue: u64) -> Result<TrackedIssue, ForgeError> {
        let item = self.store.item(number(issue)?).await?;
        if item.kind != ItemKind::Issue {
            return Err(ForgeError::NotFound(format!(
                "#{issue} is a change request, not an issue"
            )));
        }
        Ok(TrackedIssue {
            number: issue,
            pattern: self.pattern_of(&item),
            conversation: ChangeKey(item.conversation()),
            title: item.title,
            body: item.body,
            labels: item.labels,
            assignees: item.assignees,
            open: item.state == ItemState::Open,
            opened_at: Some(item.created_at),
        })
    }

    async fn pattern_issues(&self, pattern: &Pattern) -> Result<Vec<PatternIssue>, ForgeError> {
        let mut found = Vec::new();
        let mut items = self.store.items(ItemKind::Issue, false).await?;
        items.sort_by_key(|item| std::cmp::Reverse(item.number));
        for item in items {
            let Some(other) = self.pattern_of(&item) else {
                continue;
            };
            if pattern.shares(&other) == (false, false) {
                continue;
            }
            let number = unsigned(item.number);
            found.push(PatternIssue {
                number,
                pattern: other,
                history: self.solve_history(number).await?,
            });
            if found.len() == LEARNING_ISSUES {
                break;
            }
        }
        Ok(found)
    }

    async fn labellings(&self, issue: u64, _label: &str) -> Result<Vec<Labelling>, ForgeError> {
        // Labels here are bugloop's (a person approves with `solve --approve`, not a label).
        self.issue(issue).await.map(|_| Vec::new())
    }

    async fn add_labels(&self, issue: u64, labels: &[String]) -> Result<(), ForgeError> {
        Ok(self.store.add_item_labels(number(issue)?, labels).await?)
    }

    async fn set_assignee(
        &self,
        issue: u64,
        login: &str,
        assigned: bool,
    ) -> Result<(), ForgeError> {
        Ok(self
            .store
            .set_item_assignee(number(issue)?, login, assigned)
            .await?)
    }

    async fn remove_label(&self, issue: u64, label: &str) -> Result<(), ForgeError> {
        self.store.remove_item_label(number(issue)?, label).await?;
        Ok(())
    }

    async fn solve_history(&self, issue: u64) -> Result<Vec<SolveTransition>, ForgeError> {
        let mut history = Vec::new();
        for stored in self.store.solve_history(number(issue)?).await? {
            let state = |name: &str| {
                SolveState::parse(name).ok_or_else(|| {
                    ForgeError::Invalid(format!(
                        "issue #{issue}'s record has an unknown state {name:?}"
                    ))
                })
            };
            history.push(SolveTransition {
                from: stored.from.as_deref().map(state).transpose()?,
                to: state(&stored.to)?,
                detail: serde_json::from_str(&stored.detail).map_err(|e| {
                    ForgeError::Invalid(format!(
                        "issue #{issue}'s transition {}: its detail is not JSON: {e}",
                        stored.seq
                    ))
                })?,
                reason: stored.reason,
                at: stored.at,
            });
        }
        Ok(history)
    }

    async fn record_transition(
        &self,
        issue: u64,
        step: NewTransition<'_>,
    ) -> Result<SolveTransition, ForgeError> {
        let stored = self
            .store
            .record_transition(
                number(issue)?,
                step.from.map(SolveState::as_str),
                step.to.as_str(),
                step.reason,
                &step.detail.to_string(),
            )
            .await
            .map_err(refused)?;
        Ok(step.recorded_at(stored.at))
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        Ok(self.git.resolve(&format!("refs/heads/{branch}")))
    }

    async fn publish_branch(
        &self,
        branch: &str,
        commit: &str,
        previous: Option<&str>,
    ) -> Result<(), ForgeError> {
        check_branch_name(&self.git, branch)?;
        // A branch checked out in a working tree is the developer's to move: moving it under
        // them would make their tree look changed.
        let checked_out = self
            .git
            .run(&["worktree", "list", "--porcelain"])
            .unwrap_or_default()
            .lines()
            .any(|line| line.strip_prefix("branch refs/heads/") == Some(branch));
        if checked_out {
            return Err(ForgeError::Invalid(format!(
                "branch {branch} is checked out; switch to another branch so bugloop can move it"
            )));
        }
        // update-ref checks the old value under the ref's lock: a branch that moved (or came
        // to exist) meanwhile is refused, never overwritten.
        self.git
            .run(&[
                "update-ref",
                "-m",
                "bugloop solve",
                &format!("refs/heads/{branch}"),
                commit,
                previous.unwrap_or(NO_COMMIT),
            ])
            .map_err(|e| branch_moved(branch, "moved", e))?;
        // What bugloop published there, kept apart from the branch, which others may move.
        self.git
            .run(&[
                "update-ref",
                "-m",
                "bugloop solve",
                &published_ref(branch),
                commit,
            ])
            .map_err(|e| ForgeError::Invalid(format!("cannot record {branch}'s head: {e}")))?;
        Ok(())
    }

    async fn open_draft(&self, draft: &DraftRequest) -> Result<ChangeRequest, ForgeError> {
        if let Some(open) = self.store.change_request_of(&draft.branch).await? {
            return change_request(open);
        }
        let item = self
            .store
            .open_change_request(NewChangeRequest {
                title: draft.title.clone(),
                body: draft.body.clone(),
                author: self.bot.clone(),
                branch: draft.branch.clone(),
                base: draft.base.clone(),
                draft: true,
                closes: draft.closes.map(number).transpose()?,
                labels: Vec::new(),
            })
            .await
            .map_err(refused)?;
        change_request(item)
    }

    async fn change_request(&self, request: u64) -> Result<ChangeRequest, ForgeError> {
        let item = self.store.item(number(request)?).await?;
        let mut found = change_request(item)?;
        if found.state == ChangeRequestState::Open && self.merged(&found.branch, &found.base) {
            self.store
                .set_item_state(number(request)?, ItemState::Merged)
                .await?;
            found.state = ChangeRequestState::Merged;
        }
        if found.state == ChangeRequestState::Merged {
            found.merge_commit = self.merge_commit(&found.branch, &found.base);
        }
        Ok(found)
    }

    async fn close_solved(&self, issue: u64) -> Result<(), ForgeError> {
        Ok(self
            .store
            .set_item_state(number(issue)?, ItemState::Closed)
            .await?)
    }

    async fn reopen(&self, issue: u64) -> Result<(), ForgeError> {
        let item = self.store.item(number(issue)?).await?;
        if item.kind != ItemKind::Issue {
            return Err(ForgeError::NotFound(format!(
                "#{issue} is a change request, not an issue"
            )));
        }
        Ok(self
            .store
            .set_item_state(number(issue)?, ItemState::Open)
            .await?)
    }

    async fn mark_ready(&self, request: u64) -> Result<(), ForgeError> {
        Ok(self.store.set_draft(number(request)?, false).await?)
    }

    /// The checks recorded on `commit` (`bugloop checks`: the test commands run on a change
    /// request's head, or a result recorded by hand).
    async fn checks(&self, commit: &str) -> Result<Vec<Check>, ForgeError> {
        Ok(self
            .store
            .checks(commit)
            .await?
            .into_iter()
            .map(|check| Check {
                name: check.name,
                passed: match check.state {
                    CheckState::Pending => None,
                    CheckState::Passed => Some(true),
                    CheckState::Failed => Some(false),
                },
            })
            .collect())
    }

    async fn reviews_of(&self, request: u64, commit: &str) -> Result<Vec<HeadReview>, ForgeError> {
        Ok(self
            .store
            .reviews(number(request)?)
            .await?
            .into_iter()
            .filter(|review| review.commit == commit)
            .map(|review| HeadReview {
                changes_requested: review.decision == ReviewDecision::ChangesRequested,
                reviewer: review.reviewer,
            })
            .collect())
    }

    /// Each reviewer's latest decision counts (a review that only comments changes none), as
    /// on GitHub.
    async fn changes_requested(&self, request: u64) -> Result<bool, ForgeError> {
        let mut latest: std::collections::HashMap<String, ReviewDecision> =
            std::collections::HashMap::new();
        for review in self.store.reviews(number(request)?).await? {
            if review.decision != ReviewDecision::Commented {
                latest.insert(review.reviewer, review.decision);
            }
        }
        Ok(latest
            .values()
            .any(|decision| *decision == ReviewDecision::ChangesRequested))
    }
}
