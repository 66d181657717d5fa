//! The audit-fix loop with a scripted model: each exit (converged, cap reached, stuck, error), a
//! fix outside its findings' files marked unverified, the loop reviews recorded, a clean HEAD
//! stopping at once, and the user's tree untouched unless the result lands.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;

use bugloop_forge::Forge;
use bugloop_forge::git::Git;
use bugloop_forge::local::LocalForge;
use bugloop_llm::BudgetLimits;
use bugloop_llm::budget::{Meter, Metered};
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_loops::act::ActEnv;
use bugloop_loops::build::Landing;
use bugloop_loops::converge::{ConvergeReport, Exit, converge};
use serde_json::{Value, json};

use support::{Repo, finding, git, usage};

/// One audit: the findings in pass 1, then passes 2-4.
fn audit(script: &ScriptedProvider, findings: Vec<Value>) {
    let mut first: Vec<(&str, Value)> = findings
        .into_iter()
        .map(|f| ("report_finding", f))
        .collect();
    first.push((
        "submit_pass_results",
        json!({"pass_number": 1, "summary": "audit"}),
    ));
    script.push(tool_reply(&first, usage()));
    for pass in 2..=4 {
        script.push(tool_reply(
            &[(
                "submit_pass_results",
                json!({"pass_number": pass, "summary": "ok"}),
            )],
            usage(),
        ));
    }
}

fn index_finding(repo: &Repo) -> Value {
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    finding(
        "src/stats.rs",
        line,
        "sorted[index]",
        "Index out of bounds when p is 1.0",
        "p = 1.0 indexes one past the end.",
        9,
        "logic",
    )
}

fn clamp(script: &ScriptedProvider) {
    script.push(tool_reply(
        &[("edit_file", json!({"path": "src/stats.rs", "old_text": "    sorted[index]\n", "new_text": "    sorted[index.min(sorted.len() - 1)]\n"}))],
        usage(),
    ));
    script.push(text_reply("Clamped.", usage()));
}

async fn run(
    repo: &Repo,
    config: bugloop_config::Config,
    script: ScriptedProvider,
) -> (ConvergeReport, Arc<ScriptedProvider>) {
    let script = Arc::new(script);
    let git = Git::open(repo.path()).unwrap();
    let forge = LocalForge::open(git.clone(), "bugloop").await.unwrap();
    let meter = Arc::new(Meter::new("scripted", BudgetLimits::default(), None));
    let runs = tempfile::tempdir().unwrap();
    let env = ActEnv {
        forge: &forge,
        git: &git,
        config: &config,
        provider: Arc::new(Metered::new(script.clone(), meter.clone())),
        meter,
        runs_dir: runs.path().to_path_buf(),
        progress: Arc::new(bugloop_loops::Silent),
    };
    let report = converge(&env, &git.conversation_key(), None).await.unwrap();
    (report, script)
}

fn worktrees(repo: &Repo) -> usize {
    git(repo.path(), &["worktree", "list"]).lines().count()
}

#[tokio::test]
async fn audit_fix_audit_converges_and_lands() {
    let repo = Repo::with_feature();
    let start = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(&repo)]);
    clamp(&script);
    audit(&script, vec![]);
    let (report, _) = run(&repo, support::config(), script).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    assert_eq!(report.loops, 3);
    assert_eq!(report.start_commit, start);
    assert!(matches!(
        report.landing,
        Some(Landing::FastForwarded { .. })
    ));
    assert_eq!(
        git(repo.path(), &["rev-parse", "HEAD"]),
        report.final_commit
    );
    assert!(repo.read("src/stats.rs").contains("index.min("));
    assert_eq!(
        (report.files_changed, report.additions, report.deletions),
        (1, 1, 1)
    );
    let text = report.text();
    assert!(
        text.starts_with("bugloop converge exit: converged\nLoops: 3\n"),
        "{text}"
    );
    assert!(text.contains("1 audit: 1P0 0P1 0P2"), "{text}");
    assert!(
        text.contains("2 fix: ") && text.contains("(verified)"),
        "{text}"
    );
    assert!(text.contains("3 audit: 0P0 0P1 0P2 (clean)"), "{text}");
    assert_eq!(worktrees(&repo), 1, "the worktree is removed");

    // The loop reviews are in the conversation; a new run on this HEAD stops at once.
    let git_ = Git::open(repo.path()).unwrap();
    let forge = LocalForge::open(git_.clone(), "bugloop").await.unwrap();
    let comments = forge.comments(&git_.conversation_key()).await.unwrap();
    let bodies: Vec<&str> = comments.iter().map(|c| c.body.as_str()).collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("## bugloop loop 1 audit: 1P0 / 0P1 / 0P2")),
        "{bodies:#?}"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("## bugloop loop 3 audit: 0P0 / 0P1 / 0P2 → clean"))
    );
    let (again, script) = run(&repo, support::config(), ScriptedProvider::new([])).await;
    assert_eq!(again.exit, Exit::Converged);
    assert_eq!(again.loops, 0);
    assert!(script.requests().is_empty(), "no model call");
}

