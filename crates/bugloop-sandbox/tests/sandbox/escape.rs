//! The escape suite: one test per class of escape, each run as root and as an unprivileged user
//! (see `users`). Every attempt must fail and leave the host untouched.

use std::path::Path;

use bugloop_sandbox::{CommandSpec, LimitHit, Output, Policy, SandboxSettings, TaskTree, run};

use crate::users::also_unprivileged;
use crate::{bash, git, settings, write_files};

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Runs `spec` in the sandbox; the script must get to its end (print `done`).
async fn ran_to_the_end(settings: &SandboxSettings, spec: &CommandSpec) -> Output {
    let out = run(settings, spec).await.unwrap();
    let stdout = out.stdout_text();
    assert!(stdout.contains("done"), "{stdout}\n{}", out.stderr_text());
    out
}

#[tokio::test]
async fn escape_the_view_of_the_file_system() {
    also_unprivileged("escape::escape_the_view_of_the_file_system");
    let dir = tempfile::tempdir().unwrap();
    // A unix socket of the host outside /tmp and the home directory (a Docker socket would be one).
    let sockets = tempfile::Builder::new().tempdir_in("/var/tmp").unwrap();
    let socket = sockets.path().join("host.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(".bash_history"), "secret history").unwrap();
    let mut settings = settings(dir.path(), Policy::WorkspaceWrite);
    settings.home_dir = Some(home.path().to_path_buf());
    let script = format!(
        r#"
        for f in /etc/shadow /etc/gshadow /etc/sudoers /etc/gitconfig /root/.bash_history "$HOME/.bash_history" "{socket}"; do
          if [ -e "$f" ]; then echo "VISIBLE $f"; fi
        done
        for d in /usr /etc / "$HOME" /var /run; do
          (echo x > "$d/bugloop-escape") 2>/dev/null && echo "WROTE $d"
        done
        ls / | tr '\n' ' '; echo
        ln /etc/hostname ./hardlink 2>/dev/null && echo "HARDLINK"
        cat /proc/self/root/etc/shadow 2>/dev/null && echo "PROCROOT"
        echo done
        "#,
        socket = socket.display()
    );
    let out = ran_to_the_end(&settings, &bash(&script)).await;
    let stdout = out.stdout_text();
    for line in lines(&stdout) {
        assert!(
            !line.starts_with("VISIBLE")
                && !line.starts_with("WROTE")
                && line != "HARDLINK"
                && line != "PROCROOT",
            "{line}\n{stdout}"
        );
    }
    // Only the system directories, /dev, /proc, /tmp and the way to the workspace exist.
    let root: Vec<&str> = lines(&stdout)
        .into_iter()
        .find(|l| l.contains("usr"))
        .unwrap()
        .split_whitespace()
        .collect();
    for absent in ["root", "var", "srv", "mnt", "media", "sys", "boot"] {
        if !dir.path().starts_with(format!("/{absent}"))
            && !home.path().starts_with(format!("/{absent}"))
        {
            assert!(!root.contains(&absent), "/{absent} is visible: {root:?}");
        }
    }
    assert!(!Path::new("/etc/bugloop-escape").exists());
    assert!(!home.path().join("bugloop-escape").exists());
}

#[tokio::test]
async fn escape_through_privileges() {
    also_unprivileged("escape::escape_through_privileges");
    let dir = tempfile::tempdir().unwrap();
    let host_pid = std::process::id();
    let script = format!(
        r#"
        id -u
        grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status
        umount /proc 2>/dev/null && echo "UMOUNTED"
        mount -t tmpfs none /tmp 2>/dev/null && echo "MOUNTED"
        mount -o remount,rw / 2>/dev/null && echo "REMOUNTED"
        unshare -U true 2>/dev/null && echo "UNSHARED"
        unshare -r -n true 2>/dev/null && echo "UNSHARED-ROOT"
        nsenter -t 1 -n true 2>/dev/null && echo "NSENTERED"
        kill -0 {host_pid} 2>/dev/null && echo "SEES-HOST"
        cat /proc/*/environ 2>/dev/null | tr '\0' '\n' | grep -c BUGLOOP_ESCAPE_SECRET
        su -c true root </dev/null 2>/dev/null && echo "SU"
        # Writing the host's own value back: harmless if it worked, and it must not.
        cat /proc/sys/kernel/core_pattern > pattern
        cat pattern 2>/dev/null > /proc/sys/kernel/core_pattern && echo "SYSCTL"
        touch /dev/bugloop 2>/dev/null && echo "DEV"
        # /dev/null's mode is 666 already: harmless if it worked, and it must not.
        chmod 666 /dev/null 2>/dev/null && echo "CHMOD-DEV"
        echo mine > made-inside
        # System calls the seccomp filter refuses (numbers for x86-64).
        if [ "$(uname -m)" = x86_64 ]; then
          python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
for name, number, args in [("keyctl", 250, (0, -4, 0)), ("io_uring_setup", 425, (1, 0)),
        ("userfaultfd", 323, (0,)), ("bpf", 321, (0, 0, 0)), ("perf_event_open", 298, (0, 0, -1, -1, 0)),
        ("ptrace", 101, (16, 1, 0, 0)), ("open_by_handle_at", 304, (-100, 0, 0))]:
    result = libc.syscall(number, *args)
    print("SYSCALL", name, result, ctypes.get_errno())
'
        fi
        echo done
        "#
    );
    let mut spec = bash(&script);
    spec.env.push(("HARMLESS".into(), "1".into()));
    let out = ran_to_the_end(&settings(dir.path(), Policy::WorkspaceWrite), &spec).await;
    let stdout = out.stdout_text();
    assert_eq!(lines(&stdout)[0], "65534", "{stdout}");
    for cap in ["CapEff", "CapPrm", "CapBnd"] {
        assert!(
            stdout.contains(&format!("{cap}:\t0000000000000000")),
            "{cap} not empty:\n{stdout}"
        );
    }
    assert!(stdout.contains("NoNewPrivs:\t1"), "{stdout}");
    // On the host, what the command made belongs to an unprivileged user, also when the test
    // runs as root: root outside is no one inside.
    let owner = std::os::unix::fs::MetadataExt::uid(
        &std::fs::metadata(dir.path().join("made-inside")).unwrap(),
    );
    assert_ne!(owner, 0, "the sandbox wrote as root on the host");
    if std::env::consts::ARCH == "x86_64" {
        let refused: Vec<&str> = lines(&stdout)
            .into_iter()
            .filter(|l| l.starts_with("SYSCALL "))
            .collect();
        assert_eq!(refused.len(), 7, "{stdout}\n{}", out.stderr_text());
        for line in refused {
            assert!(line.ends_with(" -1 1"), "not refused with EPERM: {line}");
        }
    }
    for escaped in [
        "UMOUNTED",
        "MOUNTED",
        "REMOUNTED",
        "UNSHARED",
        "UNSHARED-ROOT",
        "NSENTERED",
        "SEES-HOST",
        "SU",
        "SYSCTL",
        "DEV",
        "CHMOD-DEV",
    ] {
        assert!(!lines(&stdout).contains(&escaped), "{escaped}\n{stdout}");
    }
}

#[tokio::test]
async fn escape_through_resources() {
    let _heavy = crate::PROCESS_HEAVY.lock().await;
    also_unprivileged("escape::escape_through_resources");
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path(), Policy::WorkspaceWrite);
    settings.limits.max_processes = 48;
    settings.limits.max_file_bytes = 1 << 20;
    settings.limits.tmp_bytes = 4 << 20;
    settings.limits.workspace_growth_bytes = 8 << 20;

    // A fork bomb, bounded: far fewer processes than asked for, and the limit is reported. Each
    // process that started leaves a file; all of them live until the timeout kills the sandbox.
    let mut bomb = settings.clone();
    bomb.timeout = std::time::Duration::from_secs(4);
    let out = run(
        &bomb,
        &bash("for i in $(seq 200); do (touch started.$i; exec sleep 30) & done; wait"),
    )
    .await
    .unwrap();
    let count = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("started."))
        .count();
    assert!(
        count > 0 && count < 48,
        "{count} processes\n{:?}\n{}",
        out.exit,
        out.stderr_text()
    );
    assert!(
        out.limits_hit.contains(&LimitHit::Processes { max: 48 }),
        "{:?}\n{}",
        out.limits_hit,
        out.stderr_text()
    );
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        std::fs::remove_file(entry.path()).unwrap();
    }

    // One file past the size limit.
    let out = run(&settings, &bash("head -c 3000000 /dev/zero > big; echo $?"))
        .await
        .unwrap();
    assert!(
        out.limits_hit
            .contains(&LimitHit::FileSize { max_bytes: 1 << 20 }),
        "{:?} {:?}",
        out.exit,
        out.limits_hit
    );
    assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 1 << 20);

    // The private /tmp has a size.
    let out = run(
        &settings,
        &bash("for i in 1 2 3 4 5 6; do head -c 1000000 /dev/zero > /tmp/f$i || exit 1; done"),
    )
    .await
    .unwrap();
    assert!(!out.success());
    assert!(
        out.limits_hit
            .contains(&LimitHit::Tmp { max_bytes: 4 << 20 }),
        "{:?} {}",
        out.limits_hit,
        out.stderr_text()
    );

    // A sparse file counts at its size, and so do many empty files (inodes): both are stopped.
    for script in [
        "for i in $(seq 20); do truncate -s 1M sparse$i; done; sleep 5; echo finished",
        "mkdir many && cd many && for i in $(seq 5000); do : > f$i; done; sleep 5; echo finished",
        // Deeper than a path can be long: measured through directory handles, not paths.
        "n=$(printf 'd%.0s' $(seq 250)); for i in $(seq 20); do mkdir $n && cd $n; done; for i in $(seq 12); do head -c 1000000 /dev/zero > f$i; done; sleep 5; echo finished",
    ] {
        let out = run(&settings, &bash(script)).await.unwrap();
        assert!(!out.stdout_text().contains("finished"), "{script}");
        assert!(
            out.limits_hit.contains(&LimitHit::Workspace {
                max_growth_bytes: 8 << 20
            }),
            "{script}: {:?}",
            out.limits_hit
        );
        for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let _ = std::fs::remove_dir_all(entry.path());
            let _ = std::fs::remove_file(entry.path());
        }
    }

    // Memory, where this machine lets bugloop hold it (a cgroup: as root).
    let memory = bugloop_sandbox::protections()
        .into_iter()
        .any(|p| p.name == "memory limit" && p.active);
    if memory {
        let mut small = settings.clone();
        small.limits.max_memory_bytes = 128 << 20;
        let out = run(
            &small,
            &bash("python3 -c \"b = b'x' * (512 << 20); print('allocated')\""),
        )
        .await
        .unwrap();
        assert!(
            !out.stdout_text().contains("allocated"),
            "{}",
            out.stderr_text()
        );
        assert!(
            out.limits_hit.contains(&LimitHit::Memory {
                max_bytes: 128 << 20
            }),
            "{:?} {}",
            out.limits_hit,
            out.stderr_text()
        );
    } else {
        eprintln!("no memory limit can be set here (not root): that part is not checked");
    }

    // The budget is the task's, not each command's: two commands of 5 MB each cross 8 MiB.
    let mut task = settings.clone();
    task.workspace_baseline = Default::default();
    let five =
        "for i in 1 2 3 4 5; do head -c 1000000 /dev/zero > $0$i; done; sleep 2; echo finished";
    let first = run(&task, &CommandSpec::new("bash", ["-c", five, "a"]))
        .await
        .unwrap();
    assert!(
        first.stdout_text().contains("finished"),
        "{:?}",
        first.limits_hit
    );
    let second = run(&task, &CommandSpec::new("bash", ["-c", five, "b"]))
        .await
        .unwrap();
    assert!(
        !second.stdout_text().contains("finished"),
        "{:?}",
        second.limits_hit
    );
    for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
        let _ = std::fs::remove_file(entry.path());
    }

    // The workspace may not grow without bound: the watchdog stops the command.
    let out = run(
        &settings,
        &bash("for i in $(seq 400); do head -c 500000 /dev/zero > fill$i; sleep 0.02; done; echo finished"),
    )
    .await
    .unwrap();
    assert!(!out.stdout_text().contains("finished"));
    assert!(
        out.limits_hit.contains(&LimitHit::Workspace {
            max_growth_bytes: 8 << 20
        }),
        "{:?}",
        out.limits_hit
    );
}

#[tokio::test]
async fn escape_through_home_directories() {
    also_unprivileged("escape::escape_through_home_directories");
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    write_files(
        home.path(),
        &[
            (".cargo/bin/tool", "a toolchain file"),
            (".cargo/credentials.toml", "token = \"cio_SECRET\""),
            // A crate's source whose names read like secrets: downloaded code, shown as it is.
            (
                ".cargo/registry/src/index/tokio-util-0.7/src/sync/cancellation_token/tree_node.rs",
                "a crate's source",
            ),
            (".ssh/id_ed25519", "SECRET KEY"),
            (".netrc", "password SECRET"),
            // Named otherwise than the usual files, or deeper than a toolchain's tree goes.
            (".ssh/deploy_ed25519", "SECRET KEY"),
            (".ssh/known_hosts", "a host key"),
            (".config/gcloud/credentials.db", "SECRET"),
            (
                ".config/gcloud/application_default_credentials.json",
                "SECRET",
            ),
            // Passwords and tokens in the configuration of other tools (Maven, hub, Azure, psql).
            (".m2/settings.xml", "<password>SECRET</password>"),
            (".m2/settings-security.xml", "<master>{SECRET}</master>"),
            (".config/hub", "oauth_token: SECRET"),
            (".config/azure/service_principal_entries.json", "SECRET"),
            (".config/.pgpass", "db:5432:*:me:SECRET"),
            (".config/psql_history", "\\password SECRET"),
            (".config/.env.local", "API_KEY=SECRET"),
            (
                ".config/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/notes",
                "SECRET deep down",
            ),
        ],
    );
    let mut settings = settings(dir.path(), Policy::WorkspaceWrite);
    settings.home_dir = Some(home.path().to_path_buf());
    settings.visible_home_dirs = vec![
        ".cargo".into(),
        ".ssh".into(),
        ".config".into(),
        ".m2".into(),
    ];
    let out = run(
        &settings,
        &bash("cat \"$HOME/.cargo/bin/tool\" \"$HOME/.ssh/known_hosts\" \"$HOME\"/.cargo/registry/src/index/tokio-util-0.7/src/sync/cancellation_token/tree_node.rs; echo; cat \"$HOME/.cargo/credentials.toml\" \"$HOME/.ssh/id_ed25519\" \"$HOME/.netrc\" \"$HOME/.ssh/deploy_ed25519\" \"$HOME\"/.config/gcloud/* \"$HOME\"/.config/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/notes \"$HOME\"/.m2/* \"$HOME\"/.config/hub \"$HOME\"/.config/azure/* \"$HOME\"/.config/.pgpass \"$HOME\"/.config/psql_history \"$HOME\"/.config/.env.local 2>&1; echo end"),
    )
    .await
    .unwrap();
    let stdout = out.stdout_text();
    assert!(stdout.contains("a toolchain file"), "{stdout}");
    assert!(stdout.contains("a host key"), "{stdout}");
    assert!(stdout.contains("a crate's source"), "{stdout}");
    assert!(stdout.contains("end"), "{stdout}");
    assert!(!stdout.contains("SECRET"), "{stdout}");
}

/// A repository under the home directory (`~/src/app`, as most are) is a workspace like any
/// other: its commands run and write in it, while the rest of the home directory stays empty,
/// hidden and read-only around it.
#[tokio::test]
async fn escape_from_a_workspace_under_the_home_directory() {
    also_unprivileged("escape::escape_from_a_workspace_under_the_home_directory");
    let home = tempfile::tempdir().unwrap();
    write_files(
        home.path(),
        &[
            (".bash_history", "SECRET history"),
            ("src/app/lib.py", "x = 1\n"),
            ("src/other.py", "SECRET sibling"),
        ],
    );
    let workspace = home.path().join("src/app");
    let mut settings = settings(&workspace, Policy::WorkspaceWrite);
    settings.home_dir = Some(home.path().to_path_buf());
    let script = r#"
        cat lib.py
        echo made > made.txt && echo "WROTE workspace"
        for d in "$HOME" "$HOME/src"; do
          (echo x > "$d/bugloop-escape") 2>/dev/null && echo "ESCAPED $d"
        done
        cat "$HOME/.bash_history" "$HOME/src/other.py" 2>/dev/null
        ls -A "$HOME" | tr '
' ' '; echo
        echo end
    "#;
    let out = run(&settings, &bash(script)).await.unwrap();
    let stdout = out.stdout_text();
    assert!(stdout.contains("x = 1"), "{stdout}\n{}", out.stderr_text());
    assert!(
        stdout.contains("WROTE workspace"),
        "{stdout}\n{}",
        out.stderr_text()
    );
    assert!(stdout.contains("end"), "{stdout}");
    assert!(!stdout.contains("ESCAPED"), "{stdout}");
    assert!(!stdout.contains("SECRET"), "{stdout}");
    // Only the way to the workspace is in the home directory.
    assert!(lines(&stdout).contains(&"src "), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("made.txt")).unwrap(),
        "made\n"
    );
    assert!(!home.path().join("bugloop-escape").exists());
}

/// A repository whose git directory holds what an attacker wants: a token in its config and a
/// hook that would run on the host; with its [`snapshot_of_repository`], to hold it to after.
fn repository_with_secrets() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(repo.join("check.sh"), "exit 0\n").unwrap();
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "init"]);
    git(
        repo,
        &[
            "config",
            "http.https://github.com/.extraheader",
            "AUTHORIZATION: basic SECRET_CHECKOUT_TOKEN",
        ],
    );
    let snapshot = snapshot_of_repository(repo);
    (dir, snapshot)
}

fn snapshot_of_repository(repo: &Path) -> String {
    let hooks: Vec<String> = std::fs::read_dir(repo.join(".git/hooks"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{}\n{}\n{}\n{:?}\n{}",
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        git(
            repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
                "refs/tags"
            ]
        ),
        git(repo, &["status", "--porcelain"]),
        hooks,
        std::fs::read(repo.join(".git/index"))
            .map(|i| i.len())
            .unwrap_or(0)
    )
}

#[tokio::test]
async fn escape_through_the_repositorys_git_directory() {
    also_unprivileged("escape::escape_through_the_repositorys_git_directory");
    let (dir, before) = repository_with_secrets();
    let repo = dir.path();
    let tree = TaskTree::create(repo, "HEAD", "escape").unwrap();
    let mut settings = settings(tree.path(), Policy::WorkspaceWrite);
    settings.git = Some(tree.git_mount());
    let real_git = repo.join(".git").canonicalize().unwrap();
    let script = format!(
        r#"
        git log --oneline | grep -c init
        cat .git/config
        grep -r SECRET .git 2>/dev/null && echo "SECRET-IN-SHADOW"
        echo x > .git/hooks/post-checkout 2>/dev/null && echo "PLANTED-HOOK"
        echo x > .git/config 2>/dev/null && echo "WROTE-CONFIG"
        cat "{real}/config" 2>/dev/null && echo "REAL-GIT-VISIBLE"
        ls "{real}/hooks" 2>/dev/null && echo "REAL-GIT-VISIBLE"
        git status --porcelain | head -3
        echo done
        "#,
        real = real_git.display()
    );
    let out = ran_to_the_end(&settings, &bash(&script)).await;
    let stdout = out.stdout_text();
    assert_eq!(
        lines(&stdout)[0],
        "1",
        "git inside works:\n{stdout}\n{}",
        out.stderr_text()
    );
    assert!(!stdout.contains("SECRET"), "{stdout}");
    for escaped in [
        "SECRET-IN-SHADOW",
        "PLANTED-HOOK",
        "WROTE-CONFIG",
        "REAL-GIT-VISIBLE",
    ] {
        assert!(!lines(&stdout).contains(&escaped), "{escaped}\n{stdout}");
    }
    drop(tree);
    assert_eq!(snapshot_of_repository(repo), before);
}

#[tokio::test]
async fn escape_through_what_the_agent_leaves_in_the_tree() {
    also_unprivileged("escape::escape_through_what_the_agent_leaves_in_the_tree");
    let (dir, before) = repository_with_secrets();
    let repo = dir.path();
    let markers = tempfile::tempdir().unwrap();
    let marker = markers.path().join("host-ran-it");
    let mut tree = TaskTree::create(repo, "HEAD", "escape").unwrap();
    let mut settings = settings(tree.path(), Policy::WorkspaceWrite);
    settings.git = Some(tree.git_mount());
    // What a verify command of the branch could leave: git configuration that runs programs in a
    // nested repository, attributes naming a filter, a FIFO, and a real change.
    let script = format!(
        r#"
        mkdir -p sub/.git/hooks
        printf '[core]\n\tfsmonitor = touch {marker}\n[filter "evil"]\n\tclean = touch {marker}\n' > sub/.git/config
        printf '#!/bin/sh\ntouch {marker}\n' > sub/.git/hooks/pre-commit; chmod +x sub/.git/hooks/pre-commit
        echo '* filter=evil' > .gitattributes
        mkfifo pipe
        echo 'fn main() {{ println!("fixed"); }}' > lib.rs
        echo done
        "#,
        marker = marker.display()
    );
    ran_to_the_end(&settings, &bash(&script)).await;
    let changes = tree.changes().unwrap();
    let mut paths = changes.paths();
    paths.sort();
    assert_eq!(paths, [".gitattributes", "lib.rs"], "{changes:?}");
    // The FIFO, and the nested repository's directory: both left out, and said.
    assert_eq!(changes.skipped.len(), 2, "{changes:?}");
    assert!(changes.skipped[0].starts_with("`sub/.git`"), "{changes:?}");
    assert!(changes.refused.is_empty(), "{changes:?}");
    let commit = tree
        .commit(&changes, "fix", ("bugloop", "bugloop@bugloop.invalid"))
        .unwrap();
    assert!(
        !marker.exists(),
        "the host ran something the tree asked for"
    );
    let files = git(repo, &["ls-tree", "-r", "--name-only", &commit]);
    assert_eq!(lines(&files), [".gitattributes", "check.sh", "lib.rs"]);
    assert!(git(repo, &["show", &format!("{commit}:lib.rs")]).contains("fixed"));

    // A symlink out of the repository is refused, not committed.
    std::os::unix::fs::symlink("/etc/passwd", tree.path().join("leak")).unwrap();
    std::os::unix::fs::symlink("../../../../../../etc", tree.path().join("up")).unwrap();
    std::os::unix::fs::symlink("lib.rs", tree.path().join("fine")).unwrap();
    let changes = tree.changes().unwrap();
    assert_eq!(changes.refused.len(), 2, "{changes:?}");
    assert!(tree.commit(&changes, "leak", ("b", "b@b")).is_err());
    assert_eq!(tree.head(), commit);
    for link in ["leak", "up", "fine"] {
        std::fs::remove_file(tree.path().join(link)).unwrap();
    }

    // A setuid program left in the tree is refused, and no other local user can reach the tree.
    let out = run(
        &settings,
        &bash("cp /bin/sh suid && chmod 4755 suid; ls -l suid"),
    )
    .await
    .unwrap();
    assert!(out.success(), "{}", out.stderr_text());
    let changes = tree.changes().unwrap();
    assert!(
        changes.refused.iter().any(|r| r.contains("setuid")),
        "{changes:?}"
    );
    let task_root = tree.path().parent().unwrap();
    for private in [task_root, task_root.parent().unwrap()] {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(private).unwrap().permissions(),
        );
        assert_eq!(
            mode & 0o077,
            0,
            "{} is reachable by others",
            private.display()
        );
    }
    drop(tree);
    assert!(!marker.exists());
    // The user's repository: config, refs, hooks, index and tree as they were.
    assert_eq!(snapshot_of_repository(repo), before);
}

#[test]
fn escape_through_a_commit_that_expands_without_bound() {
    also_unprivileged("escape::escape_through_a_commit_that_expands_without_bound");
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    // One 1 GiB blob of zeros (about 1 MiB stored), named nine times in one tree.
    let blob = std::process::Command::new("sh")
        .arg("-c")
        .arg("head -c 1073741824 /dev/zero | git hash-object -w --stdin")
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(blob.status.success());
    let blob = String::from_utf8_lossy(&blob.stdout).trim().to_owned();
    let listing: String = (0..9)
        .map(|i| format!("100644 blob {blob}\tzero{i}\n"))
        .collect();
    let mut mktree = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .arg("mktree")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut mktree.stdin.take().unwrap(), listing.as_bytes()).unwrap();
    let tree = String::from_utf8_lossy(&mktree.wait_with_output().unwrap().stdout)
        .trim()
        .to_owned();
    let commit = git(repo, &["commit-tree", &tree, "-m", "bomb"]);
    let error = TaskTree::create(repo, &commit, "bomb")
        .unwrap_err()
        .to_string();
    assert!(error.contains("add up to 9216 MiB"), "{error}");
    assert_eq!(
        std::fs::read_dir(repo.join(".git/bugloop/tasks"))
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "nothing was written"
    );
}
