//! The App server's webhook endpoint on 127.0.0.1 with a real queue: every example GitHub
//! publishes of a handled event, signed, is accepted (202 with a job, or 204 when it asks for
//! none); a tampered body or a wrong secret is refused with nothing stored; a redelivery makes
//! no second job.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bugloop_github_sim::fixture::webhook_examples;
use bugloop_queue::{Queue, Retries};
use bugloop_server::serve::WebhookState;
use serde_json::json;

const SECRET: &[u8] = b"webhook secret";
const SENTRY_SECRET: &str = "3f1c2b7e9a0d4c8b";

struct Server {
    url: String,
    queue: Queue,
    _dir: tempfile::TempDir,
}

async fn server() -> Server {
    server_with(bugloop_server::serve::BODY_TIMEOUT).await
}

async fn server_with(body_timeout: std::time::Duration) -> Server {
    server_on("127.0.0.1:0", body_timeout, None).await
}

async fn server_on(
    address: &str,
    body_timeout: std::time::Duration,
    admin_token: Option<&str>,
) -> Server {
    server_asking(address, body_timeout, admin_token, None).await
}

/// A server whose intake asks `permissions` whether members and collaborators may write.
async fn server_asking(
    address: &str,
    body_timeout: std::time::Duration,
    admin_token: Option<&str>,
    permissions: Option<Arc<bugloop_server::intake_permissions::IntakePermissions>>,
) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let queue = Queue::open_sqlite(&dir.path().join("queue.db"), Retries::default())
        .await
        .unwrap();
    let state = WebhookState {
        body_timeout,
        admin_token: admin_token.map(|t| Arc::new(t.into())),
        report_token: Some(Arc::new(bugloop_server::serve::ReportAccess {
            token: "r3port".into(),
            repositories: vec!["acme/widgets".to_owned()],
        })),
        sentry: Some(Arc::new(bugloop_server::sentry_endpoint::SentryAccess {
            client_secret: SENTRY_SECRET.into(),
            projects: [("widgets-api".to_owned(), "acme/widgets".to_owned())].into(),
        })),
        permissions,
        ..WebhookState::new(
            SECRET.to_vec(),
            queue.clone(),
            bugloop_app::trigger_settings(
                &bugloop_config::Config::default(),
                vec!["bugloop-app[bot]".to_owned()],
            ),
        )
    };
    let url = crate::serve_on(address, state, std::time::Duration::from_millis(500)).await;
    Server {
        url,
        queue,
        _dir: dir,
    }
}

/// [`deliver`] of `body` signed with the server's secret.
async fn deliver_signed(
    server: &Server,
    event: &str,
    delivery: &str,
    body: &[u8],
) -> reqwest::StatusCode {
    deliver(
        server,
        event,
        delivery,
        body,
        &bugloop_webhooks_signature(body),
    )
    .await
}

