//! `bugloop serve` as deployed: real server processes sharing one queue, the GitHub simulator
//! as GitHub, a scripted model. Two processes on one PostgreSQL database share 200 deliveries
//! over 20 pull requests, each pull request's jobs one at a time, each job run once; a process
//! killed with SIGKILL mid-job has its job taken over and finished, with no comment written twice
//! and no finding lost; the same with SQLite and one process restarted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bugloop_github_sim::fixture::{
    FixtureOptions, PullRequestFixture, app_key, off_by_one, review_lines, script_file,
};
use bugloop_server::AppCredentials;
use bugloop_server::signature;
use bugloop_testkit::assert_contains;
use bugloop_testkit::postgres::Postgres;
use serde_json::{Value, json};

const SECRET: &str = "cluster secret";
const APP: &str = "bugloop-app[bot]";
const PULLS: u64 = 20;

#[path = "serve_cluster/tenants.rs"]
mod tenants;

struct Cluster {
    fixture: PullRequestFixture,
    dir: tempfile::TempDir,
    config: PathBuf,
    /// Variables the server gets beside PATH, HOME and its settings file.
    env: Vec<(String, String)>,
    /// The user the server runs as (`None`: this test's), and the binary it runs.
    user: Option<u32>,
    binary: PathBuf,
}

/// What a cluster's server is set up with, beyond the defaults.
#[derive(Default)]
struct ClusterOptions<'a> {
    /// The base branch's `.bugloop/config.yml`.
    base_config: Option<&'a str>,
    /// More lines of the server's settings file.
    serve_yaml: String,
    env: Vec<(String, String)>,
    user: Option<u32>,
}

impl Cluster {
    async fn new(store_url: &str, lease_seconds: u64) -> Cluster {
        Cluster::with_grace(store_url, lease_seconds, 5).await
    }

    async fn with_grace(store_url: &str, lease_seconds: u64, grace_seconds: u64) -> Cluster {
        Cluster::create(
            store_url,
            lease_seconds,
            grace_seconds,
            ClusterOptions::default(),
        )
        .await
    }

