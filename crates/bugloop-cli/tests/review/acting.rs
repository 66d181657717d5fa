//! Acting from the command line on a reviewed change: fixes that never leak the environment's
//! secrets or leave the user's tree half-changed, comments, replies and converge, the parallel
//! auditors' rejected findings, and a branch that cannot choose its own commands.

use super::*;
use bugloop_testkit::{assert_contains, assert_starts_with};

#[test]
fn secrets_in_the_environment_reach_no_command() {
    let (dir, scripts, _) = reviewed();
    dir.write(
        ".bugloop/config.yml",
        "fix:\n  verify_commands:\n    - shell: env; exit 1\n",
    );
    dir.commit("config");
    let model = build_script(
        scripts.path(),
        &[
            json!({"name": "run", "arguments": {"program": "env"}}),
            json!({"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}}),
        ],
    );
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        // The branch's own verify commands run only when trusted for the run.
        .args(["fix", "--all", "--trust-branch-config", "--model", &model])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", "sk-test-secret-0451")
        .env("ANTHROPIC_API_KEY", "sk-ant-secret-0451")
        .env("GITHUB_TOKEN", "ghp_secret0451")
        .output()
        .unwrap();
    let shown = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}{}", stderr(&output));
    assert!(
        shown.contains("PATH="),
        "the verify command's environment is shown: {shown}"
    );
    assert!(
        !shown.contains("secret-0451") && !shown.contains("secret0451"),
        "{shown}"
    );
    // Nothing bugloop recorded (transcripts of the agent's `run env`, the store) holds a secret.
    for entry in walk(&dir.path().join(".git/bugloop")) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [
            "sk-test-secret-0451",
            "sk-ant-secret-0451",
            "ghp_secret0451",
        ] {
            assert!(!text.contains(secret), "{} holds a secret", entry.display());
        }
    }
    let transcripts: String = walk(&dir.path().join(".git/bugloop/runs"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    assert!(transcripts.contains("PATH="), "the agent's `run env` ran");
}

#[test]
fn a_fix_killed_mid_run_leaves_the_user_tree_as_it_was() {
    let (dir, scripts, _) = reviewed();
    dir.write(
        ".bugloop/config.yml",
        "fix:\n  verify_commands: [sleep 30]\n",
    );
    dir.commit("config");
    let before = user_view(dir.path());
    let model = build_script(
        scripts.path(),
        &[
            json!({"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}}),
        ],
    );
    let mut child = start(
        dir.path(),
        &["fix", "--all", "--trust-branch-config", "--model", &model],
    );
    // Wait until the agent's edit is in the worktree (the verify command is running then).
    let worktrees = dir.path().join(".git/bugloop/tasks");
    wait_until(30_000, 50, "the fix never started", || {
        walk(&worktrees).iter().any(|p| {
            p.ends_with("lib.rs")
                && std::fs::read_to_string(p).is_ok_and(|t| t.contains("v.len() - 1"))
        })
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(user_view(dir.path()), before);
    // The next run clears what the killed one left and works normally.
    let model = build_script(scripts.path(), &[]);
    let output = bugloop(dir.path(), &["fix", "--all", "--model", &model]);
    assert!(
        stdout(&output).contains("the agent changed nothing"),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert_eq!(user_view(dir.path()), before);
    // The killed run's task tree is gone (removed by the next run), and so is the next run's own.
    assert_eq!(walk(&worktrees), Vec::<std::path::PathBuf>::new());
}

/// Starts `bugloop args...` in `dir`, its output dropped: a run the test waits for or kills.
fn start(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Checks `done` every `every_ms` until it holds; the test fails, saying `never`, once
/// `limit_ms` have passed.
#[track_caller]
fn wait_until(limit_ms: u64, every_ms: u64, never: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(limit_ms);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{never}");
        std::thread::sleep(std::time::Duration::from_millis(every_ms));
    }
}

/// The scripted model `model` (`script:<path>`) made to take `ms` for every answer.
fn slowed(model: &str, ms: u64) {
    let path = model.trim_start_matches("script:");
    let slow = format!(
        "{}\n{}",
        json!({"capabilities": {"latency_ms": ms}}),
        std::fs::read_to_string(path).unwrap()
    );
    std::fs::write(path, slow).unwrap();
}

/// `bugloop converge` killed (SIGKILL) while auditing after its first loop's fix: the user's
/// branch is as it was, and the next run goes on from the fix: it only audits (its script has
/// no fix in it) and lands the fix.
#[test]
fn a_converge_killed_after_a_fix_goes_on_from_it() {
    let dir = repo();
    let scripts = tempfile::tempdir().unwrap();
    let before = user_view(dir.path());
    let fix = json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}}]});
    let model = script_then(
        scripts.path(),
        &[off_by_one()],
        vec![fix, json!({"text": "Done."})],
    );
    // Every answer takes a while, as a hosted model's does: the kill comes mid-request.
    slowed(&model, 300);
    let mut child = start(dir.path(), &["converge", "--model", &model]);
    // Wait until the fix is committed in the task tree and noted for a rerun.
    let runs = dir.path().join(".git/bugloop/runs");
    wait_until(60_000, 20, "no fix was noted", || {
        let noted = walk(&runs).iter().any(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("converge-"))
                && std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"working\""))
        });
        if !noted {
            assert!(
                child.try_wait().unwrap().is_none(),
                "it ended before the fix"
            );
        }
        noted
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(user_view(dir.path()), before);

    let model = script(scripts.path(), &[]);
    let output = bugloop(dir.path(), &["converge", "--model", &model]);
    let shown = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}{}", stderr(&output));
    assert_contains(&shown, "Went on from ");
    // The killed run's loops are the rerun's too: its fix is in the log and the description.
    assert_contains(&shown, "fix: ");
    let description = dir.git(&["config", "branch.feature.description"]);
    assert_contains(&description, "| fix |");
    assert!(dir.read("lib.rs").contains("v[v.len() - 1]"));
    assert_eq!(dir.git(&["status", "--porcelain"]), "");
}

