//! The solve pipeline end to end on a local repository with a scripted model: an issue solved in
//! two attempts, its draft reviewed with two findings, the findings addressed in one round, the
//! gate passed and the draft marked ready; a solver that never passes escalated with its attempts
//! listed; a solution touching a protected path refused; and a run killed right after each
//! recorded transition resumed to the same end, nothing done twice. One test binary for the
//! crate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bugloop_domain::solve::SolveState;
use bugloop_forge::local::LocalForge;
use bugloop_forge::tracker::{
    ChangeRequest, Check, DraftRequest, IssueDraft, NewTransition, ReportCount, SolveTransition,
    TrackedIssue, Tracker,
};
use bugloop_forge::{ChangeKey, Forge, ForgeError};
use bugloop_git::Git;
use bugloop_llm::budget::{Meter, Metered};
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_llm::{BudgetLimits, Capabilities};
use bugloop_loops::{LoopEnv, LoopSettings};
use bugloop_report::solve::SolveReport;
use bugloop_solve::{SolveAsk, SolveOptions, solve};
use bugloop_store::NewIssue;
use bugloop_testkit::TestRepo;
use bugloop_testkit::labels::assert_solve_ended;
use serde_json::json;

use crate::support::{finding, git, local_forge, push_session, usage};

mod killed;
mod ready;
mod rounds;
mod support;

const BUGGY: &str =
    "def last(items):\n    return items[len(items)]\n\n\ndef first(items):\n    return items[0]\n";
const SOLVED: &str =
    "def last(items):\n    return items[-1]\n\n\ndef first(items):\n    return items[0]\n";
const TEST: &str =
    "from app.models import last\n\n\ndef test_last():\n    assert last([1, 2, 3]) == 3\n";

/// A repository with the bug on `main` and the issue filed for it.
async fn scenario() -> (TestRepo, u64) {
    let repo = TestRepo::init("main");
    repo.git(&["config", "user.name", "Dev"]);
    repo.git(&["config", "user.email", "dev@example.com"]);
    repo.write("app/models.py", BUGGY);
    repo.write(".github/workflows/ci.yml", "on: push\n");
    repo.commit("models");
    let forge = local_forge(repo.path()).await;
    let issue = forge
        .store()
        .file_issue(NewIssue {
            title: "IndexError: list index out of range in last (app/models.py)".to_owned(),
            body: "Traceback (most recent call last):\n  File \"app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n".to_owned(),
            author: "bugloop".to_owned(),
            labels: vec!["bug".to_owned(), "bug:autofix".to_owned()],
        })
        .await
        .unwrap();
    (repo, u64::try_from(issue.number).unwrap())
}

fn config(max_iterations: u32) -> bugloop_config::Config {
    let mut config = bugloop_config::Config::default();
    config.solve.test_commands = vec!["grep -qF 'items[-1]' app/models.py".to_owned()].into();
    config.solve.max_iterations = max_iterations;
    config
}

/// A model that never answers: every agent run fails.
fn silent_model() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new([]))
}

fn write(path: &str, content: &str) -> (&'static str, serde_json::Value) {
    ("write_file", json!({"path": path, "content": content}))
}

/// The whole happy path's model: two attempts, the draft's review, one round, its review.
fn happy_script() -> ScriptedProvider {
    let provider = drafted_script();
    // Round 1: both addressed.
    provider.push(tool_reply(
        &[
            write(
                "app/models.py",
                &SOLVED.replace("items[-1]\n", "items[-1] if items else None\n"),
            ),
            write(
                "tests/test_models.py",
                &format!("{TEST}    assert last([]) is None\n"),
            ),
        ],
        usage(),
    ));
    provider.push(text_reply("Both threads addressed.", usage()));
    // The round's review: nothing new.
    push_session(&provider, vec![], vec![]);
    provider
}

/// The model up to the draft's review: two attempts, and the review's two findings (one in
/// `app/models.py`, one in `tests/test_models.py`).
fn drafted_script() -> ScriptedProvider {
    let provider = ScriptedProvider::new([
        // Attempt 1: a wrong fix; the tests fail.
        tool_reply(
            &[(
                "edit_file",
                json!({"path": "app/models.py", "old_text": "items[len(items)]", "new_text": "items[len(items) - 2]"}),
            )],
            usage(),
        ),
        text_reply("Off by one: read the element before the end.", usage()),
        // Attempt 2: the fix and a test.
        tool_reply(
            &[
                write("app/models.py", SOLVED),
                write("tests/test_models.py", TEST),
            ],
            usage(),
        ),
        text_reply(
            "`last` indexed one past the end; it reads items[-1] now. Test: test_last.",
            usage(),
        ),
    ]);
    // The draft's review: two findings.
    push_session(
        &provider,
        vec![
            finding(
                "app/models.py",
                2,
                "return items[-1]",
                "last() still raises IndexError on an empty list",
                "An empty list has no last element; items[-1] raises.",
                7,
                "logic",
            ),
            finding(
                "tests/test_models.py",
                5,
                "assert last([1, 2, 3]) == 3",
                "The test misses the empty list",
                "The crash the issue reports needs a test for the edge case.",
                6,
                "logic",
            ),
        ],
        vec![],
    );
    provider
}