    async fn create(
        store_url: &str,
        lease_seconds: u64,
        grace_seconds: u64,
        options: ClusterOptions<'_>,
    ) -> Cluster {
        let fixture = PullRequestFixture::new(FixtureOptions {
            base_config: options.base_config,
            ..FixtureOptions::default()
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let pem = app_key();
        std::fs::write(dir.path().join("key.pem"), &pem).unwrap();
        let credentials = AppCredentials::from_pem(77, &pem).unwrap();
        fixture
            .sim
            .add_app(77, "bugloop-app", credentials.public_key_der(), &[42]);
        // Pull requests 1 to 20, all of the fixture's branch.
        for number in 1..=PULLS {
            bugloop_testkit::git(
                fixture.origin(),
                &[
                    "update-ref",
                    &format!("refs/pull/{number}/head"),
                    &fixture.head,
                ],
            );
            let pull = crate::pull_of_the_branch(&fixture, number, format!("Change {number}"));
            fixture.sim.add_pull_request(pull);
        }
        let git_base = dir.path().join("git");
        std::fs::create_dir_all(git_base.join("acme")).unwrap();
        std::os::unix::fs::symlink(fixture.origin(), git_base.join("acme/widgets.git")).unwrap();
        let model = script_file(dir.path(), &review_lines(&[off_by_one()]));
        let config = dir.path().join("serve.yml");
        std::fs::write(
            &config,
            format!(
                "store_url: {store_url:?}\nwebhook_secret: {SECRET:?}\napp_id: 77\n\
                 private_key: key.pem\nworkers: 2\nbot_login: {APP:?}\n\
                 git_base: {:?}\napi_url: {:?}\ngraphql_url: {:?}\nmodel: {model:?}\n\
                 lease_seconds: {lease_seconds}\nshutdown_grace_seconds: {grace_seconds}\n\
                 write_spacing_ms: 0\n\
                 data_dir: data\n{}",
                git_base.display().to_string(),
                fixture.sim.api_url(),
                fixture.sim.graphql_url(),
                options.serve_yaml,
            ),
        )
        .unwrap();
        // Another user runs a copy of the binary (this one's directory may be closed to it) and
        // owns everything the server reads and writes.
        let binary = match options.user {
            Some(uid) => {
                let copy = dir.path().join("bugloop");
                bugloop_testkit::users::copy_program(
                    std::path::Path::new(env!("CARGO_BIN_EXE_bugloop")),
                    &copy,
                );
                for path in [dir.path(), fixture.origin()] {
                    let status = Command::new("chown")
                        .args(["-R", &format!("{uid}:{uid}")])
                        .arg(path)
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
                copy
            }
            None => PathBuf::from(env!("CARGO_BIN_EXE_bugloop")),
        };
        Cluster {
            fixture,
            dir,
            config,
            env: options.env,
            user: options.user,
            binary,
        }
    }

    fn command(&self) -> Command {
        let mut command = bugloop_testkit::users::command_as(self.user, &self.binary);
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("NO_COLOR", "1")
            .env("BUGLOOP_SERVER_CONFIG", &self.config)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// A server process named `node` (its workers are `node:PID:N`).
    fn server(&self, node: &str) -> Server {
        let mut child = self
            .command()
            .env("HOSTNAME", node)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("the server stopped:\n{said}"))
                .unwrap();
            if let Some(url) = line.strip_prefix("bugloop serve: listening on ") {
                break url.to_owned();
            }
            said.push_str(&line);
            said.push('\n');
        };
        // The log is read as it comes, so the server never blocks on a full pipe.
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        Server { child, url, log }
    }

    /// `bugloop jobs list --format json`.
    async fn jobs(&self) -> Vec<Value> {
        let mut command = self.command();
        let output = tokio::task::spawn_blocking(move || {
            command
                .args(["jobs", "list", "--format", "json"])
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// Waits until no job is queued or running.
    async fn settled(&self, servers: &[&Server], within: Duration) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let jobs = self.jobs().await;
            if jobs
                .iter()
                .all(|job| job["state"] != "queued" && job["state"] != "running")
            {
                return jobs;
            }
            if start.elapsed() > within {
                panic!(
                    "jobs still waiting after {within:?}: {:#?}\nlogs:\n{}",
                    jobs.iter()
                        .filter(|j| j["state"] == "queued" || j["state"] == "running")
                        .collect::<Vec<_>>(),
                    logs(servers)
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Alice's comment on pull request `number`, posted to the simulator, and its event.
    fn comment_event(&self, number: u64, said: &str) -> String {
        self.comment_event_by(number, said, "alice", "OWNER")
    }

    /// A comment by `author` (of GitHub's `standing`: `OWNER`, `NONE`, ...) on pull request
    /// `number`, posted to the simulator, and its event.
    fn comment_event_by(&self, number: u64, said: &str, author: &str, standing: &str) -> String {
        let id = self.fixture.sim.comment_as(number, author, said);
        json!({
            "action": "created",
            "repository": {"full_name": "acme/widgets"},
            "sender": {"login": author, "type": "User"},
            "installation": {"id": 42},
            "issue": {"number": number, "title": format!("Change {number}"), "user": {"login": "alice"},
                "pull_request": {"url": format!("https://api.github.com/repos/acme/widgets/pulls/{number}")}},
            "comment": {"id": id, "body": said, "user": {"login": author, "type": "User"},
                "author_association": standing}
        })
        .to_string()
    }

    fn pull_request_event(&self, number: u64, action: &str) -> String {
        let shas = (self.fixture.head.as_str(), self.fixture.base.as_str());
        bugloop_testkit::deliveries::pull_request(action, number, &format!("Change {number}"), shas)
            .to_string()
    }

    /// Every pull request carries the finding once and bugloop's summary once.
    fn assert_each_finding_written_once(&self) {
        for number in 1..=PULLS {
            let findings = self.app_review_comments(number);
            assert_eq!(findings.len(), 1, "#{number}: {findings:#?}");
            assert!(findings[0].body.contains("Index one past the end"));
            let summaries: Vec<_> = self
                .fixture
                .sim
                .issue_comments(number)
                .into_iter()
                .filter(|c| c.author == APP)
                .collect();
            assert_eq!(summaries.len(), 1, "#{number}: {summaries:#?}");
        }
    }

    /// The review comments bugloop's App wrote on pull request `number`.
    fn app_review_comments(&self, number: u64) -> Vec<bugloop_github_sim::ReviewComment> {
        let comments = self.fixture.sim.review_comments(number).into_iter();
        comments.filter(|c| c.author == APP).collect()
    }
}

struct Server {
    child: Child,
    url: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

/// What `servers` logged, one after the other.
fn logs(servers: &[&Server]) -> String {
    let logs: Vec<String> = servers.iter().map(|s| s.log()).collect();
    logs.join("\n---\n")
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends the deliveries `(server, delivery id, body)` side by side, each answered 202.
async fn deliver_all(deliveries: Vec<(&Server, String, String)>) {
    let client = reqwest::Client::new();
    let mut sending = tokio::task::JoinSet::new();
    for (server, delivery, body) in deliveries {
        let (client, url) = (client.clone(), server.url.clone());
        sending.spawn(async move { deliver(&client, &url, &delivery, body).await });
    }
    while let Some(sent) = sending.join_next().await {
        sent.unwrap();
    }
}

async fn deliver(client: &reqwest::Client, url: &str, delivery: &str, body: String) {
    let event = if body.contains("\"comment\"") {
        "issue_comment"
    } else {
        "pull_request"
    };
    let answer = client
        .post(format!("{url}/webhook"))
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header(
            "x-hub-signature-256",
            signature(SECRET.as_bytes(), body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202, "{delivery}");
}

fn number(value: &Value) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// No two jobs of one conversation ran at the same time.
fn assert_one_at_a_time(jobs: &[Value]) {
    let mut runs: BTreeMap<&str, Vec<(i64, i64)>> = BTreeMap::new();
    for job in jobs.iter().filter(|job| job["state"] == "done") {
        runs.entry(job["conversation"].as_str().unwrap())
            .or_default()
            .push((number(&job["started_at"]), number(&job["finished_at"])));
    }
    // Each worker reads its clock before its statement: a claim made just after another job's
    // finish was committed may carry a time a moment before that finish's. A job running
    // beside another would overlap it by its whole run, far more than this. On a loaded
    // 2-core machine that gap was seen at 17 ms (a fresh-clone run of the whole suite).
    const CLOCK_READS_MS: i64 = 50;
    for (conversation, mut spans) in runs {
        spans.sort_unstable();
        for pair in spans.windows(2) {
            assert!(
                pair[0].1 <= pair[1].0 + CLOCK_READS_MS,
                "{conversation}: a job started at {} while one ran until {}",
                pair[1].0,
                pair[0].1
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_postgres_share_200_deliveries_each_pull_request_in_turn() {
    let postgres = Postgres::shared();
    let cluster = Cluster::new(&postgres.database(), 60).await;
    let a = cluster.server("node-a");
    let b = cluster.server("node-b");
    // 200 deliveries, 10 per pull request: pushes (a waiting review is superseded by the next)
    // and comments (never superseded: each is answered), interleaved and split between the two
    // servers as a load balancer would; sent 20 at a time.
    let mut sent = Vec::new();
    for round in 0..10_u64 {
        for number in 1..=PULLS {
            let delivery = format!("d-{round}-{number}");
            let server = if (round + number) % 2 == 0 { &a } else { &b };
            let body = match round {
                0 => cluster.pull_request_event(number, "opened"),
                n if n % 2 == 1 => cluster.comment_event(number, "@bugloop thanks"),
                _ => cluster.pull_request_event(number, "synchronize"),
            };
            sent.push((server, delivery, body));
        }
        deliver_all(std::mem::take(&mut sent)).await;
    }
    let jobs = cluster.settled(&[&a, &b], Duration::from_secs(240)).await;
    assert_eq!(jobs.len(), 200);
    let mut by_state: HashMap<&str, usize> = HashMap::new();
    let mut owners: HashMap<String, usize> = HashMap::new();
    for job in &jobs {
        *by_state.entry(job["state"].as_str().unwrap()).or_default() += 1;
        if job["state"] == "done" {
            // Run exactly once: one attempt, never retried or taken over.
            assert_eq!(job["attempts"], 1, "{job:#}");
            let owner = job["lease_owner"].as_str().unwrap();
            *owners
                .entry(owner.split(':').next().unwrap().to_owned())
                .or_default() += 1;
        } else {
            assert_eq!(job["state"], "superseded", "{job:#}");
        }
    }
    eprintln!("jobs by state: {by_state:?}; done by server: {owners:?}");
    // Every pull request's first review ran; later pushes of one waiting were coalesced.
    assert!(
        by_state["done"] >= usize::try_from(PULLS).unwrap(),
        "{by_state:?}"
    );
    assert!(
        owners.contains_key("node-a") && owners.contains_key("node-b"),
        "both servers ran jobs: {owners:?}"
    );
    assert_one_at_a_time(&jobs);
    cluster.assert_each_finding_written_once();
    a.signal("-TERM");
    b.signal("-TERM");
}

/// Waits until one of `node`'s workers holds a job, and returns it.
async fn running_on(cluster: &Cluster, node: &str, servers: &[&Server]) -> Value {
    let start = Instant::now();
    loop {
        if let Some(job) = cluster.jobs().await.into_iter().find(|job| {
            job["state"] == "running"
                && job["lease_owner"]
                    .as_str()
                    .is_some_and(|owner| owner.starts_with(&format!("{node}:")))
        }) {
            return job;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{node} never ran a job: {}",
            logs(servers)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_job_on_postgres_has_its_job_taken_over_nothing_written_twice() {
    let postgres = Postgres::shared();
    let cluster = Cluster::new(&postgres.database(), 3).await;
    // Every answer takes a while: a review is seconds long, so the kill lands mid-job.
    cluster.fixture.sim.set_latency(Duration::from_millis(150));
    let a = cluster.server("node-a");
    let b = cluster.server("node-b");
    let mut sent = Vec::new();
    for number in 1..=PULLS {
        let server = if number % 2 == 0 { &a } else { &b };
        sent.push((
            server,
            format!("d-{number}"),
            cluster.pull_request_event(number, "opened"),
        ));
    }
    deliver_all(sent).await;
    let victim = running_on(&cluster, "node-a", &[&a, &b]).await;
    a.signal("-KILL");
    let jobs = cluster.settled(&[&b], Duration::from_secs(240)).await;
    let taken = jobs.iter().find(|job| job["id"] == victim["id"]).unwrap();
    assert_eq!(taken["state"], "done", "{taken:#}");
    assert!(
        taken["lease_owner"]
            .as_str()
            .unwrap()
            .starts_with("node-b:"),
        "{taken:#}"
    );
    assert_eq!(taken["attempts"], 2, "{taken:#}");
    assert!(jobs.iter().all(|job| job["state"] == "done"), "{jobs:#?}");
    assert_one_at_a_time(&jobs);
    cluster.assert_each_finding_written_once();
    b.signal("-TERM");
}

/// A SQLite queue in a temporary directory (to keep while the queue is used), and its URL.
fn sqlite_queue() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("queue.db").display());
    (dir, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_server_killed_mid_job_and_restarted_finishes_every_job_once() {
    let (_dir, store) = sqlite_queue();
    let cluster = Cluster::new(&store, 3).await;
    cluster.fixture.sim.set_latency(Duration::from_millis(150));
    let first = cluster.server("node-a");
    let mut sent = Vec::new();
    for number in 1..=PULLS {
        sent.push((
            &first,
            format!("d-{number}"),
            cluster.pull_request_event(number, "opened"),
        ));
    }
    deliver_all(sent).await;
    let victim = running_on(&cluster, "node-a", &[&first]).await;
    first.signal("-KILL");
    drop(first);
    let second = cluster.server("node-b");
    let jobs = cluster.settled(&[&second], Duration::from_secs(240)).await;
    let taken = jobs.iter().find(|job| job["id"] == victim["id"]).unwrap();
    assert_eq!(
        (taken["state"].as_str(), taken["attempts"].as_i64()),
        (Some("done"), Some(2)),
        "{taken:#}"
    );
    assert!(jobs.iter().all(|job| job["state"] == "done"), "{jobs:#?}");
    assert_one_at_a_time(&jobs);
    cluster.assert_each_finding_written_once();
    second.signal("-TERM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_hands_a_job_that_outlasts_the_grace_back_and_the_next_server_finishes_it() {
    let (_dir, store) = sqlite_queue();
    // A lease far longer than the test: only the hand-back lets the job run again soon.
    let cluster = Cluster::with_grace(&store, 600, 1).await;
    cluster.fixture.sim.set_latency(Duration::from_millis(400));
    let mut first = cluster.server("node-a");
    deliver_all(vec![(
        &first,
        "d-1".to_owned(),
        cluster.pull_request_event(1, "opened"),
    )])
    .await;
    running_on(&cluster, "node-a", &[&first]).await;
    first.signal("-TERM");
    let status = tokio::task::spawn_blocking(move || {
        let status = first.child.wait().unwrap();
        (status, first)
    })
    .await
    .unwrap();
    let (status, first) = status;
    assert!(status.success(), "{status:?}: {}", first.log());
    assert_contains(&first.log(), "handed back");
    let job = cluster
        .jobs()
        .await
        .into_iter()
        .find(|job| job["id"] == "d-1")
        .unwrap();
    assert_eq!(
        (job["state"].as_str(), job["attempts"].as_i64()),
        (Some("queued"), Some(0)),
        "{job:#}"
    );
    cluster.fixture.sim.set_latency(Duration::ZERO);
    let second = cluster.server("node-b");
    let jobs = cluster.settled(&[&second], Duration::from_secs(120)).await;
    assert_eq!(jobs[0]["state"], "done", "{jobs:#?}");
    let findings = cluster.app_review_comments(1);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    second.signal("-TERM");
}