/// A branch renamed after its review has no conversation under its new name: `findings` says
/// where the old one is, and reads it by that name.
#[test]
fn a_renamed_branch_is_pointed_at_its_old_conversation() {
    let (dir, _scripts, id) = reviewed();
    dir.git(&["branch", "-m", "feature", "feature-renamed"]);
    let listed = stdout(&bugloop(dir.path(), &["findings"]));
    assert_eq!(
        listed,
        "No findings tracked for branch:feature-renamed.\nConversations of branches that no \
         longer exist: branch:feature. If this branch was renamed, `bugloop findings --change \
         branch:feature` reads its findings (and `git branch -m` back to the old name has them \
         followed again).\n"
    );
    let old = stdout(&bugloop(
        dir.path(),
        &["findings", "--change", "branch:feature"],
    ));
    assert_contains(&old, &id);
}

/// Runs `first` until it holds the conversation's lease (its process named in the lease
/// file), then `second`, which must be refused for it; then `first` to its end, which must
/// succeed. What `second` said.
fn refused_while_held(dir: &Path, first: &[&str], second: &[&str]) -> String {
    let running = start(dir, first);
    let holder = format!("process {} ", running.id());
    let lock = dir.join(".git/bugloop");
    wait_until(30_000, 10, &format!("{first:?} took no lease"), || {
        walk(&lock).iter().any(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("review-"))
                && std::fs::read_to_string(p).is_ok_and(|held| held.starts_with(&holder))
        })
    });
    let refused = bugloop(dir, second);
    let first = running.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "the first ran");
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert_contains(&stderr(&refused), "is held by another run");
    stderr(&refused)
}

/// Two `reply --now` on one finding at once: the second is refused while the first weighs
/// (nothing of it is stored), so the thread gets one answer.
#[test]
fn two_weighings_at_once_answer_once() {
    let (dir, scripts, id) = reviewed();
    let maintain = json!({"decision": "maintain", "reasoning": "It panics."}).to_string();
    let model = script_named(
        scripts.path(),
        "dispute.jsonl",
        &[json!({"text": maintain})],
    );
    slowed(&model, 1_000);
    let said = refused_while_held(
        dir.path(),
        &["reply", &id, "never empty", "--now", "--model", &model],
        &[
            "reply",
            &id,
            "still never empty",
            "--now",
            "--model",
            &model,
        ],
    );
    assert_contains(
        &said,
        "the conversation of branch:feature is held by another run",
    );
    let shown = stdout(&bugloop(dir.path(), &["findings", "show", &id]));
    assert_eq!(shown.matches("It panics.").count(), 1, "{shown}");
    assert!(!shown.contains("still never empty"), "{shown}");
}

