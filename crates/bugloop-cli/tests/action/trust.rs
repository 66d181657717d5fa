//! What a pull request's files must never reach through the Action, whatever the runner's
//! workspace holds: a gitignored secret an earlier step left in the checkout (the review reads
//! the pinned head's tracked files only), a `bugloop.sarif` that is a symlink to a file of the
//! runner (replaced, never followed, and never written in the workspace), and a duplicate finding
//! comment an earlier run left (any later run removes it).

use std::path::Path;
use std::process::Command;

use bugloop_github_sim::fixture::{
    BOT, FixtureOptions, NUMBER, PullRequestFixture, off_by_one, review_lines, script_file,
    webhook_example,
};
use bugloop_testkit::assert_contains;
use serde_json::json;

use super::{
    action_as, comment_event, fixing_script, opened_as, review_script, reviewed_as, run_on_opened,
    text,
};

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "safe.directory=*"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// Every file under `dir`, read as text.
fn everything_under(dir: &Path) -> String {
    let mut text = String::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return text;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            text.push_str(&everything_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    text
}

for_each_user! {
    async fn a_gitignored_secret_of_the_checkout_is_never_read(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        let workspace = fixture.workspace();
        // As actions/checkout leaves it for a pull request: the head, clean, and an earlier step's
        // `.env` that git ignores.
        git(workspace, &["fetch", "-q", "origin", &fixture.head]);
        git(workspace, &["checkout", "-q", "--detach", &fixture.head]);
        std::fs::write(workspace.join(".env"), "API_TOKEN=canary-env-0451\n").unwrap();
        std::fs::write(workspace.join(".git/info/exclude"), ".env\n").unwrap();
        let scripts = tempfile::tempdir().unwrap();
        let mut lines =
            vec![json!({"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]})];
        lines.extend(review_lines(&[off_by_one()]));
        let model = script_file(scripts.path(), &lines);
        let (run, output) = opened_as(user, &fixture, &[], &model);
        let mut seen = output;
        seen.push_str(&run.summary);
        seen.push_str(&everything_under(run.temp.path()));
        seen.push_str(&everything_under(&workspace.join(".git/bugloop")));
        seen.push_str(&comments_text(&fixture));
        assert!(
            !seen.contains("canary-env-0451"),
            "the checkout's ignored file was read"
        );
        assert!(
            everything_under(&workspace.join(".git/bugloop")).contains("read_file")
                || everything_under(run.temp.path()).contains("read_file"),
            "the model asked for the file (the transcript says what it got)"
        );
    }
}

for_each_user! {
    async fn a_sarif_symlink_in_the_workspace_is_never_followed(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        let runner = tempfile::tempdir().unwrap();
        let target = runner.path().join("runner-file");
        std::fs::write(&target, "the runner's own file\n").unwrap();
        std::os::unix::fs::symlink(&target, fixture.workspace().join("bugloop.sarif")).unwrap();
        let scripts = tempfile::tempdir().unwrap();
        let model = review_script(scripts.path());
        // A runner without RUNNER_TEMP.
        let (run, _) = opened_as(user, &fixture, &[("RUNNER_TEMP", "")], &model);
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "the runner's own file\n"
        );
        let written = run
            .outputs
            .strip_prefix("sarif=")
            .unwrap_or_else(|| panic!("{}", run.outputs))
            .trim();
        assert!(
            !Path::new(written).starts_with(fixture.workspace()),
            "{written}"
        );
        let sarif: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(written).unwrap()).unwrap();
        assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    }
}

for_each_user! {
    async fn a_duplicate_an_earlier_run_left_is_removed_by_the_next(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        let scripts = tempfile::tempdir().unwrap();
        reviewed_as(user, &fixture, scripts.path());
        let comments = fixture.finding_comments();
        assert_eq!(comments.len(), 1);
        // What a run whose listing lagged behind its own write leaves: the same finding twice.
        let original = &comments[0];
        fixture.sim.review_comment_as(
            NUMBER,
            BOT,
            &original.path,
            original.line.unwrap(),
            &original.body,
        );
        assert_eq!(fixture.finding_comments().len(), 2);
        // A later run that adds nothing (the same head, nothing new) still cleans it up.
        reviewed_as(user, &fixture, scripts.path());
        let left = fixture.finding_comments();
        assert_eq!(left.len(), 1, "{left:#?}");
        assert_eq!(left[0].id, original.id, "the oldest stays");
    }
}

/// What bugloop commented on the pull request: its issue comments, then its finding comments.
fn comments_text(fixture: &PullRequestFixture) -> String {
    let issue_comments = fixture.bot_issue_comments().into_iter();
    let finding_comments = fixture.finding_comments().into_iter();
    issue_comments
        .map(|c| c.body)
        .chain(finding_comments.map(|c| c.body))
        .collect()
}

/// A provider answering every request with HTTP 500 and a body that holds a canary and a path of
/// its machine (as a proxy's error page does).
fn failing_provider() -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0_u8; 65536];
            let _ = stream.read(&mut request);
            let body = r#"{"error": {"message": "upstream failed at /srv/provider/secret-config.yml, key canary-provider-0451"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

for_each_user! {
    async fn a_model_error_is_published_without_the_providers_words_or_a_path(user) {
        let port = failing_provider();
        let config = format!(
            "model:\n  max_retries: 0\n  providers:\n    stub:\n      base_url: http://127.0.0.1:{port}/v1\n"
        );
        let fixture = PullRequestFixture::new(FixtureOptions {
            base_config: Some(&config),
            ..FixtureOptions::default()
        })
        .await;
        let run = run_on_opened(user, &fixture, &[], "stub:any-model");
        let output = text(&run.output);
        let mut published = run.summary;
        published.push_str(&comments_text(&fixture));
        assert!(
            published.contains("the provider failed (HTTP 500)"),
            "{output}\n{published}"
        );
        bugloop_testkit::assert_contains_none(
            &published,
            &["canary-provider-0451", "/srv/provider", "/tmp/", "transcript"],
        );
    }
}

for_each_user! {
    /// A delivery about a comment GitHub never issued (its author and body written by whoever sent
    /// it) is not acted on: the comment is read from GitHub by its id, and there is none.
    async fn a_comment_github_never_issued_is_refused(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        let scripts = tempfile::tempdir().unwrap();
        reviewed_as(user, &fixture, scripts.path());
        let payload = comment_event(&fixture, "issue_comment", 987_654_321, "@bugloop fix all");
        let fixing = fixing_script(scripts.path());
        let before = fixture.origin_head();
        let run = action_as(user, &fixture, "issue_comment", &payload, &[], &fixing);
        let output = run.ok();
        assert_contains(&output, "comment 987654321 is not on this pull request");
        assert_eq!(fixture.origin_head(), before, "nothing was pushed");
    }
}

for_each_user! {
    /// Comments from people without write access are answered within the repository's rate: the
    /// answers bugloop gave such comments in the hour before are counted on GitHub itself, so each
    /// Action run sees them; past the rate a comment gets no answer and no model call (the model of
    /// those runs cannot even be opened), while a writer is answered as ever.
    async fn outsiders_are_answered_within_the_repositorys_rate(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        fixture.sim.set_permission("mallory", "read");
        let scripts = tempfile::tempdir().unwrap();
        let answering = script_file(
            scripts.path(),
            &[json!({"text": "It panics: `v[v.len()]` is one past the end."})],
        );
        let no_model = "script:/nonexistent/model.jsonl".to_owned();
        let comment = |author: &str, n: usize| {
            let body = format!("@bugloop question {n}: what does `last` return for an empty vector?");
            let id = fixture.sim.comment_as(NUMBER, author, &body);
            let mut payload = webhook_example("issue_comment", "created", &fixture);
            payload["comment"]["id"] = json!(id);
            payload["comment"]["body"] = json!(body);
            payload["comment"]["user"] = json!({"login": author, "type": "User", "id": 7});
            payload["sender"] = json!({"login": author, "type": "User", "id": 7});
            payload
        };
        let answers = || {
            fixture
                .sim
                .issue_comments(NUMBER)
                .into_iter()
                .filter(|c| c.author == BOT && c.body.contains("It panics"))
                .count()
        };
        let rate = [("BUGLOOP_OUTSIDERS__ANSWERS_PER_HOUR", "2")];
        for n in 0..4 {
            let payload = comment("mallory", n);
            let model = if n < 2 { &answering } else { &no_model };
            let run = action_as(user, &fixture, "issue_comment", &payload, &rate, model);
            let output = text(&run.output);
            assert_eq!(run.output.status.code(), Some(0), "comment {n}: {output}");
            if n < 2 {
                assert_eq!(answers(), n + 1, "comment {n}: {output}");
            } else {
                assert!(
                    output.contains("not answered: mallory has no write access")
                        && output.contains("outsiders.answers_per_hour: 2"),
                    "comment {n}: {output}"
                );
                assert_eq!(answers(), 2, "comment {n}: {output}");
            }
        }
        // A writer is not held by the outsiders' rate.
        let payload = comment("alice", 9);
        let run = action_as(user, &fixture, "issue_comment", &payload, &rate, &answering);
        run.ok();
        assert_eq!(answers(), 3, "{}", text(&run.output));
        // Each answer to an outsider runs under its own small budget, whatever the run's.
        let payload = comment("mallory", 10);
        let small = [
            ("BUGLOOP_OUTSIDERS__ANSWERS_PER_HOUR", "10"),
            ("BUGLOOP_OUTSIDERS__MAX_INPUT_TOKENS", "50"),
        ];
        let run = action_as(
            user,
            &fixture,
            "issue_comment",
            &payload,
            &small,
            &answering,
        );
        let output = text(&run.output);
        assert_contains(&output, "budget");
        assert_eq!(answers(), 3, "{output}");
        // The answer that stopped is said so, and counts against the rate like any other.
        let stopped: Vec<_> = fixture
            .sim
            .issue_comments(NUMBER)
            .into_iter()
            .filter(|c| c.author == BOT && c.body.contains("stopped before it could answer"))
            .collect();
        assert_eq!(stopped.len(), 1, "{output}");
        assert_contains(&stopped[0].body, " outsider -->");
    }
}

for_each_user! {
    /// The pull request's author, who may only read (a fork's author, an outside contributor),
    /// argues a serious finding away and the model concedes: the concession is recorded as theirs
    /// and the finding stays open for someone with write access.
    async fn a_serious_finding_conceded_to_a_reader_author_stays_open(user) {
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        fixture.sim.set_permission("alice", "read");
        let scripts = tempfile::tempdir().unwrap();
        reviewed_as(user, &fixture, scripts.path());
        let root = fixture.finding_comments()[0].clone();
        let said = "Not a bug: callers check the length first.";
        let reply = fixture
            .sim
            .reply_as(NUMBER, "alice", root.id, said)
            .unwrap();
        let mut payload = comment_event(&fixture, "pull_request_review_comment", reply, said);
        payload["comment"]["in_reply_to_id"] = json!(root.id);
        let conceding = script_file(
            scripts.path(),
            &[
                json!({"text": json!({"is_fix_request": false, "target_finding_ids": [], "is_do_request": false}).to_string()}),
                json!({"text": json!({"decision": "concede", "reasoning": "The caller never passes an empty slice."}).to_string()}),
            ],
        );
        let run = action_as(
            user,
            &fixture,
            "pull_request_review_comment",
            &payload,
            &[],
            &conceding,
        );
        let output = run.ok();
        assert!(!fixture.sim.threads(NUMBER)[0].resolved, "{output}");
        let answer = fixture.finding_comments().last().unwrap().clone();
        assert!(
            fixture
                .sim
                .review_comments(NUMBER)
                .iter()
                .any(|c| c.author == BOT
                    && c.body
                        .contains("conceded to alice, the change's author, who has no write access")),
            "{output}\n{answer:?}"
        );
    }
}

for_each_user! {
    /// A checkout whose `.bugloop` is a symlink to a directory of the runner: bugloop reads no
    /// `config.yml` through it (its keys and lines would appear in warnings), and the run goes on.
    async fn a_bugloop_directory_that_links_out_of_the_checkout_is_never_read(user) {
        use std::os::unix::fs::PermissionsExt;
        let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
        // A directory of the runner anyone may read, as /etc's are.
        let runner = tempfile::tempdir().unwrap();
        std::fs::set_permissions(runner.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(
            runner.path().join("config.yml"),
            "model:\n  providers:\n    canary0451:\n      base_url: http://canary-host-0451/v1\n",
        )
        .unwrap();
        std::fs::set_permissions(
            runner.path().join("config.yml"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        std::os::unix::fs::symlink(runner.path(), fixture.workspace().join(".bugloop")).unwrap();
        let scripts = tempfile::tempdir().unwrap();
        let model = review_script(scripts.path());
        let (run, output) = opened_as(user, &fixture, &[], &model);
        let mut seen = output;
        seen.push_str(&run.summary);
        seen.push_str(&comments_text(&fixture));
        assert!(!seen.contains("canary"), "{seen}");
        assert_eq!(fixture.finding_comments().len(), 1, "the review went on");
    }
}

/// A hostile change can steer the model to write mentions: a finding's title, description and
/// suggestion naming `@acme/security` and `@mallory` are published with no mention live (a word
/// joiner after the `@`), in the finding's comment and in the summary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mentions_the_model_writes_notify_nobody() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let scripts = tempfile::tempdir().unwrap();
    let mut finding = off_by_one();
    finding["title"] = json!("Index one past the end, cc @mallory");
    finding["description"] =
        json!("`v[v.len()]` always panics.\n\n@acme/security please look, and @mallory too.");
    finding["suggestion"] = json!("Ask @mallory, then use `v[v.len() - 1]`.");
    let model = script_file(scripts.path(), &review_lines(&[finding]));
    opened_as(None, &fixture, &[], &model);
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1);
    let mut published: Vec<String> = comments.iter().map(|c| c.body.clone()).collect();
    published.extend(
        fixture
            .sim
            .issue_comments(NUMBER)
            .into_iter()
            .filter(|c| c.author == BOT)
            .map(|c| c.body),
    );
    let everything = outside_code(&published.join("\n---\n"));
    assert_contains(&everything, "@\u{2060}mallory");
    assert_contains(&everything, "@\u{2060}acme/security");
    for live in ["@mallory", "@acme"] {
        assert!(
            !everything.contains(live),
            "{live} is live in: {everything}"
        );
    }
}

/// `text` without its fenced code blocks (where GitHub notifies nobody).
fn outside_code(text: &str) -> String {
    let mut fence: Option<String> = None;
    let mut out = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        let ticks: String = trimmed.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(open) if trimmed.trim_end() == open.as_str() => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None => out.push(line),
        }
    }
    out.join("\n")
}

