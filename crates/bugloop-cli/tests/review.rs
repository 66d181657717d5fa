//! `bugloop review` and `bugloop findings` as a user runs them: real git repositories built here,
//! a scripted model (`script:` file), every output format checked against its schema, and broken
//! inputs (no commits, detached HEAD, binary, huge and non-UTF-8 files, a damaged store).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

use bugloop_github_sim::fixture::review_lines;
use bugloop_testkit::json::entry_where;
use bugloop_testkit::{TestRepo, assert_contains, assert_starts_with, git};
use serde_json::{Value, json};

#[path = "review/acting.rs"]
mod acting;
#[path = "review/analyzer_tracking.rs"]
mod analyzer_tracking;
#[path = "review/analyzers.rs"]
mod analyzers;
#[path = "review/branch_config.rs"]
mod branch_config;
#[path = "review/broken_importers.rs"]
mod broken_importers;
#[path = "review/context.rs"]
mod context;
#[path = "review/conversation.rs"]
mod conversation;
#[path = "review/hostile.rs"]
mod hostile;
#[path = "review/prove.rs"]
mod prove;
#[path = "review/prove_fix.rs"]
mod prove_fix;
#[path = "review/prove_hostile.rs"]
mod prove_hostile;
#[path = "review/prove_langs.rs"]
mod prove_langs;
#[path = "review/sameness.rs"]
mod sameness;
#[path = "review/setup.rs"]
mod setup;
#[path = "review/small_model.rs"]
mod small_model;
#[path = "review/touched.rs"]
mod touched;

const LIB: &str =
    "pub fn average(v: &[f64]) -> f64 {\n    v.iter().sum::<f64>() / v.len() as f64\n}\n";
const LAST: &str = "\npub fn last(v: &[u8]) -> u8 {\n    v[v.len()]\n}\n";

/// main with lib.rs; the branch `feature` adds `last`, which indexes one past the end (line 6).
fn repo() -> TestRepo {
    repo_adding(LAST)
}

/// main with lib.rs; the branch `feature`, checked out, appends `added` to it.
fn repo_adding(added: &str) -> TestRepo {
    let repo = TestRepo::init("main");
    repo.write("lib.rs", LIB);
    repo.commit("one");
    repo.branch("feature");
    repo.write("lib.rs", &format!("{LIB}{added}"));
    repo.commit("two");
    repo
}

/// [`repo`] with a commit on `feature` adding a file whose name is the bytes `name` (not
/// necessarily UTF-8), holding `text`.
fn repo_with_file_named(name: &[u8], text: &str) -> TestRepo {
    let dir = repo();
    std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), text).unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "odd name"]);
    dir
}

/// A script: the finding in pass 1, then passes 2-4.
fn script(dir: &Path, findings: &[Value]) -> String {
    script_then(dir, findings, Vec::new())
}

/// [`script`], then the answers `then` (of the agents that run after the review's passes).
fn script_then(dir: &Path, findings: &[Value], then: Vec<Value>) -> String {
    let mut lines = review_lines(findings);
    lines.extend(then);
    script_named(dir, "script.jsonl", &lines)
}

/// A `script:` model answering `lines` in order, written to `dir/name` (replacing a script of
/// that name, so that a test can script the same model again).
fn script_named(dir: &Path, name: &str, lines: &[Value]) -> String {
    let path = dir.join(name);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    format!("script:{}", path.display())
}

/// An agent's script in `dir/name`: each of `calls` in a turn of its own, then `summary`.
fn agent_script(dir: &Path, name: &str, calls: &[Value], summary: &str) -> String {
    let mut lines: Vec<Value> = calls.iter().map(|c| json!({"tool_calls": [c]})).collect();
    lines.push(json!({"text": summary}));
    script_named(dir, name, &lines)
}

/// A model with no answers at all, for commands that must not need one.
fn empty_script(dir: &Path) -> String {
    script_named(dir, "empty.jsonl", &[])
}

fn off_by_one() -> Value {
    json!({"file": "lib.rs", "line": 6, "evidence": "v[v.len()]", "title": "Index one past the end",
           "description": "`v[v.len()]` always panics.", "score": 8, "category": "logic",
           "suggestion": "```suggestion\nv[v.len() - 1]\n```"})
}

