//! Goal: grep within 1.5x of the `rg` binary on the same tree (2,000,000 lines in 10,000 files).
//! Both include their whole work: ours walks and searches in-process, rg is a process per search
//! (its start-up, about a millisecond, is part of its time).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::process::Command;

use bugloop_sandbox::{Policy, SandboxSettings};
use bugloop_tools::{ToolContext, Workspace};
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/support/corpus.rs"]
mod corpus;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    corpus::generate(dir.path(), 10_000, 200);
    let context = ToolContext::new(
        Workspace::new(dir.path()).unwrap(),
        SandboxSettings::new(dir.path(), Policy::ReadOnly),
    );
    let mut group = c.benchmark_group("grep 2M lines");
    group.sample_size(20);
    for (name, pattern) in [("literal", "x-id-123\""), ("regex", r"fn handler_\d+7\(")] {
        let (ours, _) =
            bugloop_tools::grep(&context, pattern, None, None, false, usize::MAX).unwrap();
        let rg = Command::new("rg")
            .current_dir(dir.path())
            .args(["--no-heading", "-n", pattern])
            .output()
            .unwrap();
        assert_eq!(
            ours.len(),
            String::from_utf8_lossy(&rg.stdout).lines().count(),
            "{pattern}"
        );
        group.bench_function(format!("bugloop {name}"), |b| {
            b.iter(|| {
                bugloop_tools::grep(&context, black_box(pattern), None, None, false, 200).unwrap()
            });
        });
        group.bench_function(format!("rg {name}"), |b| {
            b.iter(|| {
                Command::new("rg")
                    .current_dir(dir.path())
                    .args(["--no-heading", "-n", pattern])
                    .output()
                    .unwrap()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
