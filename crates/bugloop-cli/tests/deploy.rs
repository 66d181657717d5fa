//! What a deployment of `bugloop serve` is made from, checked against the code so they cannot
//! drift apart: the App manifest asks for the events the server handles and the permissions its
//! jobs use, the example settings file is one the server accepts, `compose.yaml` runs the server
//! on PostgreSQL with only settings the server reads, and the Dockerfile builds the binary the
//! compose file runs. (No Docker engine runs here, so the image itself is not built by the tests.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use bugloop_server::APP_EVENTS;
use bugloop_server::server_config::{ServerSources, serve_options};
use bugloop_testkit::workspace as root;
use bugloop_testkit::{assert_contains, assert_starts_with};
use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The items of `list` (a JSON array, a YAML sequence), each a string as `as_str` reads it.
fn strings<'a, T>(list: Option<&'a Vec<T>>, as_str: fn(&'a T) -> Option<&'a str>) -> Vec<&'a str> {
    list.unwrap()
        .iter()
        .map(|item| as_str(item).unwrap())
        .collect()
}

#[test]
fn the_app_manifest_asks_for_the_handled_events_and_the_permissions_jobs_use() {
    let manifest: Json = serde_json::from_str(&read("deploy/github-app-manifest.json")).unwrap();
    let events: BTreeSet<&str> = strings(manifest["default_events"].as_array(), Json::as_str)
        .into_iter()
        .collect();
    assert_eq!(events, APP_EVENTS.into_iter().collect::<BTreeSet<_>>());
    let permissions = &manifest["default_permissions"];
    // Fixes are pushed; findings are review comments and threads; summaries and answers are
    // issue comments and labels; a solved issue's draft waits for its checks.
    for (permission, level) in [
        ("contents", "write"),
        ("pull_requests", "write"),
        ("issues", "write"),
        ("metadata", "read"),
        ("checks", "read"),
        ("statuses", "read"),
    ] {
        assert_eq!(permissions[permission], level, "{permission}");
    }
    assert_eq!(
        permissions.as_object().unwrap().len(),
        6,
        "no permission beyond what jobs use: {permissions}"
    );
    let hook = manifest["hook_attributes"]["url"].as_str().unwrap();
    assert!(hook.ends_with("/webhook"), "{hook}");
    assert_eq!(manifest["public"], false);
}

#[test]
fn the_example_settings_are_accepted_by_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let file = root().join("deploy/serve.yml");
    let lookup = |name: &str| match name {
        "BUGLOOP_WEBHOOK_SECRET" => Some("secret".to_owned()),
        _ => None,
    };
    let options = serve_options(
        &ServerSources {
            file: Some(&file),
            env: &lookup,
            default_data_dir: dir.path().to_path_buf(),
        },
        None,
    )
    .unwrap();
    assert_eq!(options.listen.port(), 8080);
    assert_eq!(options.limits.running, Some(16));
    assert_eq!(options.limits.per_installation, Some(4));
}

/// The names the server reads from its environment (`bugloop_server::server_config`), and what
/// model providers read.
const SERVER_ENV: &[&str] = &[
    "BUGLOOP_WEBHOOK_SECRET",
    "BUGLOOP_APP_ID",
    "BUGLOOP_APP_PRIVATE_KEY",
    "BUGLOOP_STORE_URL",
    "BUGLOOP_WORKERS",
    "BUGLOOP_BOT_LOGIN",
    "BUGLOOP_GIT_BASE",
    "BUGLOOP_STATE_KEY",
    "BUGLOOP_SERVER_MODEL",
    "BUGLOOP_SERVER_CONFIG",
    "BUGLOOP_GITHUB_WRITE_SPACING_MS",
    "BUGLOOP_ADMIN_TOKEN",
    "GITHUB_API_URL",
    "GITHUB_GRAPHQL_URL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

#[test]
fn compose_runs_the_server_on_postgres_with_settings_it_reads() {
    let compose: Yaml = serde_yaml_ng::from_str(&read("compose.yaml")).unwrap();
    let server = &compose["services"]["server"];
    let environment = server["environment"].as_mapping().unwrap();
    for name in environment.keys() {
        let name = name.as_str().unwrap();
        assert!(
            SERVER_ENV.contains(&name),
            "compose sets {name}, which nothing reads"
        );
    }
    let store = environment
        .get("BUGLOOP_STORE_URL")
        .and_then(Yaml::as_str)
        .unwrap();
    assert_starts_with(store, "postgres://");
    assert_contains(store, "@postgres:5432/");
    assert_eq!(
        server["depends_on"]["postgres"]["condition"], "service_healthy",
        "the server waits for the database"
    );
    let command = strings(server["command"].as_sequence(), Yaml::as_str);
    assert_eq!(command[0], "serve");
    let config = command
        .iter()
        .position(|c| *c == "--config")
        .map(|at| command[at + 1])
        .unwrap();
    let mounted = server["volumes"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Yaml::as_str)
        .any(|volume| volume == format!("./deploy/serve.yml:{config}:ro"));
    assert!(
        mounted,
        "the settings file is mounted where the command reads it"
    );
    assert!(
        compose["services"]["postgres"]["healthcheck"]["test"]
            .as_sequence()
            .is_some()
    );
}

#[test]
fn the_dockerfile_builds_the_binary_and_runs_the_server_unprivileged() {
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains("cargo build --release --locked -p bugloop-cli --bin bugloop"));
    assert!(
        dockerfile.contains("COPY --from=build /src/target/release/bugloop /usr/local/bin/bugloop")
    );
    assert!(dockerfile.contains("USER bugloop"));
    assert!(
        dockerfile.contains("bubblewrap"),
        "the sandbox's program is installed"
    );
    let runtime = dockerfile.split("FROM debian:").nth(1).unwrap();
    assert!(
        runtime.contains(" python3 ") || runtime.contains(" python3\\"),
        "the system's python3 that bugloop's own Python rules run on is in the running image"
    );
    assert!(
        dockerfile.contains("BUGLOOP_ANALYZERS_DIR=/opt/bugloop/analyzers scripts/fetch-analyzers")
            && dockerfile.contains("ENV BUGLOOP_ANALYZERS_DIR=/opt/bugloop/analyzers"),
        "the image carries the pinned analyzers"
    );
    let rust_version = read("Cargo.toml")
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_owned())
        .unwrap();
    assert!(
        dockerfile.contains(&format!("FROM rust:{rust_version}-")),
        "the image builds with the workspace's rust-version {rust_version}"
    );
    let ignored = read(".dockerignore");
    assert!(ignored.lines().any(|line| line == "target"));
}