fn bugloop(dir: &Path, args: &[&str]) -> Output {
    bugloop_with(dir, args, &[])
}

/// [`bugloop`] with `env` set too.
fn bugloop_with(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("BUGLOOP_CONFIG")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// `bugloop review --format json` in `dir` with `model`, which must end well: the report.
fn review_report(dir: &Path, model: &str) -> Value {
    json_output(dir, &["review", "--model", model, "--format", "json"], 0)
}

/// The off-by-one reported by a model, written to a directory of its own (which the caller
/// keeps while it uses the model): the directory and the `--model` value.
fn off_by_one_model() -> (tempfile::TempDir, String) {
    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[off_by_one()]);
    (scripts, model)
}

/// `bugloop args...` in `dir`, which must end with exit status `code`: what it printed, as JSON.
fn json_output(dir: &Path, args: &[&str], code: i32) -> Value {
    let output = bugloop(dir, args);
    assert_exit(&output, code);
    let out = stdout(&output);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{}", stderr(&output)))
}

/// The findings tracked in `dir`, from `bugloop findings --format json`.
fn findings_json(dir: &Path) -> Value {
    json_output(dir, &["findings", "--format", "json"], 0)
}

/// Fails the test unless `output` ended with exit status `code`, showing what it printed.
#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    let (out, err) = (stdout(output), stderr(output));
    assert_eq!(output.status.code(), Some(code), "{out}{err}");
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_format_and_the_fail_on_exit_code() {
    let dir = repo();
    let (_scripts, model) = off_by_one_model();

    let text = bugloop(dir.path(), &["review", "--model", &model, "--fail-on", "8"]);
    assert_exit(&text, 1);
    let shown = stdout(&text);
    assert_contains(&shown, "lib.rs\n");
    assert_contains(&shown, "high 8/10");
    assert_contains(&shown, "│     v[v.len()]");

    // Full re-runs leave one finding; JSON follows the documented schema.
    let report = json_output(
        dir.path(),
        &[
            "review",
            "--full",
            "--model",
            &model,
            "--format",
            "json",
            "--fail-on",
            "9",
        ],
        0,
    );
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/review-report.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    bugloop_testkit::schema::assert_valid(&schema, &report, "the JSON report");
    assert_eq!(report["findings"][0]["action"], "unchanged");
    assert_eq!(report["tracked"].as_array().unwrap().len(), 1);
    // The suggestion was defused: never a committable suggestion.
    assert!(
        report["findings"][0]["suggestion"]
            .as_str()
            .unwrap()
            .starts_with("```text")
    );

    let sarif_run = bugloop(
        dir.path(),
        &["review", "--full", "--model", &model, "--format", "sarif"],
    );
    let sarif: Value = serde_json::from_str(&stdout(&sarif_run)).unwrap();
    bugloop_testkit::sarif::assert_official(&sarif);
    assert_eq!(
        sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"],
        6
    );

    let markdown = bugloop(
        dir.path(),
        &[
            "review", "--full", "--model", &model, "--format", "markdown",
        ],
    );
    let md = stdout(&markdown);
    assert_starts_with(&md, "## bugloop review\n");
    assert_contains(&md, "| 8 | high | `lib.rs:6` | Index one past the end |");

    let list = bugloop(dir.path(), &["findings"]);
    assert_contains(&stdout(&list), "PENDING");
    let show = bugloop(dir.path(), &["findings", "show", "index-one"]);
    let shown = stdout(&show);
    assert_contains(&shown, "PENDING");
    assert_contains(&shown, "### Index one past the end");
    let missing = bugloop(dir.path(), &["findings", "show", "nope"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no finding \"nope\""));
}

