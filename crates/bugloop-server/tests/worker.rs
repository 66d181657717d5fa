//! The App server's worker against the GitHub simulator: a queued review is claimed, run as the
//! App's installation in a clone of its own, and done, its findings written as the App's bot;
//! a worker whose lease is gone writes nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use bugloop_app::OperatorConfig;
use bugloop_github::Endpoint;
use bugloop_github_sim::fixture::{
    FixtureOptions, PullRequestFixture, off_by_one, review_lines, script_file,
};
use bugloop_queue::{JobKind, JobState, NewJob, Queue, Retries};
use bugloop_server::worker::{Stop, run_next};
use bugloop_webhooks::Trigger;

use crate::Setup;

pub(crate) async fn setup(lease: Duration) -> Setup {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let lines = review_lines(&[off_by_one()]);
    let operator = Some(OperatorConfig::default());
    let s = Setup::new(fixture, Retries::default(), lease, operator, &lines).await;
    let (fixture, queue) = (&s.fixture, &s.queue);
    let trigger = Trigger::Review {
        repository: "acme/widgets".to_owned(),
        number: 7,
        head: fixture.head.clone(),
        base: fixture.base.clone(),
        fork: false,
        installation: Some(42),
    };
    queue
        .enqueue(
            "delivery-1",
            "pull_request",
            Some(NewJob {
                kind: JobKind::Review,
                conversation: trigger.conversation(),
                installation: Some(42),
                head: Some(fixture.head.clone()),
                payload: serde_json::to_string(&trigger).unwrap(),
                priority: trigger.priority(),
            }),
            0,
        )
        .await
        .unwrap();
    s
}