/// Pull requests by someone who cannot write are reviewed within the outsiders' budget, counted
/// from bugloop's own summaries (their last line names the author and the pull request): past
/// `outsiders.reviews_per_author_per_hour` the review is not run, which is said once on the
/// pull request; every review counts, pushes to a pull request reviewed before included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outsiders_pull_requests_are_reviewed_within_a_budget() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let sim = &fixture.sim;
    sim.set_permission("alice", "read");
    let scripts = tempfile::tempdir().unwrap();
    let payload = webhook_example("pull_request", "synchronize", &fixture);
    let run = |model: &str| {
        let run = action_as(None, &fixture, "pull_request", &payload, &[], model);
        run.ok();
        text(&run.output)
    };
    let summary = || {
        sim.issue_comments(NUMBER)
            .into_iter()
            .find(|c| c.author == BOT && c.body.starts_with("<!-- bugloop:summary -->"))
            .map(|c| c.body)
    };
    // Within the budget: reviewed, the summary's last line counts it.
    run(&review_script(scripts.path()));
    let body = summary().unwrap();
    assert!(
        body.contains(&format!(
            "\n<!-- bugloop:outsider-review author=alice pr={NUMBER} runs="
        )),
        "{body}"
    );
    // Another pull request of hers reviewed this hour (its summary says so): with one review
    // per author an hour, #7's next push is over (two reviews: #7's and #8's). Not reviewed, said once however often it is
    // pushed to.
    sim.add_pull_request(crate::pull_of_the_branch(
        &fixture,
        8,
        "Add last again".to_owned(),
    ));
    let mut other = payload.clone();
    other["number"] = json!(8);
    other["pull_request"]["number"] = json!(8);
    let model = review_script(scripts.path());
    let reviewed = action_as(None, &fixture, "pull_request", &other, &[], &model);
    reviewed.ok();
    let one = [("BUGLOOP_OUTSIDERS__REVIEWS_PER_AUTHOR_PER_HOUR", "1")];
    // A model with nothing to say: the review must not ask it anything.
    let no_model = script_file(scripts.path(), &[]);
    for _ in 0..2 {
        let run = action_as(None, &fixture, "pull_request", &payload, &one, &no_model);
        let said = run.ok();
        assert_contains(
            &said,
            "Not reviewed: bugloop ran 2 review(s) of pull requests by alice",
        );
    }
    let deferred: Vec<String> = sim
        .issue_comments(NUMBER)
        .into_iter()
        .filter(|c| {
            c.author == BOT
                && c.body
                    .starts_with("bugloop did not review this pull request")
        })
        .map(|c| c.body)
        .collect();
    assert_eq!(deferred.len(), 1, "{deferred:#?}");
    assert_contains(&deferred[0], "(outsiders.reviews_per_author_per_hour: 1)");
    // A writer's pull request is reviewed whatever the outsiders' count.
    sim.set_permission("alice", "write");
    run(&review_script(scripts.path()));
}

