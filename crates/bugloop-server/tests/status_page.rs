//! The status page as a browser shows it: headless Chromium (Debian's, installed by the test
//! command) renders the page of a seeded queue; its jobs are listed with their states, and the
//! hostile text in a conversation name and an error shows as text: no element made of it, no
//! script run. The screenshot is kept with the test output (`status-page.png` under cargo's
//! target tmp dir).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bugloop_queue::{Failure, JobKind, NewJob, Queue, Retries};
use bugloop_server::serve::WebhookState;

const LEASE: Duration = Duration::from_secs(60);
const HOSTILE: &str =
    "<img src=x onerror=\"document.title='pwned'\"><script>document.title='pwned'</script>";

fn job(kind: JobKind, conversation: &str) -> NewJob {
    NewJob {
        kind,
        conversation: conversation.to_owned(),
        installation: Some(42),
        head: None,
        payload: "{}".to_owned(),
        priority: 0,
    }
}

/// A queue with a job in each state, one of them failed with hostile text.
async fn seeded(path: &Path) -> Queue {
    let queue = Queue::open_sqlite(path, Retries::default()).await.unwrap();
    let now = 1_795_000_000_000;
    for (n, (kind, conversation)) in [
        (JobKind::Review, "github:acme/widgets#1"),
        (JobKind::Comment, "github:acme/widgets#2"),
        (JobKind::Converge, &format!("github:acme/{HOSTILE}#3")),
        (JobKind::Review, "github:acme/widgets#4"),
    ]
    .into_iter()
    .enumerate()
    {
        queue
            .enqueue(
                &format!("delivery-{n}"),
                "pull_request",
                Some(job(kind, conversation)),
                now + i64::try_from(n).unwrap(),
            )
            .await
            .unwrap();
    }
    // delivery-0 done, delivery-1 dead with a hostile error, delivery-2 running, delivery-3
    // queued.
    let done = queue
        .claim("node-a:1:0", LEASE, now + 10)
        .await
        .unwrap()
        .unwrap();
    queue.complete(&done, now + 4_210).await.unwrap();
    let dead = queue
        .claim("node-a:1:1", LEASE, now + 20)
        .await
        .unwrap()
        .unwrap();
    queue
        .fail(
            &dead,
            &format!("refused: {HOSTILE}"),
            Failure::Permanent,
            now + 30,
        )
        .await
        .unwrap();
    queue
        .claim("node-b:2:0", LEASE, now + 40)
        .await
        .unwrap()
        .unwrap();
    queue
}

fn chromium() -> PathBuf {
    ["chromium", "chromium-browser"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|path| {
                std::env::split_paths(&path)
                    .map(|dir| dir.join(name))
                    .find(|candidate| candidate.is_file())
            })
        })
        .unwrap_or_else(|| {
            panic!("Chromium is not installed; `scripts/setup --test` installs Debian's")
        })
}

/// Chromium, headless, with nothing of its own reaching for the network (this machine's is
/// closed), in a profile of its own.
fn headless(profile: &Path) -> Command {
    let mut command = Command::new(chromium());
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--window-size=1400,700",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_the_jobs_and_runs_none_of_the_hostile_text() {
    let dir = tempfile::tempdir().unwrap();
    let queue = seeded(&dir.path().join("queue.db")).await;
    let state = WebhookState::new(
        b"secret".to_vec(),
        queue,
        bugloop_app::trigger_settings(&bugloop_config::Config::default(), Vec::new()),
    );
    let url =
        crate::serve_on("127.0.0.1:0", state, bugloop_server::serve::HEADER_TIMEOUT).await + "/";

    let profile = dir.path().join("profile");
    let screenshot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("status-page.png");
    let _ = std::fs::remove_file(&screenshot);
    let (dom, shot) = {
        let (url, profile, screenshot) = (url.clone(), profile.clone(), screenshot.clone());
        tokio::task::spawn_blocking(move || {
            let dom = headless(&profile)
                .args(["--virtual-time-budget=2000", "--dump-dom", &url])
                .output()
                .unwrap();
            let shot = headless(&profile)
                .arg(format!("--screenshot={}", screenshot.display()))
                .arg(&url)
                .output()
                .unwrap();
            (dom, shot)
        })
        .await
        .unwrap()
    };
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8(dom.stdout).unwrap();
    // The jobs, each in its state, as the browser built the page.
    for (id, state) in [
        ("delivery-0", "done"),
        ("delivery-1", "dead"),
        ("delivery-2", "running"),
        ("delivery-3", "queued"),
    ] {
        let row = dom
            .split("<tr ")
            .find(|row| row.contains(&format!("<code>{id}</code>")))
            .unwrap_or_else(|| panic!("{id} is not on the page:\n{dom}"));
        assert!(
            row.starts_with(&format!("class=\"{state}\"")),
            "{id}: {row}"
        );
    }
    assert!(dom.contains("node-b:2:0"), "who runs a job is shown");
    assert!(dom.contains("4.2 s"), "how long a job took is shown");
    // The hostile text is text: no element was made of it, no script ran.
    assert!(!dom.contains("<img"), "{dom}");
    assert!(!dom.contains("<script"), "{dom}");
    assert!(dom.contains("&lt;script&gt;"), "{dom}");
    assert!(dom.contains("<title>bugloop jobs</title>"), "{dom}");
    assert!(
        shot.status.success(),
        "{}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    // The image header: 1400 x 700, as the window.
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1400, 700));
    eprintln!("screenshot: {}", screenshot.display());
}
