//! `action.yml` as written: its composite steps read from the file, each `run:` script run with
//! bash under the variables a runner sets (the step's `env:` evaluated as the runner would), the
//! release archive built by `scripts/package` and served from a local HTTP server, and the
//! GitHub simulator as the API. The install step verifies the archive before anything in it
//! runs; the review step publishes the finding with the binary the install step put on the path.
//! The runner's own `gh` is a stand-in named by `INSTALL_SYSTEM_GH`, which only a test can set
//! (action.yml's step sets it empty, and a step's `env:` wins over everything of the job).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use bugloop_github_sim::fixture::{FixtureOptions, PullRequestFixture, TOKEN, webhook_example};
use bugloop_testkit::workspace as root;
use bugloop_testkit::{assert_contains, assert_starts_with};
use serde_yaml_ng::Value;

use super::{review_script, text};

#[path = "as_written/install.rs"]
mod install;

/// The composite steps of `action.yml`, by name.
fn steps() -> Vec<Value> {
    let text = std::fs::read_to_string(root().join("action.yml")).unwrap();
    let action: Value = serde_yaml_ng::from_str(&text).unwrap();
    action["runs"]["steps"].as_sequence().unwrap().clone()
}

fn step(name: &str) -> Value {
    steps()
        .into_iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap_or_else(|| panic!("action.yml has no step {name:?}"))
}

/// `text` with every `${{ expression }}` replaced from `context`, as the runner does; an
/// expression the test does not know fails it (a new one in action.yml needs a value here).
fn evaluate(text: &str, context: &HashMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").unwrap() + start;
        let expression = rest[start + 3..end].trim();
        let value = context
            .get(expression)
            .unwrap_or_else(|| panic!("no value for ${{{{ {expression} }}}} in the test"));
        out.push_str(value);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Where the runner keeps what a job's steps share.
struct Runner {
    temp: tempfile::TempDir,
    context: HashMap<&'static str, String>,
    path: String,
    /// The runner's own `gh` (`/usr/bin/gh` on GitHub's runners): by default none, so that this
    /// machine's gh never answers a test.
    system_gh: PathBuf,
}

impl Runner {
    fn new(action_ref: &str) -> Runner {
        let temp = tempfile::tempdir().unwrap();
        let mut context = HashMap::new();
        context.insert("github.action_path", root().display().to_string());
        context.insert("github.action_ref", action_ref.to_owned());
        context.insert("github.action_repository", "bugloop/bugloop".to_owned());
        context.insert("runner.temp", temp.path().display().to_string());
        context.insert("inputs.embedded-model", "false".to_owned());
        context.insert("inputs.allow-unverified-provenance", "false".to_owned());
        context.insert("inputs.github-token", TOKEN.to_owned());
        context.insert(
            "inputs.state-key",
            "a state key of 32 bytes, secret!".to_owned(),
        );
        context.insert("inputs.fail-on", String::new());
        context.insert("inputs.sarif", String::new());
        context.insert("inputs.model", String::new());
        std::fs::write(temp.path().join("github_path"), "").unwrap();
        let system_gh = temp.path().join("no-system-gh/gh");
        Runner {
            temp,
            context,
            path: std::env::var("PATH").unwrap(),
            system_gh,
        }
    }

    /// The install step, in `dir`, downloading releases from `url`.
    fn install(&self, dir: &Path, url: &str) -> Output {
        let url = url.to_owned();
        self.run("Install bugloop", dir, &[("BUGLOOP_RELEASES_URL", url)])
    }

    fn install_root(&self) -> PathBuf {
        self.temp.path().join("bugloop-install")
    }

    fn installed(&self) -> PathBuf {
        self.install_root().join("bin/bugloop")
    }

    /// The step outputs the last step wrote (`name=value` lines of its `$GITHUB_OUTPUT`).
    fn outputs(&self) -> String {
        std::fs::read_to_string(self.temp.path().join("github_output")).unwrap_or_default()
    }

    /// Runs the `run:` script of the step named `name` with bash, in `dir`, with the step's
    /// `env:` and `extra` variables; directories earlier steps added to `$GITHUB_PATH` come
    /// first on the path, as on a runner, and each step writes a `$GITHUB_OUTPUT` of its own.
    fn run(&self, name: &str, dir: &Path, extra: &[(&str, String)]) -> Output {
        let step = step(name);
        let script = step["run"].as_str().unwrap();
        assert_eq!(step["shell"].as_str(), Some("bash"), "{name}");
        std::fs::write(self.temp.path().join("github_output"), "").unwrap();
        let added = std::fs::read_to_string(self.temp.path().join("github_path")).unwrap();
        let mut path: Vec<String> = added.lines().rev().map(str::to_owned).collect();
        path.push(self.path.clone());
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", path.join(":"))
            .env("RUNNER_TEMP", self.temp.path())
            .env("GITHUB_PATH", self.temp.path().join("github_path"))
            .env("GITHUB_OUTPUT", self.temp.path().join("github_output"))
            .env("GITHUB_STEP_SUMMARY", self.temp.path().join("summary.md"));
        for (key, value) in step["env"].as_mapping().into_iter().flatten() {
            let value = value.as_str().unwrap_or_default();
            command.env(key.as_str().unwrap(), evaluate(value, &self.context));
        }
        // Over the step's own empty value, as no runner can: the test's system gh.
        if step["env"].get("INSTALL_SYSTEM_GH").is_some() {
            command.env("INSTALL_SYSTEM_GH", &self.system_gh);
        }
        for (key, value) in extra {
            command.env(key, value);
        }
        command.output().unwrap()
    }
}

/// Serves the files below `dir` over HTTP on a local port, in a thread, for as long as the test
/// runs: GitHub's release downloads, offline.
fn serve(dir: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let file = dir.join(path.trim_start_matches('/'));
            let mut stream = &stream;
            let _ = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => stream
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|()| stream.write_all(&body)),
                _ => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                ),
            };
        }
    });
    format!("http://{address}")
}

