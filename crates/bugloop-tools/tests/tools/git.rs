//! The agent's `git` tool: read-only subcommands in the sandbox, and options by allow-list (an
//! option that runs a program, writes a file or reads outside the tree is refused).

use super::*;

#[tokio::test]
async fn read_only_git() {
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Plan);
    let log = tools
        .ok("git", json!({"command": "log", "args": ["--format=%s"]}))
        .await;
    assert_eq!(log, "second\nfirst\n");
    let diff = tools
        .ok(
            "git",
            json!({"command": "diff", "args": ["HEAD~1", "--", "src/lib.rs"]}),
        )
        .await;
    assert!(
        diff.contains("-    a + b\n+    a - b // TODO: wrong"),
        "{diff}"
    );
    let blame = tools
        .ok(
            "git",
            json!({"command": "blame", "args": ["-s", "src/lib.rs"]}),
        )
        .await;
    assert_eq!(blame.lines().count(), 3);
    let bad = tools
        .err("git", json!({"command": "show", "args": ["no-such-rev"]}))
        .await;
    assert!(bad.to_string().contains("git show failed"), "{bad}");
}

/// A review reads a task tree (the files of a commit, no `.git` of their own) bound read-only, with
/// the sanitized git directory at its `.git`: history reads there as in a checkout.
#[tokio::test]
async fn read_only_git_in_a_task_tree() {
    let dir = repo();
    let tree = bugloop_sandbox::TaskTree::create(dir.path(), "HEAD", "review").unwrap();
    let mut sandbox = SandboxSettings::new(tree.path(), Policy::ReadOnly);
    sandbox.timeout = std::time::Duration::from_secs(20);
    sandbox.git = Some(tree.git_mount());
    let tools = Tools {
        registry: Registry::new(Toolset::Plan),
        context: ToolContext::new(Workspace::new(tree.path()).unwrap(), sandbox),
    };
    let log = tools
        .ok("git", json!({"command": "log", "args": ["--format=%s"]}))
        .await;
    assert_eq!(log, "second\nfirst\n");
    let status = tools
        .ok("git", json!({"command": "status", "args": []}))
        .await;
    assert!(!status.contains("failed"), "{status}");
    // The mount point is no file of the tree's.
    assert_eq!(
        tools
            .ok("list_dir", json!({}))
            .await
            .lines()
            .filter(|l| l.contains(".git/"))
            .count(),
        0
    );
}

