//! `bugloop action` as GitHub Actions runs it: the binary with the variables a runner sets, an
//! event file edited from GitHub's own examples, the GitHub simulator as the API and a scripted
//! model; what it prints, the job summary, the SARIF file, the step output and the exit status.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Output;

use bugloop_github_sim::fixture::{
    FixtureOptions, NUMBER, PullRequestFixture, TOKEN, off_by_one, review_lines, script_file,
    webhook_example,
};
use bugloop_testkit::assert_contains;
use bugloop_testkit::users::{chown_all, command_as, program_for};
use serde_json::{Value, json};

/// A scenario's test, run as the test's own user and again as an unprivileged one (uid 65534,
/// when the tests run as root): the body is the scenario, `$user` the user it runs as (`None`:
/// the test's). Doc comments apply to the test.
macro_rules! for_each_user {
    ($(#[$doc:meta])* async fn $test:ident($user:ident) $scenario:block) => {
        $(#[$doc])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $test() {
            async fn scenario($user: Option<u32>) $scenario
            for user in bugloop_testkit::users::scenario_users() {
                scenario(user).await;
            }
        }
    };
}

#[path = "action/analyzers.rs"]
mod analyzers;
#[path = "action/as_written.rs"]
mod as_written;
#[path = "action/parts.rs"]
mod parts;
#[path = "action/prove.rs"]
mod prove;
#[path = "action/touched.rs"]
mod touched;
#[path = "action/trust.rs"]
mod trust;

struct Run {
    output: Output,
    summary: String,
    outputs: String,
    temp: tempfile::TempDir,
}

impl Run {
    /// What the run printed, which must have ended well (exit status 0).
    #[track_caller]
    fn ok(&self) -> String {
        let output = text(&self.output);
        assert_eq!(self.output.status.code(), Some(0), "{output}");
        output
    }
}

/// [`action_as`] this test's user on `event` with a model that cannot even be opened: for runs
/// that must end without asking one.
fn modelless(
    fixture: &PullRequestFixture,
    event: &str,
    payload: &Value,
    extra: &[(&str, &str)],
) -> Run {
    action_as(None, fixture, event, payload, extra, "script:/nonexistent")
}

/// The Action run as `user` on a pull request's `opened` event (from a test on tokio's
/// multi-thread runtime), which must end well: the run and its output.
fn opened_as(
    user: Option<u32>,
    fixture: &PullRequestFixture,
    extra: &[(&str, &str)],
    model: &str,
) -> (Run, String) {
    let run = run_on_opened(user, fixture, extra, model);
    let output = run.ok();
    (run, output)
}

/// [`opened_as`] with a model that reports the off-by-one (its script written in `scripts`):
/// the run.
fn reviewed_as(user: Option<u32>, fixture: &PullRequestFixture, scripts: &Path) -> Run {
    let (run, _) = opened_as(user, fixture, &[], &review_script(scripts));
    run
}

/// A push of `files` (`None` deletes one) to the pull request, and the Action's review of it.
fn push_and_review(
    fixture: &PullRequestFixture,
    files: &[(&str, Option<&str>)],
    model: &str,
) -> (Run, Value) {
    for (path, text) in files {
        match text {
            Some(text) => fixture.dev.write(path, text),
            None => std::fs::remove_file(fixture.dev.path().join(path)).unwrap(),
        }
    }
    let head = fixture.push_commit("push");
    fixture
        .sim
        .set_head(NUMBER, &head, Some(fixture.diff_at(&head)));
    let mut payload = webhook_example("pull_request", "synchronize", fixture);
    payload["pull_request"]["head"]["sha"] = json!(head);
    let run = action_as(None, fixture, "pull_request", &payload, &[], model);
    let sarif_path = run.temp.path().join("bugloop.sarif");
    let sarif = std::fs::read_to_string(sarif_path)
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    (run, sarif)
}

/// [`action_as`] `user` on a pull request's `opened` event, however it ends.
fn run_on_opened(
    user: Option<u32>,
    fixture: &PullRequestFixture,
    extra: &[(&str, &str)],
    model: &str,
) -> Run {
    let payload = webhook_example("pull_request", "opened", fixture);
    action_as(user, fixture, "pull_request", &payload, extra, model)
}

/// Runs `bugloop action` on `event` (its payload written to the event file) as the user `user`
/// (`None`: this test's): a copy of the binary, run with its
/// privileges dropped, on a workspace and a remote it owns, with its own home. From a test on
/// tokio's multi-thread runtime (the run blocks in place, so that the simulator goes on
/// answering) or from a thread of its own.
fn action_as(
    user: Option<u32>,
    fixture: &PullRequestFixture,
    event: &str,
    payload: &Value,
    extra: &[(&str, &str)],
    model: &str,
) -> Run {
    let temp = tempfile::tempdir().unwrap();
    let event_path = temp.path().join("event.json");
    std::fs::write(&event_path, payload.to_string()).unwrap();
    let config = temp.path().join("config.yml");
    std::fs::write(&config, "{}\n").unwrap();
    let summary = temp.path().join("summary.md");
    let outputs = temp.path().join("outputs.txt");
    let binary = program_for(user, Path::new(env!("CARGO_BIN_EXE_bugloop")), temp.path());
    let mut command = command_as(user, binary);
    if let Some(uid) = user {
        chown_all(temp.path(), uid);
        chown_all(fixture.workspace(), uid);
        chown_all(fixture.origin(), uid);
        command.env("HOME", temp.path());
    }
    // A scripted model's file, where the user can read it.
    let model = match (user, model.strip_prefix("script:")) {
        (Some(uid), Some(path)) if Path::new(path).exists() => {
            let copy = temp.path().join("model.jsonl");
            std::fs::copy(path, &copy).unwrap();
            chown_all(&copy, uid);
            format!("script:{}", copy.display())
        }
        _ => model.to_owned(),
    };
    command
        .args(["action", "--model", &model])
        .current_dir(fixture.workspace())
        .env("NO_COLOR", "1")
        .env("BUGLOOP_CONFIG", &config)
        .env("GITHUB_EVENT_NAME", event)
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_WORKSPACE", fixture.workspace())
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", fixture.sim.api_url())
        .env("GITHUB_GRAPHQL_URL", fixture.sim.graphql_url())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &outputs)
        .env("RUNNER_TEMP", temp.path())
        .env("BUGLOOP_STATE_KEY", "a state key of 32 bytes, secret!")
        .env("BUGLOOP_GITHUB_WRITE_SPACING_MS", "0");
    for (name, value) in extra {
        if value.is_empty() {
            command.env_remove(name);
        } else {
            command.env(name, value);
        }
    }
    let output = tokio::task::block_in_place(|| command.output()).unwrap();
    if let (Some(uid), Ok(written)) = (user, std::fs::metadata(&summary)) {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(written.uid(), uid, "bugloop ran as uid {uid}");
    }
    Run {
        summary: std::fs::read_to_string(&summary).unwrap_or_default(),
        outputs: std::fs::read_to_string(&outputs).unwrap_or_default(),
        output,
        temp,
    }
}

