//! `bench tokens`: what reviews of a change send to the model, counted with a real tokenizer
//! through a local OpenAI-compatible server ([`super::recorder`]): the first review of the
//! change, then a re-review after a one-line push on its branch. Each as raw input, the part an
//! OpenAI-style prefix cache serves, and the billed equivalent (cached input at 10%).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use bugloop_diff::LineKind;
use bugloop_git::{Git, Selection};
use bugloop_loops::Silent;
use bugloop_report::review::{ReviewReport, ReviewedScope};
use serde::Serialize;

use super::recorder::{Recorder, RequestTokens};
use super::setup_error;
use bugloop_app::{App, AppError, AppOptions, ConfigChoice, ReviewJob};

/// Cached input is billed at this fraction of the input price (OpenAI and Anthropic: 10%).
const CACHED_PRICE: f64 = 0.1;

/// The reviews of one change.
#[derive(Debug, Clone, Serialize)]
pub struct TokensBench {
    pub change: String,
    /// How the benchmark's reviewer answers: `all passes asked at once in one reply` or `one
    /// pass per reply`.
    pub reviewer: &'static str,
    pub files: usize,
    pub additions: usize,
    pub deletions: usize,
    pub tokenizer: &'static str,
    pub scenarios: Vec<ScenarioTokens>,
}

/// One review's requests.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioTokens {
    pub name: String,
    /// What the review showed the model: the whole change, or what changed since a head.
    pub scope: String,
    pub requests: Vec<RequestTokens>,
    pub input_tokens: u64,
    pub tool_tokens: u64,
    pub cached_tokens: u64,
    /// Uncached input plus cached input at 10%.
    pub billed_equivalent: u64,
    pub files_reviewed: usize,
    pub unreviewed: usize,
    pub findings: usize,
    pub errors: Vec<String>,
}

/// Where the change comes from: an example under `examples/` (made into a repository with
/// `scripts/example-repo`, run from bugloop's checkout) or a repository with the change's branch
/// checked out (copied; the original is not touched).
#[derive(Debug, Clone)]
pub enum TokensSource {
    Example(PathBuf),
    Repository(PathBuf),
}

impl TokensSource {
    /// The example's or the repository's path, as given.
    pub fn path(&self) -> &Path {
        match self {
            TokensSource::Example(path) | TokensSource::Repository(path) => path,
        }
    }
}

/// The reviews of the change from `source`; the reviewer runs one pass per reply with
/// `one_pass_per_turn`, else every pass it was asked for in one.
pub async fn tokens(
    source: &TokensSource,
    one_pass_per_turn: bool,
) -> Result<TokensBench, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let recorder = Recorder::start(one_pass_per_turn).await?;
    let (app, repo) = open_change(source, dir.path(), &recorder.url, Arc::new(Silent)).await?;
    let git = Git::open(&repo)?;
    let change = git.select(&Selection::Branch)?;
    let diff = bugloop_diff::parse(&change.diff);
    let (additions, deletions) = diff.stats();
    let mut scenarios = Vec::new();
    let first = review(&app).await?;
    scenarios.push(scenario("first review", &first, recorder.take()));
    push_one_line(&git, &diff)?;
    let second = review(&app).await?;
    scenarios.push(scenario(
        "re-review after a one-line push",
        &second,
        recorder.take(),
    ));
    Ok(TokensBench {
        change: match source {
            TokensSource::Example(path) | TokensSource::Repository(path) => {
                format!("{} ({})", path.display(), change.description)
            }
        },
        reviewer: if one_pass_per_turn {
            "one pass per reply"
        } else {
            "every pass asked for, in one reply"
        },
        files: diff.files.len(),
        additions,
        deletions,
        tokenizer: "o200k_base",
        scenarios,
    })
}

/// The change from `source` made into (or copied to) a repository under `dir`, and bugloop
/// opened on it with the OpenAI-compatible server at `url` as its model.
pub(crate) async fn open_change(
    source: &TokensSource,
    dir: &Path,
    url: &str,
    progress: Arc<dyn bugloop_app::types::Progress>,
) -> Result<(App, PathBuf), AppError> {
    let repo = dir.join("repo");
    match source {
        TokensSource::Example(example) => run_script("scripts/example-repo", example, &repo)?,
        TokensSource::Repository(original) => copy_repository(original, &repo)?,
    }
    let config = dir.join("bench.yml");
    std::fs::write(
        &config,
        format!(
            "model:\n  default: bench:gpt-4o\n  providers:\n    bench:\n      base_url: {url}\n"
        ),
    )
    .map_err(setup_error)?;
    let app = App::open(AppOptions {
        directory: repo.clone(),
        config: ConfigChoice {
            file: Some(config),
            ..ConfigChoice::default()
        },
        progress,
        forge: bugloop_app::ForgeChoice::Local,
    })
    .await?;
    Ok((app, repo))
}

