//! The agent runs recorded in a repository (transcripts under `<git common dir>/bugloop/runs`,
//! shared by worktrees): where they are, the list, and one run by id or prefix.

use std::path::{Path, PathBuf};

use bugloop_agent::transcript;
pub use bugloop_agent::transcript::{Event, RunSummary};
use bugloop_git::Git;

use crate::AppError;

/// The runs directory of the repository `git`.
pub(crate) fn runs_dir(git: &Git) -> PathBuf {
    git.runs_dir()
        .unwrap_or_else(|_| git.root().join(".git/bugloop/runs"))
}

/// The runs directory of the repository containing `directory` (outside one: `directory/.git`).
pub fn runs_dir_of(directory: &Path) -> PathBuf {
    match Git::open(directory) {
        Ok(git) => runs_dir(&git),
        Err(_) => directory.join(".git/bugloop/runs"),
    }
}

/// Every run in `dir`, newest first.
pub fn list(dir: &Path) -> Vec<RunSummary> {
    transcript::list(dir)
}

/// The events of the one run in `dir` whose id starts with `id`.
pub fn show(dir: &Path, id: &str) -> Result<Vec<Event>, AppError> {
    let matches: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
                .filter(|p| {
                    p.file_stem()
                        .is_some_and(|s| s.to_string_lossy().starts_with(id))
                })
                .collect()
        })
        .unwrap_or_default();
    let path = match matches.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(AppError::Invalid(format!(
                "no run {id:?} in {}; `bugloop runs list` shows them",
                dir.display()
            )));
        }
        many => {
            return Err(AppError::Invalid(format!(
                "{} runs start with {id:?}; give more of the id",
                many.len()
            )));
        }
    };
    transcript::read(&path)
        .map_err(|e| AppError::Invalid(format!("cannot read {}: {e}", path.display())))
}
