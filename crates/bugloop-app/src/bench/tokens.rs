//! `bench tokens`: the input tokens a review of a reference change sends to the model, as a
//! four-pass tools session (without exploration) and as one structured answer.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use bugloop_llm::budget::Meter;
use bugloop_llm::{BudgetLimits, Provider};
use serde::Serialize;

use super::models::{InstantModel, PassModel};
use super::review::review_once;
use super::setup_error;
use crate::AppError;

/// What the two reviews of the reference change sent.
#[derive(Debug, Clone, Serialize)]
pub struct TokensBench {
    pub change: String,
    pub tools_session_requests: Vec<u64>,
    pub tools_session_total: u64,
    pub structured_answer_total: u64,
}

fn unlimited(model: &str) -> Arc<Meter> {
    Arc::new(Meter::new(model, BudgetLimits::default(), None))
}

/// Builds the example's repository with `scripts/example-repo` (run from bugloop's checkout).
fn example_repo(example: &Path, repo: &Path) -> Result<(), AppError> {
    let script = Path::new("scripts/example-repo");
    let made = Command::new(script)
        .arg(example)
        .arg(repo)
        .output()
        .map_err(|e| {
            setup_error(format!(
                "cannot run {} (run from bugloop's checkout): {e}",
                script.display()
            ))
        })?;
    if !made.status.success() {
        return Err(setup_error(String::from_utf8_lossy(&made.stderr)));
    }
    Ok(())
}

pub async fn tokens(example: &Path) -> Result<TokensBench, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let repo = dir.path().join("repo");
    example_repo(example, &repo)?;
    let runs = tempfile::tempdir().map_err(setup_error)?;
    let config = bugloop_config::Config::default();
    let passes = Arc::new(PassModel::default());
    review_once(
        &repo,
        &config,
        passes.clone(),
        unlimited(passes.name()),
        runs.path(),
    )
    .await?;
    let once = Arc::new(InstantModel::default());
    // A second repository: the first one's conversation now holds findings.
    let repo2 = dir.path().join("repo2");
    example_repo(example, &repo2)?;
    review_once(
        &repo2,
        &config,
        once.clone(),
        unlimited(once.name()),
        runs.path(),
    )
    .await?;
    let tools: Vec<u64> = passes
        .requests
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    let single: Vec<u64> = once.requests.lock().map(|r| r.clone()).unwrap_or_default();
    Ok(TokensBench {
        change: example.display().to_string(),
        tools_session_total: tools.iter().sum(),
        tools_session_requests: tools,
        structured_answer_total: single.iter().sum(),
    })
}
