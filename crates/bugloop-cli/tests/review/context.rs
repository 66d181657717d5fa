//! Nothing outside the repository reaches a prompt: a rule file that is a symlink to a
//! credentials file is refused, reported, and never sent to the model.

use bugloop_testkit::assert_contains;
use serde_json::Value;

use super::{git, off_by_one, repo, script, stderr, stdout};

const SECRET: &str = "aws_secret_access_key=sk-outside-0451";
const RULE: &str = "Prefer checked indexing (rule-inside-0451).";

#[test]
fn a_symlinked_rule_file_never_reaches_the_model() {
    let outside = tempfile::tempdir().unwrap();
    let credentials = outside.path().join("credentials");
    std::fs::write(&credentials, SECRET).unwrap();
    let dir = repo();
    std::os::unix::fs::symlink(&credentials, dir.path().join("AGENTS.md")).unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), RULE).unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "rules"]);

    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[off_by_one()]);
    let recorded = scripts.path().join("recorded.jsonl");
    for format in ["json", "text"] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_bugloop"))
            .args(["review", "--dry-run", "--model", &model, "--format", format])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env_remove("BUGLOOP_CONFIG")
            .env("BUGLOOP_RECORD", &recorded)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let shown = stdout(&output);
        assert!(!shown.contains("sk-outside-0451"), "{shown}");
        if format == "json" {
            let report: Value = serde_json::from_str(&shown).unwrap();
            let refused = report["refused_context"].as_array().unwrap();
            assert_eq!(refused.len(), 1, "{report:#}");
            assert_eq!(refused[0]["path"], "AGENTS.md");
            assert!(
                refused[0]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("outside the repository"),
                "{report:#}"
            );
        } else {
            assert_contains(&shown, "Not given to the model");
            assert_contains(&shown, "AGENTS.md");
        }
    }
    let requests = std::fs::read_to_string(&recorded).unwrap();
    assert!(
        requests.contains("rule-inside-0451"),
        "the inside rule file is used"
    );
    assert!(
        !requests.contains("sk-outside-0451"),
        "the credentials reached a prompt"
    );
}
