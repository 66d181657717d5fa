//! A solve's reproduction test: the test files the solver added or changed. The error is
//! reproduced when the test commands pass at the start of solving and fail there with those
//! files added (and without the fix). A report after the merge is a regression of the solution
//! only when the same files fail on the base's head while the suite passes there without them:
//! a report alone, which anyone who can get text into a log may write, proves nothing. Each run
//! is the sandboxed test commands on a commit made with plumbing ([`bugloop_git::Git::overlay`]).

use bugloop_domain::test_files::is_test_path;
use bugloop_git::{FileStatus, short};
use serde::{Deserialize, Serialize};

use super::{Run, SolveError};

/// What the solver's test showed, kept in the record of the step it decided.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Reproduction {
    /// The test files, as `commit` has them.
    pub files: Vec<String>,
    pub commit: String,
    /// They fail where the error is and the suite passes there without them.
    pub reproduced: bool,
    /// Why not, when not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// An escalation's detail: what the solver's test showed, so the learning record counts the
/// escalation only when it reproduced the error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Escalation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<Reproduction>,
}

/// What the reproduction test says on the base's head.
pub(super) enum AtHead {
    /// It fails there, and the suite passes without it: the solution regressed.
    Fails,
    /// It passes: the solution holds, and the report is another error.
    Passes(String),
    /// Nothing can be told (the suite fails without it too, or there is no test).
    Unknown(String),
}

/// Whether the test commands pass at `commit` (in the sandbox, as a solve runs them).
async fn passes(run: &Run<'_, '_>, commit: &str) -> Result<bool, SolveError> {
    let runs = super::test_head(run.env.settings, run.env.git, commit).await?;
    Ok(runs.iter().all(|r| r.passed))
}

/// A commit on `base` with `files` as `source` has them.
fn with_files(
    run: &Run<'_, '_>,
    base: &str,
    source: &str,
    files: &[String],
) -> Result<String, SolveError> {
    let name = &run.env.config().identity.local_bot_name;
    let email = format!("{name}@bugloop.invalid");
    Ok(run.env.git.overlay(
        base,
        source,
        files,
        "bugloop: the reproduction test's files",
        (name, &email),
    )?)
}

/// Whether the test files `commit` adds or changes since `start` reproduce the error.
pub(super) async fn of(
    run: &Run<'_, '_>,
    start: &str,
    commit: &str,
) -> Result<Reproduction, SolveError> {
    let files: Vec<String> = run
        .env
        .git
        .changed_files(start, commit)?
        .into_iter()
        .filter(|f| f.status != FileStatus::Deleted && is_test_path(&f.path))
        .map(|f| f.path)
        .collect();
    let not = |files: Vec<String>, reason: &str| Reproduction {
        files,
        commit: commit.to_owned(),
        reproduced: false,
        reason: Some(reason.to_owned()),
    };
    if files.is_empty() {
        return Ok(not(files, "the solver wrote no test"));
    }
    if !passes(run, start).await? {
        return Ok(not(
            files,
            "the tests already fail where solving started, so the solver's test cannot be told \
             to fail for the error",
        ));
    }
    if passes(run, &with_files(run, start, commit, &files)?).await? {
        return Ok(not(
            files,
            "the solver's test passes where solving started, without the fix: it does not \
             reproduce the error",
        ));
    }
    Ok(Reproduction {
        files,
        commit: commit.to_owned(),
        reproduced: true,
        reason: None,
    })
}

/// The reproduction test on `head` (the base's): its files as the solve wrote them, against the
/// suite there without them (as they were where solving started).
pub(super) async fn at_head(
    run: &Run<'_, '_>,
    start: &str,
    head: &str,
    reproduction: &Reproduction,
) -> Result<AtHead, SolveError> {
    let files = &reproduction.files;
    let listed = files
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if !passes(run, &with_files(run, head, start, files)?).await? {
        return Ok(AtHead::Unknown(format!(
            "the tests fail on the base's head ({}) even without the solution's test ({listed}), \
             so the report cannot be told to be this error",
            short(head)
        )));
    }
    if passes(run, &with_files(run, head, &reproduction.commit, files)?).await? {
        return Ok(AtHead::Passes(format!(
            "the solution's reproduction test ({listed}) still passes on the base's head ({})",
            short(head)
        )));
    }
    Ok(AtHead::Fails)
}

/// The reproduction of the record's solution, or else of its last attempt's kept edits: what an
/// escalation records, so the learning record counts only tries that reproduced the error.
pub(super) async fn of_record(run: &Run<'_, '_>) -> Option<Reproduction> {
    let start = run.record.solving()?.start;
    let commit = match run.record.solution() {
        Some(solution) => solution.commit,
        None => run.record.last_snapshot()?.1,
    };
    // A check that cannot run (no test commands, no sandbox) leaves the escalation uncounted,
    // which is the safe side: a person still sees the issue.
    of(run, &start, &commit).await.ok()
}
