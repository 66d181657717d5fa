//! `bugloop review`, `bugloop findings` and `bugloop store`: argument handling, the glue from
//! configuration to the review loop, and printing. The loop itself is `bugloop_loops::review`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bugloop_config::Config;
use bugloop_domain::thread::{ThreadState, ThreadStatus, find_thread, reconstruct};
use bugloop_forge::Forge;
use bugloop_forge::git::{Git, HeadState, Selection};
use bugloop_forge::local::{LocalForge, store_path};
use bugloop_llm::budget::{Meter, Metered, price_for};
use bugloop_llm::{BudgetLimits, Price};
use bugloop_loops::review::{ReviewEnv, ReviewRequest, review_with};
use bugloop_loops::{Progress, ProgressEvent};
use bugloop_report::style::Style;
use clap::ValueEnum;

use crate::configuration::ConfigChoice;

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
    Sarif,
    Markdown,
}

#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// Compare with this revision (default: the merge base with origin/HEAD, main or master).
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "working"])]
    pub base: Option<String>,
    /// Review up to this revision instead of HEAD.
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "working"])]
    pub head: Option<String>,
    /// Review what is staged, against HEAD.
    #[arg(long, conflicts_with = "working")]
    pub staged: bool,
    /// Review every uncommitted change (staged, unstaged and untracked files), against HEAD.
    #[arg(long)]
    pub working: bool,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Exit with status 1 when an open finding scores at least this (1-10).
    #[arg(long, value_name = "SCORE", value_parser = clap::value_parser!(u8).range(1..=10))]
    pub fail_on: Option<u8>,
    /// The model (provider:model), instead of the configured one.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Report only: publish nothing to the local conversation.
    #[arg(long)]
    pub dry_run: bool,
}

/// Progress lines on standard error while a review runs on a terminal.
#[derive(Debug)]
struct StderrProgress;

impl Progress for StderrProgress {
    fn event(&self, event: ProgressEvent) {
        let line = match event {
            ProgressEvent::Planned {
                calls,
                files,
                tokens,
            } => {
                format!("planned: {files} file(s) in {calls} session(s), ~{tokens} tokens of diff")
            }
            ProgressEvent::CallStarted { call, of, files } => {
                format!("part {call}/{of}: reviewing {files} file(s)")
            }
            ProgressEvent::PassDone { batch, pass, of } => {
                format!("part {batch}: pass {pass}/{of} done")
            }
            ProgressEvent::Finding { batch, title } => format!("part {batch}: found: {title}"),
            ProgressEvent::CallDone {
                call,
                findings,
                error,
            } => match error {
                Some(error) => format!("part {call}: stopped: {error}"),
                None => format!("part {call}: {findings} finding(s) reported"),
            },
            ProgressEvent::Publishing => "publishing".to_owned(),
            ProgressEvent::Step(text) => text,
        };
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "\x1b[2m· {line}\x1b[0m");
    }
}

/// The repository at `cwd` and its configuration (warning about the branch's ignored settings).
pub fn load_config(cwd: &Path, choice: &ConfigChoice) -> Result<(Git, Config)> {
    let (git, loaded) = load_loaded(cwd, choice)?;
    Ok((git, loaded.config))
}

/// `sandbox.when_unconfined: warn` promises a warning when commands will run unconfined; the
/// sandbox's own log line reaches no one without a subscriber, so it is said here, once per run.
fn warn_if_unconfined(config: &Config) -> Result<()> {
    if config.sandbox.when_unconfined == bugloop_config::Unconfined::Warn {
        let sandbox = bugloop_sandbox::probe();
        if !sandbox.can_confine() {
            writeln!(
                std::io::stderr().lock(),
                "warning: {}; commands will run UNCONFINED (sandbox.when_unconfined: warn)",
                sandbox
                    .problem
                    .as_deref()
                    .unwrap_or("the sandbox cannot confine commands here")
            )?;
        }
    }
    Ok(())
}