pub(crate) async fn review(app: &App) -> Result<ReviewReport, AppError> {
    let outcome = app.review(ReviewJob::default()).await?;
    outcome
        .report
        .ok_or_else(|| setup_error("the change has nothing to review"))
}

fn scenario(name: &str, report: &ReviewReport, requests: Vec<RequestTokens>) -> ScenarioTokens {
    let input: u64 = requests.iter().map(|r| r.input).sum();
    let cached: u64 = requests.iter().map(|r| r.cached).sum();
    ScenarioTokens {
        name: name.to_owned(),
        scope: report.scope.describe(),
        input_tokens: input,
        tool_tokens: requests.iter().map(|r| r.tools).sum(),
        cached_tokens: cached,
        billed_equivalent: (input - cached) + (cached as f64 * CACHED_PRICE).round() as u64,
        requests,
        files_reviewed: files_reviewed(report),
        unreviewed: report.unreviewed.len(),
        findings: report.tracked.len(),
        errors: report.errors.clone(),
    }
}

/// The files a review showed the model: those of the increment, or the change's but the ones
/// not reviewed or ignored.
pub(crate) fn files_reviewed(report: &ReviewReport) -> usize {
    match &report.scope {
        ReviewedScope::Incremental { files, .. } => files.len(),
        ReviewedScope::Full { .. } => report
            .change
            .files
            .saturating_sub(report.unreviewed.len() + report.ignored.len()),
    }
}

/// Commits a one-line edit on the change's branch: the first added line of the first text file
/// gets a trailing comment.
fn push_one_line(git: &Git, diff: &bugloop_diff::Diff) -> Result<(), AppError> {
    let (path, line) = diff
        .files
        .iter()
        .filter(|file| !file.binary)
        .find_map(|file| {
            let line = file
                .hunks
                .iter()
                .flat_map(|hunk| &hunk.lines)
                .find(|line| line.kind == LineKind::Added)?
                .new_line?;
            Some((file.new_path.clone()?, line))
        })
        .ok_or_else(|| setup_error("the change adds no line to edit"))?;
    let full = git.root().join(&path);
    let text = std::fs::read_to_string(&full).map_err(setup_error)?;
    let comment = match Path::new(&path).extension().and_then(|e| e.to_str()) {
        Some("py" | "sh" | "rb" | "yml" | "yaml" | "toml" | "pl") => " # checked",
        Some("md" | "rst" | "txt") => " (checked)",
        _ => " // checked",
    };
    let edited: Vec<String> = text
        .split('\n')
        .enumerate()
        .map(|(index, text)| {
            if index + 1 == line as usize {
                format!("{text}{comment}")
            } else {
                text.to_owned()
            }
        })
        .collect();
    std::fs::write(&full, edited.join("\n")).map_err(setup_error)?;
    git.run(&[
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@bugloop.invalid",
        "commit",
        "-qam",
        "a one-line change",
    ])?;
    Ok(())
}

/// Makes the repository with one of bugloop's scripts (run from bugloop's checkout).
fn run_script(script: &str, input: &Path, repo: &Path) -> Result<(), AppError> {
    let made = Command::new(script)
        .arg(input)
        .arg(repo)
        .output()
        .map_err(|e| {
            setup_error(format!(
                "cannot run {script} (run from bugloop's checkout): {e}"
            ))
        })?;
    if !made.status.success() {
        return Err(setup_error(String::from_utf8_lossy(&made.stderr)));
    }
    Ok(())
}

/// Copies a repository without bugloop's state in it (its conversations and runs), so the
/// first review starts from nothing.
fn copy_repository(original: &Path, copy: &Path) -> Result<(), AppError> {
    let copied = Command::new("cp")
        .arg("-a")
        .arg(original)
        .arg(copy)
        .output()
        .map_err(|e| setup_error(format!("cp: {e}")))?;
    if !copied.status.success() {
        return Err(setup_error(String::from_utf8_lossy(&copied.stderr)));
    }
    let state = bugloop_git::common_dir(copy)?.join("bugloop");
    if state.exists() {
        std::fs::remove_dir_all(&state).map_err(setup_error)?;
    }
    Ok(())
}