#[tokio::test]
async fn the_cap_stops_the_loop() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.converge.max_loops = 2;
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(&repo)]);
    clamp(&script);
    let (report, _) = run(&repo, config, script).await;
    assert_eq!(report.exit, Exit::CapReached, "{}", report.text());
    assert_eq!(report.loops, 2);
    // What was fixed still lands.
    assert!(matches!(
        report.landing,
        Some(Landing::FastForwarded { .. })
    ));
}

#[tokio::test]
async fn a_fix_that_changes_nothing_is_stuck_and_the_tree_is_untouched() {
    let repo = Repo::with_feature();
    let before = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(&repo)]);
    script.push(text_reply("I could not find a safe fix.", usage()));
    let (report, _) = run(&repo, support::config(), script).await;
    assert_eq!(report.exit, Exit::Stuck, "{}", report.text());
    assert!(
        report.detail.contains("Index out of bounds"),
        "{}",
        report.detail
    );
    assert!(report.landing.is_none());
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), before);
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    assert_eq!(worktrees(&repo), 1);
}

#[tokio::test]
async fn a_gate_that_cannot_be_fixed_is_an_error() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.gate.commands = vec![bugloop_config::CommandEntry::shell(
        "echo lint: 2 problems; exit 1",
    )]
    .into();
    config.gate.max_fix_rounds = 2;
    let script = ScriptedProvider::new([]);
    for _ in 0..2 {
        script.push(text_reply("Nothing to change.", usage()));
    }
    let (report, _) = run(&repo, config, script).await;
    assert_eq!(report.exit, Exit::Error, "{}", report.text());
    assert!(report.detail.contains("gate failed"), "{}", report.detail);
    assert_eq!(report.log.iter().filter(|l| l.kind == "gate").count(), 3);
    assert_eq!(worktrees(&repo), 1);
}

#[tokio::test]
async fn a_fix_outside_its_findings_is_marked_unverified() {
    let repo = Repo::with_feature();
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(&repo)]);
    script.push(tool_reply(
        &[
            ("edit_file", json!({"path": "src/stats.rs", "old_text": "    sorted[index]\n", "new_text": "    sorted[index.min(sorted.len() - 1)]\n"})),
            ("write_file", json!({"path": "src/unrelated.rs", "content": "// drive-by\n"})),
        ],
        usage(),
    ));
    script.push(text_reply("Clamped and tidied.", usage()));
    audit(&script, vec![]);
    let (report, _) = run(&repo, support::config(), script).await;
    assert_eq!(report.exit, Exit::Converged);
    let fix = report.log.iter().find(|l| l.kind == "fix").unwrap();
    assert!(
        fix.text
            .contains("unverified: commit touched unexpected files: src/unrelated.rs"),
        "{}",
        fix.text
    );
}

#[tokio::test]
async fn dirty_trees_and_empty_changes_are_refused() {
    let repo = Repo::with_feature();
    repo.write("scratch.txt", "wip\n");
    let git_ = Git::open(repo.path()).unwrap();
    let forge = LocalForge::open(git_.clone(), "bugloop").await.unwrap();
    let meter = Arc::new(Meter::new("scripted", BudgetLimits::default(), None));
    let config = support::config();
    let env = ActEnv {
        forge: &forge,
        git: &git_,
        config: &config,
        provider: Arc::new(Metered::new(
            Arc::new(ScriptedProvider::new([])),
            meter.clone(),
        )),
        meter,
        runs_dir: repo.path().join(".git/bugloop/runs"),
        progress: Arc::new(bugloop_loops::Silent),
    };
    let error = converge(&env, &git_.conversation_key(), None)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("Uncommitted changes detected"),
        "{error}"
    );
    std::fs::remove_file(repo.path().join("scratch.txt")).unwrap();
    git(repo.path(), &["switch", "-q", "main"]);
    let error = converge(&env, &git_.conversation_key(), None)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("No upstream diff"), "{error}");
}

#[tokio::test]
async fn parallel_auditors_are_validated_and_merged() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.converge.parallel_auditors = 2;
    config.converge.parallel_from_loop = 1;
    let script = ScriptedProvider::new([]);
    // Two auditors report the same problem in other words; grounding keeps both, the validator
    // merges them into one (highest score, longest description).
    let mut other = index_finding(&repo);
    other["title"] = json!("p = 1.0 reads past the end of sorted");
    other["description"] = json!(
        "With p equal to 1.0 the computed index equals the length, so the lookup panics at run time."
    );
    other["score"] = json!(8);
    audit(&script, vec![index_finding(&repo)]);
    audit(&script, vec![other]);
    clamp(&script);
    audit(&script, vec![]);
    audit(&script, vec![]);
    let (report, _) = run(&repo, config, script).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    let first = &report.log[0];
    assert!(
        first.text.starts_with("1P0 0P1 0P2: p = 1.0 reads past"),
        "{}",
        first.text
    );
}
