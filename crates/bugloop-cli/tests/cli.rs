//! The CLI's integration tests, one binary (each binary links the whole program again): the
//! Action (`action`), reviews through the binary (`review`), the solve pipeline (`solve`), the
//! server and its cluster (`serve`, `serve_cluster`), deployment files (`deploy`) and workflows
//! (`workflows`); and here, the data-driven cases, one directory per case under `tests/cases/`: `args` (one line), optional
//! `config.yml` (put at `.bugloop/config.yml` of a fresh repository), `base.yml` (when given, the
//! repository is a real git repository: `base.yml` is committed as `.bugloop/config.yml` on
//! `main`, then `config.yml`, if any, on the branch `feature`), `runs/` (transcripts put under
//! `.git/bugloop/runs`), `env` (KEY=VALUE lines) and `stdin`. The snapshot is the exit code,
//! standard output and standard error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};

use bugloop_github_sim::PullSpec;
use bugloop_github_sim::fixture::PullRequestFixture;
use bugloop_testkit::git_reproducible;

mod action;
mod deploy;
mod review;
mod serve;
mod serve_cluster;
#[path = "cli/solve.rs"]
mod solve;
mod workflows;

/// Output read by a reader that goes away (`bugloop config schema | head -1`): no error, and
/// success. The reader is gone before bugloop writes (a pipe whose read end is closed).
#[test]
fn a_reader_that_goes_away_is_no_error() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["config", "schema"])
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert!(output.status.success(), "{:?}", output.status);
}

#[test]
fn cases() {
    insta::glob!("cases/*/args", |args_path| {
        let case = args_path.parent().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let config_file = repo.path().join(".bugloop/config.yml");
        if let Ok(base) = std::fs::read(case.join("base.yml")) {
            git_reproducible(repo.path(), &["init", "-q", "-b", "main"]);
            std::fs::create_dir_all(repo.path().join(".bugloop")).unwrap();
            std::fs::write(&config_file, base).unwrap();
            git_reproducible(repo.path(), &["add", "."]);
            git_reproducible(repo.path(), &["commit", "-qm", "base"]);
            git_reproducible(repo.path(), &["switch", "-qc", "feature"]);
            if let Ok(config) = std::fs::read(case.join("config.yml")) {
                std::fs::write(&config_file, config).unwrap();
                git_reproducible(repo.path(), &["commit", "-qam", "branch"]);
            }
        } else {
            std::fs::create_dir(repo.path().join(".git")).unwrap();
            if let Ok(config) = std::fs::read(case.join("config.yml")) {
                std::fs::create_dir_all(repo.path().join(".bugloop")).unwrap();
                std::fs::write(&config_file, config).unwrap();
            }
        }
        if let Ok(runs) = std::fs::read_dir(case.join("runs")) {
            let target = repo.path().join(".git/bugloop/runs");
            std::fs::create_dir_all(&target).unwrap();
            for run in runs {
                let run = run.unwrap();
                std::fs::copy(run.path(), target.join(run.file_name())).unwrap();
            }
        }
        let args = std::fs::read_to_string(args_path).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_bugloop"));
        command
            .args(shell_words::split(args.trim()).unwrap())
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Ok(env) = std::fs::read_to_string(case.join("env")) {
            for line in env.lines().filter(|l| !l.trim().is_empty()) {
                let (key, value) = line.split_once('=').unwrap();
                command.env(key, value);
            }
        }
        let mut child = command.spawn().unwrap();
        let stdin = std::fs::read(case.join("stdin")).unwrap_or_default();
        child.stdin.take().unwrap().write_all(&stdin).unwrap();
        let output = child.wait_with_output().unwrap();
        let shown = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes).replace(&repo.path().display().to_string(), "<repo>")
        };
        let snapshot = format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            output.status.code().unwrap_or(-1),
            shown(&output.stdout),
            shown(&output.stderr)
        );
        insta::assert_snapshot!(snapshot);
    });
}