/// The issue solved with `model` (at most ten attempts), which must end escalated: its report.
async fn escalated(repo: &TestRepo, model: Arc<ScriptedProvider>, issue: u64) -> SolveReport {
    ends_in(repo, config(10), model, issue, SolveState::Escalated).await
}

/// The issue solved under `config` with `model`, which must end in `state`: its report.
async fn ends_in(
    repo: &TestRepo,
    config: bugloop_config::Config,
    model: Arc<ScriptedProvider>,
    issue: u64,
    state: SolveState,
) -> SolveReport {
    let report = run_solve(repo, config, model, None, issue).await.unwrap();
    assert_eq!(
        report.state,
        Some(state),
        "{}\n{}",
        report.to_text(),
        report.history_text()
    );
    report
}

async fn run_solve(
    repo: &TestRepo,
    config: bugloop_config::Config,
    model: Arc<ScriptedProvider>,
    tracker: Option<&dyn Tracker>,
    issue: u64,
) -> Result<SolveReport, bugloop_solve::SolveError> {
    let git = Git::open(repo.path()).unwrap();
    let forge = LocalForge::open(git.clone(), "bugloop").await.unwrap();
    let meter = Arc::new(Meter::new("scripted", BudgetLimits::default(), None));
    let provider = Arc::new(Metered::new(model, meter.clone()));
    let runs = tempfile::tempdir().unwrap();
    let settings = LoopSettings::resolve(config).unwrap();
    let env = LoopEnv {
        forge: &forge,
        git: &git,
        settings: &settings,
        provider,
        meter,
        runs_dir: runs.path().to_path_buf(),
        progress: Arc::new(bugloop_loops::Silent),
        work: bugloop_loops::build::WorkTarget::LocalBranch,
    };
    let options = SolveOptions {
        base: "main".to_owned(),
        start: None,
        ask: SolveAsk::default(),
    };
    solve(&env, tracker.unwrap_or(&forge), issue, &options).await
}

fn states(report: &SolveReport) -> Vec<SolveState> {
    report.history.iter().map(|s| s.to).collect()
}

async fn labels(repo: &TestRepo, issue: u64) -> Vec<String> {
    let forge = local_forge(repo.path()).await;
    forge.issue(issue).await.unwrap().labels
}

/// What the happy path leaves: one branch with two commits, one draft marked ready, both threads
/// resolved once.
async fn assert_solved(repo: &TestRepo, report: &SolveReport) {
    use SolveState::*;
    assert_eq!(report.state, Some(Ready), "{}", report.to_text());
    let mut seen = states(report);
    seen.dedup();
    assert_eq!(
        seen,
        [Open, Assigned, Solving, PrDraft, Reviewing, Ready],
        "{}",
        report.history_text()
    );
    assert_eq!(report.attempts.len(), 2, "{}", report.to_text());
    assert!(!report.attempts[0].passed);
    assert!(
        report.attempts[0].outcome.contains("grep -qF"),
        "{report:?}"
    );
    assert!(report.attempts[1].passed);
    assert_eq!(report.rounds.len(), 1, "{}", report.to_text());
    assert_eq!(report.rounds[0].threads.len(), 2);
    let branch = report.branch.clone().unwrap();
    assert!(
        branch.starts_with("bugloop/1-indexerror-list-index"),
        "{branch}"
    );
    assert_eq!(
        git(
            repo.path(),
            &["rev-list", "--count", &format!("main..{branch}")]
        ),
        "2"
    );
    assert!(
        git(repo.path(), &["show", &format!("{branch}:app/models.py")])
            .contains("items[-1] if items else None")
    );
    // The user's checkout is untouched.
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "main"
    );
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "");
    let forge = local_forge(repo.path()).await;
    let request = forge
        .change_request(report.change_request.unwrap())
        .await
        .unwrap();
    assert!(!request.draft, "marked ready");
    assert_eq!(request.branch, branch);
    let item = forge
        .store()
        .item(i64::try_from(request.number).unwrap())
        .await
        .unwrap();
    assert!(item.body.starts_with("Closes #1\n"), "{}", item.body);
    assert!(
        item.body
            .contains("`grep -qF 'items[-1]' app/models.py`: passed")
    );
    assert!(item.body.contains("- `tests/test_models.py`"));
    let comments = forge.comments(&request.conversation).await.unwrap();
    let findings: Vec<_> = comments
        .iter()
        .filter(|c| c.by_bugloop && c.in_reply_to.is_none() && c.path.is_some())
        .collect();
    assert_eq!(findings.len(), 2, "{comments:#?}");
    let replies = comments
        .iter()
        .filter(|c| c.by_bugloop && c.body.contains("Addressed in"))
        .count();
    assert_eq!(replies, 2, "each thread answered once: {comments:#?}");
    assert!(
        forge
            .store()
            .items(bugloop_store::ItemKind::Change, false)
            .await
            .unwrap()
            .len()
            == 1,
        "one change request"
    );
    assert_solve_ended(&labels(repo, 1).await, false);
}

