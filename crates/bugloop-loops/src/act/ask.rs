//! `ask`: the Plan agent answers a question about the code, read-only.

use std::path::Path;

use bugloop_agent::{Agent, Outcome, Task};
use bugloop_domain::safety::sanitize_user_comment;
use bugloop_forge::ChangeKey;
use bugloop_llm::{JsonSchemaFormat, Message, Provider};
use bugloop_sandbox::Policy;
use bugloop_tools::{ToolContext, Toolset, Workspace};

use crate::context::rules_of;
use crate::env::LoopEnv;
use crate::env::WorkTarget;
use crate::prompt::{fill, rules_block};
use crate::sandbox_settings;
use bugloop_sandbox::{ShadowGit, TaskTree};

use super::{ASK_PROMPT, ActError, findings_block, open_threads};

/// Answers a question with the Plan agent (no file changes), in the repository at HEAD.
pub async fn ask(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    question: &str,
) -> Result<String, ActError> {
    let (_, state) = env.conversation(change).await?;
    let open = open_threads(&state);
    let findings = if open.is_empty() {
        "None.".to_owned()
    } else {
        crate::context::cut(&findings_block(&open), 12_000).0
    };
    // On a pull request, the pinned head's files (the clone may have another branch out).
    let tree = match &env.work {
        WorkTarget::PullRequest { head, .. } => Some(
            TaskTree::create(env.git.root(), head, "ask")
                .map_err(|e| ActError::Invalid(e.to_string()))?,
        ),
        WorkTarget::LocalBranch => None,
    };
    let root = tree.as_ref().map_or(env.git.root(), TaskTree::path);
    let system = ask_system(env, &findings, root);
    // The shadow .git is removed when dropped: it is kept until the agent is done.
    let (context, _shadow) = read_only_context(env, tree.as_ref(), root)?;
    let task = ask_task(env, system, question);
    let agent = Agent::new(env.provider.clone(), context, &env.runs_dir);
    let run = agent.run(task).await;
    Ok(match run.outcome? {
        Outcome::Answer(text) => text,
        Outcome::Structured(value) | Outcome::Submitted(value) => value
            .get("answer")
            .and_then(|a| a.as_str())
            .map_or_else(|| value.to_string(), str::to_owned),
    })
}

/// The Plan agent's system prompt: the open findings and the repository's rule files.
fn ask_system(env: &LoopEnv<'_>, findings: &str, root: &Path) -> String {
    let rules_root = env.settings.rules_root.as_deref().unwrap_or(root);
    fill(
        ASK_PROMPT,
        &[
            ("findings", findings),
            (
                "rules",
                &crate::context::cut(
                    &rules_block(&rules_of(rules_root, env.progress.as_ref())),
                    12_000,
                )
                .0,
            ),
        ],
    )
}

/// The agent's read-only view of `root`, with the task tree's git, or a sanitized shadow of the
/// repository's (returned too: it must outlive the agent's run).
fn read_only_context(
    env: &LoopEnv<'_>,
    tree: Option<&TaskTree>,
    root: &Path,
) -> Result<(ToolContext, Option<ShadowGit>), ActError> {
    let mut sandbox = sandbox_settings(env.config(), root, Policy::ReadOnly);
    // The repository's own .git (its config, its hooks) is never shown; a sanitized one is.
    let shadow = match (tree, env.git.head()) {
        (Some(_), _) | (None, None) => None,
        (None, Some(head)) => Some(
            ShadowGit::for_repository(root, &head).map_err(|e| ActError::Invalid(e.to_string()))?,
        ),
    };
    sandbox.git = match tree {
        Some(tree) => Some(tree.git_mount()),
        None => shadow.as_ref().map(ShadowGit::mount),
    };
    let context = ToolContext::new(
        Workspace::new(root).map_err(|e| ActError::Invalid(e.to_string()))?,
        sandbox,
    );
    Ok((context, shadow))
}

/// The question as the Plan agent's task: one answer, brief from a small local model.
fn ask_task(env: &LoopEnv<'_>, system: String, question: &str) -> Task {
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
    let message = Message::user(sanitize_user_comment(question));
    Task {
        toolset: Some(Toolset::Plan),
        answer_schema: Some(JsonSchemaFormat {
            name: "answer".to_owned(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {"answer": answer_schema},
                "required": ["answer"],
                "additionalProperties": false
            }),
        }),
        max_turns: env.config().budgets.max_turns,
        max_tokens: Some(max_tokens),
        ..Task::new("ask", system, message)
    }
}
