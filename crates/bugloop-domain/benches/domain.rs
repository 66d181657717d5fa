//! Targets: thread state from 10,000 comments under 50 ms; dedup of 5,000 new against 5,000
//! existing findings under 200 ms.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use bugloop_domain::filter::{ExistingFinding, FilterSettings, dedup_existing};
use bugloop_domain::rmcoc::{RmcocBlock, build_comment};
use bugloop_domain::thread::{CommentKind, reconstruct};
use bugloop_domain::{Category, Comment, Finding, FindingId, MarkerSyntax, Score, ThreadStatus};
use criterion::{Criterion, criterion_group, criterion_main};

/// A small deterministic generator, so every run measures the same data.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "null",
    "pointer",
    "dereference",
    "race",
    "condition",
    "overflow",
    "index",
    "bounds",
    "leak",
    "handle",
    "file",
    "socket",
    "lock",
    "mutex",
    "deadlock",
    "timeout",
    "retry",
    "cache",
    "stale",
    "token",
    "secret",
    "injection",
    "query",
    "parser",
    "header",
    "buffer",
    "allocation",
    "loop",
    "quadratic",
    "panic",
    "unwrap",
    "error",
    "path",
    "traversal",
    "permission",
    "auth",
    "session",
    "cookie",
    "encoding",
    "utf8",
    "unicode",
    "date",
    "timezone",
    "rounding",
    "currency",
    "float",
    "integer",
    "signed",
    "unsigned",
    "division",
    "zero",
    "empty",
    "input",
    "validation",
    "missing",
];

fn sentence(rng: &mut Lcg, words: usize) -> String {
    (0..words)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect::<Vec<_>>()
        .join(" ")
}

fn conversation(threads: usize) -> Vec<Comment> {
    let mut rng = Lcg(7);
    let mut comments = Vec::with_capacity(threads * 4);
    let base = jiff::Timestamp::from_second(1_700_000_000).unwrap();
    for t in 0..threads {
        let root = format!("{t}-0");
        let block = RmcocBlock::new(
            sentence(&mut rng, 6),
            sentence(&mut rng, 20),
            Score::saturating(5),
        );
        let at = |k: i64| {
            base.checked_add(jiff::SignedDuration::from_secs(t as i64 * 10 + k))
                .unwrap()
        };
        comments.push(Comment {
            id: root.clone(),
            author: "bugloop[bot]".into(),
            body: build_comment(
                &format!(
                    "### {}\n\n{}",
                    sentence(&mut rng, 5),
                    sentence(&mut rng, 30)
                ),
                &block,
            ),
            created_at: at(0),
            kind: CommentKind::Review,
            in_reply_to: None,
            thread_id: Some(format!("T{t}")),
            path: Some(format!("src/file_{}.rs", t % 300)),
            line: Some(rng.below(500) as u32 + 1),
            thread_resolved: false,
            by_bugloop: true,
        });
        for k in 1..4 {
            let bot = k % 2 == 0;
            comments.push(Comment {
                id: format!("{t}-{k}"),
                author: if bot {
                    "bugloop[bot]".into()
                } else {
                    "dev".into()
                },
                body: if bot && rng.below(3) == 0 {
                    "✅ **Issue Resolved**\n\nFixed.\n\n<!-- bugloop reply:status=RESOLVED -->"
                        .into()
                } else {
                    sentence(&mut rng, 25)
                },
                created_at: at(k as i64),
                kind: CommentKind::Review,
                in_reply_to: Some(root.clone()),
                thread_id: Some(format!("T{t}")),
                path: None,
                line: None,
                thread_resolved: false,
                by_bugloop: bot,
            });
        }
    }
    comments
}

fn finding(rng: &mut Lcg, id: String) -> Finding {
    Finding {
        id: FindingId::new(id),
        title: sentence(rng, 6),
        description: sentence(rng, 25),
        file: Some(format!("src/file_{}.rs", rng.below(500))),
        line: Some(rng.below(400) as u32 + 1),
        end_line: None,
        score: Score::saturating(rng.below(10) as i64 + 1),
        category: Category::Logic,
        evidence: None,
        suggestion: None,
        source: None,
    }
}

fn bench(c: &mut Criterion) {
    let comments = conversation(2_500);
    assert_eq!(comments.len(), 10_000);
    let markers = MarkerSyntax::default();
    c.bench_function("thread state from 10000 comments", |b| {
        b.iter(|| {
            let state = reconstruct(black_box(&comments), &markers);
            assert_eq!(state.threads.len(), 2_500);
            state
        });
    });

    let mut rng = Lcg(42);
    let existing: Vec<ExistingFinding> = (0..5_000)
        .map(|i| {
            let f = finding(&mut rng, format!("old-{i}"));
            ExistingFinding {
                id: f.id,
                title: f.title,
                description: f.description,
                file: f.file,
                line: f.line,
                end_line: f.end_line,
                evidence: f.evidence,
                status: ThreadStatus::Pending,
                reopenable: false,
                moved: false,
                tool_rule: None,
            }
        })
        .collect();
    let new: Vec<Finding> = (0..5_000)
        .map(|i| finding(&mut rng, format!("new-{i}")))
        .collect();
    let settings = FilterSettings::default();
    c.bench_function("dedup 5000 new against 5000 existing", |b| {
        b.iter(|| {
            let mut stages = Vec::new();
            dedup_existing(black_box(new.clone()), &existing, &settings, &mut stages)
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
