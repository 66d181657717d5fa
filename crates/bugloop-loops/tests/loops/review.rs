//! End-to-end reviews with a scripted model over git repositories built by the tests: the local
//! forge, the four passes, grounding, every filter stage, publishing and re-runs.

use crate::support;

mod early;
mod schemas;

use bugloop_domain::score::Score;
use bugloop_domain::thread::{CommentKind, RESOLVED_PHRASE, ThreadStatus};
use bugloop_report::review::{CommentAction, ReportStage};
use serde_json::json;

use crate::support::{Repo, finding, run, run_full, session, structured_session};
use bugloop_llm::Role;
use bugloop_llm::scripted::{ScriptedProvider, tool_reply};

#[tokio::test]
async fn first_run_publishes_second_run_resolves_and_repeats_nothing() {
    let repo = Repo::with_feature();
    let percentile = repo.line_of("src/stats.rs", "sorted[index]");
    let query = repo.line_of("src/db.rs", "format!(\"SELECT");
    let script = session(
        vec![
            finding(
                "src/stats.rs",
                percentile,
                "sorted[index]",
                "Index out of bounds when p is 1.0",
                "With p = 1.0 the index equals the length and the lookup panics.",
                7,
                "logic",
            ),
            finding(
                "src/db.rs",
                query,
                "let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);",
                "SQL injection through the user name",
                "The name is formatted into the SQL text; a quote in it changes the query.",
                9,
                "security",
            ),
        ],
        vec![],
    );
    let (first, comments) = run(&repo, support::config(), script).await;
    insta::assert_json_snapshot!("first_run", support::digest(&first));
    let roots: Vec<_> = comments
        .iter()
        .filter(|c| c.in_reply_to.is_none())
        .collect();
    // Two line comments and the summary.
    assert_eq!(roots.len(), 3, "{roots:#?}");
    assert_eq!(
        roots
            .iter()
            .filter(|c| c.kind == CommentKind::Review)
            .count(),
        2
    );
    let index_id = first
        .findings
        .iter()
        .find(|f| f.finding.score == Score::saturating(7))
        .unwrap()
        .finding
        .id
        .clone();
    let sql_id = first
        .findings
        .iter()
        .find(|f| f.finding.score == Score::saturating(9))
        .unwrap()
        .finding
        .id
        .clone();

    // The developer fixes the index; the model resolves it and reports the injection again in
    // other words under another id.
    repo.write(
        "src/stats.rs",
        &repo
            .read("src/stats.rs")
            .replace("sorted[index]", "sorted[index.min(sorted.len() - 1)]"),
    );
    repo.commit("clamp the index");
    let script = session(
        vec![finding(
            "src/db.rs",
            query,
            "let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);",
            "User name formatted into SQL query: injection",
            "A quote in the user name changes the SQL query text, an injection.",
            9,
            "security",
        )],
        vec![(
            index_id.as_str().to_owned(),
            "the index is clamped to the last element".to_owned(),
        )],
    );
    let (second, after) = run(&repo, support::config(), script).await;
    insta::assert_json_snapshot!("second_run", support::digest(&second));
    let roots_after: Vec<_> = after.iter().filter(|c| c.in_reply_to.is_none()).collect();
    assert_eq!(roots_after.len(), 3, "no new comment: {roots_after:#?}");
    assert_eq!(second.findings.len(), 1);
    assert_eq!(
        second.findings[0].finding.id, sql_id,
        "merged into the existing finding"
    );
    assert!(second.findings[0].rediscovered_as.is_some());
    let resolved_reply = after
        .iter()
        .find(|c| c.body.starts_with(RESOLVED_PHRASE))
        .expect("a resolve reply");
    assert!(resolved_reply.body.contains("clamped"));
    assert!(after.iter().any(|c| c.thread_resolved));

    // A third run on unchanged code where the model says the same again (a full review: an
    // incremental one would not ask): nothing changes.
    let script = session(
        vec![finding(
            "src/db.rs",
            query,
            "let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);",
            "User name formatted into SQL query: injection",
            "A quote in the user name changes the SQL query text, an injection.",
            9,
            "security",
        )],
        vec![],
    );
    let (third, again) = run_full(&repo, support::config(), script).await;
    assert_eq!(third.findings[0].action, CommentAction::Unchanged);
    assert_eq!(again.iter().filter(|c| c.in_reply_to.is_none()).count(), 3);
    assert_eq!(again.len(), after.len(), "no new comment or reply");
}

