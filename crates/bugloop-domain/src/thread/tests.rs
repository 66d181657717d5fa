//! Unit tests of the finding threads.

use super::*;

fn thread(comment: &str, id: &str) -> ThreadState {
    ThreadState {
        id: comment.into(),
        kind: CommentKind::Review,
        forge_thread_id: None,
        finding_id: Some(FindingId::new(id)),
        ..ThreadState::default()
    }
}

/// A review comment on line 1 of `a.rs`: bugloop's when `bot`, else a developer's.
fn review_comment(
    id: &str,
    body: String,
    created_at: Timestamp,
    in_reply_to: Option<&str>,
    bot: bool,
) -> Comment {
    Comment {
        id: id.to_owned(),
        author: if bot { "bugloop" } else { "dev" }.to_owned(),
        body,
        created_at,
        kind: CommentKind::Review,
        in_reply_to: in_reply_to.map(str::to_owned),
        thread_id: None,
        path: Some("a.rs".to_owned()),
        line: Some(1),
        thread_resolved: false,
        by_bugloop: bot,
    }
}

/// The body of bugloop's finding `a-bug`.
fn a_bug(markers: &MarkerSyntax) -> String {
    format!(
        "### A bug\n\n{}",
        markers.build(&FindingId::new("a-bug"), false)
    )
}

#[test]
fn threads_are_found_by_id_comment_or_unique_prefix() {
    let threads = [
        thread("7", "index-out-of-bounds-1a2b3c"),
        thread("9", "index-overflow-4d5e6f"),
        thread("12", "sql-injection-777777"),
    ];
    assert_eq!(find_thread(&threads, "sql").unwrap().id, "12");
    assert_eq!(find_thread(&threads, "9").unwrap().id, "9");
    assert_eq!(find_thread(&threads, "index-out").unwrap().id, "7");
    match find_thread(&threads, "index") {
        Err(FindThreadError::Ambiguous { matches, .. }) => assert_eq!(matches.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        find_thread(&threads, "nope").unwrap_err().to_string(),
        "no finding \"nope\" here; `bugloop findings` lists them"
    );
    assert!(find_thread(&threads, "").is_err());
}

/// A finding whose code moved (a review rewrote its state block at the new place) is where
/// the block says, not where its comment was first anchored; a block without a place
/// leaves the anchor.
#[test]
fn a_finding_is_where_its_state_block_says() {
    let markers = MarkerSyntax::default();
    let root = |block: &RmcocBlock| Comment {
        path: Some("stats.py".to_owned()),
        line: Some(6),
        ..review_comment(
            "review-1",
            crate::rmcoc::build_comment(&a_bug(&markers), block),
            Timestamp::UNIX_EPOCH,
            None,
            true,
        )
    };
    let mut block = RmcocBlock::new("A bug", "It breaks.", Score::saturating(8));
    let state = reconstruct(&[root(&block)], &markers);
    assert_eq!(state.threads[0].line, Some(6));
    block
        .extra
        .insert("file".into(), serde_json::json!("stats.py"));
    block.extra.insert("line".into(), serde_json::json!(8));
    let state = reconstruct(&[root(&block)], &markers);
    let thread = &state.threads[0];
    assert_eq!(
        (thread.file.as_deref(), thread.line),
        (Some("stats.py"), Some(8))
    );
}

/// Forges give whole seconds: comments of the same second are ordered by their ids' numbers,
/// not as text ("10" after "9"), whatever order the forge listed them in.
#[test]
fn comments_of_one_second_are_ordered_by_id_number() {
    let at = Timestamp::UNIX_EPOCH;
    let comment = |id: &str, body: &str, reply_to: Option<&str>, bot: bool| {
        review_comment(id, body.to_owned(), at, reply_to, bot)
    };
    let markers = MarkerSyntax::default();
    let root_body = a_bug(&markers);
    let listed = [
        comment("review-10", "second", Some("review-8"), false),
        comment("review-9", "first", Some("review-8"), false),
        comment("review-8", &root_body, None, true),
    ];
    let state = reconstruct(&listed, &markers);
    let replies: Vec<&str> = state.threads[0]
        .developer_replies
        .iter()
        .map(|r| r.body.as_str())
        .collect();
    assert_eq!(replies, ["first", "second"]);
}

/// A finding resolved when its code changed and raised again is not resolved again by a
/// copy of the earlier resolving reply (which, signed, would verify in the same thread).
#[test]
fn a_replayed_status_reply_changes_nothing() {
    let markers = MarkerSyntax::default();
    let at = |s: i64| Timestamp::from_second(s).unwrap();
    let comment = |id: &str, body: String, second: i64, reply_to: Option<&str>| {
        review_comment(id, body, at(second), reply_to, true)
    };
    let root = a_bug(&markers);
    let fixed = format!(
        "fixed in 1a2b3c4\n\n{}",
        markers.reply_tag(ReplyKind::Fixed)
    );
    let again = format!(
        "raised again\n\n{}",
        markers.reply_tag(ReplyKind::Status(ThreadStatus::Pending))
    );
    let mut listed = vec![
        comment("1", root, 1, None),
        comment("2", fixed.clone(), 2, Some("1")),
        comment("3", again, 3, Some("1")),
    ];
    let state = reconstruct(&listed, &markers);
    assert_eq!(state.threads[0].status, ThreadStatus::Pending);
    listed.push(comment("4", fixed, 4, Some("1")));
    let state = reconstruct(&listed, &markers);
    assert_eq!(state.threads[0].status, ThreadStatus::Pending);
    assert!(
        state.problems.iter().any(|p| p.comment_id == "4"),
        "{:?}",
        state.problems
    );
}

/// Only `bugloop fix`'s own resolution names the commit a later review checks: its reason
/// starts with the phrase and a full commit id; a short id or the phrase elsewhere is not one.
#[test]
fn a_fix_resolution_names_its_full_commit() {
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let body = format!("**Resolved**\n\n{}", fix_resolution(sha, true));
    assert_eq!(fix_commit(&body).as_deref(), Some(sha));
    assert_eq!(
        fix_commit("**Resolved**\n\nFixed in commit 0123456 (`bugloop fix`)."),
        None
    );
    assert_eq!(
        fix_commit(&format!(
            "**Resolved**\n\nThe model says {}",
            fix_resolution(sha, true)
        )),
        None
    );
}
