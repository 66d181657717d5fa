//! The `bugloop` command. It parses arguments, loads configuration and prints; the work is done
//! by the library crates.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

mod act;
mod bench;
mod bench_review;
mod configuration;
mod models;
mod review;

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
    #[arg(long, global = true, env = "BUGLOOP_CONFIG", value_name = "FILE")]
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
    /// Write a comment as on a pull request; bugloop decides whether to fix, do, answer or weigh
    /// it as a dispute (exit 0 done; 1 a fix or change was not committed; 4 left on a branch;
    /// 3 the comment was stored but acting on it failed; 2 an error, nothing stored).
    Comment(act::CommentArgs),
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

#[derive(Debug, Subcommand)]
enum BenchCommand {
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
    /// The input tokens a review of a reference change sends to the model (run in bugloop's
    /// checkout).
    Tokens {
        #[arg(long, default_value = "examples/review-demo")]
        example: PathBuf,
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
    let cli = Cli::parse();
    let mut stdout = io::stdout().lock();
    match run(cli, &mut stdout) {
        Ok(code) => code,
        Err(error) => {
            let _ = stdout.flush();
            let mut stderr = io::stderr().lock();
            let _ = writeln!(stderr, "error: {error}");
            for cause in error.chain().skip(1) {
                let _ = writeln!(stderr, "  caused by: {cause}");
            }
            if error.downcast_ref::<act::StoredNotActedOn>().is_some() {
                ExitCode::from(3)
            } else {
                ExitCode::from(2)
            }
        }
    }
}

fn run(cli: Cli, out: &mut impl Write) -> Result<ExitCode> {
    let cwd = match &cli.directory {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let choice = configuration::ConfigChoice {
        file: cli.config.clone(),
        trust_branch: cli.trust_branch_config,
    };
    match cli.command {
        Command::Review(args) => {
            return review::review_command(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Findings(args) => {
            return review::findings_command(&cwd, &choice, &args, out);
        }
        Command::Store(command) => return review::store_command(&cwd, &command, out),
        Command::Fix(args) => {
            return act::fix(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Do(args) => {
            return act::do_request(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Ask(args) => {
            return act::ask(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Comment(args) => {
            return act::comment(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Converge(args) => {
            return act::converge(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Reply(args) => {
            return act::reply(&cwd, &choice, &args, &runs_dir(&cwd), out);
        }
        Command::Config(ConfigCommand::Show { format }) => {
            let (_, loaded) = configuration::load(&cwd, &choice)?;
            match format {
                DataFormat::Yaml => {
                    write!(out, "{}", bugloop_config::to_yaml_with_sources(&loaded))?;
                }
                DataFormat::Json => {
                    let shown = bugloop_config::to_json_with_sources(&loaded);
                    writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
                }
            }
        }
        Command::Config(ConfigCommand::Schema) => {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&bugloop_config::schema())?
            )?;
        }
        Command::Rubric { format } => print_rubric(out, format)?,
        Command::Runs(RunsCommand::List { format }) => {
            let runs = bugloop_agent::transcript::list(&runs_dir(&cwd));
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&runs)?)?,
                Format::Text if runs.is_empty() => {
                    writeln!(out, "no runs recorded in {}", runs_dir(&cwd).display())?;
                }
                Format::Text => {
                    for run in runs {
                        writeln!(
                            out,
                            "{}  {}  {}  {} turns, {} tool calls, {} in / {} out tokens  {}",
                            run.run,
                            run.task,
                            run.model,
                            run.turns,
                            run.tool_calls,
                            run.input_tokens,
                            run.output_tokens,
                            run.outcome
                        )?;
                    }
                }
            }
        }
        Command::Runs(RunsCommand::Show { id, format }) => {
            let dir = runs_dir(&cwd);
            let matches: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|entries| {
                    entries
                        .filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                        .filter(|p| {
                            p.file_stem()
                                .is_some_and(|s| s.to_string_lossy().starts_with(&id))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let path = match matches.as_slice() {
                [one] => one.clone(),
                [] => bail!(
                    "no run {id:?} in {}; `bugloop runs list` shows them",
                    dir.display()
                ),
                many => bail!("{} runs start with {id:?}; give more of the id", many.len()),
            };
            let events = bugloop_agent::transcript::read(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&events)?)?,
                Format::Text => print_transcript(out, &events)?,
            }
        }
        Command::Doctor => {
            let (_, loaded) = configuration::load(&cwd, &choice)?;
            return doctor(out, &loaded.config);
        }
        Command::Bench(BenchCommand::Model {
            model,
            runs,
            max_tokens,
            format,
        }) => {
            let (_, loaded) = configuration::load(&cwd, &choice)?;
            bench::model(out, &loaded.config, &model, runs, max_tokens, format)?;
        }
        Command::Bench(BenchCommand::Review {
            files,
            lines,
            format,
        }) => {
            let (_, loaded) = configuration::load(&cwd, &choice)?;
            bench_review::review_speed(out, &loaded.config, files, lines, format)?;
        }
        Command::Bench(BenchCommand::Tokens { example, format }) => {
            bench_review::tokens(out, &example, format)?;
        }
        Command::Bench(BenchCommand::Prompt) => {
            let (system, prompt) = bench::prompt_texts();
            writeln!(
                out,
                "{}",
                serde_json::json!({"system": system, "user": prompt})
            )?;
        }
        Command::Inspect(InspectCommand::Diff { input, format }) => {
            let bytes = read_input(&cwd, &input)?;
            let diff = bugloop_diff::parse(&bytes);
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&diff)?)?,
                Format::Text => print_diff(out, &diff)?,
            }
            if !diff.problems.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Inspect(InspectCommand::Comment { input, format }) => {
            let bytes = read_input(&cwd, &input)?;
            let Ok(body) = String::from_utf8(bytes) else {
                bail!("{} is not UTF-8 text", input.display());
            };
            let (_, loaded) = configuration::load(&cwd, &choice)?;
            let syntax = bugloop_config::marker_syntax(&loaded.config)?;
            // What bugloop reads as the comment's state (own marker, state block, reply tag),
            // and every other marker outside code (quoted text; never read as state).
            let own = syntax.own(&body);
            let reply = syntax.read_reply_tag(&body);
            let markers = syntax.parse_all(&body);
            let parsed = bugloop_domain::rmcoc::parse_comment(&body);
            match format {
                Format::Json => writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&serde_json::json!({
                        "own_marker": own,
                        "reply_tag": reply,
                        "markers": markers,
                        "rmcoc": parsed,
                    }))?
                )?,
                Format::Text => {
                    match &own {
                        Some(marker) => writeln!(
                            out,
                            "own marker: {} finding_id={} resolved={}",
                            marker.prefix, marker.finding_id, marker.resolved
                        )?,
                        None => writeln!(out, "own marker: none")?,
                    }
                    match reply {
                        Some(kind) => writeln!(out, "reply tag: {kind:?}")?,
                        None => writeln!(out, "reply tag: none")?,
                    }
                    writeln!(out, "markers outside code: {}", markers.len())?;
                    for marker in &markers {
                        writeln!(
                            out,
                            "  {} finding_id={} resolved={}",
                            marker.prefix, marker.finding_id, marker.resolved
                        )?;
                    }
                    match &parsed.block {
                        Some(block) => {
                            let status = block
                                .status
                                .map(|s| format!(" status={s}"))
                                .unwrap_or_default();
                            writeln!(
                                out,
                                "state block: score={}{status}: {}",
                                block.score, block.finding
                            )?;
                        }
                        None => writeln!(out, "state block: none")?,
                    }
                    for problem in &parsed.problems {
                        writeln!(out, "problem at line {}: {}", problem.line, problem.message)?;
                    }
                }
            }
            if !parsed.problems.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where agent transcripts are kept: `<git common dir>/bugloop/runs` (shared by worktrees).
fn runs_dir(cwd: &Path) -> PathBuf {
    let common = std::process::Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    common
        .unwrap_or_else(|| repository_root(cwd).join(".git"))
        .join("bugloop/runs")
}

fn print_transcript(
    out: &mut impl Write,
    events: &[bugloop_agent::transcript::Event],
) -> Result<()> {
    use bugloop_agent::transcript::Event;
    for event in events {
        match event {
            Event::Start {
                run,
                task,
                model,
                tools,
                at,
                system,
                messages,
            } => {
                writeln!(out, "run {run}: task {task} with {model} at {at}")?;
                writeln!(
                    out,
                    "tools: {}",
                    if tools.is_empty() {
                        "none".to_owned()
                    } else {
                        tools.join(", ")
                    }
                )?;
                writeln!(out, "--- system\n{system}")?;
                for message in messages {
                    let role = message.get("role").and_then(|r| r.as_str()).unwrap_or("?");
                    let content = message
                        .get("content")
                        .and_then(|c| c.as_str())
                        .unwrap_or("");
                    writeln!(out, "--- {role}\n{content}")?;
                }
            }
            Event::Response {
                turn,
                content,
                tool_calls,
                finish,
                input_tokens,
                output_tokens,
                ..
            } => {
                writeln!(
                    out,
                    "=== turn {turn}: model ({input_tokens} in, {output_tokens} out, {finish})"
                )?;
                if !content.is_empty() {
                    writeln!(out, "{content}")?;
                }
                for call in tool_calls {
                    let name = call.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                    let arguments = call.get("arguments").and_then(|a| a.as_str()).unwrap_or("");
                    writeln!(out, "-> {name} {arguments}")?;
                }
            }
            Event::Tool {
                name, ok, result, ..
            } => {
                let shown: String = result.chars().take(2_000).collect();
                writeln!(
                    out,
                    "<- {name} {}:\n{shown}",
                    if *ok { "ok" } else { "failed" }
                )?;
            }
            Event::Note { text } => writeln!(out, "--- note: {text}")?,
            Event::End {
                outcome,
                detail,
                at,
                ..
            } => {
                writeln!(out, "=== end at {at}: {outcome}")?;
                if !detail.is_empty() {
                    writeln!(out, "{detail}")?;
                }
            }
        }
    }
    Ok(())
}

/// The nearest enclosing directory with a `.git`, else `start` itself.
pub(crate) fn repository_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(start)
        .to_path_buf()
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

fn print_rubric(out: &mut impl Write, format: Format) -> Result<()> {
    use bugloop_domain::Score;
    use bugloop_domain::score::RUBRIC;
    if let Format::Json = format {
        let levels: Vec<serde_json::Value> = RUBRIC
            .iter()
            .map(|level| {
                let score = Score::saturating(i64::from(level.score));
                serde_json::json!({
                    "score": level.score,
                    "name": level.name,
                    "band": level.band,
                    "description": level.description,
                    "example": level.example,
                    "severity": score.severity(),
                    "priority": score.priority(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&levels)?)?;
        return Ok(());
    }
    for level in &RUBRIC {
        let score = Score::saturating(i64::from(level.score));
        writeln!(
            out,
            "{:>2}  {:<28} {:<6} {}  {}",
            level.score,
            level.name,
            score.severity(),
            score.priority(),
            level.description
        )?;
    }
    Ok(())
}

fn print_diff(out: &mut impl Write, diff: &bugloop_diff::Diff) -> Result<()> {
    for file in &diff.files {
        let (added, removed) = file.stats();
        let name = match (&file.old_path, &file.new_path) {
            (Some(old), Some(new)) if old != new => format!("{old} -> {new}"),
            _ => file.path().to_owned(),
        };
        let mut notes = Vec::new();
        if file.binary {
            notes.push("binary".to_owned());
        }
        if let (Some(old), Some(new)) = (&file.old_mode, &file.new_mode)
            && old != new
        {
            notes.push(format!("mode {old} -> {new}"));
        }
        if file.lossy {
            notes.push("not UTF-8".to_owned());
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        writeln!(
            out,
            "{:?} {name}: +{added} -{removed}, {} hunks{notes}",
            file.change,
            file.hunks.len()
        )?;
        if let Some(anchor) = file.first_diff_line() {
            writeln!(out, "  first diff line: {:?} {}", anchor.side, anchor.line)?;
        }
    }
    let (added, removed) = diff.stats();
    writeln!(out, "{} files, +{added} -{removed}", diff.files.len())?;
    for problem in &diff.problems {
        writeln!(out, "problem at line {}: {}", problem.line, problem.message)?;
    }
    Ok(())
}

/// Reports what bugloop can do here. Exit 1 when something the configuration relies on is missing.
fn doctor(out: &mut impl Write, config: &bugloop_config::Config) -> Result<ExitCode> {
    let mut ok = true;
    let sandbox = bugloop_sandbox::probe();
    if sandbox.can_confine() {
        let bwrap = sandbox
            .bwrap
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        writeln!(
            out,
            "ok      sandbox: bubblewrap ({bwrap}): no network, writes only to the workspace"
        )?;
        for protection in bugloop_sandbox::protections() {
            let state = if protection.active { "ok" } else { "off" };
            writeln!(
                out,
                "{state:<7} sandbox {}: {}",
                protection.name, protection.detail
            )?;
        }
    } else {
        let problem = sandbox.problem.clone().unwrap_or_default();
        match config.sandbox.when_unconfined {
            bugloop_config::Unconfined::Refuse => {
                ok = false;
                writeln!(
                    out,
                    "FAIL    sandbox: {problem}; commands will be refused (sandbox.when_unconfined: refuse)"
                )?;
            }
            bugloop_config::Unconfined::Warn => {
                writeln!(
                    out,
                    "WARNING sandbox: {problem}; commands will run UNCONFINED (sandbox.when_unconfined: warn)"
                )?;
            }
        }
    }
    match std::process::Command::new("git").arg("--version").output() {
        Ok(version) if version.status.success() => {
            writeln!(
                out,
                "ok      git: {}",
                String::from_utf8_lossy(&version.stdout).trim()
            )?;
        }
        _ => {
            ok = false;
            writeln!(out, "FAIL    git: not found")?;
        }
    }
    let model = &config.model.default;
    writeln!(out, "info    model: {model}")?;
    if let Some(name) = model.strip_prefix("local:") {
        let settings = models::llm_settings(config);
        match local_model_file(name, settings.model_dir.as_deref()) {
            Ok(path) => writeln!(out, "ok      embedded model: {path}")?,
            Err(problem) => {
                ok = false;
                writeln!(out, "FAIL    embedded model: {problem}")?;
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(feature = "local")]
fn local_model_file(name: &str, dir: Option<&Path>) -> Result<String, String> {
    bugloop_llm::local::resolve_model(name, dir)
        .map(|path| path.display().to_string())
        .map_err(|error| error.to_string())
}

#[cfg(not(feature = "local"))]
fn local_model_file(_: &str, _: Option<&Path>) -> Result<String, String> {
    Err("this build has no embedded model (built without the `local` feature)".to_owned())
}