/// Two publishing reviews of one branch at once: the second is refused while the first runs
/// (it names who holds the change), and the branch has its finding once.
#[test]
fn two_reviews_at_once_publish_each_finding_once() {
    let dir = repo();
    let (_scripts, model) = off_by_one_model();
    slowed(&model, 500);
    // The first holds its lease from before its first model call, which takes half a second.
    let review = ["review", "--model", model.as_str()];
    refused_while_held(dir.path(), &review, &review);
    let listed = stdout(&bugloop(dir.path(), &["findings"]));
    assert_eq!(listed.matches("PENDING").count(), 1, "{listed}");
}

#[test]
fn comments_replies_and_converge_from_the_command_line() {
    let (dir, scripts, id) = reviewed();

    // A clear acknowledgement needs no model call (the script has no answers).
    let model = empty_script(scripts.path());
    let ack = bugloop(dir.path(), &["comment", "lgtm", "--model", &model]);
    assert_eq!(ack.status.code(), Some(0), "{}", stderr(&ack));
    assert_eq!(stdout(&ack), "nothing to do\n");

    let maintain = json!({"decision": "maintain", "reasoning": "Indexing at len() always panics."});
    let model = script_named(
        scripts.path(),
        "dispute.jsonl",
        &[json!({"text": maintain.to_string()})],
    );
    let reply = bugloop(
        dir.path(),
        &[
            "reply",
            &id[..10],
            "the slice is never empty",
            "--now",
            "--model",
            &model,
        ],
    );
    assert_eq!(reply.status.code(), Some(0), "{}", stderr(&reply));
    assert_contains(&stdout(&reply), "maintained (DISPUTED)");
    let list = bugloop(dir.path(), &["findings"]);
    assert_contains(&stdout(&list), "DISPUTED");
    let show = bugloop(dir.path(), &["findings", "show", &id]);
    assert_contains(&stdout(&show), "the slice is never empty");

    // Conceded on a second word; a reply after that is kept, and said to be answered by nothing.
    let concede = json!({"decision": "concede", "reasoning": "Callers check it."});
    let model = script_named(
        scripts.path(),
        "dispute.jsonl",
        &[json!({"text": concede.to_string()})],
    );
    let said = [
        "reply",
        &id,
        "callers check the length first",
        "--now",
        "--model",
        &model,
    ];
    let conceded = bugloop(dir.path(), &said);
    assert_contains(&stdout(&conceded), "(RESOLVED)");
    let late = bugloop(dir.path(), &["reply", &id, "actually, keep it open"]);
    assert_eq!(late.status.code(), Some(0), "{}", stderr(&late));
    assert_eq!(
        stdout(&late),
        format!(
            "Reply added. {id} is resolved, so nothing answers it: a review and `bugloop reply \
             --now` weigh replies to open findings only.\n"
        )
    );

    // What a fix request names is read before a model is connected: a model that cannot be
    // used does not hide a typo, nor a finding already resolved.
    let broken = "local:/nonexistent/model.gguf";
    let typo = bugloop(dir.path(), &["fix", "no-such-finding", "--model", broken]);
    assert_eq!(typo.status.code(), Some(2), "{}", stderr(&typo));
    assert_contains(&stderr(&typo), "\"no-such-finding\" is not an open finding");
    let resolved = bugloop(dir.path(), &["fix", &id, "--model", broken]);
    assert_eq!(resolved.status.code(), Some(0), "{}", stderr(&resolved));
    assert_starts_with(
        &stdout(&resolved),
        &format!("nothing to fix: {id} is already resolved"),
    );

    // Converge: a clean audit on the first loop.
    let model = script(scripts.path(), &[]);
    let converged = bugloop(dir.path(), &["converge", "--model", &model]);
    assert_exit(&converged, 0);
    assert_starts_with(
        &stdout(&converged),
        "bugloop converge exit: converged\nLoops: 1\n",
    );
}

/// An audit answered only to the auditor whose focus heading is `focus`.
fn audit_lines(focus: &str, findings: &[Value]) -> Vec<Value> {
    let when = format!("## Audit focus: {focus}");
    let mut lines = review_lines(findings);
    for line in &mut lines {
        line["when"] = json!(when);
    }
    lines
}

