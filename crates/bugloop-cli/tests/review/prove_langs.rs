//! Proofs in other languages' repositories, each in its own test framework and layout, with the
//! toolchains from the machine's system packages (what the sandbox can see): a Rust crate whose
//! integration test panics with an index out of bounds, and a JavaScript package whose
//! `node:test` assertion fails. bugloop runs only the new test, and the fix must make it pass.

use std::path::Path;

use bugloop_testkit::TestRepo;
use serde_json::{Value, json};

use super::prove::script_of;
use super::review_report as review;
use super::{bugloop, stderr, stdout};

struct Language {
    name: &'static str,
    /// The toolchain the test command needs, where the sandbox sees it.
    toolchain: &'static str,
    files: &'static [(&'static str, &'static str)],
    /// The file with the bug, the buggy text and its fix.
    source: (&'static str, &'static str, &'static str),
    test_command: &'static str,
    test: (&'static str, &'static str),
    /// What bugloop's run of the test printed at head, in part.
    failure: &'static str,
}

const RUST: Language = Language {
    name: "Rust",
    toolchain: "/usr/bin/cargo",
    files: &[
        (
            "Cargo.toml",
            "[package]\nname = \"stats\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn mean(xs: &[i64]) -> i64 {\n    let mut total = 0;\n    for i in 0..xs.len() {\n        total += xs[i];\n    }\n    total / xs.len() as i64\n}\n",
        ),
    ],
    source: ("src/lib.rs", "0..xs.len()", "0..=xs.len()"),
    test_command: "cargo test --offline --quiet --test {test_name}",
    test: (
        "tests/proof_mean.rs",
        "#[test]\nfn mean_of_three() {\n    assert_eq!(stats::mean(&[1, 2, 3]), 2);\n}\n",
    ),
    failure: "index out of bounds",
};

const JAVASCRIPT: Language = Language {
    name: "JavaScript",
    toolchain: "/usr/bin/node",
    files: &[
        (
            "package.json",
            "{\"name\": \"stats\", \"version\": \"1.0.0\"}\n",
        ),
        (
            "lib/stats.js",
            "function mean(xs) {\n  let total = 0;\n  for (let i = 0; i < xs.length; i++) total += xs[i];\n  return total / xs.length;\n}\nmodule.exports = { mean };\n",
        ),
    ],
    source: ("lib/stats.js", "i < xs.length", "i <= xs.length"),
    test_command: "node --test {test}",
    test: (
        "test/mean.proof.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { mean } = require('../lib/stats');\n\ntest('mean of three', () => {\n  assert.strictEqual(mean([1, 2, 3]), 2);\n});\n",
    ),
    failure: "NaN",
};

/// The base with the code and a trusted test command, and a branch that breaks the loop.
fn repository(language: &Language) -> TestRepo {
    let repo = TestRepo::init("main");
    for (path, content) in language.files {
        repo.write(path, content);
    }
    repo.write(
        ".bugloop/config.yml",
        &format!(
            "review:\n  prove:\n    test_command: {}\n    commit_tests: true\n",
            language.test_command
        ),
    );
    repo.commit("stats");
    repo.branch("feature");
    let (path, good, bad) = language.source;
    let text = language
        .files
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, t)| *t)
        .unwrap();
    repo.write(path, &text.replace(good, bad));
    repo.commit("off by one");
    repo
}

fn proves_and_fixes(language: &Language) {
    if !Path::new(language.toolchain).exists() {
        // scripts/setup --test installs it; a machine without it says so rather than passing.
        panic!(
            "{} is missing: run scripts/setup --test ({} proofs need it)",
            language.toolchain, language.name
        );
    }
    let repo = repository(language);
    let scripts = tempfile::tempdir().unwrap();
    let (path, good, bad) = language.source;
    let (test_path, test) = language.test;
    let line = bad_line(language);
    let model = script_of(
        scripts.path(),
        &json!({"file": path, "line": line, "evidence": evidence(language),
                "title": "Loop reads one past the end", "score": 8, "category": "logic",
                "description": format!("`{bad}` reads one element past the end.")}),
        vec![
            json!({"tool_calls": [{"name": "write_file", "arguments": {"path": test_path, "content": test}}]}),
            json!({"text": format!("{test_path} fails at head.")}),
            json!({"text": json!({"shows_the_problem": true, "why": "reads past the end"}).to_string()}),
        ],
    );
    let report = review(repo.path(), &model);
    let proof = &report["proofs"][0];
    assert_eq!(proof["status"], "proven", "{}: {report:#}", language.name);
    assert_eq!(proof["test_path"], test_path);
    assert!(
        proof["output"].as_str().unwrap().contains(language.failure),
        "{}: bugloop's own run: {proof:#}",
        language.name
    );
    // The fix must make the same test pass; it is committed with it.
    let id = report["findings"][0]["id"].as_str().unwrap().to_owned();
    let fix = scripts.path().join("fix.jsonl");
    std::fs::write(
        &fix,
        format!(
            "{}\n{}\n",
            json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": path, "old_text": bad, "new_text": good}}]}),
            json!({"text": "Fixed."})
        ),
    )
    .unwrap();
    let output = bugloop(
        repo.path(),
        &[
            "fix",
            "--all",
            "--model",
            &format!("script:{}", fix.display()),
            "--format",
            "json",
        ],
    );
    let text = stdout(&output);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}: {text}{}",
        language.name,
        stderr(&output)
    );
    let fixed: Value = serde_json::from_str(&text).unwrap();
    assert!(
        fixed["build"]["verify"]
            .to_string()
            .contains(&format!("(the test proving {id})")),
        "{}: {fixed:#}",
        language.name
    );
    let files = repo.git(&["show", "--name-only", "--format=", "HEAD"]);
    let mut expected = [path, test_path];
    expected.sort_unstable();
    assert_eq!(files.trim(), expected.join("\n"), "{}", language.name);
    // What the test's run left (a Rust target directory) is neither committed nor left behind.
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "{}",
        language.name
    );
}

/// The text of the file with the code the off-by-one changes.
fn source_text(language: &Language) -> &'static str {
    language
        .files
        .iter()
        .find(|(p, _)| *p == language.source.0)
        .map(|(_, t)| *t)
        .unwrap()
}

fn bad_line(language: &Language) -> u32 {
    let (_, good, _) = language.source;
    let text = source_text(language);
    text.lines().position(|l| l.contains(good)).unwrap() as u32 + 1
}

fn evidence(language: &Language) -> String {
    let (_, good, bad) = language.source;
    let text = source_text(language);
    text.lines()
        .find(|l| l.contains(good))
        .unwrap()
        .replace(good, bad)
        .trim()
        .to_owned()
}

#[test]
fn a_rust_crates_off_by_one_is_proven_and_its_fix_passes_the_same_test() {
    proves_and_fixes(&RUST);
}

#[test]
fn a_javascript_packages_off_by_one_is_proven_and_its_fix_passes_the_same_test() {
    proves_and_fixes(&JAVASCRIPT);
}
