//! `bugloop serve` (the GitHub App server: webhook endpoint, queue, workers) and `bugloop jobs`
//! (the queue's jobs: list, show, retry). Settings come from a file and the environment
//! (`bugloop_server::server_config`); the data directory is `$XDG_DATA_HOME/bugloop/server`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use bugloop_app::Verdict;
use bugloop_server::server_config::{ServerSources, serve_options, store_location};

use crate::{Format, runtime};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Where to listen: webhooks at `POST /webhook`, `GET /healthz`, `GET /readyz`, `GET
    /// /metrics`, the status page at `/` [default: the settings file's `listen`, else
    /// 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<SocketAddr>,
    /// The server's settings file (YAML; the environment wins over it) [env:
    /// BUGLOOP_SERVER_CONFIG].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct JobsArgs {
    /// The server's settings file, for its `store_url` [env: BUGLOOP_SERVER_CONFIG].
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: JobsCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum JobsCommand {
    /// Every job, newest first.
    List {
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// One job with its payload and last error, as JSON.
    Show { id: String },
    /// Queue a dead, done or superseded job again.
    Retry { id: String },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn data_dir() -> PathBuf {
    env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| PathBuf::from(home).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("bugloop/server")
}

/// Runs `with` on the settings' sources: the file named by the flag or `BUGLOOP_SERVER_CONFIG`,
/// and the process environment.
fn with_sources<T>(
    config: Option<&PathBuf>,
    with: impl FnOnce(&ServerSources<'_>) -> Result<T, bugloop_server::ServerError>,
) -> Result<T> {
    let file = config
        .cloned()
        .or_else(|| env("BUGLOOP_SERVER_CONFIG").map(PathBuf::from));
    let sources = ServerSources {
        file: file.as_deref(),
        env: &env,
        default_data_dir: data_dir(),
    };
    Ok(with(&sources)?)
}

pub fn serve(args: &ServeArgs, out: &mut impl Write) -> Result<Verdict> {
    let options = with_sources(args.config.as_ref(), |sources| {
        serve_options(sources, args.listen)
    })?;
    // A server without the App's id and key only queues: said at start, so a Sentry alert or
    // a report that is accepted and never handled is no surprise.
    if options.workers.is_none() {
        let mut intake = vec!["GitHub's deliveries"];
        if options.report_token.is_some() {
            intake.push("POST /report");
        }
        if options.sentry.is_some() {
            intake.push("Sentry's alerts (POST /sentry)");
        }
        crate::warn(&[format!(
            "no App id and key (BUGLOOP_APP_ID, BUGLOOP_APP_PRIVATE_KEY): {} are accepted and \
             queued, and nothing runs them until a server with the App's credentials does",
            intake.join(", ")
        )])?;
    }
    let runtime = runtime()?;
    runtime.block_on(bugloop_server::serve::run(options, |address| {
        // Said once it listens, so a supervisor (or a test) knows where.
        let _ = writeln!(
            std::io::stderr(),
            "bugloop serve: listening on http://{address}"
        );
    }))?;
    writeln!(out, "bugloop serve: stopped")?;
    Ok(Verdict::Done)
}

pub fn jobs(args: &JobsArgs, out: &mut impl Write) -> Result<Verdict> {
    let runtime = runtime()?;
    let store = with_sources(args.config.as_ref(), store_location)?;
    let queue = runtime.block_on(store.open())?;
    match &args.command {
        JobsCommand::List { format } => {
            let jobs = runtime
                .block_on(queue.jobs())
                .context("cannot list the jobs")?;
            match format {
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&jobs)?)?,
                Format::Text if jobs.is_empty() => writeln!(out, "No jobs.")?,
                Format::Text => {
                    for job in &jobs {
                        writeln!(
                            out,
                            "{}  {:<12} {:<10} {}  attempts {}{}",
                            job.id,
                            job.kind.name(),
                            job.state.as_str(),
                            job.conversation,
                            job.attempts,
                            job.error
                                .as_deref()
                                .map(|e| format!("  error: {e}"))
                                .unwrap_or_default()
                        )?;
                    }
                }
            }
        }
        JobsCommand::Show { id } => {
            let job = runtime
                .block_on(queue.job(id))?
                .with_context(|| format!("no job {id:?}"))?;
            writeln!(out, "{}", serde_json::to_string_pretty(&job)?)?;
        }
        JobsCommand::Retry { id } => {
            let job = runtime.block_on(queue.retry(id, bugloop_server::serve::now_ms()))?;
            writeln!(out, "job {} queued again", job.id)?;
        }
    }
    Ok(Verdict::Done)
}
