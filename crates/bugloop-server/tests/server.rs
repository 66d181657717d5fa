//! The App server's integration tests, one binary (each binary links the server again): the
//! webhook endpoint (`serve`), the worker (`worker`), the solve pipeline on GitHub end to end
//! (`solve_github`), and the status page in a browser (`status_page`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixing;
mod serve;
mod solve_github;
mod status_page;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use bugloop_app::{ConfigChoice, OperatorConfig};
use bugloop_github::{AppCredentials, Endpoint, Policy};
use bugloop_github_sim::fixture::{PullRequestFixture, app_key, script_file};
use bugloop_queue::{Queue, Retries};
use bugloop_server::worker::{JobRun, Stop, WorkerSettings, run_next};
use serde_json::Value;

/// A worker of these tests and what it stands on: the fixture's repository with the App (id 77)
/// installed on it (installation 42), a git base where `acme/widgets.git` is the fixture's
/// origin, a queue, and the worker's settings.
struct Setup {
    fixture: PullRequestFixture,
    queue: Queue,
    settings: WorkerSettings,
    _dirs: Vec<tempfile::TempDir>,
}

impl Setup {
    /// The worker answered by the script `lines`, with an empty server configuration (and
    /// `operator`'s settings when given), writes not spaced.
    async fn new(
        fixture: PullRequestFixture,
        retries: Retries,
        lease: Duration,
        operator: Option<OperatorConfig>,
        lines: &[Value],
    ) -> Setup {
        let credentials = Arc::new(AppCredentials::from_pem(77, &app_key()).unwrap());
        let sim = &fixture.sim;
        sim.add_app(77, "bugloop-app", credentials.public_key_der(), &[42]);
        let git_base = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(git_base.path().join("acme")).unwrap();
        std::os::unix::fs::symlink(fixture.origin(), git_base.path().join("acme/widgets.git"))
            .unwrap();
        let work = tempfile::tempdir().unwrap();
        let config = work.path().join("config.yml");
        std::fs::write(&config, "{}\n").unwrap();
        let queue = Queue::open_sqlite(&work.path().join("queue.db"), retries)
            .await
            .unwrap();
        let settings = WorkerSettings {
            id: "test:1".to_owned(),
            lease,
            app: credentials,
            endpoint: Endpoint::from_values(Some(&sim.api_url()), Some(&sim.graphql_url())),
            git_base: git_base.path().display().to_string(),
            workspaces: work.path().join("clones"),
            config: ConfigChoice {
                file: Some(config),
                trust_branch: false,
                operator,
            },
            model: Some(script_file(work.path(), lines)),
            state_key: None,
            policy: Policy {
                write_spacing: Duration::ZERO,
                ..Policy::default()
            },
            shutdown_grace: Duration::from_secs(5),
            git_token_refresh: Duration::from_secs(600),
            job_timeout: Duration::from_secs(600),
            metrics: Arc::default(),
        };
        Setup {
            fixture,
            queue,
            settings,
            _dirs: vec![git_base, work],
        }
    }
}

/// Serves `state` (the webhook endpoint and the status page) on `address` for as long as the
/// test runs, headers awaited for `header_timeout`: its URL.
async fn serve_on(
    address: &str,
    state: bugloop_server::serve::WebhookState,
    header_timeout: Duration,
) -> String {
    let listener = tokio::net::TcpListener::bind(address).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        bugloop_server::serve::serve_http(
            listener,
            bugloop_server::serve::router(state),
            std::future::pending(),
            header_timeout,
        )
        .await
        .unwrap();
    });
    url
}

/// Claims and runs the next job, which must be there.
async fn run_one(queue: &Queue, settings: &WorkerSettings) -> JobRun {
    run_next(queue, settings, &Stop::never())
        .await
        .unwrap()
        .expect("a job to run")
}
