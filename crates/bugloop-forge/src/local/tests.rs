//! Unit tests of the local forge.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use bugloop_domain::finding::FindingId;
use bugloop_domain::marker::MarkerSyntax;

use super::*;
use crate::Upsert;
use bugloop_git::{HeadState, Selection};
use bugloop_testkit::{TestRepo, git};

fn repo() -> TestRepo {
    let repo = TestRepo::init("main");
    repo.git(&["config", "user.name", "Dev"]);
    repo.write("a.txt", "one\ntwo\n");
    repo.commit("first");
    repo.branch("feature");
    repo.write("a.txt", "one\nTWO\n");
    repo.commit("second");
    repo
}

fn text(diff: &[u8]) -> String {
    String::from_utf8_lossy(diff).into_owned()
}

#[test]
fn the_branch_against_its_merge_base_by_default() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let change = g.select(&Selection::Branch).unwrap();
    assert_eq!(change.key.0, "branch:feature");
    assert!(
        change.description.starts_with("feature against main"),
        "{}",
        change.description
    );
    assert!(text(&change.diff).contains("+TWO"));
    assert!(matches!(change.head, HeadState::Commit(_)));
    // On main itself there is nothing to review.
    git(dir.path(), &["switch", "-q", "main"]);
    assert!(g.select(&Selection::Branch).unwrap().diff.is_empty());
}

/// The commit whose configuration a local run trusts: the merge base with the default branch.
#[test]
fn the_trusted_base_is_the_merge_base_with_the_default_branch() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let main = g.resolve("main").unwrap();
    let (label, commit) = g.trusted_base().unwrap();
    assert_eq!(commit, main);
    assert_eq!(label, format!("main@{}", &main[..7]));
    // main moves on: the branch still trusts where it started.
    git(dir.path(), &["switch", "-q", "main"]);
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "main moves"]);
    let new_main = g.resolve("main").unwrap();
    assert_eq!(g.trusted_base().unwrap().1, new_main);
    git(dir.path(), &["switch", "-q", "feature"]);
    assert_eq!(g.trusted_base().unwrap().1, main);
    // Without a default branch there is nothing to trust.
    git(dir.path(), &["branch", "-qm", "main", "trunk"]);
    assert_eq!(g.trusted_base(), None);
}

#[test]
fn staged_working_and_untracked_files() {
    let dir = repo();
    std::fs::write(dir.path().join("a.txt"), "one\nTWO\nthree\n").unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.path().join(odd), "latin-1 name\n").unwrap();
    let g = Git::open(dir.path()).unwrap();
    assert!(g.select(&Selection::Staged).unwrap().diff.is_empty());
    let working = text(&g.select(&Selection::Working).unwrap().diff);
    assert!(working.contains("+three"), "{working}");
    assert!(working.contains("+latin-1 name"), "{working}");
    git(dir.path(), &["add", "a.txt"]);
    let staged = g.select(&Selection::Staged).unwrap();
    assert_eq!(staged.head, HeadState::Index);
    assert!(text(&staged.diff).contains("+three"));
    assert!(!text(&staged.diff).contains("latin-1"));
}

#[test]
fn no_commits_and_detached_heads() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("new.txt"), "hello\n").unwrap();
    let g = Git::open(dir.path()).unwrap();
    let error = g.select(&Selection::Branch).unwrap_err().to_string();
    assert!(
        error.contains("no commits yet") && error.contains("--working"),
        "{error}"
    );
    let working = g.select(&Selection::Working).unwrap();
    assert!(text(&working.diff).contains("+hello"));
    assert_eq!(working.key.0, "branch:main");

    let dir = repo();
    git(dir.path(), &["switch", "-q", "--detach", "HEAD"]);
    let g = Git::open(dir.path()).unwrap();
    let change = g.select(&Selection::Branch).unwrap();
    assert!(change.key.0.starts_with("commit:"), "{}", change.key);
    assert!(text(&change.diff).contains("+TWO"));
}

#[test]
fn ranges_name_their_errors() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let error = g
        .select(&Selection::Range {
            base: Some("nope".into()),
            head: None,
        })
        .unwrap_err()
        .to_string();
    assert!(error.contains("--base \"nope\""), "{error}");
    let change = g
        .select(&Selection::Range {
            base: Some("main".into()),
            head: Some("feature".into()),
        })
        .unwrap();
    assert_eq!(change.key.0, "branch:feature");
    assert!(Git::open(Path::new("/")).is_err());
}

