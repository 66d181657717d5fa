//! The one place bugloop starts git: a command with everything git can be told to run (hooks,
//! fsmonitor, external diff, pager, signing, auto-gc) switched off and output in the plain form
//! the parsers expect, and its failures as [`GitError`]s naming the command and git's stderr.

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::GitError;

/// Configuration given on every command line, so neither the user's nor the repository's
/// settings can run a program or change what is parsed.
const HARDENING: [&str; 10] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "core.quotePath=true",
    "color.ui=false",
    "commit.gpgSign=false",
    "gc.auto=0",
];

/// Variables that would point a command at another repository, index or object store, or make it
/// run a program; removed when git runs against an explicit git directory.
const REPOSITORY_VARIABLES: [&str; 13] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
];

/// One git invocation, built hardened; `args` is kept to name the command in errors.
#[derive(Debug)]
pub struct GitCommand {
    command: Command,
    args: Vec<OsString>,
}

impl GitCommand {
    /// git in the repository containing `dir` (found the way git finds it, as the user's own git
    /// would).
    pub fn in_work_tree(dir: &Path) -> GitCommand {
        let mut command = Command::new("git");
        command.arg("-C").arg(dir);
        Self::hardened(command)
    }

    /// git against the git directory `git_dir` itself, run from inside it (so no discovery ever
    /// starts in a tree someone else wrote) and without the caller's `GIT_*` variables that name
    /// a repository, an index or a program.
    pub fn in_git_dir(git_dir: &Path) -> GitCommand {
        let mut command = Command::new("git");
        command.current_dir(git_dir).arg("--git-dir").arg(git_dir);
        for name in REPOSITORY_VARIABLES {
            command.env_remove(name);
        }
        Self::hardened(command)
    }

