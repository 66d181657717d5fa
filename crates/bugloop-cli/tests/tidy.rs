//! Repository tidiness that no compiler checks: every source file says what it is (`//!`), every
//! crate has its place in ARCHITECTURE.md's code map (whose dependency table and invariants are
//! checked against the code in `map`), no two files of a crate import each
//! other, directly or around a circle (a circle is one type in the wrong file), the CLI
//! reaches the rest only through the application layer and the types it renders (the crates
//! below it derived from `cargo metadata`), only the server knows HTTP serving and the job
//! queue, the application layer links no server or benchmark code, and test support is never a
//! production dependency. The user's documents are checked in `docs`, the event path's one
//! match in `events`, the loops' deliberate public face in `api`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bugloop_testkit::workspace;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "tidy/api.rs"]
mod api;
#[path = "tidy/docs.rs"]
mod docs;
#[path = "tidy/events.rs"]
mod events;
#[path = "tidy/map.rs"]
mod map;

fn crates() -> Vec<PathBuf> {
    let mut crates: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    crates
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's module path inside its crate (`review::tools`); `None` for the crate root.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    match parts.as_slice() {
        [] => None,
        [only] if only == "lib" || only == "main" => None,
        _ => Some(parts.join("::")),
    }
}

/// `crate::a::b::Item` references in code (not in comments), as the longest known module.
fn references(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        for (start, _) in code.match_indices("crate::") {
            let rest = &code[start + "crate::".len()..];
            let path: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            if let Some(module) = (1..=parts.len())
                .rev()
                .map(|n| parts[..n].join("::"))
                .find(|candidate| modules.contains(candidate))
            {
                found.insert(module);
            }
        }
    }
    found
}

