//! Acting on findings and comments (bugbot's fix/do/think and the reviewer's disputes): `fix`
//! (Build agent on the findings, verified, committed, landed, findings resolved), `do` (the same
//! for a general request), `ask` (the Plan agent answers), `on_comment` (intent, permission, then
//! one of those), and `settle_dispute` (concede, maintain or escalate a developer's reply).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bugloop_agent::{Agent, Outcome, Task};
use bugloop_config::Config;
use bugloop_domain::finding::FindingId;
use bugloop_domain::safety::{
    MAX_FINDING_BODY_CHARS, sanitize_user_comment, truncate_finding_body,
};
use bugloop_domain::thread::{
    Comment, ReviewState, ThreadState, ThreadStatus, find_thread, reconstruct,
};
use bugloop_forge::{ChangeKey, Forge, ForgeError};
use bugloop_git::{Git, short};
use bugloop_llm::budget::Meter;
use bugloop_llm::{JsonSchemaFormat, Message, Provider};
use bugloop_sandbox::Policy;
use bugloop_tools::{ToolContext, Toolset, Workspace};
use serde::{Deserialize, Serialize};

use crate::build::{
    BuildEnv, BuildError, BuildResult, BuildStatus, BuildTask, Landing, Workbench, build, land,
};
use crate::context::rules_of;
use crate::intent::{Classified, Intent, OpenFinding, classify};
use crate::prompt::{fill, rules_block};
use crate::publish::resolve_thread;
use crate::publish::{disputed_reply, escalated_reply, info_reply};
use crate::{Progress, sandbox_settings};

pub const FIX_PROMPT: &str = include_str!("../prompts/fix.md");
pub const DO_PROMPT: &str = include_str!("../prompts/do.md");
pub const ASK_PROMPT: &str = include_str!("../prompts/ask.md");
pub const DISPUTE_PROMPT: &str = include_str!("../prompts/dispute.md");

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error(transparent)]
    Config(Box<bugloop_config::ConfigError>),
    #[error("{0}")]
    Agent(#[from] bugloop_agent::AgentError),
    #[error("{0}")]
    Invalid(String),
}

impl From<bugloop_config::ConfigError> for ActError {
    fn from(error: bugloop_config::ConfigError) -> Self {
        ActError::Config(Box::new(error))
    }
}

/// What the acting loops work with.
pub struct ActEnv<'a> {
    pub forge: &'a dyn Forge,
    pub git: &'a Git,
    pub config: &'a Config,
    pub provider: Arc<dyn Provider>,
    pub meter: Arc<Meter>,
    pub runs_dir: PathBuf,
    pub progress: Arc<dyn Progress>,
}

impl std::fmt::Debug for ActEnv<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActEnv")
            .field("forge", &self.forge.name())
            .finish_non_exhaustive()
    }
}

impl ActEnv<'_> {
    fn build_env(&self) -> BuildEnv<'_> {
        BuildEnv {
            config: self.config,
            provider: self.provider.clone(),
            meter: self.meter.clone(),
            runs_dir: self.runs_dir.clone(),
            progress: self.progress.clone(),
        }
    }

    async fn state(&self, change: &ChangeKey) -> Result<(Vec<Comment>, ReviewState), ActError> {
        let markers = bugloop_config::marker_syntax(self.config)?;
        let comments = self.forge.comments(change).await?;
        let state = reconstruct(&comments, &markers);
        Ok((comments, state))
    }
}

/// What an action did, for the caller to show.
#[derive(Debug, Clone, Serialize)]
pub struct ActReport {
    pub action: Intent,
    /// How the action was chosen (`command`, `rules`, `model`).
    pub chosen_by: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// The answer (think) or the summary posted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub resolved: Vec<String>,
    /// One line for people.
    pub message: String,
}

/// Which findings to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    All,
    Ids(Vec<String>),
}

fn open_threads(state: &ReviewState) -> Vec<&ThreadState> {
    state
        .threads
        .iter()
        .filter(|t| t.finding_id.is_some() && t.status != ThreadStatus::Resolved)
        .collect()
}

