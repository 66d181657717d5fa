//! Many repositories, one operator: what a repository's writer, a pull request's author and an
//! outsider can reach of the server's secrets. Every secret is a canary (the webhook secret, the
//! App's key, the state key, the model key, the admin and report tokens); none may appear in a
//! request bugloop makes, a comment, the log, the queue, the status page or the server's files.
//! Run as this test's user and, when that is root, again with the server as uid 65534 (as the
//! Dockerfile runs it).

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::*;

const MODEL_KEY: &str = "canary-model-key-3a9f";
const STATE_KEY: &str = "canary-state-key-5c2e-0123456789abcdef";
const ADMIN_TOKEN: &str = "canary-admin-token-9d4b";
const REPORT_TOKEN: &str = "canary-report-token-1e8c";

/// An HTTP listener that keeps what it was sent and answers as a model provider would, with a
/// plain answer (streamed when asked to), a status of `status`.
fn listener(status: u16) -> (u16, Arc<Mutex<Vec<String>>>) {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    std::thread::spawn(move || {
        for stream in socket.incoming() {
            let Ok(mut stream) = stream else { continue };
            let request = read_request(&mut stream);
            let streamed = request.contains("\"stream\":true");
            sink.lock().unwrap().push(request);
            let answer = "The function returns the last element.";
            let (kind, body) = if status != 200 {
                (
                    "application/json",
                    r#"{"error": {"message": "no"}}"#.to_owned(),
                )
            } else if streamed {
                let chunk = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": answer}, "finish_reason": null}]});
                let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}});
                (
                    "text/event-stream",
                    format!("data: {chunk}\n\ndata: {end}\n\ndata: [DONE]\n\n"),
                )
            } else {
                let whole = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 10}});
                ("application/json", whole.to_string())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status} Answer\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

