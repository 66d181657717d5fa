//! End-to-end reviews with a scripted model over git repositories built by the tests: the local
//! forge, the four passes, grounding, every filter stage, publishing and re-runs.

use crate::support;

mod early;
mod parts;
mod schemas;

use bugloop_domain::score::Score;
use bugloop_domain::thread::{CommentKind, RESOLVED_PHRASE, ThreadStatus};
use bugloop_report::review::{CommentAction, ReportStage};
use serde_json::json;

use crate::support::{
    Repo, finding, index_past_end, off_by_one, run, session, sql_format, sql_injection,
    structured_session, tagged,
};
use bugloop_llm::Role;
use bugloop_llm::scripted::{ScriptedProvider, tool_reply};
use bugloop_loops::comment_bodies::{OVERFLOW_TAG, SUMMARY_TAG};

#[tokio::test]
async fn first_run_publishes_second_run_resolves_and_repeats_nothing() {
    let repo = Repo::with_feature();
    let percentile = repo.line_of("src/stats.rs", "sorted[index]");
    let query = repo.line_of("src/db.rs", "format!(\"SELECT");
    let script = session(vec![off_by_one(percentile), sql_injection(query)], vec![]);
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
    let id_scored = |score: i64| {
        first
            .findings
            .iter()
            .find(|f| f.finding.score == Score::saturating(score))
            .unwrap()
            .finding
            .id
            .clone()
    };
    let index_id = id_scored(7);
    let sql_id = id_scored(9);

    // The developer fixes the index; the model resolves it and reports the injection again in
    // other words under another id.
    repo.write(
        "src/stats.rs",
        &repo
            .read("src/stats.rs")
            .replace("sorted[index]", "sorted[index.min(sorted.len() - 1)]"),
    );
    repo.commit("clamp the index");
    let reworded = finding(
        "src/db.rs",
        query,
        "let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);",
        "User name formatted into SQL query: injection",
        "A quote in the user name changes the SQL query text, an injection.",
        9,
        "security",
    );
    let script = session(
        vec![reworded.clone()],
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
    let script = session(vec![reworded], vec![]);
    let (third, again) =
        support::review_branch(&repo, support::config(), std::sync::Arc::new(script), true).await;
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
        sql_format(query, 6),
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
    let (again, after) = support::review_branch(
        &repo,
        config,
        std::sync::Arc::new(session(findings.clone(), vec![])),
        true,
    )
    .await;
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
        tagged(comments, OVERFLOW_TAG)
            .first()
            .map(|c| c.body.clone())
            .unwrap()
    };
    assert!(overflow_comment(&comments).contains("Zero divisor reaches the modulo"));

    // What the stages changed is in the summary comment, not only in the report.
    let summary = tagged(&comments, SUMMARY_TAG)[0];
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
    let (cleared, after) = support::review_branch(
        &repo,
        roomy,
        std::sync::Arc::new(session(findings, vec![])),
        true,
    )
    .await;
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
    let overflow_comments = tagged(&after, OVERFLOW_TAG).len();
    assert_eq!(overflow_comments, 1);
}

/// How many passes the conversation of `request` submitted.
fn passes_submitted(request: &bugloop_llm::ChatRequest) -> usize {
    request
        .messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .filter(|c| c.name == "submit_pass_results")
        .count()
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
        let pass = passes_submitted(request) + 1;
        let mut calls = Vec::new();
        let shown = request.messages.first().map_or("", |m| m.content.as_str());
        let index = index_past_end(stats_line, 8);
        // Each finding, reported where its code is shown.
        for (code, mut f) in [
            ("sorted[index]", index),
            ("SELECT * FROM users", sql_format(db_line, 8)),
        ] {
            if pass == 1 && shown.contains(code) {
                f["id"] = json!("shared");
                calls.push(("report_finding", f));
            }
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
    let summary = tagged(&comments, SUMMARY_TAG)[0];
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
    let script = session(vec![index_past_end(percentile, 7)], vec![]);
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
    let value = serde_json::to_value(&report).unwrap();
    bugloop_testkit::schema::assert_valid(&documented, &value, "the review report");
}

#[tokio::test]
async fn deleting_the_file_of_a_finding_resolves_it() {
    let repo = Repo::with_feature();
    let query = repo.line_of("src/db.rs", "format!(\"SELECT");
    let script = session(vec![sql_injection(query)], vec![]);
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
