//! The Action's install step against what an attacker could do to it: a tampered, truncated or
//! unproven release, a binary planted in the install root, a restored build without its recorded
//! checksum, and a `gh` that is not the runner's own.

use super::*;
use bugloop_testkit::assert_contains;

/// An install the step refused: the runner it ran on, what it said, and where the runner's `gh`
/// logs its calls.
struct Refused {
    runner: Runner,
    said: String,
    gh_log: PathBuf,
    _tools: tempfile::TempDir,
}

/// The install of the release `served` on a runner of `v0.1.0` (whose `gh` finds its build
/// provenance from `source`), which must fail (exit 1) saying `why`, with nothing installed and
/// nothing built instead.
#[track_caller]
fn install_refused(served: &Served, source: &str, why: &str) -> Refused {
    let mut runner = Runner::new("v0.1.0");
    let (tools, cargo_log, gh_log) = tools(&mut runner, source);
    let dir = tempfile::tempdir().unwrap();
    let installed = runner.install(dir.path(), &served.url);
    let said = text(&installed);
    assert_eq!(installed.status.code(), Some(1), "{said}");
    assert_contains(&said, why);
    assert!(!runner.installed().exists());
    assert!(!cargo_log.exists(), "no build either");
    Refused {
        runner,
        said,
        gh_log,
        _tools: tools,
    }
}

#[test]
fn a_tampered_release_fails_the_install_and_runs_nothing() {
    let served = served_release();
    let mut bytes = std::fs::read(&served.archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&served.archive, bytes).unwrap();
    let Refused {
        runner,
        said,
        gh_log,
        ..
    } = install_refused(&served, TAG_SOURCE, "does not match its checksum");
    assert!(!gh_log.exists(), "not even its provenance was asked for");
    assert_contains(&said, "nothing was installed or run");
    assert_eq!(
        std::fs::read_to_string(runner.temp.path().join("github_path")).unwrap(),
        ""
    );
}

/// An archive and checksum replaced together (whoever can edit the release): the checksum
/// matches, the build provenance does not verify, and nothing is installed or run.
#[test]
fn a_release_without_valid_provenance_fails_the_install_and_runs_nothing() {
    let served = served_release();
    install_refused(
        &served,
        "--source-ref refs/tags/v9.9.9",
        "has no valid build provenance",
    );
}

/// A pin is never cached, so a `bugloop` already in the install root was put there by something
/// else (an earlier step, a self-hosted runner's last job), even with a SHA-256 "record" beside
/// it: it never runs, and the verified release replaces it. The review step checks the binary
/// again against the install step's output, and refuses one changed since.
#[test]
fn a_binary_planted_in_the_install_root_of_a_pin_is_replaced_and_never_run() {
    let served = served_release();
    let mut runner = Runner::new("v0.1.0");
    let (_tools, cargo_log, _) = tools(&mut runner, TAG_SOURCE);
    let marker = runner.temp.path().join("planted-ran");
    planted(&runner.installed(), &marker, "exit 0");
    let record = format!("{}\n", sha256(&runner.installed()));
    std::fs::write(runner.install_root().join("bugloop.sha256"), record).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let installed = runner.install(dir.path(), &served.url);
    let said = text(&installed);
    assert!(installed.status.success(), "{said}");
    assert!(!marker.exists(), "the planted binary ran: {said}");
    assert_contains(&said, "it was not run, and was replaced");
    assert_contains(&said, "installed release v0.1.0");
    assert_contains(&said, "bugloop 0.1.0");
    assert!(!cargo_log.exists());
    let sha = release_sha256(&runner);

    // Changed between the steps: the review step does not run it.
    planted(&runner.installed(), &marker, "exit 0");
    runner.context.insert("steps.install.outputs.sha256", sha);
    let reviewed = runner.run("Run bugloop", dir.path(), &[]);
    let said = text(&reviewed);
    assert_eq!(reviewed.status.code(), Some(1), "{said}");
    assert_contains(&said, "is not the binary the install step verified");
    assert!(!marker.exists(), "the planted binary ran: {said}");
}

/// A build from source is cached with its SHA-256, recorded when it was built: restored, it is
/// used only if it still has it; a binary swapped in the restored install root is rebuilt, never
/// run.
#[test]
fn a_restored_build_is_used_only_with_the_sha256_recorded_when_it_was_built() {
    let mut runner = Runner::new("main");
    let (_tools, cargo_log, _) = tools(&mut runner, TAG_SOURCE);
    let dir = tempfile::tempdir().unwrap();
    let install = |runner: &Runner| runner.run("Install bugloop", dir.path(), &[]);
    let built = install(&runner);
    assert!(built.status.success(), "{}", text(&built));
    let sha = sha256(Path::new(env!("CARGO_BIN_EXE_bugloop")));
    assert_eq!(
        std::fs::read_to_string(runner.install_root().join("bugloop.sha256")).unwrap(),
        format!("{sha}\n")
    );
    assert_eq!(runner.outputs(), format!("sha256={sha}\n"));

    // The same install root again, as the cache restores it: used as it is.
    let restored = install(&runner);
    let said = text(&restored);
    assert!(restored.status.success(), "{said}");
    assert_contains(&said, "restored from the cache");
    assert_eq!(
        std::fs::read_to_string(&cargo_log).unwrap().lines().count(),
        1
    );

    // A binary swapped in (the record left as it was): not run, rebuilt.
    let marker = runner.temp.path().join("planted-ran");
    planted(&runner.installed(), &marker, "exit 0");
    let swapped = install(&runner);
    let said = text(&swapped);
    assert!(swapped.status.success(), "{said}");
    assert!(!marker.exists(), "the planted binary ran: {said}");
    assert_contains(&said, "is not the build recorded with it");
    assert_contains(&said, "bugloop 0.1.0");
    assert_eq!(
        std::fs::read_to_string(&cargo_log).unwrap().lines().count(),
        2
    );
    assert_eq!(sha256(&runner.installed()), sha);
}