#[tokio::test]
async fn ungrounded_and_unsafe_findings_are_dropped_and_counted() {
    let repo = Repo::with_feature();
    let percentile = repo.line_of("src/stats.rs", "sorted[index]");
    let script = session(
        vec![
            // Evidence two lines away: corrected.
            finding(
                "src/stats.rs",
                percentile - 2,
                "sorted[index]",
                "Index out of bounds when p is 1.0",
                "p = 1.0 panics.",
                7,
                "logic",
            ),
            // Made-up evidence.
            finding(
                "src/stats.rs",
                percentile,
                "unsafe { *ptr }",
                "Dereference of a raw pointer",
                "Invented.",
                8,
                "reliability",
            ),
            // Past the end of the file.
            finding(
                "src/stats.rs",
                400,
                "sorted[index]",
                "Line past the end",
                "Wrong line.",
                8,
                "logic",
            ),
            // A file that does not exist.
            finding(
                "src/nope.rs",
                1,
                "x",
                "Missing file",
                "No such file.",
                8,
                "logic",
            ),
            // Path traversal.
            finding(
                "../../etc/passwd",
                1,
                "root",
                "Reads outside",
                "Traversal.",
                9,
                "security",
            ),
        ],
        vec![],
    );
    let (report, _) = run(&repo, support::config(), script).await;
    insta::assert_json_snapshot!("ungrounded", support::digest(&report));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].finding.line, Some(percentile));
    assert!(report.findings[0].note.is_some());
}

#[tokio::test]
async fn ignore_globs_threshold_promotion_elevation_and_overflow() {
    let repo = Repo::with_feature();
    repo.write("README.md", "# Shop\n\nWe take card payments.\n");
    let mut extra = String::new();
    for i in 0..8 {
        extra.push_str(&format!("pub fn helper_{i}(x: u32) -> u32 {{ x + {i} }}\n"));
    }
    repo.write("src/helpers.rs", &extra);
    repo.write("generated/schema.rs", "pub const X: u32 = 1;\n");
    repo.commit("more");
    let query = repo.line_of("src/db.rs", "format!(\"SELECT");
    let mut findings = vec![
        // Ignored by glob.
        finding(
            "generated/schema.rs",
            1,
            "pub const X",
            "Generated constant",
            "Generated code.",
            8,
            "logic",
        ),
        // Below the threshold, alone on its file: silent.
        finding(
            "src/stats.rs",
            repo.line_of("src/stats.rs", "let mut sorted"),
            "let mut sorted",
            "Clone could be avoided",
            "Sorting a copy allocates.",
            3,
            "performance",
        ),
        // Security in a repository that takes payments: 6 + 2 = 8.
        finding(
            "src/db.rs",
            query,
            "format!(\"SELECT",
            "SQL built with format!",
            "Injection risk when name has quotes.",
            6,
            "security",
        ),
    ];
    // Five low findings on one file: elevated into one.
    for i in 0..5 {
        let line = repo.line_of("src/helpers.rs", &format!("helper_{i}("));
        findings.push(finding(
            "src/helpers.rs",
            line,
            &format!("helper_{i}"),
            &format!("helper_{i} has no documentation for its offset rule number {i}"),
            &format!("Undocumented offset {i} in helper_{i}."),
            4,
            "maintainability",
        ));
    }
    // Enough high findings to overflow a limit of 3.
    let distinct = [
        (
            "Addition wraps for inputs near the maximum",
            "Values close to u32::MAX overflow and panic in debug builds.",
        ),
        (
            "Offset table lookup skips the last entry",
            "The loop bound excludes the final element of the table.",
        ),
        (
            "Zero divisor reaches the modulo",
            "A caller passing zero makes the remainder operation crash.",
        ),
    ];
    for (i, (title, description)) in (5..8).zip(distinct) {
        let line = repo.line_of("src/helpers.rs", &format!("helper_{i}("));
        findings.push(finding(
            "src/helpers.rs",
            line,
            &format!("helper_{i}"),
            title,
            description,
            7,
            "logic",
        ));
    }
    let mut config = support::config();
    config.review.ignore_files = vec!["generated/**".to_owned()];
    config.review.comment_limit = 3;
    let (report, comments) = run(&repo, config.clone(), session(findings.clone(), vec![])).await;
    insta::assert_json_snapshot!("filters", support::digest(&report));
    // The same review again, in full: the limit holds per change, so nothing is added.
    let (again, after) = run_full(&repo, config, session(findings.clone(), vec![])).await;
    assert_eq!(after.len(), comments.len(), "{:#?}", again.findings);
    assert_eq!(again.overflow.count, 2);
    assert!(report.sensitive_data.sensitive);
    let sql = report
        .findings
        .iter()
        .find(|f| f.finding.file.as_deref() == Some("src/db.rs"))
        .unwrap();
    assert_eq!(sql.finding.score, Score::saturating(8));
    assert_eq!(report.findings.len(), 3);
    assert_eq!(report.overflow.count, 2);
    let overflow_comment = |comments: &[bugloop_domain::thread::Comment]| {
        comments
            .iter()
            .find(|c| {
                c.body
                    .starts_with(bugloop_loops::comment_bodies::OVERFLOW_TAG)
            })
            .map(|c| c.body.clone())
            .unwrap()
    };
    assert!(overflow_comment(&comments).contains("Zero divisor reaches the modulo"));

    // What the stages changed is in the summary comment, not only in the report.
    let summary = comments
        .iter()
        .find(|c| {
            c.body
                .starts_with(bugloop_loops::comment_bodies::SUMMARY_TAG)
        })
        .unwrap();
    assert!(
        summary.body.contains("#### Changed before publishing")
            && summary
                .body
                .contains("`security_promotion` sql-built-with-format")
            && summary.body.contains("score 6 -> 8")
            && summary.body.contains("`elevation` elevated-")
            && summary
                .body
                .contains("5 findings below the threshold combined"),
        "{}",
        summary.body
    );

    // A limit that leaves nothing over it: the two findings get their comments and the old list
    // is replaced, not left claiming they have none.
    let mut roomy = support::config();
    roomy.review.ignore_files = vec!["generated/**".to_owned()];
    let (cleared, after) = run_full(&repo, roomy, session(findings, vec![])).await;
    assert_eq!(cleared.overflow.count, 0);
    assert_eq!(
        cleared
            .findings
            .iter()
            .filter(|f| f.action == CommentAction::Added)
            .count(),
        2
    );
    let body = overflow_comment(&after);
    assert!(
        body.contains("No findings over the comment limit"),
        "{body}"
    );
    assert!(!body.contains("Zero divisor"), "{body}");
    let overflow_comments = after
        .iter()
        .filter(|c| {
            c.body
                .starts_with(bugloop_loops::comment_bodies::OVERFLOW_TAG)
        })
        .count();
    assert_eq!(overflow_comments, 1);
}