/// Strongly connected groups of more than one module (Tarjan).
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        let next = state.index.len();
        state.index.insert(node, next);
        state.low.insert(node, next);
        state.stack.push(node);
        for target in &state.edges[node] {
            let target = target.as_str();
            if !state.index.contains_key(target) {
                visit(state, target);
                let low = state.low[node].min(state.low[target]);
                state.low.insert(node, low);
            } else if state.stack.contains(&target) {
                let low = state.low[node].min(state.index[target]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut group = Vec::new();
            while let Some(member) = state.stack.pop() {
                group.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                state.found.push(group);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found
}

#[test]
fn every_source_file_says_what_it_is() {
    let mut missing = Vec::new();
    for krate in crates() {
        let mut files = Vec::new();
        rust_files(&krate.join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            if !text.trim_start().starts_with("//!") {
                missing.push(
                    file.strip_prefix(workspace())
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert_none_found(&missing, "files without a `//!` header");
}

#[test]
fn every_crate_is_in_the_code_map() {
    let architecture = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let missing: Vec<String> = crates()
        .iter()
        .map(|krate| krate.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !architecture.contains(&format!("### `crates/{name}`")))
        .collect();
    assert_none_found(&missing, "crates missing from ARCHITECTURE.md");
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let mut found = Vec::new();
    for krate in crates() {
        let src = krate.join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let modules: BTreeMap<String, PathBuf> = files
            .iter()
            .filter_map(|file| module_of(&src, file).map(|m| (m, file.clone())))
            .collect();
        let names: BTreeSet<String> = modules.keys().cloned().collect();
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, file) in &modules {
            let text = std::fs::read_to_string(file).unwrap();
            let targets = references(&text, &names)
                .into_iter()
                // A module and its own children are one unit (a parent declares its children).
                .filter(|target| {
                    target != module
                        && !module.starts_with(&format!("{target}::"))
                        && !target.starts_with(&format!("{module}::"))
                })
                .collect();
            edges.insert(module.clone(), targets);
        }
        for group in circles(&edges) {
            found.push(format!(
                "{}: {}",
                krate.file_name().unwrap().to_string_lossy(),
                group.join(" <-> ")
            ));
        }
    }
    assert_none_found(&found, "import circles between files");
}

#[test]
fn a_circle_is_found() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(circles(&edges), vec![vec!["a", "b", "c"]]);
    let names: BTreeSet<String> = ["review".to_owned(), "review::tools".to_owned()].into();
    let found = references(
        "// crate::act::x\nuse crate::review::tools::Thing;\nlet x = crate::review::run();",
        &names,
    );
    assert_eq!(
        found,
        ["review".to_owned(), "review::tools".to_owned()].into()
    );
}

/// The bugloop crates the CLI may depend on: the application layer (which re-exports the types
/// it renders), the server it runs as `bugloop serve`, and the benchmarks of `bugloop bench`.
const CLI_MAY_USE: [&str; 3] = ["bugloop-app", "bugloop-server", "bugloop-bench"];

/// The workspace's packages as `cargo metadata` describes them: each one's normal dependencies
/// (not dev or build ones) by package name.
fn workspace_packages() -> BTreeMap<String, BTreeSet<String>> {
    packages_with_dependencies_of_kind(&serde_json::Value::Null)
}

/// The workspace's packages, each with its dependencies of `kind` (`null` for normal ones,
/// `"dev"` for dev-dependencies) by package name.
fn packages_with_dependencies_of_kind(
    kind: &serde_json::Value,
) -> BTreeMap<String, BTreeSet<String>> {
    let stdout = cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    let metadata: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            let normal = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|dependency| dependency["kind"] == *kind)
                .map(|dependency| dependency["name"].as_str().unwrap().to_owned())
                .collect();
            (package["name"].as_str().unwrap().to_owned(), normal)
        })
        .collect()
}

/// Runs cargo (the one running the tests) with `args` in the workspace, which must succeed: its
/// standard output.
fn cargo(args: &[&str]) -> Vec<u8> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(args)
        .current_dir(workspace())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "cargo {}: {}",
        args[0],
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// `file` as the workspace's path to it, for a finding's message.
fn relative(file: &Path) -> String {
    file.strip_prefix(workspace())
        .unwrap()
        .display()
        .to_string()
}

/// Fails the check unless it `found` nothing; `why` says what the found things are.
#[track_caller]
fn assert_none_found(found: &[String], why: &str) {
    assert_eq!(found, Vec::<String>::new(), "{why}");
}

/// The workspace crates `root` depends on normally, directly or through others.
fn below(packages: &BTreeMap<String, BTreeSet<String>>, root: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut next = vec![root.to_owned()];
    while let Some(name) = next.pop() {
        for dependency in packages.get(&name).into_iter().flatten() {
            if packages.contains_key(dependency) && found.insert(dependency.clone()) {
                next.push(dependency.clone());
            }
        }
    }
    found
}

/// The packages `cargo tree` lists for the CLI's normal (linked) dependencies with `features`.
fn linked_into_the_cli(features: &[&str]) -> BTreeSet<String> {
    let mut args = vec![
        "tree",
        "-p",
        "bugloop-cli",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--offline",
    ];
    args.extend(features);
    String::from_utf8(cargo(&args))
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_shipped_binary_links_no_benchmark_or_test_code() {
    let benchmark_or_test = [
        "bugloop-bench",
        "tiktoken-rs",
        "criterion",
        "bugloop-github-sim",
        "bugloop-testkit",
    ];
    let shipped = linked_into_the_cli(&[]);
    assert!(shipped.contains("bugloop-server"), "{shipped:?}");
    let found: Vec<&str> = benchmark_or_test
        .into_iter()
        .filter(|name| shipped.contains(*name))
        .collect();
    assert_eq!(found, Vec::<&str>::new(), "linked into a release build");
    // The check sees them when they are there.
    let with_bench = linked_into_the_cli(&["--features", "bench"]);
    assert!(with_bench.contains("tiktoken-rs"), "{with_bench:?}");
}

#[test]
fn the_cli_tests_too_go_through_the_front_ends() {
    let dev = packages_with_dependencies_of_kind(&serde_json::Value::from("dev"));
    let cli = &dev["bugloop-cli"];
    assert!(
        cli.contains("bugloop-testkit"),
        "dev-dependencies not read: {cli:?}"
    );
    let found: Vec<&String> = cli
        .iter()
        .filter(|name| name.starts_with("bugloop-"))
        .filter(|name| !CLI_MAY_USE.contains(&name.as_str()))
        .filter(|name| !TEST_SUPPORT.contains(&name.as_str()))
        .collect();
    assert_eq!(
        found,
        Vec::<&String>::new(),
        "the CLI's tests reach below the front ends; name what bugloop-app or bugloop-server exports"
    );
}

/// Crates that exist only for tests.
const TEST_SUPPORT: [&str; 2] = ["bugloop-github-sim", "bugloop-testkit"];

#[test]
fn only_the_server_knows_http_serving_and_the_job_queue() {
    let packages = workspace_packages();
    assert!(packages.contains_key("bugloop-server"), "{packages:?}");
    let mut found = Vec::new();
    for (package, dependencies) in &packages {
        for server_only in ["hyper", "hyper-util", "tower", "bugloop-queue"] {
            if dependencies.contains(server_only) && package != "bugloop-server" {
                found.push(format!("{package} depends on {server_only}"));
            }
        }
    }
    assert_none_found(&found, "server-only dependencies elsewhere");
}

#[test]
fn the_application_layer_has_no_server_or_benchmark_dependency() {
    let packages = workspace_packages();
    let app = &packages["bugloop-app"];
    assert!(
        app.contains("bugloop-loops"),
        "the app's manifest was not read: {app:?}"
    );
    let found: Vec<&str> = [
        "bugloop-server",
        "bugloop-bench",
        "bugloop-queue",
        "hyper",
        "hyper-util",
        "tower",
        "axum",
        "tiktoken-rs",
        "criterion",
    ]
    .into_iter()
    .filter(|name| below(&packages, "bugloop-app").contains(*name) || app.contains(*name))
    .collect();
    assert_eq!(
        found,
        Vec::<&str>::new(),
        "bugloop-app links server or benchmark code"
    );
}

#[test]
fn no_production_manifest_names_test_support() {
    let packages = workspace_packages();
    let mut found = Vec::new();
    for (package, dependencies) in &packages {
        if TEST_SUPPORT.contains(&package.as_str()) {
            continue;
        }
        for support in TEST_SUPPORT {
            if dependencies.contains(support) {
                found.push(format!("{package} depends on {support}"));
            }
        }
    }
    assert_none_found(&found, "test support outside dev-dependencies");
}

/// The crates a manifest depends on normally (`[dependencies]`, `[dependencies.x]` and their
/// `[target.*]` forms; not dev or build dependencies), by package name (a renamed dependency
/// counts as what it renames).
fn normal_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut in_normal = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            let parts: Vec<&str> = header.split('.').collect();
            let position = parts.iter().position(|part| *part == "dependencies");
            let normal = match position {
                Some(0) => true,
                Some(_) => parts.first() == Some(&"target"),
                None => false,
            };
            in_normal = false;
            if let (true, Some(at)) = (normal, position) {
                match parts.get(at + 1) {
                    // `[dependencies.name]`: the table is one dependency.
                    Some(name) => {
                        found.insert((*name).to_owned());
                    }
                    None => in_normal = true,
                }
            }
            continue;
        }
        if !in_normal {
            continue;
        }
        let key: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        let renamed = line.split_once("package").and_then(|(_, rest)| {
            let rest = rest.trim_start().strip_prefix('=')?.trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.split_once('"').map(|(name, _)| name.to_owned())
        });
        if !key.is_empty() {
            found.insert(renamed.unwrap_or(key));
        }
    }
    found
}