#[tokio::test]
async fn an_issue_is_solved_reviewed_addressed_and_marked_ready() {
    let (repo, issue) = scenario().await;
    let model = Arc::new(happy_script());
    let report = run_solve(&repo, config(10), model.clone(), None, issue)
        .await
        .unwrap();
    assert_eq!(model.remaining(), 0, "every scripted answer was used");
    assert_solved(&repo, &report).await;
    // The round's prompt had both threads, grouped by file, and the issue's text was quoted.
    let requests = model.requests();
    let round = requests
        .iter()
        .find(|r| {
            r.messages
                .iter()
                .any(|m| m.content.contains("# Task: address the review"))
        })
        .unwrap();
    let prompt: String = round.messages.iter().map(|m| m.content.as_str()).collect();
    assert!(prompt.contains("## app/models.py") && prompt.contains("## tests/test_models.py"));
    // The second attempt was told what the first came to.
    assert!(
        requests.iter().any(|r| r.messages.iter().any(|m| m
            .content
            .contains("## Attempts so far")
            && m.content
                .contains("- attempt 1: `grep -qF 'items[-1]' app/models.py` failed"))),
        "the second attempt's prompt"
    );
    // Running again changes nothing: the draft waits for a person.
    let again = run_solve(&repo, config(10), silent_model(), None, issue)
        .await
        .unwrap();
    assert_eq!(again.history.len(), report.history.len());
    assert!(
        again.message.contains("merging it is a person's decision"),
        "{}",
        again.message
    );
    // A person merges it: the next run records it.
    git(
        repo.path(),
        &["merge", "-q", "--no-edit", again.branch.as_deref().unwrap()],
    );
    ends_in(&repo, config(10), silent_model(), issue, SolveState::Merged).await;
    let forge = local_forge(repo.path()).await;
    assert!(
        !forge.issue(issue).await.unwrap().open,
        "merged: the issue is closed"
    );
}

/// A run whose model solves the issue and then has nothing more to say: the draft's review
/// fails.
async fn drafted_and_its_review_failed() -> (TestRepo, u64, SolveReport) {
    let (repo, issue) = scenario().await;
    let solving = ScriptedProvider::new([
        tool_reply(
            &[
                write("app/models.py", SOLVED),
                write("tests/test_models.py", TEST),
            ],
            usage(),
        ),
        text_reply("It reads items[-1] now.", usage()),
    ]);
    let report = run_solve(&repo, config(10), Arc::new(solving), None, issue)
        .await
        .unwrap();
    (repo, issue, report)
}

/// The draft's review fails (the model is gone after the solution passed): the head is recorded
/// as unreviewed, not reviewed, the gate is not reached and the run says it stopped short
/// (`model`); the next run reviews the draft again and goes on.
#[tokio::test]
async fn a_draft_whose_review_failed_is_not_marked_ready() {
    let (repo, issue, report) = drafted_and_its_review_failed().await;
    assert_eq!(
        report.state,
        Some(SolveState::Reviewing),
        "{}",
        report.to_text()
    );
    assert_eq!(report.stopped.as_deref(), Some("model"));
    assert!(
        report.message.contains("was not complete") && report.message.contains("reviews it again"),
        "{}",
        report.message
    );
    assert!(report.rounds.is_empty(), "not a round: {:?}", report.rounds);
    assert!(!states(&report).contains(&SolveState::Ready));
    // The model is back: the draft is reviewed and the gate decides.
    let reviewing = ScriptedProvider::new([]);
    push_session(&reviewing, vec![], vec![]);
    let again = ends_in(
        &repo,
        config(10),
        Arc::new(reviewing),
        issue,
        SolveState::Ready,
    )
    .await;
    assert_eq!(again.stopped, None);
    assert!(again.rounds.is_empty(), "not a round: {:?}", again.rounds);
}

