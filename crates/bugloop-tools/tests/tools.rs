//! The tools, called the way the agent calls them: by name with the model's JSON text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use bugloop_domain::paths::IgnoreMatcher;
use bugloop_sandbox::{Policy, SandboxSettings};
use bugloop_testkit::{TestRepo, git};
use bugloop_tools::{Registry, ToolContext, ToolError, Toolset, Workspace};
use serde_json::json;

#[path = "support/corpus.rs"]
mod corpus;
#[path = "tools/git.rs"]
mod git;

/// A small repository: two commits, a .gitignore, a binary file, a symlink out.
fn repo() -> TestRepo {
    let repo = TestRepo::init("main");
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    );
    repo.write("README.md", "# demo\nTODO: write docs\n");
    repo.write(".gitignore", "target/\n");
    repo.git(&["add", "."]);
    commit(repo.path(), &["-m", "first"]);
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b // TODO: wrong\n}\n",
    );
    commit(repo.path(), &["-am", "second"]);
    repo.write("target/out.rs", "TODO: ignored build output\n");
    std::fs::write(repo.path().join("blob.bin"), b"TODO\0\x01\x02").unwrap();
    std::os::unix::fs::symlink("/etc", repo.path().join("etc-link")).unwrap();
    repo
}

/// `git commit -q` with `args`, as the author `t` (the git tests look commits up by that name).
fn commit(root: &Path, args: &[&str]) {
    let identity = ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q"];
    git(root, &[&identity[..], args].concat());
}

fn context(root: &Path) -> ToolContext {
    let mut sandbox = SandboxSettings::new(root, Policy::ReadOnly);
    sandbox.timeout = std::time::Duration::from_secs(20);
    // Sandboxed git sees a sanitized git directory, as in a real run; it lives as long as the
    // temporary repository (which removes it).
    let head = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--verify", "-q", "HEAD"])
        .output()
        .unwrap();
    if head.status.success() {
        let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
        let shadow = bugloop_sandbox::ShadowGit::for_repository(root, &head).unwrap();
        sandbox.git = Some(shadow.mount());
        std::mem::forget(shadow);
    }
    let mut context = ToolContext::new(Workspace::new(root).unwrap(), sandbox);
    context.protected = IgnoreMatcher::new(&[".github/workflows/**", ".bugloop/**"]).unwrap();
    context
}

/// A toolset over a repository, called the way the agent calls it.
struct Tools {
    registry: Registry,
    context: ToolContext,
}

impl Tools {
    fn new(root: &Path, toolset: Toolset) -> Tools {
        Tools {
            registry: Registry::new(toolset),
            context: context(root),
        }
    }

    async fn call(&self, name: &str, args: serde_json::Value) -> Result<String, ToolError> {
        self.registry
            .call(&self.context, name, &args.to_string())
            .await
    }

    /// The output of a call that must succeed.
    async fn ok(&self, name: &str, args: serde_json::Value) -> String {
        self.call(name, args).await.unwrap()
    }

    /// The error of a call that must fail.
    async fn err(&self, name: &str, args: serde_json::Value) -> ToolError {
        self.call(name, args).await.unwrap_err()
    }

