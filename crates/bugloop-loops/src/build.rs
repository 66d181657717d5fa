//! Changing code for the user, safely: a Build agent works in a task tree off HEAD, every
//! configured verify command runs in the sandbox, and only then is one commit made; it lands on the
//! user's branch by fast-forward only when their tree is still clean and HEAD unchanged, otherwise
//! it waits on a named branch. The user's working tree, index and branch are never touched by
//! anything else, whatever happens (the task tree is removed on drop). The commit is made from
//! the task tree read as data, never by git running in it (see `bugloop_sandbox::TaskTree`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bugloop_agent::{Agent, Outcome, Task};
use bugloop_config::Config;
use bugloop_domain::paths::IgnoreMatcher;
use bugloop_git::Git;
use bugloop_llm::{Message, Provider, Usage};
use bugloop_report::build::{BuildResult, BuildStatus, VerifyRun};
use bugloop_sandbox::{Change, Changes, CommandSpec, GitMount, Policy, TaskTree};
use bugloop_tools::{ToolContext, Toolset, Workspace};

use crate::context::{cut, rules_of};
use crate::env::LoopEnv;
use crate::prompt::{fill, rules_block};
use crate::{Progress, sandbox_settings};

pub(crate) const SYSTEM: &str = include_str!("../prompts/build-system.md");

/// The files that make the tree dirty, said in a few words: which to stash, commit or revert.
fn uncommitted_files(git: &Git) -> Result<String, BuildError> {
    let (names, count) = git.uncommitted(3)?;
    let mut said = names.join(", ");
    if count > names.len() {
        said.push_str(&format!(" and {} more", count - names.len()));
    }
    Ok(said)
}