/// The target the install step asks for on this machine.
fn target() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "aarch64-unknown-linux-gnu",
        _ => "x86_64-unknown-linux-gnu",
    }
}

/// The release `tag` of the binary under test, packaged by `scripts/package` below `releases`
/// as GitHub lays out release downloads (`<tag>/<archive>`); the archive's path.
fn release(releases: &Path, tag: &str) -> PathBuf {
    let packaged = Command::new("bash")
        .arg(root().join("scripts/package"))
        .args(["--tag", tag, "--target", target(), "--binary"])
        .arg(env!("CARGO_BIN_EXE_bugloop"))
        .arg("--out")
        .arg(releases.join(tag))
        .output()
        .unwrap();
    assert!(packaged.status.success(), "{}", text(&packaged));
    releases
        .join(tag)
        .join(format!("bugloop-{tag}-{}.tar.gz", target()))
}

/// Release v0.1.0 of the binary under test (see [`release`]), served over HTTP (see [`serve`]).
struct Served {
    _releases: tempfile::TempDir,
    /// The archive's path (what is served is read from it at each request).
    archive: PathBuf,
    url: String,
}

fn served_release() -> Served {
    let releases = tempfile::tempdir().unwrap();
    let archive = release(releases.path(), "v0.1.0");
    let url = serve(releases.path().to_path_buf());
    Served {
        _releases: releases,
        archive,
        url,
    }
}

/// A `cargo` that records that it was asked to build and "installs" the binary under test, so
/// that falling back to a build from source is seen without compiling.
fn fake_cargo(dir: &Path) -> PathBuf {
    let log = dir.join("cargo.log");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{log}'\nroot=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = --root ] && root=\"$2\"; shift; done\nmkdir -p \"$root/bin\" && cp '{bin}' \"$root/bin/bugloop\"\n",
        log = log.display(),
        bin = env!("CARGO_BIN_EXE_bugloop"),
    );
    crate::write_program(&dir.join("cargo"), &script);
    log
}

/// A `gh` whose `attestation verify` passes only when asked about `source` (a `--source-ref` or
/// `--source-digest` with its value), as the real one checks the attestation's source; it
/// records its arguments in `gh.log` and the token it was given in `gh.token` (the real one asks
/// GitHub, and this machine has no network).
fn fake_gh(dir: &Path, source: &str) -> PathBuf {
    let log = dir.join("gh.log");
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{}'\necho \"$GH_TOKEN\" >> '{}'\ncase \"$*\" in *'{source}'*) exit 0 ;; *) exit 1 ;; esac\n",
        log.display(),
        dir.join("gh.token").display()
    );
    crate::write_program(&dir.join("gh"), &script);
    log
}

