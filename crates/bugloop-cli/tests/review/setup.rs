//! How bugloop runs where it is set up: commands with no sandbox refused or warned about, and
//! `bench` as built (or left out of) the binary.

use super::*;
use bugloop_testkit::assert_contains;

/// A script whose first pass reports `findings` after the tool `calls`, then passes 2-4.
fn script_with_calls(dir: &Path, calls: &[Value], findings: &[Value]) -> String {
    let model = script(dir, findings);
    let path = dir.join("script.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if !calls.is_empty() {
        let first: Vec<Value> = calls
            .iter()
            .map(|c| json!({"name": c["name"], "arguments": c["arguments"]}))
            .collect();
        lines.insert(0, json!({"tool_calls": first}).to_string());
    }
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    model
}

/// A PATH with git but no bubblewrap: the sandbox cannot confine. With
/// `sandbox.when_unconfined: refuse` (the default) the agent's `git` command is not run and the
/// review says why (incomplete, exit 3); with `warn` it runs unconfined, with a warning.
#[test]
fn when_unconfined_refuses_or_warns() {
    let dir = repo();
    let scripts = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let real_git = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::os::unix::fs::symlink(real_git.trim(), bin.path().join("git")).unwrap();
    let review = |when: &str| {
        let model = script_with_calls(
            scripts.path(),
            &[json!({"name": "git", "arguments": {"command": "log", "args": ["--oneline"]}})],
            &[off_by_one()],
        );
        Command::new(env!("CARGO_BIN_EXE_bugloop"))
            .args(["review", "--model", &model, "--format", "json", "--dry-run"])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("PATH", bin.path())
            .env("BUGLOOP_SANDBOX__WHEN_UNCONFINED", when)
            .env_remove("BUGLOOP_CONFIG")
            .output()
            .unwrap()
    };
    let refused = review("refuse");
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    let report: Value = serde_json::from_str(&stdout(&refused)).unwrap();
    assert_eq!(report["complete"], false);
    let errors = report["errors"].to_string();
    assert_contains(&errors, "when_unconfined");

    let warned = review("warn");
    assert_eq!(warned.status.code(), Some(0), "{}", stderr(&warned));
    let report: Value = serde_json::from_str(&stdout(&warned)).unwrap();
    assert_eq!(report["complete"], true, "{report:#}");
    assert_eq!(report["findings"].as_array().unwrap().len(), 1);
    assert_contains(
        &stderr(&warned),
        "commands will run UNCONFINED (sandbox.when_unconfined: warn)",
    );
    assert!(
        !stderr(&refused).contains("UNCONFINED"),
        "{}",
        stderr(&refused)
    );
}

/// A build without the feature `bench` (a release build) says how to get the benchmarks.
#[cfg(not(feature = "bench"))]
#[test]
fn bench_says_how_to_build_it_when_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["bench", "review", "--files", "1"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert_contains(&said, "--features bench");
}

/// `bench review` runs a review as `bugloop review` would: a tool-calling model through the four
/// passes and the configured budgets. With the default budgets the synthetic change is reviewed
/// completely; with two turns it stops where a real review would.
#[cfg(feature = "bench")]
#[test]
fn bench_review_uses_the_budgets_and_tools_of_a_real_review() {
    let dir = tempfile::tempdir().unwrap();
    let bench = |turns: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bugloop"));
        command
            .args([
                "bench", "review", "--files", "4", "--lines", "40", "--format", "json",
            ])
            .current_dir(dir.path())
            .env_remove("BUGLOOP_CONFIG");
        if let Some(turns) = turns {
            command.env("BUGLOOP_BUDGETS__MAX_TURNS", turns);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        serde_json::from_str::<Value>(&stdout(&output)).unwrap()
    };
    let full = bench(None);
    let sessions = full["sessions"].as_u64().unwrap();
    assert!(sessions >= 1, "{full:#}");
    // Four passes a session, each a tool call of the model.
    assert_eq!(
        full["model_calls"].as_u64().unwrap(),
        4 * sessions,
        "{full:#}"
    );
    assert_eq!(full["complete"], true, "{full:#}");
    assert!(
        full["findings_in_report"].as_u64().unwrap() >= 1,
        "{full:#}"
    );

    let stopped = bench(Some("2"));
    assert_eq!(stopped["model_calls"], 2, "{stopped:#}");
    assert_eq!(stopped["complete"], false, "{stopped:#}");
    assert!(
        stopped["errors"]
            .to_string()
            .contains("limit of 2 model turns"),
        "{stopped:#}"
    );
}

