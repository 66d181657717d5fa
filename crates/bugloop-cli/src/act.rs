//! `bugloop fix`, `do`, `ask`, `comment` and `reply`: what a forge comment would trigger, run
//! locally. The loops are `bugloop_loops::act`; this file parses, connects and prints.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use bugloop_domain::finding::FindingId;
use bugloop_domain::thread::{find_thread, reconstruct};
use bugloop_forge::Forge;
use bugloop_forge::git::Git;
use bugloop_loops::act::{ActEnv, Targets};
use bugloop_report::act::{ActOutcome, ActReport};
use bugloop_report::converge::Exit;

use crate::configuration::ConfigChoice;
use crate::review::{connect_model, load_config, open_forge, progress, runtime};

#[derive(Debug, clap::Args)]
pub struct ModelArg {
    /// The model (provider:model), instead of the configured one.
    #[arg(long, value_name = "MODEL", global = true)]
    pub model: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text, global = true)]
    pub format: crate::Format,
}

#[derive(Debug, clap::Args)]
pub struct FixArgs {
    /// The findings to fix (ids or unique prefixes, from `bugloop findings`).
    #[arg(value_name = "ID", required_unless_present = "all")]
    pub ids: Vec<String>,
    /// Fix every open finding of this branch.
    #[arg(long, conflicts_with = "ids")]
    pub all: bool,
    /// Extra guidance for the fix.
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct TextArgs {
    /// The request, question or comment.
    pub text: String,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct CommentArgs {
    /// The comment, as you would write it on a pull request.
    pub text: String,
    /// Reply in the thread of this finding (id) or comment (number).
    #[arg(long, value_name = "ID")]
    pub reply_to: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct ReplyArgs {
    /// The finding (id or unique prefix).
    pub id: String,
    /// Your reply: why it is not a problem, or will be handled elsewhere.
    pub text: String,
    /// Have bugloop weigh the reply now (otherwise the next review does).
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub common: ModelArg,
}

/// An error after the developer's comment (or reply) was stored: the comment stays in the
/// conversation, so the exit status (3) must not say "nothing happened" as an error before it
/// does (2).
#[derive(Debug)]
pub struct StoredNotActedOn {
    pub comment: String,
    pub change: String,
}

impl std::fmt::Display for StoredNotActedOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "your comment was stored (comment {} of {}), but acting on it failed",
            self.comment, self.change
        )
    }
}

/// Marks an error that happened after `comment` was stored.
fn after_storing(
    error: impl Into<anyhow::Error>,
    comment: &bugloop_domain::thread::Comment,
    change: &bugloop_forge::ChangeKey,
) -> anyhow::Error {
    error.into().context(StoredNotActedOn {
        comment: comment.id.clone(),
        change: change.to_string(),
    })
}

fn print_report(
    out: &mut impl Write,
    report: &ActReport,
    format: crate::Format,
) -> Result<ExitCode> {
    match format {
        crate::Format::Json => writeln!(out, "{}", bugloop_report::json::to_json(report)?)?,
        crate::Format::Text => write!(out, "{}", bugloop_report::text::act(report))?,
    }
    Ok(match report.outcome() {
        ActOutcome::NotCommitted => ExitCode::from(1),
        ActOutcome::WaitsOnBranch => ExitCode::from(4),
        ActOutcome::Done => ExitCode::SUCCESS,
    })
}

/// Runs `work` with the acting environment of the repository at `cwd`.
fn with_env<T>(
    cwd: &Path,
    config_file: &ConfigChoice,
    model: Option<&str>,
    runs_dir: &Path,
    work: impl AsyncFnOnce(&ActEnv<'_>, &bugloop_forge::local::LocalForge) -> Result<T>,
) -> Result<T> {
    let (git, config) = load_config(cwd, config_file)?;
    let (provider, meter) = connect_model(&config, model)?;
    runtime()?.block_on(async {
        let forge = open_forge(&git, &config).await?;
        let env = ActEnv {
            forge: &forge,
            git: &git,
            config: &config,
            provider,
            meter,
            runs_dir: runs_dir.to_path_buf(),
            progress: progress(),
        };
        work(&env, &forge).await
    })
}

pub fn fix(
    cwd: &Path,
    config: &ConfigChoice,
    args: &FixArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let targets = if args.all {
        Targets::All
    } else {
        Targets::Ids(args.ids.clone())
    };
    let report = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, _| {
            let change = env.git.conversation_key();
            Ok(bugloop_loops::act::fix(env, &change, &targets, args.comment.as_deref()).await?)
        },
    )?;
    print_report(out, &report, args.common.format)
}

pub fn do_request(
    cwd: &Path,
    config: &ConfigChoice,
    args: &TextArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let report = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, _| Ok(bugloop_loops::act::do_request(env, &args.text).await?),
    )?;
    print_report(out, &report, args.common.format)
}

