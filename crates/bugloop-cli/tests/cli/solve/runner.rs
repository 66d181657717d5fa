//! Who runs bugloop in the solve tests: the test's own user, or, when that is root, an
//! unprivileged one (uid 65534, as the Dockerfile runs the server) who owns the repository and
//! nothing else. The sandbox, the task trees and the store must work the same for both.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use bugloop_testkit::TestRepo;

use super::MEAN;
use serde_json::{Value, json};

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

pub fn read(path: &str) -> Value {
    json!({"name": "read_file", "arguments": {"path": path}})
}

pub use bugloop_testkit::users::is_root;

/// `git` in `dir`, whoever owns it (a repository of another user is "dubious" to git).
pub fn git_read(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    git_stdout(args, &output)
}

/// What `git args...`, which must have succeeded, printed (its last newline left off).
fn git_stdout(args: &[&str], output: &Output) -> String {
    assert!(output.status.success(), "git {args:?}: {}", text(output));
    String::from_utf8_lossy(&output.stdout)
        .trim_end()
        .to_owned()
}

fn open(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn give(dir: &Path) {
    bugloop_testkit::users::chown_all(dir, bugloop_testkit::users::NOBODY);
}

/// An unprivileged user's set-up: the binary where it can run it (the build may sit under
/// `/root`) and a home of its own.
struct Unprivileged {
    _bin: tempfile::TempDir,
    binary: PathBuf,
    home: tempfile::TempDir,
}

pub struct Runner {
    unprivileged: Option<Unprivileged>,
}

impl Runner {
    /// The test's own user.
    pub fn me() -> Runner {
        Runner { unprivileged: None }
    }

    /// uid 65534 when the test runs as root; `None` (said on stderr) otherwise: the test's own
    /// user is unprivileged already, and the other variant runs as it.
    #[allow(clippy::print_stderr)]
    pub fn unprivileged() -> Option<Runner> {
        if !is_root() {
            eprintln!("running as an unprivileged user already: the other variant is this one");
            return None;
        }
        let bin = tempfile::tempdir().unwrap();
        open(bin.path());
        let binary = bugloop_testkit::users::program_for(
            Some(bugloop_testkit::users::NOBODY),
            Path::new(env!("CARGO_BIN_EXE_bugloop")),
            bin.path(),
        );
        let home = tempfile::tempdir().unwrap();
        give(home.path());
        Some(Runner {
            unprivileged: Some(Unprivileged {
                _bin: bin,
                binary,
                home,
            }),
        })
    }

    /// A repository on `main` with `files` committed, owned by the runner.
    pub fn repo(&self, files: &[(&str, &str)]) -> TestRepo {
        let repo = TestRepo::with_files(files);
        if self.unprivileged.is_some() {
            give(repo.path());
        }
        repo
    }

    /// [`Runner::repo`] with [`MEAN`] alone, no configuration.
    pub fn stats_repo(&self) -> TestRepo {
        self.repo(&[("stats.py", MEAN)])
    }

    /// [`Runner::repo`] with [`MEAN`] and `config` (the repository's `.bugloop/config.yml`).
    pub fn mean_repo(&self, config: &str) -> TestRepo {
        self.repo(&[("stats.py", MEAN), (".bugloop/config.yml", config)])
    }

    /// [`Runner::mean_repo`] with its crash reported: issue #1.
    #[track_caller]
    pub fn mean_reported(&self, config: &str) -> TestRepo {
        let repo = self.mean_repo(config);
        self.ok(repo.path(), &["report"], super::MEAN_TRACE);
        repo
    }

    /// A directory for model scripts the runner can read.
    pub fn scripts(&self) -> tempfile::TempDir {
        self.readable_dir()
    }

    /// A directory the runner can read (model scripts, logs to watch).
    pub fn readable_dir(&self) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        open(dir.path());
        dir
    }

    /// `bugloop args...` in `dir`, as the runner.
    pub fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = match &self.unprivileged {
            None => {
                let mut command = Command::new(env!("CARGO_BIN_EXE_bugloop"));
                command.env_remove("BUGLOOP_CONFIG");
                command
            }
            Some(user) => {
                let mut command = bugloop_testkit::users::command_as(
                    Some(bugloop_testkit::users::NOBODY),
                    &user.binary,
                );
                command
                    .env_clear()
                    .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                    .env("HOME", user.home.path())
                    .env("TMPDIR", "/tmp");
                command
            }
        };
        command.args(args).current_dir(dir).env("NO_COLOR", "1");
        command
    }

    /// `git args...` in `dir` as the runner (a person's own merge).
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut command = match &self.unprivileged {
            None => Command::new("git"),
            Some(user) => {
                let mut command =
                    bugloop_testkit::users::command_as(Some(bugloop_testkit::users::NOBODY), "git");
                command.env("HOME", user.home.path());
                command
            }
        };
        let output = command
            .args(["-c", "user.name=Dev", "-c", "user.email=dev@example.com"])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        git_stdout(args, &output)
    }

    /// Creates `branch` in `dir` and commits `text` to the tracked file `path` there, as the
    /// runner: a branch someone pushed. The branch stays checked out.
    pub fn commit_on_new_branch(
        &self,
        dir: &Path,
        branch: &str,
        (path, text): (&str, &str),
        message: &str,
    ) {
        self.git(dir, &["checkout", "-q", "-b", branch]);
        std::fs::write(dir.join(path), text).unwrap();
        self.git(dir, &["commit", "-q", "-am", message]);
    }

    /// Runs `bugloop args...` in `dir` with `stdin`, to its end.
    pub fn run(&self, dir: &Path, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = self.start(dir, args, Stdio::piped());
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// [`Runner::run`], which must end well (exit status 0).
    #[track_caller]
    pub fn ok(&self, dir: &Path, args: &[&str], stdin: &str) -> Output {
        let output = self.run(dir, args, stdin);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        output
    }

    /// [`Runner::ok`] of a command that prints JSON: what it printed.
    #[track_caller]
    pub fn json(&self, dir: &Path, args: &[&str], stdin: &str) -> Value {
        serde_json::from_slice(&self.ok(dir, args, stdin).stdout).unwrap()
    }

    /// `bugloop item NUMBER --format json` in `dir`, which must end well: the issue or change
    /// request as JSON.
    #[track_caller]
    pub fn item(&self, dir: &Path, number: u32) -> Value {
        self.json(dir, &["item", &number.to_string(), "--format", "json"], "")
    }

    /// `bugloop status NUMBER --format json` in `dir`, which must end well: the issue's record.
    #[track_caller]
    pub fn status(&self, dir: &Path, number: u32) -> Value {
        self.json(
            dir,
            &["status", &number.to_string(), "--format", "json"],
            "",
        )
    }

    /// `bugloop solve 1` with `model` in `dir`, which must end well: its JSON report.
    #[track_caller]
    pub fn solve_one(&self, dir: &Path, model: &str) -> Value {
        self.json(
            dir,
            &["solve", "1", "--model", model, "--format", "json"],
            "",
        )
    }

    /// [`Runner::run`], which must end with exit status `code`: all it printed.
    #[track_caller]
    pub fn exits(&self, dir: &Path, args: &[&str], stdin: &str, code: i32) -> String {
        let output = self.run(dir, args, stdin);
        let said = text(&output);
        assert_eq!(output.status.code(), Some(code), "{said}");
        said
    }

    /// [`Runner::exits`] with no input, whose output must say `needle`.
    #[track_caller]
    pub fn exits_saying(&self, dir: &Path, args: &[&str], code: i32, needle: &str) {
        bugloop_testkit::assert_contains(&self.exits(dir, args, "", code), needle);
    }

    /// Starts `bugloop args...` in `dir` with `stdin`, its output piped to the test.
    pub fn start(&self, dir: &Path, args: &[&str], stdin: Stdio) -> Child {
        self.command(dir, args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Starts `bugloop args...` in `dir`, its output dropped (a run the test kills).
    pub fn spawn(&self, dir: &Path, args: &[&str]) -> Child {
        self.command(dir, args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

/// A model script of `lines` in `dir`, as the `--model` value that plays it.
pub fn script_of(dir: &Path, name: &str, lines: &[Value]) -> String {
    let script = dir.join(name);
    std::fs::write(
        &script,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    format!("script:{}", script.display())
}

/// The transcripts of the agent runs in `dir` (`.git/bugloop/runs`) that contain `text`.
pub fn transcripts_saying(dir: &Path, text: &str) -> Vec<String> {
    std::fs::read_dir(dir.join(".git/bugloop/runs"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter(|t| t.contains(text))
        .collect()
}

/// The comments of `item` (as `bugloop item N --format json` shows it) whose body contains
/// `text`.
pub fn comments_saying<'a>(item: &'a Value, text: &str) -> Vec<&'a Value> {
    item["comments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["body"].as_str().unwrap_or_default().contains(text))
        .collect()
}

/// Fails the test unless `item` (as `bugloop item N --format json` shows it) carries `label`.
#[track_caller]
pub fn assert_labelled(item: &Value, label: &str) {
    assert!(
        item["labels"].as_array().unwrap().contains(&json!(label)),
        "{item:#}"
    );
}

/// Files reported in the report of `solve --format json`'s branch.
pub fn committed(dir: &Path, report: &Value) -> Vec<String> {
    let branch = report["branch"].as_str().unwrap();
    git_read(dir, &["ls-tree", "-r", "--name-only", branch])
        .lines()
        .map(str::to_owned)
        .collect()
}