#[test]
fn no_change_and_dry_runs() {
    let dir = repo();
    git(dir.path(), &["switch", "-q", "main"]);
    let output = bugloop(dir.path(), &["review", "--model", "script:/nonexistent"]);
    assert_eq!(output.status.code(), Some(0));
    assert_starts_with(&stdout(&output), "Nothing to review");
    // Each format is a document of its kind, for a file to hold.
    for format in ["json", "sarif"] {
        let shown = bugloop(dir.path(), &["review", "--format", format]);
        assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
        let value: Value = serde_json::from_str(&stdout(&shown)).unwrap();
        match format {
            "json" => assert_eq!(value["reviewed"], false, "{value:#}"),
            _ => {
                assert_eq!(value["version"], "2.1.0", "{value:#}");
                assert_eq!(value["runs"][0]["results"], json!([]), "{value:#}");
            }
        }
    }
    let markdown = bugloop(dir.path(), &["review", "--format", "markdown"]);
    assert_starts_with(&stdout(&markdown), "## bugloop review\n\nNothing to review");

    git(dir.path(), &["switch", "-q", "feature"]);
    let (_scripts, model) = off_by_one_model();
    let dry = bugloop(
        dir.path(),
        &["review", "--model", &model, "--dry-run", "--format", "json"],
    );
    let report: Value = serde_json::from_str(&stdout(&dry)).unwrap();
    assert_eq!(report["findings"][0]["action"], "not_published");
    let list = bugloop(dir.path(), &["findings"]);
    assert_starts_with(&stdout(&list), "No findings tracked");
}

#[test]
fn repositories_without_commits_and_detached_heads() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("lib.rs"), format!("{LIB}{LAST}")).unwrap();
    let output = bugloop(dir.path(), &["review", "--model", "script:/nonexistent"]);
    assert_eq!(output.status.code(), Some(2));
    assert_contains(&stderr(&output), "no commits yet");
    let (_scripts, model) = off_by_one_model();
    let report = json_output(
        dir.path(),
        &["review", "--working", "--model", &model, "--format", "json"],
        0,
    );
    assert_eq!(report["findings"][0]["placement"], "line");

    let dir = repo();
    git(dir.path(), &["switch", "-q", "--detach", "HEAD"]);
    let report = review_report(dir.path(), &model);
    assert!(
        report["change"]["key"]
            .as_str()
            .unwrap()
            .starts_with("commit:")
    );
}

