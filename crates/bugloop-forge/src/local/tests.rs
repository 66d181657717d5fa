//! Unit tests of the local forge.

use bugloop_domain::finding::FindingId;
use bugloop_domain::marker::MarkerSyntax;

use super::*;
use crate::Upsert;
use bugloop_testkit::{TestRepo, git};

fn repo() -> TestRepo {
    let repo = TestRepo::with_feature_branch("a.txt", "one\ntwo\n", "one\nTWO\n");
    // The developer's name, as the local forge reads it.
    repo.git(&["config", "user.name", "Dev"]);
    repo
}

/// The off-by-one finding on line 2 of `a.txt`: its id, its comment's body and its anchor.
fn off_by_one(markers: &MarkerSyntax) -> (FindingId, String, LineAnchor) {
    let id = FindingId::new("off-by-one");
    let body = format!("### Off by one\n{}", markers.build(&id, false));
    let anchor = LineAnchor {
        path: "a.txt".into(),
        line: 2,
        end_line: None,
        commit: "abc".into(),
    };
    (id, body, anchor)
}

#[tokio::test]
async fn upserts_are_idempotent_and_threads_resolve() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let forge = LocalForge::open(g, "bugloop").await.unwrap();
    assert!(dir.path().join(".git/bugloop/store.db").exists());
    let change = ChangeKey("branch:feature".into());
    let markers = MarkerSyntax::new("bugloop", &[]).unwrap();
    let (id, body, anchor) = upsert_off_by_one_twice(&forge, &change, &markers).await;
    let edited = upsert(
        &forge,
        &change,
        &markers,
        &id,
        &format!("### Off by one, reworded\n{}", markers.build(&id, false)),
        Some(&anchor),
    )
    .await
    .unwrap();
    assert_eq!(edited, Upsert::Updated);
    // A look-alike written by the developer is not bugloop's comment.
    forge.developer_comment(&change, &body, None).await.unwrap();
    let issue = upsert(&forge, &change, &markers, &id, &body, None)
        .await
        .unwrap();
    assert!(issue.added(), "{issue:?}");
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
    assert!(String::from_utf8_lossy(&change.diff).contains("+TWO"));
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

#[tokio::test]
async fn a_recording_forge_writes_nothing_and_shows_the_run_what_it_would_have_written() {
    use crate::recording::{RecordedWrite, RecordingForge};
    let dir = repo();
    let forge = LocalForge::open(Git::open(dir.path()).unwrap(), "bugloop")
        .await
        .unwrap();
    let change = ChangeKey("branch:feature".into());
    let markers = MarkerSyntax::new("bugloop", &[]).unwrap();
    let kept = FindingId::new("kept");
    let kept_body = format!("### Kept\n{}", markers.build(&kept, false));
    upsert(&forge, &change, &markers, &kept, &kept_body, None)
        .await
        .unwrap();
    let before = forge.comments(&change).await.unwrap();

    let dry = RecordingForge::new(&forge);
    assert!(forge.publishes() && !dry.publishes());
    // The same upserts as a real run: added once, then unchanged (the run sees its own write).
    let (_, body, _) = upsert_off_by_one_twice(&dry, &change, &markers).await;
    let reworded = format!("### Kept, reworded\n{}", markers.build(&kept, true));
    let updated = upsert(&dry, &change, &markers, &kept, &reworded, None)
        .await
        .unwrap();
    assert_eq!(updated, Upsert::Updated);
    let seen = dry.comments(&change).await.unwrap();
    let added = seen.iter().find(|c| c.body == body).unwrap();
    assert!(added.by_bugloop && added.kind == CommentKind::Review);
    assert_eq!(added.path.as_deref(), Some("a.txt"));
    let reply = dry.reply(&change, added, "a reply").await.unwrap();
    assert_eq!(reply.in_reply_to.as_deref(), Some(added.id.as_str()));
    assert_eq!(reply.thread_id, added.thread_id);
    dry.set_thread_resolved(&change, added.thread_id.as_deref().unwrap(), true)
        .await
        .unwrap();
    let seen = dry.comments(&change).await.unwrap();
    assert_eq!(seen.len(), before.len() + 2);
    assert!(seen.iter().any(|c| c.body == reworded));
    assert!(
        seen.iter()
            .filter(|c| c.thread_id == added.thread_id)
            .all(|c| c.thread_resolved)
    );
    // Another conversation sees none of it.
    let other = ChangeKey("branch:other".into());
    assert!(dry.comments(&other).await.unwrap().is_empty());

    // Nothing reached the store; the record lists every write in order.
    assert_eq!(forge.comments(&change).await.unwrap(), before);
    let kinds: Vec<&str> = dry
        .writes()
        .iter()
        .map(|w| match w {
            RecordedWrite::AddComment { .. } => "add",
            RecordedWrite::UpdateComment { .. } => "update",
            RecordedWrite::Reply { .. } => "reply",
            RecordedWrite::SetThreadResolved { .. } => "resolve",
            RecordedWrite::SetDescription { .. } => "describe",
        })
        .collect();
    assert_eq!(kinds, ["add", "update", "reply", "resolve"]);
}

/// The off-by-one finding upserted twice, as two runs publish it: the first adds its comment,
/// the second finds it unchanged. Its id, body and anchor.
async fn upsert_off_by_one_twice(
    forge: &dyn Forge,
    change: &ChangeKey,
    markers: &MarkerSyntax,
) -> (FindingId, String, LineAnchor) {
    let (id, body, anchor) = off_by_one(markers);
    let first = upsert(forge, change, markers, &id, &body, Some(&anchor))
        .await
        .unwrap();
    assert!(first.added(), "{first:?}");
    let again = upsert(forge, change, markers, &id, &body, Some(&anchor))
        .await
        .unwrap();
    assert_eq!(again, Upsert::Unchanged);
    (id, body, anchor)
}

/// An upsert as a run makes it: after reading the conversation.
async fn upsert(
    forge: &dyn Forge,
    change: &ChangeKey,
    markers: &MarkerSyntax,
    id: &FindingId,
    body: &str,
    anchor: Option<&LineAnchor>,
) -> Result<Upsert, ForgeError> {
    let known = forge.comments(change).await?;
    forge
        .upsert_by_marker(change, markers, id, body, anchor, &known)
        .await
}

/// The solve pipeline moves its own branches, never one checked out in a working tree.
#[tokio::test]
async fn a_checked_out_branch_is_not_moved_by_the_tracker() {
    use crate::tracker::Tracker;
    let repo = TestRepo::init("main");
    repo.write("a.txt", "one\n");
    repo.commit("one");
    let first = repo.head();
    repo.branch("bugloop/1-x");
    repo.write("a.txt", "two\n");
    repo.commit("two");
    let second = repo.head();
    let forge = LocalForge::with_store(
        Git::open(repo.path()).unwrap(),
        Store::in_memory().await.unwrap(),
        "bugloop",
    );
    let refused = forge
        .publish_branch("bugloop/1-x", &first, Some(&second))
        .await;
    assert!(
        matches!(&refused, Err(ForgeError::Invalid(m)) if m.contains("checked out")),
        "{refused:?}"
    );
    repo.git(&["switch", "-q", "main"]);
    forge
        .publish_branch("bugloop/1-x", &first, Some(&second))
        .await
        .unwrap();
    assert_eq!(
        forge.branch_head("bugloop/1-x").await.unwrap().as_deref(),
        Some(first.as_str())
    );
}