/// The refusal for a dirty tree, as the spec words it.
pub(crate) const DIRTY_TREE: &str = "Uncommitted changes detected. Stash, commit, or revert first.";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `files`: the first few of them, named (`notes.txt, src/a.rs and 3 more`).
    #[error("{DIRTY_TREE} ({files})")]
    DirtyTree { files: String },
    #[error("the repository has no commits yet; commit something first")]
    NoCommits,
    #[error(transparent)]
    Git(#[from] bugloop_git::GitError),
    #[error("the task tree: {0}")]
    Tree(#[from] bugloop_sandbox::SandboxError),
    #[error(transparent)]
    Config(Box<bugloop_config::ConfigError>),
    #[error(transparent)]
    Forge(#[from] Box<bugloop_forge::ForgeError>),
    #[error("{0}")]
    Other(String),
}

impl From<bugloop_config::ConfigError> for BuildError {
    fn from(error: bugloop_config::ConfigError) -> Self {
        BuildError::Config(Box::new(error))
    }
}

pub use crate::env::WorkTarget;

mod landing;
mod proofs;
mod tool_fixes;

pub(crate) use self::landing::land_on_target;
pub use self::landing::{binary_changes, land, net_change};
pub use self::proofs::ProvenTest;
pub(crate) use self::proofs::proof_command;
pub use self::tool_fixes::ToolFix;

/// A task tree off the user's HEAD, and what the user's repository looked like at the start.
#[derive(Debug)]
pub struct Workbench {
    git: Git,
    tree: Mutex<TaskTree>,
    /// What the commands bugloop ran here (verify, tests) left in the tree that the agent did
    /// not write, with the command: never the agent's edits, never committed, as long as they
    /// are as the command left them (a `__pycache__` in a repository that does not ignore it).
    byproducts: Mutex<Vec<(Change, String)>>,
    path: PathBuf,
    pub start_head: String,
    pub start_branch: Option<String>,
}

impl Workbench {
    /// Refuses a dirty tree (before anything starts) and writes HEAD's files into a task tree;
    /// on a pull request, the pinned head's files.
    pub fn open(git: &Git, purpose: &str, target: &WorkTarget) -> Result<Workbench, BuildError> {
        if let WorkTarget::PullRequest { head, branch, .. } = target {
            let tree = TaskTree::create(git.root(), head, purpose)?;
            return Ok(Self::new(git, tree, head.clone(), Some(branch.clone())));
        }
        Self::on_branch(git, purpose, None)
    }

    /// A task tree at `tip`, the work an interrupted run on this branch left on top of HEAD:
    /// it lands as this run's own, HEAD being the start.
    pub fn resume(git: &Git, purpose: &str, tip: &str) -> Result<Workbench, BuildError> {
        Self::on_branch(git, purpose, Some(tip))
    }

    /// A task tree for work that lands on the branch checked out, at HEAD or at `tip` past it;
    /// a dirty tree is refused before anything starts.
    fn on_branch(git: &Git, purpose: &str, tip: Option<&str>) -> Result<Workbench, BuildError> {
        let start_head = git.head().ok_or(BuildError::NoCommits)?;
        if !git.is_clean()? {
            return Err(BuildError::DirtyTree {
                files: uncommitted_files(git)?,
            });
        }
        let tree = TaskTree::create(git.root(), tip.unwrap_or(&start_head), purpose)?;
        Ok(Self::new(git, tree, start_head, git.current_branch()))
    }

    /// A task tree at `commit`, for work that lands on a branch of bugloop's own (the solve
    /// pipeline's): the user's checkout is neither read nor touched.
    pub fn at(git: &Git, commit: &str, purpose: &str) -> Result<Workbench, BuildError> {
        let tree = TaskTree::create(git.root(), commit, purpose)?;
        Ok(Self::new(git, tree, commit.to_owned(), None))
    }

    fn new(git: &Git, tree: TaskTree, start_head: String, start_branch: Option<String>) -> Self {
        Workbench {
            git: git.clone(),
            path: tree.path().to_path_buf(),
            tree: Mutex::new(tree),
            byproducts: Mutex::default(),
            start_head,
            start_branch,
        }
    }

    fn tree(&self) -> std::sync::MutexGuard<'_, TaskTree> {
        self.tree
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The user's repository.
    pub fn git(&self) -> &Git {
        &self.git
    }

    /// The commit the task tree stands on.
    pub fn head(&self) -> Result<String, BuildError> {
        Ok(self.tree().head().to_owned())
    }

    /// The sanitized git directory sandboxed commands see in the task tree.
    pub fn git_mount(&self) -> GitMount {
        self.tree().git_mount()
    }

    /// What the task tree holds now against its HEAD, read as data.
    pub fn changes(&self) -> Result<Changes, BuildError> {
        Ok(self.tree().changes()?)
    }

    /// The agent's edits: what the task tree holds against its HEAD, but what commands left
    /// there as they left it.
    pub fn edits(&self) -> Result<Changes, BuildError> {
        let left_out: Vec<Change> = self
            .byproducts()
            .iter()
            .map(|(change, _)| change.clone())
            .collect();
        Ok(self.changes()?.without(&left_out))
    }

    fn byproducts(&self) -> std::sync::MutexGuard<'_, Vec<(Change, String)>> {
        self.byproducts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what `command` made in the tree (between `before` and `after`) on paths the
    /// agent did not change; returns the paths.
    fn record_byproducts(
        &self,
        before: &Changes,
        after: &Changes,
        agent: &Changes,
        command: &str,
    ) -> Vec<String> {
        let made = after.made_since(before, agent);
        let mut byproducts = self.byproducts();
        let mut paths = Vec::new();
        for change in made {
            byproducts.retain(|(old, _)| old.path != change.path);
            paths.push(change.path.clone());
            byproducts.push((change, command.to_owned()));
        }
        paths
    }

    /// What commands left in the tree, as "`path`: produced by `command`".
    pub fn left_out(&self) -> Vec<String> {
        self.byproducts()
            .iter()
            .map(|(change, command)| format!("{}: produced by `{command}`", change.path))
            .collect()
    }

    /// Commits `changes` as the bot (see [`TaskTree::commit`]).
    pub fn commit(
        &self,
        config: &Config,
        changes: &Changes,
        message: &str,
    ) -> Result<String, BuildError> {
        let name = &config.identity.local_bot_name;
        let email = format!("{name}@bugloop.invalid");
        Ok(self.tree().commit(changes, message, (name, &email))?)
    }

    /// Keeps the agent's edits (not what commands left) as a commit at `reference`, HEAD staying
    /// where it is: a run that is killed loses none of them.
    pub fn snapshot(
        &self,
        config: &Config,
        message: &str,
        reference: &str,
    ) -> Result<String, BuildError> {
        let edits = self.edits()?;
        let name = &config.identity.local_bot_name;
        let email = format!("{name}@bugloop.invalid");
        Ok(self
            .tree()
            .snapshot(&edits, message, (name, &email), reference)?)
    }

    /// Puts a [`snapshot`](Workbench::snapshot)'s files back in the tree, as edits.
    pub fn restore(&self, snapshot: &str) -> Result<(), BuildError> {
        self.byproducts().clear();
        Ok(self.tree().restore(snapshot)?)
    }

    /// A regular file the agent wrote, read as data (see [`TaskTree::read_regular_file`]).
    pub fn read_regular_file(&self, relative: &str, max: u64) -> Result<Vec<u8>, String> {
        self.tree().read_regular_file(Path::new(relative), max)
    }

    /// What a command printed, with the task tree's path (the sandbox shows the tree where it
    /// is on the host) written as `.`: what bugloop posts where others read it (an escalation
    /// on a public issue, a proof's output) must not show the machine's file system.
    pub fn relative(&self, output: &str) -> String {
        let mut text = output.to_owned();
        let shown = self.path().display().to_string();
        let real = self
            .path()
            .canonicalize()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        for root in [real, shown] {
            if !root.is_empty() && root != "/" {
                text = text.replace(&root, ".");
            }
        }
        text
    }

    /// Writes a regular file bugloop places in the tree (a proof's test; see
    /// [`TaskTree::write_regular_file`]).
    pub fn write_regular_file(&self, relative: &str, content: &str) -> Result<(), String> {
        self.tree()
            .write_regular_file(Path::new(relative), content.as_bytes())
    }

    /// Removes a file bugloop placed (see [`TaskTree::remove_file`]).
    pub fn remove_file(&self, relative: &str) -> Result<(), String> {
        self.tree().remove_file(Path::new(relative))
    }

    /// Drops uncommitted edits in the task tree (after a failed attempt).
    pub fn discard(&self) -> Result<(), BuildError> {
        Ok(self.tree().reset()?)
    }
}

/// A Build task: its prompt and the commit message of its result.
#[derive(Debug, Clone)]
pub struct BuildTask {
    pub name: String,
    pub prompt: String,
    pub commit_message: String,
    /// Keep a failed attempt's edits in the task tree, for the next attempt to build on (the
    /// solve loop); otherwise they are dropped.
    pub keep_failed: bool,
    /// Proven findings' tests the change must make pass (`review.prove`).
    pub proofs: Vec<ProvenTest>,
    /// Findings on an analyzer's hit whose tool has a fix of its own: applied first; the agent
    /// runs only when some finding is left that no tool fixed.
    pub tool_fixes: Vec<ToolFix>,
}

/// The Build agent's system prompt for this repository, naming the commands that verify its
/// work.
pub(crate) fn system_prompt(
    config: &Config,
    verify_commands: &[bugloop_domain::safety::VerifyCommand],
    rules_root: &Path,
    progress: &dyn Progress,
) -> String {
    let verify = if verify_commands.is_empty() {
        "None are configured (`fix.verify_commands`): the change is committed unverified, so be \
         careful."
            .to_owned()
    } else {
        verify_commands
            .iter()
            .map(|c| format!("- `{}`", c.raw))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (rules, _) = cut(&rules_block(&rules_of(rules_root, progress)), 16_000);
    fill(
        SYSTEM,
        &[
            ("protected", &config.protected_paths.join(", ")),
            ("rules", &rules),
            ("verify", &verify),
        ],
    )
}

fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[... {} bytes cut]\n{}", start, &text[start..])
}

/// Runs commands (verify or gate) in the sandbox with write access to the workspace.
pub async fn run_commands(
    config: &Config,
    workspace: &Path,
    git: Option<GitMount>,
    commands: &[bugloop_domain::safety::VerifyCommand],
) -> Result<Vec<VerifyRun>, BuildError> {
    let mut settings = sandbox_settings(config, workspace, Policy::WorkspaceWrite);
    settings.git = git;
    let mut runs = Vec::new();
    for command in commands {
        let spec = CommandSpec::new(command.program.clone(), command.args.clone());
        let (passed, output) = match bugloop_sandbox::run(&settings, &spec).await {
            Ok(output) => {
                let mut text = output.stdout_text();
                let errors = output.stderr_text();
                if !errors.is_empty() {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str(&errors);
                }
                match output.exit {
                    _ if output.success() => {}
                    // The limit and the setting that sets it, not only that it was hit.
                    bugloop_sandbox::ExitState::TimedOut => text.push_str(&format!(
                        "\n[timed out after {} s: sandbox.command_timeout_seconds]",
                        settings.timeout.as_secs()
                    )),
                    other => text.push_str(&format!("\n[{other:?}]")),
                }
                (output.success(), tail(&text, 6_000))
            }
            Err(error) => (false, error.to_string()),
        };
        runs.push(VerifyRun {
            command: command.raw.clone(),
            passed,
            output,
        });
        if !passed {
            break;
        }
    }
    Ok(runs)
}

/// Runs the Build agent on `prompt` in the workbench: the Build toolset, commands in the
/// sandbox, the protected paths refused. The run as it ended, or why it could not start.
pub(crate) async fn run_build_agent(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    name: &str,
    prompt: String,
) -> Result<bugloop_agent::Run, BuildStatus> {
    let rules_root = env.settings.rules_root.as_deref().unwrap_or(bench.path());
    let system = system_prompt(
        env.config(),
        &env.settings.verify_commands,
        rules_root,
        env.progress.as_ref(),
    );
    if !env.provider.capabilities().tools {
        return Err(BuildStatus::AgentFailed {
            error: format!(
                "{} cannot call tools, and changing code needs a model that can (see the README's Models)",
                env.provider.name()
            ),
        });
    }
    let workspace = Workspace::new(bench.path()).map_err(|error| BuildStatus::AgentFailed {
        error: error.to_string(),
    })?;
    let mut sandbox = sandbox_settings(env.config(), bench.path(), Policy::WorkspaceWrite);
    sandbox.git = Some(bench.git_mount());
    let mut context = ToolContext::new(workspace, sandbox);
    context.protected = IgnoreMatcher::new(&env.config().protected_paths).map_err(|error| {
        BuildStatus::Refused {
            reason: format!("protected_paths: {error}"),
            guardrail: true,
        }
    })?;
    let agent = Agent::new(env.provider.clone(), context, &env.runs_dir);
    Ok(agent
        .run(Task {
            toolset: Some(Toolset::Build),
            max_turns: env.config().budgets.max_turns,
            max_tokens: Some(8_192),
            ..Task::new(name, system, Message::user(prompt))
        })
        .await)
}

/// Runs the Build agent on `task` in the workbench, verifies, and commits when everything passed.
/// On any failure the worktree is reset, so nothing of the attempt remains.
pub async fn build(env: &LoopEnv<'_>, bench: &Workbench, task: BuildTask) -> BuildResult {
    let mut result = BuildResult {
        status: BuildStatus::AgentFailed {
            error: "not started".to_owned(),
        },
        summary: String::new(),
        verify: Vec::new(),
        left_out: Vec::new(),
        out_of_budget: false,
        model_unavailable: false,
        usage: Usage::default(),
        transcript: PathBuf::new(),
    };
    let placed = proofs::place(env, bench, &task.proofs);
    let tools = tool_fixes::apply(env, bench, &task.tool_fixes).await;
    let all_by_tools = !task.tool_fixes.is_empty()
        && task
            .tool_fixes
            .iter()
            .all(|f| tools.fixed.contains(&f.finding));
    let outcome = if all_by_tools {
        // Every finding was fixed by its tool: no model writes code.
        Ok(Outcome::Answer(tools.notes.join("; ")))
    } else {
        let said = if tools.notes.is_empty() {
            String::new()
        } else {
            format!(
                "\n\nThe analyzers' own fixes already ran in the tree: {}. Fix what is left.",
                tools.notes.join("; ")
            )
        };
        let prompt = format!("{}{said}{}", task.prompt, proofs::prompt(&placed));
        match run_build_agent(env, bench, &task.name, prompt).await {
            Ok(run) => {
                result.usage = run.usage;
                result.transcript = run.transcript.clone();
                run.outcome
            }
            Err(status) => {
                result.status = status;
                let _ = proofs::take_out(bench, &placed);
                if !task.keep_failed {
                    let _ = bench.discard();
                }
                return result;
            }
        }
    };
    let finished = Finished {
        message: &task.commit_message,
        outcome,
        placed: &placed,
    };
    result.status = match finish(env, bench, finished, &mut result).await {
        Ok(status) => status,
        Err(error) => BuildStatus::AgentFailed {
            error: error.to_string(),
        },
    };
    if !matches!(result.status, BuildStatus::Committed { .. }) && !task.keep_failed {
        // Leave the worktree as it was before the attempt.
        let _ = bench.discard();
    }
    result
}

/// How the agent's run ended, and what is checked before its work is committed.
struct Finished<'a> {
    message: &'a str,
    outcome: Result<Outcome, bugloop_agent::AgentError>,
    /// Proven findings' tests placed in the tree, which must pass.
    placed: &'a [proofs::Placed],
}

async fn finish(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finished: Finished<'_>,
    result: &mut BuildResult,
) -> Result<BuildStatus, BuildError> {
    let Finished {
        message,
        outcome,
        placed,
    } = finished;
    if let Some(failed) = take_outcome(outcome, result) {
        return Ok(failed);
    }
    if let Err(reason) = proofs::put_back(bench, placed) {
        return Ok(BuildStatus::Refused {
            reason,
            guardrail: false,
        });
    }
    let with_tests = bench.edits()?;
    let mut changes = proofs::without_tests(&with_tests, placed);
    if changes.is_empty() {
        return Ok(BuildStatus::NoChanges {
            summary: result.summary.clone(),
        });
    }
    // A proven finding's test that ran and passed is the change's check, verify commands or not.
    let checked_by_proofs = changes.refused.is_empty() && !placed.is_empty();
    if checked_by_proofs {
        if let Some(failed) = proofs::run(env, bench, placed, &with_tests, result).await? {
            return Ok(failed);
        }
        if env.config().review.prove.commit_tests {
            changes = bench.edits()?;
        } else {
            proofs::take_out(bench, placed).map_err(BuildError::Other)?;
        }
    }
    if !changes.refused.is_empty() {
        return Ok(BuildStatus::Refused {
            reason: changes.refused.join("; "),
            guardrail: false,
        });
    }
    if let Some(refused) = touches_protected(env, &changes)? {
        return Ok(refused);
    }
    if let Some(failed) = verify(env, bench, &changes, result).await? {
        return Ok(failed);
    }
    commit_as_verified(env, bench, &changes, (message, checked_by_proofs))
}

/// Records what the agent answered as the build's summary; when the agent failed, the build's
/// status (and whether it ran out of budget).
fn take_outcome(
    outcome: Result<Outcome, bugloop_agent::AgentError>,
    result: &mut BuildResult,
) -> Option<BuildStatus> {
    match outcome {
        Ok(Outcome::Answer(text)) => result.summary = text,
        Ok(Outcome::Submitted(value) | Outcome::Structured(value)) => {
            result.summary = value.to_string();
        }
        Err(error) => {
            if let bugloop_agent::AgentError::Model(model) = &error {
                result.out_of_budget = matches!(model, bugloop_llm::LlmError::Budget(_));
                result.model_unavailable = model_unavailable(model);
            }
            return Some(BuildStatus::AgentFailed {
                error: format!(
                    "{} ({})",
                    error.public(),
                    crate::run_reference(&result.transcript)
                ),
            });
        }
    }
    None
}

/// Whether a model error says the model cannot be used now (unreachable, refusing the key,
/// limiting the rate, down behind its gateway, misconfigured) rather than anything about the
/// task. What the task's own input or output can set off (an answer that cannot be read, a cut
/// stream, a silence, a server error, the input refused or too long) is the attempt's failure,
/// so an issue whose text sets it off is escalated in time, not stopped for ever.
fn model_unavailable(error: &bugloop_llm::LlmError) -> bool {
    use bugloop_llm::LlmError;
    match error {
        LlmError::Connection(_)
        | LlmError::Auth { .. }
        | LlmError::RateLimited { .. }
        | LlmError::Config(_)
        | LlmError::Unsupported { .. }
        | LlmError::ReplayMiss { .. }
        | LlmError::Cassette { .. } => true,
        LlmError::Server { status, .. } => matches!(status, 502..=504),
        _ => false,
    }
}

/// The guardrail on `protected_paths`: a change that touches any of them is refused, and so is
/// a symbolic link made, changed or removed where a protected path could be below it (a link
/// at `.github/workflows` to a directory of the change's would bring its files in as
/// workflows).
fn touches_protected(
    env: &LoopEnv<'_>,
    changes: &Changes,
) -> Result<Option<BuildStatus>, BuildError> {
    let protected = IgnoreMatcher::new(&env.config().protected_paths)
        .map_err(|e| BuildError::Other(format!("protected_paths: {e}")))?;
    let touched: Vec<&String> = changes
        .changes
        .iter()
        .filter(|c| {
            protected.is_ignored(&c.path) || (c.is_symlink() && protected.may_match_below(&c.path))
        })
        .map(|c| &c.path)
        .collect();
    if !touched.is_empty() {
        return Ok(Some(BuildStatus::Refused {
            guardrail: true,
            reason: format!(
                "the change touches protected paths: {}",
                touched
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }));
    }
    Ok(None)
}

/// Runs the verify commands until one fails, recording their runs and what each left in the
/// tree besides the agent's changes; the status when one failed.
async fn verify(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    changes: &Changes,
    result: &mut BuildResult,
) -> Result<Option<BuildStatus>, BuildError> {
    // One command at a time, so what each leaves in the tree is known as its own.
    let mut before = bench.changes()?;
    for command in &env.settings.verify_commands {
        let mut runs = run_commands(
            env.config(),
            bench.path(),
            Some(bench.git_mount()),
            std::slice::from_ref(command),
        )
        .await?;
        let after = bench.changes()?;
        bench.record_byproducts(&before, &after, changes, &command.raw);
        before = after;
        let passed = runs.iter().all(|run| run.passed);
        result.verify.append(&mut runs);
        if !passed {
            break;
        }
    }
    result.left_out = bench.left_out();
    // What the tree holds that no commit can (a FIFO, a directory named like `.git`).
    result.left_out.extend(changes.skipped.iter().cloned());
    for run in &result.verify {
        env.progress.event(crate::ProgressEvent::Step(format!(
            "verify `{}`: {}",
            run.command,
            if run.passed { "passed" } else { "failed" }
        )));
    }
    if let Some(failed) = result.verify.iter().find(|v| !v.passed) {
        return Ok(Some(BuildStatus::VerifyFailed {
            command: failed.command.clone(),
            output: failed.output.clone(),
        }));
    }
    Ok(None)
}

/// Commits the agent's changes as they were verified, or refuses when a verify command rewrote
/// them.
fn commit_as_verified(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    changes: &Changes,
    (message, checked_by_proofs): (&str, bool),
) -> Result<BuildStatus, BuildError> {
    // Verify commands may have written files (build output outside .gitignore): commit only what
    // the agent changed, and only as it was verified: a command of the branch's that rewrites the
    // agent's files after they passed gets nothing committed.
    let after = bench.changes()?.restricted_to(changes);
    if !after.refused.is_empty() {
        return Ok(BuildStatus::Refused {
            reason: after.refused.join("; "),
            guardrail: false,
        });
    }
    let rewritten = changes.differences(&after);
    if !rewritten.is_empty() {
        return Ok(BuildStatus::Refused {
            guardrail: false,
            reason: format!(
                "a verify command changed what the agent wrote ({})",
                rewritten.join(", ")
            ),
        });
    }
    let commit = bench.commit(env.config(), &after, message)?;
    Ok(BuildStatus::Committed {
        commit,
        files: after.paths(),
        unverified: env.settings.verify_commands.is_empty() && !checked_by_proofs,
    })
}