/// alice (who may write) comments `@bugloop fix all` on the pull request: its job is queued.
pub(crate) async fn enqueue_fix_all(s: &Setup) {
    let said = "@bugloop fix all";
    let id = s.fixture.sim.comment_as(7, "alice", said);
    let trigger = Trigger::Comment {
        repository: "acme/widgets".to_owned(),
        number: 7,
        kind: bugloop_webhooks::CommentKind::Issue,
        id,
        body: said.to_owned(),
        author: "alice".to_owned(),
        in_reply_to: None,
        installation: Some(42),
    };
    s.queue
        .enqueue(
            "delivery-2",
            "issue_comment",
            Some(NewJob {
                kind: JobKind::Comment,
                conversation: trigger.conversation(),
                installation: Some(42),
                head: None,
                payload: serde_json::to_string(&trigger).unwrap(),
                priority: trigger.priority(),
            }),
            0,
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_queued_review_runs_as_the_app_and_is_done() {
    let s = setup(Duration::from_secs(60)).await;
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(run.state, Some(JobState::Done), "{run:?}");
    let comments = s.fixture.sim.review_comments(7);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert_eq!(comments[0].author, "bugloop-app[bot]");
    assert!(
        s.fixture
            .sim
            .issue_comments(7)
            .iter()
            .any(|c| c.author == "bugloop-app[bot]")
    );
    // Nothing more to do.
    assert!(
        run_next(&s.queue, &s.settings, &Stop::never())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_worker_whose_lease_is_gone_writes_nothing() {
    // A lease that is over before the first write.
    let s = setup(Duration::from_millis(1)).await;
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert!(s.fixture.sim.review_comments(7).is_empty());
    assert!(s.fixture.sim.issue_comments(7).is_empty());
    assert!(
        run.error
            .as_deref()
            .unwrap_or("")
            .contains("lease was lost"),
        "{run:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_queues_a_signed_delivery_and_its_workers_run_it_then_stop() {
    let s = setup(Duration::from_secs(60)).await;
    // The setup queued a job of its own in another store; this server has its own.
    let store = tempfile::tempdir().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (address, bound) = tokio::sync::oneshot::channel();
    let options = bugloop_server::serve::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        secret: b"secret".to_vec().into(),
        store: bugloop_server::serve::StoreLocation::Sqlite(store.path().join("queue.db")),
        trigger: bugloop_app::trigger_settings(
            &bugloop_config::Config::default(),
            vec!["bugloop-app[bot]".to_owned()],
        ),
        workers: Some((s.settings.clone(), 2)),
        limits: bugloop_queue::Limits::default(),
        admin_token: None,
        report_token: None,
        sentry: None,
        outsider_comments_per_hour: 20,
    };
    // Polled beside the client below (the server's future is not sent to another task).
    let server = bugloop_server::serve::run_until(
        options,
        move |at| {
            let _ = address.send(at);
        },
        async move {
            let _ = stopped.await;
        },
    );
    let client = async {
        let at = bound.await.unwrap();
        let shas = (s.fixture.head.as_str(), s.fixture.base.as_str());
        let body =
            bugloop_testkit::deliveries::pull_request("opened", 7, "Add last", shas).to_string();
        let answer = reqwest::Client::new()
            .post(format!("http://{at}/webhook"))
            .header("x-github-event", "pull_request")
            .header("x-github-delivery", "d-served")
            .header(
                "x-hub-signature-256",
                bugloop_webhooks::signature(b"secret", body.as_bytes()),
            )
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 202);
        let mut waited = 0;
        while s.fixture.sim.review_comments(7).is_empty() {
            assert!(waited < 300, "the job did not run in 30 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += 1;
        }
        assert_eq!(
            s.fixture.sim.review_comments(7)[0].author,
            "bugloop-app[bot]"
        );
        stop.send(()).unwrap();
    };
    let (served, ()) = tokio::join!(server, client);
    served.unwrap();
    // The clones and the queue's database are the server's own: no other local user reads them.
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.settings.workspaces), 0o700);
    assert_eq!(mode(&store.path().join("queue.db")), 0o600);
}

#[tokio::test]
async fn a_job_outliving_its_installation_token_renews_it_for_the_api_and_the_clone() {
    let mut s = setup(Duration::from_secs(60)).await;
    // Tokens that last a second, a GitHub slow enough that the job outlives several.
    s.fixture.sim.set_token_lifetime(1);
    s.fixture.sim.set_latency(Duration::from_millis(150));
    s.settings.git_token_refresh = Duration::from_millis(200);
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(run.state, Some(JobState::Done), "{run:?}");
    assert_eq!(s.fixture.sim.review_comments(7).len(), 1);
    // Renewed while the job ran (the clone's configuration holds each new one until the job
    // ends, when it is removed: see `a_clone_keeps_no_token_after_its_job`).
    assert!(s.fixture.sim.issued_tokens() > 2);
}

#[tokio::test]
async fn with_github_unreachable_a_job_is_retried_then_dead_with_a_clear_error() {
    let mut s = setup(Duration::from_secs(60)).await;
    // A queue that retries once, a millisecond later.
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::open_sqlite(
        &dir.path().join("queue.db"),
        Retries {
            max_attempts: 2,
            backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
        },
    )
    .await
    .unwrap();
    let job = s.queue.job("delivery-1").await.unwrap().unwrap();
    queue
        .enqueue(
            "delivery-1",
            "pull_request",
            Some(NewJob {
                kind: job.kind,
                conversation: job.conversation,
                installation: job.installation,
                head: job.head,
                payload: job.payload,
                priority: 0,
            }),
            0,
        )
        .await
        .unwrap();
    // Nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    s.settings.endpoint = Endpoint::from_values(Some(&unreachable), None);
    s.settings.policy.retries = 0;
    let first = crate::run_one(&queue, &s.settings).await;
    assert_eq!(first.state, Some(JobState::Queued), "{first:?}");
    assert!(first.github_unreachable, "{first:?}");
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = crate::run_one(&queue, &s.settings).await;
    assert_eq!(second.state, Some(JobState::Dead), "{second:?}");
    let dead = queue.job("delivery-1").await.unwrap().unwrap();
    let error = dead.error.unwrap();
    assert!(
        error.contains("access_tokens") && error.contains("Connection refused"),
        "the error says what could not be reached: {error}"
    );
    assert_eq!(dead.attempts, 2);
    assert!(s.fixture.sim.review_comments(7).is_empty());
}

/// A failure that may pass but is one installation's or one pull request's (its rate limit, a
/// refusal of its own) is retried later and does not say GitHub is unreachable, so it does not
/// pause the workers that every other installation's jobs wait for; a server error does.
#[tokio::test]
async fn only_github_failing_says_github_is_unreachable_not_one_installations_refusal() {
    let pull = "/repos/acme/widgets/pulls/7";
    let faults = [
        (
            bugloop_github_sim::Fault::SecondaryRateLimit {
                method: "GET".to_owned(),
                path_contains: pull.to_owned(),
                retry_after_secs: 3_600,
            },
            false,
        ),
        (
            bugloop_github_sim::Fault::Fail {
                method: "GET".to_owned(),
                path_contains: pull.to_owned(),
                status: 409,
            },
            false,
        ),
        (
            bugloop_github_sim::Fault::Fail {
                method: "GET".to_owned(),
                path_contains: pull.to_owned(),
                status: 503,
            },
            true,
        ),
    ];
    for (fault, unreachable) in faults {
        let mut s = setup(Duration::from_secs(60)).await;
        s.settings.policy.retries = 0;
        let shown = format!("{fault:?}");
        s.fixture.sim.inject(fault);
        let run = crate::run_one(&s.queue, &s.settings).await;
        assert_eq!(run.state, Some(JobState::Queued), "{shown}: {run:?}");
        assert_eq!(run.github_unreachable, unreachable, "{shown}: {run:?}");
    }
}

/// A clone that fails (GitHub's git server unreachable) names what failed, never the
/// installation token: the credential goes to git through its environment, not its command line,
/// and the job's error reaches the queue, the log and the status page.
#[tokio::test]
async fn a_failed_clone_never_shows_the_token() {
    let mut s = setup(Duration::from_secs(60)).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    s.settings.git_base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_ne!(run.state, Some(JobState::Done), "{run:?}");
    // One repository's clone failing is that repository's: it pauses no worker.
    assert!(!run.github_unreachable, "{run:?}");
    let job = s.queue.job("delivery-1").await.unwrap().unwrap();
    let error = job.error.unwrap();
    assert!(error.contains("clone"), "{error}");
    bugloop_testkit::assert_contains_none(
        &error,
        &[
            "AUTHORIZATION",
            "basic ",
            "eC1hY2Nlc3MtdG9rZW46",
            "extraheader",
        ],
    );
}

/// After a job the clone's configuration holds no token (it is written for the job's fetches
/// and pushes and removed when the job ends).
#[tokio::test]
async fn a_clone_keeps_no_token_after_its_job() {
    let s = setup(Duration::from_secs(60)).await;
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(run.state, Some(JobState::Done), "{run:?}");
    let config = s.settings.workspaces.join("acme/widgets/.git/config");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        !text.contains("extraheader") && !text.contains("AUTHORIZATION"),
        "{text}"
    );
    // The file the clone included it from is gone too.
    let tokens = s.settings.workspaces.join(".tokens/acme");
    let left: Vec<_> = std::fs::read_dir(&tokens).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A fix job whose worker lost its lease (it stalled and another took the job) pushes nothing:
/// the lease is asked right before every push, as before every comment.
#[tokio::test]
async fn a_worker_whose_lease_is_gone_pushes_nothing() {
    let mut s = setup(Duration::from_secs(60)).await;
    let reviewed = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(reviewed.state, Some(JobState::Done), "{reviewed:?}");
    enqueue_fix_all(&s).await;
    let edit = serde_json::json!({"name": "edit_file", "arguments": {"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"}});
    let scripts = tempfile::tempdir().unwrap();
    s.settings.model = Some(script_file(
        scripts.path(),
        &[
            serde_json::json!({"tool_calls": [edit]}),
            serde_json::json!({"text": "Done."}),
        ],
    ));
    // A lease that is over before the fix lands.
    s.settings.lease = Duration::from_millis(1);
    let before = s.fixture.origin_head();
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(
        s.fixture.origin_head(),
        before,
        "pushed after the lease was lost: {run:?}"
    );
    let branches = bugloop_testkit::git(s.fixture.origin(), &["branch", "--list"]);
    assert!(!branches.contains("bugloop/"), "{branches}");
}

/// A model endpoint that takes connections and never answers (or trickles): the job stops at
/// the server's own limit, whatever the repository's budgets allow, fails with the reason, and
/// its clone keeps no token.
#[tokio::test]
async fn a_job_over_the_servers_limit_is_stopped() {
    let mut s = setup(Duration::from_secs(60)).await;
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let config = s.settings.config.file.clone().unwrap();
    std::fs::write(
        &config,
        format!(
            "model:\n  max_retries: 0\n  providers:\n    stub:\n      base_url: http://127.0.0.1:{port}/v1\nbudgets:\n  max_wall_seconds: 86400\n"
        ),
    )
    .unwrap();
    s.settings.model = Some("stub:any".to_owned());
    s.settings.job_timeout = Duration::from_secs(2);
    let run = crate::run_one(&s.queue, &s.settings).await;
    drop(silent);
    assert_eq!(run.state, Some(JobState::Dead), "{run:?}");
    let error = run.error.unwrap();
    assert!(
        error.contains("ran over the server's limit of 2 s"),
        "{error}"
    );
    let text =
        std::fs::read_to_string(s.settings.workspaces.join("acme/widgets/.git/config")).unwrap();
    assert!(!text.contains("extraheader"), "{text}");
}
