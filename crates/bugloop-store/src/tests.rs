//! Unit tests of the store.

use super::*;

fn new(author: &str, body: &str) -> NewComment {
    NewComment {
        author: author.into(),
        body: body.into(),
        ..NewComment::default()
    }
}

/// A reply by `author` in the thread of the comment `parent`.
fn reply(parent: i64, author: &str, body: &str) -> NewComment {
    NewComment {
        in_reply_to: Some(parent),
        ..new(author, body)
    }
}

#[tokio::test]
async fn comments_threads_and_flags_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bugloop/store.db");
    let store = Store::open(&path).await.unwrap();
    let root = store
        .add(
            "branch:main",
            NewComment {
                anchor: Some(Anchor {
                    path: "src/a.rs".into(),
                    line: 3,
                    commit: "abc".into(),
                }),
                ..new("bugloop", "finding")
            },
        )
        .await
        .unwrap();
    assert_eq!(root.kind, StoredKind::Review);
    assert_eq!(root.thread_id, root.id);
    let reply = store
        .add("branch:main", reply(root.id, "dev", "not a bug"))
        .await
        .unwrap();
    assert_eq!(reply.thread_id, root.id);
    assert_eq!(reply.kind, StoredKind::Review);
    assert_eq!(reply.path.as_deref(), Some("src/a.rs"));
    store
        .add("branch:other", new("bugloop", "x"))
        .await
        .unwrap();
    store
        .update_body("branch:main", root.id, "edited")
        .await
        .unwrap();
    store
        .set_resolved("branch:main", root.id, true)
        .await
        .unwrap();
    store.close().await;

    // Reopening reads the same conversation.
    let store = Store::open(&path).await.unwrap();
    let comments = store.comments("branch:main").await.unwrap();
    assert_eq!(comments.len(), 2);
    assert_eq!(comments[0].body, "edited");
    assert!(comments.iter().all(|c| c.thread_resolved));
    assert_eq!(store.changes().await.unwrap().len(), 2);
}

#[tokio::test]
async fn foreign_ids_are_refused() {
    let store = Store::in_memory().await.unwrap();
    let root = store.add("a", new("bugloop", "x")).await.unwrap();
    let error = store
        .add("b", reply(root.id, "dev", "y"))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not part of the conversation of b"),
        "{error}"
    );
    assert!(store.update_body("b", root.id, "z").await.is_err());
    assert!(store.set_resolved("b", root.id, true).await.is_err());
}

#[tokio::test]
async fn a_damaged_file_is_reported_with_the_way_out_and_can_be_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    std::fs::write(
        &path,
        b"this is not a database, it is a text file\n".repeat(200),
    )
    .unwrap();
    let error = Store::open(&path).await.unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    assert!(error.to_string().contains("bugloop store reset"), "{error}");
    let moved = Store::quarantine(&path).unwrap();
    assert!(moved.exists() && !path.exists());
    let store = Store::open(&path).await.unwrap();
    assert!(store.comments("x").await.unwrap().is_empty());
}

/// `.git/bugloop` a file (a user's test): said as that, not as sqlx's "File exists".
#[tokio::test]
async fn a_store_directory_that_is_a_file_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bugloop"), "").unwrap();
    let error = Store::open(&dir.path().join("bugloop/store.db"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, StoreError::NotADirectory { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("is not a directory"), "{error}");
}

/// A store at `path` made by bugloop, then changed by `sql` as a tool outside bugloop could.
async fn altered(path: &Path, sql: &str) {
    let store = Store::open(path).await.unwrap();
    sqlx::raw_sql(sql).execute(&store.pool).await.unwrap();
    store.close().await;
}

#[tokio::test]
async fn a_database_of_someone_else_is_not_taken_for_ours() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    altered(&path, "DROP TABLE threads").await;
    let error = Store::open(&path).await.unwrap_err();
    assert!(error.to_string().contains("tables are missing"), "{error}");
}

#[tokio::test]
async fn who_wrote_a_comment_is_recorded_not_inferred_and_older_rows_say_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    // A store as the first schema wrote it, with one comment in it.
    altered(
        &path,
        "DROP TABLE item_assignees; DROP TABLE checks; DROP TABLE reviewers; DROP TABLE item_reviews; \
         DROP TABLE solve_transitions; DROP TABLE item_labels; DROP TABLE items; \
         ALTER TABLE comments DROP COLUMN by_bugloop; PRAGMA user_version = 1; \
         INSERT INTO comments (change, kind, author, body, created_at, updated_at, thread_id) \
         VALUES ('b', 'issue', 'bugloop', 'old', '2026-01-01T00:00:00Z', \
         '2026-01-01T00:00:00Z', 1);",
    )
    .await;
    let store = Store::open(&path).await.unwrap();
    let old = &store.comments("b").await.unwrap()[0];
    assert_eq!(old.by_bugloop, None);
    let by_us = store
        .add(
            "b",
            NewComment {
                by_bugloop: true,
                ..new("bugloop", "ours")
            },
        )
        .await
        .unwrap();
    // A person may call themself anything; the flag says who wrote it.
    let by_person = store.add("b", new("bugloop", "theirs")).await.unwrap();
    assert_eq!(by_us.by_bugloop, Some(true));
    assert_eq!(by_person.by_bugloop, Some(false));
    // The later migrations ran too: issues can be filed in the upgraded store.
    assert_eq!(
        store
            .file_issue(NewIssue {
                title: "t".into(),
                ..NewIssue::default()
            })
            .await
            .unwrap()
            .number,
        1
    );
    // And migration 0005: checks are recorded on commits.
    store
        .set_check("abc", "ci", CheckState::Pending, "")
        .await
        .unwrap();
    store
        .set_check("abc", "ci", CheckState::Passed, "")
        .await
        .unwrap();
    let checks = store.checks("abc").await.unwrap();
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].state, CheckState::Passed);
}