/// The bugloop dependencies of `manifest` outside `allowed`.
fn unexpected_bugloop_dependencies(manifest: &str, allowed: &[&str]) -> Vec<String> {
    normal_dependencies(manifest)
        .into_iter()
        .filter(|name| name.starts_with("bugloop-") && !allowed.contains(&name.as_str()))
        .collect()
}

#[test]
fn the_cli_depends_only_on_the_application_layer_and_what_it_renders() {
    let manifest =
        std::fs::read_to_string(workspace().join("crates/bugloop-cli/Cargo.toml")).unwrap();
    assert!(
        normal_dependencies(&manifest).contains("bugloop-app"),
        "the manifest was not read: bugloop-app is missing"
    );
    assert_eq!(
        unexpected_bugloop_dependencies(&manifest, &CLI_MAY_USE),
        Vec::<String>::new(),
        "bugloop-cli depends on crates below the application layer; go through bugloop-app"
    );
}

#[test]
fn the_cli_code_names_no_crate_below_the_application_layer() {
    let packages = workspace_packages();
    let below_the_app: BTreeSet<String> = below(&packages, "bugloop-app")
        .into_iter()
        .map(|name| name.replace('-', "_"))
        .collect();
    assert!(
        below_the_app.contains("bugloop_loops") && below_the_app.contains("bugloop_sandbox"),
        "the crates below the app were not found: {below_the_app:?}"
    );
    let src = workspace().join("crates/bugloop-cli/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(!files.is_empty(), "no sources under {}", src.display());
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in &below_the_app {
            if text.contains(name.as_str()) {
                found.push(format!("{} names {name}", relative(&file)));
            }
        }
    }
    assert_none_found(
        &found,
        "the CLI reaches below the application layer; go through bugloop-app",
    );
}

