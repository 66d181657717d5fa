//! `bugloop action`: the GitHub Action. It reads what Actions sets (`GITHUB_EVENT_NAME`,
//! `GITHUB_EVENT_PATH`, `GITHUB_REPOSITORY`, `GITHUB_WORKSPACE`, `GITHUB_TOKEN`, `GITHUB_API_URL`,
//! `GITHUB_GRAPHQL_URL`), decides from the event whether there is a job, and hands it to the
//! application layer; then prints the report, appends it to the job summary
//! (`GITHUB_STEP_SUMMARY`) and writes a review's SARIF file for code scanning (its path also as
//! the step output `sarif`). A run that cannot or must not write (no token, a fork) ends
//! neutral: exit 0 with the reason.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use bugloop_app::github_types::{Endpoint, Policy, Repo, StateKey, Trigger};
use bugloop_app::types::style::Style;
use bugloop_app::types::{ReviewReport, json, markdown, sarif, text};
use bugloop_app::{
    ConfigChoice, EventOutcome, GitHubCredentials, GitHubEvent, GitHubEventJob, PullRequestRun,
    Verdict, Workspace,
};
use secrecy::{ExposeSecret, SecretString};

use crate::Here;
use crate::runtime;

/// The login an Action's `GITHUB_TOKEN` writes as.
const ACTIONS_BOT: &str = "github-actions[bot]";

