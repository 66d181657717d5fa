//! `bench review`: everything a review does except the model's own time, on a synthetic change
//! (default 2,000 files, 100,000 added lines): change selection and diff, parsing, planning, the
//! agent sessions of a tool-calling model (answered instantly: four passes, a finding reported
//! with `report_finding`), the configured budgets (metered as a review job meters them, so a
//! change too large for them stops as a real review would), grounding, the filter pipeline,
//! publishing to the local store and the report.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bugloop_forge::local::LocalForge;
use bugloop_git::{Git, Selection};
use bugloop_llm::Provider;
use bugloop_llm::budget::{Meter, Metered};
use bugloop_loops::review::ReviewRequest;
use bugloop_loops::{LoopEnv, LoopSettings};
use bugloop_report::review::ReviewReport;
use serde::Serialize;

use super::models::PassModel;
use super::{peak_rss_mb, setup_error};
use bugloop_app::{AppError, Models};

/// A first review and a re-run of the same synthetic change.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewBench {
    pub files: usize,
    pub added_lines: usize,
    pub first_run_seconds: f64,
    pub rerun_seconds: f64,
    pub sessions: usize,
    pub model_calls: u32,
    pub input_tokens: u64,
    pub complete: bool,
    pub errors: Vec<String>,
    pub unreviewed_files: usize,
    pub findings_in_report: usize,
    pub overflow: usize,
    pub tracked: usize,
    pub peak_rss_mb: Option<f64>,
}

/// Reviews the branch of `repo` once with `provider`, publishing to its local store.
pub(crate) async fn review_once(
    repo: &Path,
    config: &bugloop_config::Config,
    provider: Arc<dyn Provider>,
    meter: Arc<Meter>,
    runs: &Path,
) -> Result<ReviewReport, AppError> {
    let git = Git::open(repo)?;
    let change = git.select(&Selection::Branch)?;
    let diff = bugloop_diff::parse(&change.diff);
    let checkout = bugloop_loops::checkout::checkout(&git, &change)?;
    let forge = LocalForge::open(git.clone(), "bugloop").await?;
    let settings = LoopSettings::resolve(config.clone()).map_err(AppError::Config)?;
    let env = LoopEnv {
        forge: &forge,
        git: &git,
        settings: &settings,
        provider: Arc::new(Metered::new(provider, meter.clone())),
        meter,
        runs_dir: runs.to_path_buf(),
        progress: Arc::new(bugloop_loops::Silent),
        work: bugloop_loops::build::WorkTarget::LocalBranch,
    };
    let request = ReviewRequest {
        change: change.key.clone(),
        description: change.description.clone(),
        base: change.base.clone(),
        head: change.head.name(),
        diff,
        workspace: checkout.path().to_path_buf(),
        git_mount: checkout.git_mount(),
        clean_room: false,
        focus: None,
        // The re-run measures a whole review again, not an incremental one.
        full: true,
        summary_footer: None,
    };
    Ok(bugloop_loops::review::review(&env, request).await?)
}

/// git in the benchmark's repository, as a fixed author.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<(), AppError> {
    bugloop_git::GitCommand::in_work_tree(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@bugloop.invalid",
        ])
        .args(args)
        .output()?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), AppError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| setup_error(format!("{}: {e}", parent.display())))?;
    }
    std::fs::write(path, text).map_err(|e| setup_error(format!("{}: {e}", path.display())))
}

/// `config` is the configuration a review would use here (its budgets above all).
pub async fn review(
    config: &bugloop_config::Config,
    files: usize,
    lines: usize,
) -> Result<ReviewBench, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"])?;
    let per_file = lines / files.max(1);
    for i in 0..files {
        let path = repo.join(format!("src/m{:02}/file{i:05}.rs", i % 50));
        write(
            &path,
            &format!("// module {i}\npub fn base_{i}() -> u32 {{ {i} }}\n"),
        )?;
    }
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-qm", "base"])?;
    git(repo, &["switch", "-qc", "change"])?;
    for i in 0..files {
        let path = repo.join(format!("src/m{:02}/file{i:05}.rs", i % 50));
        let mut text = format!("// module {i}\npub fn base_{i}() -> u32 {{ {i} }}\n");
        for l in 0..per_file {
            text.push_str(&format!(
                "pub fn added_{i}_{l}(x: u64) -> u64 {{ x.wrapping_mul({l}) + {i} }}\n"
            ));
        }
        write(&path, &text)?;
    }
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-qm", "change"])?;
    let runs = tempfile::tempdir().map_err(setup_error)?;
    let models = Models::new(config);
    let mut timings = Vec::new();
    let mut reports = Vec::new();
    for _ in 0..2 {
        let model: Arc<dyn Provider> = Arc::new(PassModel {
            reports_finding: true,
            ..PassModel::default()
        });
        let meter = Arc::new(models.meter(model.name()));
        let started = Instant::now();
        let report = review_once(repo, config, model, meter, runs.path()).await?;
        timings.push(started.elapsed().as_secs_f64());
        reports.push(report);
    }
    let (Some(first), Some(rerun)) = (reports.first(), reports.last()) else {
        return Err(setup_error("no run"));
    };
    Ok(ReviewBench {
        files,
        added_lines: per_file * files,
        first_run_seconds: timings.first().copied().unwrap_or_default(),
        rerun_seconds: timings.last().copied().unwrap_or_default(),
        sessions: rerun.usage.sessions,
        model_calls: first.usage.model_calls,
        input_tokens: first.usage.input_tokens,
        complete: first.complete,
        errors: first.errors.clone(),
        unreviewed_files: first.unreviewed.len(),
        findings_in_report: rerun.findings.len(),
        overflow: rerun.overflow.count,
        tracked: rerun.tracked.len(),
        peak_rss_mb: peak_rss_mb(),
    })
}