/// A HOME this user cannot enter (root's, as `sudo -E` or `setpriv` leave it; here a directory
/// of root's as uid 65534, or one with no permissions): its default configuration file is not
/// there for them, and commands work as with no HOME at all. A configuration path that never
/// ends (`/dev/zero`) is refused by its size, not read to the end.
#[test]
fn an_unreachable_home_and_an_endless_configuration_file() {
    use bugloop_testkit::users::{NOBODY, chown_all, command_as, is_root, program_for};
    use std::os::unix::fs::PermissionsExt;
    let dir = repo();
    let user = is_root().then_some(NOBODY);
    let temp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(temp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = temp.path().join("home");
    std::fs::create_dir_all(home.join(".config/bugloop")).unwrap();
    let closed = if user.is_some() { 0o700 } else { 0o000 };
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(closed)).unwrap();
    if let Some(uid) = user {
        chown_all(dir.path(), uid);
    }
    let program = program_for(user, Path::new(env!("CARGO_BIN_EXE_bugloop")), temp.path());
    let output = command_as(user, program)
        .arg("findings")
        .current_dir(dir.path())
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("BUGLOOP_CONFIG")
        .output()
        .unwrap();
    std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_exit(&output, 0);

    let endless = bugloop(dir.path(), &["--config", "/dev/zero", "config", "check"]);
    let said = format!("{}{}", stdout(&endless), stderr(&endless));
    assert_eq!(endless.status.code(), Some(1), "{said}");
    assert_contains(&said, "more than 1024 KiB of text");
}

/// With HOME unset (`env -i`, some cron and CI jobs) the embedded model is not looked up under
/// the current directory, where a branch could ship the model that reviews it: the error says
/// what to set, once.
#[test]
fn no_home_means_no_model_directory_inside_the_repository() {
    let said = review_with_a_model_of_the_branchs(".local/share/bugloop/models", |command| {
        command.env_remove("HOME").env_remove("XDG_DATA_HOME");
    });
    assert!(
        said.contains("no model directory (HOME is not set"),
        "{said}"
    );
    assert!(!said.contains("caused by"), "said once: {said}");
}

/// A relative `BUGLOOP_MODEL_DIR` would be read from the working directory, the tree under
/// review: it is refused, and the branch's model file is never loaded.
#[test]
fn a_relative_model_directory_is_refused() {
    let said = review_with_a_model_of_the_branchs("models", |command| {
        command.env("BUGLOOP_MODEL_DIR", "models");
    });
    assert_contains(&said, "the model directory models is relative");
}

/// A review (dry run) of a repository whose branch ships a file named as the default model in
/// `dir`, with `environment` applied: what it said, after it failed as a usage error.
fn review_with_a_model_of_the_branchs(dir: &str, environment: impl Fn(&mut Command)) -> String {
    let repo = repo();
    repo.write(
        &format!("{dir}/SmolLM2-135M-Instruct.Q4_1.gguf"),
        "not a model, the branch's own",
    );
    repo.commit("a model of the branch's");
    let mut command = Command::new(env!("CARGO_BIN_EXE_bugloop"));
    command
        .args(["review", "--dry-run"])
        .current_dir(repo.path())
        .env_remove("BUGLOOP_CONFIG")
        .env_remove("BUGLOOP_MODEL");
    environment(&mut command);
    let output = command.output().unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    said
}