/// Answers every turn of every session: in pass 1 a finding with the same id for each file of
/// the part it is shown, then the passes.
fn same_id_in_every_part(
    stats_line: u32,
    db_line: u32,
) -> impl FnOnce(&bugloop_llm::ChatRequest) -> Result<bugloop_llm::ChatResponse, bugloop_llm::LlmError>
+ Send
+ 'static {
    move |request| {
        let done = request
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .filter(|c| c.name == "submit_pass_results")
            .count();
        let pass = done + 1;
        let mut calls = Vec::new();
        let shown = request.messages.first().map_or("", |m| m.content.as_str());
        if pass == 1 && shown.contains("sorted[index]") {
            let mut f = finding(
                "src/stats.rs",
                stats_line,
                "sorted[index]",
                "Index out of bounds when p is 1.0",
                "p = 1.0 indexes one past the end.",
                8,
                "logic",
            );
            f["id"] = json!("shared");
            calls.push(("report_finding", f));
        }
        if pass == 1 && shown.contains("SELECT * FROM users") {
            let mut f = finding(
                "src/db.rs",
                db_line,
                "format!(\"SELECT",
                "SQL built with format!",
                "Injection risk when name has quotes.",
                8,
                "security",
            );
            f["id"] = json!("shared");
            calls.push(("report_finding", f));
        }
        calls.push((
            "submit_pass_results",
            json!({"pass_number": pass, "summary": "ok"}),
        ));
        Ok(tool_reply(&calls, support::usage()))
    }
}

