//! A small model (the embedded one, or a script with its small context) through the binary: it
//! is asked short questions about the change's code, each answered with at most one finding on a
//! line it was shown, and an answer its output budget cuts off still makes a well-formed review.

use std::path::{Path, PathBuf};
use std::process::Command;

use bugloop_testkit::workspace as root;
use serde_json::{Value, json};

use super::{bugloop, repo, script_named, stderr, stdout};

fn small_script(dir: &Path, answers: &[Value]) -> String {
    let mut lines = vec![
        json!({"capabilities": {"tools": false, "json_schema": true, "context_tokens": 4096}}),
    ];
    lines.extend(answers.iter().map(|a| json!({"text": a.to_string()})));
    script_named(dir, "small.jsonl", &lines)
}

#[test]
fn a_small_model_is_asked_short_questions_about_code_only() {
    let dir = repo();
    dir.write("README.md", "# A library\n\nIt averages.\n");
    dir.write(
        "certs/ca.crt",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
    );
    dir.commit("docs and a key");
    let scripts = tempfile::tempdir().unwrap();
    let bug = json!({"answer": "bug", "findings": [{"file": "lib.rs", "line": 6,
        "title": "Index one past the end", "description": "`v[v.len()]` always panics.",
        "score": 8, "category": "logic"}]});
    let model = small_script(scripts.path(), &[bug]);
    let output = bugloop(
        dir.path(),
        &["review", "--model", &model, "--format", "json"],
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{report:#}\n{}",
        stderr(&output)
    );
    assert_eq!(report["asked"]["kind"], "questions", "{report:#}");
    assert_eq!(report["asked"]["calls"], 1);
    assert_eq!(report["asked"]["files_shown"], 1);
    assert_eq!(
        report["asked"]["left_to_analyzers"],
        json!(["certs/ca.crt", "README.md"])
    );
    assert_eq!(report["unreviewed"], json!([]));
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["file"], "lib.rs");
    assert_eq!(findings[0]["line"], 6);
    // The terminal report says what the model was asked.
    let dir = repo();
    let model = small_script(
        scripts.path(),
        &[json!({"answer": "no bug", "findings": []})],
    );
    let output = bugloop(dir.path(), &["review", "--model", &model]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(
            "the change makes 1 short question(s) for the model about the code of 1 file(s)"
        ),
        "{}",
        stdout(&output)
    );
}

/// The example repository, made by `scripts/example-repo` in a fresh directory: the directory
/// (keep it while the repository is used) and the repository in it.
fn demo() -> (tempfile::TempDir, PathBuf) {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("demo");
    bugloop_testkit::run_ok(
        Command::new(root.join("scripts/example-repo"))
            .arg(root.join("examples/review-demo"))
            .arg(&repo),
    );
    (dir, repo)
}

/// The example reviewed by the embedded model (`BUGLOOP_*` settings from `env`): its JSON
/// report, the run having ended well.
fn reviewed_example(repo: &Path, env: &[(&str, &str)]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(["review", "--format", "json"])
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .env_remove("BUGLOOP_CONFIG")
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&stdout(&output))
        .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&output), stderr(&output)));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{report:#}\n{}",
        stderr(&output)
    );
    assert_eq!(report["complete"], true, "{report:#}");
    // Every finding that survived is grounded in the example's code.
    for finding in report["findings"].as_array().unwrap() {
        assert_eq!(finding["file"], "inventory.py", "{finding:#}");
    }
    report
}

/// The README's main job: the example repository reviewed with the real embedded model
/// (`scripts/test` installs it). Whatever the tiny model finds, the run completes, the report
/// is well-formed, and the two bugs the README says it finds offline are found on evidence:
/// the SQL injection by ruff, the range one past the end by bugloop's own rule.
#[test]
fn the_example_reviewed_by_the_embedded_model() {
    let (_dir, repo) = demo();
    let report = reviewed_example(&repo, &[]);
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/review-report.schema.json")).unwrap(),
    )
    .unwrap();
    bugloop_testkit::schema::assert_valid(&schema, &report, "the JSON report");
    assert_eq!(report["model"], "local:smollm2");
    assert!(report["usage"]["output_tokens"].as_u64().unwrap() > 0);
    let found = |tool: &str, rule: &str| {
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["source"]["tool"] == tool && f["source"]["rule"] == rule)
            .map(|f| (f["line"].as_u64().unwrap(), f["score"].as_u64().unwrap()))
    };
    assert_eq!(found("ruff", "S608"), Some((17, 8)), "{report:#}");
    assert_eq!(
        found("bugloop-python", "BLP001"),
        Some((22, 7)),
        "{report:#}"
    );
}

/// The embedded model with an output budget too small for its answer (16 tokens, the least
/// one may configure): the answer is cut, what it held whole is kept and said, and the review
/// is complete and well-formed; never a parse error.
#[test]
fn the_embedded_model_cut_by_a_tiny_output_budget_still_answers_well_formed() {
    let (_dir, repo) = demo();
    let report = reviewed_example(
        &repo,
        &[("BUGLOOP_REVIEW__MAX_OUTPUT_TOKENS_PER_CALL", "16")],
    );
    assert_eq!(report["asked"]["kind"], "questions");
    assert!(
        report["usage"]["output_tokens"].as_u64().unwrap() <= 16,
        "{report:#}"
    );
    let passes = report["passes"].to_string();
    assert!(passes.contains("cut off at its output limit"), "{report:#}");
    // The analyzers' finding is there whatever the model said in 16 tokens.
    assert!(
        report["findings"].to_string().contains("S608"),
        "{report:#}"
    );
}

/// On a terminal, a review with the embedded model says what it is doing on standard error: the
/// analyzers, each part, the model's tokens and rate; never on standard output, and nothing at
/// all when standard error is not a terminal.
#[test]
fn progress_shows_on_a_terminal_only_and_never_in_the_output() {
    let (dir, repo) = demo();
    let out = dir.path().join("out.json");
    let typed = dir.path().join("terminal.log");
    // `script` gives the run a terminal; standard output goes to a file.
    let command = format!(
        "'{}' review --format json > '{}'",
        env!("CARGO_BIN_EXE_bugloop"),
        out.display()
    );
    let ran = Command::new("script")
        .args(["-qec", &command])
        .arg(&typed)
        .current_dir(&repo)
        .env("NO_COLOR", "1")
        .env_remove("BUGLOOP_CONFIG")
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", stderr(&ran));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["complete"], true);
    let terminal = std::fs::read_to_string(&typed).unwrap();
    for said in [
        "analyzers: ruff on 1 file(s), 1 on the change",
        "part 1/1: reviewing 1 file(s)",
        "token(s) generated, ",
        " tokens/s",
    ] {
        assert!(terminal.contains(said), "{said:?} in {terminal}");
    }
    // Not a terminal: no progress at all.
    let output = bugloop(&repo, &["review", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains('·'), "{}", stderr(&output));
    serde_json::from_str::<Value>(&stdout(&output)).unwrap();
}
