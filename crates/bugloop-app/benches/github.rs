//! What publishing costs on GitHub, measured against the simulator (GitHub's rules, in memory on
//! 127.0.0.1) through the real application layer: a review of a pull request that publishes 200
//! findings (requests by kind, writes, wall time with the 1 s write spacing turned off, and what
//! the spacing would add), then a re-run of the same push in a fresh process, as an Action runs
//! (the requests it makes; the goal: reads only). Results go into BENCHMARKS.md.
//! `cargo bench -p bugloop-app --bench github`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// A benchmark reports on standard output.
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::time::Instant;

use bugloop_app::{EventOutcome, run_github_event};
use bugloop_github_sim::RequestRecord;
use bugloop_github_sim::fixture::{FixtureOptions, PullRequestFixture, review_lines, script_file};
use serde_json::json;

#[path = "../tests/github/job.rs"]
mod job;

const FINDINGS: usize = 200;

fn table_file() -> String {
    (1..=FINDINGS + 20)
        .map(|i| format!("pub const VALUE_{i}: u32 = {i} * 3;\n"))
        .collect()
}

/// Words for findings that share none of their wording with their neighbours (so none is
/// taken for another's duplicate).
const WORDS: [&str; 40] = [
    "overflow",
    "truncation",
    "rounding",
    "sign",
    "scale",
    "unit",
    "offset",
    "boundary",
    "cache",
    "lock",
    "race",
    "leak",
    "null",
    "encoding",
    "timezone",
    "locale",
    "retry",
    "timeout",
    "ordering",
    "precision",
    "parser",
    "escape",
    "quota",
    "index",
    "padding",
    "checksum",
    "handle",
    "socket",
    "buffer",
    "cursor",
    "token",
    "session",
    "window",
    "counter",
    "ledger",
    "invoice",
    "currency",
    "margin",
    "discount",
    "threshold",
];

fn words(i: usize, salt: usize) -> String {
    (0..4)
        .map(|k| WORDS[(i * 7 + k * 13 + salt * 17) % WORDS.len()])
        .collect::<Vec<_>>()
        .join(" ")
}

fn script(dir: &std::path::Path) -> String {
    let findings: Vec<serde_json::Value> = (1..=FINDINGS)
        .map(|i| {
            json!({"file": "src/table.rs", "line": i, "evidence": format!("VALUE_{i}"),
                   "title": format!("{} in VALUE_{i}", words(i, 0)),
                   "description": format!("{} ({i}).", words(i, 1)),
                   "score": 7, "category": "logic"})
        })
        .collect();
    script_file(dir, &review_lines(&findings))
}

/// Requests by `METHOD path-kind` (ids and numbers folded), GraphQL by operation.
fn by_kind(requests: &[RequestRecord]) -> BTreeMap<String, (usize, usize)> {
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for request in requests {
        let path: Vec<&str> = request
            .path
            .split('/')
            .map(|part| {
                if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
                    "N"
                } else {
                    part
                }
            })
            .collect();
        let name = match &request.operation {
            Some(operation) => format!("POST /graphql {operation}"),
            None => format!("{} {}", request.method, path.join("/")),
        };
        let entry = kinds.entry(name).or_default();
        entry.0 += 1;
        if request.status == 304 {
            entry.1 += 1;
        }
    }
    kinds
}

fn print(title: &str, requests: &[RequestRecord], seconds: f64) {
    let writes = requests
        .iter()
        .filter(|r| r.method != "GET" && !matches!(r.operation.as_deref(), Some("ReviewThreads")))
        .count();
    println!(
        "{title}: {} requests, {writes} writes, {seconds:.2} s wall time (spacing off); with GitHub's 1 s between writes: +{writes} s",
        requests.len()
    );
    for (kind, (count, not_modified)) in by_kind(requests) {
        println!(
            "  {count:>4}  {kind}{}",
            if not_modified > 0 {
                format!(" ({not_modified} answered 304)")
            } else {
                String::new()
            }
        );
    }
}

fn main() {
    let runtime = bugloop_testkit::multi_thread_runtime();
    runtime.block_on(async {
        let table = table_file();
        let fixture = PullRequestFixture::new(FixtureOptions {
            head_files: &[("src/table.rs", &table)],
            ..FixtureOptions::default()
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yml");
        std::fs::write(&config, "review:\n  comment_limit: 250\n").unwrap();
        let model = script(dir.path());

        let started = Instant::now();
        let review_job = || {
            job::job(
                &fixture,
                job::review_trigger(&fixture),
                &config,
                model.clone(),
            )
        };
        let outcome = run_github_event(review_job()).await.unwrap().outcome;
        let first = started.elapsed().as_secs_f64();
        let EventOutcome::Review { outcome, .. } = outcome else {
            panic!("not a review")
        };
        let published = outcome.report.unwrap().findings.len();
        assert_eq!(published, FINDINGS, "every finding published");
        assert_eq!(fixture.finding_comments().len(), FINDINGS);
        print(
            &format!("first review, {published} findings"),
            &fixture.sim.requests(),
            first,
        );

        fixture.sim.clear_requests();
        let started = Instant::now();
        run_github_event(review_job()).await.unwrap();
        let again = started.elapsed().as_secs_f64();
        let requests = fixture.sim.requests();
        print(
            "re-run of the same push (a fresh process, as an Action)",
            &requests,
            again,
        );
        assert_eq!(fixture.finding_comments().len(), FINDINGS);
    });
}