    /// Each call (tool, arguments) is refused with a message to the model containing the text.
    async fn assert_refused(&self, cases: Vec<(&str, serde_json::Value, &str)>) {
        for (tool, args, expected) in cases {
            match self.call(tool, args.clone()).await {
                Err(ToolError::Model(message)) => {
                    assert!(message.contains(expected), "{tool} {args}: {message}");
                }
                other => panic!("{tool} {args}: {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn plan_has_no_editing_tools() {
    let plan = Registry::new(Toolset::Plan);
    assert_eq!(
        plan.names(),
        vec![
            "git",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "todo_read",
            "todo_write"
        ]
    );
    let read = Registry::new(Toolset::Read);
    assert_eq!(
        read.names(),
        vec!["git", "glob", "grep", "list_dir", "read_file"]
    );
    let build = Registry::new(Toolset::Build);
    for name in ["write_file", "edit_file", "apply_patch", "run"] {
        assert!(build.get(name).is_some());
        assert!(plan.get(name).is_none());
    }
    // Schemas are derived from the parameter types.
    let definitions = plan.definitions();
    let (_, _, read) = definitions
        .iter()
        .find(|(n, _, _)| *n == "read_file")
        .unwrap();
    assert_eq!(read["required"], json!(["path"]));
    assert_eq!(
        read["properties"]["start_line"]["type"],
        json!(["integer", "null"])
    );
    // What the model does not need is not sent: no type docs, formats or null defaults, but the
    // range of an integer and each field's description are kept.
    for (name, _, schema) in &definitions {
        let text = schema.to_string();
        assert!(!text.contains("\"format\""), "{name}: {text}");
        assert!(!text.contains("\"default\":null"), "{name}: {text}");
        assert!(schema.get("description").is_none(), "{name}: {text}");
    }
    assert_eq!(read["properties"]["start_line"]["minimum"], json!(0));
    // Every schema compiles: each call's arguments are checked against it.
    for (name, _, schema) in Registry::new(Toolset::Build).definitions() {
        assert!(
            jsonschema::validator_for(&schema).is_ok(),
            "{name}: {schema}"
        );
    }
    assert!(read["properties"]["path"]["description"].is_string());
}

/// A parameter named like a schema keyword is a parameter, not a keyword: it is kept.
#[test]
fn parameters_named_like_keywords_are_kept() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Params {
        /// Output format.
        format: Option<String>,
        default: Option<u32>,
    }
    struct Shaped;
    #[async_trait::async_trait]
    impl bugloop_tools::TypedTool for Shaped {
        type Params = Params;
        const NAME: &'static str = "shaped";
        const DESCRIPTION: &'static str = "A tool with keyword-named parameters.";
        async fn run(&self, _: &ToolContext, _: Params) -> Result<String, ToolError> {
            Ok(String::new())
        }
    }
    let schema = bugloop_tools::typed(Shaped).parameters();
    let properties = schema["properties"].as_object().unwrap();
    assert!(
        properties.contains_key("format") && properties.contains_key("default"),
        "{schema}"
    );
    assert_eq!(properties["format"]["description"], "Output format.");
}

#[tokio::test]
async fn escape_attempts_fail_with_clear_errors() {
    let dir = repo();
    // A nested repository's .git, reached through a link in the tree: its config may hold a
    // token in a remote's address.
    std::fs::create_dir_all(dir.path().join("vendor/sub/.git")).unwrap();
    std::fs::write(
        dir.path().join("vendor/sub/.git/config"),
        "[remote \"origin\"]\n\turl = https://x:token@example.com/r\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("vendor/sub/.git", dir.path().join("nested")).unwrap();
    let tools = Tools::new(dir.path(), Toolset::Build);
    tools
        .assert_refused(vec![
            ("read_file", json!({"path": "../outside.txt"}), "uses `..`"),
            (
                "read_file",
                json!({"path": "src/../../etc/passwd"}),
                "uses `..`",
            ),
            ("read_file", json!({"path": "/etc/passwd"}), "is absolute"),
            ("read_file", json!({"path": "~/.ssh/id_rsa"}), "is absolute"),
            (
                "read_file",
                json!({"path": "etc-link/passwd"}),
                "leads outside the repository",
            ),
            (
                "list_dir",
                json!({"path": "etc-link"}),
                "leads outside the repository",
            ),
            ("read_file", json!({"path": ".git/config"}), "inside .git"),
            (
                "read_file",
                json!({"path": "nested/config"}),
                "leads into .git",
            ),
            (
                "grep",
                json!({"pattern": "token", "path": "nested"}),
                "leads into .git",
            ),
            (
                "read_file",
                json!({"path": "vendor/sub/.git/config"}),
                "inside .git",
            ),
            (
                "read_file",
                json!({"path": "./src/../.git/HEAD"}),
                "uses `..`",
            ),
            ("grep", json!({"pattern": "x", "path": "/"}), "is absolute"),
            (
                "write_file",
                json!({"path": "etc-link/evil", "content": "x"}),
                "leads outside the repository",
            ),
            (
                "write_file",
                json!({"path": ".git/hooks/pre-commit", "content": "x"}),
                "inside .git",
            ),
            (
                "write_file",
                json!({"path": ".github/workflows/ci.yml", "content": "x"}),
                "is protected",
            ),
            (
                "edit_file",
                json!({"path": "../x", "old_text": "a", "new_text": "b"}),
                "uses `..`",
            ),
            (
                "git",
                json!({"command": "diff", "args": ["--output=/tmp/x"]}),
                "not allowed",
            ),
            ("read_file", json!({"path": 3}), "invalid arguments"),
            ("nope", json!({}), "no tool named"),
        ])
        .await;
    assert!(!dir.path().join(".github").exists());
}

#[tokio::test]
async fn reading_tools() {
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Plan);
    let read = tools
        .ok(
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 2, "end_line": 2}),
        )
        .await;
    assert_eq!(read, "     2\t    a - b // TODO: wrong\n");
    let binary = tools.ok("read_file", json!({"path": "blob.bin"})).await;
    assert!(binary.contains("binary file"), "{binary}");
    let listing = tools.ok("list_dir", json!({})).await;
    assert_eq!(
        listing,
        ".gitignore\nREADME.md\nblob.bin\netc-link@\nsrc/\ntarget/"
    );
    let globbed = tools.ok("glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(globbed, "src/lib.rs", "target/ is ignored");
    let grep = tools
        .ok("grep", json!({"pattern": "todo", "case_insensitive": true}))
        .await;
    assert_eq!(
        grep,
        "README.md:2:TODO: write docs\nsrc/lib.rs:2:    a - b // TODO: wrong"
    );
    let none = tools.ok("grep", json!({"pattern": "zzz"})).await;
    assert!(none.starts_with("no matches"));
    let bad = tools.err("grep", json!({"pattern": "("})).await;
    assert!(bad.to_string().contains("bad pattern"));
    tools
        .ok(
            "todo_write",
            json!({"items": [{"content": "check add", "status": "in_progress"}]}),
        )
        .await;
    assert_eq!(tools.ok("todo_read", json!({})).await, "[~] check add");
}

/// Runs a test body on its own runtime and fails (instead of hanging) if it takes longer than
/// `seconds`: a tool blocked on a FIFO never returns.
fn within(seconds: u64, body: impl Future<Output = ()> + Send + 'static) {
    let runtime = bugloop_testkit::multi_thread_runtime();
    let task = runtime.spawn(body);
    let limit = std::time::Duration::from_secs(seconds);
    let outcome = runtime.block_on(async { tokio::time::timeout(limit, task).await });
    // A blocked worker must not hang the test at the runtime's end.
    runtime.shutdown_background();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(failed)) => std::panic::resume_unwind(failed.into_panic()),
        Err(_) => panic!("a tool blocked for {seconds}s on a special file"),
    }
}

