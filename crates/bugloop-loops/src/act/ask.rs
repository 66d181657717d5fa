//! `ask`: the Plan agent answers a question about the code, read-only.

use std::path::Path;

use bugloop_agent::{Agent, Outcome, Task};
use bugloop_domain::safety::sanitize_user_comment;
use bugloop_forge::ChangeKey;
use bugloop_llm::{JsonSchemaFormat, Message, Provider};
use bugloop_sandbox::Policy;
use bugloop_tools::{Registry, ToolContext, Toolset, Workspace};

use crate::context::rules_of;
use crate::env::LoopEnv;
use crate::env::WorkTarget;
use crate::prompt::{fill, rules_block};
use crate::sandbox_settings;
use bugloop_sandbox::{ShadowGit, TaskTree};

use super::{ASK_PROMPT, ASK_WITHOUT_TOOLS_PROMPT, ActError, findings_block, open_threads};

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
    // The shadow .git is removed when dropped: it is kept until the agent is done.
    let (context, _shadow) = read_only_context(env, tree.as_ref(), root)?;
    let capabilities = env.provider.capabilities();
    // A model that cannot call tools is shown what the question names, read for it as its
    // tools would read it; it is told so, and so is the one who asked.
    let shown = if capabilities.tools {
        None
    } else {
        let small = capabilities.context_tokens.is_some_and(|c| c < 16_000);
        let budget = if small { 6_000 } else { 40_000 };
        Some(named_code(&context, question, budget).await)
    };
    let system = ask_system(env, &findings, root, shown.as_ref());
    let task = ask_task(env, system, question);
    let agent = Agent::new(env.provider.clone(), context, &env.runs_dir);
    let run = agent.run(task).await;
    let answer = match run.outcome? {
        Outcome::Answer(text) => text,
        Outcome::Structured(value) | Outcome::Submitted(value) => value
            .get("answer")
            .and_then(|a| a.as_str())
            .map_or_else(|| value.to_string(), str::to_owned),
    };
    Ok(match shown {
        Some(shown) => format!(
            "{answer}\n\n_{} cannot read the repository: it saw {}. A model that can use tools \
             (`--model`) reads what it needs._",
            env.provider.name(),
            shown.said()
        ),
        None => answer,
    })
}

/// The code shown to a model without tools, and the paths it came from.
struct Shown {
    code: String,
    paths: Vec<String>,
}

impl Shown {
    fn said(&self) -> String {
        match self.paths.as_slice() {
            [] => "no code (the question names no file it has)".to_owned(),
            paths => paths
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The files the question names, read as `read_file` reads them (bugloop makes the calls a model
/// without tools cannot), within `budget` characters. A name without `/` is looked up as the
/// `glob` tool does, by file name at any depth (three files a name at most).
async fn named_code(context: &ToolContext, question: &str, budget: usize) -> Shown {
    let tools = Registry::new(Toolset::Read);
    let call = |name: &'static str, arguments: serde_json::Value| {
        let tools = &tools;
        async move { tools.call(context, name, &arguments.to_string()).await.ok() }
    };
    let mut shown = Shown {
        code: String::new(),
        paths: Vec::new(),
    };
    for name in file_names(question) {
        let paths: Vec<String> = if name.contains('/') {
            vec![name.to_owned()]
        } else {
            call("glob", serde_json::json!({"pattern": name}))
                .await
                .filter(|found| !found.starts_with("no files match"))
                .map(|found| found.lines().take(3).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        for path in paths {
            if shown.paths.contains(&path) || path.starts_with("[...") {
                continue;
            }
            let Some(text) = call("read_file", serde_json::json!({"path": path})).await else {
                continue;
            };
            let room = budget.saturating_sub(shown.code.len());
            if room < 200 {
                return shown;
            }
            let (text, _) = crate::context::cut(&text, room - 100);
            shown
                .code
                .push_str(&format!("### {path}\n\n```\n{text}```\n\n"));
            shown.paths.push(path);
        }
    }
    shown
}

/// The most names of a question looked up: each is a walk of the repository.
const MAX_NAMES: usize = 8;

/// The words of a question that look like a file's name or path (`orders.py`, `src/lib.rs`),
/// without the quotes and punctuation around them; never a glob; the first [`MAX_NAMES`].
fn file_names(question: &str) -> Vec<&str> {
    let words = question
        .split_whitespace()
        .map(|word| word.trim_matches(|c: char| "`'\"()[]<>,;:!?".contains(c)))
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| !word.contains(['*', '?', '[', ']', '{', '}']))
        .filter(|word| {
            let name = word.rsplit('/').next().unwrap_or(word);
            name.rsplit_once('.').is_some_and(|(stem, extension)| {
                !stem.is_empty()
                    && (1..=6).contains(&extension.len())
                    && extension.chars().all(|c| c.is_ascii_alphanumeric())
                    && extension.chars().any(|c| c.is_ascii_alphabetic())
            })
        });
    let mut names: Vec<&str> = Vec::new();
    for word in words {
        if !names.contains(&word) {
            names.push(word);
        }
        if names.len() == MAX_NAMES {
            break;
        }
    }
    names
}

/// The Plan agent's system prompt: the open findings and the repository's rule files, and for a
/// model without tools the code it is shown.
fn ask_system(env: &LoopEnv<'_>, findings: &str, root: &Path, shown: Option<&Shown>) -> String {
    let rules_root = env.settings.rules_root.as_deref().unwrap_or(root);
    let rules = rules_block(&rules_of(rules_root, env.progress.as_ref()));
    let rules = crate::context::cut(&rules, 12_000).0;
    match shown {
        Some(shown) => {
            let code = if shown.code.is_empty() {
                "None: the question names no file of the repository."
            } else {
                &shown.code
            };
            fill(
                ASK_WITHOUT_TOOLS_PROMPT,
                &[("code", code), ("findings", findings), ("rules", &rules)],
            )
        }
        None => fill(ASK_PROMPT, &[("findings", findings), ("rules", &rules)]),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_of_a_question_are_its_file_names_once_each_never_a_glob() {
        assert_eq!(
            file_names("Why does `shop/orders.py` call db.py, (db.py) and *.py? See orders.py."),
            ["shop/orders.py", "db.py", "orders.py"]
        );
        let many: String = (0..100).map(|i| format!("f{i}.py ")).collect();
        assert_eq!(file_names(&many).len(), MAX_NAMES);
        assert!(file_names("what is 3.5 times e? Is it done...").is_empty());
    }
}
