//! A finding tracked on a pull request until its code is fixed, whatever the fix looks like:
//! each push is a `synchronize` event the Action reviews on the GitHub simulator, with a
//! scripted model. What GitHub shows is checked: the finding's review comment and its thread,
//! the summary comment, the SARIF file.

use bugloop_testkit::assert_contains;
use bugloop_testkit::model::{
    STATS_BASE as BASE, stats_feature as feature, stats_off_by_one as off_by_one,
};
use serde_json::Value;

use bugloop_github_sim::fixture::{
    FixtureOptions, NUMBER, PullRequestFixture, review_lines, script_file,
};

use super::{opened_as, push_and_review, text};

/// The pull request (which adds the off-by-one in `stats.py`), reviewed once.
async fn reviewed(scripts: &std::path::Path) -> PullRequestFixture {
    let feature = feature();
    let fixture = PullRequestFixture::new(FixtureOptions {
        base_files: &[("stats.py", BASE)],
        head_files: &[("stats.py", &feature)],
        ..FixtureOptions::default()
    })
    .await;
    let model = script_file(scripts, &review_lines(&[off_by_one()]));
    opened_as(None, &fixture, &[], &model);
    assert_eq!(fixture.finding_comments().len(), 1);
    fixture
}

fn quiet(scripts: &std::path::Path) -> String {
    script_file(scripts, &review_lines(&[]))
}

fn sarif_results(sarif: &Value) -> usize {
    sarif["runs"][0]["results"].as_array().map_or(0, Vec::len)
}

fn summary(fixture: &PullRequestFixture) -> String {
    fixture
        .bot_issue_comments()
        .into_iter()
        .map(|c| c.body)
        .find(|b| b.contains("bugloop:summary"))
        .unwrap_or_default()
}

/// The finding's thread on GitHub: whether it is resolved, and the bot's replies in it.
fn thread(fixture: &PullRequestFixture) -> (bool, Vec<String>) {
    let root = &fixture.finding_comments()[0];
    let resolved = fixture
        .sim
        .threads(NUMBER)
        .into_iter()
        .find(|t| t.root == root.id)
        .unwrap()
        .resolved;
    let replies = fixture
        .sim
        .review_comments(NUMBER)
        .into_iter()
        .filter(|c| c.in_reply_to == Some(root.id))
        .map(|c| c.body)
        .collect();
    (resolved, replies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_put_back_as_the_base_has_it_resolves_and_a_revert_raises_it_again() {
    let scripts = tempfile::tempdir().unwrap();
    let fixture = reviewed(scripts.path()).await;
    let quiet = quiet(scripts.path());
    let fixed = feature().replace("range(len(xs) + 1)", "range(len(xs))");
    let (run, sarif) = push_and_review(&fixture, &[("stats.py", Some(&fixed))], &quiet);
    run.ok();
    let reason = format!(
        "the code it quoted was changed in {}",
        &fixture.dev.head()[..7]
    );
    let (resolved, replies) = thread(&fixture);
    assert!(resolved, "the review thread is resolved");
    assert!(replies.iter().any(|r| r.contains(&reason)), "{replies:#?}");
    assert_contains(&summary(&fixture), &reason);
    assert_contains(&run.summary, &reason);
    assert_eq!(sarif_results(&sarif), 0, "{sarif:#}");

    // Reverted: raised again in the same thread, which is reopened; no second comment.
    let (run, sarif) = push_and_review(
        &fixture,
        &[("stats.py", Some(&feature()))],
        &script_file(scripts.path(), &review_lines(&[off_by_one()])),
    );
    run.ok();
    assert_eq!(fixture.finding_comments().len(), 1);
    let (resolved, replies) = thread(&fixture);
    assert!(!resolved, "the review thread is reopened");
    assert!(
        replies.iter().any(|r| r.contains("Raised again")),
        "{replies:#?}"
    );
    assert_eq!(sarif_results(&sarif), 1, "{sarif:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_line_or_file_resolves_and_a_push_elsewhere_asks_nothing() {
    let scripts = tempfile::tempdir().unwrap();
    // `spread` put back as the base has it: the finding's lines untouched, no model call.
    let fixture = reviewed(scripts.path()).await;
    let never = scripts.path().join("never.jsonl");
    std::fs::write(&never, "").unwrap();
    let spread_restored = BASE.replace("range(len(xs))", "range(len(xs) + 1)");
    let (run, sarif) = push_and_review(
        &fixture,
        &[("stats.py", Some(&spread_restored))],
        &format!("script:{}", never.display()),
    );
    run.ok();
    assert!(!thread(&fixture).0);
    assert_eq!(sarif_results(&sarif), 1, "still tracked: {sarif:#}");
    assert!(
        !text(&run.output).contains("error"),
        "{}",
        text(&run.output)
    );

    // The loop deleted.
    let no_loop = spread_restored.replace(
        "    for i in range(len(xs) + 1):\n        total += xs[i]\n",
        "",
    );
    let (run, _) = push_and_review(
        &fixture,
        &[("stats.py", Some(&no_loop))],
        &quiet(scripts.path()),
    );
    run.ok();
    let (resolved, replies) = thread(&fixture);
    assert!(resolved);
    assert!(
        replies
            .iter()
            .any(|r| r.contains("the code it quoted was removed in")),
        "{replies:#?}"
    );

    // Another pull request whose file is deleted.
    let fixture = reviewed(scripts.path()).await;
    let (run, _) = push_and_review(&fixture, &[("stats.py", None)], &quiet(scripts.path()));
    run.ok();
    let (resolved, replies) = thread(&fixture);
    assert!(resolved);
    assert!(
        replies.iter().any(|r| r.contains("(stats.py was deleted)")),
        "{replies:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_moved_to_another_file_is_followed_not_resolved() {
    let scripts = tempfile::tempdir().unwrap();
    let fixture = reviewed(scripts.path()).await;
    let util = format!("import math\n\n\n{}", feature());
    let (run, sarif) = push_and_review(
        &fixture,
        &[
            ("stats.py", Some("from util import mean\n")),
            ("util.py", Some(&util)),
        ],
        &quiet(scripts.path()),
    );
    run.ok();
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1);
    assert_contains(&comments[0].body, "`util.py:6`");
    assert!(!thread(&fixture).0, "still open");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{sarif:#}");
    assert_eq!(
        results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "util.py"
    );
}