#[tokio::test]
async fn renamed_ids_and_corrected_lines_reach_the_report_and_the_summary() {
    let repo = Repo::with_feature();
    let stats_line = repo.line_of("src/stats.rs", "sorted[index]");
    let db_line = repo.line_of("src/db.rs", "format!(\"SELECT");
    let mut config = support::config();
    // One file per part, so each part's model picks the same id for its own problem.
    config.review.max_tokens_per_call = 120;
    let scripted = ScriptedProvider::new([]);
    for _ in 0..40 {
        // The stats finding is reported two lines off; grounding corrects it.
        scripted.push_fn(same_id_in_every_part(stats_line - 2, db_line));
    }
    let (report, comments) = run(&repo, config, scripted).await;
    assert!(report.usage.sessions >= 2, "{report:#?}");
    let ids: Vec<&str> = report
        .findings
        .iter()
        .map(|f| f.finding.id.as_str())
        .collect();
    assert!(
        ids.contains(&"shared") && ids.contains(&"shared-2"),
        "{ids:?}"
    );
    let renamed = report
        .changes
        .iter()
        .find(|c| c.stage == ReportStage::Reported)
        .unwrap();
    assert_eq!(renamed.id, "shared-2");
    assert!(
        renamed.note.contains("renamed from shared"),
        "{}",
        renamed.note
    );
    let corrected = report
        .changes
        .iter()
        .find(|c| c.stage == ReportStage::Grounding)
        .unwrap();
    assert!(
        corrected.note.contains(&stats_line.to_string()),
        "{}",
        corrected.note
    );
    let summary = comments
        .iter()
        .find(|c| {
            c.body
                .starts_with(bugloop_loops::comment_bodies::SUMMARY_TAG)
        })
        .unwrap();
    assert!(
        summary
            .body
            .contains("`reported` shared-2: renamed from shared")
            && summary
                .body
                .contains(&format!("`grounding` {}: {}", corrected.id, corrected.note)),
        "{}",
        summary.body
    );
}

#[tokio::test]
async fn models_without_tools_answer_once_and_bad_entries_are_counted() {
    let repo = Repo::with_feature();
    let percentile = repo.line_of("src/stats.rs", "sorted[index]");
    let answer = json!({
        "findings": [
            {"file": "src/stats.rs", "line": percentile, "evidence": "sorted[index]", "title": "Index out of bounds", "description": "p = 1.0 panics.", "score": 7, "category": "logic"},
            {"file": "src/stats.rs", "line": 0, "evidence": "x", "title": "Line zero", "description": "d", "score": 7, "category": "logic"},
            {"file": "src/stats.rs", "line": 2, "evidence": "x", "title": "Score eleven", "description": "d", "score": 11, "category": "logic"}
        ],
        "resolved": [{"id": "never-raised", "reason": "?"}],
        "summary": "One real problem."
    });
    let (report, _) = run(&repo, support::config(), structured_session(&answer)).await;
    insta::assert_json_snapshot!("structured", support::digest(&report));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(
        report
            .dropped
            .iter()
            .filter(|d| d.stage == ReportStage::Validation)
            .count(),
        3
    );
}

#[tokio::test]
async fn the_report_matches_its_documented_schema() {
    let repo = Repo::with_feature();
    let percentile = repo.line_of("src/stats.rs", "sorted[index]");
    let script = session(
        vec![finding(
            "src/stats.rs",
            percentile,
            "sorted[index]",
            "Index out of bounds",
            "p = 1.0 panics.",
            7,
            "logic",
        )],
        vec![],
    );
    let (report, _) = run(&repo, support::config(), script).await;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/review-report.schema.json"
    );
    let generated = bugloop_report::review::report_schema();
    if std::env::var_os("BUGLOOP_UPDATE_SCHEMA").is_some() {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&generated).unwrap() + "\n",
        )
        .unwrap();
    }
    let documented: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        documented, generated,
        "docs/review-report.schema.json is out of date: rerun this test with BUGLOOP_UPDATE_SCHEMA=1"
    );
    let validator = jsonschema::validator_for(&documented).unwrap();
    let value = serde_json::to_value(&report).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[tokio::test]
async fn large_changes_are_split_and_what_does_not_fit_is_listed() {
    let repo = Repo::with_feature();
    for i in 0..6 {
        let body: String = (0..40)
            .map(|l| format!("pub const C{i}_{l}: u32 = {l};\n"))
            .collect();
        repo.write(&format!("src/gen{i}.rs"), &body);
    }
    repo.commit("many files");
    let mut config = support::config();
    config.review.max_tokens_per_call = 700;
    // Every session ends at once; how many there were is what matters.
    let scripted = ScriptedProvider::new([]);
    for _ in 0..40 {
        for pass in 1..=4 {
            scripted.push(tool_reply(
                &[(
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                )],
                support::usage(),
            ));
        }
    }
    let (report, _) = run(&repo, config, scripted).await;
    assert!(report.usage.sessions > 3, "{}", report.usage.sessions);
    assert!(report.complete);
    let mut reviewed: Vec<_> = report.passes.iter().map(|p| p.call).collect();
    reviewed.dedup();
    assert_eq!(reviewed.len(), report.usage.sessions);
}

