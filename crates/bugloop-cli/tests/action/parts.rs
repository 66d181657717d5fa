//! A pull request reviewed in parts by the Action on the GitHub simulator: each part's findings
//! are published as the part ends, and what GitHub shows in the end is one comment per finding
//! (the same problem reported by both parts is one) and one summary.

use bugloop_testkit::assert_contains;
use serde_json::{Value, json};

use bugloop_github_sim::fixture::{FixtureOptions, PullRequestFixture, off_by_one, script_file};

use super::{Run, run_on_opened, text};

/// A second file the pull request adds, large enough for a part of its own.
const UTIL: &str = "pub fn ratio(done: u32, total: u32) -> u32 {\n    // How much of the work is done, in percent of the total amount of work.\n    done * 100 / total\n}\n";

/// The pull request adding `last` to lib.rs and the whole of util.rs.
async fn with_util() -> PullRequestFixture {
    PullRequestFixture::new(FixtureOptions {
        head_files: &[("util.rs", UTIL)],
        ..FixtureOptions::default()
    })
    .await
}

/// The pull request opened, reviewed by the Action in parts of at most 100 tokens.
fn review_in_parts(fixture: &PullRequestFixture, model: &str) -> Run {
    review_in_parts_as(None, fixture, model)
}

/// [`review_in_parts`] as the user `user` (`None`: this test's).
fn review_in_parts_as(user: Option<u32>, fixture: &PullRequestFixture, model: &str) -> Run {
    run_on_opened(
        user,
        fixture,
        &[("BUGLOOP_REVIEW__MAX_TOKENS_PER_CALL", "100")],
        model,
    )
}

/// One part's answer: `findings`, then the four passes at once.
fn part(needle: &str, findings: &[Value]) -> Value {
    let mut calls: Vec<Value> = findings
        .iter()
        .map(|f| json!({"name": "report_finding", "arguments": f}))
        .collect();
    for pass in 1..=4 {
        calls.push(json!({"name": "submit_pass_results",
            "arguments": {"pass_number": pass, "summary": "ok"}}));
    }
    json!({"when_task": needle, "tool_calls": calls})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_published_part_by_part_are_one_comment_each_and_one_summary() {
    let fixture = with_util().await;
    let scripts = tempfile::tempdir().unwrap();
    let division = json!({"file": "util.rs", "line": 3, "evidence": "done * 100 / total",
        "title": "Division by zero when total is 0", "description": "`total` 0 panics.",
        "score": 7, "category": "reliability"});
    let mut again = off_by_one();
    again["title"] = json!("last() reads past the end of the slice");
    again["description"] = json!("The index equals the length, so it panics every time.");
    let model = script_file(
        scripts.path(),
        &[
            part("part 1 of 2", &[off_by_one(), division.clone()]),
            part("part 2 of 2", &[again, division]),
        ],
    );
    let run = review_in_parts(&fixture, &model);
    let said = run.ok();
    assert_contains(&said, "published when part 1 of 2 ended");
    assert!(!said.contains("updates the existing comment"), "{said}");
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 2, "{comments:#?}\n{said}");
    assert_eq!(fixture.bot_issue_comments().len(), 1, "one summary");
}

/// GitHub writes a part's comment but the answer is lost (a proxy's 502): the review's end finds
/// the comment in the conversation and does not write it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comment_written_early_whose_answer_was_lost_is_not_written_again() {
    let fixture = with_util().await;
    fixture
        .sim
        .inject(bugloop_github_sim::Fault::FailAfterWrite {
            method: "POST".into(),
            path_contains: "/pulls/7/comments".into(),
            status: 502,
        });
    let scripts = tempfile::tempdir().unwrap();
    let model = script_file(
        scripts.path(),
        &[
            part("part 1 of 2", &[off_by_one()]),
            part("part 2 of 2", &[]),
        ],
    );
    let run = review_in_parts(&fixture, &model);
    let said = text(&run.output);
    assert_eq!(fixture.finding_comments().len(), 1, "{said}");
    assert_eq!(fixture.bot_issue_comments().len(), 1, "one summary: {said}");
}

for_each_user! {
    /// A fork's pull request reviewed in parts, as root and as uid 65534: its review is reported,
    /// and no part publishes anything to it (a fork's review writes nothing, early or late).
    async fn a_forks_pull_request_reviewed_in_parts_gets_nothing_written(user) {
        let fixture = PullRequestFixture::new(FixtureOptions {
            head_files: &[("util.rs", UTIL)],
            fork: true,
            ..FixtureOptions::default()
        })
        .await;
        let scripts = tempfile::tempdir().unwrap();
        let model = script_file(
            scripts.path(),
            &[
                part("part 1 of 2", &[off_by_one()]),
                part("part 2 of 2", &[]),
            ],
        );
        let run = review_in_parts_as(user, &fixture, &model);
        let said = run.ok();
        assert_contains(&said, "Index one past the end");
        assert!(!said.contains("published when part"), "{said}");
        assert_eq!(fixture.finding_comments().len(), 0, "{said}");
        assert_eq!(fixture.bot_issue_comments().len(), 0, "{said}");
        let writes: Vec<_> = fixture
            .sim
            .requests()
            .into_iter()
            .filter(|r| r.method != "GET" && r.operation.is_none())
            .collect();
        assert_eq!(writes, Vec::new(), "{said}");
        let operations: Vec<_> = fixture
            .sim
            .requests()
            .into_iter()
            .filter_map(|r| r.operation)
            .collect();
        // GraphQL is only read (the threads); a mutation would be a write.
        assert!(
            operations.iter().all(|o| o == "ReviewThreads"),
            "{operations:?}"
        );
    }
}
