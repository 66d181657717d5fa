//! Signed state: where the bot's login is shared (every workflow of a repository writes as
//! `github-actions[bot]`), a comment counts as bugloop's only when its signature verifies. A
//! look-alike written under the login by something else changes nothing and is counted.

use std::sync::Arc;

use bugloop_domain::finding::FindingId;
use bugloop_domain::marker::MarkerSyntax;
use bugloop_domain::thread::{ThreadStatus, reconstruct};
use bugloop_forge::Forge;
use bugloop_forge::local::LocalForge;
use bugloop_forge::signing::{SigningForge, StateKey};
use bugloop_git::{Git, Selection};
use bugloop_loops::comment_bodies::{ResolvedBy, resolve_thread};

use crate::support::{self, Repo, off_by_one, review_on, session};

/// Reviews (through `forge`), then another workflow under the bot's login (writing straight to
/// the store, unsigned) does exactly what bugloop does to resolve the finding, then bugloop
/// reviews again. Returns the finding's status and the look-alikes ignored, as `forge` reads
/// them after the impostor and after the second review.
async fn impostor_resolves(signing: bool) -> [(Option<ThreadStatus>, usize); 2] {
    let repo = Repo::with_feature();
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    let local = Arc::new(
        LocalForge::open(Git::open(repo.path()).unwrap(), "bugloop")
            .await
            .unwrap(),
    );
    let key = StateKey::new(b"a key of 32 bytes from a secret!".to_vec()).unwrap();
    let signed = SigningForge::new(local.clone(), key);
    let forge: &dyn Forge = if signing { &signed } else { &*local };
    let script = || session(vec![off_by_one(line)], vec![]);
    let (report, _) = review_on(forge, &repo, support::config(), Arc::new(script()), false).await;
    let id = FindingId::new(report.findings[0].finding.id.as_str());
    let change = Git::open(repo.path())
        .unwrap()
        .select(&Selection::Branch)
        .unwrap()
        .key;
    let markers = MarkerSyntax::default();
    let before = reconstruct(&forge.comments(&change).await.unwrap(), &markers);
    assert_eq!(before.by_finding()[&id].status, ThreadStatus::Pending);

    let comments = forge.comments(&change).await.unwrap();
    let root = comments
        .iter()
        .find(|c| c.in_reply_to.is_none() && c.line.is_some())
        .unwrap();
    resolve_thread(
        &*local,
        &change,
        &markers,
        root,
        (&id, ResolvedBy::Code),
        "fixed, trust me",
    )
    .await
    .unwrap();
    let read = || async {
        let state = reconstruct(&forge.comments(&change).await.unwrap(), &markers);
        (
            state.by_finding().get(&id).map(|t| t.status),
            state.ignored_untrusted,
        )
    };
    let after_impostor = read().await;
    // The next review (in full: the code did not change) finds the problem again.
    review_on(forge, &repo, support::config(), Arc::new(script()), true).await;
    [after_impostor, read().await]
}

#[tokio::test]
async fn a_look_alike_under_the_bots_login_without_the_signature_changes_nothing() {
    // Unsigned, the shared login is all it takes: resolved, and it stays resolved.
    let [unsigned, _] = impostor_resolves(false).await;
    assert_eq!(unsigned, (Some(ThreadStatus::Resolved), 0));
    // Signed: the look-alike reply and the edited root are not bugloop's, and are counted; the
    // finding is not resolved, and the next review tracks it again under a comment of its own.
    let [after_impostor, after_review] = impostor_resolves(true).await;
    assert_ne!(after_impostor.0, Some(ThreadStatus::Resolved));
    assert!(after_impostor.1 >= 1, "{after_impostor:?}");
    assert_eq!(
        after_review.0,
        Some(ThreadStatus::Pending),
        "{after_review:?}"
    );
}
