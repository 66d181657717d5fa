//! Other people's part in a local change request's review, recorded by the repository's owner:
//! a reviewer's line comment, a reviewer's decision (approve, request changes) and check results
//! on its head. On GitHub these are a pull request's review comments, reviews and check runs;
//! locally they are what lets the solve loop's review rounds and its ready gate run without a
//! forge.

use bugloop_domain::markdown::is_invisible;
use bugloop_domain::thread::Comment;
use bugloop_forge::local::LocalForge;
use bugloop_forge::{ChangeKey, LineAnchor};
use bugloop_store::{CheckResult, CheckState, Item, ItemKind, ItemReview, ReviewDecision};

use crate::{App, AppError};

/// A reviewer's line comment on a change request.
#[derive(Debug, Clone)]
pub struct ReviewCommentJob {
    /// The change request's number.
    pub change: u64,
    /// Who wrote it; the developer when not given.
    pub reviewer: Option<String>,
    pub file: String,
    pub line: u32,
    pub body: String,
}

/// A reviewer's decision on a change request.
#[derive(Debug, Clone)]
pub struct ReviewDecisionJob {
    pub change: u64,
    pub reviewer: Option<String>,
    pub decision: ReviewDecision,
    pub body: String,
}

/// Check results to record on a change request's head; none: run the test commands there.
#[derive(Debug, Clone, Default)]
pub struct ChecksJob {
    pub change: u64,
    pub record: Vec<(String, CheckState)>,
}

/// The checks on a change request's head.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ChecksView {
    pub change: u64,
    pub head: String,
    pub checks: Vec<CheckResult>,
}

impl ChecksView {
    /// Whether every check passed (none pending, none failed).
    pub fn green(&self) -> bool {
        self.checks.iter().all(|c| c.state == CheckState::Passed)
    }
}

/// A reviewer's name as given, or the developer's.
fn reviewer(local: &LocalForge, given: Option<&str>) -> Result<String, AppError> {
    let name = given.unwrap_or(local.developer()).trim();
    if name.is_empty() || name.chars().any(|c| c.is_control() || is_invisible(c)) {
        return Err(AppError::Invalid(format!(
            "{name:?} is not a reviewer's name (--as NAME)"
        )));
    }
    if is_own_name(name, local.bot()) {
        return Err(AppError::Invalid(format!(
            "{name} is bugloop's own name; another reviewer's comment needs another (--as NAME)"
        )));
    }
    Ok(name.to_owned())
}

/// Whether `name` is bugloop's own name `bot`, as a forge compares logins: without case, and as
/// its App's `bot[bot]`.
fn is_own_name(name: &str, bot: &str) -> bool {
    let login = |text: &str| {
        let lower = text.to_ascii_lowercase();
        lower.strip_suffix("[bot]").unwrap_or(&lower).to_owned()
    };
    login(name) == login(bot)
}

impl App {
    /// Change request `number` of the local forge, open, and its head commit.
    async fn open_change_request(
        &self,
        what: &str,
        number: u64,
    ) -> Result<(&LocalForge, Item, String), AppError> {
        let local = self.local_store(what)?;
        let item = i64::try_from(number)
            .map_err(|_| AppError::Invalid(format!("no change request #{number}")))?;
        let item = local.store().item(item).await?;
        let (ItemKind::Change, Some(branch)) = (item.kind, item.branch.clone()) else {
            return Err(AppError::Invalid(format!(
                "#{number} is an issue; {what} is for a change request"
            )));
        };
        if item.state != bugloop_store::ItemState::Open {
            return Err(AppError::Invalid(format!(
                "change request #{number} is not open"
            )));
        }
        let head = self
            .git
            .resolve(&format!("refs/heads/{branch}"))
            .ok_or_else(|| {
                AppError::Invalid(format!(
                    "change request #{number}'s branch {branch} is gone"
                ))
            })?;
        Ok((local, item, head))
    }

    /// Adds a reviewer's line comment to a change request, at a line of its head: the solve
    /// loop's next round addresses it.
    pub async fn review_comment(&self, job: ReviewCommentJob) -> Result<Comment, AppError> {
        let what = "a review comment";
        let (local, item, head) = self.open_change_request(what, job.change).await?;
        let reviewer = reviewer(local, job.reviewer.as_deref())?;
        if job.body.trim().is_empty() {
            return Err(AppError::Invalid("the comment is empty".to_owned()));
        }
        let file = job.file.trim_start_matches("./");
        let content = self.git.show(&head, file).ok_or_else(|| {
            AppError::Invalid(format!(
                "{file} is not a file of #{}'s head {}",
                job.change,
                bugloop_git::short(&head)
            ))
        })?;
        let lines = content.split(|b| *b == b'\n').count() - usize::from(content.ends_with(b"\n"));
        if job.line == 0 || job.line as usize > lines {
            return Err(AppError::Invalid(format!(
                "{file} has {lines} line{} at #{}'s head; line {} is not one of them",
                if lines == 1 { "" } else { "s" },
                job.change,
                job.line
            )));
        }
        let anchor = LineAnchor {
            path: file.to_owned(),
            line: job.line,
            end_line: None,
            commit: head,
        };
        Ok(local
            .review_comment(
                &ChangeKey(item.conversation()),
                &reviewer,
                &job.body,
                &anchor,
            )
            .await?)
    }

    /// Records a reviewer's decision on a change request's head.
    pub async fn review_decision(&self, job: ReviewDecisionJob) -> Result<ItemReview, AppError> {
        let (local, item, head) = self.open_change_request("a review", job.change).await?;
        let reviewer = reviewer(local, job.reviewer.as_deref())?;
        Ok(local
            .store()
            .add_review(item.number, &reviewer, job.decision, &job.body, &head)
            .await?)
    }

    /// Records check results on a change request's head, or runs the test commands there in
    /// the sandbox and records each one's result.
    pub async fn checks(&self, job: ChecksJob) -> Result<ChecksView, AppError> {
        let (local, _, head) = self.open_change_request("checks", job.change).await?;
        if job.record.is_empty() {
            let runs = bugloop_solve::test_head(&self.settings, &self.git, &head).await?;
            for run in runs {
                let state = if run.passed {
                    CheckState::Passed
                } else {
                    CheckState::Failed
                };
                let detail = run
                    .output
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or_default();
                local
                    .store()
                    .set_check(&head, &run.command, state, detail)
                    .await?;
            }
        }
        // Every name is checked before any is recorded: a bad one records none.
        for (name, _) in &job.record {
            if name.trim().is_empty() {
                return Err(AppError::Invalid(
                    "a check needs a name (NAME=STATE)".to_owned(),
                ));
            }
            if name.chars().any(|c| c.is_control() || is_invisible(c)) {
                return Err(AppError::Invalid(format!(
                    "{name:?} is not a check's name: it holds a line break, a control character \
                     or one that shows nothing"
                )));
            }
        }
        for (name, state) in &job.record {
            local.store().set_check(&head, name, *state, "").await?;
        }
        Ok(ChecksView {
            change: job.change,
            checks: local.store().checks(&head).await?,
            head,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_own_name;

    #[test]
    fn bugloops_own_name_is_refused_in_any_case_and_as_its_app() {
        for own in ["bugloop", "BugLoop", "bugloop[bot]", "BUGLOOP[BOT]"] {
            assert!(is_own_name(own, "bugloop"), "{own}");
        }
        for other in ["alice", "bugloop-dev", "bugloo", "bot"] {
            assert!(!is_own_name(other, "bugloop"), "{other}");
        }
    }
}
