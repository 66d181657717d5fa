//! The solve pipeline's tracker on GitHub: the issue and its labels through the REST API, the
//! branch through the clone's remote (`git push` with a lease: created only if absent, moved only
//! from the commit the pipeline names), the draft as a pull request (an open one of the branch is
//! found first), `markPullRequestReadyForReview`, the head's check runs and the pull request's
//! reviews.
//!
//! The issue's solve record lives on the issue itself, in one comment bugloop keeps up to date:
//! a table of every transition for people, and the record as data (base64 JSON, so no text in it
//! can end the hidden comment). Only bugloop's own comment is read, by the login it writes as; the
//! check that a step starts from the recorded state is made against that comment, and the server
//! runs one job per conversation at a time, so two runs do not race on it.

use async_trait::async_trait;
use base64::Engine;
use bugloop_domain::learning::Pattern;
use bugloop_domain::markdown::quiet;
use bugloop_domain::solve::SolveState;
use bugloop_git::Git;
use bugloop_github::{GitHubError, NewPullRequest, PullRequest};
use jiff::Timestamp;

use super::GitHubForge;
use crate::ForgeError;
use crate::tracker::{
    ChangeRequest, ChangeRequestState, Check, DraftRequest, HeadReview, IssueDraft,
    LEARNING_ISSUES, Labelling, NewTransition, PatternIssue, REPORT_LABEL, ReportCount,
    SolveTransition, TrackedIssue, Tracker, branch_moved, check_branch_name,
};

const RECORD_TAG: &str = "<!-- bugloop:solve-record -->";
const DATA_PREFIX: &str = "<!-- bugloop:solve-data ";

/// The forge of a repository's issues and pull requests, and the clone bugloop works in.
#[derive(Debug)]
pub struct GitHubTracker<'f> {
    forge: &'f GitHubForge,
    git: Git,
    /// The clone's remote for the repository (`origin`).
    remote: String,
    /// Asked before every write (the server's worker, while its lease holds).
    fence: Option<crate::fencing::Fence>,
}

