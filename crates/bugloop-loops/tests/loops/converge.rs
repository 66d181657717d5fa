//! The audit-fix loop with a scripted model: each exit (converged, cap reached, stuck, error), a
//! fix outside its findings' files marked unverified, the loop reviews recorded, a clean HEAD
//! stopping at once, and the user's tree untouched unless the result lands.

use crate::support;

mod killed;

use std::sync::Arc;

use bugloop_config::{AuditFocus, AuditorConfig, Validator};
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_llm::{ChatRequest, ChatResult, LlmError, Provider, Sink};
use bugloop_loops::converge::converge;
use bugloop_report::build::Landing;
use bugloop_report::converge::{ConvergeReport, Exit, LoopKind};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::support::{
    Repo, conversation, finding, git, index_past_end, sql_format, usage, with_env,
};

/// One audit: the findings in pass 1, then passes 2-4.
fn audit(script: &ScriptedProvider, findings: Vec<Value>) {
    audit_when(script, None, findings);
}

/// One audit answered only to the auditor whose system prompt contains `focus`.
fn audit_when(script: &ScriptedProvider, focus: Option<&str>, findings: Vec<Value>) {
    let when = focus.map(str::to_owned);
    let mut first: Vec<(&str, Value)> = findings
        .into_iter()
        .map(|f| ("report_finding", f))
        .collect();
    first.push((
        "submit_pass_results",
        json!({"pass_number": 1, "summary": "audit"}),
    ));
    script.push_when(when.clone(), tool_reply(&first, usage()));
    for pass in 2..=4 {
        script.push_when(
            when.clone(),
            tool_reply(
                &[(
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                )],
                usage(),
            ),
        );
    }
}

/// For runs whose configuration names no model of its own for an auditor.
fn no_models(model: &str) -> Result<Arc<dyn Provider>, LlmError> {
    Err(LlmError::Config(format!("no model {model} in this test")))
}

fn index_finding(repo: &Repo) -> Value {
    index_past_end(repo.line_of("src/stats.rs", "sorted[index]"), 9)
}

fn clamp(script: &ScriptedProvider) {
    script.push(tool_reply(
        &[("edit_file", json!({"path": "src/stats.rs", "old_text": "    sorted[index]\n", "new_text": "    sorted[index.min(sorted.len() - 1)]\n"}))],
        usage(),
    ));
    script.push(text_reply("Clamped.", usage()));
}

/// The index finding found and clamped: an audit that finds it, and the fix.
fn found_and_clamped(repo: &Repo) -> ScriptedProvider {
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(repo)]);
    clamp(&script);
    script
}

/// [`found_and_clamped`], then an audit that finds nothing: a run that converges after one fix.
fn converging_after_one_fix(repo: &Repo) -> ScriptedProvider {
    let script = found_and_clamped(repo);
    audit(&script, vec![]);
    script
}

async fn run(
    repo: &Repo,
    config: bugloop_config::Config,
    script: ScriptedProvider,
) -> (ConvergeReport, Arc<ScriptedProvider>) {
    let script = Arc::new(script);
    let provider: Arc<dyn Provider> = script.clone();
    (run_with(repo, config, provider, &no_models).await, script)
}

async fn run_with(
    repo: &Repo,
    config: bugloop_config::Config,
    script: Arc<dyn Provider>,
    connect: bugloop_loops::converge::Connect<'_>,
) -> ConvergeReport {
    with_env(repo, config, script, async |env| {
        converge(env, &env.git.conversation_key(), None, connect)
            .await
            .unwrap()
    })
    .await
}

fn worktrees(repo: &Repo) -> usize {
    git(repo.path(), &["worktree", "list"]).lines().count()
}