#[tokio::test]
async fn a_budget_stop_lists_the_rest_as_unreviewed() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.budgets.max_input_tokens = 1;
    let (report, _) = run(&repo, config, session(vec![], vec![])).await;
    assert!(!report.complete);
    assert!(report.errors[0].contains("budget"), "{:?}", report.errors);
    assert!(!report.unreviewed.is_empty());
}

/// The feature branch plus six generated files, so that at 700 tokens a call the change is
/// reviewed in several sessions.
pub(super) fn split_change() -> (Repo, bugloop_config::Config) {
    let repo = Repo::with_feature();
    for i in 0..6 {
        let body: String = (0..40)
            .map(|l| format!("pub const C{i}_{l}: u32 = {l};\n"))
            .collect();
        repo.write(&format!("src/gen{i}.rs"), &body);
    }
    repo.commit("many files");
    let mut config = support::config();
    config.review.max_tokens_per_call = 700;
    (repo, config)
}

/// A model that finishes every pass at once, except in the session shown `stubborn` (a file
/// name), where it only ever reads its todo list; it answers up to `calls` requests.
/// The pass a follow-up asks for ("Go on with pass N"), if the last user message is one.
fn pass_asked(request: &bugloop_llm::ChatRequest) -> Option<usize> {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.split("Go on with pass ").nth(1))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
}

fn passes_except(stubborn: Option<&'static str>, calls: usize) -> ScriptedProvider {
    let provider = ScriptedProvider::new([]);
    for _ in 0..calls {
        provider.push_fn(move |request| {
            let change = request
                .messages
                .iter()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.clone())
                .unwrap_or_default();
            if stubborn.is_some_and(|file| change.contains(file)) {
                return Ok(tool_reply(&[("todo_read", json!({}))], support::usage()));
            }
            let pass = pass_asked(request).unwrap_or_else(|| {
                request
                    .messages
                    .iter()
                    .filter(|m| m.role == Role::User)
                    .count()
            });
            Ok(tool_reply(
                &[(
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                )],
                support::usage(),
            ))
        });
    }
    provider
}

/// The run's turn budget (6) lets the first session finish its four passes and stops the second
/// after two calls: the first session's files are reviewed, the second's and every later one's
/// are listed as not reviewed, with the budget as the reason.
#[tokio::test]
async fn a_budget_stops_the_review_in_its_second_session() {
    let (repo, mut config) = split_change();
    config.budgets.max_turns = 6;
    let (report, _) = run(&repo, config, passes_except(None, 40)).await;
    assert!(report.usage.sessions > 2, "{}", report.usage.sessions);
    assert_eq!(report.usage.model_calls, 6);
    assert!(!report.complete);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].contains("limit of 6 model turns"),
        "{:?}",
        report.errors
    );
    let first: Vec<u32> = report
        .passes
        .iter()
        .filter(|p| p.call == 1)
        .map(|p| p.pass)
        .collect();
    assert_eq!(first, [1, 2, 3, 4]);
    let second: Vec<u32> = report
        .passes
        .iter()
        .filter(|p| p.call == 2)
        .map(|p| p.pass)
        .collect();
    assert_eq!(second, [1, 2]);
    assert!(report.passes.iter().all(|p| p.call <= 2));
    // Everything from the second session on is listed; nothing of the first.
    let unreviewed: Vec<&str> = report.unreviewed.iter().map(|u| u.path.as_str()).collect();
    assert!(!unreviewed.is_empty());
    let files = repo_files_changed(&repo);
    assert!(unreviewed.len() < files.len(), "{unreviewed:?}");
    for entry in &report.unreviewed {
        assert!(entry.reason.contains("budget"), "{entry:?}");
    }
}