    fn hardened(mut command: Command) -> GitCommand {
        for setting in HARDENING {
            command.arg("-c").arg(setting);
        }
        command
            // No prompt can hang a run, and a read never rewrites the user's index.
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(Stdio::null());
        GitCommand {
            command,
            args: Vec::new(),
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> GitCommand {
        self.args.push(arg.as_ref().to_owned());
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> GitCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for arg in args {
            self = self.arg(arg);
        }
        self
    }

    pub fn env(mut self, name: &str, value: impl AsRef<OsStr>) -> GitCommand {
        self.command.env(name, value);
        self
    }

    /// The command as errors name it: `rev-parse --verify HEAD`, with any credential in it
    /// (an `http.extraheader` value, an `Authorization` header) masked: errors end up in job
    /// queues, logs and comments.
    pub fn describe(&self) -> String {
        let mut masked = Vec::with_capacity(self.args.len());
        let mut after_header_key = false;
        for arg in &self.args {
            let text = arg.to_string_lossy();
            let lower = text.to_ascii_lowercase();
            let shown = if after_header_key || lower.starts_with("authorization") {
                "***".to_owned()
            } else if let Some((key, _)) = text
                .split_once('=')
                .filter(|(key, _)| key.to_ascii_lowercase().ends_with("extraheader"))
            {
                format!("{key}=***")
            } else {
                text.into_owned()
            };
            after_header_key = lower.ends_with("extraheader");
            masked.push(shown);
        }
        masked.join(" ")
    }

    /// Runs git and returns its standard output; any exit status but 0 is a failure.
    pub fn output(self) -> Result<Vec<u8>, GitError> {
        self.output_accepting(&[0])
    }

    /// Runs git; the exit statuses in `accepted` count as success (1 for `diff --no-index`,
    /// which says "the files differ").
    pub fn output_accepting(self, accepted: &[i32]) -> Result<Vec<u8>, GitError> {
        Ok(self.run_accepting(accepted)?.stdout)
    }

    fn run_accepting(mut self, accepted: &[i32]) -> Result<std::process::Output, GitError> {
        let args = self.describe();
        let output = self.command.output().map_err(|source| GitError::Spawn {
            args: args.clone(),
            source,
        })?;
        let accepted = output
            .status
            .code()
            .is_some_and(|code| accepted.contains(&code));
        if !accepted {
            return Err(GitError::Failed {
                args,
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(output)
    }

    /// Runs git for its answer in the exit status; a status outside `accepted` is a failure.
    pub fn exit_code(self, accepted: &[i32]) -> Result<i32, GitError> {
        // Accepted statuses are codes, so a process killed by a signal is never accepted.
        Ok(self.run_accepting(accepted)?.status.code().unwrap_or(-1))
    }

    /// Runs git and returns its output as trimmed text (lossy for bytes that are not UTF-8).
    pub fn text(self) -> Result<String, GitError> {
        Ok(String::from_utf8_lossy(&self.output()?).trim().to_owned())
    }

    /// Starts git with the given standard streams, for commands fed or read as streams
    /// (`cat-file --batch`, `fast-import`); [`GitCommand::finish`] waits for it.
    pub fn spawn(mut self, stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Result<Child, GitError> {
        let args = self.describe();
        self.command
            .stdin(stdin)
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|source| GitError::Spawn { args, source })
    }

    /// Waits for a spawned git named `args` and returns its output (what was piped), failing as
    /// [`GitCommand::output`] does.
    pub fn finish(args: &str, child: Child) -> Result<Vec<u8>, GitError> {
        let output = child.wait_with_output().map_err(|source| GitError::Spawn {
            args: args.to_owned(),
            source,
        })?;
        if !output.status.success() {
            return Err(GitError::Failed {
                args: args.to_owned(),
                message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(output.stdout)
    }
}

/// The installed git's version line (`git version 2.43.0`).
pub fn version() -> Result<String, GitError> {
    let output = Command::new("git")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn {
            args: "--version".to_owned(),
            source,
        })?;
    if !output.status.success() {
        return Err(GitError::Failed {
            args: "--version".to_owned(),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Whether the installed git takes `--attr-source` (2.40 and later), asked once.
pub(crate) fn has_attr_source() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| version().is_ok_and(|line| at_least(&line, (2, 40))))
}

/// Whether a `git version X.Y...` line names `least` or later.
fn at_least(line: &str, least: (u32, u32)) -> bool {
    let mut numbers = line
        .trim_start_matches("git version ")
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= least,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_compared_as_numbers() {
        assert!(at_least("git version 2.47.3", (2, 40)));
        assert!(at_least("git version 2.40.0.windows.1", (2, 40)));
        assert!(at_least("git version 3.0", (2, 40)));
        assert!(!at_least("git version 2.39.5 (Apple Git-154)", (2, 40)));
        assert!(!at_least("git version 2.4.1", (2, 40)));
        assert!(!at_least("not git", (2, 40)));
    }

    #[test]
    fn a_failure_names_the_command_and_git_s_message() {
        let dir = tempfile::tempdir().unwrap();
        let error = GitCommand::in_work_tree(dir.path())
            .args(["rev-parse", "--verify", "HEAD"])
            .output()
            .unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with("git rev-parse --verify HEAD failed: "),
            "{text}"
        );
        assert!(text.contains("not a git repository"), "{text}");
    }

    #[test]
    fn hooks_do_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| GitCommand::in_work_tree(dir.path()).args(args).output();
        run(&["init", "-q"]).unwrap();
        let hook = dir.path().join(".git/hooks/pre-commit");
        let marker = dir.path().join("hook-ran");
        std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        run(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ])
        .unwrap();
        assert!(!marker.exists());
    }

    #[test]
    fn accepted_statuses_count_as_success() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a\n").unwrap();
        std::fs::write(&b, "b\n").unwrap();
        let diff = || {
            GitCommand::in_work_tree(dir.path())
                .args(["diff", "--no-ext-diff", "--no-index", "--"])
                .arg(&a)
                .arg(&b)
        };
        assert!(diff().output().is_err());
        let text = diff().output_accepting(&[0, 1]).unwrap();
        assert!(String::from_utf8_lossy(&text).contains("+b"));
    }

    #[test]
    fn the_version_is_git_s() {
        assert!(version().unwrap().starts_with("git version"));
    }
}
