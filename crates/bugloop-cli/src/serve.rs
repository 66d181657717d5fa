//! `bugloop serve` (the GitHub App server: webhook endpoint, queue, workers) and `bugloop jobs`
//! (the queue's jobs: list, show, retry). Settings come from the environment:
//! `BUGLOOP_WEBHOOK_SECRET`, `BUGLOOP_STORE_URL` (`sqlite:PATH`, by default `queue.db` under
//! `$XDG_DATA_HOME/bugloop/server`), `BUGLOOP_BOT_LOGIN` (the App's `slug[bot]`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use bugloop_app::Verdict;
use bugloop_app::github_types::{AppCredentials, Endpoint, Policy, StateKey};
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
        workers: workers()?,
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

/// The workers, when the App's id and key are given: `BUGLOOP_APP_ID`, `BUGLOOP_APP_PRIVATE_KEY`
/// (a path to the PEM), `BUGLOOP_WORKERS` (default 2), `GITHUB_API_URL`/`GITHUB_GRAPHQL_URL`,
/// `BUGLOOP_GIT_BASE` (default `https://github.com`), `BUGLOOP_STATE_KEY`.
fn workers() -> Result<Option<(bugloop_app::worker::WorkerSettings, usize)>> {
    let (Some(id), Some(key)) = (env("BUGLOOP_APP_ID"), env("BUGLOOP_APP_PRIVATE_KEY")) else {
        return Ok(None);
    };
    let id: u64 = id
        .parse()
        .with_context(|| format!("BUGLOOP_APP_ID is {id:?}, not a number"))?;
    let pem = std::fs::read_to_string(&key)
        .with_context(|| format!("BUGLOOP_APP_PRIVATE_KEY: cannot read {key}"))?;
    let credentials = AppCredentials::from_pem(id, &pem)
        .with_context(|| format!("BUGLOOP_APP_PRIVATE_KEY: {key}"))?;
    let count = match env("BUGLOOP_WORKERS") {
        Some(n) => n
            .parse()
            .with_context(|| format!("BUGLOOP_WORKERS is {n:?}, not a number"))?,
        None => 2,
    };
    let state_key = env("BUGLOOP_STATE_KEY")
        .map(|k| StateKey::new(k.into_bytes()))
        .transpose()
        .context("BUGLOOP_STATE_KEY")?;
    let settings = bugloop_app::worker::WorkerSettings {
        id: format!(
            "{}:{}",
            env("HOSTNAME").unwrap_or_else(|| "bugloop".to_owned()),
            std::process::id()
        ),
        lease: std::time::Duration::from_secs(600),
        app: std::sync::Arc::new(credentials),
        endpoint: Endpoint::from_values(
            env("GITHUB_API_URL").as_deref(),
            env("GITHUB_GRAPHQL_URL").as_deref(),
        ),
        git_base: env("BUGLOOP_GIT_BASE").unwrap_or_else(|| "https://github.com".to_owned()),
        workspaces: data_dir().join("clones"),
        config: bugloop_app::ConfigChoice::default(),
        model: None,
        state_key,
        policy: Policy::default(),
    };
    Ok(Some((settings, count)))
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
