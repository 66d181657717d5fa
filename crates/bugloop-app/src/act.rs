//! The jobs a developer's comment triggers: fix findings, do a requested change, answer a
//! question, act on a comment (choosing among those or weighing it as a dispute), and reply in a
//! finding's thread.

use std::sync::Arc;

use bugloop_domain::finding::FindingId;
use bugloop_domain::thread::{Comment, ThreadStatus, find_thread, reconstruct};
use bugloop_forge::ChangeKey;
use bugloop_loops::LoopEnv;
use bugloop_loops::act::Targets;
use bugloop_loops::build::WorkTarget;
use bugloop_report::act::ActReport;
use bugloop_report::dispute::DisputeOutcome;

use crate::outcome::act_verdict;
use crate::{App, AppError, Outcome, Verdict};

/// Fix open findings.
#[derive(Debug, Clone, Default)]
pub struct FixJob {
    /// Finding ids or unique prefixes; empty means every open finding.
    pub ids: Vec<String>,
    /// Extra guidance for the fix.
    pub guidance: Option<String>,
    pub model: Option<String>,
}

/// A developer's comment on the change, as on a pull request.
#[derive(Debug, Clone, Default)]
pub struct CommentJob {
    pub text: String,
    /// Reply in the thread of this finding (id or prefix) or comment (number).
    pub reply_to: Option<String>,
    pub model: Option<String>,
}

/// A developer's reply in a finding's thread.
#[derive(Debug, Clone, Default)]
pub struct ReplyJob {
    /// The finding (id or unique prefix).
    pub finding: String,
    pub text: String,
    /// Weigh it now (otherwise the next review does).
    pub now: bool,
    pub model: Option<String>,
}

/// What a reply did: stored only, or stored and weighed.
#[derive(Debug, Clone)]
pub enum ReplyOutcome {
    /// Stored, for the next review or `reply --now` to weigh.
    Stored,
    /// Stored in the thread of a finding that is resolved: nothing weighs it.
    StoredOnResolved {
        finding: String,
    },
    Weighed(DisputeOutcome),
}