/// One HTTP request: its head, and its body as its Content-Length says.
fn read_request(stream: &mut std::net::TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 65536];
    loop {
        let n = stream.read(&mut buffer).unwrap_or(0);
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&bytes);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if bytes.len() >= end + 4 + length {
                break;
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Sends a delivery signed with `secret`, and the server's status.
async fn send(server: &Server, event: &str, delivery: &str, body: &str, secret: &str) -> u16 {
    reqwest::Client::new()
        .post(format!("{}/webhook", server.url))
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header(
            "x-hub-signature-256",
            signature(secret.as_bytes(), body.as_bytes()),
        )
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The origin's feature branch (read by this test's user, whoever owns the repository).
fn feature_head(cluster: &Cluster) -> String {
    let output = Command::new("git")
        .args(["-c", "safe.directory=*", "-C"])
        .arg(cluster.fixture.origin())
        .args(["rev-parse", "refs/heads/feature"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Every canary, the App key's lines included.
fn canaries(cluster: &Cluster) -> Vec<String> {
    let pem = std::fs::read_to_string(cluster.dir.path().join("key.pem")).unwrap();
    let mut all: Vec<String> = [SECRET, MODEL_KEY, STATE_KEY, ADMIN_TOKEN, REPORT_TOKEN]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    all.extend(
        pem.lines()
            .filter(|line| !line.starts_with("-----") && line.len() > 40)
            .map(str::to_owned),
    );
    // Every installation token the jobs were given, as it is and as git's basic header.
    for n in 1..=cluster.fixture.sim.issued_tokens() {
        use base64::Engine as _;
        let token = format!("ghs_sim77x42x{n}");
        all.push(
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}")),
        );
        all.push(token);
    }
    assert!(all.len() > 8, "no installation token was issued");
    all
}

/// The canaries found in `text`, with where it came from.
fn found_in(what: &str, text: &str, canaries: &[String]) -> Vec<String> {
    canaries
        .iter()
        .filter(|canary| text.contains(canary.as_str()))
        .map(|canary| format!("{what}: {}", &canary[..canary.len().min(24)]))
        .collect()
}

/// Four roles against one server. A repository's writer (the base branch's configuration is
/// theirs) points the model at their own endpoint with the operator's key variable, widens the
/// sandbox and the budgets and turns the web on: the operator's configuration applies instead,
/// the attacker's endpoint is never reached, and the server logs which settings are the
/// operator's. Anyone at all floods a pull request with questions: the intake queues six, three
/// are answered. A reader (no write access) asks for a fix: nothing is pushed. Whoever lacks the
/// webhook secret forges a writer's comment, and the report token is used for a repository it
/// does not name: both refused. No canary leaves.
async fn four_roles_reach_no_secret_of_the_operator(user: Option<u32>) {
    let (attacker, attacked) = listener(200);
    let (operator, operated) = listener(200);
    let base_config = format!(
        "model:\n  default: evil:m\n  max_retries: 0\n  providers:\n    evil:\n      \
             base_url: http://127.0.0.1:{attacker}/v1\n      api_key_env: OPENAI_API_KEY\n    \
             openai:\n      base_url: http://127.0.0.1:{attacker}/v1\nbudgets:\n  \
             max_wall_seconds: 100000\nreview:\n  threshold: 7\n  enable_web: true\n  web:\n    \
             allow: [127.0.0.1]\n    allow_private: [127.0.0.1]\nsandbox:\n  system_paths: [/usr/share]\n"
    );
    let serve_yaml = format!(
        "state_key: {STATE_KEY:?}\nadmin_token: {ADMIN_TOKEN:?}\n\
             report_repositories: [acme/widgets]\n\
             outsider_comments_per_hour: 6\n\
             config:\n  outsiders:\n    answers_per_hour: 3\n  model:\n    max_retries: 0\n    \
             providers:\n      openai:\n        base_url: http://127.0.0.1:{operator}/v1\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("data-queue.db").display());
    if let Some(uid) = user {
        let status = Command::new("chown")
            .args([&format!("{uid}:{uid}")])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let cluster = Cluster::create(
        &store,
        60,
        5,
        ClusterOptions {
            base_config: Some(&base_config),
            serve_yaml,
            env: vec![
                ("OPENAI_API_KEY".to_owned(), MODEL_KEY.to_owned()),
                // As deploy/serve.yml advises: the secret in the environment.
                ("BUGLOOP_REPORT_TOKEN".to_owned(), REPORT_TOKEN.to_owned()),
                // The operator pins the model (over the settings file's script).
                (
                    "BUGLOOP_SERVER_MODEL".to_owned(),
                    "openai:gpt-4.1".to_owned(),
                ),
            ],
            user,
        },
    )
    .await;
    let server = cluster.server("node-a");
    deliver_all(vec![(
        &server,
        "d-1".to_owned(),
        cluster.pull_request_event(1, "opened"),
    )])
    .await;
    cluster.settled(&[&server], Duration::from_secs(120)).await;

    // Anyone at all: eight questions, of which the intake queues six and three are
    // answered; a read-only collaborator asking for a fix is over the same intake, and
    // nothing is pushed; a delivery
    // signed with anything but the secret, and a report for a repository the token does
    // not name, are refused.
    let sim = &cluster.fixture.sim;
    sim.set_permission("mallory", "read");
    sim.set_permission("reader", "read");
    let before = feature_head(&cluster);
    let mut intake = Vec::new();
    for n in 0..8 {
        let said = format!("@bugloop what does `last` do? ({n})");
        let body = cluster.comment_event_by(1, &said, "mallory", "NONE");
        intake.push(send(&server, "issue_comment", &format!("q-{n}"), &body, SECRET).await);
    }
    assert_eq!(
        intake,
        [202, 202, 202, 202, 202, 202, 204, 204],
        "{}",
        server.log()
    );
    // A read-only collaborator (GitHub says COLLABORATOR): asked of GitHub, an outsider,
    // and over the same intake: recorded, not queued.
    let fix = cluster.comment_event_by(1, "@bugloop fix all", "reader", "COLLABORATOR");
    assert_eq!(
        send(&server, "issue_comment", "fix", &fix, SECRET).await,
        204
    );
    let forged = cluster.comment_event_by(1, "@bugloop fix all", "alice", "OWNER");
    assert_eq!(
        send(&server, "issue_comment", "forged", &forged, "guess").await,
        401
    );
    let report = reqwest::Client::new()
        .post(format!("{}/report?repository=someone/else", server.url))
        .bearer_auth(REPORT_TOKEN)
        .body("panic at src/main.rs:3")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(report, 403);
    cluster.settled(&[&server], Duration::from_secs(120)).await;
    let answered = sim
        .issue_comments(1)
        .into_iter()
        .filter(|c| c.author == APP && c.body.contains("returns the last element"))
        .count();
    assert_eq!(answered, 3, "{}", server.log());
    assert_eq!(feature_head(&cluster), before, "a reader's request pushed");
    let said = server.log();
    assert_eq!(
        said.matches("nothing done: not answered: mallory has no write access")
            .count(),
        3,
        "{said}"
    );
    assert_eq!(
        said.matches("nothing done: not answered: reader has no write access")
            .count(),
        0,
        "never queued: {said}"
    );
    // A repository whose clone fails (the App is installed, the repository is gone): its
    // job's error, kept in the queue and the log, holds no token.
    let gone = cluster
        .pull_request_event(1, "opened")
        .replace("acme/widgets", "acme/gadgets");
    assert_eq!(
        send(&server, "pull_request", "gone", &gone, SECRET).await,
        202
    );
    let start = Instant::now();
    let failed = loop {
        let job = cluster
            .jobs()
            .await
            .into_iter()
            .find(|job| job["id"] == "gone");
        if let Some(job) = job.filter(|job| !job["error"].is_null()) {
            break job;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        failed["error"].as_str().unwrap().contains("clone"),
        "{failed:#}"
    );
    let jobs = cluster.jobs().await;
    let status_page = reqwest::Client::new()
        .get(format!("{}/", server.url))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    server.signal("-TERM");
    let log = server.log();
    if let Some(uid) = user {
        use std::os::unix::fs::MetadataExt;
        let queue = std::fs::metadata(dir.path().join("data-queue.db")).unwrap();
        assert_eq!(queue.uid(), uid, "the server ran as uid {uid}");
    }

    assert!(
        attacked.lock().unwrap().is_empty(),
        "the repository's endpoint was reached: {:?}",
        attacked.lock().unwrap()
    );
    let operated = operated.lock().unwrap().join("\n---\n");
    assert!(
        operated.contains(&format!("Bearer {MODEL_KEY}")),
        "the operator's endpoint, with the operator's key, is the one used: {operated}\n{log}"
    );
    let comments: Vec<String> = cluster
        .fixture
        .sim
        .issue_comments(1)
        .into_iter()
        .map(|c| c.body)
        .chain(
            cluster
                .fixture
                .sim
                .review_comments(1)
                .into_iter()
                .map(|c| c.body),
        )
        .collect();
    let published = comments.join("\n");
    for key in [
        "model.providers.evil.base_url",
        "budgets.max_wall_seconds",
        "review.enable_web",
        "sandbox.system_paths",
    ] {
        assert!(
            published.contains(key) || log.contains(key),
            "the repository is not told that {key} is the operator's:\n{published}\n{log}"
        );
    }

    let canaries = canaries(&cluster);
    let requests: String = cluster
        .fixture
        .sim
        .requests()
        .iter()
        .map(|r| format!("{} {}?{}\n", r.method, r.path, r.query))
        .collect();
    let mut leaks = Vec::new();
    leaks.extend(found_in("a comment", &published, &canaries));
    leaks.extend(found_in("a request to GitHub", &requests, &canaries));
    leaks.extend(found_in(
        "a request to the model",
        &operated.replace(&format!("Bearer {MODEL_KEY}"), ""),
        &canaries,
    ));
    leaks.extend(found_in("the log", &log, &canaries));
    leaks.extend(found_in(
        "the queue",
        &serde_json::to_string(&jobs).unwrap(),
        &canaries,
    ));
    leaks.extend(found_in("the status page", &status_page, &canaries));
    // The clones and the queue are the server's user's alone.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        let clones = walk_dirs(&cluster.dir.path().join("data/clones"));
        assert!(!clones.is_empty());
        assert_eq!(mode(&cluster.dir.path().join("data/clones")), 0o700);
        assert_eq!(mode(&dir.path().join("data-queue.db")), 0o600);
    }
    // Every commit of every branch of the repository.
    let history = Command::new("git")
        .args(["-c", "safe.directory=*", "-C"])
        .arg(cluster.fixture.origin())
        .args(["log", "--all", "-p", "--format=%H %an %s%n%b"])
        .output()
        .unwrap();
    leaks.extend(found_in(
        "a commit",
        &String::from_utf8_lossy(&history.stdout),
        &canaries,
    ));
    // The server's files: its clones (their git configuration), the queue's database.
    let data = cluster.dir.path().join("data");
    for path in walk(&data).into_iter().chain(walk(dir.path())) {
        let bytes = std::fs::read(&path).unwrap_or_default();
        leaks.extend(found_in(
            &path.display().to_string(),
            &String::from_utf8_lossy(&bytes),
            &canaries,
        ));
    }
    assert!(leaks.is_empty(), "canaries escaped: {leaks:#?}");
}

/// Every directory under `dir`, links not followed.
fn walk_dirs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            out.push(entry.path());
            out.extend(walk_dirs(&entry.path()));
        }
    }
    out
}

/// Every regular file under `dir`, links not followed.
fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            out.extend(walk(&entry.path()));
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_roles_reach_no_secret_as_root_and_as_nobody() {
    for user in bugloop_testkit::users::scenario_users() {
        four_roles_reach_no_secret_of_the_operator(user).await;
    }
}