#[tokio::test]
async fn audit_fix_audit_converges_and_lands() {
    let repo = Repo::with_feature();
    let start = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = converging_after_one_fix(&repo);
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
    // Nothing ran on the fix (no verify commands): it is not called verified.
    assert!(
        text.contains("2 fix: ") && text.contains("(unverified: no verify commands configured)"),
        "{text}"
    );
    assert!(text.contains("3 audit: 0P0 0P1 0P2 (clean)"), "{text}");
    assert_eq!(worktrees(&repo), 1, "the worktree is removed");

    // The loop reviews are in the conversation; a new run on this HEAD stops at once.
    let comments = conversation(&repo).await;
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
    let script = found_and_clamped(&repo);
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

/// A command killed at the time limit says which limit, and the setting that sets it.
#[tokio::test]
async fn a_command_at_the_time_limit_names_the_limit() {
    let mut config = support::config();
    config.sandbox.command_timeout_seconds = 1;
    let workspace = tempfile::tempdir().unwrap();
    let commands = bugloop_domain::safety::parse_verify_command_list("sleep 30").unwrap();
    let runs = bugloop_loops::build::run_commands(&config, workspace.path(), None, &commands)
        .await
        .unwrap();
    assert!(!runs[0].passed);
    assert!(
        runs[0]
            .output
            .ends_with("[timed out after 1 s: sandbox.command_timeout_seconds]"),
        "{}",
        runs[0].output
    );
}

/// What a gate command writes (bytecode, or anything the branch's code run by a linter makes) is
/// nobody's edit: it is neither committed with the fix nor blamed on it.
#[tokio::test]
async fn what_the_gate_writes_is_never_committed_with_a_fix() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.gate.commands = vec![bugloop_config::CommandEntry::shell(
        "echo made by the gate > gate-artifact.txt; echo '// the gate was here' >> src/stats.rs",
    )]
    .into();
    let (report, _) = run(&repo, config, converging_after_one_fix(&repo)).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    let text = report.text();
    assert!(!text.contains("unexpected files"), "{text}");
    let landed = git(repo.path(), &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(landed.trim(), "src/stats.rs", "{landed}");
    let stats = repo.read("src/stats.rs");
    assert!(stats.contains("index.min(") && !stats.contains("the gate was here"));
    assert!(!repo.path().join("gate-artifact.txt").exists());
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
    // Why, not only which: what the command said.
    assert!(
        report.detail.contains("lint: 2 problems"),
        "{}",
        report.detail
    );
    assert_eq!(
        report
            .log
            .iter()
            .filter(|l| l.kind == LoopKind::Gate)
            .count(),
        3
    );
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
    let fix = report.log.iter().find(|l| l.kind == LoopKind::Fix).unwrap();
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
    let model = Arc::new(ScriptedProvider::new([]));
    with_env(&repo, support::config(), model, async |env| {
        let error = converge(env, &env.git.conversation_key(), None, &no_models)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("Uncommitted changes detected"),
            "{error}"
        );
        std::fs::remove_file(repo.path().join("scratch.txt")).unwrap();
        git(repo.path(), &["switch", "-q", "main"]);
        let error = converge(env, &env.git.conversation_key(), None, &no_models)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("No upstream diff"), "{error}");
    })
    .await;
}

fn parallel(auditors: u32) -> bugloop_config::Config {
    let mut config = support::config();
    config.converge.parallel_auditors = auditors;
    config.converge.parallel_from_loop = 1;
    config
}

const CORRECTNESS: &str = "## Audit focus: correctness";
const SECURITY: &str = "## Audit focus: security";