impl<'f> GitHubTracker<'f> {
    pub fn new(forge: &'f GitHubForge, git: Git, remote: &str) -> GitHubTracker<'f> {
        GitHubTracker {
            forge,
            git,
            remote: remote.to_owned(),
            fence: None,
        }
    }

    /// Every write asks `fence` first.
    pub fn fenced(mut self, fence: Option<crate::fencing::Fence>) -> Self {
        self.fence = fence;
        self
    }

    fn may_write(&self) -> Result<(), ForgeError> {
        self.fence
            .as_ref()
            .map_or(Ok(()), crate::fencing::Fence::check)
    }

    /// bugloop's record comment on the issue, and the steps it holds.
    async fn record(&self, issue: u64) -> Result<(Option<u64>, Vec<SolveTransition>), ForgeError> {
        let comments = self
            .forge
            .client
            .issue_comments(&self.forge.repo, issue)
            .await?;
        for comment in comments {
            let mine = comment
                .user
                .as_ref()
                .is_some_and(|u| self.forge.identity.is_bot(&u.login));
            let body = comment.body.unwrap_or_default();
            if !mine || !body.starts_with(RECORD_TAG) {
                continue;
            }
            let steps = decode(&body).ok_or_else(|| {
                ForgeError::Invalid(format!(
                    "issue #{issue}: bugloop's solve record (comment {}) cannot be read",
                    comment.id
                ))
            })?;
            return Ok((Some(comment.id), steps));
        }
        Ok((None, Vec::new()))
    }

    /// The error pattern of an issue bugloop opened from reports: the lines at the end of the
    /// body it wrote, before the count (a person's issue carries none, whatever its text says).
    fn pattern_of(&self, issue: &bugloop_github::Issue) -> Option<Pattern> {
        let mine = issue
            .user
            .as_ref()
            .is_some_and(|u| self.forge.identity.is_bot(&u.login));
        if !mine || issue.pull_request.is_some() {
            return None;
        }
        Pattern::at_end(trailer(issue.body.as_deref()?).rest)
    }

    fn change_request_of(&self, pull: PullRequest) -> ChangeRequest {
        ChangeRequest {
            number: pull.number,
            conversation: GitHubForge::change_key(&self.forge.repo, pull.number),
            url: Some(format!(
                "https://github.com/{}/pull/{}",
                self.forge.repo, pull.number
            )),
            title: pull.title,
            branch: pull.head.branch,
            base: pull.base.branch,
            draft: pull.draft.unwrap_or(false),
            state: match (pull.state.as_str(), pull.merged) {
                (_, Some(true)) => ChangeRequestState::Merged,
                ("open", _) => ChangeRequestState::Open,
                _ => ChangeRequestState::Closed,
            },
            merge_commit: pull
                .merged
                .unwrap_or(false)
                .then_some(pull.merge_commit_sha)
                .flatten(),
        }
    }
}

fn decode(body: &str) -> Option<Vec<SolveTransition>> {
    let start = body.find(DATA_PREFIX)? + DATA_PREFIX.len();
    let end = start + body[start..].find(" -->")?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(body[start..end].trim())
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The record comment: the steps as a table, then as data. Within GitHub's limit: older
/// attempts' command output goes first, then the oldest rows of the table.
fn render(steps: &[SolveTransition]) -> Result<String, ForgeError> {
    let mut steps = steps.to_vec();
    let limit = bugloop_github::MAX_BODY_CHARS - 1_000;
    loop {
        let data = serde_json::to_vec(&steps)
            .map_err(|e| ForgeError::Invalid(format!("the solve record: {e}")))?;
        let data = base64::engine::general_purpose::STANDARD.encode(data);
        let state = steps.last().map_or("(new)", |s| s.to.as_str());
        let mut body = format!(
            "{RECORD_TAG}\n### bugloop solve: {state}\n\n| when | step | why |\n|---|---|---|\n"
        );
        let room = limit.saturating_sub(data.len() + body.len());
        let rows: Vec<String> = steps
            .iter()
            .map(|s| {
                format!(
                    "| {} | {} -> {} | {} |\n",
                    s.at.strftime("%Y-%m-%d %H:%M"),
                    s.from.map_or("(new)", SolveState::as_str),
                    s.to,
                    quiet(&s.reason).replace('|', "\\|")
                )
            })
            .collect();
        let mut shown = 0;
        let mut table = String::new();
        for row in rows.iter().rev() {
            if table.len() + row.len() > room {
                break;
            }
            table.insert_str(0, row);
            shown += 1;
        }
        if shown < rows.len() {
            body.push_str(&format!("| | ({} earlier steps) | |\n", rows.len() - shown));
        }
        body.push_str(&table);
        body.push_str(&format!("\n{DATA_PREFIX}{data} -->\n"));
        if body.chars().count() <= bugloop_github::MAX_BODY_CHARS {
            return Ok(body);
        }
        // Too long: drop the largest detail that can go (a failed attempt's output).
        let Some(step) = steps
            .iter_mut()
            .find(|s| s.detail.get("output").is_some_and(|o| o != ""))
        else {
            return Err(ForgeError::TooLarge(
                "the solve record is over GitHub's comment limit".to_owned(),
            ));
        };
        if let Some(detail) = step.detail.as_object_mut() {
            detail.insert(
                "output".to_owned(),
                serde_json::Value::String(String::new()),
            );
        }
    }
}

const COUNT_PREFIX: &str = "<!-- bugloop:reports ";

/// The trailer bugloop keeps at the end of a reported issue's body: the fingerprint's marker
/// line, then the count (a line for people and a hidden one to read back). Only the end is read:
/// the body quotes the report, whose lines may be anything, the markers' text included.
struct Trailer<'b> {
    /// The body without the count lines.
    rest: &'b str,
    count: u64,
}

fn trailer(body: &str) -> Trailer<'_> {
    let trimmed = body.trim_end();
    let counted = trimmed.rsplit_once('\n').and_then(|(before, last)| {
        let count = last
            .strip_prefix(COUNT_PREFIX)?
            .strip_suffix(" -->")?
            .parse()
            .ok()?;
        let (rest, shown) = before.trim_end().rsplit_once('\n')?;
        shown.starts_with("**Reports:** ").then_some((rest, count))
    });
    match counted {
        Some((rest, count)) => Trailer { rest, count },
        None => Trailer {
            rest: trimmed,
            count: 1,
        },
    }
}

/// Whether `body` is the body of the issue whose fingerprint's marker is `marker`: its last line
/// before the count.
fn carries(body: &str, marker: &str) -> bool {
    trailer(body).rest.trim_end().lines().last() == Some(marker)
}