#[test]
fn special_files_are_refused_without_blocking() {
    within(10, async {
        let dir = repo();
        let root = dir.path();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink("pipe", root.join("pipe-link")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(root.join("socket")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
        std::fs::create_dir(root.join("special")).unwrap();
        nix::unistd::mkfifo(&root.join("special/pipe.rs"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::write(root.join("special/found.rs"), "// TODO: next to a FIFO\n").unwrap();
        let tools = Tools::new(root, Toolset::Build);
        tools
            .assert_refused(vec![
                (
                    "read_file",
                    json!({"path": "pipe"}),
                    "pipe is a FIFO, not a regular file",
                ),
                (
                    "read_file",
                    json!({"path": "pipe-link"}),
                    "pipe-link is a FIFO",
                ),
                (
                    "read_file",
                    json!({"path": "socket"}),
                    "socket is a socket, not a regular file",
                ),
                // /dev/zero is outside the workspace: the path check refuses it before any open.
                (
                    "read_file",
                    json!({"path": "zero"}),
                    "leads outside the repository",
                ),
                (
                    "read_file",
                    json!({"path": "src"}),
                    "is a directory; use list_dir",
                ),
                (
                    "grep",
                    json!({"pattern": "x", "path": "pipe"}),
                    "is a FIFO, not a regular file or directory",
                ),
                (
                    "list_dir",
                    json!({"path": "socket"}),
                    "is a socket, not a directory",
                ),
                (
                    "list_dir",
                    json!({"path": "README.md"}),
                    "is a file; use read_file",
                ),
                (
                    "edit_file",
                    json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
                    "is a FIFO",
                ),
                (
                    "write_file",
                    json!({"path": "pipe", "content": "x"}),
                    "is a FIFO, not a regular file; it cannot be written",
                ),
            ])
            .await;
        let grep = tools.ok("grep", json!({"pattern": "TODO"})).await;
        assert_eq!(
            grep,
            "README.md:2:TODO: write docs\nspecial/found.rs:1:// TODO: next to a FIFO\nsrc/lib.rs:2:    a - b // TODO: wrong"
        );
        let globbed = tools.ok("glob", json!({"pattern": "special/*"})).await;
        assert_eq!(globbed, "special/found.rs");
        let listing = tools.ok("list_dir", json!({})).await;
        assert!(
            listing.contains("\npipe (a FIFO; cannot be read)\n"),
            "{listing}"
        );
        assert!(
            listing.contains("\nsocket (a socket; cannot be read)\n"),
            "{listing}"
        );
        assert!(listing.ends_with("\nzero@"), "{listing}");
    });
}

#[tokio::test]
async fn editing_tools() {
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Build);
    tools
        .ok(
            "write_file",
            json!({"path": "docs/new.md", "content": "hello\n"}),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("docs/new.md")).unwrap(),
        "hello\n"
    );
    let directory = tools
        .err("write_file", json!({"path": "notes/", "content": "x"}))
        .await;
    assert!(
        directory.to_string().contains("names a directory"),
        "{directory}"
    );
    assert!(!dir.path().join("notes").exists());
    let twice = tools
        .err(
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "a", "new_text": "x"}),
        )
        .await;
    assert!(twice.to_string().contains("occurs"), "{twice}");
    tools
        .ok(
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "a - b // TODO: wrong", "new_text": "a + b"}),
        )
        .await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );
}