/// Commands run at the same time (two terminals, an editor's hook), each with its own store on
/// the same file: every one's comment is stored. A write that began deferred and read first
/// was answered busy at once when another had written meanwhile, and its comment was lost.
#[tokio::test]
async fn writers_at_once_each_store_their_comment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let root = Store::open(&path)
        .await
        .unwrap()
        .add("change", new("bugloop", "a finding"))
        .await
        .unwrap()
        .id;
    let mut stores = Vec::new();
    for _ in 0..8 {
        stores.push(Store::open(&path).await.unwrap());
    }
    let writes = stores.iter().enumerate().map(|(n, store)| async move {
        for round in 0..5 {
            // A reply reads its parent's thread before it writes.
            let reply = reply(root, "dev", &format!("reply {n}.{round}"));
            store.add("change", reply).await.unwrap();
        }
    });
    futures_util::future::join_all(writes).await;
    let stored = Store::open(&path)
        .await
        .unwrap()
        .comments("change")
        .await
        .unwrap();
    assert_eq!(stored.len(), 41);
}

/// A store with a row in every table that has a reader: an issue with a transition, a change
/// request with a review, a comment and a check. Returns the issue's and the request's numbers.
async fn with_every_table() -> (Store, i64, i64) {
    let store = Store::in_memory().await.unwrap();
    let issue = store
        .file_issue(NewIssue {
            title: "t".into(),
            author: "a".into(),
            ..NewIssue::default()
        })
        .await
        .unwrap();
    let request = store
        .open_change_request(NewChangeRequest {
            title: "t".into(),
            branch: "fix".into(),
            base: "main".into(),
            ..NewChangeRequest::default()
        })
        .await
        .unwrap();
    store.add("c", new("a", "hello")).await.unwrap();
    store
        .add_review(request.number, "r", ReviewDecision::Approved, "ok", "abc")
        .await
        .unwrap();
    store
        .set_check("abc", "ci", CheckState::Passed, "")
        .await
        .unwrap();
    store
        .record_transition(issue.number, None, "queued", "r", "{}")
        .await
        .unwrap();
    (store, issue.number, request.number)
}

/// A value no reader knows, in any table, is the store being corrupt, said with its table, column
/// and value (each reader used to say it its own way, some as a failed query).
#[tokio::test]
async fn a_value_that_does_not_read_back_names_its_table_column_and_value() {
    let cases = [
        (
            "UPDATE items SET state = 'lost'",
            r#"items.state holds "lost""#,
        ),
        ("UPDATE items SET kind = 'bug'", r#"items.kind holds "bug""#),
        (
            "UPDATE comments SET kind = 'note'",
            r#"comments.kind holds "note""#,
        ),
        (
            "UPDATE comments SET created_at = 'x'",
            r#"comments.created_at holds "x""#,
        ),
        (
            "UPDATE comments SET updated_at = 'x'",
            r#"comments.last holds "x""#,
        ),
        (
            "UPDATE item_reviews SET state = 'meh'",
            r#"item_reviews.state holds "meh""#,
        ),
        ("UPDATE checks SET at = 'soon'", r#"checks.at holds "soon""#),
        (
            "UPDATE solve_transitions SET at = 'then'",
            r#"solve_transitions.at holds "then""#,
        ),
        (
            "UPDATE solve_transitions SET reason = x'00'",
            "solve_transitions.reason: ",
        ),
    ];
    for (damage, said) in cases {
        let (store, issue, request) = with_every_table().await;
        // Damage the table as a tool outside bugloop could, past the schema's CHECKs.
        sqlx::raw_sql(&format!("PRAGMA ignore_check_constraints = ON; {damage}"))
            .execute(&store.pool)
            .await
            .unwrap();
        let errors = [
            store.items(ItemKind::Issue, false).await.err(),
            store.item(request).await.err(),
            store.comments("c").await.err(),
            store.changes().await.err(),
            store.reviews(request).await.err(),
            store.checks("abc").await.err(),
            store.solve_history(issue).await.err(),
        ];
        let error = errors
            .iter()
            .flatten()
            .find(|e| e.to_string().contains(said))
            .unwrap_or_else(|| panic!("{damage}: no reader said {said:?}: {errors:?}"));
        assert!(matches!(error, StoreError::Corrupt { .. }), "{error:?}");
    }
}