/// Two runs on the same push at once, while GitHub's listings lag behind writes (each new
/// comment missing from the next three listings): each writes the finding before it can see
/// the other's, and still one comment per finding is left, by bugloop's own guard (each run
/// waits until its comments are listed, then removes the newer duplicate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_runs_on_one_push_leave_one_comment_per_finding() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let scripts = tempfile::tempdir().unwrap();
    let payload = webhook_example("pull_request", "opened", &fixture);
    fixture.sim.inject(bugloop_github_sim::Fault::ListingLag {
        writes: 10,
        listings: 3,
    });
    let (first, second) = (review_script(scripts.path()), review_script(scripts.path()));
    let runs = tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            let one =
                scope.spawn(|| action_as(None, &fixture, "pull_request", &payload, &[], &first));
            let two =
                scope.spawn(|| action_as(None, &fixture, "pull_request", &payload, &[], &second));
            [one.join().unwrap(), two.join().unwrap()]
        })
    });
    for run in &runs {
        run.ok();
    }
    let comments = fixture.finding_comments();
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let summaries = fixture
        .sim
        .issue_comments(NUMBER)
        .into_iter()
        .filter(|c| c.author == BOT && c.body.starts_with("<!-- bugloop:summary -->"))
        .count();
    assert_eq!(summaries, 1);
}