async fn deliver(
    server: &Server,
    event: &str,
    delivery: &str,
    body: &[u8],
    signature: &str,
) -> reqwest::StatusCode {
    reqwest::Client::new()
        .post(format!("{}/webhook", server.url))
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", signature)
        .header("content-type", "application/json")
        .body(body.to_vec())
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn every_handled_example_is_accepted_and_a_job_made_when_it_asks_for_one() {
    let server = server().await;
    let mut sent = 0;
    let mut accepted = 0;
    for event in [
        "pull_request",
        "issue_comment",
        "pull_request_review_comment",
        "pull_request_review",
        "issues",
    ] {
        for (n, example) in webhook_examples(event).into_iter().enumerate() {
            let body = example.to_string().into_bytes();
            let status = deliver_signed(&server, event, &format!("{event}-{n}"), &body).await;
            assert!(
                status == 202 || status == 204,
                "{event} {}: {status}",
                example["action"]
            );
            sent += 1;
            accepted += usize::from(status == 202);
        }
    }
    let jobs = server.queue.jobs().await.unwrap();
    assert_eq!(jobs.len(), accepted, "one job per 202");
    assert!(
        jobs.iter()
            .any(|j| j.kind == bugloop_queue::JobKind::Review)
    );
    assert!(sent >= 70, "{sent}");
}

fn bugloop_webhooks_signature(body: &[u8]) -> String {
    bugloop_webhooks::signature(SECRET, body)
}

#[tokio::test]
async fn a_bad_signature_is_refused_and_a_redelivery_makes_no_second_job() {
    let server = server().await;
    let example = webhook_examples("pull_request")
        .into_iter()
        .find(|e| e["action"] == "opened" && e["pull_request"]["draft"] != true)
        .unwrap();
    let body = example.to_string().into_bytes();
    let good = bugloop_webhooks_signature(&body);
    let mut tampered = body.clone();
    let at = tampered.len() / 2;
    tampered[at] ^= 1;
    assert_eq!(
        deliver(&server, "pull_request", "d-1", &tampered, &good).await,
        401
    );
    let wrong = bugloop_webhooks::signature(b"another secret", &body);
    assert_eq!(
        deliver(&server, "pull_request", "d-1", &body, &wrong).await,
        401
    );
    assert_eq!(
        deliver(&server, "pull_request", "d-1", &body, "").await,
        401
    );
    assert!(
        server.queue.jobs().await.unwrap().is_empty(),
        "nothing stored"
    );
    assert_eq!(
        deliver(&server, "pull_request", "d-1", &body, &good).await,
        202
    );
    assert_eq!(
        deliver(&server, "pull_request", "d-1", &body, &good).await,
        202
    );
    assert_eq!(server.queue.jobs().await.unwrap().len(), 1);
    // An event no loop handles, signed: 204.
    let star = br#"{"action":"created"}"#;
    let signature = bugloop_webhooks_signature(star);
    assert_eq!(deliver(&server, "star", "d-2", star, &signature).await, 204);
    let health = reqwest::get(format!("{}/healthz", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let ready = reqwest::get(format!("{}/readyz", server.url))
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
}

#[tokio::test]
async fn the_status_page_lists_the_jobs_with_what_others_wrote_escaped() {
    let server = server().await;
    let hostile = "acme/<img src=x onerror=alert(1)>";
    let body = serde_json::json!({
        "action": "opened",
        "repository": {"full_name": hostile},
        "sender": {"login": "alice", "type": "User"},
        "pull_request": {"number": 7, "title": "t", "draft": false, "user": {"login": "alice"},
            "head": {"ref": "f", "sha": "abc", "repo": {"full_name": hostile}},
            "base": {"ref": "main", "sha": "def", "repo": {"full_name": hostile}}}
    })
    .to_string()
    .into_bytes();
    assert_eq!(
        deliver_signed(&server, "pull_request", "d-x", &body).await,
        202
    );
    let page = reqwest::get(format!("{}/", server.url)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("default-src 'none'")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("1 of 1 jobs"), "{html}");
    assert!(
        html.contains("github:acme/&lt;img src=x onerror=alert(1)&gt;#7"),
        "{html}"
    );
    assert!(!html.contains("<img"), "{html}");
}

/// Sends `head` (a request line and headers) and `body` over a raw connection, then waits for the
/// answer's status line.
async fn raw(server: &Server, head: &str, body: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = server.url.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut answer = vec![0; 512];
    let read = tokio::time::timeout(std::time::Duration::from_secs(30), stream.read(&mut answer))
        .await
        .expect("an answer")
        .unwrap();
    String::from_utf8_lossy(&answer[..read])
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// The head of the ping delivery `delivery` (signed wrongly), promising `length` bytes of body.
fn ping_head(delivery: &str, length: usize) -> String {
    format!(
        "POST /webhook HTTP/1.1\r\nhost: bugloop\r\ncontent-length: {length}\r\n\
         x-github-event: ping\r\nx-github-delivery: {delivery}\r\nx-hub-signature-256: sha256=00\r\n\r\n"
    )
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408_and_nothing_stored() {
    let server = server_with(std::time::Duration::from_millis(300)).await;
    // A client that promises 1,000 bytes and sends one.
    let status = raw(&server, &ping_head("slow", 1000), b"{").await;
    assert_eq!(status, "HTTP/1.1 408 Request Timeout");
    assert!(server.queue.jobs().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_body_over_githubs_limit_is_refused_413() {
    let server = server().await;
    let over = bugloop_server::serve::MAX_BODY_BYTES + 1;
    // Refused on its declared length, before a byte of the body is read.
    let status = raw(&server, &ping_head("big", over), b"").await;
    assert_eq!(status, "HTTP/1.1 413 Payload Too Large");
    assert!(server.queue.jobs().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server().await;
    let address = server.url.strip_prefix("http://").unwrap();
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"POST /webhook HTTP/1.1\r\nhost: bugloop\r\nx-github-ev")
        .await
        .unwrap();
    let mut answer = Vec::new();
    // The server closes the connection (the test's own limit is far longer than the server's).
    let closed = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        stream.read_to_end(&mut answer),
    )
    .await;
    assert!(closed.is_ok(), "the connection was still open after 20 s");
}

/// This machine's address on its network (not loopback), as a peer elsewhere would reach it.
fn outside_address() -> std::net::IpAddr {
    // Connecting a UDP socket sends nothing; it picks the interface a packet would leave by.
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    socket
        .connect("192.0.2.1:9")
        .expect("this machine has a network interface besides loopback");
    let ip = socket.local_addr().unwrap().ip();
    assert!(!ip.is_loopback(), "{ip}");
    ip
}

async fn get(url: &str, token: Option<&str>) -> reqwest::StatusCode {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn the_status_page_and_metrics_answer_loopback_or_the_admin_token_only() {
    let outside = outside_address();
    // No token: loopback sees them, a peer from the network does not; health checks answer all.
    let server = server_on("0.0.0.0:0", bugloop_server::serve::BODY_TIMEOUT, None).await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let from_outside = format!("http://{outside}:{port}");
    for path in ["/", "/metrics"] {
        assert_eq!(
            get(&format!("{}{path}", server.url), None).await,
            200,
            "{path}"
        );
        assert_eq!(
            get(&format!("{from_outside}{path}"), None).await,
            403,
            "{path}"
        );
    }
    assert_eq!(get(&format!("{from_outside}/healthz"), None).await, 200);
    assert_eq!(get(&format!("{from_outside}/readyz"), None).await, 200);
    // A proxy on this machine passes the network's requests on from loopback: one that says it
    // forwarded them (as nginx, Caddy and Traefik do) is not the operator's.
    for forwarded in ["x-forwarded-for", "forwarded", "x-real-ip"] {
        let status = reqwest::Client::new()
            .get(format!("{}/metrics", server.url))
            .header(forwarded, "for=203.0.113.7")
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 403, "{forwarded}");
    }
    // With a token: it alone opens them, from anywhere, loopback included.
    let server = server_on(
        "0.0.0.0:0",
        bugloop_server::serve::BODY_TIMEOUT,
        Some("s3cret"),
    )
    .await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let from_outside = format!("http://{outside}:{port}");
    for path in ["/", "/metrics"] {
        assert_eq!(
            get(&format!("{from_outside}{path}"), Some("s3cret")).await,
            200
        );
        assert_eq!(
            get(&format!("{from_outside}{path}"), Some("s3cre")).await,
            403
        );
        assert_eq!(
            get(&format!("{from_outside}{path}"), Some("s3cret!")).await,
            403
        );
        assert_eq!(get(&format!("{}{path}", server.url), None).await, 403);
    }
}

/// `POST /report`: only with the report token, only a readable report, for a repository named
/// owner/name; each report is a job of its own, even the same one twice.
#[tokio::test]
async fn error_reports_are_queued_with_the_report_token_only() {
    let server = server().await;
    let send = async |token: Option<&str>, query: &str, body: &[u8]| {
        let mut request = reqwest::Client::new()
            .post(format!("{}/report{query}", server.url))
            .body(body.to_vec());
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let answer = request.send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    };
    let trace = b"Traceback (most recent call last):\n  File \"app/models.py\", line 2, in last\nIndexError: list index out of range\n";
    let repo = "?repository=acme/widgets";
    assert_eq!(send(None, repo, trace).await.0, 401);
    assert_eq!(send(Some("r3porT"), repo, trace).await.0, 401);
    assert_eq!(send(Some("r3port"), "", trace).await.0, 400);
    assert_eq!(send(Some("r3port"), "?repository=../x", trace).await.0, 400);
    let (status, said) = send(Some("r3port"), repo, b"   \n").await;
    assert_eq!(
        (status, said.as_str()),
        (400, "the error report is empty\n")
    );
    let (status, said) = send(Some("r3port"), repo, b"\x7fELF\x00\x00").await;
    assert_eq!(status, 400);
    assert!(said.contains("not text"), "{said}");
    assert!(
        server.queue.jobs().await.unwrap().is_empty(),
        "nothing queued"
    );
    for _ in 0..2 {
        let (status, said) = send(Some("r3port"), "?repository=acme%2Fwidgets", trace).await;
        assert_eq!(status, 202, "{said}");
    }
    // The token files only in the repositories it is scoped to.
    let (status, said) = send(Some("r3port"), "?repository=someone-else/private", trace).await;
    assert_eq!(status, 403, "{said}");
    assert!(
        said.contains("may not file issues in someone-else/private"),
        "{said}"
    );
    let jobs = server.queue.jobs().await.unwrap();
    assert_eq!(jobs.len(), 2, "{jobs:#?}");
    assert!(
        jobs.iter()
            .all(|j| j.kind == bugloop_queue::JobKind::ErrorReport
                && j.conversation == "github:acme/widgets#reports")
    );
}

/// Sentry's issue alert, signed with the integration's client secret: queued as the report of
/// its project's repository (its frames written as the platform's trace); a forged or unsigned
/// one is a 401 with nothing queued; Sentry's retry of a delivery is not queued twice; a
/// project nobody mapped is a 422 naming it; a signed delivery that is no error files nothing.
#[tokio::test]
async fn sentrys_signed_alerts_are_queued_and_forged_ones_refused() {
    let server = server().await;
    let alert = include_bytes!("../../bugloop-intake/tests/sentry/python.json");
    let send = async |signature: Option<String>, resource: &str, request: &str, body: &[u8]| {
        let mut post = reqwest::Client::new()
            .post(format!("{}/sentry", server.url))
            .header("content-type", "application/json")
            .header("sentry-hook-resource", resource)
            .header("request-id", request)
            .body(body.to_vec());
        if let Some(signature) = signature {
            post = post.header("sentry-hook-signature", signature);
        }
        let answer = post.send().await.unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    };
    let signed = |body: &[u8]| {
        Some(bugloop_server::sentry_endpoint::signature(
            SENTRY_SECRET.as_bytes(),
            body,
        ))
    };
    // Forged: no signature, another secret's, the signature of another body.
    assert_eq!(send(None, "event_alert", "a1", alert).await.0, 401);
    let other = bugloop_server::sentry_endpoint::signature(b"another-secret-0000", alert);
    assert_eq!(send(Some(other), "event_alert", "a1", alert).await.0, 401);
    let mut tampered = alert.to_vec();
    tampered.extend_from_slice(b" ");
    let (status, said) = send(signed(alert), "event_alert", "a1", &tampered).await;
    assert_eq!(status, 401, "{said}");
    assert!(said.contains("Sentry-Hook-Signature"), "{said}");
    assert!(
        server.queue.jobs().await.unwrap().is_empty(),
        "nothing queued"
    );

    // Signed: queued once, whatever Sentry retries.
    for _ in 0..2 {
        let (status, said) = send(signed(alert), "event_alert", "a1-b2", alert).await;
        assert!(status == 202 || status == 200, "{status} {said}");
    }
    let jobs = server.queue.jobs().await.unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:#?}");
    assert_eq!(jobs[0].kind, bugloop_queue::JobKind::ErrorReport);
    assert_eq!(jobs[0].conversation, "github:acme/widgets#reports");
    let trigger: bugloop_webhooks::Trigger = serde_json::from_str(&jobs[0].payload).unwrap();
    let bugloop_webhooks::Trigger::ErrorReport { report, .. } = trigger else {
        panic!("not a report");
    };
    let read = bugloop_intake::read(report.as_bytes()).unwrap();
    assert_eq!(read.kind, "IndexError");
    assert_eq!(read.frames[0].file, "/srv/app/app/models.py");
    assert_eq!(read.frames[0].function.as_deref(), Some("last"));

    // A project nobody mapped; a signed installation event; a body that is no alert.
    let unmapped = String::from_utf8_lossy(alert).replace("widgets-api", "billing");
    let (status, said) = send(
        signed(unmapped.as_bytes()),
        "event_alert",
        "c3",
        unmapped.as_bytes(),
    )
    .await;
    assert_eq!(status, 422, "{said}");
    assert!(
        said.contains("no repository for the Sentry project billing"),
        "{said}"
    );
    let install = br#"{"action": "created", "data": {"installation": {}}}"#;
    let (status, said) = send(signed(install), "installation", "d4", install).await;
    assert_eq!(status, 200, "{said}");
    let junk = b"{\"data\": 5}";
    let (status, said) = send(signed(junk), "event_alert", "e5", junk).await;
    assert_eq!(status, 400, "{said}");
    assert_eq!(
        server.queue.jobs().await.unwrap().len(),
        1,
        "nothing more queued"
    );
}

/// An unsigned delivery is refused before a byte of its body is read: a client that declares
/// 25 MB and sends nothing gets its 401 at once (it used to be read, or waited for, first).
#[tokio::test]
async fn an_unsigned_body_is_refused_before_it_is_read() {
    let server = server_with(std::time::Duration::from_secs(20)).await;
    let status = raw(
        &server,
        "POST /webhook HTTP/1.1\r\nhost: bugloop\r\ncontent-length: 26214400\r\n\
         x-github-event: ping\r\nx-github-delivery: big\r\n\r\n",
        b"{",
    )
    .await;
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    assert!(server.queue.jobs().await.unwrap().is_empty());
}

/// Bodies being read at once share a byte budget: two deliveries that declare 25 MB and are
/// slow to send them hold 50 MB of it, and a third large one is answered 503 at once (GitHub
/// redelivers) instead of adding to the memory; a small one still fits.
#[tokio::test]
async fn bodies_being_read_at_once_share_a_byte_budget() {
    use tokio::io::AsyncWriteExt;
    let server = server_with(std::time::Duration::from_secs(20)).await;
    let address = server.url.strip_prefix("http://").unwrap().to_owned();
    let head = |delivery: &str, length: usize| {
        format!(
            "POST /webhook HTTP/1.1\r\nhost: bugloop\r\ncontent-length: {length}\r\n\
             x-github-event: ping\r\nx-github-delivery: {delivery}\r\n\
             x-hub-signature-256: sha256=00\r\n\r\n"
        )
    };
    let mut held = Vec::new();
    for delivery in ["slow-1", "slow-2"] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream
            .write_all(head(delivery, 25 * 1024 * 1024).as_bytes())
            .await
            .unwrap();
        held.push(stream);
    }
    // The server has taken both (their bodies are awaited).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let status = raw(&server, &head("large", 25 * 1024 * 1024), b"").await;
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    let status = raw(&server, &head("small", 2), b"{}").await;
    assert_eq!(
        status, "HTTP/1.1 401 Unauthorized",
        "read, then its signature checked"
    );
    let over = raw(&server, &head("huge", 26 * 1024 * 1024), b"").await;
    assert_eq!(over, "HTTP/1.1 413 Payload Too Large");
    drop(held);
}

/// An `issue_comment` that mentions bugloop, from an author of the given standing.
fn comment_from(repository: &str, standing: &str, n: u64) -> Vec<u8> {
    let mut example = webhook_examples("issue_comment")
        .into_iter()
        .find(|e| e["action"] == "created")
        .unwrap();
    example["issue"]["pull_request"] =
        json!({"url": format!("https://api.github.com/repos/{repository}/pulls/1")});
    example["repository"]["full_name"] = json!(repository);
    example["comment"]["id"] = json!(1000 + n);
    example["comment"]["body"] = json!(format!("@bugloop why? ({n})"));
    example["comment"]["user"] = json!({"login": format!("visitor{n}"), "type": "User", "id": n});
    example["comment"]["author_association"] = json!(standing);
    example.to_string().into_bytes()
}

/// Delivers `count` issue comments one after another, the `n`th as delivery `{prefix}-{n}` with
/// the body `body(n)`: the statuses answered.
async fn deliver_comments(
    server: &Server,
    prefix: &str,
    count: u64,
    body: impl Fn(u64) -> Vec<u8>,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for n in 0..count {
        let delivery = format!("{prefix}-{n}");
        let status = deliver_signed(server, "issue_comment", &delivery, &body(n)).await;
        statuses.push(status.as_u16());
    }
    statuses
}

/// A flood of comments from people who are not the repository's stops at the hourly intake:
/// past 20 per repository they are recorded (a redelivery is still known) but not queued, while
/// a member's comment, and an outsider's on another repository, are queued as ever.
#[tokio::test]
async fn a_flood_of_outsiders_comments_is_not_queued_past_the_hourly_intake() {
    let server = server().await;
    let statuses = deliver_comments(&server, "flood", 25, |n| {
        comment_from("acme/widgets", "NONE", n)
    })
    .await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 202).count(),
        20,
        "{statuses:?}"
    );
    assert_eq!(statuses[20..], [204; 5], "{statuses:?}");
    // A review's body asks as a comment does, and counts the same.
    let mut review = webhook_examples("pull_request_review")
        .into_iter()
        .find(|e| e["action"] == "submitted")
        .unwrap();
    review["repository"]["full_name"] = json!("acme/widgets");
    review["review"]["body"] = json!("@bugloop why?");
    review["review"]["author_association"] = json!("NONE");
    review["review"]["user"] = json!({"login": "visitor", "type": "User", "id": 5});
    let body = review.to_string().into_bytes();
    let status = deliver_signed(&server, "pull_request_review", "review", &body).await;
    assert_eq!(status, 204);
    review["review"]["author_association"] = json!("MEMBER");
    let body = review.to_string().into_bytes();
    let status = deliver_signed(&server, "pull_request_review", "review-2", &body).await;
    assert_eq!(status, 202, "a member's review is queued");
    for (delivery, repository, standing) in [
        ("member", "acme/widgets", "MEMBER"),
        ("elsewhere", "acme/gadgets", "FIRST_TIME_CONTRIBUTOR"),
    ] {
        let body = comment_from(repository, standing, 99);
        let status = deliver_signed(&server, "issue_comment", delivery, &body).await;
        assert_eq!(status, 202, "{delivery}");
    }
    assert_eq!(server.queue.jobs().await.unwrap().len(), 23);
}

/// The intake caps by permission, not by association: a read-only collaborator (GitHub says
/// COLLABORATOR) is an outsider once GitHub, asked as the App's installation, says they cannot
/// write, and is asked once (the answer kept); a member with write access is not capped.
#[tokio::test]
async fn a_read_only_collaborator_is_capped_as_an_outsider() {
    use bugloop_github::{AppCredentials, Endpoint, Policy};
    let sim = bugloop_github_sim::Simulator::start("acme/widgets")
        .await
        .unwrap();
    let credentials =
        Arc::new(AppCredentials::from_pem(77, &bugloop_github_sim::fixture::app_key()).unwrap());
    sim.add_app(77, "bugloop-app", credentials.public_key_der(), &[42]);
    sim.set_permission("reader", "read");
    sim.set_permission("writer", "write");
    let permissions = Arc::new(bugloop_server::intake_permissions::IntakePermissions::new(
        credentials,
        Endpoint::from_values(Some(&sim.api_url()), Some(&sim.graphql_url())),
        Policy::default(),
    ));
    let server = server_asking(
        "127.0.0.1:0",
        bugloop_server::serve::BODY_TIMEOUT,
        None,
        Some(permissions),
    )
    .await;
    let comment = |login: &str, standing: &str, n: u64| {
        let mut example: serde_json::Value =
            serde_json::from_slice(&comment_from("acme/widgets", standing, n)).unwrap();
        example["comment"]["user"] = json!({"login": login, "type": "User", "id": n});
        example["installation"] = json!({"id": 42});
        example.to_string().into_bytes()
    };
    let statuses =
        deliver_comments(&server, "r", 22, |n| comment("reader", "COLLABORATOR", n)).await;
    assert_eq!(statuses[..20], [202; 20], "{statuses:?}");
    assert_eq!(statuses[20..], [204; 2], "{statuses:?}");
    let asked = sim
        .requests()
        .iter()
        .filter(|r| r.path.contains("/collaborators/reader/permission"))
        .count();
    assert_eq!(asked, 1, "asked once, the answer kept");
    let body = comment("writer", "MEMBER", 99);
    let status = deliver_signed(&server, "issue_comment", "w-1", &body).await;
    assert_eq!(status.as_u16(), 202, "a member who may write is not capped");
}