fn repo_files_changed(repo: &Repo) -> Vec<String> {
    support::git(repo.path(), &["diff", "--name-only", "main...HEAD"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Each session of a split change gets its share of the run's turns (60 over the sessions), so
/// a session that never finishes stops at its share and the others still run all four passes.
#[tokio::test]
async fn sessions_share_the_turn_budget() {
    let (repo, mut config) = split_change();
    config.budgets.max_turns = 60;
    let scripted = passes_except(Some("src/gen3.rs"), 200);
    let (report, _) = run(&repo, config, scripted).await;
    let sessions = u32::try_from(report.usage.sessions).unwrap();
    assert!(sessions > 2, "{sessions}");
    let share = (60 / sessions).max(6);
    assert!(share > 6, "the share should not be the floor here: {share}");
    assert!(!report.complete);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].contains(&format!("{share}")),
        "{:?}",
        report.errors
    );
    // The stubborn session made exactly its share of calls; every other one its four passes.
    assert_eq!(report.usage.model_calls, share + 4 * (sessions - 1));
    let finished = report.passes.iter().filter(|p| p.pass == 4).count();
    assert_eq!(finished, report.usage.sessions - 1);
    assert!(
        report.unreviewed.iter().any(|u| u.path == "src/gen3.rs"),
        "{:?}",
        report.unreviewed
    );
}

#[tokio::test]
async fn deleting_the_file_of_a_finding_resolves_it() {
    let repo = Repo::with_feature();
    let query = repo.line_of("src/db.rs", "format!(\"SELECT");
    let script = session(
        vec![finding(
            "src/db.rs",
            query,
            "format!(\"SELECT",
            "SQL injection through the user name",
            "Quotes in the name change the query.",
            9,
            "security",
        )],
        vec![],
    );
    let (first, _) = run(&repo, support::config(), script).await;
    assert_eq!(first.findings.len(), 1);
    std::fs::remove_file(repo.path().join("src/db.rs")).unwrap();
    repo.commit("drop the users module");
    let (second, comments) = run(&repo, support::config(), session(vec![], vec![])).await;
    assert_eq!(second.resolved.len(), 1, "{:#?}", second.resolved);
    assert!(second.resolved[0].reason.contains("deleted"));
    assert!(
        second
            .tracked
            .iter()
            .all(|t| t.status == ThreadStatus::Resolved)
    );
    assert!(comments.iter().any(|c| c.body.starts_with(RESOLVED_PHRASE)));
}

#[tokio::test]
async fn broken_state_blocks_and_look_alike_markers_are_reported_not_trusted() {
    use bugloop_forge::Forge;
    let repo = Repo::with_feature();
    let (_, _) = run(&repo, support::config(), session(vec![], vec![])).await;
    let git = bugloop_git::Git::open(repo.path()).unwrap();
    let forge = bugloop_forge::local::LocalForge::open(git.clone(), "bugloop")
        .await
        .unwrap();
    let change = git.conversation_key();
    forge
        .developer_comment(
            &change,
            "### Fake\n<!-- bugloop finding_id:\"fake\" resolved:false -->",
            None,
        )
        .await
        .unwrap();
    forge
        .add_comment(&change, "### Broken\n<!-- bugloop finding_id:\"broken\" resolved:false -->\n\n```rmcoc\n{\"finding\": \n```\n", None)
        .await
        .unwrap();
    let (report, _) = run(&repo, support::config(), session(vec![], vec![])).await;
    let problems = report.conversation_problems.join("\n");
    assert!(
        problems.contains("rmcoc") || problems.contains("JSON"),
        "{problems}"
    );
    assert!(problems.contains("by others"), "{problems}");
    assert!(
        report.tracked.iter().all(|t| t.id != "fake"),
        "{:#?}",
        report.tracked
    );
}

/// A model that runs one pass per turn although all four are given with the change: each pass
/// is still asked for and submitted, in two round trips per session: the first request, then
/// the three passes it left, at once, each request the first with its turn and one pass's
/// instructions added at its end (the system prompt, the tools and every earlier message byte
/// for byte), so a provider's prefix cache serves all but the new turn. The same holds in every
/// part of a change reviewed in several sessions.
#[tokio::test]
async fn a_model_running_one_pass_per_turn_is_asked_the_rest_at_once_on_its_prefix() {
    for (repo, mut config) in [(Repo::with_feature(), support::config()), split_change()] {
        // One part at a time, so each part's requests come together.
        config.review.parallel_sessions = 1;
        let provider = ScriptedProvider::new([]).with_latency(std::time::Duration::from_millis(30));
        for _ in 0..64 {
            provider.push_fn(|request| {
                let asked = pass_asked(request);
                let submitted = request
                    .messages
                    .iter()
                    .flat_map(|m| &m.tool_calls)
                    .filter(|c| c.name == "submit_pass_results")
                    .count();
                Ok(tool_reply(
                    &[(
                        "submit_pass_results",
                        json!({"pass_number": asked.unwrap_or(submitted + 1), "summary": "one at a time"}),
                    )],
                    support::usage(),
                ))
            });
        }
        let provider = std::sync::Arc::new(provider);
        let (report, _) = support::review_branch(&repo, config, provider.clone(), false).await;
        assert!(report.unreviewed.is_empty(), "{:?}", report.unreviewed);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let requests = provider.requests();
        let spans = provider.spans();
        let sessions = report.usage.sessions;
        assert_eq!(requests.len(), 4 * sessions, "four requests per session");
        let mut passes: Vec<(usize, u32)> =
            report.passes.iter().map(|p| (p.call, p.pass)).collect();
        passes.sort_unstable();
        let asked: Vec<(usize, u32)> = (1..=sessions)
            .flat_map(|c| (1..=4).map(move |p| (c, p)))
            .collect();
        assert_eq!(passes, asked, "every pass of every part, once");
        for (session, times) in requests.chunks(4).zip(spans.chunks(4)) {
            let (first, rest) = session.split_first().unwrap();
            for pass in 1..=4 {
                assert!(
                    first.messages[0]
                        .content
                        .contains(&format!("# Pass {pass} of 4")),
                    "every pass is given with the change"
                );
            }
            for (pass, after) in (2..=4).zip(rest) {
                assert_eq!(first.system, after.system);
                assert_eq!(
                    serde_json::to_string(&first.tools).unwrap(),
                    serde_json::to_string(&after.tools).unwrap()
                );
                assert_eq!(after.messages.len(), first.messages.len() + 3);
                for (a, b) in first.messages.iter().zip(&after.messages) {
                    assert_eq!(
                        serde_json::to_string(a).unwrap(),
                        serde_json::to_string(b).unwrap(),
                        "an earlier message changed"
                    );
                }
                let last = &after.messages.last().unwrap().content;
                assert!(last.contains(&format!("pass {pass} of 4")), "{last}");
            }
            // Two round trips: the three passes left overlap, all after the first came back.
            let (first, rest) = times.split_first().unwrap();
            assert!(rest.iter().all(|(start, _)| *start >= first.1));
            let last_start = rest.iter().map(|(start, _)| *start).max().unwrap();
            let first_end = rest.iter().map(|(_, end)| *end).min().unwrap();
            assert!(last_start < first_end, "{times:?}");
        }
    }
}

/// The parts of a large change are reviewed at once (`review.parallel_sessions`), every pass of
/// every part still asked: with a model that takes a moment to answer (all four passes in one
/// reply, so a part is one request), requests of different parts overlap in time (the scripted
/// model records when each came and went); with 1 none do.
#[tokio::test]
async fn the_parts_of_a_large_change_are_reviewed_at_once() {
    for (at_once, overlap) in [(4, true), (1, false)] {
        let (repo, mut config) = split_change();
        config.review.parallel_sessions = at_once;
        let provider = ScriptedProvider::new([]);
        for _ in 0..64 {
            provider.push_fn(|_| {
                let submit = |pass: u32| {
                    let summary = json!({"pass_number": pass, "summary": "ok"});
                    ("submit_pass_results", summary)
                };
                Ok(tool_reply(
                    &(1..=4).map(submit).collect::<Vec<_>>(),
                    support::usage(),
                ))
            });
        }
        let provider =
            std::sync::Arc::new(provider.with_latency(std::time::Duration::from_millis(20)));
        let (report, _) = support::review_branch(&repo, config, provider.clone(), false).await;
        assert!(report.complete, "{:?}", report.errors);
        let sessions = report.usage.sessions;
        assert!(sessions > 2, "{sessions}");
        for call in 1..=sessions {
            let mut passes: Vec<u32> = report
                .passes
                .iter()
                .filter(|p| p.call == call)
                .map(|p| p.pass)
                .collect();
            passes.sort_unstable();
            assert_eq!(passes, [1, 2, 3, 4], "part {call}: {:?}", report.passes);
        }
        let spans = provider.spans();
        let overlapping = spans
            .iter()
            .enumerate()
            .any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1));
        assert_eq!(overlapping, overlap, "parallel_sessions {at_once}");
    }
}
