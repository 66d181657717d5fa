//! `bugloop serve` (the GitHub App server's webhook endpoint and queue) and `bugloop jobs`
//! (the queue's jobs: list, show, retry). Settings come from the environment:
//! `BUGLOOP_WEBHOOK_SECRET`, `BUGLOOP_STORE_URL` (`sqlite:PATH`, by default `queue.db` under
//! `$XDG_DATA_HOME/bugloop/server`), `BUGLOOP_BOT_LOGIN` (the App's `slug[bot]`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use bugloop_app::Verdict;
use bugloop_app::serve::{ServeOptions, StoreLocation};

use crate::{Format, runtime};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Where to listen: webhooks at `POST /webhook`, `GET /healthz`, `GET /readyz`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
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

fn store() -> Result<StoreLocation> {
    Ok(StoreLocation::parse(
        env("BUGLOOP_STORE_URL").as_deref(),
        &data_dir(),
    )?)
}

pub fn serve(args: &ServeArgs, out: &mut impl Write) -> Result<Verdict> {
    let options = ServeOptions {
        listen: args.listen,
        secret: env("BUGLOOP_WEBHOOK_SECRET")
            .unwrap_or_default()
            .into_bytes(),
        store: store()?,
        bot_logins: env("BUGLOOP_BOT_LOGIN").into_iter().collect(),
    };
    let runtime = runtime()?;
    runtime.block_on(bugloop_app::serve::run(options, |address| {
        // Said once it listens, so a supervisor (or a test) knows where.
        let _ = writeln!(
            std::io::stderr(),
            "bugloop serve: listening on http://{address}"
        );
    }))?;
    writeln!(out, "bugloop serve: stopped")?;
    Ok(Verdict::Done)
}

pub fn jobs(command: &JobsCommand, out: &mut impl Write) -> Result<Verdict> {
    let runtime = runtime()?;
    let queue = runtime.block_on(store()?.open())?;
    match command {
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
                            "{}  {:<8} {:<10} {}  attempts {}{}",
                            job.id,
                            job.kind.as_str(),
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
            let job = runtime.block_on(queue.retry(id, now_ms()))?;
            writeln!(out, "job {} queued again", job.id)?;
        }
    }
    Ok(Verdict::Done)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