fn review_script(dir: &Path) -> String {
    script_file(dir, &review_lines(&[off_by_one()]))
}

/// A model that fixes the off-by-one of `lib.rs` in one edit, then says it is done.
fn fixing_script(dir: &Path) -> String {
    let edit = json!({"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}});
    script_file(
        dir,
        &[json!({"tool_calls": [edit]}), json!({"text": "Done."})],
    )
}

/// The `created` event (`issue_comment` or `pull_request_review_comment`) of alice's comment
/// `id`, which says `body`.
fn comment_event(fixture: &PullRequestFixture, event: &str, id: u64, body: &str) -> Value {
    let mut payload = webhook_example(event, "created", fixture);
    payload["comment"]["id"] = json!(id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"] = json!({"login": "alice", "type": "User", "id": 1});
    payload
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_event_reviews_and_writes_summary_sarif_and_comments() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let scripts = tempfile::tempdir().unwrap();
    let run = reviewed_as(None, &fixture, scripts.path());
    assert_contains(&text(&run.output), "Index one past the end");
    assert!(
        run.summary
            .starts_with(&format!("### bugloop review: #{NUMBER} at ")),
        "{}",
        run.summary
    );
    assert_contains(&run.summary, "Index one past the end");
    let sarif_path = run.temp.path().join("bugloop.sarif");
    assert_eq!(run.outputs, format!("sarif={}\n", sarif_path.display()));
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif_path).unwrap()).unwrap();
    assert_eq!(sarif["runs"][0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(fixture.finding_comments().len(), 1);
    assert_eq!(fixture.bot_issue_comments().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_without_a_job_end_neutral_with_the_reason() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    // The event run with a model that cannot even be opened: it must end well (and neutral).
    let neutral = |event: &str, payload: &Value, extra: &[(&str, &str)]| {
        let run = modelless(&fixture, event, payload, extra);
        let said = run.ok();
        (run, said)
    };
    let mut from_bot = webhook_example("issue_comment", "created", &fixture);
    from_bot["sender"] = json!({"login": "github-actions[bot]", "type": "Bot", "id": 2});
    from_bot["comment"]["body"] = json!("@bugloop fix all");
    let (run, said) = neutral("issue_comment", &from_bot, &[]);
    assert_contains(&said, "nothing to do: sent by github-actions[bot], a bot");
    assert_contains(&run.summary, "nothing to do");

    let mut no_mention = webhook_example("issue_comment", "created", &fixture);
    no_mention["comment"]["body"] = json!("looks good to me");
    let (_, said) = neutral("issue_comment", &no_mention, &[]);
    assert_contains(&said, "does not mention @bugloop");

    let payload = webhook_example("pull_request", "opened", &fixture);
    let (_, said) = neutral("pull_request", &payload, &[("GITHUB_TOKEN", "")]);
    assert_contains(&said, "GITHUB_TOKEN is not set");
    assert!(
        fixture.sim.requests().is_empty(),
        "nothing was asked of GitHub"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_event_file_is_an_error_naming_the_field() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let mut payload = webhook_example("pull_request", "opened", &fixture);
    payload["pull_request"]["number"] = json!("seven");
    let run = modelless(&fixture, "pull_request", &payload, &[]);
    assert_eq!(run.output.status.code(), Some(2));
    let said = text(&run.output);
    assert_contains(&said, "pull_request.number");
}

/// A review of a pull request whose branch looks like a solve draft's (`bugloop/1-...`): with
/// the base's `branch_prefix` somewhere else it is an ordinary review (no mention: nothing to
/// do); with the default prefix it asks the solving of issue 1 to go on, which is the App
/// server's (a workflow token cannot keep a solve record). Either way the step ends neutral,
/// never in an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_on_a_branch_named_like_a_solve_draft_ends_the_step_cleanly() {
    for (base_config, said) in [
        (
            "branch_prefix: autofix/\n",
            "nothing to do: the comment does not mention @bugloop",
        ),
        ("{}\n", "solving runs as a GitHub App (`bugloop serve`)"),
    ] {
        let fixture = PullRequestFixture::new(FixtureOptions {
            base_config: Some(base_config),
            ..FixtureOptions::default()
        })
        .await;
        let issue = fixture
            .sim
            .add_issue("alice", "A crash", "It crashes.", &["bug"]);
        let mut payload = webhook_example("pull_request_review", "submitted", &fixture);
        payload["pull_request"]["head"]["ref"] = json!(format!("bugloop/{issue}-a-crash"));
        payload["review"]["body"] = json!("Looks fine to me.");
        let run = modelless(&fixture, "pull_request_review", &payload, &[]);
        let output = text(&run.output);
        assert_eq!(run.output.status.code(), Some(0), "{base_config}: {output}");
        assert!(output.contains(said), "{base_config}: {output}");
    }
}

/// `@bugloop fix all` on a runner where AppArmor keeps bwrap from making user namespaces (a
/// `bwrap` that fails exactly as Ubuntu 24.04's stands in): nothing is committed, and the step's
/// output names the cause and the fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_on_a_runner_that_restricts_user_namespaces_says_why_and_how_to_fix_it() {
    let fixture = PullRequestFixture::new(FixtureOptions {
        base_config: Some("fix:\n  verify_commands: [\"true\"]\n"),
        ..FixtureOptions::default()
    })
    .await;
    let scripts = tempfile::tempdir().unwrap();
    let review = review_script(scripts.path());
    opened_as(None, &fixture, &[], &review);

    let fake = tempfile::tempdir().unwrap();
    let (path, sysctl) = crate::apparmor_refused_bwrap(fake.path());
    let said = "@bugloop fix all";
    let comment = fixture.sim.comment_as(NUMBER, "alice", said);
    let payload = comment_event(&fixture, "issue_comment", comment, said);
    let fixing = fixing_script(scripts.path());
    let before = fixture.origin_head();
    let run = action_as(
        None,
        &fixture,
        "issue_comment",
        &payload,
        &[
            ("PATH", &path),
            ("BUGLOOP_USERNS_SYSCTL", sysctl.to_str().unwrap()),
        ],
        &fixing,
    );
    let output = text(&run.output);
    assert_eq!(run.output.status.code(), Some(1), "{output}");
    assert_eq!(fixture.origin_head(), before, "nothing was pushed");
    for named in [
        "AppArmor restricts unprivileged user namespaces",
        "scripts/action-apparmor",
    ] {
        assert!(output.contains(named), "{named}\n{output}");
    }
}
