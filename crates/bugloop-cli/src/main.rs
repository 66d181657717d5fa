//! The `bugloop` command. It parses arguments, calls the application layer (`bugloop-app`) and
//! renders what comes back; the exit code of every verdict is decided in [`exit_code`].
//!
//! **Never:** depend on or name a crate below the application layer (the tidy test checks both).

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use bugloop_app::{
    App, AppError, AppOptions, ConfigChoice, Verdict, inspect, load_configuration, runs,
};
use clap::{Parser, Subcommand, ValueEnum};

mod act;
mod action;
#[cfg(feature = "bench")]
mod bench;
mod interrupt;
mod openmp;
mod progress;
mod report;
mod review;
mod review_local;
mod serve;
mod show;
mod solve;
mod terminal;
mod watch;

#[derive(Debug, Parser)]
#[command(
    name = "bugloop",
    version,
    about = "Finds bugs in code changes and fixes them in closed loops"
)]
struct Cli {
    /// Run as if started in this directory.
    #[arg(short = 'C', long = "directory", global = true, value_name = "DIR")]
    directory: Option<PathBuf>,
    /// Your own configuration file, applied over the repository's (default:
    /// $XDG_CONFIG_HOME/bugloop/config.yml, i.e. ~/.config/bugloop/config.yml, if it exists).
    /// Empty (`BUGLOOP_CONFIG=`) is the same as not set.
    #[arg(long, global = true, env = "BUGLOOP_CONFIG", value_name = "FILE", value_parser = any_path)]
    config: Option<PathBuf>,
    /// Accept this branch's own .bugloop/config.yml in full for this run, including commands,
    /// sandbox, model, budget and identity settings (by default those come only from the base
    /// commit's file, your own file and BUGLOOP_* variables).
    #[arg(long, global = true)]
    trust_branch_config: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Review the change on this branch (or --staged, --working, --base/--head) and track the
    /// findings in the local conversation.
    Review(review::ReviewArgs),
    /// The findings tracked for this branch, with their status; `findings show <id>` for one.
    Findings(review::FindingsArgs),
    /// Fix open findings: a Build agent changes the code in a worktree, the verify commands run,
    /// and one commit lands on this branch (exit 1: nothing committed; 4: left on a branch).
    Fix(act::FixArgs),
    /// Make a requested change the same way (`chore: apply user request`).
    Do(act::TextArgs),
    /// Ask a question about the code; nothing is changed.
    Ask(act::TextArgs),
    /// File an error (a stack trace, a log excerpt or JSON log lines, from FILE or standard
    /// input) as an issue labelled `bug` and `bug:autofix`, or count it on the issue already
    /// filed for the same error.
    Report(report::ReportArgs),
    /// Follow log files (rotation-safe, like `tail -F`) or standard input and file or count the
    /// errors in them as `report` does: each error once per window, repeats tallied, at most so
    /// many a minute; `--once` reads what is there and stops.
    Watch(watch::WatchArgs),
    /// Solve an issue: a Build agent iterates until the tests pass (solve.test_commands), the
    /// solution goes on a branch `bugloop/<issue>-<slug>` with a draft change request, its review
    /// is answered round by round, and the draft is marked ready when the gate passes. Resumes
    /// where the last run stopped (exit 0 ready, merged or waiting; 1 escalated; 2 an error;
    /// 3 stopped out of budget: run it again with more)
    Solve(solve::SolveArgs),
    /// Where issues stand in the solve pipeline; with ISSUE, every transition with its reason.
    Status(solve::StatusArgs),
    /// An issue or change request (a solve draft) with its body and every comment of its
    /// conversation: what a forge's web page would show.
    Item(solve::ItemArgs),
    /// Write a comment as on a pull request; bugloop decides whether to fix, do, answer or weigh
    /// it as a dispute (exit 0 done; 1 a fix or change was not committed; 4 left on a branch;
    /// 3 the comment was stored but acting on it failed; 2 an error, nothing stored).
    Comment(act::CommentArgs),
    /// Record a reviewer's decision on a local change request (a solve draft): approve,
    /// request changes (the ready gate waits until they review again) or comment.
    ReviewDecision(review_local::ReviewDecisionArgs),
    /// Check results on a local change request's head: runs the test commands there in the
    /// sandbox and records each (exit 1 when one fails), or records a result with --record.
    Checks(review_local::ChecksArgs),
    /// Reply in a finding's thread (disagree, explain); weighed at the next review or with --now
    /// (exit 3: the reply was stored but weighing it failed).
    Reply(act::ReplyArgs),
    /// Audit and fix this branch until an audit is clean (at most `converge.max_loops` loops);
    /// exit 0 converged, 1 cap reached or stuck, 2 error.
    Converge(act::ConvergeArgs),
    /// The local store of findings and conversations (under .git/bugloop/).
    #[command(subcommand)]
    Store(review::StoreCommand),
    /// Show or describe the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print the 1-10 severity rubric and how scores map to severities and priorities.
    Rubric {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Show how bugloop reads an input: a diff, or a comment's markers and rmcoc blocks.
    #[command(subcommand)]
    Inspect(InspectCommand),
    /// Check this machine: sandbox confinement, git, the embedded model.
    Doctor,
    /// The agent runs recorded in this repository (transcripts under .git/bugloop/runs).
    #[command(subcommand)]
    Runs(RunsCommand),
    /// Measure speed and memory (results belong in BENCHMARKS.md).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run as a GitHub Actions step: the job the workflow's event asks for (a review of the
    /// pull request, or a developer's comment), with the report in the job summary and a
    /// review's SARIF file for code scanning. Exit 0 also when there is nothing to do.
    Action(action::ActionArgs),
    /// Run the GitHub App server: signed webhook deliveries are queued durably, and with the
    /// App's id and key (BUGLOOP_APP_ID, BUGLOOP_APP_PRIVATE_KEY) workers run them as the App.
    Serve(serve::ServeArgs),
    /// The server's jobs: list, show, retry.
    Jobs(serve::JobsArgs),
    /// What a run stopped by Ctrl-C held on disk, removed once it has let go (started by that
    /// run).
    #[command(hide = true)]
    RemoveLeftovers(interrupt::RemoveLeftoversArgs),
}

#[derive(Debug, Subcommand)]
enum RunsCommand {
    /// Every run, newest first: task, model, turns, tool calls, tokens, outcome.
    List {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// One run's transcript: prompts, model answers, tool calls and results, usage.
    Show {
        /// The run id (or a unique prefix of it).
        id: String,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

/// The change the benchmark's reviewer reviews (`bench tokens`, `bench latency`), and how it
/// answers.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchChange {
    /// An example under examples/, made into a repository.
    #[arg(long, default_value = "examples/review-demo", conflicts_with = "repo")]
    example: PathBuf,
    /// A repository with the change's branch checked out (copied, not touched), such as the
    /// one `scripts/bench-reference-change` makes.
    #[arg(long)]
    repo: Option<PathBuf>,
    /// The benchmark's reviewer runs one pass per reply even when asked for all four at once
    /// (as many models do), instead of all in one.
    #[arg(long)]
    one_pass_per_turn: bool,
}

/// How long the benchmark's reviewer takes to answer (`bench latency`).
#[derive(Debug, clap::Args)]
pub(crate) struct BenchPace {
    /// Milliseconds every request takes.
    #[arg(long, default_value_t = 3000)]
    request_ms: u64,
    /// Milliseconds more per thousand input tokens.
    #[arg(long, default_value_t = 0.0)]
    input_ms_per_ktok: f64,
    /// Milliseconds more per output token (each answer says it generated 50).
    #[arg(long, default_value_t = 0.0)]
    output_ms_per_token: f64,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// The embedded model: load time, prompt and generation tokens per second, peak memory.
    Model {
        #[arg(long, default_value = "local:smollm2")]
        model: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 128)]
        max_tokens: u32,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The embedded model over a four-turn conversation: prompt evaluation with the context kept
    /// between calls, against a fresh context per call, on the same prompts.
    Session {
        #[arg(long, default_value = "local:smollm2")]
        model: String,
        #[arg(long, default_value_t = 48)]
        max_tokens: u32,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Print the fixed system and user prompt `bench model` uses (for comparisons).
    Prompt,
    /// Everything a review does except the model's time, on a synthetic change: time and memory.
    Review {
        #[arg(long, default_value_t = 2_000)]
        files: usize,
        #[arg(long, default_value_t = 100_000)]
        lines: usize,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// What proving findings (review.prove) adds to a review, with an instant scripted model on
    /// a Python repository: wall time per proven finding (the test's run and bugloop's own),
    /// model calls and tokens, and their share of the review and of the budget.
    Prove {
        /// Findings reported (and proven) per review.
        #[arg(long, default_value_t = 3)]
        findings: usize,
        /// Reviews with and without proving, alternating.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The tokens reviews of a change send to the model, counted with o200k_base through a
    /// local OpenAI-compatible server: the first review, then a re-review after a one-line push
    /// (run in bugloop's checkout).
    Tokens {
        #[command(flatten)]
        change: BenchChange,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// The wall time of a review with a model that takes time to answer: the benchmark's
    /// reviewer answers each request after a delay, and the review's wall time, its time to the
    /// model's first finding and its sequential round trips are printed (run in bugloop's
    /// checkout). `--serve` only serves that reviewer, for another tool to be measured on it.
    Latency {
        #[command(flatten)]
        change: BenchChange,
        #[command(flatten)]
        pace: BenchPace,
        /// Serve the reviewer until Ctrl-C instead of reviewing, and then print what the
        /// requests it served took.
        #[arg(long)]
        serve: bool,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Does bugloop find bugs? Reviews every change of a corpus (planted bugs the analyzers
    /// catch, bugs only a reviewer catches, clean changes) and prints recall and precision per
    /// language and overall, beside each analyzer run alone on the changed files (run in
    /// bugloop's checkout).
    Detect {
        /// The corpus: a directory of cases (`*.yaml`).
        #[arg(long, default_value = "crates/bugloop-bench/bench/detect")]
        corpus: PathBuf,
        #[arg(long, default_value = "local:smollm2")]
        model: String,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration and where each value came from: defaults, the base
    /// commit's .bugloop/config.yml, this branch's review settings, your own file, BUGLOOP_*
    /// overrides.
    Show {
        #[arg(long, value_enum, default_value_t = DataFormat::Yaml)]
        format: DataFormat,
    },
    /// Print the configuration's JSON Schema (for editor completion).
    Schema,
    /// Check the configuration: FILE alone, or every file this repository is run with (the base
    /// commit's, the branch's, your own) and what they make together with BUGLOOP_* variables.
    /// Prints each error with its file, line and column (one per top-level section of a file);
    /// exit 1 when there is one. Warns of each setting of this branch a run would ignore.
    /// Changes nothing.
    Check {
        /// A configuration file to check on its own.
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum InspectCommand {
    /// Parse a unified diff (a file, or `-` for standard input) and print files, hunks and problems.
    Diff {
        #[arg(default_value = "-")]
        input: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Parse a comment body (a file, or `-`) for finding markers and rmcoc blocks.
    Comment {
        #[arg(default_value = "-")]
        input: PathBuf,
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum DataFormat {
    Yaml,
    Json,
}

fn main() -> ExitCode {
    openmp::spin_briefly();
    // A panic's message may quote what it was reading (a change, a model's answer): printed
    // through the same filter as everything else.
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(terminal::stderr(), "{info}");
    }));
    let cli = Cli::parse();
    logging(matches!(cli.command, Command::Serve(_)));
    // Colour only on a terminal that wants it; the review's renderer asks the same.
    let color = io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut stdout = terminal::Printable::new(io::stdout().lock(), color);
    let ran = usable_temporary_directory().and_then(|()| run(cli, &mut stdout));
    // What the process kept for its whole life (the sandbox's copy of /etc) goes with it.
    bugloop_app::leftovers::remove_own();
    match ran {
        Ok(verdict) => exit_code(&verdict),
        // The reader went away (`bugloop runs show … | head`): nothing is wrong, nothing to say.
        Err(error) if reader_gone(&error) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = stdout.flush();
            let mut stderr = terminal::stderr();
            let _ = writeln!(stderr, "error: {error}");
            // A cause an error already quotes in its own message is not said again.
            let mut said = error.to_string();
            for cause in error.chain().skip(1) {
                let cause = cause.to_string();
                if !said.contains(&cause) {
                    let _ = writeln!(stderr, "  caused by: {cause}");
                }
                said = cause;
            }
            error_exit_code(&error)
        }
    }
}

/// The commands that run a job of bugloop's (a model, agents, commits, comments): a Ctrl-C
/// during one is answered (see [`say_when_interrupted`]). The server and `watch` stop on it in
/// their own way.
fn job_name(command: &Command) -> Option<&'static str> {
    Some(match command {
        Command::Review(_) => "review",
        Command::Fix(_) => "fix",
        Command::Do(_) => "do",
        Command::Ask(_) => "ask",
        Command::Solve(_) => "solve",
        Command::Comment(_) => "comment",
        Command::Reply(_) => "reply",
        Command::Converge(_) => "converge",
        Command::Action(_) => "action",
        _ => return None,
    })
}

/// Whether `error` is standard output's reader having closed the pipe.
fn reader_gone(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// A `TMPDIR` that is not a directory fails every temporary file and sandbox stage later, with
/// errors that name neither it nor the cure: said first, once. One this user cannot create a file
/// in is warned of first: what needs it then fails and says so (a review is incomplete, exit 3),
/// and the warning names the cause.
fn usable_temporary_directory() -> Result<()> {
    let Some(dir) = std::env::var_os("TMPDIR").filter(|dir| !dir.is_empty()) else {
        return Ok(());
    };
    let dir = Path::new(&dir);
    if !dir.is_dir() {
        bail!(
            "TMPDIR is {}, which is not a directory: create it, or point TMPDIR at one (or unset it)",
            dir.display()
        );
    }
    if let Err(error) = tempfile::tempfile_in(dir) {
        let _ = writeln!(
            io::stderr(),
            "warning: TMPDIR is {}, where this user cannot create a file ({}): what bugloop sets up \
             there will fail; point TMPDIR at a directory you can write to (or unset it)",
            dir.display(),
            error.kind()
        );
    }
    Ok(())
}

/// A path as given, an empty one too: clap's own refuses an empty value, and an exported
/// `BUGLOOP_CONFIG=` then broke every command with an error about an option never typed.
fn any_path(value: &str) -> Result<PathBuf, std::convert::Infallible> {
    Ok(PathBuf::from(value))
}

/// Logs to standard error: the server's at `info` by default, other commands' only when
/// `BUGLOOP_LOG` asks (a `tracing` filter: `debug`, `bugloop_app=debug,warn`), so their output
/// stays what it was.
fn logging(serving: bool) {
    let filter = match std::env::var("BUGLOOP_LOG") {
        Ok(filter) if !filter.trim().is_empty() => filter,
        // sqlx tells PostgreSQL's notices ("already exists, skipping") at info.
        _ if serving => "info,sqlx=warn".to_owned(),
        _ => return,
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&filter).unwrap_or_else(|error| {
        let _ = writeln!(
            io::stderr(),
            "warning: BUGLOOP_LOG is {filter:?}, not a filter ({error}); logging at info"
        );
        tracing_subscriber::EnvFilter::new("info")
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| terminal::LogLine::new(io::stderr()))
        .with_ansi(io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .try_init();
}

/// The one place verdicts become exit codes: 0 done, 1 findings at the threshold / nothing
/// committed / refused / not converged / problems found, 2 an error, 3 incomplete (or the
/// comment was stored and acting on it failed), 4 a verified commit left on a branch.
fn exit_code(verdict: &Verdict) -> ExitCode {
    match verdict {
        Verdict::Done | Verdict::NothingToDo { .. } | Verdict::Skipped { .. } => ExitCode::SUCCESS,
        Verdict::FindingsAtThreshold { .. }
        | Verdict::NotCommitted { .. }
        | Verdict::Refused { .. }
        | Verdict::NotConverged { .. }
        | Verdict::Problems { .. } => ExitCode::from(1),
        Verdict::Failed { .. } => ExitCode::from(2),
        Verdict::Incomplete { .. } => ExitCode::from(3),
        Verdict::LeftOnBranch { .. } => ExitCode::from(4),
    }
}

/// An error is exit 2, except after the developer's comment was stored (3): the comment stays in
/// the conversation, so the status must not say that nothing happened.
fn error_exit_code(error: &anyhow::Error) -> ExitCode {
    match error.downcast_ref::<AppError>() {
        Some(AppError::AfterStoring { .. }) => ExitCode::from(3),
        _ => ExitCode::from(2),
    }
}

/// Where a command runs: the directory it was started in (or `-C`'s) and the configuration
/// chosen on its command line.
pub(crate) struct Here {
    pub cwd: PathBuf,
    pub choice: ConfigChoice,
}

/// Opens the repository where the command runs as an [`App`], printing its warnings on
/// standard error.
pub(crate) fn open_app(runtime: &tokio::runtime::Runtime, here: &Here) -> Result<App> {
    open_app_at(runtime, &here.cwd, &here.choice)
}

/// Opens the repository at `directory` as an [`App`] with the configuration `choice`.
pub(crate) fn open_app_at(
    runtime: &tokio::runtime::Runtime,
    directory: &Path,
    choice: &ConfigChoice,
) -> Result<App> {
    let app = runtime.block_on(App::open(AppOptions {
        directory: directory.to_path_buf(),
        config: choice.clone(),
        progress: progress::progress(),
        forge: bugloop_app::ForgeChoice::Local,
    }))?;
    warn(app.warnings())?;
    Ok(app)
}

pub(crate) fn warn(warnings: &[String]) -> Result<()> {
    let mut stderr = terminal::stderr();
    for warning in warnings {
        // One line each: a line break in what a warning quotes (a branch's key) would let it
        // write a `warning:` line of its own.
        let warning = warning.replace('\n', "\\n").replace('\r', "\\r");
        writeln!(stderr, "warning: {warning}")?;
    }
    Ok(())
}

/// `bugloop bench`, when this build has its benchmarks (feature `bench`).
#[cfg(feature = "bench")]
fn run_bench(here: &Here, command: BenchCommand, out: &mut impl Write) -> Result<Verdict> {
    bench::run(here, command, out)
}

/// `bugloop bench` in a build without its benchmarks (release builds).
#[cfg(not(feature = "bench"))]
fn run_bench(_here: &Here, command: BenchCommand, _out: &mut impl Write) -> Result<Verdict> {
    drop(command);
    Err(anyhow::anyhow!(
        "`bugloop bench` is not in this build: build bugloop with its benchmarks, \
         `cargo build --release --locked -p bugloop-cli --features bench` (see BENCHMARKS.md)"
    ))
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Configuration for commands that work outside a repository too (its warnings printed).
fn configuration(here: &Here) -> Result<bugloop_app::Configuration> {
    let configuration = load_configuration(&here.cwd, &here.choice)?;
    warn(&configuration.warnings)?;
    Ok(configuration)
}

fn run(cli: Cli, out: &mut impl Write) -> Result<Verdict> {
    let cwd = match &cli.directory {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let here = Here {
        cwd,
        choice: ConfigChoice {
            file: cli
                .config
                .clone()
                .filter(|file| !file.as_os_str().is_empty()),
            trust_branch: cli.trust_branch_config,
            operator: None,
        },
    };
    if let Some(job) = job_name(&cli.command) {
        interrupt::say_when_interrupted(job);
    }
    match cli.command {
        Command::Review(args) => review::review(&here, &args, out),
        Command::Action(args) => action::action(&here, &args, out),
        Command::Serve(args) => serve::serve(&args, out),
        Command::Jobs(args) => serve::jobs(&args, out),
        Command::Findings(args) => review::findings(&here, &args, out),
        Command::Store(command) => review::store(&here.cwd, command, out),
        Command::Fix(args) => act::fix(&here, &args, out),
        Command::Do(args) => act::do_request(&here, &args, out),
        Command::Ask(args) => act::ask(&here, &args, out),
        Command::Report(args) => report::report(&here, &args, out),
        Command::Watch(args) => watch::watch(&here, &args, out),
        Command::Solve(args) => solve::solve(&here, &args, out),
        Command::Status(args) => solve::status(&here, &args, out),
        Command::Item(args) => solve::item(&here, &args, out),
        Command::Comment(args) if args.change.is_some() => review_local::comment(&here, &args, out),
        Command::Comment(args) => act::comment(&here, &args, out),
        Command::ReviewDecision(args) => review_local::review_decision(&here, &args, out),
        Command::Checks(args) => review_local::checks(&here, &args, out),
        Command::Converge(args) => act::converge(&here, &args, out),
        Command::Reply(args) => act::reply(&here, &args, out),
        Command::Config(command) => config_command(&here, &command, out),
        Command::Rubric { format } => {
            show::rubric(out, format)?;
            Ok(Verdict::Done)
        }
        Command::Runs(command) => runs_command(&here.cwd, &command, out),
        Command::Doctor => {
            let config = configuration(&here)?.loaded.config;
            let mut checks = bugloop_app::doctor::checks(&config);
            let here_check = bugloop_app::doctor::repository_sandbox_check(&config, &here.cwd);
            if let Some(check) = runtime()?.block_on(here_check) {
                // Beside the machine's sandbox checks, before git and the model.
                let at = checks
                    .iter()
                    .rposition(|c| c.subject.starts_with("sandbox"))
                    .map_or(0, |i| i + 1);
                checks.insert(at, check);
            }
            show::doctor(out, &checks)
        }
        Command::Bench(command) => run_bench(&here, command, out),
        Command::Inspect(command) => inspect_command(&here, &command, out),
        Command::RemoveLeftovers(args) => interrupt::remove_leftovers(&args),
    }
}

/// `bugloop config`: the configuration in effect, each value with where it came from, or the
/// schema of the configuration file.
fn config_command(here: &Here, command: &ConfigCommand, out: &mut impl Write) -> Result<Verdict> {
    match command {
        ConfigCommand::Show { format } => {
            let configuration = configuration(here)?;
            let (loaded, prompts) = (&configuration.loaded, &configuration.prompts.prompts);
            match format {
                DataFormat::Yaml => {
                    write!(out, "{}", bugloop_app::types::to_yaml_with_sources(loaded))?;
                    if !prompts.is_empty() {
                        writeln!(
                            out,
                            "# The repository's prompts, added to the built-in ones as its \
                             instructions:"
                        )?;
                    }
                    for prompt in prompts {
                        writeln!(
                            out,
                            "#   {}: {} ({} bytes)",
                            prompt.kind.path().rsplit('/').next().unwrap_or_default(),
                            prompt.source,
                            prompt.text.len()
                        )?;
                    }
                }
                DataFormat::Json => {
                    let mut shown = bugloop_app::types::to_json_with_sources(loaded);
                    shown.repository_prompts = prompts;
                    writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
                }
            }
            Ok(Verdict::Done)
        }
        ConfigCommand::Schema => {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&bugloop_app::types::config_schema())?
            )?;
            Ok(Verdict::Done)
        }
        ConfigCommand::Check { file } => {
            let check = bugloop_app::check_configuration(&here.cwd, &here.choice, file.as_deref())?;
            warn(&check.warnings)?;
            let errors = check.errors;
            if errors.is_empty() {
                match check.warnings.len() {
                    0 => writeln!(out, "The configuration reads: no error.")?,
                    1 => writeln!(out, "The configuration reads: no error, 1 warning above.")?,
                    n => writeln!(
                        out,
                        "The configuration reads: no error, {n} warnings above."
                    )?,
                }
                return Ok(Verdict::Done);
            }
            for error in &errors {
                writeln!(out, "error: {error}")?;
            }
            Ok(problems(errors.len(), "configuration"))
        }
    }
}

/// `bugloop runs`: the agent runs recorded in this directory, or one run's transcript.
fn runs_command(cwd: &Path, command: &RunsCommand, out: &mut impl Write) -> Result<Verdict> {
    match command {
        RunsCommand::List { format } => {
            let dir = runs::runs_dir_of(cwd);
            show::runs(out, &dir, &runs::list(&dir), *format)?;
            Ok(Verdict::Done)
        }
        RunsCommand::Show { id, format } => {
            let events = runs::show(&runs::runs_dir_of(cwd), id)?;
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&events)?)?,
                Format::Text => show::transcript(out, &events)?,
            }
            Ok(Verdict::Done)
        }
    }
}

/// `bugloop inspect`: how bugloop reads a diff or a comment, with the problems it found in it
/// (any problem is the command's verdict, so a script can check an input).
fn inspect_command(here: &Here, command: &InspectCommand, out: &mut impl Write) -> Result<Verdict> {
    match command {
        InspectCommand::Diff { input, format } => {
            let diff = inspect::diff(&read_input(&here.cwd, input)?);
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&diff)?)?,
                Format::Text => show::diff(out, &diff)?,
            }
            Ok(problems(diff.problems.len(), "diff"))
        }
        InspectCommand::Comment { input, format } => {
            let bytes = read_input(&here.cwd, input)?;
            let Ok(body) = String::from_utf8(bytes) else {
                bail!("{} is not UTF-8 text", input.display());
            };
            let config = configuration(here)?.loaded.config;
            let reading = inspect::comment(&body, &config)?;
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&reading)?)?,
                Format::Text => show::comment(out, &reading)?,
            }
            Ok(problems(reading.rmcoc.problems.len(), "comment"))
        }
    }
}

fn problems(count: usize, what: &str) -> Verdict {
    if count == 0 {
        Verdict::Done
    } else {
        Verdict::Problems {
            what: format!("{count} problem(s) reading the {what}"),
        }
    }
}

fn read_input(cwd: &Path, input: &Path) -> Result<Vec<u8>> {
    if input == Path::new("-") {
        let mut bytes = Vec::new();
        io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        return Ok(bytes);
    }
    let path = cwd.join(input);
    std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
}