fn load_loaded(cwd: &Path, choice: &ConfigChoice) -> Result<(Git, bugloop_config::Loaded)> {
    // Outside a repository this is the error to show, not a configuration problem.
    let git = Git::open(cwd)?;
    let (_, loaded) = crate::configuration::load(git.root(), choice)?;
    warn_if_unconfined(&loaded.config)?;
    Ok((git, loaded))
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub(crate) fn meter_for(config: &Config, model: &str) -> Meter {
    let b = &config.budgets;
    let limits = BudgetLimits {
        max_input_tokens: Some(b.max_input_tokens),
        max_output_tokens: Some(b.max_output_tokens),
        max_cost_usd: Some(b.max_cost_usd),
        max_turns: Some(b.max_turns),
        max_wall_time: Some(Duration::from_secs(b.max_wall_seconds)),
    };
    let prices: Vec<(String, Price)> = config
        .model
        .prices
        .iter()
        .map(|(name, p)| {
            (
                name.clone(),
                Price {
                    input_per_mtok: p.input_per_mtok,
                    cached_input_per_mtok: p.cached_input_per_mtok,
                    output_per_mtok: p.output_per_mtok,
                },
            )
        })
        .collect();
    let price = price_for(prices.iter().map(|(k, v)| (k, v)), model);
    Meter::new(model, limits, price)
}

/// The configured model (or `model`), metered by the configured budgets.
pub fn connect_model(
    config: &Config,
    model: Option<&str>,
) -> Result<(Arc<dyn bugloop_llm::Provider>, Arc<Meter>)> {
    let model = model.map_or_else(|| config.model.default.clone(), str::to_owned);
    let settings = crate::models::llm_settings(config);
    let inner = bugloop_llm::connect(&model, &settings, &|var| std::env::var(var).ok())
        .with_context(|| format!("cannot use the model {model}"))?;
    let meter = Arc::new(meter_for(config, &model));
    Ok((Arc::new(Metered::new(inner, meter.clone())), meter))
}

/// Progress on standard error when it is a terminal.
pub fn progress() -> Arc<dyn Progress> {
    if std::io::stderr().is_terminal() {
        Arc::new(StderrProgress)
    } else {
        Arc::new(bugloop_loops::Silent)
    }
}

pub async fn open_forge(git: &Git, config: &Config) -> Result<LocalForge> {
    LocalForge::open(git.clone(), &config.identity.local_bot_name)
        .await
        .with_context(|| format!("the local store of {}", git.root().display()))
}

pub fn review_command(
    cwd: &Path,
    config_choice: &ConfigChoice,
    args: &ReviewArgs,
    runs_dir: &Path,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let (git, loaded) = load_loaded(cwd, config_choice)?;
    // The branch's ignored changes to trusted settings are reported as a finding of their own.
    let own_findings: Vec<_> = bugloop_config::ignored_settings_finding(&loaded.ignored)
        .into_iter()
        .collect();
    let config = loaded.config;
    let selection = if args.staged {
        Selection::Staged
    } else if args.working {
        Selection::Working
    } else if args.base.is_some() || args.head.is_some() {
        Selection::Range {
            base: args.base.clone(),
            head: args.head.clone(),
        }
    } else {
        Selection::Branch
    };
    let change = git.select(&selection)?;
    let diff = bugloop_diff::parse(&change.diff);
    if diff.files.is_empty() {
        let message = format!("Nothing to review: no changes in {}.", change.description);
        if args.format == ReportFormat::Text {
            writeln!(out, "{message}")?;
        } else {
            let mut stderr = std::io::stderr().lock();
            writeln!(stderr, "{message}")?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    for problem in &diff.problems {
        let mut stderr = std::io::stderr().lock();
        writeln!(
            stderr,
            "warning: diff line {}: {} (the rest of the change is reviewed)",
            problem.line, problem.message
        )?;
    }
    let (provider, meter) = connect_model(&config, args.model.as_deref())?;
    let checkout = bugloop_loops::checkout::checkout(&git, &change)?;
    let head = match &change.head {
        HeadState::Commit(sha) => sha.clone(),
        HeadState::Index => "index".to_owned(),
        HeadState::WorkingTree => "working-tree".to_owned(),
    };
    let request = ReviewRequest {
        change: change.key.clone(),
        description: change.description.clone(),
        base: change.base,
        head,
        diff,
        workspace: checkout.path().to_path_buf(),
        git_mount: checkout.git_mount(),
        publish: !args.dry_run,
        clean_room: false,
        focus: None,
    };
    let progress = progress();
    let runtime = runtime()?;
    let report = runtime.block_on(async {
        let forge = open_forge(&git, &config).await?;
        let env = ReviewEnv {
            forge: &forge,
            config: &config,
            provider,
            meter,
            runs_dir: runs_dir.to_path_buf(),
            progress,
        };
        review_with(&env, request, own_findings)
            .await
            .map_err(anyhow::Error::from)
    })?;
    drop(checkout);
    match args.format {
        ReportFormat::Text => {
            let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            write!(
                out,
                "{}",
                bugloop_report::text::review(&report, Style::new(color))
            )?;
        }
        ReportFormat::Json => writeln!(out, "{}", bugloop_report::json::to_json(&report)?)?,
        ReportFormat::Sarif => writeln!(
            out,
            "{}",
            bugloop_report::json::to_json(&bugloop_report::sarif::review(&report))?
        )?,
        ReportFormat::Markdown => write!(out, "{}", bugloop_report::markdown::review(&report))?,
    }
    if !report.complete {
        let mut stderr = std::io::stderr().lock();
        writeln!(
            stderr,
            "warning: the review is incomplete ({} part(s) failed); see \"Not reviewed\"",
            report.errors.len()
        )?;
        return Ok(ExitCode::from(3));
    }
    if let (Some(limit), Some(max)) = (args.fail_on, report.max_open_score())
        && max >= limit
    {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Subcommand)]
pub enum FindingsCommand {
    /// One finding with its whole thread.
    Show {
        /// The finding id (or a unique prefix of it).
        id: String,
        #[arg(long, value_enum, default_value_t = crate::Format::Text)]
        format: crate::Format,
    },
}

#[derive(Debug, clap::Args)]
pub struct FindingsArgs {
    #[command(subcommand)]
    pub command: Option<FindingsCommand>,
    /// The conversation to read (default: the checked-out branch's), e.g. `branch:main`.
    #[arg(long, value_name = "KEY", global = true)]
    pub change: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

fn status_order(status: ThreadStatus) -> u8 {
    match status {
        ThreadStatus::Escalated => 0,
        ThreadStatus::Pending => 1,
        ThreadStatus::Disputed => 2,
        ThreadStatus::Resolved => 3,
    }
}

pub fn findings_command(
    cwd: &Path,
    config_choice: &ConfigChoice,
    args: &FindingsArgs,
    out: &mut impl Write,
) -> Result<ExitCode> {
    let (git, config) = load_config(cwd, config_choice)?;
    let key = args
        .change
        .clone()
        .map_or_else(|| git.conversation_key(), bugloop_forge::ChangeKey);
    let markers = bugloop_config::marker_syntax(&config)?;
    let comments = runtime()?.block_on(async {
        let forge = open_forge(&git, &config).await?;
        forge.comments(&key).await.map_err(anyhow::Error::from)
    })?;
    let state = reconstruct(&comments, &markers);
    let mut threads: Vec<ThreadState> = state
        .threads
        .into_iter()
        .filter(|t| t.finding_id.is_some())
        .collect();
    threads.sort_by_key(|t| {
        (
            status_order(t.status),
            std::cmp::Reverse(t.score),
            t.status_at,
        )
    });
    match &args.command {
        None => match args.format {
            crate::Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&threads)?)?,
            crate::Format::Text if threads.is_empty() => {
                writeln!(out, "No findings tracked for {key}.")?;
            }
            crate::Format::Text => {
                writeln!(out, "Findings of {key}:")?;
                for t in &threads {
                    let place = match (&t.file, t.line) {
                        (Some(f), Some(l)) => format!("{f}:{l}"),
                        (Some(f), None) => f.clone(),
                        _ => String::new(),
                    };
                    let score = t.score.map_or("-".to_owned(), |s| format!("{s}/10"));
                    let replies = if t.developer_replies.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({} repl{})",
                            t.developer_replies.len(),
                            if t.developer_replies.len() == 1 {
                                "y"
                            } else {
                                "ies"
                            }
                        )
                    };
                    writeln!(
                        out,
                        "  {:<9} {:>5}  {}{replies}\n                   {}  {}",
                        t.status.as_str(),
                        score,
                        t.title,
                        t.finding_id.as_ref().map_or("", |f| f.as_str()),
                        place
                    )?;
                }
            }
        },
        Some(FindingsCommand::Show { id, format }) => {
            let thread = find_thread(&threads, id)?;
            let members: Vec<_> = comments
                .iter()
                .filter(|c| c.thread_id.is_some() && c.thread_id == thread.forge_thread_id)
                .collect();
            match format {
                crate::Format::Json => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "finding": thread,
                        "comments": members,
                    }))?
                )?,
                crate::Format::Text => {
                    writeln!(
                        out,
                        "{} · {} · score {}",
                        thread.finding_id.as_ref().map_or("", |f| f.as_str()),
                        thread.status,
                        thread.score.map_or("-".to_owned(), |s| s.to_string())
                    )?;
                    for comment in members {
                        writeln!(
                            out,
                            "\n── {} · {} · comment {}{}\n{}",
                            comment.author,
                            comment.created_at.strftime("%Y-%m-%d %H:%M"),
                            comment.id,
                            comment.path.as_ref().map_or(String::new(), |p| format!(
                                " · {p}:{}",
                                comment.line.unwrap_or(0)
                            )),
                            comment.body.trim_end()
                        )?;
                    }
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, clap::Subcommand)]
pub enum StoreCommand {
    /// Print where the local store is.
    Path,
    /// Move a damaged store aside (kept for recovery) so the next command starts an empty one.
    Reset,
}

pub fn store_command(cwd: &Path, command: &StoreCommand, out: &mut impl Write) -> Result<ExitCode> {
    let git = Git::open(cwd)?;
    let path: PathBuf = store_path(&git)?;
    match command {
        StoreCommand::Path => writeln!(out, "{}", path.display())?,
        StoreCommand::Reset => {
            if !path.exists() {
                writeln!(out, "There is no store at {} yet.", path.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            let moved = bugloop_store::Store::quarantine(&path)?;
            writeln!(
                out,
                "Moved {} to {}; the next command starts an empty store.",
                path.display(),
                moved.display()
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
