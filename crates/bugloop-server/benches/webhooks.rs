//! How fast the App server takes deliveries: signed `pull_request` deliveries sent over loopback
//! to the real webhook endpoint (signature check, trigger, delivery and job recorded durably in
//! the queue) by concurrent clients in the same process; throughput and latency percentiles, for
//! the SQLite queue and for PostgreSQL (a server of the machine's packages started for the
//! benchmark, fsync on, on the same machine). Results go into BENCHMARKS.md.
//! `cargo bench -p bugloop-app --bench webhooks`; `BUGLOOP_BENCH_CLIENTS=N` sets how many
//! clients send at once (64 by default): a closed loop, so their number is the load.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// A benchmark reports on standard output.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bugloop_queue::{Queue, Retries};
use bugloop_server::serve::{WebhookState, router};
use bugloop_webhooks::signature;

const SECRET: &[u8] = b"bench secret";
const DELIVERIES: usize = 20_000;
/// Concurrent clients when `BUGLOOP_BENCH_CLIENTS` does not say.
const DEFAULT_CLIENTS: usize = 64;

fn clients() -> usize {
    std::env::var("BUGLOOP_BENCH_CLIENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_CLIENTS)
}

fn payload(n: usize) -> Vec<u8> {
    serde_json::json!({
        "action": "synchronize",
        "repository": {"full_name": format!("acme/repo{}", n % 50)},
        "sender": {"login": "alice", "type": "User"},
        "installation": {"id": 42},
        "pull_request": {"number": n % 200 + 1, "title": "t", "draft": false, "user": {"login": "alice"},
            "head": {"ref": "feature", "sha": format!("{n:040x}"), "repo": {"full_name": format!("acme/repo{}", n % 50)}},
            "base": {"ref": "main", "sha": "0".repeat(40), "repo": {"full_name": format!("acme/repo{}", n % 50)}}}
    })
    .to_string()
    .into_bytes()
}

fn main() {
    let runtime = bugloop_testkit::multi_thread_runtime();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let queue = Queue::open_sqlite(&dir.path().join("queue.db"), Retries::default())
            .await
            .unwrap();
        measure(queue, "SQLite queue").await;
        let postgres = bugloop_testkit::postgres::Postgres::start(true);
        let queue = Queue::open_postgres(&postgres.database(), Retries::default(), 8)
            .await
            .unwrap();
        measure(queue, "PostgreSQL queue (fsync on)").await;
    });
}

async fn measure(queue: Queue, label: &str) {
    {
        let state = WebhookState::new(
            SECRET.to_vec(),
            queue.clone(),
            bugloop_app::trigger_settings(
                &bugloop_config::Config::default(),
                vec!["bugloop-app[bot]".to_owned()],
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/webhook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router(state)).await.unwrap() });
        let bodies: Vec<(Vec<u8>, String)> = (0..DELIVERIES)
            .map(|n| {
                let body = payload(n);
                let signed = signature(SECRET, &body);
                (body, signed)
            })
            .collect();
        let bodies = Arc::new(bodies);
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(clients())
            .build()
            .unwrap();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..clients() {
            let (client, url, bodies, next) =
                (client.clone(), url.clone(), bodies.clone(), next.clone());
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((body, signed)) = bodies.get(n) else {
                        break;
                    };
                    let sent = Instant::now();
                    let status = client
                        .post(&url)
                        .header("x-github-event", "pull_request")
                        .header("x-github-delivery", format!("delivery-{n}"))
                        .header("x-hub-signature-256", signed)
                        .body(body.clone())
                        .send()
                        .await
                        .unwrap()
                        .status();
                    assert_eq!(status, 202);
                    latencies.push(sent.elapsed());
                }
                latencies
            }));
        }
        let mut latencies: Vec<Duration> = Vec::new();
        for task in tasks {
            latencies.extend(task.await.unwrap());
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort();
        let at = |q: f64| {
            let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
            latencies[index].as_secs_f64() * 1000.0
        };
        let jobs = queue.jobs().await.unwrap();
        assert_eq!(jobs.len(), DELIVERIES, "every delivery queued once");
        println!(
            "{label}: {DELIVERIES} signed deliveries from {} clients in {elapsed:.2} s: \
             {:.0} deliveries/s; latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            clients(),
            DELIVERIES as f64 / elapsed,
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
}