/// The stand-ins for a job's tools, in a directory of their own: `cargo` on the path (see
/// `fake_cargo`) and the runner's own `gh` (see `fake_gh`); the cargo and gh logs.
fn tools(runner: &mut Runner, source: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tools = tempfile::tempdir().unwrap();
    let cargo_log = fake_cargo(tools.path());
    let gh_log = fake_gh(tools.path(), source);
    runner.path = format!("{}:{}", tools.path().display(), runner.path);
    runner.system_gh = tools.path().join("gh");
    (tools, cargo_log, gh_log)
}

/// A program at `path` that, if it is ever run, writes `marker` (with any token it was given):
/// what an attacker plants. Those that stand in for a tool then run the real one.
fn planted(path: &Path, marker: &Path, then: &str) {
    let script = format!(
        "#!/bin/sh\necho \"$0 ran, token=$GH_TOKEN$INSTALL_GH_TOKEN\" >> '{}'\n{then}\n",
        marker.display()
    );
    crate::write_program(path, &script);
}

fn sha256(path: &Path) -> String {
    let hashed = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(hashed.status.success());
    String::from_utf8(hashed.stdout).unwrap()[..64].to_owned()
}

const TAG_SOURCE: &str = "--source-ref refs/tags/v0.1.0";

/// The "Cache key" step: no key for a release tag or a commit (never cached, always verified),
/// else one that names the system and the Action's sources, the same for the same sources.
#[test]
fn the_cache_key_is_of_the_sources_and_there_is_none_for_a_pin() {
    let key = |action_ref: &str| {
        let runner = Runner::new(action_ref);
        let dir = tempfile::tempdir().unwrap();
        let run = runner.run("Cache key", dir.path(), &[]);
        assert!(run.status.success(), "{}", text(&run));
        std::fs::read_to_string(runner.temp.path().join("github_output")).unwrap()
    };
    assert_eq!(key("v0.1.0"), "key=\n");
    assert_eq!(key("0123456789012345678901234567890123456789"), "key=\n");
    let branch = key("main");
    let prefix = format!("key=bugloop-Linux-{}-", std::env::consts::ARCH);
    assert_starts_with(&branch, &prefix);
    let hash = branch.trim().rsplit('-').next().unwrap();
    assert_eq!(hash.len(), 64, "{branch}");
    assert_eq!(key("feature"), branch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_action_as_written_installs_its_release_and_reviews() {
    let fixture = PullRequestFixture::new(FixtureOptions::default()).await;
    let served = served_release();
    let mut runner = Runner::new("v0.1.0");
    let (_tools, cargo_log, gh_log) = tools(&mut runner, TAG_SOURCE);

    let installed =
        tokio::task::block_in_place(|| runner.install(fixture.workspace(), &served.url));
    let said = text(&installed);
    assert!(installed.status.success(), "{said}");
    assert_contains(&said, "installed release v0.1.0");
    assert_contains(&said, "build provenance verified");
    let verified = std::fs::read_to_string(&gh_log).unwrap();
    let words: Vec<&str> = verified.split_whitespace().collect();
    assert!(
        words[2].ends_with(&format!("/bugloop-v0.1.0-{}.tar.gz", target())),
        "{verified}"
    );
    assert_eq!(
        [&words[..2], &words[3..]].concat().join(" "),
        "attestation verify --repo bugloop/bugloop --cert-identity \
         https://github.com/bugloop/bugloop/.github/workflows/release.yml@refs/tags/v0.1.0 \
         --source-ref refs/tags/v0.1.0"
    );
    assert_contains(&said, "bugloop 0.1.0");
    assert!(!cargo_log.exists(), "nothing was built: {said}");
    // The token went to the runner's gh, and the step's output names the binary it installed.
    let token = gh_log.with_file_name("gh.token");
    assert_eq!(
        std::fs::read_to_string(token).unwrap(),
        format!("{TOKEN}\n")
    );
    let sha = release_sha256(&runner);
    runner.context.insert("steps.install.outputs.sha256", sha);

    // No AppArmor restriction here: the step says so and changes nothing.
    let sysctl = runner.temp.path().join("userns");
    std::fs::write(&sysctl, "0\n").unwrap();
    let apparmor = runner.run(
        "Let the sandbox run",
        fixture.workspace(),
        &[("BUGLOOP_USERNS_SYSCTL", sysctl.display().to_string())],
    );
    assert!(apparmor.status.success(), "{}", text(&apparmor));
    assert!(text(&apparmor).contains("nothing to do"));

    let reviewed = review(&mut runner, &fixture);
    assert!(reviewed.status.success(), "{}", text(&reviewed));
    assert!(text(&reviewed).contains("Index one past the end"));
    assert_eq!(fixture.finding_comments().len(), 1);
    let outputs = std::fs::read_to_string(runner.temp.path().join("github_output")).unwrap();
    assert_starts_with(&outputs, "sarif=");
}

/// The install step's `sha256` output: the release binary's (the binary under test), checked at
/// its install path.
fn release_sha256(runner: &Runner) -> String {
    let outputs = runner.outputs();
    let sha = outputs.strip_prefix("sha256=").unwrap_or_default().trim();
    let binary = sha256(Path::new(env!("CARGO_BIN_EXE_bugloop")));
    assert_eq!(sha, binary, "{outputs}");
    assert_eq!(sha256(&runner.installed()), binary);
    binary
}

/// The "Run bugloop" step on the fixture's pull request, with the scripted model: the review,
/// by the binary the install step verified (and put first on the path).
fn review(runner: &mut Runner, fixture: &PullRequestFixture) -> Output {
    let scripts = tempfile::tempdir().unwrap();
    runner
        .context
        .insert("inputs.model", review_script(scripts.path()));
    let event = runner.temp.path().join("event.json");
    let payload = webhook_example("pull_request", "opened", fixture);
    std::fs::write(&event, payload.to_string()).unwrap();
    let config = runner.temp.path().join("config.yml");
    std::fs::write(&config, "{}\n").unwrap();
    let workspace = fixture.workspace().display().to_string();
    tokio::task::block_in_place(|| {
        runner.run(
            "Run bugloop",
            fixture.workspace(),
            &[
                ("GITHUB_EVENT_NAME", "pull_request".to_owned()),
                ("GITHUB_EVENT_PATH", event.display().to_string()),
                ("GITHUB_REPOSITORY", "acme/widgets".to_owned()),
                ("GITHUB_WORKSPACE", workspace),
                ("GITHUB_API_URL", fixture.sim.api_url()),
                ("GITHUB_GRAPHQL_URL", fixture.sim.graphql_url()),
                ("BUGLOOP_CONFIG", config.display().to_string()),
                ("BUGLOOP_GITHUB_WRITE_SPACING_MS", "0".to_owned()),
                ("NO_COLOR", "1".to_owned()),
            ],
        )
    })
}

/// Pinned to the commit the release was built from (the safest pin): that release, its
/// provenance asked about that commit.
#[test]
fn a_commit_pin_installs_the_release_built_from_that_commit() {
    let served = served_release();
    let commit = String::from_utf8(
        Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(root())
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_owned();
    let mut runner = Runner::new(&commit);
    let (_tools, cargo_log, gh_log) = tools(&mut runner, &format!("--source-digest {commit}"));
    let dir = tempfile::tempdir().unwrap();
    let installed = runner.install(dir.path(), &served.url);
    let said = text(&installed);
    assert!(installed.status.success(), "{said}");
    assert_contains(&said, "installed release v0.1.0");
    assert!(!cargo_log.exists());
    let asked = std::fs::read_to_string(&gh_log).unwrap();
    assert_contains(&asked, "release.yml@refs/tags/v0.1.0 --source-digest ");
}

/// A branch ref has no release: built from source, saying so. A commit ref whose release was
/// built from another commit is not that release: built from source too.
#[test]
fn without_a_matching_release_the_action_builds_from_source_and_says_why() {
    let served = served_release();
    for (action_ref, why) in [
        (
            "main",
            "is not a release tag or commit: building from source",
        ),
        (
            "0123456789012345678901234567890123456789",
            "not the Action's 0123456789012345678901234567890123456789: building from source",
        ),
        ("v9.9.9", "no release v9.9.9 for"),
    ] {
        let mut runner = Runner::new(action_ref);
        let (_tools, cargo_log, gh_log) = tools(&mut runner, TAG_SOURCE);
        let dir = tempfile::tempdir().unwrap();
        let installed = runner.install(dir.path(), &served.url);
        let said = text(&installed);
        assert!(installed.status.success(), "{action_ref}: {said}");
        assert!(said.contains(why), "{action_ref}: {said}");
        // From a copy of the Action outside the workspace, with the path under review nowhere.
        let built = std::fs::read_to_string(&cargo_log).unwrap();
        assert!(
            built.starts_with("install --locked --path "),
            "{action_ref}: {built}"
        );
        assert!(built.contains("/bugloop-source."), "{action_ref}: {built}");
        // A release of another commit is not even asked about: its own record says so.
        assert!(!gh_log.exists(), "{action_ref}");
        assert!(
            !built.contains(&root().display().to_string()),
            "{action_ref}: {built}"
        );
        assert!(runner.install_root().join("bin/bugloop").exists());
    }
}

/// The AppArmor step on a machine that restricts user namespaces (stand-ins for the sysctl,
/// `apparmor_parser` and `apt-get`; this machine has no AppArmor): nothing when the sysctl is 0;
/// Ubuntu's `bwrap-userns-restrict` loaded when it is there; else a profile for /usr/bin/bwrap
/// alone; without root or sudo, a warning that names the cause and the fix.
#[test]
fn the_apparmor_step_loads_a_profile_for_bwrap_only_when_restricted() {
    let runner = Runner::new("v0.1.0");
    let tools = tempfile::tempdir().unwrap();
    let parsed = tools.path().join("parsed.log");
    for (name, script) in [
        (
            "apparmor_parser",
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n", parsed.display()),
        ),
        // No package manager reaches anything here.
        ("apt-get", "#!/bin/sh\nexit 100\n".to_owned()),
    ] {
        crate::write_program(&tools.path().join(name), &script);
    }
    let sysctl = tools.path().join("userns");
    let run = |value: &str, profiles: &Path, extra: &Path| {
        std::fs::write(&sysctl, value).unwrap();
        let _ = std::fs::remove_file(&parsed);
        Command::new("bash")
            .arg(root().join("scripts/action-apparmor"))
            .env(
                "PATH",
                format!("{}:{}", tools.path().display(), runner.path),
            )
            .env("BUGLOOP_USERNS_SYSCTL", &sysctl)
            .env("BUGLOOP_APPARMOR_DIR", profiles)
            .env("BUGLOOP_APPARMOR_EXTRA", extra)
            .output()
            .unwrap()
    };
    let profiles = tempfile::tempdir().unwrap();
    let none = tempfile::tempdir().unwrap();
    let off = run("0\n", profiles.path(), none.path());
    assert!(off.status.success());
    assert_eq!(std::fs::read_dir(profiles.path()).unwrap().count(), 0);
    assert!(!parsed.exists());

    let restricted = run("1\n", profiles.path(), none.path());
    let said = text(&restricted);
    assert!(restricted.status.success(), "{said}");
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !root_user {
        assert_contains(&said, "::warning");
        assert!(said.contains("AppArmor restricts unprivileged user namespaces"));
        assert!(said.contains("bwrap-userns-restrict"));
        return;
    }
    // Ubuntu's profile is not there: one for /usr/bin/bwrap alone.
    let profile = std::fs::read_to_string(profiles.path().join("bugloop-bwrap")).unwrap();
    assert_contains(
        &profile,
        "profile bugloop-bwrap \"/usr/bin/bwrap\" flags=(unconfined) {",
    );
    assert_contains(&profile, "  userns,\n");
    assert_eq!(profile.matches('{').count(), profile.matches('}').count());
    assert_eq!(
        std::fs::read_to_string(&parsed).unwrap(),
        format!("-r {}\n", profiles.path().join("bugloop-bwrap").display())
    );
    assert!(said.contains("the restriction stays on for every other program"));

    // Ubuntu's profile is there: it is the one loaded, as shipped.
    let extra = tempfile::tempdir().unwrap();
    let shipped = "abi <abi/4.0>,\nprofile bwrap /usr/bin/bwrap flags=(attach_disconnected,mediate_deleted) {\n  allow userns,\n}\n";
    std::fs::write(extra.path().join("bwrap-userns-restrict"), shipped).unwrap();
    let profiles = tempfile::tempdir().unwrap();
    let ubuntu = run("1\n", profiles.path(), extra.path());
    let said = text(&ubuntu);
    assert!(ubuntu.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(profiles.path().join("bwrap-userns-restrict")).unwrap(),
        shipped
    );
    assert!(!profiles.path().join("bugloop-bwrap").exists());
    assert_eq!(
        std::fs::read_to_string(&parsed).unwrap(),
        format!(
            "-r {}\n",
            profiles.path().join("bwrap-userns-restrict").display()
        )
    );
    assert_contains(&said, "loaded Ubuntu's bwrap-userns-restrict profile");
}