/// What a git call must do: succeed with output containing the text, or be refused with it.
enum Expect {
    Prints(&'static str),
    Refused(&'static str),
}

#[tokio::test]
async fn git_options_by_allow_list() {
    use Expect::{Prints, Refused};
    let dir = repo();
    let tools = Tools::new(dir.path(), Toolset::Plan);
    let cases: &[(&str, &[&str], Expect)] = &[
        // What a reviewer runs.
        ("log", &["--oneline", "-n", "20"], Prints("second")),
        ("log", &["-1", "--stat"], Prints("src/lib.rs | 2 +-")),
        (
            "log",
            &["-n1", "--format=%s", "--name-status"],
            Prints("M\tsrc/lib.rs"),
        ),
        (
            "log",
            &["--max-count=1", "--pretty=oneline"],
            Prints("second"),
        ),
        (
            "log",
            &["-p", "--follow", "--", "src/lib.rs"],
            Prints("+    a - b"),
        ),
        (
            "log",
            &[
                "--since=2000-01-01",
                "--author",
                "t",
                "--grep",
                "first",
                "--format=%s",
            ],
            Prints("first"),
        ),
        (
            "log",
            &["-L", "2,2:src/lib.rs", "--format=%s"],
            Prints("second"),
        ),
        ("log", &["-S", "a + b", "--oneline"], Prints("first")),
        ("diff", &["HEAD~1", "--stat"], Prints("1 file changed")),
        (
            "diff",
            &["-U0", "-w", "HEAD~1", "--", "src/lib.rs"],
            Prints("@@ -2 +2 @@"),
        ),
        (
            "diff",
            &["--cached", "--name-only"],
            Prints("printed nothing"),
        ),
        (
            "diff",
            &["--word-diff", "HEAD~1", "HEAD"],
            Prints("[-+-]{+-+}"),
        ),
        (
            "show",
            &["--name-only", "--format=%s", "HEAD"],
            Prints("second\n\nsrc/lib.rs"),
        ),
        ("show", &["-s", "--oneline", "HEAD~1"], Prints("first")),
        ("show", &["HEAD~1:src/lib.rs"], Prints("a + b")),
        (
            "blame",
            &["-L", "2,2", "-w", "-s", "src/lib.rs"],
            Prints("a - b"),
        ),
        ("ls-files", &[], Prints("README.md\nsrc/lib.rs")),
        (
            "ls-tree",
            &["-r", "--name-only", "HEAD"],
            Prints("src/lib.rs"),
        ),
        ("rev-parse", &["--abbrev-ref", "HEAD"], Prints("HEAD")),
        ("status", &["--short"], Prints("?? blob.bin")),
        // Options that write files, run programs or leave the repository.
        ("diff", &["--output=/tmp/x"], Refused("not allowed")),
        ("diff", &["--out=/tmp/x"], Refused("not allowed")),
        ("diff", &["--ext-diff"], Refused("not allowed")),
        ("diff", &["--ext"], Refused("not allowed")),
        ("log", &["-p", "--textconv"], Refused("not allowed")),
        ("log", &["-p", "--text"], Refused("not allowed")),
        ("log", &["--exec=sh"], Refused("not allowed")),
        ("log", &["--upload-pack=sh"], Refused("not allowed")),
        ("diff", &["-c", "core.pager=sh"], Refused("not allowed")),
        (
            "diff",
            &["--no-index", "README.md", "src/lib.rs"],
            Refused("not allowed"),
        ),
        ("diff", &["-O/etc/passwd"], Refused("not allowed")),
        ("diff", &["--orderfile=/etc/passwd"], Refused("not allowed")),
        ("log", &["--git-dir=/tmp"], Refused("not allowed")),
        ("log", &["--work-tree=/"], Refused("not allowed")),
        ("log", &["--exec-path=/tmp"], Refused("not allowed")),
        (
            "blame",
            &["--contents", "/etc/passwd", "src/lib.rs"],
            Refused("not allowed"),
        ),
        (
            "blame",
            &["-S", "/etc/passwd", "src/lib.rs"],
            Refused("not allowed"),
        ),
        (
            "log",
            &["--name"],
            Refused("write it in full: --name-only, --name-status"),
        ),
        ("diff", &["-pw"], Refused("one per argument")),
        (
            "log",
            &["--format", "%s"],
            Refused("needs its value attached: --format=<value>"),
        ),
        ("log", &["--format=%G?"], Refused("signature placeholders")),
        (
            "log",
            &["-n", "--output=/tmp/x"],
            Refused("may not begin with `-`"),
        ),
        ("log", &["-n", "many"], Refused("takes a number")),
        ("log", &["-n"], Refused("needs a value")),
        // Paths, after `--` or not, keep to the workspace (two paths outside turn into --no-index).
        (
            "diff",
            &["HEAD", "--", "/etc/passwd"],
            Refused("is absolute"),
        ),
        ("diff", &["HEAD", "--", "src/../../x"], Refused("uses `..`")),
        ("log", &["--", ".git/config"], Refused("inside .git")),
        ("log", &["--", ":(top)src"], Refused("pathspec magic")),
        (
            "diff",
            &["/etc/passwd", "README.md"],
            Refused("is absolute"),
        ),
        (
            "diff",
            &["etc-link/passwd", "README.md"],
            Refused("leads outside the repository"),
        ),
    ];
    for (command, args, expect) in cases {
        let result = tools
            .call("git", json!({"command": command, "args": args}))
            .await;
        match (expect, result) {
            (Prints(text), Ok(output)) => {
                assert!(output.contains(text), "git {command} {args:?}: {output}");
            }
            (Refused(text), Err(ToolError::Model(message))) => {
                assert!(message.contains(text), "git {command} {args:?}: {message}");
                assert!(!message.contains("failed"), "git ran: {message}");
            }
            (_, other) => panic!("git {command} {args:?}: {other:?}"),
        }
    }
}