#[derive(Debug, clap::Args)]
pub struct ActionArgs {
    /// Where a review's SARIF goes (default: `$RUNNER_TEMP/bugloop.sarif`).
    #[arg(long, value_name = "FILE")]
    pub sarif: Option<PathBuf>,
    /// Fail the step when an open finding scores at least this (1-10).
    #[arg(long, value_name = "SCORE", value_parser = clap::value_parser!(u8).range(1..=10))]
    pub fail_on: Option<u8>,
    /// The model (provider:model), instead of the configured one.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

/// What Actions gives a step, read once (`var` is the environment; tests give their own).
#[derive(Debug)]
struct ActionEnv {
    event_name: String,
    event_path: PathBuf,
    repository: Repo,
    workspace: PathBuf,
    /// `GITHUB_TOKEN`, printed as `[REDACTED]`.
    token: Option<SecretString>,
    endpoint: Endpoint,
    state_key: Option<StateKey>,
    bot_login: String,
    summary: Option<PathBuf>,
    output: Option<PathBuf>,
    runner_temp: Option<PathBuf>,
    write_spacing: Option<Duration>,
}

impl ActionEnv {
    fn read(var: impl Fn(&str) -> Option<String>, cwd: &Path) -> Result<ActionEnv> {
        let set = |name: &str| var(name).filter(|v| !v.is_empty());
        let required = |name: &str| {
            set(name).ok_or_else(|| {
                anyhow!("{name} is not set: `bugloop action` runs as a step of a GitHub Actions workflow")
            })
        };
        let repository = required("GITHUB_REPOSITORY")?;
        let state_key = set("BUGLOOP_STATE_KEY")
            .map(|key| StateKey::new(key.into_bytes()))
            .transpose()
            .context("BUGLOOP_STATE_KEY")?;
        let write_spacing = set("BUGLOOP_GITHUB_WRITE_SPACING_MS")
            .map(|ms| {
                ms.parse::<u64>().map(Duration::from_millis).map_err(|_| {
                    anyhow!(
                        "BUGLOOP_GITHUB_WRITE_SPACING_MS is {ms:?}, not a number of milliseconds"
                    )
                })
            })
            .transpose()?;
        Ok(ActionEnv {
            event_name: required("GITHUB_EVENT_NAME")?,
            event_path: PathBuf::from(required("GITHUB_EVENT_PATH")?),
            repository: Repo::parse(&repository)
                .ok_or_else(|| anyhow!("GITHUB_REPOSITORY is {repository:?}, not owner/name"))?,
            workspace: set("GITHUB_WORKSPACE").map_or_else(|| cwd.to_path_buf(), PathBuf::from),
            token: set("GITHUB_TOKEN").map(SecretString::from),
            endpoint: Endpoint::from_values(
                set("GITHUB_API_URL").as_deref(),
                set("GITHUB_GRAPHQL_URL").as_deref(),
            ),
            state_key,
            bot_login: set("BUGLOOP_BOT_LOGIN").unwrap_or_else(|| ACTIONS_BOT.to_owned()),
            summary: set("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: set("GITHUB_OUTPUT").map(PathBuf::from),
            runner_temp: set("RUNNER_TEMP").map(PathBuf::from),
            write_spacing,
        })
    }
}

pub fn action(here: &Here, args: &ActionArgs, out: &mut impl Write) -> Result<Verdict> {
    let env = ActionEnv::read(|name| std::env::var(name).ok(), &here.cwd)?;
    let payload = std::fs::read(&env.event_path)
        .with_context(|| format!("cannot read the event file {}", env.event_path.display()))?;
    let job = event_job(&env, &here.choice, args, payload);
    let runtime = runtime()?;
    let run = runtime.block_on(bugloop_app::run_github_event(job))?;
    let Some(trigger) = run.trigger else {
        let reason = run.outcome.skipped().unwrap_or("nothing to do").to_owned();
        return neutral(&env, out, &reason);
    };
    match run.outcome {
        EventOutcome::NotRun { reason } => neutral(&env, out, &reason),
        EventOutcome::Review {
            pull_request,
            outcome,
        } => review(&env, args, out, &pull_request, &trigger, *outcome),
        EventOutcome::Converge {
            pull_request,
            outcome,
        } => {
            let said = text::converge(&outcome.report);
            plain(&env, out, &pull_request, &trigger, &outcome.warnings, &said)?;
            Ok(outcome.verdict)
        }
        EventOutcome::Comment {
            pull_request,
            outcome,
        } => {
            let said = text::act(&outcome.report);
            plain(&env, out, &pull_request, &trigger, &outcome.warnings, &said)?;
            Ok(outcome.verdict)
        }
        EventOutcome::ErrorReport { outcome } => {
            crate::warn(&outcome.warnings)?;
            let report = &outcome.report;
            writeln!(
                out,
                "{} issue #{}: {} ({} reports)",
                if report.filed { "filed" } else { "counted on" },
                report.issue,
                report.title,
                report.count
            )?;
            Ok(outcome.verdict)
        }
        EventOutcome::Solve { outcome, .. } => {
            crate::warn(&outcome.warnings)?;
            let said = outcome.report.to_text();
            write!(out, "{said}")?;
            append(
                env.summary.as_deref(),
                &format!("### bugloop solve\n\n```text\n{said}```\n"),
            )?;
            Ok(outcome.verdict)
        }
    }
}

/// What the application layer needs of this step: the event as Actions delivered it, the
/// checkout, the token and where GitHub is.
fn event_job(
    env: &ActionEnv,
    choice: &ConfigChoice,
    args: &ActionArgs,
    payload: Vec<u8>,
) -> GitHubEventJob {
    let mut policy = Policy::default();
    if let Some(spacing) = env.write_spacing {
        policy.write_spacing = spacing;
    }
    GitHubEventJob {
        event: GitHubEvent::Delivery {
            name: env.event_name.clone(),
            payload,
        },
        repository: Some(env.repository.clone()),
        credentials: (env.token.as_ref())
            .map(|token| GitHubCredentials::Token(token.expose_secret().to_owned())),
        endpoint: env.endpoint.clone(),
        policy,
        rate_limits: None,
        state_key: env.state_key.clone(),
        bot_login: Some(env.bot_login.clone()),
        workspace: Workspace::Checkout(env.workspace.clone()),
        config: choice.clone(),
        progress: crate::progress::progress(),
        model: args.model.clone(),
        fail_on: args.fail_on,
        fence: None,
    }
}

/// A review's report: printed, in the job summary, and as a SARIF file for code scanning (its
/// path the step output `sarif`).
fn review(
    env: &ActionEnv,
    args: &ActionArgs,
    out: &mut impl Write,
    pull_request: &PullRequestRun,
    trigger: &Trigger,
    outcome: bugloop_app::Outcome<Option<ReviewReport>>,
) -> Result<Verdict> {
    crate::warn(&outcome.warnings)?;
    let Some(report) = &outcome.report else {
        let reason = match &outcome.verdict {
            Verdict::NothingToDo { reason } => reason.clone(),
            other => format!("{other:?}"),
        };
        return neutral(env, out, &reason);
    };
    write!(out, "{}", text::review(report, Style::new(false)))?;
    // Never in the workspace, whose files the pull request chooses.
    let sarif_path = match (&args.sarif, &env.runner_temp) {
        (Some(path), _) => path.clone(),
        (None, Some(temp)) => temp.join("bugloop.sarif"),
        (None, None) => tempfile::Builder::new()
            .prefix("bugloop-")
            .tempdir()
            .context("cannot make a directory for the SARIF file")?
            .keep()
            .join("bugloop.sarif"),
    };
    write_replacing(
        &sarif_path,
        json::to_json(&sarif::review(report))?.as_bytes(),
    )
    .with_context(|| format!("cannot write {}", sarif_path.display()))?;
    append(
        env.output.as_deref(),
        &format!("sarif={}\n", sarif_path.display()),
    )?;
    let mut summary = heading(pull_request, trigger);
    summary.push_str(&notes(&outcome.warnings));
    summary.push_str(&markdown::review(report));
    append(env.summary.as_deref(), &summary)?;
    Ok(outcome.verdict)
}

/// Prints a job's text report and puts it in the job summary.
fn plain(
    env: &ActionEnv,
    out: &mut impl Write,
    pull: &PullRequestRun,
    trigger: &Trigger,
    warnings: &[String],
    said: &str,
) -> Result<()> {
    crate::warn(warnings)?;
    write!(out, "{said}")?;
    let mut summary = heading(pull, trigger);
    summary.push_str(&notes(warnings));
    summary.push_str(&format!("```text\n{}\n```\n", said.trim_end()));
    append(env.summary.as_deref(), &summary)
}

/// Ends the step without a job: exit 0, the reason printed and in the summary.
fn neutral(env: &ActionEnv, out: &mut impl Write, reason: &str) -> Result<Verdict> {
    writeln!(out, "bugloop: {reason}")?;
    append(
        env.summary.as_deref(),
        &format!("### bugloop\n\n{reason}\n"),
    )?;
    Ok(Verdict::Skipped {
        reason: reason.to_owned(),
    })
}

fn heading(pull: &PullRequestRun, trigger: &Trigger) -> String {
    format!(
        "### bugloop {}: #{} at {}\n\n",
        trigger.kind(),
        pull.number,
        pull.head_sha.get(..7).unwrap_or(&pull.head_sha)
    )
}

fn notes(warnings: &[String]) -> String {
    warnings
        .iter()
        .map(|w| format!("> [!NOTE]\n> {w}\n\n"))
        .collect()
}

/// Appends to a file Actions reads after the step (summary, outputs); nothing outside Actions.
fn append(path: Option<&Path>, text: &str) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Writes `bytes` as a new file at `path`: whatever is there (a symlink a pull request planted)
/// is replaced by the rename, never followed.
fn write_replacing(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(parent)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<ActionEnv> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        ActionEnv::read(
            |name| {
                pairs
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            },
            Path::new("/work"),
        )
    }