#[tokio::test]
async fn upserts_are_idempotent_and_threads_resolve() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let forge = LocalForge::open(g, "bugloop").await.unwrap();
    assert!(dir.path().join(".git/bugloop/store.db").exists());
    let change = ChangeKey("branch:feature".into());
    let markers = MarkerSyntax::new("bugloop", &[]).unwrap();
    let id = FindingId::new("off-by-one");
    let body = format!("### Off by one\n{}", markers.build(&id, false));
    let anchor = LineAnchor {
        path: "a.txt".into(),
        line: 2,
        commit: "abc".into(),
    };
    let first = forge
        .upsert_by_marker(&change, &markers, &id, &body, Some(&anchor))
        .await
        .unwrap();
    let again = forge
        .upsert_by_marker(&change, &markers, &id, &body, Some(&anchor))
        .await
        .unwrap();
    let edited = forge
        .upsert_by_marker(
            &change,
            &markers,
            &id,
            &format!("### Off by one, reworded\n{}", markers.build(&id, false)),
            Some(&anchor),
        )
        .await
        .unwrap();
    assert_eq!(
        (first, again, edited),
        (Upsert::Added, Upsert::Unchanged, Upsert::Updated)
    );
    // A look-alike written by the developer is not bugloop's comment.
    forge.developer_comment(&change, &body, None).await.unwrap();
    let issue = forge
        .upsert_by_marker(&change, &markers, &id, &body, None)
        .await
        .unwrap();
    assert_eq!(issue, Upsert::Added);
    let comments = forge.comments(&change).await.unwrap();
    assert_eq!(comments.len(), 3);
    let root = &comments[0];
    assert_eq!(root.kind, CommentKind::Review);
    let reply = forge
        .developer_comment(&change, "this is intended", Some(&root.id))
        .await
        .unwrap();
    assert_eq!(reply.author, "Dev");
    assert_eq!(reply.thread_id, root.thread_id);
    forge
        .set_thread_resolved(&change, root.thread_id.as_deref().unwrap(), true)
        .await
        .unwrap();
    let comments = forge.comments(&change).await.unwrap();
    assert!(comments[0].thread_resolved);
    assert_eq!(forge.permission("Dev").await.unwrap(), Permission::Admin);
    // bugloop edits only what it wrote.
    let error = forge
        .update_comment(&change, &reply, "rewritten")
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("not written by bugloop"),
        "{error}"
    );
    assert_eq!(forge.permission("someone").await.unwrap(), Permission::Read);
}

#[tokio::test]
async fn the_change_of_a_conversation() {
    let dir = repo();
    std::fs::write(dir.path().join("b.txt"), "new\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "third"]);
    git(dir.path(), &["mv", "b.txt", "c.txt"]);
    git(dir.path(), &["commit", "-qm", "rename"]);
    let forge = LocalForge::open(Git::open(dir.path()).unwrap(), "bugloop")
        .await
        .unwrap();
    let change = forge
        .change(&ChangeKey("branch:feature".into()))
        .await
        .unwrap();
    let files: Vec<_> = change
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        files,
        [
            ("a.txt", crate::FileStatus::Modified),
            ("c.txt", crate::FileStatus::Added)
        ]
    );
    assert!(text(&change.diff).contains("+TWO"));
    assert!(forge.change(&ChangeKey("pr:12".into())).await.is_err());
}

#[tokio::test]
async fn a_developer_named_like_the_bot_is_still_a_developer() {
    let dir = repo();
    git(dir.path(), &["config", "user.name", "bugloop"]);
    let forge = LocalForge::open(Git::open(dir.path()).unwrap(), "bugloop")
        .await
        .unwrap();
    let change = ChangeKey("branch:feature".into());
    let ours = forge
        .add_comment(&change, "by bugloop", None)
        .await
        .unwrap();
    let theirs = forge
        .developer_comment(&change, "by a person", Some(&ours.id))
        .await
        .unwrap();
    assert_eq!(
        (ours.author.as_str(), theirs.author.as_str()),
        ("bugloop", "bugloop")
    );
    assert!(ours.by_bugloop && !theirs.by_bugloop);
    let listed = forge.comments(&change).await.unwrap();
    assert_eq!(
        listed.iter().map(|c| c.by_bugloop).collect::<Vec<_>>(),
        [true, false]
    );
}