#[test]
fn dependencies_outside_the_list_are_named() {
    let manifest = r#"
[package]
name = "bugloop-cli"

[dependencies]
anyhow.workspace = true
bugloop-app.workspace = true
bugloop-loops = { workspace = true }
llm = { package = "bugloop-llm", path = "../bugloop-llm" }

[dependencies.bugloop-forge]
workspace = true

[target.'cfg(unix)'.dependencies]
bugloop-sandbox.workspace = true

[dev-dependencies]
bugloop-testkit.workspace = true

[build-dependencies]
bugloop-git.workspace = true
"#;
    assert_eq!(
        unexpected_bugloop_dependencies(manifest, &CLI_MAY_USE),
        vec![
            "bugloop-forge",
            "bugloop-llm",
            "bugloop-loops",
            "bugloop-sandbox"
        ]
    );
}

/// The longest a function of production code may grow (from its `fn` line to its closing
/// brace): functions are split by what they do; this keeps the longest from growing back.
const LONGEST_FUNCTION: usize = 80;

/// Each function's length in `text`, up to its tests (`#[cfg(test)]`), by name.
fn function_lengths(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .iter()
        .position(|line| line.trim() == "#[cfg(test)]")
        .unwrap_or(lines.len());
    let mut found = Vec::new();
    for (at, line) in lines[..end].iter().enumerate() {
        let code = line.trim_start();
        let indent = &line[..line.len() - code.len()];
        let signature = [
            "pub ",
            "pub(crate) ",
            "pub(super) ",
            "async ",
            "const ",
            "unsafe ",
        ]
        .iter()
        .fold(code, |rest, prefix| {
            rest.strip_prefix(prefix).unwrap_or(rest)
        });
        let signature = signature.strip_prefix("async ").unwrap_or(signature);
        let Some(rest) = signature.strip_prefix("fn ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let closing = format!("{indent}}}");
        if let Some(length) = lines[at + 1..end].iter().position(|l| *l == closing) {
            found.push((name, length + 2));
        }
    }
    found
}

#[test]
fn no_function_grows_past_the_longest_allowed() {
    let mut found = Vec::new();
    for krate in crates() {
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        if TEST_SUPPORT.contains(&name.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&krate.join("src"), &mut files);
        // A `tests.rs` module and the files of its `tests/` directory are test code.
        let test_code = |file: &&PathBuf| {
            file.ends_with("tests.rs")
                || file
                    .strip_prefix(krate.join("src"))
                    .is_ok_and(|inside| inside.components().any(|c| c.as_os_str() == "tests"))
        };
        for file in files.iter().filter(|f| !test_code(f)) {
            let text = std::fs::read_to_string(file).unwrap();
            for (function, length) in function_lengths(&text) {
                if length > LONGEST_FUNCTION {
                    found.push(format!("{}: {function} is {length} lines", relative(file)));
                }
            }
        }
    }
    assert_none_found(
        &found,
        &format!("functions over {LONGEST_FUNCTION} lines: split them by what they do"),
    );
}

#[test]
fn function_lengths_are_measured_from_fn_to_its_brace() {
    let text = "fn a() {\n    1;\n}\n\nimpl X {\n    pub async fn b(&self) {\n        {\n        }\n    }\n}\n#[cfg(test)]\nfn c() {\n}\n";
    assert_eq!(
        function_lengths(text),
        vec![("a".to_owned(), 3), ("b".to_owned(), 4)]
    );
}

/// The longest a source or test file may be: one a newcomer can read in a sitting.
const LONGEST_FILE: usize = 800;

#[test]
fn no_file_is_longer_than_one_can_read_in_a_sitting() {
    let mut found = Vec::new();
    for krate in crates() {
        let mut files = Vec::new();
        for dir in ["src", "tests", "benches"] {
            if krate.join(dir).is_dir() {
                rust_files(&krate.join(dir), &mut files);
            }
        }
        for file in files {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > LONGEST_FILE {
                found.push(format!("{}: {lines} lines", relative(&file)));
            }
        }
    }
    assert_none_found(
        &found,
        &format!("files over {LONGEST_FILE} lines: split them by concern"),
    );
}
