//! A branch's `.bugloop/config.yml` that does not read: the review goes on with the trusted
//! configuration and says so as a finding (what the file changes cannot be listed), and
//! `config check` never reads it through a link.

use super::*;

/// The branch commits a valid file that sets a command, with a `.gitattributes` that checks it
/// out as UTF-16: on disk it does not read, in the commit it runs once merged. The review
/// publishes a finding on the file rather than passing without a word.
#[test]
fn a_branch_file_that_does_not_read_is_a_finding() {
    let repo = repo();
    std::fs::create_dir_all(repo.path().join(".bugloop")).unwrap();
    repo.write(
        ".bugloop/config.yml",
        "fix:\n  verify_commands: [touch /tmp/bugloop-pwned]\n",
    );
    repo.commit("configure");
    repo.write(
        ".gitattributes",
        ".bugloop/config.yml working-tree-encoding=UTF-16LE\n",
    );
    git(repo.path(), &["add", ".gitattributes"]);
    git(repo.path(), &["commit", "-qm", "check it out as UTF-16"]);
    git(repo.path(), &["rm", "-q", "--cached", "-r", "."]);
    git(repo.path(), &["reset", "-q", "--hard"]);
    let on_disk = std::fs::read(repo.path().join(".bugloop/config.yml")).unwrap();
    assert!(on_disk.contains(&0), "checked out as UTF-16: {on_disk:?}");
    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[]);
    let output = bugloop(
        repo.path(),
        &["review", "--model", &model, "--format", "json", "--dry-run"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_contains(
        &stderr(&output),
        "this branch's .bugloop/config.yml does not read",
    );
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "branch-changes-trusted-bugloop-configuration")
        .unwrap_or_else(|| panic!("no finding on the file: {report:#}"));
    assert_eq!(
        finding["title"],
        "This branch's .bugloop/config.yml does not read: none of it was applied"
    );
    assert_eq!(finding["category"], "security");
    assert_contains(
        finding["description"].as_str().unwrap(),
        "Why it does not read: ",
    );
}

/// `config check` on a branch whose file, or whose `.bugloop`, is a link: an error (exit 1)
/// that quotes nothing of what the link leads to.
#[test]
fn config_check_never_reads_the_branch_file_through_a_link() {
    let secret = tempfile::tempdir().unwrap();
    let target = secret.path().join("netrc");
    std::fs::write(&target, "machine github.com password ghp_CANARYCANARY\n").unwrap();
    for linked in [".bugloop/config.yml", ".bugloop"] {
        let repo = repo();
        std::fs::create_dir_all(repo.path().join(".bugloop")).unwrap();
        let link = repo.path().join(linked);
        if linked == ".bugloop" {
            std::fs::remove_dir(&link).unwrap();
            std::fs::create_dir_all(secret.path().join("dir")).unwrap();
            std::fs::copy(&target, secret.path().join("dir/config.yml")).unwrap();
            std::os::unix::fs::symlink(secret.path().join("dir"), &link).unwrap();
        } else {
            std::os::unix::fs::symlink(&target, &link).unwrap();
        }
        let output = bugloop(repo.path(), &["config", "check"]);
        let shown = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(1), "{linked}: {shown}");
        assert_contains(
            &shown,
            "is a symbolic link; bugloop reads only a regular file there",
        );
        assert!(!shown.contains("CANARY"), "{linked}: {shown}");
    }
}
