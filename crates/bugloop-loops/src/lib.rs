//! bugloop's loops. Each loop loads its state from a [`bugloop_forge::Forge`], runs agent tasks,
//! grounds and filters what the model said, and publishes through the forge. One implementation
//! serves the command line, the Action and the server: nothing here prints or knows its caller;
//! progress goes to a [`Progress`] the caller provides.
//!
//! **Never:** print (progress goes to a `Progress` the caller gives), know which front end called
//! it, or publish a finding that was not grounded and filtered.

pub mod act;
pub mod build;
pub mod checkout;
pub mod comment_bodies;
pub mod context;
pub mod converge;
pub mod disputes;
pub mod env;
pub mod error;
pub mod generation;
pub mod head;
pub mod intent;
mod kept;
pub(crate) mod plan;
pub mod prompt;
pub mod review;
pub mod settings;

pub use self::env::LoopEnv;
pub use self::settings::LoopSettings;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bugloop_config::{Config, Unconfined};
use bugloop_sandbox::{Policy, SandboxSettings, WhenUnconfined};

/// What a long run reports while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgressEvent {
    /// The change is split into this many model sessions.
    Planned {
        calls: usize,
        files: usize,
        tokens: u64,
    },
    CallStarted {
        call: usize,
        of: usize,
        files: usize,
    },
    PassDone {
        batch: usize,
        pass: u32,
        of: u32,
    },
    Finding {
        batch: usize,
        title: String,
    },
    CallDone {
        call: usize,
        findings: usize,
        error: Option<String>,
    },
    Publishing,
    /// A part's findings were published as it ended (a review in parts).
    PartPublished {
        call: usize,
        findings: usize,
    },
    /// A model on this machine is generating its answer: tokens so far, and how many a second.
    Generating {
        tokens: u64,
        per_second: u32,
    },
    /// A step of a longer loop (a converge loop line, a verify command's result).
    Step(String),
}

/// Receives progress events; must not block.
pub trait Progress: Send + Sync + std::fmt::Debug {
    fn event(&self, event: ProgressEvent);
}

/// Progress nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: ProgressEvent) {}
}

/// How an error names the agent run it happened in: by the run's name, which `bugloop runs show`
/// opens, never by its path. What bugloop posts (a summary comment, an escalation on a public
/// issue) must not show the runner's or server's file system.
pub(crate) fn run_reference(transcript: &Path) -> String {
    match transcript.file_stem() {
        Some(stem) => format!("run {}", stem.to_string_lossy()),
        None => "no transcript".to_owned(),
    }
}

/// The sandbox for commands of a run in `workspace`, from the configuration.
pub(crate) fn sandbox_settings(
    config: &Config,
    workspace: &Path,
    policy: Policy,
) -> SandboxSettings {
    let sandbox = &config.sandbox;
    let mut settings = SandboxSettings::new(workspace, policy);
    settings.timeout = Duration::from_secs(sandbox.command_timeout_seconds);
    settings.max_output_bytes = usize::try_from(sandbox.max_output_bytes).unwrap_or(usize::MAX);
    settings.env_allowlist = sandbox.env_allowlist.clone();
    settings.visible_home_dirs = sandbox.home_dirs.clone();
    settings.system_paths = sandbox.system_paths.iter().map(PathBuf::from).collect();
    settings.limits = bugloop_sandbox::Limits {
        max_processes: sandbox.max_processes,
        max_file_bytes: sandbox.max_file_size_mb.saturating_mul(1 << 20),
        tmp_bytes: sandbox.tmp_size_mb.saturating_mul(1 << 20),
        workspace_growth_bytes: sandbox.workspace_growth_mb.saturating_mul(1 << 20),
        max_memory_bytes: sandbox.max_memory_mb.saturating_mul(1 << 20),
    };
    settings.when_unconfined = match sandbox.when_unconfined {
        Unconfined::Refuse => WhenUnconfined::Refuse,
        Unconfined::Warn => WhenUnconfined::Warn,
    };
    settings
}

/// One question asked for a JSON answer (an intent, a dispute verdict, a validator's verdict).
#[derive(Debug, Clone)]
pub(crate) struct Question<'a> {
    /// The task's name in transcripts and the answer schema's name.
    pub name: &'a str,
    pub system: &'a str,
    pub prompt: String,
    pub schema: serde_json::Value,
    pub max_tokens: u32,
}

/// A one-call task that answers `question` with JSON of its schema: no tools, the answer read as
/// `T`, asked of `env`'s model (a caller wanting another model passes
/// [`LoopEnv::with_provider`]) with the transcript in `env`'s runs directory. `workspace` is the
/// tree the task is about. Errors say which task's answer was unusable.
pub(crate) async fn structured_answer<T: serde::de::DeserializeOwned>(
    env: &LoopEnv<'_>,
    workspace: &Path,
    question: Question<'_>,
) -> Result<T, bugloop_agent::AgentError> {
    let Question {
        name,
        system,
        prompt,
        schema,
        max_tokens,
    } = question;
    use bugloop_agent::{Agent, AgentError, Outcome, Task};
    let context = bugloop_tools::ToolContext::new(
        bugloop_tools::Workspace::new(workspace)
            .map_err(|e| AgentError::Misconfigured(e.to_string()))?,
        SandboxSettings::new(workspace, Policy::ReadOnly),
    );
    let run = Agent::new(env.provider.clone(), context, &env.runs_dir)
        .run(Task {
            answer_schema: Some(bugloop_llm::JsonSchemaFormat {
                name: name.to_owned(),
                schema,
            }),
            max_tokens: Some(max_tokens),
            ..Task::new(name, system, bugloop_llm::Message::user(prompt))
        })
        .await;
    let unusable =
        |e: serde_json::Error| AgentError::Misconfigured(format!("the {name} answer: {e}"));
    let value = match run.outcome? {
        Outcome::Structured(v) | Outcome::Submitted(v) => v,
        Outcome::Answer(text) => {
            serde_json::from_str(bugloop_llm::structured::extract_json(&text)).map_err(unusable)?
        }
    };
    serde_json::from_value(value).map_err(unusable)
}