/// An archive cut short, its checksum made to match (whoever can edit the release; or a download
/// cut off with its checksum): extracting it is what fails, and that stops the step. Nothing is
/// installed or run, nothing is built instead.
#[test]
fn a_truncated_archive_matching_its_checksum_fails_the_install_and_runs_nothing() {
    let served = served_release();
    let archive = &served.archive;
    let bytes = std::fs::read(archive).unwrap();
    std::fs::write(archive, &bytes[..bytes.len() / 2]).unwrap();
    let name = archive.file_name().unwrap().to_str().unwrap();
    let checksum = format!("{}  {name}\n", sha256(archive));
    std::fs::write(archive.with_file_name(format!("{name}.sha256")), checksum).unwrap();
    let Refused { runner, said, .. } = install_refused(
        &served,
        TAG_SOURCE,
        "is not a whole archive (truncated or corrupt)",
    );
    assert_contains(&said, "nothing was installed or run");
    assert!(!said.contains("bugloop 0.1.0"), "{said}");
    assert_eq!(runner.outputs(), "");
    assert_eq!(
        std::fs::read_to_string(runner.temp.path().join("github_path")).unwrap(),
        ""
    );
}

/// A `gh` in the workspace, or first on the path, never verifies anything and never sees the
/// token: only the runner's own at its system path does, and the token reaches it alone (a `tar`
/// first on the path, run, does not see it). One in the workspace named as the system's is not
/// taken either.
#[test]
fn only_the_runners_own_gh_verifies_and_only_it_gets_the_token() {
    // On a runner the step's own empty value wins over anything of the job: the default list.
    let env = &step("Install bugloop")["env"];
    assert_eq!(env["INSTALL_SYSTEM_GH"].as_str(), Some(""));
    let served = served_release();
    let mut runner = Runner::new("v0.1.0");
    let (_tools, _, gh_log) = tools(&mut runner, TAG_SOURCE);
    let workspace = tempfile::tempdir().unwrap();
    let marker = runner.temp.path().join("planted-ran");
    let tar = Command::new("sh")
        .args(["-c", "command -v tar"])
        .output()
        .unwrap();
    let tar = String::from_utf8(tar.stdout).unwrap();
    planted(&workspace.path().join("gh"), &marker, "exit 0");
    planted(&workspace.path().join("bin/gh"), &marker, "exit 0");
    planted(
        &workspace.path().join("bin/tar"),
        &marker,
        &format!("exec {} \"$@\"", tar.trim()),
    );
    runner.path = format!("{}/bin:{}", workspace.path().display(), runner.path);
    let env = vec![
        ("BUGLOOP_RELEASES_URL", served.url),
        ("GITHUB_WORKSPACE", workspace.path().display().to_string()),
    ];
    let installed = runner.run("Install bugloop", workspace.path(), &env);
    let said = text(&installed);
    assert!(installed.status.success(), "{said}");
    assert_contains(&said, "build provenance verified");
    assert!(gh_log.exists(), "the runner's gh was asked");
    let token = std::fs::read_to_string(gh_log.with_file_name("gh.token")).unwrap();
    assert_eq!(token, format!("{TOKEN}\n"));
    let ran = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(!ran.contains("/gh ran"), "a planted gh ran: {ran}");
    assert_contains(&ran, "/bin/tar ran, token=\n");
    assert!(!ran.contains(TOKEN), "{ran}");

    // Named as the system's (only a test can): still not taken from the workspace.
    runner.system_gh = workspace.path().join("gh");
    let refused = runner.run("Install bugloop", workspace.path(), &env);
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert_contains(&said, "it is in the workspace");
    let ran = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(!ran.contains("/gh ran"), "a planted gh ran: {ran}");
    assert!(!runner.installed().exists());
}

/// Without a `gh` of the runner's own, a release's provenance cannot be verified: the install
/// fails unless the workflow accepts that (`allow-unverified-provenance: "true"`), and then it
/// installs the release checked against its checksum alone, with a warning.
#[test]
fn without_the_runners_gh_a_release_installs_only_if_the_workflow_accepts_it() {
    let served = served_release();
    let mut runner = Runner::new("v0.1.0");
    let (_tools, cargo_log, gh_log) = tools(&mut runner, TAG_SOURCE);
    runner.system_gh = runner.temp.path().join("no-gh-here/gh");
    let dir = tempfile::tempdir().unwrap();
    let install = |runner: &Runner| runner.install(dir.path(), &served.url);
    let refused = install(&runner);
    let said = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{said}");
    assert_contains(&said, "::error");
    assert_contains(&said, "allow-unverified-provenance");
    assert_contains(&said, "Nothing was installed or run");
    assert!(!runner.installed().exists());
    assert!(!gh_log.exists(), "the gh on the path is not asked");

    runner
        .context
        .insert("inputs.allow-unverified-provenance", "true".to_owned());
    let accepted = install(&runner);
    let said = text(&accepted);
    assert!(accepted.status.success(), "{said}");
    assert_contains(&said, "::warning");
    assert_contains(&said, "was not verified");
    assert_contains(&said, "installed release v0.1.0");
    assert!(!cargo_log.exists());
    release_sha256(&runner);
}