    const BASE: &[(&str, &str)] = &[
        ("GITHUB_EVENT_NAME", "pull_request"),
        ("GITHUB_EVENT_PATH", "/tmp/event.json"),
        ("GITHUB_REPOSITORY", "acme/widgets"),
    ];

    #[test]
    fn actions_variables_are_read_with_github_com_defaults() {
        let read = env(BASE).unwrap();
        assert_eq!(read.repository.to_string(), "acme/widgets");
        assert_eq!(read.workspace, Path::new("/work"));
        assert_eq!(read.endpoint, Endpoint::default());
        assert_eq!(read.bot_login, ACTIONS_BOT);
        assert!(read.token.is_none() && read.state_key.is_none());
        // What Actions gives is printed in errors and logs: never the token.
        let with_token = env(&[BASE[0], BASE[1], BASE[2], ("GITHUB_TOKEN", "ghs_s3cret")]);
        let printed = format!("{:?}", with_token.unwrap());
        assert!(
            printed.contains("REDACTED") && !printed.contains("s3cret"),
            "{printed}"
        );
        let ghes = env(&[
            BASE[0],
            BASE[1],
            BASE[2],
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
            ("GITHUB_GRAPHQL_URL", "https://ghe.example.com/api/graphql"),
            ("GITHUB_WORKSPACE", "/runner/work/widgets"),
        ])
        .unwrap();
        assert_eq!(ghes.endpoint.api_url, "https://ghe.example.com/api/v3");
        assert_eq!(
            ghes.endpoint.graphql_url,
            "https://ghe.example.com/api/graphql"
        );
        assert_eq!(ghes.workspace, Path::new("/runner/work/widgets"));
    }

    #[test]
    fn missing_or_bad_variables_say_which() {
        let error = env(&BASE[..2]).unwrap_err().to_string();
        assert!(error.contains("GITHUB_REPOSITORY is not set"), "{error}");
        let error = env(&[BASE[0], BASE[1], ("GITHUB_REPOSITORY", "widgets")])
            .unwrap_err()
            .to_string();
        assert!(error.contains("not owner/name"), "{error}");
        let error = format!(
            "{:#}",
            env(&[BASE[0], BASE[1], BASE[2], ("BUGLOOP_STATE_KEY", "short")]).unwrap_err()
        );
        assert!(
            error.contains("BUGLOOP_STATE_KEY") && error.contains("32"),
            "{error}"
        );
    }
}