#[tokio::test]
async fn parallel_auditors_are_validated_merged_and_their_rejects_quarantined() {
    let repo = Repo::with_feature();
    let script = ScriptedProvider::new([]);
    // Two auditors with different focuses report the same problem in other words; the validator
    // merges them into one (highest score, longest description). The security auditor also
    // invents a line that is not there: quarantined, with who said it and why.
    let mut other = index_finding(&repo);
    other["title"] = json!("p = 1.0 reads past the end of sorted");
    other["description"] = json!(
        "With p equal to 1.0 the computed index equals the length, so the lookup panics at run time."
    );
    other["score"] = json!(8);
    let invented = finding(
        "src/stats.rs",
        2,
        "unsafe { ptr.read() }",
        "Raw pointer read without a bounds check",
        "Reads through a raw pointer.",
        9,
        "security",
    );
    // The security auditor's answers come first in the script: each auditor takes only its own.
    audit_when(&script, Some(SECURITY), vec![other, invented]);
    audit_when(&script, Some(CORRECTNESS), vec![index_finding(&repo)]);
    clamp(&script);
    audit_when(&script, Some(SECURITY), vec![]);
    audit_when(&script, Some(CORRECTNESS), vec![]);
    let (report, script) = run(&repo, parallel(2), script).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    let first = &report.log[0];
    assert_eq!(
        first.text,
        "1P0 0P1 0P2: p = 1.0 reads past the end of sorted (1 quarantined)"
    );
    assert_eq!(report.quarantined.len(), 1, "{:#?}", report.quarantined);
    let q = &report.quarantined[0];
    assert_eq!(
        (q.loop_number, q.auditor.as_str(), q.title.as_str()),
        (
            1,
            "auditor 2 (security)",
            "Raw pointer read without a bounds check"
        )
    );
    assert!(q.reason.starts_with("grounding: "), "{}", q.reason);
    let text = report.text();
    assert!(
        text.contains("Quarantined (1):\n1 auditor 2 (security): Raw pointer read without a bounds check (src/stats.rs:2): grounding: "),
        "{text}"
    );
    // The loop review in the conversation lists it too.
    let comments = conversation(&repo).await;
    let loop_one = comments
        .iter()
        .find(|c| c.body.contains("## bugloop loop 1 audit:"))
        .unwrap();
    assert!(
        loop_one.body.contains("### Quarantined (1): not counted")
            && loop_one
                .body
                .contains("**Raw pointer read without a bounds check**"),
        "{}",
        loop_one.body
    );
    // Each auditor had its own focus, and only its own.
    let systems: Vec<String> = script
        .requests()
        .iter()
        .filter_map(|r| r.system.clone())
        .filter(|s| s.contains("## Audit focus:"))
        .collect();
    assert_eq!(systems.len(), 16, "two auditors, four passes, two audits");
    assert!(
        systems
            .iter()
            .all(|s| s.contains(CORRECTNESS) != s.contains(SECURITY))
    );
}

/// When a [`Held`] model holds a request.
#[derive(Debug)]
enum Hold {
    /// Each auditor's first request until this many requests are in flight at once: auditors
    /// run one after another never get past it.
    Together(tokio::sync::Barrier),
    /// Every request after the first `answers`, for ever (`stalled` is told): the run waits
    /// there until it is stopped.
    After { answers: usize, stalled: Notify },
}

/// A scripted model that holds requests as `hold` says, counting how many are in flight.
#[derive(Debug)]
struct Held {
    inner: Arc<ScriptedProvider>,
    hold: Hold,
    in_flight: std::sync::atomic::AtomicUsize,
    most_in_flight: std::sync::atomic::AtomicUsize,
}