pub fn ask(
    cwd: &Path,
    config: &ConfigChoice,
    args: &TextArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let answer = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, _| {
            let change = env.git.conversation_key();
            Ok(bugloop_loops::act::ask(env, &change, &args.text).await?)
        },
    )?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", serde_json::json!({"answer": answer}))?,
        crate::Format::Text => writeln!(out, "{}", answer.trim_end())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The root comment of a finding (by id or prefix) or a comment by its number.
async fn thread_root(
    forge: &bugloop_forge::local::LocalForge,
    config: &bugloop_config::Config,
    git: &Git,
    target: &str,
) -> Result<(bugloop_forge::ChangeKey, String)> {
    let change = git.conversation_key();
    let comments = forge.comments(&change).await?;
    if comments.iter().any(|c| c.id == target) {
        return Ok((change, target.to_owned()));
    }
    let state = reconstruct(&comments, &bugloop_config::marker_syntax(config)?);
    Ok((change, find_thread(&state.threads, target)?.id.clone()))
}

pub fn comment(
    cwd: &Path,
    config: &ConfigChoice,
    args: &CommentArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let report = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, forge| {
            let (change, parent) = match &args.reply_to {
                Some(target) => {
                    let (change, root) = thread_root(forge, env.config, env.git, target).await?;
                    (change, Some(root))
                }
                None => (env.git.conversation_key(), None),
            };
            let comment = forge
                .developer_comment(&change, &args.text, parent.as_deref())
                .await?;
            bugloop_loops::act::on_comment(env, &change, &comment)
                .await
                .map_err(|e| after_storing(e, &comment, &change))
        },
    )?;
    print_report(out, &report, args.common.format)
}

pub fn reply(
    cwd: &Path,
    config: &ConfigChoice,
    args: &ReplyArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let outcome = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, forge| {
            let (change, root) = thread_root(forge, env.config, env.git, &args.id).await?;
            let comment = forge
                .developer_comment(&change, &args.text, Some(&root))
                .await?;
            if !args.now {
                return Ok(None);
            }
            let settle = async {
                let comments = forge.comments(&change).await?;
                let state = reconstruct(&comments, &bugloop_config::marker_syntax(env.config)?);
                let id: FindingId = state
                    .threads
                    .iter()
                    .find(|t| t.id == root)
                    .and_then(|t| t.finding_id.clone())
                    .ok_or_else(|| anyhow::anyhow!("comment {root} is not a finding"))?;
                anyhow::Ok(bugloop_loops::act::settle_dispute(env, &change, &id).await?)
            };
            Ok(Some(
                settle
                    .await
                    .map_err(|e| after_storing(e, &comment, &change))?,
            ))
        },
    )?;
    match (outcome, args.common.format) {
        (None, crate::Format::Text) => writeln!(
            out,
            "Reply added; the next `bugloop review` (or `bugloop reply --now`) answers it."
        )?,
        (None, crate::Format::Json) => writeln!(out, "{}", serde_json::json!({"added": true}))?,
        (Some(outcome), crate::Format::Json) => {
            writeln!(out, "{}", bugloop_report::json::to_json(&outcome)?)?;
        }
        (Some(outcome), crate::Format::Text) => {
            write!(out, "{}", bugloop_report::text::dispute(&outcome))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Args)]
pub struct ConvergeArgs {
    /// Converge the change from this revision (default: the merge base with the default branch).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

pub fn converge(
    cwd: &Path,
    config: &ConfigChoice,
    args: &ConvergeArgs,
    runs: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let report = with_env(
        cwd,
        config,
        args.common.model.as_deref(),
        runs,
        async |env, _| {
            let change = env.git.conversation_key();
            let settings = crate::models::llm_settings(env.config);
            let meter = env.meter.clone();
            // Auditors with a model of their own spend from the run's one budget.
            let connect = move |model: &str| {
                let inner = bugloop_llm::connect(model, &settings, &|var| std::env::var(var).ok())?;
                Ok(Arc::new(bugloop_llm::Metered::new(inner, meter.clone()))
                    as Arc<dyn bugloop_llm::Provider>)
            };
            Ok(
                bugloop_loops::converge::converge(env, &change, args.base.clone(), &connect)
                    .await?,
            )
        },
    )?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", bugloop_report::json::to_json(&report)?)?,
        crate::Format::Text => write!(out, "{}", bugloop_report::text::converge(&report))?,
    }
    Ok(match report.exit {
        Exit::Converged => ExitCode::SUCCESS,
        Exit::CapReached | Exit::Stuck => ExitCode::from(1),
        Exit::Error => ExitCode::from(2),
    })
}