/// A model's structured answer that its output limit cut off (the provider says `length`) is
/// not a failed review: its complete findings are kept, grounded and published like any, the
/// report says the answer was cut, and the review is complete. An answer cut before its first
/// finding closed leaves nothing to keep: the review is incomplete and says why.
#[test]
fn an_answer_cut_at_the_output_limit_keeps_its_complete_findings() {
    let dir = repo();
    let scripts = tempfile::tempdir().unwrap();
    let whole = off_by_one().to_string();
    let made_up = json!({"file": "lib.rs", "line": 2, "evidence": "not on that line", "title": "Made up",
                         "description": "Grounding drops it.", "score": 8, "category": "logic"});
    let cut = format!(
        "{{\"findings\": [{whole}, {made_up}, {{\"file\": \"lib.rs\", \"line\": 6, \"evidence\": \"v[v.l"
    );
    let write = |name: &str, answer: &str| {
        let lines = [
            json!({"capabilities": {"tools": false}}),
            json!({"text": answer, "finish": "length"}),
        ];
        script_named(scripts.path(), name, &lines)
    };
    let model = write("cut.jsonl", &cut);
    let args = ["review", "--model", &model, "--format", "json"];
    let report = json_output(dir.path(), &args, 0);
    assert_eq!(report["complete"], true, "{report:#}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["title"], "Index one past the end");
    assert!(
        report["dropped"].to_string().contains("Made up"),
        "the kept entries are grounded like any: {report:#}"
    );
    let passes = report["passes"].to_string();
    assert_contains(&passes, "cut off at its output limit");
    assert_contains(&passes, "the 2 complete entries");
    // Cut before anything closed: nothing to keep, a clear incomplete review (no parse error
    // shown as if the model had answered badly).
    let dir = repo();
    let model = write("early.jsonl", "{\"findings\": [{\"file\": \"li");
    let args = ["review", "--model", &model, "--format", "json"];
    let report = json_output(dir.path(), &args, 3);
    assert_eq!(report["complete"], false);
    assert!(
        !report["errors"].as_array().unwrap().is_empty(),
        "{report:#}"
    );
}

#[test]
fn binary_huge_and_non_utf8_files_are_reviewed_or_listed() {
    let dir = repo();
    std::fs::write(
        dir.path().join("logo.png"),
        [0x89, b'P', b'N', b'G', 0, 0, 1, 2, 0, 3],
    )
    .unwrap();
    let huge: String = (0..120_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("huge.txt"), huge).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.rs");
    std::fs::write(dir.path().join(odd), "fn odd() {}\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "assets"]);
    let (_scripts, model) = off_by_one_model();
    let output = bugloop(
        dir.path(),
        &["review", "--model", &model, "--format", "json"],
    );
    // The script serves one session; the huge file needs more, so the rest is listed, not lost.
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["change"]["files"], 4);
    let unreviewed = report["unreviewed"].to_string();
    assert_contains(&unreviewed, "logo.png");
    assert_contains(&unreviewed, "binary");
    assert_contains(&unreviewed, "huge.txt");
    assert_eq!(report["findings"][0]["finding"], Value::Null);
    assert_eq!(report["findings"][0]["file"], "lib.rs");
    assert_eq!(output.status.code(), Some(3), "incomplete reviews say so");
}

#[test]
fn a_file_whose_name_is_not_utf8_carries_a_finding() {
    // git's quoted form names the bytes `bad\xff.py` exactly; U+FFFD would name no file.
    let shown_name = r#""bad\377.py""#;
    let dir = repo_with_file_named(
        b"bad\xff.py",
        "def first(items):\n    return items[len(items)]\n",
    );
    let scripts = tempfile::tempdir().unwrap();
    let finding = json!({"file": shown_name, "line": 2, "evidence": "return items[len(items)]",
        "title": "Index past the end", "description": "`items[len(items)]` always raises IndexError.",
        "score": 8, "category": "logic"});
    let model = script(scripts.path(), &[finding]);
    let report = review_report(dir.path(), &model);
    assert_eq!(report["dropped"], json!([]), "{report:#}");
    // No analyzer can be given such a name: said, not a silent way past them.
    assert_eq!(
        report["unreviewed"],
        json!([{"path": shown_name, "reason": "its name is not UTF-8: no analyzer could be given it"}]),
        "{report:#}"
    );
    let published = &report["findings"][0];
    assert_eq!(published["file"], shown_name, "{report:#}");
    assert_eq!(published["line"], 2);
    assert_eq!(published["placement"], "line");
    assert_eq!(published["action"], "added");
    // The model was shown the name it has to report.
    let runs = walk(&dir.path().join(".git/bugloop/runs"));
    let transcripts: String = runs
        .iter()
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let in_json = serde_json::to_string(shown_name).unwrap();
    assert!(
        transcripts.contains(&in_json[1..in_json.len() - 1]),
        "the prompt does not name {shown_name}"
    );

    let list = stdout(&bugloop(dir.path(), &["findings"]));
    assert_contains(&list, shown_name);
    assert_contains(&list, "PENDING");
    let id = published["id"].as_str().unwrap();
    let show = stdout(&bugloop(dir.path(), &["findings", "show", id]));
    assert_contains(&show, shown_name);
    // Found again on the next full run: the same comment, not a second one.
    let again = bugloop(
        dir.path(),
        &["review", "--full", "--model", &model, "--format", "json"],
    );
    let report: Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(report["findings"][0]["action"], "unchanged", "{report:#}");
}

/// A Latin-1 name (`caf\xe9.txt`) round-trips from the diff to the model and back, whichever
/// way the model writes it: as the diff shows it, without the quotes, or decoded as Latin-1.
#[test]
fn a_latin1_file_name_keeps_its_finding_however_the_model_writes_it() {
    let dir = repo_with_file_named(b"caf\xe9.txt", "user = admin\npassword = hunter2\n");
    let scripts = tempfile::tempdir().unwrap();
    for written in [r#""caf\351.txt""#, r"caf\351.txt", "café.txt"] {
        let finding = json!({"file": written, "line": 2, "evidence": "password = hunter2",
            "title": "Password committed", "description": "The password is in the repository.",
            "score": 8, "category": "security"});
        let model = script(scripts.path(), &[finding]);
        let report = json_output(
            dir.path(),
            &["review", "--full", "--model", &model, "--format", "json"],
            0,
        );
        assert_eq!(report["dropped"], json!([]), "{written}: {report:#}");
        let published = entry_where(&report["findings"], "title", "Password committed");
        assert_eq!(published["file"], r#""caf\351.txt""#, "{written}");
        assert_eq!(published["placement"], "line", "{written}");
    }
    // One finding, however often it was reported.
    let list = stdout(&bugloop(dir.path(), &["findings"]));
    assert_eq!(list.matches("caf\\351.txt").count(), 1, "{list}");
}

#[test]
fn a_damaged_store_is_reported_and_can_be_reset() {
    let dir = repo();
    let store = dir.path().join(".git/bugloop/store.db");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, "garbage ".repeat(1000)).unwrap();
    let (_scripts, model) = off_by_one_model();
    let output = bugloop(dir.path(), &["review", "--model", &model]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert_contains(&message, "store.db");
    assert_contains(&message, "bugloop store reset");
    let reset = bugloop(dir.path(), &["store", "reset"]);
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    let again = bugloop(dir.path(), &["review", "--model", &model]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let kept: Vec<_> = std::fs::read_dir(store.parent().unwrap())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("damaged"))
        .collect();
    assert_eq!(kept.len(), 1, "the damaged file is kept for recovery");
}

/// [`repo`] with the off-by-one finding published on `feature`: the repository, the directory
/// of the scripts and the finding's id.
fn reviewed() -> (TestRepo, tempfile::TempDir, String) {
    let dir = repo();
    let (scripts, model) = off_by_one_model();
    let report = review_report(dir.path(), &model);
    let id = report["findings"][0]["id"].as_str().unwrap().to_owned();
    (dir, scripts, id)
}

fn build_script(dir: &Path, calls: &[Value]) -> String {
    agent_script(dir, "build.jsonl", calls, "Done.")
}

fn user_view(dir: &Path) -> Vec<String> {
    let git = |args: &[&str]| {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    vec![
        git(&["rev-parse", "--abbrev-ref", "HEAD"]),
        git(&["rev-parse", "HEAD"]),
        git(&["diff", "--cached"]),
        git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read_to_string(dir.join("lib.rs")).unwrap(),
    ]
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// `--staged` reviews the index, not the working tree: the finding's line is grounded in the
/// staged text even though the file on disk says something else there now.
#[test]
fn staged_changes_are_reviewed_as_staged() {
    let dir = repo();
    git(dir.path(), &["switch", "-q", "main"]);
    std::fs::write(dir.path().join("lib.rs"), format!("{LIB}{LAST}")).unwrap();
    git(dir.path(), &["add", "lib.rs"]);
    // Not staged: line 6 is different on disk.
    let on_disk = format!("{LIB}\npub fn last(v: &[u8]) -> u8 {{\n    v[0]\n}}\n");
    std::fs::write(dir.path().join("lib.rs"), &on_disk).unwrap();
    let (_scripts, model) = off_by_one_model();
    let report = json_output(
        dir.path(),
        &["review", "--staged", "--model", &model, "--format", "json"],
        0,
    );
    assert_eq!(report["change"]["head"], "index", "{report:#}");
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(report["findings"][0]["line"], 6);
    // The user's files and index are as they were.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib.rs")).unwrap(),
        on_disk
    );
    assert_eq!(
        git(dir.path(), &["diff", "--cached", "--name-only"]),
        "lib.rs"
    );
}

/// `--base main --head feature` while `main` is checked out: the review runs on a task tree of
/// `feature`'s commit (the finding is grounded in code that is not on disk), and the user's
/// branch, tree and index are untouched.
#[test]
fn a_branch_that_is_not_checked_out_is_reviewed_in_a_task_tree() {
    let dir = repo();
    git(dir.path(), &["switch", "-q", "main"]);
    let before = user_view(dir.path());
    let (_scripts, model) = off_by_one_model();
    let report = json_output(
        dir.path(),
        &[
            "review", "--base", "main", "--head", "feature", "--model", &model, "--format", "json",
        ],
        0,
    );
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(report["findings"][0]["file"], "lib.rs");
    assert_eq!(user_view(dir.path()), before);
    // No task tree is left behind.
    let tasks = dir.path().join(".git/bugloop/tasks");
    let left: Vec<_> = std::fs::read_dir(&tasks)
        .map(|entries| entries.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Models send `end_line: 0` (or a line before `line`) for "no end line": the finding is
/// published, without an end line.
#[test]
fn an_end_line_of_zero_publishes() {
    let dir = repo();
    let scripts = tempfile::tempdir().unwrap();
    let mut finding = off_by_one();
    finding["end_line"] = json!(0);
    let model = script(scripts.path(), &[finding]);
    let report = review_report(dir.path(), &model);
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        1,
        "{report:#}"
    );
    assert_eq!(report["findings"][0]["action"], "added");
    assert_eq!(report["findings"][0]["line"], 6);
    assert!(
        report["findings"][0].get("end_line").is_none(),
        "{report:#}"
    );
}

/// What `bugloop comment` did is in its exit status: an unknown `--reply-to` stores nothing (2);
/// a question the model cannot answer leaves the comment stored (3, and says so); a fix that
/// commits nothing is 1; an acknowledgement is 0.
#[test]
fn comment_exit_codes_say_what_happened() {
    let (dir, scripts, id) = reviewed();
    let model = empty_script(scripts.path());
    let comments = |dir: &Path| stdout(&bugloop(dir, &["findings", "show", &id]));

    let unknown = bugloop(
        dir.path(),
        &[
            "comment",
            "why?",
            "--reply-to",
            "no-such-finding",
            "--model",
            &model,
        ],
    );
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    let before = comments(dir.path());

    let question = "why does last index at len?";
    let failed = bugloop(
        dir.path(),
        &["comment", question, "--reply-to", &id, "--model", &model],
    );
    assert_eq!(failed.status.code(), Some(3), "{}", stderr(&failed));
    assert!(
        stderr(&failed).starts_with("error: your comment was stored (comment "),
        "{}",
        stderr(&failed)
    );
    assert_contains(&stderr(&failed), "caused by:");
    let after = comments(dir.path());
    assert!(
        !before.contains(question) && after.contains(question),
        "{after}"
    );

    let not_fixed = bugloop(
        dir.path(),
        &["comment", "fix it", "--reply-to", &id, "--model", &model],
    );
    assert_eq!(not_fixed.status.code(), Some(1), "{}", stderr(&not_fixed));

    let ack = bugloop(dir.path(), &["comment", "lgtm", "--model", &model]);
    assert_eq!(ack.status.code(), Some(0), "{}", stderr(&ack));
}

/// Text from the change and from the model reaches the terminal as text: an escape sequence in a
/// quoted line or a title (set the window title, erase a line, hide what follows) is printed
/// escaped, in every human format and in a finding's page.
#[test]
fn control_sequences_from_a_change_or_a_model_are_printed_escaped() {
    let line = "    v[v.len()] // \x1b]0;owned\x07\x1b[2K\x1b[1A";
    let repo = repo_adding(&format!("\npub fn last(v: &[u8]) -> u8 {{\n{line}\n}}\n"));
    let scripts = tempfile::tempdir().unwrap();
    let mut finding = off_by_one();
    finding["evidence"] = json!(line.trim());
    finding["title"] = json!("Index \x1b[8mhidden\x1b[0m one past the end\r");
    let model = script(scripts.path(), &[finding]);
    for format in ["text", "markdown"] {
        let output = bugloop(
            repo.path(),
            &["review", "--full", "--model", &model, "--format", format],
        );
        let shown = stdout(&output);
        assert!(!shown.contains('\x1b') && !shown.contains('\r'), "{shown}");
        assert_contains(&shown, r"// \u001b]0;owned\u0007\u001b[2K\u001b[1A");
        assert_contains(&shown, r"Index \u001b[8mhidden\u001b[0m one past the end");
    }
    let id = findings_json(repo.path())[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = stdout(&bugloop(repo.path(), &["findings", "show", &id]));
    assert!(!page.contains('\x1b'), "{page}");
    assert_contains(&page, r"\u001b]0;owned");
}