/// A developer's `bugloop review` of the draft's branch holds the review lease: the run that
/// would review the draft at the same time is told who holds it, records nothing and spends
/// nothing; once the lease is free, the draft is reviewed.
#[tokio::test]
async fn the_drafts_review_waits_for_a_review_of_its_branch_running_now() {
    let (repo, issue, first) = drafted_and_its_review_failed().await;
    let git = Git::open(repo.path()).unwrap();
    let conversation = ChangeKey(format!("branch:{}", first.branch.as_deref().unwrap()));
    let held = bugloop_forge::local::conversation_lease(&git, &conversation)
        .unwrap()
        .unwrap();
    let model = ScriptedProvider::new([]);
    push_session(&model, vec![], vec![]);
    let model = Arc::new(model);
    let error = run_solve(&repo, config(10), model.clone(), None, issue)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("is held by another run"),
        "{error}"
    );
    assert!(model.requests().is_empty(), "nothing asked of the model");
    drop(held);
    let again = ends_in(&repo, config(10), model, issue, SolveState::Ready).await;
    // The head reviewed (no round), then the gate.
    assert_eq!(again.history.len(), first.history.len() + 2);
}

/// A draft whose review is never complete (the model fails every run) is not reviewed again
/// forever: the third run in a row escalates the issue, and the gate is never reached.
#[tokio::test]
async fn a_draft_whose_review_fails_three_runs_in_a_row_is_escalated() {
    let (repo, issue, first) = drafted_and_its_review_failed().await;
    assert_eq!(first.state, Some(SolveState::Reviewing));
    let second = ends_in(
        &repo,
        config(10),
        silent_model(),
        issue,
        SolveState::Reviewing,
    )
    .await;
    assert_eq!(second.stopped.as_deref(), Some("model"));
    let third = ends_in(
        &repo,
        config(10),
        silent_model(),
        issue,
        SolveState::Escalated,
    )
    .await;
    let escalation = &third.history.last().unwrap().reason;
    assert!(
        escalation.contains("was not complete in 3 runs in a row"),
        "{escalation}"
    );
    assert!(!states(&third).contains(&SolveState::Ready));
    assert!(third.rounds.is_empty(), "{:?}", third.rounds);
}

/// An escalation is posted where others read it (a public issue on GitHub): it names an agent
/// run by its name, never by a path of the machine bugloop ran on.
#[tokio::test]
async fn an_escalation_shows_no_path_of_the_machine() {
    let (repo, issue) = scenario().await;
    // Every attempt's agent fails on its own (its conversation outgrows the model), not for a
    // model that cannot be reached, which stops the run instead.
    let model = silent_model();
    for _ in 0..2 {
        model.push_error(|| bugloop_llm::LlmError::ContextTooLong {
            message: "too long".into(),
        });
    }
    ends_in(&repo, config(2), model, issue, SolveState::Escalated).await;
    let forge = local_forge(repo.path()).await;
    let said = forge
        .comments(&ChangeKey(format!("issue:{issue}")))
        .await
        .unwrap();
    let body = &said[0].body;
    assert!(body.contains("the agent did not finish"), "{body}");
    assert!(
        body.contains("(run ") && body.contains("-solve-1-1-"),
        "{body}"
    );
    let root = repo.path().to_string_lossy().into_owned();
    for machine in [root.as_str(), ".jsonl", "/bugloop/runs", "/tmp/"] {
        assert!(!body.contains(machine), "{machine} in {body}");
    }
}

#[tokio::test]
async fn a_solver_that_never_passes_is_escalated_with_its_attempts() {
    let (repo, issue) = scenario().await;
    let model = silent_model();
    for attempt in 1..=3 {
        model.push(tool_reply(
            &[write(
                "app/models.py",
                &BUGGY.replace("[0]", &format!("[{attempt}]")),
            )],
            usage(),
        ));
        model.push(text_reply(format!("try {attempt}"), usage()));
    }
    let report = ends_in(
        &repo,
        config(3),
        model.clone(),
        issue,
        SolveState::Escalated,
    )
    .await;
    assert_eq!(model.remaining(), 0);
    assert_eq!(report.attempts.len(), 3);
    assert!(report.message.contains("3 attempts"), "{}", report.message);
    assert!(report.branch.is_some());
    assert_eq!(
        git(repo.path(), &["branch", "--list", "bugloop/*"]),
        "",
        "nothing published"
    );
    assert_solve_ended(&labels(&repo, issue).await, true);
    let forge = local_forge(repo.path()).await;
    let said = forge
        .comments(&ChangeKey(format!("issue:{issue}")))
        .await
        .unwrap();
    assert_eq!(said.len(), 1, "{said:#?}");
    for attempt in 1..=3 {
        assert!(
            said[0]
                .body
                .contains(&format!("- attempt {attempt}: `grep -qF")),
            "{}",
            said[0].body
        );
    }
    // Escalated stays escalated until someone sends it back.
    let again = run_solve(&repo, config(3), silent_model(), None, issue)
        .await
        .unwrap();
    assert_eq!(again.history.len(), report.history.len());
    assert!(again.message.contains("--retry"), "{}", again.message);
}