/// Writes the program `script` at `path` (its directories too), for anyone to run: a stand-in
/// for a tool, or what an attacker plants.
pub(crate) fn write_program(path: &std::path::Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `bugloop doctor` in an empty directory with `env` set (and libgomp's wait chosen by nothing
/// else): its exit code and standard output.
fn doctor(env: &[(&str, &std::ffi::OsStr)]) -> (Option<i32>, String) {
    let repo = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .arg("doctor")
        .env_remove("GOMP_SPINCOUNT")
        .env_remove("OMP_WAIT_POLICY")
        .envs(env.iter().copied())
        .current_dir(repo.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout)
}

/// `doctor` reports each check on its own line and fails when the configured model is missing.
/// (Not a snapshot: versions and paths are the machine's.)
#[test]
fn doctor_reports_and_fails_on_a_missing_model() {
    // The model is trusted-only configuration: the environment chooses it, as the user's own file
    // or the base commit's would.
    let model = "local:/nonexistent/model.gguf".as_ref();
    let (code, stdout) = doctor(&[("BUGLOOP_MODEL__DEFAULT", model)]);
    assert_eq!(code, Some(1), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let a_line_starts = |start: &str| lines.iter().any(|l| l.starts_with(start));
    assert!(lines.iter().any(|l| l.contains(" sandbox: ")), "{stdout}");
    // Which protections are in force, one line each.
    for protection in [
        "ok      sandbox user namespace: ",
        "ok      sandbox capabilities: ",
        "ok      sandbox file system view: ",
        "ok      sandbox network: ",
        "ok      sandbox seccomp: ",
        "ok      sandbox file size limit: ",
        "ok      sandbox private /tmp: ",
        "ok      sandbox workspace disk use: ",
    ] {
        assert!(a_line_starts(protection), "{protection}\n{stdout}");
    }
    assert!(
        lines.iter().any(|l| l.contains("sandbox process limit: ")),
        "{stdout}"
    );
    assert!(a_line_starts("ok      git: git version"), "{stdout}");
    assert!(
        lines.contains(&"info    model: local:/nonexistent/model.gguf"),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("FAIL    embedded model:") && l.contains("scripts/fetch-model")),
        "{stdout}"
    );
    // Each analyzer with its version (the test set-up installs the pinned ones).
    assert!(
        a_line_starts("ok      analyzer ruff: ruff 0.17.5"),
        "{stdout}"
    );
}

/// The embedded model's threads sleep after a short spin (libgomp's default spin made the model
/// several times slower while another process took a core); a user's own choice is kept.
#[test]
fn doctor_says_how_the_embedded_model_s_threads_wait() {
    let line = |env: &[(&str, &str)]| {
        let env: Vec<(&str, &std::ffi::OsStr)> = env
            .iter()
            .map(|(name, value)| (*name, value.as_ref()))
            .collect();
        let (_, stdout) = doctor(&env);
        stdout
            .lines()
            .find(|l| l.starts_with("ok      embedded model: "))
            .map(str::to_owned)
            .unwrap_or(stdout)
    };
    let default = line(&[]);
    assert!(
        default.ends_with("which spin 1000 times before they sleep"),
        "{default}"
    );
    let chosen = line(&[("OMP_WAIT_POLICY", "ACTIVE")]);
    assert!(
        chosen.ends_with("waiting as OMP_WAIT_POLICY=ACTIVE says"),
        "{chosen}"
    );
    let spin = line(&[("GOMP_SPINCOUNT", "20")]);
    assert!(
        spin.ends_with("which spin 20 times before they sleep"),
        "{spin}"
    );
}

/// In a repository under the home directory (`~/src/app`), `doctor` runs a confined command
/// where reviews put their task trees: the sandbox hides the home directory, and must still
/// mount a workspace inside it.
#[test]
fn doctor_checks_the_sandbox_in_a_repository_under_home() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("src/app");
    std::fs::create_dir_all(&repo).unwrap();
    bugloop_testkit::git(&repo, &["init", "-q", "-b", "main"]);
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .arg("doctor")
        .env("HOME", home.path())
        .current_dir(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let tasks = repo.join(".git/bugloop/tasks");
    assert!(
        stdout.lines().any(|l| l
            == format!(
                "ok      sandbox in this repository: a command runs confined where reviews put \
                 their task trees ({})",
                tasks.display()
            )),
        "{stdout}"
    );
    // Its own workspace is gone after it.
    let left: Vec<_> = std::fs::read_dir(&tasks).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Without the analyzers, `doctor` says where they come from; it does not fail for them.
#[test]
fn doctor_says_how_to_get_a_missing_analyzer() {
    let empty = tempfile::tempdir().unwrap();
    let (_, stdout) = doctor(&[
        ("BUGLOOP_ANALYZERS_DIR", empty.path().as_os_str()),
        ("PATH", "/usr/bin:/bin".as_ref()),
    ]);
    let expected = format!(
        "info    analyzer ruff: ruff is not installed: not in {} nor on PATH (scripts/setup \
         installs the pinned analyzers; bugloop doctor lists them; BUGLOOP_ANALYZERS_DIR or \
         XDG_DATA_HOME chooses the directory)",
        empty.path().join("bin").display()
    );
    assert!(
        stdout.lines().any(|l| l == expected),
        "{expected}\n{stdout}"
    );
}

/// Ubuntu 24.04's AppArmor in `dir`: a `bwrap` that fails as it makes bwrap fail, and a sysctl
/// file saying unprivileged user namespaces are restricted. Returns a `PATH` that finds that
/// `bwrap` first, and the sysctl file (for `BUGLOOP_USERNS_SYSCTL`).
fn apparmor_refused_bwrap(dir: &std::path::Path) -> (String, std::path::PathBuf) {
    write_program(
        &dir.join("bwrap"),
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    );
    let sysctl = dir.join("apparmor_restrict_unprivileged_userns");
    std::fs::write(&sysctl, "1\n").unwrap();
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap());
    (path, sysctl)
}

/// On Ubuntu 24.04 (GitHub's ubuntu-latest) bwrap fails with "setting up uid map: Permission
/// denied" because AppArmor restricts user namespaces: `doctor` names the cause and the fix (a
/// `bwrap` that fails exactly so stands in here, where there is no AppArmor).
#[test]
fn doctor_names_apparmor_and_the_fix_when_bwrap_is_refused_namespaces() {
    let fake = tempfile::tempdir().unwrap();
    let (path, sysctl) = apparmor_refused_bwrap(fake.path());
    let (code, stdout) = doctor(&[
        ("PATH", path.as_ref()),
        ("BUGLOOP_USERNS_SYSCTL", sysctl.as_os_str()),
    ]);
    assert_eq!(code, Some(1), "{stdout}");
    let sandbox = stdout
        .lines()
        .find(|l| l.starts_with("FAIL    sandbox:"))
        .unwrap_or_else(|| panic!("{stdout}"));
    for said in [
        "setting up uid map: Permission denied",
        "AppArmor restricts unprivileged user namespaces on this machine",
        "kernel.apparmor_restrict_unprivileged_userns = 1",
        "scripts/action-apparmor",
        "bwrap-userns-restrict",
        "commands will be refused (sandbox.when_unconfined: refuse)",
    ] {
        assert!(sandbox.contains(said), "{said}\n{sandbox}");
    }
}

/// Pull request `number` of the fixture's branch (another one by alice, titled `title`).
fn pull_of_the_branch(fixture: &PullRequestFixture, number: u64, title: String) -> PullSpec {
    PullSpec {
        number,
        title,
        author: "alice".to_owned(),
        base_ref: "main".to_owned(),
        base_sha: fixture.base.clone(),
        head_ref: "feature".to_owned(),
        head_sha: fixture.head.clone(),
        fork: false,
        draft: false,
        diff: Some(fixture.diff_at(&fixture.head)),
    }
}

/// The same error reported twice is one issue counted twice, whatever checkout printed the
/// paths; another error is another issue.
#[test]
fn report_files_an_error_once_and_counts_repeats() {
    let repo = tempfile::tempdir().unwrap();
    git_reproducible(repo.path(), &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(repo.path().join("app")).unwrap();
    std::fs::write(
        repo.path().join("app/models.py"),
        "def last(items):\n    # the last item\n    return items[len(items)]\n",
    )
    .unwrap();
    git_reproducible(repo.path(), &["add", "."]);
    git_reproducible(repo.path(), &["commit", "-qm", "models"]);
    let report = |trace: &str| {
        let output = solve::bugloop(repo.path(), &["report", "--format", "json"], trace);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&output.stdout).unwrap()
    };
    let trace = |root: &str, line: u32| {
        format!(
            "Traceback (most recent call last):\n  File \"{root}/app/models.py\", line {line}, in last\n    return items[len(items)]\nIndexError: list index out of range\n"
        )
    };
    let first = report(&trace("/srv/app", 3));
    assert_eq!(first["filed"], true, "{first}");
    assert_eq!(first["count"], 1, "{first}");
    assert_eq!(first["located"][0]["path"], "app/models.py", "{first}");
    assert_eq!(first["labels"], serde_json::json!(["bug", "bug:autofix"]));
    // Another deployment's checkout, and the line moved by an edit since: the same error.
    let again = report(&trace("/home/ci/build", 4));
    assert_eq!(again["filed"], false, "{again}");
    assert_eq!(again["issue"], first["issue"], "{again}");
    assert_eq!(again["count"], 2, "{again}");
    let other = report(
        "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 3, in last\n    return items[len(items)]\nTypeError: object of type 'NoneType' has no len()\n",
    );
    assert_eq!(other["filed"], true, "{other}");
    assert_ne!(other["issue"], first["issue"], "{other}");
}
