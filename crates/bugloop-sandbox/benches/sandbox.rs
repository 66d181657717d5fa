//! The cost of confinement: starting a sandboxed `true` against a plain one, and a verify command
//! (`cargo test` of a small, already built crate) in the sandbox against outside it.
//! Results are recorded in BENCHMARKS.md.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bugloop_sandbox::{CommandSpec, Policy, SandboxSettings, run};
use criterion::{Criterion, criterion_group, criterion_main};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn small_crate(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn add(a: u32, b: u32) -> u32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 4); }\n}\n",
    )
    .unwrap();
    bugloop_testkit::run_ok(
        Command::new("cargo")
            .args(["test", "--offline", "--quiet", "--no-run"])
            .current_dir(dir)
            .env_remove("CARGO_TARGET_DIR"),
    );
}

fn confinement(c: &mut Criterion) {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let settings = SandboxSettings::new(dir.path(), Policy::WorkspaceWrite);
    assert!(bugloop_sandbox::probe().can_confine());
    let mut group = c.benchmark_group("start");
    group.bench_function("true, plain", |b| {
        b.iter(|| {
            assert!(Command::new("true").status().unwrap().success());
        });
    });
    group.bench_function("true, sandboxed", |b| {
        b.iter(|| {
            let out = runtime
                .block_on(run(
                    &settings,
                    &CommandSpec::new("true", Vec::<String>::new()),
                ))
                .unwrap();
            assert!(out.success());
        });
    });
    group.finish();

    let project = tempfile::tempdir().unwrap();
    small_crate(project.path());
    let mut settings = SandboxSettings::new(project.path(), Policy::WorkspaceWrite);
    settings.env_allowlist = vec!["CARGO_HOME".into(), "RUSTUP_HOME".into()];
    let cargo_test = CommandSpec::new("cargo", ["test", "--offline", "--quiet"]);
    let mut group = c.benchmark_group("verify: cargo test of a small crate");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("plain", |b| {
        b.iter(|| {
            let out = Command::new("cargo")
                .args(["test", "--offline", "--quiet"])
                .current_dir(project.path())
                .env_remove("CARGO_TARGET_DIR")
                .output()
                .unwrap();
            assert!(out.status.success());
        });
    });
    group.bench_function("sandboxed", |b| {
        b.iter(|| {
            let out = runtime.block_on(run(&settings, &cargo_test)).unwrap();
            assert!(out.success(), "{}", out.stderr_text());
        });
    });
    group.finish();
}

criterion_group!(benches, confinement);
criterion_main!(benches);