#[tokio::test]
async fn patches_apply_whole_or_not_at_all() {
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Build);
    let good = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a - b // TODO: wrong\n+    a + b\n }\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1,2 @@\n+// new\n+pub fn f() {}\n--- a/README.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-# demo\n-TODO: write docs\n";
    // The same patch with a stale second file: nothing may be written.
    let stale = good.replace("-TODO: write docs", "-TODO: other text");
    let error = tools.err("apply_patch", json!({"patch": stale})).await;
    assert!(error.to_string().contains("nothing was changed"), "{error}");
    assert!(!dir.path().join("src/new.rs").exists());
    assert!(
        std::fs::read_to_string(dir.path().join("src/lib.rs"))
            .unwrap()
            .contains("a - b")
    );
    let done = tools.ok("apply_patch", json!({"patch": good})).await;
    assert_eq!(
        done,
        "wrote src/lib.rs\nwrote src/new.rs\ndeleted README.md"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/new.rs")).unwrap(),
        "// new\npub fn f() {}\n"
    );
    assert!(!dir.path().join("README.md").exists());
    let garbage = tools
        .err(
            "apply_patch",
            json!({"patch": "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n"}),
        )
        .await;
    assert!(garbage.to_string().contains("cannot be read"), "{garbage}");
}

#[tokio::test]
async fn run_is_sandboxed() {
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Build);
    let out = tools.ok("run", json!({"program": "bash", "args": ["-c", "echo built > out.txt; cat out.txt; echo x > $HOME/escape"]})).await;
    assert!(out.starts_with("exit code 1\n--- stdout\nbuilt\n"), "{out}");
    assert!(out.contains("Read-only file system"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "built\n"
    );
    let slow = tools
        .ok(
            "run",
            json!({"program": "sleep", "args": ["30"], "timeout_seconds": 1}),
        )
        .await;
    assert!(slow.starts_with("timed out after 1s"), "{slow}");
    // What the schema shown to the model refuses is refused, before anything runs.
    tools
        .assert_refused(vec![
            (
                "run",
                json!({"program": ""}),
                "invalid arguments for run: /program",
            ),
            (
                "run",
                json!({"program": " \n"}),
                "invalid arguments for run: /program",
            ),
            (
                "read_file",
                json!({"path": ""}),
                "invalid arguments for read_file",
            ),
        ])
        .await;
}

#[tokio::test]
async fn grep_matches_ripgrep() {
    let rg = which_rg();
    let dir = tempfile::tempdir().unwrap();
    corpus::generate(dir.path(), 400, 120);
    let context = context(dir.path());
    for (pattern, case_insensitive) in [
        ("TODO", false),
        (r"fn handler_\d+7\(", false),
        ("x-id-99", false),
        ("todo: VALIDATE", true),
        ("no such text", false),
    ] {
        let (ours, total) =
            bugloop_tools::grep(&context, pattern, None, None, case_insensitive, usize::MAX)
                .unwrap();
        assert_eq!(ours.len(), total);
        let mut command = Command::new(&rg);
        command.current_dir(dir.path()).args([
            "--no-heading",
            "--line-number",
            "--with-filename",
            "--color",
            "never",
        ]);
        if case_insensitive {
            command.arg("-i");
        }
        let output = command.arg(pattern).output().unwrap();
        let mut theirs: Vec<String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        theirs.sort();
        let mut ours: Vec<String> = ours
            .iter()
            .map(|(p, l, t)| format!("{p}:{l}:{t}"))
            .collect();
        ours.sort();
        assert_eq!(ours.len(), theirs.len(), "{pattern}");
        assert_eq!(ours, theirs, "{pattern}");
    }
}

fn which_rg() -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|d| d.join("rg"))
        .find(|p| p.is_file())
        .expect("ripgrep (rg) is needed to compare grep with it; scripts/test installs it")
}
