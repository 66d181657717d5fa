//! A large change's findings are published as each part ends: a later part's request already
//! finds the comments of the parts before it, the same problem reported by another part is no
//! second comment, and the review's end adds nothing twice (one comment per finding, one
//! summary).

use std::sync::{Arc, Mutex};

use bugloop_domain::thread::CommentKind;
use bugloop_forge::Forge;
use bugloop_forge::local::LocalForge;
use bugloop_git::{Git, Selection};
use bugloop_llm::scripted::{ScriptedProvider, tool_reply};
use bugloop_report::review::{CommentAction, ReportStage};
use serde_json::json;

use crate::support::{self, sql_format, tagged};
use bugloop_loops::comment_bodies::SUMMARY_TAG;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_parts_findings_are_published_as_the_part_ends() {
    let (repo, mut config) = super::parts::split_change();
    // One part after another, so which came before a request is certain.
    config.review.parallel_sessions = 1;
    let db_line = repo.line_of("src/db.rs", "format!(\"SELECT");
    let git = Git::open(repo.path()).unwrap();
    let forge = Arc::new(LocalForge::open(git.clone(), "bugloop").await.unwrap());
    let change = git.select(&Selection::Branch).unwrap().key;
    // For each request: the finding comments the conversation held when it came.
    let seen: Arc<Mutex<Vec<usize>>> = Arc::default();
    let provider = ScriptedProvider::new([]);
    for _ in 0..32 {
        let (forge, change, seen) = (forge.clone(), change.clone(), seen.clone());
        provider.push_fn(move |request| {
            let held = tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(forge.comments(&change))
            })
            .unwrap()
            .iter()
            .filter(|c| c.kind == CommentKind::Review || c.body.contains("bugloop-finding"))
            .count();
            seen.lock().unwrap().push(held);
            let shown = request.messages[0].content.clone();
            let mut calls = Vec::new();
            let sql = sql_format(db_line, 9);
            if shown.contains("SELECT * FROM users") {
                calls.push(("report_finding", sql));
            } else if shown.contains("src/gen") {
                // The parts of larger files, reviewed first, report the same problem in their
                // own words, less strongly.
                let mut again = sql;
                again["title"] = json!("The users query is assembled from raw input");
                again["description"] = json!("A quote in the name breaks out of the string.");
                again["score"] = json!(7);
                calls.push(("report_finding", again));
            }
            for pass in 1..=4 {
                calls.push((
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                ));
            }
            Ok(tool_reply(&calls, support::usage()))
        });
    }
    let (report, comments) =
        support::review_on(forge.as_ref(), &repo, config, Arc::new(provider), false).await;
    assert!(report.complete, "{:?}", report.errors);
    assert!(report.usage.sessions > 2, "{}", report.usage.sessions);
    // Published as its part ended: the last request already found a comment.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&0), "{seen:?}");
    assert!(seen.last().is_some_and(|held| *held >= 1), "{seen:?}");
    let early = report
        .changes
        .iter()
        .find(|c| c.stage == ReportStage::Reported && c.note.starts_with("published when part"))
        .unwrap_or_else(|| panic!("{:#?}", report.changes));
    // Exactly one comment for the problem, whichever part said it first, and one summary.
    let findings: Vec<_> = comments
        .iter()
        .filter(|c| c.body.contains("SQL") || c.body.contains("users query"))
        .filter(|c| !c.body.starts_with(SUMMARY_TAG))
        .collect();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    // Published by the first part that said it; the stronger report of a later part updated
    // that comment in place.
    assert!(
        findings[0].body.contains("SQL built with format!"),
        "{}",
        findings[0].body
    );
    assert_eq!(report.findings.len(), 1, "{:#?}", report.findings);
    let published = &report.findings[0];
    assert_eq!(published.finding.id.as_str(), early.id);
    assert_eq!(published.finding.score.get(), 9);
    assert_eq!(published.action, CommentAction::Added);
    let summaries = tagged(&comments, SUMMARY_TAG).len();
    assert_eq!(summaries, 1);
}