fn findings_block(threads: &[&ThreadState]) -> String {
    threads
        .iter()
        .map(|t| {
            let id = t.finding_id.as_ref().map_or("", |f| f.as_str());
            let place = match (&t.file, t.line) {
                (Some(f), Some(l)) => format!("{f}:{l}"),
                (Some(f), None) => f.clone(),
                _ => "(no file)".to_owned(),
            };
            format!(
                "## Finding `{id}` at {place}\n\n{}\n",
                truncate_finding_body(t.body.trim(), MAX_FINDING_BODY_CHARS)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fixes open findings: one verified commit `fix: bugloop autofix - resolve <ids>`.
pub async fn fix(
    env: &ActEnv<'_>,
    change: &ChangeKey,
    targets: &Targets,
    user_comment: Option<&str>,
) -> Result<ActReport, ActError> {
    let (comments, state) = env.state(change).await?;
    let open = open_threads(&state);
    let chosen: Vec<&ThreadState> = match targets {
        Targets::All => open.clone(),
        Targets::Ids(ids) => {
            let mut chosen = Vec::new();
            for id in ids {
                let thread = find_thread(open.iter().copied(), id).map_err(|_| {
                    ActError::Invalid(format!(
                        "{id:?} is not an open finding of {change}; open: {}",
                        if open.is_empty() {
                            "none".to_owned()
                        } else {
                            open.iter()
                                .filter_map(|t| {
                                    t.finding_id.as_ref().map(|f| f.as_str().to_owned())
                                })
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ))
                })?;
                if !chosen.iter().any(|c: &&ThreadState| c.id == thread.id) {
                    chosen.push(thread);
                }
            }
            chosen
        }
    };
    if chosen.is_empty() {
        return Err(ActError::Invalid(format!(
            "{change} has no open findings to fix"
        )));
    }
    let ids: Vec<String> = chosen
        .iter()
        .filter_map(|t| t.finding_id.as_ref().map(|f| f.as_str().to_owned()))
        .collect();
    let bench = Workbench::open(env.git, "fix")?;
    let comment = match user_comment {
        Some(text) if !text.trim().is_empty() => format!(
            "The developer's comment with the request:\n\n\"\"\"\n{}\n\"\"\"",
            sanitize_user_comment(text)
        ),
        _ => String::new(),
    };
    let prompt = fill(
        FIX_PROMPT,
        &[
            ("findings", &findings_block(&chosen)),
            ("comment", &comment),
        ],
    );
    let result = build(
        &env.build_env(),
        &bench,
        BuildTask {
            name: "fix".to_owned(),
            prompt,
            commit_message: format!("fix: bugloop autofix - resolve {}", ids.join(", ")),
        },
    )
    .await;
    let landing = match &result.status {
        BuildStatus::Committed { .. } => land(&bench, env.config, "fix")?,
        _ => None,
    };
    drop(bench);
    let markers = bugloop_config::marker_syntax(env.config)?;
    let mut resolved = Vec::new();
    for thread in &chosen {
        let Some(root) = comments.iter().find(|c| c.id == thread.id) else {
            continue;
        };
        let Some(id) = &thread.finding_id else {
            continue;
        };
        match &landing {
            Some(Landing::FastForwarded { commit, .. }) => {
                resolve_thread(
                    env.forge,
                    change,
                    &markers,
                    root,
                    id,
                    &format!("Fixed in {} (`bugloop fix`, verified).", short(commit)),
                )
                .await?;
                resolved.push(id.as_str().to_owned());
            }
            Some(Landing::Branch { name, reason, .. }) => {
                env.forge
                    .reply(
                        change,
                        root,
                        &info_reply(
                            &markers,
                            &format!("A verified fix waits on branch `{name}` ({reason}); merge it to resolve this."),
                        ),
                    )
                    .await?;
            }
            None => {
                env.forge
                    .reply(
                        change,
                        root,
                        &info_reply(
                            &markers,
                            &format!("Could not fix this: {}", status_line(&result.status)),
                        ),
                    )
                    .await?;
            }
        }
    }
    Ok(ActReport {
        action: Intent::Fix(ids),
        chosen_by: "command".to_owned(),
        message: outcome_line(&result.status, landing.as_ref()),
        answer: Some(result.summary.clone()).filter(|s| !s.is_empty()),
        build: Some(result),
        landing,
        resolved,
    })
}

fn status_line(status: &BuildStatus) -> String {
    match status {
        BuildStatus::Committed {
            commit, unverified, ..
        } => format!(
            "committed {}{}",
            short(commit),
            if *unverified {
                " (no verify commands configured: unverified)"
            } else {
                ""
            }
        ),
        BuildStatus::NoChanges { .. } => "the agent changed nothing".to_owned(),
        BuildStatus::VerifyFailed { command, .. } => {
            format!("the verify command `{command}` failed; nothing was committed")
        }
        BuildStatus::Refused { reason } => format!("{reason}; nothing was committed"),
        BuildStatus::AgentFailed { error } => format!("the agent did not finish: {error}"),
    }
}

fn outcome_line(status: &BuildStatus, landing: Option<&Landing>) -> String {
    match landing {
        Some(Landing::FastForwarded { branch, commit }) => {
            format!(
                "{}; {branch} fast-forwarded to {}",
                status_line(status),
                short(commit)
            )
        }
        Some(Landing::Branch { name, reason, .. }) => format!(
            "{}; left on branch {name} because {reason} (merge it yourself)",
            status_line(status)
        ),
        None => status_line(status),
    }
}

/// Carries out a general request: one verified commit `chore: apply user request`.
pub async fn do_request(env: &ActEnv<'_>, request: &str) -> Result<ActReport, ActError> {
    if request.trim().is_empty() {
        return Err(ActError::Invalid("the request is empty".to_owned()));
    }
    let bench = Workbench::open(env.git, "do")?;
    let prompt = fill(DO_PROMPT, &[("request", &sanitize_user_comment(request))]);
    let result = build(
        &env.build_env(),
        &bench,
        BuildTask {
            name: "do".to_owned(),
            prompt,
            commit_message: "chore: apply user request".to_owned(),
        },
    )
    .await;
    let landing = match &result.status {
        BuildStatus::Committed { .. } => land(&bench, env.config, "do")?,
        _ => None,
    };
    Ok(ActReport {
        action: Intent::Do,
        chosen_by: "command".to_owned(),
        message: outcome_line(&result.status, landing.as_ref()),
        answer: Some(result.summary.clone()).filter(|s| !s.is_empty()),
        build: Some(result),
        landing,
        resolved: Vec::new(),
    })
}

/// Answers a question with the Plan agent (no file changes), in the repository at HEAD.
pub async fn ask(env: &ActEnv<'_>, change: &ChangeKey, question: &str) -> Result<String, ActError> {
    let (_, state) = env.state(change).await?;
    let open = open_threads(&state);
    let findings = if open.is_empty() {
        "None.".to_owned()
    } else {
        crate::context::cut(&findings_block(&open), 12_000).0
    };
    let root = env.git.root();
    let system = fill(
        ASK_PROMPT,
        &[
            ("findings", &findings),
            (
                "rules",
                &crate::context::cut(&rules_block(&rules_of(root, env.progress.as_ref())), 12_000)
                    .0,
            ),
        ],
    );
    let mut sandbox = sandbox_settings(env.config, root, Policy::ReadOnly);
    // The repository's own .git (its config, its hooks) is never shown; a sanitized one is.
    let shadow = match env.git.head() {
        Some(head) => Some(
            bugloop_sandbox::ShadowGit::for_repository(root, &head)
                .map_err(|e| ActError::Invalid(e.to_string()))?,
        ),
        None => None,
    };
    sandbox.git = shadow.as_ref().map(bugloop_sandbox::ShadowGit::mount);
    let context = ToolContext::new(
        Workspace::new(root).map_err(|e| ActError::Invalid(e.to_string()))?,
        sandbox,
    );
    // A small local model answers briefly: its context is small and it is slow under a grammar.
    let small = env
        .provider
        .capabilities()
        .context_tokens
        .is_some_and(|c| c < 16_000);
    let (max_tokens, answer_schema) = if small {
        (640, serde_json::json!({"type": "string", "maxLength": 800}))
    } else {
        (4_096, serde_json::json!({"type": "string"}))
    };
    let agent = Agent::new(env.provider.clone(), context, &env.runs_dir);
    let run = agent
        .run(Task {
            name: "ask".to_owned(),
            system,
            messages: vec![Message::user(sanitize_user_comment(question))],
            toolset: Some(Toolset::Plan),
            extra_tools: Vec::new(),
            submit_tool: None,
            follow_ups: Vec::new(),
            answer_schema: Some(JsonSchemaFormat {
                name: "answer".to_owned(),
                schema: serde_json::json!({
                    "type": "object",
                    "properties": {"answer": answer_schema},
                    "required": ["answer"],
                    "additionalProperties": false
                }),
            }),
            max_turns: env.config.budgets.max_turns,
            max_tokens: Some(max_tokens),
        })
        .await;
    Ok(match run.outcome? {
        Outcome::Answer(text) => text,
        Outcome::Structured(value) | Outcome::Submitted(value) => value
            .get("answer")
            .and_then(|a| a.as_str())
            .map_or_else(|| value.to_string(), str::to_owned),
    })
}

/// A comment arrived (on GitHub: a webhook; locally: `bugloop comment`). Classify it, check the
/// author's permission, and fix, do, dispute or answer.
pub async fn on_comment(
    env: &ActEnv<'_>,
    change: &ChangeKey,
    comment: &Comment,
) -> Result<ActReport, ActError> {
    let (comments, state) = env.state(change).await?;
    let open = open_threads(&state);
    let open_findings: Vec<OpenFinding> = open
        .iter()
        .filter_map(|t| {
            Some(OpenFinding {
                id: t.finding_id.as_ref()?.as_str().to_owned(),
                title: t.title.clone(),
                description: t.body.clone(),
            })
        })
        .collect();
    // The finding whose thread the comment is in, if any.
    let parent_thread = comment
        .thread_id
        .as_ref()
        .and_then(|thread| {
            state
                .threads
                .iter()
                .find(|t| t.forge_thread_id.as_ref() == Some(thread))
        })
        .filter(|t| t.id != comment.id);
    let parent = parent_thread.and_then(|t| {
        t.finding_id
            .as_ref()
            .map(|id| (id.as_str().to_owned(), t.body.clone()))
    });
    let Classified { intent, by } = classify(
        env.provider.clone(),
        env.git.root(),
        &env.runs_dir,
        &comment.body,
        parent
            .as_ref()
            .map(|(id, body)| (id.as_str(), body.as_str())),
        &open_findings,
    )
    .await?;
    let permission = env.forge.permission(&comment.author).await?;
    let allowed = permission.may_modify_files();
    let mut report = match (&intent, allowed) {
        (Intent::Fix(ids), true) => {
            fix(env, change, &Targets::Ids(ids.clone()), Some(&comment.body)).await?
        }
        (Intent::Do, true) => {
            let report = do_request(env, &comment.body).await?;
            let markers = bugloop_config::marker_syntax(env.config)?;
            env.forge
                .reply(
                    change,
                    comment,
                    &info_reply(&markers, &format!("bugloop: {}", report.message)),
                )
                .await?;
            report
        }
        (Intent::Acknowledge, _) => ActReport {
            action: Intent::Acknowledge,
            chosen_by: String::new(),
            build: None,
            landing: None,
            answer: None,
            resolved: Vec::new(),
            message: "nothing to do".to_owned(),
        },
        (Intent::Think, _)
            if parent_thread.is_some_and(|t| t.status != ThreadStatus::Resolved)
                && !comment.body.trim_end().ends_with('?') =>
        {
            // A statement in a finding's thread is the developer disputing it.
            let thread = parent_thread.ok_or_else(|| ActError::Invalid("no thread".to_owned()))?;
            let id = thread
                .finding_id
                .clone()
                .ok_or_else(|| ActError::Invalid("no finding".to_owned()))?;
            let outcome = settle_dispute(env, change, &id).await?;
            ActReport {
                action: Intent::Think,
                chosen_by: String::new(),
                build: None,
                landing: None,
                answer: Some(outcome.reasoning.clone()),
                resolved: if outcome.status == ThreadStatus::Resolved {
                    vec![id.as_str().to_owned()]
                } else {
                    Vec::new()
                },
                message: format!("dispute: {} ({})", outcome.decision_label(), outcome.status),
            }
        }
        _ => {
            let mut answer = ask(env, change, &comment.body).await?;
            if matches!(intent, Intent::Fix(_) | Intent::Do) && !allowed {
                answer = format!(
                    "{answer}\n\n_{} may not have bugloop change files here ({permission:?} permission); this is an answer only._",
                    comment.author
                );
            }
            let reply_to = parent_thread
                .and_then(|t| comments.iter().find(|c| c.id == t.id))
                .unwrap_or(comment);
            let markers = bugloop_config::marker_syntax(env.config)?;
            env.forge
                .reply(change, reply_to, &info_reply(&markers, &answer))
                .await?;
            ActReport {
                action: Intent::Think,
                chosen_by: String::new(),
                build: None,
                landing: None,
                answer: Some(answer),
                resolved: Vec::new(),
                message: "answered".to_owned(),
            }
        }
    };
    report.chosen_by = by.to_owned();
    if !allowed && matches!(intent, Intent::Fix(_) | Intent::Do) {
        report.message = format!(
            "{} (not permitted to change files: answered instead)",
            report.message
        );
    }
    Ok(report)
}

/// The reviewer's verdict on a developer's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Concede,
    Maintain,
    Escalate,
}

#[derive(Debug, Deserialize)]
struct DisputeAnswer {
    decision: Decision,
    reasoning: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisputeOutcome {
    pub finding: String,
    /// `None` when the developer prevailed without asking the model.
    pub decision: Option<Decision>,
    pub reasoning: String,
    pub status: ThreadStatus,
}

impl DisputeOutcome {
    pub fn decision_label(&self) -> &'static str {
        match self.decision {
            Some(Decision::Concede) => "conceded",
            Some(Decision::Maintain) => "maintained",
            Some(Decision::Escalate) => "escalated",
            None => "the developer's decision stands",
        }
    }
}

fn thread_text(thread: &ThreadState) -> String {
    let mut out = String::new();
    for reply in &thread.developer_replies {
        out.push_str(&format!(
            "- {} (developer): {}\n",
            reply.author,
            truncate_finding_body(reply.body.trim(), 2_000)
        ));
    }
    out
}

fn code_around(root: &Path, thread: &ThreadState) -> String {
    let (Some(file), Some(line)) = (&thread.file, thread.line) else {
        return String::new();
    };
    let Some(text) = crate::context::read_inside(root, file) else {
        return format!("\n({file} no longer exists.)\n");
    };
    let start = line.saturating_sub(8).max(1) as usize;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .skip(start - 1)
        .take(16)
        .map(|(i, l)| format!("{:>5} {l}", i + 1))
        .collect();
    format!(
        "\nThe code at {file} now:\n\n```\n{}\n```\n",
        lines.join("\n")
    )
}

/// Weighs the developer's latest reply in a finding's thread (pr-reviewer-design.md 3.2). A
/// thread already disputed or escalated where the developer still disagrees is settled in the
/// developer's favour when the change has no human reviewer.
pub async fn settle_dispute(
    env: &ActEnv<'_>,
    change: &ChangeKey,
    id: &FindingId,
) -> Result<DisputeOutcome, ActError> {
    let markers = bugloop_config::marker_syntax(env.config)?;
    let (comments, state) = env.state(change).await?;
    let thread = state
        .threads
        .iter()
        .find(|t| t.finding_id.as_ref() == Some(id))
        .ok_or_else(|| ActError::Invalid(format!("no finding {id} in {change}")))?;
    let root = comments
        .iter()
        .find(|c| c.id == thread.id)
        .ok_or_else(|| ActError::Invalid(format!("the comment of {id} is missing")))?;
    if thread.status == ThreadStatus::Resolved {
        return Ok(DisputeOutcome {
            finding: id.as_str().to_owned(),
            decision: None,
            reasoning: "already resolved".to_owned(),
            status: ThreadStatus::Resolved,
        });
    }
    if !thread.awaiting_bot {
        return Err(ActError::Invalid(format!(
            "{id} has no developer reply awaiting an answer"
        )));
    }
    if matches!(
        thread.status,
        ThreadStatus::Disputed | ThreadStatus::Escalated
    ) {
        let reviewers = env.forge.human_reviewers(change).await?;
        if reviewers.is_empty() {
            let reasoning = "The developer still disagrees and this change has no human \
                             reviewer to decide, so the developer's decision stands."
                .to_owned();
            resolve_thread(env.forge, change, &markers, root, id, &reasoning).await?;
            return Ok(DisputeOutcome {
                finding: id.as_str().to_owned(),
                decision: None,
                reasoning,
                status: ThreadStatus::Resolved,
            });
        }
    }
    let finding = format!(
        "`{id}` (score {}): {}\n\n{}{}",
        thread.score.map_or("-".to_owned(), |s| s.to_string()),
        thread.title,
        truncate_finding_body(thread.body.trim(), 6_000),
        code_around(env.git.root(), thread)
    );
    let prompt = fill(
        DISPUTE_PROMPT,
        &[("finding", &finding), ("thread", &thread_text(thread))],
    );
    let answer: DisputeAnswer = crate::structured_answer(
        env.provider.clone(),
        env.git.root(),
        &env.runs_dir,
        "dispute",
        "You are bugloop, a fair and careful code reviewer. Answer with JSON only.",
        prompt,
        serde_json::json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["concede", "maintain", "escalate"]},
                "reasoning": {"type": "string"}
            },
            "required": ["decision", "reasoning"],
            "additionalProperties": false
        }),
        1_024,
    )
    .await?;
    let reasoning = answer.reasoning.trim().to_owned();
    let status = match answer.decision {
        Decision::Concede => {
            resolve_thread(
                env.forge,
                change,
                &markers,
                root,
                id,
                &format!("Conceded: {reasoning}"),
            )
            .await?;
            ThreadStatus::Resolved
        }
        Decision::Maintain => {
            env.forge
                .reply(change, root, &disputed_reply(&markers, &reasoning))
                .await?;
            ThreadStatus::Disputed
        }
        Decision::Escalate => {
            env.forge
                .reply(change, root, &escalated_reply(&markers, &reasoning))
                .await?;
            ThreadStatus::Escalated
        }
    };
    Ok(DisputeOutcome {
        finding: id.as_str().to_owned(),
        decision: Some(answer.decision),
        reasoning,
        status,
    })
}

/// Every thread where a developer spoke last, settled (the review loop runs this first).
pub async fn settle_all_disputes(
    env: &ActEnv<'_>,
    change: &ChangeKey,
) -> Result<Vec<DisputeOutcome>, ActError> {
    let (_, state) = env.state(change).await?;
    let waiting: Vec<FindingId> = state
        .threads
        .iter()
        .filter(|t| t.awaiting_bot && t.status != ThreadStatus::Resolved)
        .filter_map(|t| t.finding_id.clone())
        .collect();
    let mut outcomes = Vec::new();
    for id in waiting {
        outcomes.push(settle_dispute(env, change, &id).await?);
    }
    Ok(outcomes)
}