impl App {
    /// The loops' environment for one job, with a fresh meter on `model`.
    pub(crate) fn loop_env(&self, model: Option<&str>) -> Result<LoopEnv<'_>, AppError> {
        let model = self.models.connect(model)?;
        Ok(self.loop_env_with(model.provider, model.meter))
    }

    /// The loops' environment for a job that asks no model anything (a regression's revert):
    /// it works whether or not a model could be connected, and a call would fail.
    pub(crate) fn loop_env_without_model(&self) -> LoopEnv<'_> {
        let meter = Arc::new(self.models.meter("none"));
        let provider: Arc<dyn bugloop_llm::Provider> =
            Arc::new(bugloop_llm::scripted::ScriptedProvider::new([]));
        self.loop_env_with(provider, meter)
    }

    fn loop_env_with(
        &self,
        provider: Arc<dyn bugloop_llm::Provider>,
        meter: Arc<bugloop_llm::budget::Meter>,
    ) -> LoopEnv<'_> {
        LoopEnv {
            forge: self.forge.as_ref(),
            git: &self.git,
            settings: &self.settings,
            provider: bugloop_loops::generation::watched(provider, self.progress.clone()),
            meter,
            runs_dir: self.runs_dir.clone(),
            progress: self.progress.clone(),
            work: match &self.pull_request {
                Some(pull) => WorkTarget::PullRequest {
                    change: pull.key.clone(),
                    number: pull.number,
                    head: pull.head_sha.clone(),
                    remote: pull.remote.clone(),
                    branch: pull.head_branch.clone(),
                },
                None => WorkTarget::LocalBranch,
            },
        }
    }

    /// The conversation jobs work on: the pull request's, or the checked-out branch's.
    pub fn conversation_key(&self) -> ChangeKey {
        match &self.pull_request {
            Some(pull) => pull.key.clone(),
            None => self.git.conversation_key(),
        }
    }

    /// Fixes open findings with one verified commit.
    pub async fn fix(&self, job: FixJob) -> Result<Outcome<ActReport>, AppError> {
        let targets = if job.ids.is_empty() {
            Targets::All
        } else {
            Targets::Ids(job.ids)
        };
        let change = self.conversation_key();
        // The ids first: a typo or a resolved finding is said without a model.
        let comments = self.forge.comments(&change).await?;
        let state = reconstruct(&comments, &self.settings.markers);
        if let Some(answered) =
            bugloop_loops::act::answered_without_fixing(&state, &targets, &change)?
        {
            return Ok(judged(answered));
        }
        let env = self.loop_env(job.model.as_deref())?;
        let _lease = self.local_lease(&change)?;
        let report =
            bugloop_loops::act::fix(&env, &change, &targets, job.guidance.as_deref()).await?;
        Ok(judged(report))
    }

    /// Makes a requested change (`chore: apply user request`).
    pub async fn do_request(
        &self,
        request: &str,
        model: Option<&str>,
    ) -> Result<Outcome<ActReport>, AppError> {
        let env = self.loop_env(model)?;
        Ok(judged(bugloop_loops::act::do_request(&env, request).await?))
    }

    /// Answers a question about the code; changes nothing.
    pub async fn ask(
        &self,
        question: &str,
        model: Option<&str>,
    ) -> Result<Outcome<String>, AppError> {
        let env = self.loop_env(model)?;
        let change = self.conversation_key();
        let answer = bugloop_loops::act::ask(&env, &change, question).await?;
        Ok(Outcome::new(answer, Verdict::Done))
    }

    /// Stores a developer's comment and acts on it (fix, do, answer, or weigh it as a dispute).
    /// An error after the comment is stored is [`AppError::AfterStoring`].
    pub async fn comment(&self, job: CommentJob) -> Result<Outcome<ActReport>, AppError> {
        let env = self.loop_env(job.model.as_deref())?;
        let change = self.conversation_key();
        let parent = match &job.reply_to {
            Some(target) => Some(self.thread_root(&change, target).await?),
            None => None,
        };
        let _lease = self.local_lease(&change)?;
        let comment = self
            .local_store("bugloop comment")?
            .developer_comment(&change, &job.text, parent.as_deref())
            .await?;
        let report = bugloop_loops::act::on_comment(&env, &change, &comment)
            .await
            .map_err(|e| after_storing(e.into(), &comment, &change))?;
        Ok(judged(report))
    }

    /// Stores a developer's reply in a finding's thread and, with `now`, weighs it.
    pub async fn reply(&self, job: ReplyJob) -> Result<Outcome<ReplyOutcome>, AppError> {
        if job.text.trim().is_empty() {
            return Err(AppError::Invalid(
                "the reply is empty: say what you think of the finding".to_owned(),
            ));
        }
        let change = self.conversation_key();
        let root = self.thread_root(&change, &job.finding).await?;
        // Connect before storing: a model that cannot be used fails with nothing stored. Weighing
        // holds the conversation, so two runs do not answer one reply twice (a reply without
        // `--now` is only stored: the run holding it reads it).
        let (env, _lease) = if job.now {
            let env = self.loop_env(job.model.as_deref())?;
            (Some(env), self.local_lease(&change)?)
        } else {
            (None, None)
        };
        let comment = self
            .local_store("bugloop reply")?
            .developer_comment(&change, &job.text, Some(&root))
            .await?;
        let Some(env) = env else {
            let comments = self.forge.comments(&change).await?;
            let state = reconstruct(&comments, &self.settings.markers);
            let resolved = state
                .threads
                .iter()
                .find(|t| t.id == root && t.status == ThreadStatus::Resolved)
                .and_then(|t| t.finding_id.as_ref());
            let stored = match resolved {
                Some(id) => ReplyOutcome::StoredOnResolved {
                    finding: id.as_str().to_owned(),
                },
                None => ReplyOutcome::Stored,
            };
            return Ok(Outcome::new(stored, Verdict::Done));
        };
        let weighed = async {
            let comments = self.forge.comments(&change).await?;
            let state = reconstruct(&comments, &self.settings.markers);
            let id: FindingId = state
                .threads
                .iter()
                .find(|t| t.id == root)
                .and_then(|t| t.finding_id.clone())
                .ok_or_else(|| AppError::Invalid(format!("comment {root} is not a finding")))?;
            Ok::<_, AppError>(bugloop_loops::disputes::settle_dispute(&env, &change, &id).await?)
        }
        .await
        .map_err(|e| after_storing(e, &comment, &change))?;
        Ok(Outcome::new(ReplyOutcome::Weighed(weighed), Verdict::Done))
    }

    /// The root comment of a finding (by id or prefix) or a comment by its number.
    async fn thread_root(&self, change: &ChangeKey, target: &str) -> Result<String, AppError> {
        let comments = self.forge.comments(change).await?;
        if comments.iter().any(|c| c.id == target) {
            return Ok(target.to_owned());
        }
        let state = reconstruct(&comments, &self.settings.markers);
        Ok(find_thread(&state.threads, target)?.id.clone())
    }
}

fn judged(report: ActReport) -> Outcome<ActReport> {
    let verdict = act_verdict(&report);
    Outcome::new(report, verdict)
}

fn after_storing(error: AppError, comment: &Comment, change: &ChangeKey) -> AppError {
    AppError::AfterStoring {
        comment: comment.id.clone(),
        change: change.to_string(),
        source: Box::new(error),
    }
}
