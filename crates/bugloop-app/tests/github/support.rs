//! A pull request to run bugloop on: a repository with `main` and `feature` pushed to a bare
//! `origin` (with GitHub's `refs/pull/7/head`), a clone of it as the Action's workspace, the
//! GitHub simulator holding pull request #7, and scripted models.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bugloop_app::types::ActReport;
use bugloop_app::{AppError, EventOutcome, GitHubEventJob, Outcome, run_github_event};

/// Runs `job` as the Action and the server do, to its outcome.
pub async fn run(job: GitHubEventJob) -> Result<EventOutcome, AppError> {
    run_github_event(job).await.map(|run| run.outcome)
}
use bugloop_webhooks::Trigger;
use serde_json::{Value, json};

pub use bugloop_github_sim::fixture::FixtureOptions;
use bugloop_github_sim::fixture::PullRequestFixture;
pub use bugloop_github_sim::fixture::{BOT, LIB};

/// The pull request fixture, with scripts and a user configuration file of its own.
pub struct World {
    pub fixture: PullRequestFixture,
    pub scripts: tempfile::TempDir,
    pub config: PathBuf,
}

impl std::ops::Deref for World {
    type Target = PullRequestFixture;

    fn deref(&self) -> &PullRequestFixture {
        &self.fixture
    }
}

impl World {
    pub async fn new() -> World {
        Self::with_configs(None, None, false).await
    }

    /// `.bugloop/config.yml` on main (the base) and in the pull request's head, when given; the
    /// pull request from a fork when `fork`.
    pub async fn with_configs(
        base_config: Option<&str>,
        head_config: Option<&str>,
        fork: bool,
    ) -> World {
        Self::with_options(FixtureOptions {
            base_config,
            head_config,
            fork,
            ..FixtureOptions::default()
        })
        .await
    }

    pub async fn with_options(options: FixtureOptions<'_>) -> World {
        let fixture = PullRequestFixture::new(options).await;
        let scripts = tempfile::tempdir().unwrap();
        let config = scripts.path().join("user-config.yml");
        std::fs::write(&config, "{}\n").unwrap();
        World {
            fixture,
            scripts,
            config,
        }
    }

    /// A developer's comment event: on the conversation, or (with `in_reply_to`) a reply in a
    /// review thread.
    pub fn comment_trigger(
        &self,
        id: u64,
        author: &str,
        body: &str,
        in_reply_to: Option<u64>,
    ) -> Trigger {
        Trigger::Comment {
            repository: "acme/widgets".to_owned(),
            number: 7,
            kind: if in_reply_to.is_some() {
                bugloop_webhooks::CommentKind::Review
            } else {
                bugloop_webhooks::CommentKind::Issue
            },
            id,
            body: body.to_owned(),
            author: author.to_owned(),
            in_reply_to,
            installation: None,
        }
    }

    /// Runs a comment event with `model`.
    pub async fn on_comment(&self, trigger: Trigger, model: String) -> EventOutcome {
        run(self.job(trigger, model)).await.unwrap()
    }

    /// [`World::on_comment`] for `author`'s comment `id` on the conversation (not in a review
    /// thread), which said `said`.
    pub async fn on_conversation_comment(
        &self,
        id: u64,
        author: &str,
        said: &str,
        model: String,
    ) -> EventOutcome {
        self.on_comment(self.comment_trigger(id, author, said, None), model)
            .await
    }

    /// A model that answers once, with `text`.
    pub fn answering(&self, text: &str) -> String {
        answers(self.scripts.path(), &[json!({ "text": text })])
    }

    /// Runs a comment event with `model`, which must have been handled as a comment: what it
    /// did.
    pub async fn commented(&self, trigger: Trigger, model: String) -> Outcome<ActReport> {
        let EventOutcome::Comment { outcome, .. } = self.on_comment(trigger, model).await else {
            panic!("not a comment");
        };
        *outcome
    }

    pub fn review_trigger(&self) -> Trigger {
        crate::job::review_trigger(&self.fixture)
    }

    /// The event `trigger` as the Action gives it ([`crate::job::job`]), retried after short
    /// waits.
    pub fn job(&self, trigger: Trigger, model: String) -> GitHubEventJob {
        let mut job = crate::job::job(&self.fixture, trigger, &self.config, model);
        job.policy.backoff = Duration::from_millis(5);
        job
    }

    /// Reviews pull request #7 with a model that reports the off-by-one: the finding's root
    /// comment id and the finding id.
    pub async fn reviewed(&self) -> (u64, String) {
        self.reviewed_with(&[off_by_one()]).await
    }

    /// Reviews pull request #7 with a model that reports `findings`: the first finding's root
    /// comment id and the finding id.
    pub async fn reviewed_with(&self, findings: &[Value]) -> (u64, String) {
        let EventOutcome::Review { outcome, .. } = self.review(findings).await else {
            panic!("not a review");
        };
        let id = outcome.report.unwrap().findings[0]
            .finding
            .id
            .as_str()
            .to_owned();
        (self.finding_comments()[0].id, id)
    }

    /// Reviews pull request #7 with a model that reports `findings`.
    pub async fn review(&self, findings: &[Value]) -> EventOutcome {
        let model = review_script(self.scripts.path(), findings);
        run(self.job(self.review_trigger(), model)).await.unwrap()
    }
}

pub use bugloop_github_sim::fixture::off_by_one;

/// Fails the test unless one of `lines` (a run's warnings, its conversation's problems) contains
/// `needle`; the message shows them all.
#[track_caller]
pub fn assert_said(lines: &[String], needle: &str) {
    assert!(
        lines.iter().any(|line| line.contains(needle)),
        "{needle:?} is in none of {lines:?}"
    );
}

/// A finding whose description alone is over GitHub's body limit.
pub fn huge_finding() -> Value {
    let mut finding = off_by_one();
    finding["title"] = json!("Index one past the end, explained at length");
    finding["description"] = json!("Indexing at `v.len()` always panics. ".repeat(2_000));
    finding
}

/// A script of plain answers (JSON for structured questions) and tool calls, in order.
pub fn answers(dir: &Path, lines: &[Value]) -> String {
    bugloop_github_sim::fixture::script_file(dir, lines)
}

/// A review script: the findings in pass 1, then passes 2-4.
pub fn review_script(dir: &Path, findings: &[Value]) -> String {
    answers(dir, &bugloop_github_sim::fixture::review_lines(findings))
}
