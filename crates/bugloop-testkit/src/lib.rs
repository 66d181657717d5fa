//! Test support shared by bugloop's suites (a dev-dependency only): git run in the repositories
//! the tests build, a builder for those repositories, what scripted models say (`model`),
//! running a scenario as root and again as uid 65534 (`users`), what GitHub publishes for tests
//! and an App's key (`github`), reading the JSON reports bugloop prints (`json`), checking JSON
//! against a schema (`schema`), running a command that must succeed, a benchmark's runtime, and
//! the checkout's root and its documents. Every helper panics with git's message on failure, since a test that cannot
//! build its fixture has failed.
//!
//! This is the tests' own git, run plainly (hooks and the user's configuration apply) as a
//! developer would run it; bugloop's own git is `bugloop-git`.
//!
//! **Never:** be a normal dependency.

// A test helper's job is to stop the test at the first thing that went wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub mod deliveries;
pub mod files;
pub mod github;
pub mod json;
pub mod labels;
pub mod model;
pub mod postgres;
pub mod sarif;
pub mod schema;
pub mod users;

/// bugloop's checkout: the workspace every crate of it sits two levels below.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// The Markdown documents of the checkout's `docs/`, sorted by name.
pub fn docs_markdown() -> Vec<PathBuf> {
    let mut documents: Vec<PathBuf> = std::fs::read_dir(workspace().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    documents.sort();
    documents
}

/// Runs `command` and returns what it printed; the test fails, showing the program, its
/// arguments and its standard error, unless it started and succeeded.
#[track_caller]
pub fn run_ok(command: &mut Command) -> Output {
    let program = command.get_program().to_string_lossy().into_owned();
    let args: Vec<String> = command
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program} {args:?}: {error}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A multi-thread runtime with two workers and every driver on, as benchmarks and tests that
/// must outlive a blocked task use.
pub fn multi_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The identity commits made by [`git`] carry.
pub const NAME: &str = "Dev";
pub const EMAIL: &str = "dev@example.com";

/// [`run_ok`] of git, its standard output trimmed.
fn checked(git: &mut Command) -> String {
    let output = run_ok(git);
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Runs git in `dir` as the developer [`NAME`] and returns its standard output, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    checked(
        Command::new("git")
            .arg("-C")
            .arg(dir)
            // A test may hand its repositories to another user (to run bugloop unprivileged)
            // and still read them back.
            .args(["-c", "safe.directory=*"])
            .arg("-c")
            .arg(format!("user.name={NAME}"))
            .arg("-c")
            .arg(format!("user.email={EMAIL}"))
            .args(args),
    )
}

/// Runs git in `dir` with nothing of the machine's (no system or global configuration, no
/// variables but `PATH`) and a fixed identity and date, so commit ids, which snapshots show, are
/// the same on every run and machine.
pub fn git_reproducible(dir: &Path, args: &[&str]) -> String {
    checked(
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "Test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "Test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z"),
    )
}

/// Fails the test unless `text` contains `needle`; the message shows the whole text.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{needle:?} is not in:\n{text}");
}

/// Fails the test if `text` holds any of `needles` (a secret, a mark an escape would leave); the
/// message names the one found and shows the whole text.
#[track_caller]
pub fn assert_contains_none(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(!text.contains(needle), "{needle:?} is in:\n{text}");
    }
}

/// Fails the test unless `text` starts with `start`; the message shows the whole text.
#[track_caller]
pub fn assert_starts_with(text: &str, start: &str) {
    assert!(text.starts_with(start), "{start:?} does not start:\n{text}");
}

/// A git repository in a temporary directory (removed on drop), built step by step.
#[derive(Debug)]
pub struct TestRepo {
    dir: tempfile::TempDir,
}

impl TestRepo {
    /// An empty repository whose first branch is `branch`.
    pub fn init(branch: &str) -> TestRepo {
        let repo = TestRepo {
            dir: tempfile::tempdir().unwrap(),
        };
        repo.git(&["init", "-q", "-b", branch]);
        repo
    }

    /// A repository on `main` with `files` committed as `first`.
    pub fn with_files(files: &[(&str, &str)]) -> TestRepo {
        let repo = TestRepo::init("main");
        for (path, text) in files {
            repo.write(path, text);
        }
        repo.commit("first");
        repo
    }

    /// A repository where `main` has `path` with `main_text` (commit `first`) and the branch
    /// `feature`, checked out, changes it to `feature_text` (commit `second`).
    pub fn with_feature_branch(path: &str, main_text: &str, feature_text: &str) -> TestRepo {
        let repo = TestRepo::with_files(&[(path, main_text)]);
        repo.branch("feature");
        repo.write(path, feature_text);
        repo.commit("second");
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// [`git`] in this repository.
    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    /// Writes a file (its directories too), relative to the work tree.
    pub fn write(&self, path: &str, text: &str) {
        files::write(self.path(), path, text);
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.path().join(path)).unwrap()
    }

    /// Commits every change in the work tree (new files too).
    pub fn commit(&self, message: &str) {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-qm", message]);
    }

    /// Creates `branch` at HEAD and switches to it.
    pub fn branch(&self, branch: &str) {
        self.git(&["switch", "-qc", branch]);
    }

    /// HEAD's commit id.
    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// The 1-based number of the first line of `path` containing `needle`.
    pub fn line_of(&self, path: &str, needle: &str) -> u32 {
        let index = self
            .read(path)
            .lines()
            .position(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("{needle:?} not in {path}"));
        u32::try_from(index + 1).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_is_built_and_committed() {
        let repo = TestRepo::with_feature_branch("src/a.txt", "one\ntwo\n", "one\nTWO\n");
        assert_eq!(repo.git(&["branch", "--show-current"]), "feature");
        assert_eq!(repo.line_of("src/a.txt", "TWO"), 2);
        assert_eq!(repo.git(&["log", "--format=%an %s", "-1"]), "Dev second");
        assert_eq!(repo.head().len(), 40);
    }

    #[test]
    fn reproducible_commits_have_the_same_id_everywhere() {
        let commit = || {
            let dir = tempfile::tempdir().unwrap();
            git_reproducible(dir.path(), &["init", "-q", "-b", "main"]);
            std::fs::write(dir.path().join("a"), "a\n").unwrap();
            git_reproducible(dir.path(), &["add", "."]);
            git_reproducible(dir.path(), &["commit", "-qm", "one"]);
            git_reproducible(dir.path(), &["rev-parse", "HEAD"])
        };
        assert_eq!(commit(), commit());
    }

    #[test]
    fn the_documents_are_markdown_in_order() {
        let documents = docs_markdown();
        assert!(!documents.is_empty());
        assert!(documents.windows(2).all(|w| w[0] < w[1]));
        assert!(documents.iter().all(|d| d.extension().unwrap() == "md"));
    }

    #[test]
    #[should_panic(expected = "no such thing")]
    fn a_failing_command_fails_the_test_with_its_standard_error() {
        run_ok(Command::new("sh").args(["-c", "echo no such thing >&2; exit 3"]));
    }

    #[test]
    #[should_panic(expected = "not a git repository")]
    fn a_failing_git_fails_the_test_with_its_message() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["rev-parse", "HEAD"]);
    }
}