impl Held {
    fn new(inner: Arc<ScriptedProvider>, hold: Hold) -> Held {
        Held {
            inner,
            hold,
            in_flight: std::sync::atomic::AtomicUsize::new(0),
            most_in_flight: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Holds `request` as the rule says; an error when the auditors never met.
    async fn hold(&self, request: &ChatRequest) -> Result<(), LlmError> {
        match &self.hold {
            Hold::Together(barrier) if request.messages.len() == 1 => {
                tokio::time::timeout(std::time::Duration::from_secs(20), barrier.wait())
                    .await
                    .map(drop)
                    .map_err(|_| {
                        LlmError::InvalidResponse(
                            "the auditors did not run at the same time".to_owned(),
                        )
                    })
            }
            Hold::After { answers, stalled } if self.inner.requests().len() >= *answers => {
                stalled.notify_one();
                std::future::pending().await
            }
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl Provider for Held {
    fn name(&self) -> &str {
        "held"
    }

    fn capabilities(&self) -> bugloop_llm::Capabilities {
        self.inner.capabilities()
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        use std::sync::atomic::Ordering;
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let answer = match self.hold(request).await {
            Ok(()) => self.inner.chat(request, sink).await,
            Err(error) => Err(error),
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        answer
    }
}

#[tokio::test]
async fn parallel_auditors_run_at_the_same_time() {
    let repo = Repo::with_feature();
    let script = Arc::new(ScriptedProvider::new([]));
    audit_when(&script, Some(CORRECTNESS), vec![]);
    audit_when(&script, Some(SECURITY), vec![]);
    let model = Arc::new(Held::new(
        script.clone(),
        Hold::Together(tokio::sync::Barrier::new(2)),
    ));
    let report = run_with(&repo, parallel(2), model.clone(), &no_models).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    assert_eq!(
        model
            .most_in_flight
            .load(std::sync::atomic::Ordering::SeqCst),
        2
    );
    assert_eq!(script.remaining(), 0);
}

#[tokio::test]
async fn configured_auditors_get_their_focus_model_and_temperature() {
    let repo = Repo::with_feature();
    let mut config = parallel(2);
    config.converge.auditors = vec![AuditorConfig {
        focus: AuditFocus::ErrorHandling,
        model: Some("other:model".to_owned()),
        temperature: Some(0.25),
    }];
    // The second auditor has no entry: the second focus of the rotation, the run's model.
    let own = ScriptedProvider::new([]);
    audit(&own, vec![]);
    let other = Arc::new(ScriptedProvider::new([]));
    audit(&other, vec![]);
    let asked = std::sync::Mutex::new(Vec::new());
    let connect = |model: &str| {
        asked.lock().unwrap().push(model.to_owned());
        Ok::<_, LlmError>(other.clone() as Arc<dyn Provider>)
    };
    let own = Arc::new(own);
    let report = run_with(&repo, config, own.clone(), &connect).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    assert_eq!(*asked.lock().unwrap(), vec!["other:model".to_owned()]);
    let theirs = other.requests();
    assert_eq!(theirs.len(), 4);
    assert!(theirs.iter().all(|r| r.temperature == Some(0.25)));
    assert!(theirs.iter().all(|r| {
        r.system
            .as_deref()
            .unwrap()
            .contains("## Audit focus: error handling")
    }));
    let ours = own.requests();
    assert_eq!(ours.len(), 4);
    assert!(
        ours.iter()
            .all(|r| r.temperature.is_none() && r.system.as_deref().unwrap().contains(SECURITY))
    );
}

#[tokio::test]
async fn the_model_validator_quarantines_what_it_rejects() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.converge.validator = Validator::Model;
    let script = ScriptedProvider::new([]);
    let db = repo.line_of("src/db.rs", "format!(\"SELECT");
    let sql = sql_format(db, 8);
    audit(&script, vec![index_finding(&repo), sql]);
    // One verdict per finding, in the audit's order (highest score first).
    script.push(text_reply(
        r#"{"keep": true, "reason": "index equals len when p is 1.0"}"#,
        usage(),
    ));
    script.push(text_reply(
        r#"{"keep": false, "reason": "the query is only built for logging here"}"#,
        usage(),
    ));
    clamp(&script);
    audit(&script, vec![]);
    let (report, script) = run(&repo, config, script).await;
    assert_eq!(report.exit, Exit::Converged, "{}", report.text());
    assert_eq!(
        report.log[0].text,
        "1P0 0P1 0P2: Index out of bounds when p is 1.0 (1 quarantined)"
    );
    let q = &report.quarantined[0];
    assert_eq!(q.auditor, "validator");
    assert_eq!(q.title, "SQL built with format!");
    assert_eq!(
        q.reason,
        "validator model: the query is only built for logging here"
    );
    // The validator saw the finding and the code around its line.
    let asked = script
        .requests()
        .into_iter()
        .find(|r| {
            r.messages
                .first()
                .is_some_and(|m| m.content.contains("SQL built with format!"))
                && r.system
                    .as_deref()
                    .unwrap_or("")
                    .contains("validator of a code audit")
        })
        .unwrap();
    assert!(
        asked.messages[0]
            .content
            .contains(&format!("{db:>5} |     let query = format!(")),
        "{}",
        asked.messages[0].content
    );
}

#[tokio::test]
async fn findings_over_the_comment_limit_still_count_in_the_audit() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.review.comment_limit = 1;
    let db = repo.line_of("src/db.rs", "format!(\"SELECT");
    let sql = sql_format(db, 8);
    let script = ScriptedProvider::new([]);
    audit(&script, vec![index_finding(&repo), sql]);
    let (report, _) = {
        let mut config = config;
        config.converge.max_loops = 1;
        run(&repo, config, script).await
    };
    assert_eq!(report.exit, Exit::CapReached, "{}", report.text());
    assert!(
        report.log[0].text.starts_with("1P0 1P1 0P2: "),
        "{}",
        report.log[0].text
    );
}