/// The issue's body with its report count.
fn with_count(body: &str, count: u64) -> String {
    let mut body = trailer(body).rest.trim_end().to_owned();
    body.push_str(&format!(
        "\n\n**Reports:** {count} (last {})\n{COUNT_PREFIX}{count} -->\n",
        Timestamp::now().strftime("%Y-%m-%d %H:%M UTC")
    ));
    body
}

#[async_trait]
impl Tracker for GitHubTracker<'_> {
    /// The issue is found by its marker among the bot's own issues with the draft's first label
    /// (reports of a repository are one job at a time on the server, so none is filed twice);
    /// a repeat raises the count in its body.
    async fn report(
        &self,
        _fingerprint: &str,
        marker: &str,
        draft: &IssueDraft,
    ) -> Result<ReportCount, ForgeError> {
        self.may_write()?;
        let (client, repo) = (&self.forge.client, &self.forge.repo);
        let label = draft.labels.first().map_or("bug", String::as_str);
        let find = async || -> Result<Option<bugloop_github::Issue>, ForgeError> {
            Ok(client
                .issues_labelled(repo, label, &self.forge.bot)
                .await?
                .into_iter()
                .find(|issue| {
                    issue
                        .user
                        .as_ref()
                        .is_some_and(|u| self.forge.identity.is_bot(&u.login))
                        && issue.body.as_deref().is_some_and(|b| carries(b, marker))
                }))
        };
        let count_on = |issue: bugloop_github::Issue, count: u64, filed: bool| ReportCount {
            number: issue.number,
            title: issue.title,
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
            count,
            filed,
        };
        if let Some(found) = find().await? {
            let count = trailer(found.body.as_deref().unwrap_or_default()).count + 1;
            let body = with_count(found.body.as_deref().unwrap_or_default(), count);
            let updated = client.update_issue_body(repo, found.number, &body).await?;
            return Ok(count_on(updated, count, false));
        }
        let labels: Vec<&str> = draft.labels.iter().map(String::as_str).collect();
        match client
            .create_issue(repo, &draft.title, &with_count(&draft.body, 1), &labels)
            .await
        {
            Ok(created) => Ok(count_on(created, 1, true)),
            // Sent, then lost on the way back: look before filing again.
            Err(GitHubError::Ambiguous { .. }) => match find().await? {
                Some(found) => Ok(count_on(found, 1, true)),
                None => Err(ForgeError::Ambiguous(format!(
                    "filing the issue {:?} may have failed; none is there",
                    draft.title
                ))),
            },
            Err(other) => Err(other.into()),
        }
    }

    async fn issue(&self, number: u64) -> Result<TrackedIssue, ForgeError> {
        let issue = self.forge.client.issue(&self.forge.repo, number).await?;
        if issue.pull_request.is_some() {
            return Err(ForgeError::NotFound(format!(
                "#{number} is a pull request, not an issue"
            )));
        }
        Ok(TrackedIssue {
            number,
            pattern: self.pattern_of(&issue),
            title: issue.title,
            body: issue.body.unwrap_or_default(),
            labels: issue.labels.into_iter().map(|l| l.name).collect(),
            assignees: issue.assignees.into_iter().map(|a| a.login).collect(),
            open: issue.state == "open",
            opened_at: issue.created_at,
            conversation: GitHubForge::change_key(&self.forge.repo, number),
        })
    }

    async fn pattern_issues(&self, pattern: &Pattern) -> Result<Vec<PatternIssue>, ForgeError> {
        let mut issues = self
            .forge
            .client
            .issues_labelled(&self.forge.repo, REPORT_LABEL, &self.forge.bot)
            .await?;
        issues.sort_by_key(|issue| std::cmp::Reverse(issue.number));
        let mut found = Vec::new();
        for issue in issues {
            let Some(other) = self.pattern_of(&issue) else {
                continue;
            };
            if pattern.shares(&other) == (false, false) {
                continue;
            }
            found.push(PatternIssue {
                number: issue.number,
                pattern: other,
                history: self.solve_history(issue.number).await?,
            });
            if found.len() == LEARNING_ISSUES {
                break;
            }
        }
        Ok(found)
    }

    async fn labellings(&self, issue: u64, label: &str) -> Result<Vec<Labelling>, ForgeError> {
        let events = self
            .forge
            .client
            .label_events(&self.forge.repo, issue)
            .await?;
        events
            .into_iter()
            .filter(|e| e.label == label)
            .map(|e| {
                let at = e.created_at.parse::<Timestamp>().map_err(|error| {
                    ForgeError::Invalid(format!(
                        "issue #{issue}: a label event's time {:?}: {error}",
                        e.created_at
                    ))
                })?;
                Ok(Labelling { actor: e.actor, at })
            })
            .collect()
    }

    async fn set_assignee(
        &self,
        issue: u64,
        login: &str,
        assigned: bool,
    ) -> Result<(), ForgeError> {
        self.may_write()?;
        self.forge
            .client
            .set_assignee(&self.forge.repo, issue, login, assigned)
            .await?;
        Ok(())
    }

    async fn add_labels(&self, issue: u64, labels: &[String]) -> Result<(), ForgeError> {
        self.may_write()?;
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        Ok(self
            .forge
            .client
            .add_labels(&self.forge.repo, issue, &labels)
            .await?)
    }

    async fn remove_label(&self, issue: u64, label: &str) -> Result<(), ForgeError> {
        self.may_write()?;
        Ok(self
            .forge
            .client
            .remove_label(&self.forge.repo, issue, label)
            .await?)
    }

    async fn solve_history(&self, issue: u64) -> Result<Vec<SolveTransition>, ForgeError> {
        let (_, steps) = self.record(issue).await?;
        Ok(steps)
    }

    async fn record_transition(
        &self,
        issue: u64,
        step: NewTransition<'_>,
    ) -> Result<SolveTransition, ForgeError> {
        self.may_write()?;
        let (comment, mut steps) = self.record(issue).await?;
        let current = steps.last().map(|s| s.to);
        if current != step.from {
            return Err(ForgeError::Invalid(format!(
                "issue #{issue} is {} now, not {}: another run moved it",
                current.map_or("not started", SolveState::as_str),
                step.from.map_or("not started", SolveState::as_str)
            )));
        }
        let step = step.recorded_at(Timestamp::now());
        steps.push(step.clone());
        let body = render(&steps)?;
        match comment {
            Some(id) => {
                self.forge
                    .client
                    .update_issue_comment(&self.forge.repo, id, &body)
                    .await?;
            }
            None => {
                self.forge
                    .client
                    .create_issue_comment(&self.forge.repo, issue, &body)
                    .await?;
            }
        }
        Ok(step)
    }

    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        let listed = self.git.run(&[
            "ls-remote",
            "--heads",
            &self.remote,
            &format!("refs/heads/{branch}"),
        ])?;
        Ok(listed
            .lines()
            .find_map(|line| line.split_whitespace().next().map(str::to_owned)))
    }

    async fn publish_branch(
        &self,
        branch: &str,
        commit: &str,
        previous: Option<&str>,
    ) -> Result<(), ForgeError> {
        self.may_write()?;
        check_branch_name(&self.git, branch)?;
        let lease = format!(
            "--force-with-lease=refs/heads/{branch}:{}",
            previous.unwrap_or("")
        );
        self.git
            .run(&[
                "push",
                "--quiet",
                "--no-verify",
                &lease,
                &self.remote,
                &format!("{commit}:refs/heads/{branch}"),
            ])
            .map_err(|e| branch_moved(branch, "pushed", e))?;
        Ok(())
    }

    async fn open_draft(&self, draft: &DraftRequest) -> Result<ChangeRequest, ForgeError> {
        self.may_write()?;
        let repo = &self.forge.repo;
        let client = &self.forge.client;
        if let Some(open) = client
            .open_pull_requests_from(repo, &draft.branch)
            .await?
            .into_iter()
            .next()
        {
            return Ok(self.change_request_of(open));
        }
        let created = client
            .create_pull_request(
                repo,
                &NewPullRequest {
                    title: draft.title.clone(),
                    body: draft.body.clone(),
                    head: draft.branch.clone(),
                    base: draft.base.clone(),
                    draft: true,
                },
            )
            .await;
        match created {
            Ok(pull) => Ok(self.change_request_of(pull)),
            // Sent, then lost on the way back (or opened by a run before): look again.
            Err(GitHubError::Ambiguous { .. } | GitHubError::Unprocessable { .. }) => client
                .open_pull_requests_from(repo, &draft.branch)
                .await?
                .into_iter()
                .next()
                .map(|pull| self.change_request_of(pull))
                .ok_or_else(|| {
                    ForgeError::Ambiguous(format!(
                        "opening the draft of {} may have failed; none is open",
                        draft.branch
                    ))
                }),
            Err(other) => Err(other.into()),
        }
    }

    async fn change_request(&self, number: u64) -> Result<ChangeRequest, ForgeError> {
        let pull = self
            .forge
            .client
            .pull_request(&self.forge.repo, number)
            .await?;
        Ok(self.change_request_of(pull))
    }

    /// GitHub closes it: the draft's body says `Closes #N`.
    async fn close_solved(&self, _issue: u64) -> Result<(), ForgeError> {
        Ok(())
    }

    async fn reopen(&self, issue: u64) -> Result<(), ForgeError> {
        self.may_write()?;
        let found = self.forge.client.issue(&self.forge.repo, issue).await?;
        if found.state != "open" {
            self.forge
                .client
                .set_issue_state(&self.forge.repo, issue, "open")
                .await?;
        }
        Ok(())
    }

    async fn mark_ready(&self, number: u64) -> Result<(), ForgeError> {
        self.may_write()?;
        let pull = self
            .forge
            .client
            .pull_request(&self.forge.repo, number)
            .await?;
        Ok(self.forge.client.set_draft(&pull.node_id, false).await?)
    }

    async fn checks(&self, commit: &str) -> Result<Vec<Check>, ForgeError> {
        let checks = self
            .forge
            .client
            .commit_checks(&self.forge.repo, commit)
            .await?;
        let mut found: Vec<Check> = checks
            .runs
            .into_iter()
            .map(|(name, status, conclusion)| Check {
                passed: (status == "completed").then_some(matches!(
                    conclusion.as_deref(),
                    Some("success" | "neutral" | "skipped")
                )),
                name,
            })
            .collect();
        // Commit statuses (the older API) are summed up in one; `pending` with none at all
        // means there are none.
        match (checks.combined_status.as_str(), checks.statuses) {
            ("failure" | "error", _) => found.push(Check {
                name: "commit status".to_owned(),
                passed: Some(false),
            }),
            ("pending", n) if n > 0 => found.push(Check {
                name: "commit status".to_owned(),
                passed: None,
            }),
            _ => {}
        }
        Ok(found)
    }

    async fn reviews_of(&self, number: u64, commit: &str) -> Result<Vec<HeadReview>, ForgeError> {
        let reviews = self
            .forge
            .client
            .pull_reviews(&self.forge.repo, number)
            .await?;
        Ok(reviews
            .into_iter()
            .filter(|r| r.state != "PENDING" && r.commit_id.as_deref() == Some(commit))
            .filter_map(|r| {
                let changes_requested = r.state == "CHANGES_REQUESTED";
                r.user.map(|u| HeadReview {
                    reviewer: u.login,
                    changes_requested,
                })
            })
            .collect())
    }

    async fn changes_requested(&self, number: u64) -> Result<bool, ForgeError> {
        let reviews = self
            .forge
            .client
            .pull_reviews(&self.forge.repo, number)
            .await?;
        // Each reviewer's latest decision counts; a comment does not change it.
        let mut latest: std::collections::HashMap<String, String> =
            std::collections::HashMap::new();
        for review in reviews {
            let Some(user) = review.user else { continue };
            if matches!(
                review.state.as_str(),
                "APPROVED" | "CHANGES_REQUESTED" | "DISMISSED"
            ) {
                latest.insert(user.login, review.state);
            }
        }
        // Anyone may review a public pull request: only those who may change the repository
        // hold the draft back.
        for (login, state) in &latest {
            if state == "CHANGES_REQUESTED"
                && crate::Forge::permission(self.forge, login)
                    .await?
                    .may_modify_files()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod trailer_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_the_trailer_counts_not_the_quoted_report() {
        let marker = "<!-- bugloop:fingerprint aa11 -->";
        // A report that quotes another issue's marker and a count line.
        let body = format!(
            "```text\n<!-- bugloop:fingerprint bb22 -->\n<!-- bugloop:reports 99 -->\n```\n\n{marker}\n"
        );
        assert!(carries(&body, marker));
        assert!(!carries(&body, "<!-- bugloop:fingerprint bb22 -->"));
        assert_eq!(trailer(&body).count, 1);
        let twice = with_count(&with_count(&body, 1), 2);
        assert!(carries(&twice, marker));
        assert_eq!(trailer(&twice).count, 2);
        // The quoted lines are kept as they were.
        assert!(twice.contains("<!-- bugloop:reports 99 -->\n```"));
        assert_eq!(twice.matches("**Reports:**").count(), 1);
    }
}