/// Two auditors at once from the first loop (configured by variables, trusted): the security
/// auditor quotes code that is not there; the loop is clean, and the text and JSON reports say
/// what was quarantined, by whom and why.
#[test]
fn parallel_auditors_rejected_findings_are_in_the_converge_report() {
    let invented = json!({"file": "lib.rs", "line": 6, "evidence": "unsafe { v.get_unchecked(0) }",
        "title": "Unchecked access", "description": "Reads without a bounds check.", "score": 9,
        "category": "security"});
    for format in ["text", "json"] {
        let dir = repo();
        let scripts = tempfile::tempdir().unwrap();
        let mut lines = audit_lines("security", std::slice::from_ref(&invented));
        lines.extend(audit_lines("correctness", &[]));
        let model = script_named(scripts.path(), "auditors.jsonl", &lines);
        let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
            .args(["converge", "--model", &model, "--format", format])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env_remove("BUGLOOP_CONFIG")
            .env("BUGLOOP_CONVERGE__PARALLEL_AUDITORS", "2")
            .env("BUGLOOP_CONVERGE__PARALLEL_FROM_LOOP", "1")
            .output()
            .unwrap();
        assert_exit(&output, 0);
        let out = stdout(&output);
        if format == "text" {
            assert_contains(&out, "1 audit: 0P0 0P1 0P2 (clean) (1 quarantined)\n");
            assert_contains(
                &out,
                "Quarantined (1):\n1 auditor 2 (security): Unchecked access (lib.rs:6): grounding: ",
            );
        } else {
            let report: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(report["exit"], "converged");
            let quarantined = report["quarantined"].as_array().unwrap();
            assert_eq!(quarantined.len(), 1, "{report:#}");
            assert_eq!(quarantined[0]["auditor"], "auditor 2 (security)");
            assert_eq!(quarantined[0]["title"], "Unchecked access");
            assert_eq!(quarantined[0]["loop"], 1);
            assert!(
                quarantined[0]["reason"]
                    .as_str()
                    .unwrap()
                    .starts_with("grounding: "),
                "{report:#}"
            );
        }
    }
}

/// A branch that adds a verify command to `.bugloop/config.yml`: the command is not used (the
/// base has none), `config show` says so, every command warns, and the review publishes one
/// security finding on the file, which `--trust-branch-config` accepts for one run.
#[test]
fn a_branch_cannot_choose_its_own_commands() {
    let dir = repo();
    let scripts = tempfile::tempdir().unwrap();
    dir.write(
        ".bugloop/config.yml",
        "review:\n  threshold: 5\nfix:\n  verify_commands: [touch /tmp/pwned]\n",
    );
    dir.commit("config");
    let warning = "warning: .bugloop/config.yml on this branch sets fix.verify_commands (line 4); \
                   ignored: what runs and where data and money go (commands, the sandbox, models, \
                   budgets, labels) come from trusted configuration (the base commit, your own \
                   config). Run with --trust-branch-config to accept them for this run.\n";

    let shown = bugloop(dir.path(), &["config", "show"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert_eq!(stderr(&shown), warning);
    assert_contains(&stdout(&shown), "  verify_commands: []  # default\n");
    assert_contains(&stdout(&shown), "  threshold: 5  # from ");

    let model = script(scripts.path(), &[]);
    let run = bugloop(
        dir.path(),
        &["review", "--model", &model, "--format", "json"],
    );
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert_starts_with(&stderr(&run), warning);
    let report: Value = serde_json::from_str(&stdout(&run)).unwrap();
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    let finding = &findings[0];
    assert_eq!(
        finding["id"],
        "branch-changes-trusted-bugloop-configuration"
    );
    assert_eq!(
        finding["title"],
        "This branch changes trusted bugloop configuration: fix.verify_commands"
    );
    assert_eq!(finding["file"], ".bugloop/config.yml");
    assert_eq!(finding["line"], 4);
    assert_eq!(finding["score"], 7);
    assert_eq!(finding["category"], "security");
    assert_eq!(finding["placement"], "line");

    let trusted = bugloop(
        dir.path(),
        &[
            "--trust-branch-config",
            "config",
            "show",
            "--format",
            "json",
        ],
    );
    assert_eq!(stderr(&trusted), "");
    let shown: Value = serde_json::from_str(&stdout(&trusted)).unwrap();
    assert_eq!(
        shown["config"]["fix"]["verify_commands"],
        json!(["touch /tmp/pwned"])
    );
}
