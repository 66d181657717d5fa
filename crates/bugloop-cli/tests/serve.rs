//! `bugloop serve` and `bugloop jobs` as an operator runs them: the server started with its
//! settings in the environment, a signed delivery queued, the jobs read back as JSON from the
//! same store, a clean stop on SIGTERM; bad settings refused with what to do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

const SECRET: &str = "a webhook secret";

fn bugloop(store: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bugloop"));
    command
        .env("BUGLOOP_WEBHOOK_SECRET", SECRET)
        .env("BUGLOOP_STORE_URL", store)
        .env("NO_COLOR", "1");
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_delivery_is_queued_and_listed_and_sigterm_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("jobs/queue.db").display());
    let mut server = bugloop(&store)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("BUGLOOP_SENTRY_CLIENT_SECRET", "3f1c2b7e9a0d4c8b")
        .env("BUGLOOP_SENTRY_PROJECTS", "widgets-api=acme/widgets")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    // Without the App's credentials the server only queues, and says so first.
    let warned = lines.next().unwrap().unwrap();
    assert!(
        warned.starts_with("warning: no App id and key")
            && warned.contains("Sentry's alerts (POST /sentry)")
            && warned.contains("nothing runs them"),
        "{warned}"
    );
    let said = lines.next().unwrap().unwrap();
    let url = said
        .strip_prefix("bugloop serve: listening on ")
        .unwrap_or_else(|| panic!("{said}"))
        .to_owned();
    let body =
        bugloop_testkit::deliveries::pull_request("opened", 7, "t", ("abc", "def")).to_string();
    let signature = bugloop_server::signature(SECRET.as_bytes(), body.as_bytes());
    let answer = reqwest::Client::new()
        .post(format!("{url}/webhook"))
        .header("x-github-event", "pull_request")
        .header("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
        .header("x-hub-signature-256", signature)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let listed =
        bugloop_testkit::run_ok(bugloop(&store).args(["jobs", "list", "--format", "json"]));
    let jobs: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let jobs = jobs.as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["kind"], "review");
    assert_eq!(jobs[0]["state"], "queued");
    assert_eq!(jobs[0]["conversation"], "github:acme/widgets#7");
    terminate(server.id());
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

fn terminate(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn bad_settings_are_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("q.db").display());
    let output = bugloop(&store)
        .env_remove("BUGLOOP_WEBHOOK_SECRET")
        .args(["serve", "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("BUGLOOP_WEBHOOK_SECRET is not set"));
    let output = bugloop("mysql://db")
        .args(["jobs", "list"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("expected sqlite:PATH"));
}
