//! Target: parse a 100,000-line multi-file diff in under 50 ms.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

/// 200 files, each one hunk of 500 lines: context, removed and added lines mixed.
fn big_diff() -> String {
    let mut out = String::new();
    let mut lines = 0;
    for file in 0..200 {
        out.push_str(&format!(
            "diff --git a/src/module_{file}.rs b/src/module_{file}.rs\nindex 1111111..2222222 100644\n--- a/src/module_{file}.rs\n+++ b/src/module_{file}.rs\n"
        ));
        // 300 context, 100 removed, 100 added: old 400, new 400.
        out.push_str(&format!(
            "@@ -{0},400 +{0},400 @@ fn section_{file}() {{\n",
            file * 10 + 1
        ));
        for i in 0..500 {
            let line = match i % 5 {
                0 => format!("-    let removed_{i} = compute({i}, \"old value\");\n"),
                1 => format!("+    let added_{i} = compute({i}, \"new value\");\n"),
                _ => format!("     context_line_{i}(argument, other_argument);\n"),
            };
            out.push_str(&line);
        }
        lines += 505;
    }
    assert!(lines >= 100_000);
    out
}

fn bench(c: &mut Criterion) {
    let diff = big_diff();
    let line_count = diff.lines().count();
    let mut group = c.benchmark_group("diff");
    group.throughput(Throughput::Elements(line_count as u64));
    group.bench_function(format!("parse {line_count} lines"), |b| {
        b.iter(|| {
            let parsed = bugloop_diff::parse(black_box(diff.as_bytes()));
            assert!(parsed.problems.is_empty());
            parsed
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