/// Ctrl-C while a review waits on its model: the command says it stopped and what stays, and
/// ends with 130, as an interrupted command does; what it held on disk (its task tree, the
/// sandbox's copy of /etc) goes right after, not at the next run.
#[test]
fn ctrl_c_during_a_review_says_it_stopped() {
    let repo = TestRepo::init("main");
    repo.write("app.py", "x = 1\n");
    repo.commit("app");
    repo.branch("feature");
    repo.write("app.py", "x = 2\n");
    repo.commit("change");
    // A model that takes the request and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let config = repo.path().join("..").join(format!("stub-{port}.yml"));
    std::fs::write(
        &config,
        format!("model:\n  max_retries: 0\n  providers:\n    stub:\n      base_url: http://127.0.0.1:{port}/v1\nreview:\n  analyzers: []\n"),
    )
    .unwrap();
    let temporary = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args([
            "--config",
            config.to_str().unwrap(),
            "review",
            "--model",
            "stub:any",
        ])
        .current_dir(repo.path())
        .env("NO_COLOR", "1")
        .env("TMPDIR", temporary.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (_waiting, _) = listener.accept().unwrap();
    let tasks = repo.path().join(".git/bugloop/tasks");
    let held = || {
        [tasks.as_path(), temporary.path()]
            .iter()
            .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
            .map(|entry| entry.path())
            .collect::<Vec<_>>()
    };
    assert!(!held().is_empty(), "the review holds nothing to leave");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{said}");
    assert_contains(
        &said,
        "interrupted: `bugloop review` stopped. What it had finished stays",
    );
    let gone_by = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !held().is_empty() && std::time::Instant::now() < gone_by {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        held(),
        Vec::<std::path::PathBuf>::new(),
        "left after Ctrl-C"
    );
    std::fs::remove_file(config).unwrap();
}

/// With `sandbox.when_unconfined: warn`, a command runs as bugloop's own user: it must still not
/// read bugloop's environment (the model's key, the tokens) in /proc. Run as an ordinary user
/// (uid 65534 when the test is root: a command run as root reads anything).
#[test]
fn an_unconfined_command_cannot_read_bugloops_environment() {
    use bugloop_testkit::users::{NOBODY, chown_all, command_as, is_root, program_for};
    use std::os::unix::fs::PermissionsExt;
    let user = is_root().then_some(NOBODY);
    let place = tempfile::tempdir().unwrap();
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (home, bin, repo) = (
        place.path().join("home"),
        place.path().join("bin"),
        place.path().join("repo"),
    );
    for dir in [&home, &bin, &repo] {
        std::fs::create_dir(dir).unwrap();
    }
    // No bubblewrap on the PATH: commands run unconfined (`setpriv` starts bugloop as the user).
    for tool in ["git", "sh", "tr", "awk", "grep", "cat", "setpriv"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .unwrap();
        let path = String::from_utf8(found.stdout).unwrap();
        std::os::unix::fs::symlink(path.trim(), bin.join(tool)).unwrap();
    }
    git(&repo, &["init", "-q", "-b", "main"]);
    let probe = "echo probed; p=$$; while [ \"$p\" -gt 1 ]; do \
                 tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep CANARY; \
                 p=$(awk '{print $4}' /proc/$p/stat); done\n";
    std::fs::write(repo.join("probe.sh"), probe).unwrap();
    git(&repo, &["add", "."]);
    git(
        &repo,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "probe",
        ],
    );
    let mut lines = vec![
        json!({"tool_calls": [{"name": "run", "arguments": {"program": "sh", "args": ["probe.sh"]}}]}),
    ];
    lines.extend(std::iter::repeat_n(json!({"text": "Done."}), 6));
    let model = script_named(&home, "probe.jsonl", &lines);
    if let Some(uid) = user {
        chown_all(&home, uid);
        chown_all(&repo, uid);
    }
    let program = program_for(user, Path::new(env!("CARGO_BIN_EXE_bugloop")), place.path());
    let output = command_as(user, program)
        .args(["do", "look around", "--model", &model])
        .current_dir(&repo)
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", &home)
        .env("NO_COLOR", "1")
        .env("BUGLOOP_SANDBOX__WHEN_UNCONFINED", "warn")
        .env("OPENAI_API_KEY", "CANARY-key-4711")
        .output()
        .unwrap();
    assert_contains(&stderr(&output), "UNCONFINED");
    // What the command printed is in the run's transcript: it ran, and read no canary.
    let mut said = format!("{}{}", stdout(&output), stderr(&output));
    let runs = repo.join(".git/bugloop/runs");
    for entry in std::fs::read_dir(&runs).unwrap() {
        said.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
    }
    assert_contains(&said, "probed");
    assert!(!said.contains("CANARY-key-4711"), "{said}");
}