#[tokio::test]
async fn a_solution_touching_a_protected_path_is_refused() {
    // The file tools refuse protected paths, so the agent goes around them with a command.
    let report = escalated_for(
        (
            "run",
            json!({"program": "sh", "args": ["-c", "echo 'on: [push, pull_request_target]' > .github/workflows/ci.yml"]}),
        ),
        "Fixed, and made CI run on forks.",
    )
    .await;
    assert!(
        report.message.contains("refused") && report.message.contains(".github/workflows/ci.yml"),
        "{}",
        report.message
    );
}

/// A link put where a protected path could be below it brings a directory of the change's in
/// as that path: an attacker's model linked `.github/workflows` to its own directory and the
/// draft reached ready. Refused like the path itself.
#[tokio::test]
async fn a_link_that_would_bring_files_under_a_protected_path_is_refused() {
    let script = "mkdir -p ci && printf 'fix:\\n  verify_commands: [curl evil]\\n' > ci/config.yml && ln -s ci .bugloop";
    let report = escalated_for(
        ("run", json!({"program": "sh", "args": ["-c", script]})),
        "Fixed, and shared the CI settings.",
    )
    .await;
    assert!(
        report.message.contains("protected paths: .bugloop"),
        "{}",
        report.message
    );
}

/// The issue solved by a model that fixes the bug and makes the call `extra` in the same turn,
/// then says `answer`: escalated, nothing published. Its report.
async fn escalated_for(extra: (&'static str, serde_json::Value), answer: &str) -> SolveReport {
    let (repo, issue) = scenario().await;
    let model = Arc::new(ScriptedProvider::new([
        tool_reply(&[write("app/models.py", SOLVED), extra], usage()),
        text_reply(answer, usage()),
    ]));
    let report = escalated(&repo, model, issue).await;
    assert_eq!(git(repo.path(), &["branch", "--list", "bugloop/*"]), "");
    report
}

#[tokio::test]
async fn solving_without_test_commands_is_refused_before_anything() {
    let (repo, issue) = scenario().await;
    let error = run_solve(
        &repo,
        bugloop_config::Config::default(),
        silent_model(),
        None,
        issue,
    )
    .await
    .unwrap_err();
    assert!(error.to_string().contains("solve.test_commands"), "{error}");
    let forge = local_forge(repo.path()).await;
    assert!(forge.solve_history(issue).await.unwrap().is_empty());
}

/// A model that cannot call tools (the embedded one) cannot change code: the run says so before
/// the issue is taken, rather than record attempts that cannot succeed and escalate.
#[tokio::test]
async fn solving_with_a_model_that_cannot_call_tools_is_refused_before_anything() {
    let (repo, issue) = scenario().await;
    let before = labels(&repo, issue).await;
    let model = ScriptedProvider::new([]).with_capabilities(Capabilities {
        tools: false,
        ..Capabilities::default()
    });
    let error = run_solve(&repo, config(10), Arc::new(model), None, issue)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cannot call tools"), "{error}");
    let forge = local_forge(repo.path()).await;
    assert!(forge.solve_history(issue).await.unwrap().is_empty());
    assert_eq!(labels(&repo, issue).await, before);
}

fn requests_text(model: &ScriptedProvider) -> String {
    model
        .requests()
        .iter()
        .flat_map(|r| r.messages.iter().map(|m| m.content.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A size limit in lines cannot judge a binary file: a solution with one is escalated.
#[tokio::test]
async fn a_solution_with_a_binary_file_is_escalated() {
    let report = escalated_for(
        write("app/blob.bin", "\u{0}\u{1}\u{2}payload"),
        "Fixed, with a data file.",
    )
    .await;
    assert!(
        report.message.contains("app/blob.bin"),
        "{}",
        report.message
    );
}
