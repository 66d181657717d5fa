//! What a fix resolves: only the findings whose code its commit changed, and none a developer
//! spoke up for while it ran.

use super::*;

/// The fix resolved nothing: the report says `id` was left open because `why`.
#[track_caller]
fn assert_left_open(report: &bugloop_report::act::ActReport, id: &str, why: &str) {
    assert!(report.resolved.is_empty(), "{report:?}");
    assert!(
        report.message.contains(&format!("left open: {id}: {why}")),
        "{}",
        report.message
    );
}

/// The fix's commit changed none of its findings' code: it did not land, whatever its message
/// says.
#[track_caller]
fn assert_nothing_landed(report: &bugloop_report::act::ActReport) {
    assert!(report.landing.is_none(), "{report:?}");
    assert!(
        report
            .message
            .contains("fixes none of the findings it was asked to fix")
            && report.message.contains("nothing landed"),
        "{}",
        report.message
    );
}

/// The off-by-one and the SQL injection published on `feature`: their ids.
async fn reviewed_twice() -> (Repo, String, String) {
    let repo = Repo::with_feature();
    let index = repo.line_of("src/stats.rs", "sorted[index]");
    let query = repo.line_of("src/db.rs", "let query");
    let script = session(
        vec![off_by_one(index), support::sql_injection(query)],
        vec![],
    );
    let (report, _) = run(&repo, support::config(), script).await;
    let id = |file: &str| {
        let found = report
            .findings
            .iter()
            .find(|f| f.finding.file.as_deref() == Some(file));
        found.unwrap().finding.id.as_str().to_owned()
    };
    let ids = (id("src/stats.rs"), id("src/db.rs"));
    (repo, ids.0, ids.1)
}

/// The developer rewrites the percentile's lookup (`sorted[index]`) as `new_text` by hand and
/// commits it with `message`.
fn rewrite_the_lookup(repo: &Repo, new_text: &str, message: &str) {
    let stats = repo
        .read("src/stats.rs")
        .replace("    sorted[index]\n", new_text);
    repo.write("src/stats.rs", &stats);
    repo.commit(message);
}

/// A fix asked to fix two findings whose commit changes the code of one resolves that one
/// only: the other stays open, told so in its thread and in the report. Without verify
/// commands the resolution says the fix is unverified, as the report does.
#[tokio::test]
async fn a_fix_resolves_only_the_findings_whose_code_its_commit_changed() {
    let (repo, index, query) = reviewed_twice().await;
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped.", usage())]);
    let report = fix_all(&repo, script).await;
    assert!(report.build.as_ref().unwrap().unverified(), "{report:?}");
    assert_eq!(report.resolved, std::slice::from_ref(&index));
    assert!(
        report.message.contains(&format!(
            "(left open: {query}: the fix did not change the code it quotes in src/db.rs)"
        )),
        "{}",
        report.message
    );
    let comments = support::conversation(&repo).await;
    assert!(comments.iter().any(|c| c.body.contains(
        "Not fixed: the fix did not change the code it quotes in src/db.rs, so this stays open."
    )));
    assert!(comments.iter().any(|c| {
        c.body
            .contains("(`bugloop fix`, unverified: no verify command is configured).")
    }));
    // A review after it: the SQL injection is still open, as nothing changed its code.
    let (review, _) = run(&repo, support::config(), session(vec![], vec![])).await;
    let status = |id: &str| review.tracked.iter().find(|t| t.id == id).unwrap().status;
    assert_eq!(status(&index), ThreadStatus::Resolved);
    assert_eq!(status(&query), ThreadStatus::Pending);
}

/// A developer who writes in a finding's thread while its fix runs ("wait, callers rely on
/// this") is not overruled: the fix lands, and the finding stays open for them.
#[tokio::test]
async fn a_word_written_while_the_fix_ran_keeps_its_finding_open() {
    let (repo, id) = reviewed().await;
    let script = ScriptedProvider::new([]);
    let root = repo.path().to_path_buf();
    let wanted = id.clone();
    script.push_fn(move |_| {
        // Written from another process's point of view: its own runtime, its own store handle.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let git = bugloop_git::Git::open(&root).unwrap();
                let change = git.conversation_key();
                let forge = LocalForge::open(git, "bugloop").await.unwrap();
                let comments = forge.comments(&change).await.unwrap();
                let finding = comments.iter().find(|c| c.body.contains(&wanted)).unwrap();
                forge
                    .developer_comment(&change, "Wait, callers rely on this.", Some(&finding.id))
                    .await
                    .unwrap();
            });
        })
        .join()
        .unwrap();
        Ok(clamp_edit())
    });
    script.push(text_reply("Clamped.", usage()));
    let report = fix_all(&repo, script).await;
    assert_left_open(
        &report,
        &id,
        "a developer wrote in its thread while the fix ran",
    );
    let comments = support::conversation(&repo).await;
    assert!(!comments.iter().any(|c| c.body.contains("Fixed in commit")));
}

/// A finding whose quoted code a developer rewrote by hand before the fix ("that did not fix
/// it": the reply sends it to the model) is not resolved by a commit that changed other code of
/// its file: what the fix did cannot be told to have fixed it, and the next review rechecks it.
#[tokio::test]
async fn a_quote_gone_before_the_fix_is_not_resolved_by_it() {
    let (repo, index, query) = reviewed_twice().await;
    rewrite_the_lookup(
        &repo,
        "    let at = index;\n    sorted[at]\n",
        "rename the index",
    );
    let average = stats_edit(
        "    sum / values.len() as f64\n",
        "    sum / values.len().max(1) as f64\n",
    );
    let script = ScriptedProvider::new([average, text_reply("Guarded the mean.", usage())]);
    let report = with_env(&repo, support::config(), script, async |env| {
        reply_in_thread(env, &index, "That did not fix it.").await;
        let change = env.git.conversation_key();
        act::fix(env, &change, &Targets::Ids(vec![index.clone()]), None)
            .await
            .unwrap()
    })
    .await;
    assert_nothing_landed(&report);
    assert_left_open(
        &report,
        &index,
        "the code it quotes was no longer in src/stats.rs when the fix started; the next review \
         rechecks it",
    );
    let _ = query;
}

/// A fix that moves a file elsewhere has not fixed the findings in it: their code is looked for
/// where it went, and found unchanged.
#[tokio::test]
async fn a_renamed_file_is_not_a_fix() {
    let (repo, id) = reviewed().await;
    let text = repo.read("src/stats.rs");
    let removed: String = text.lines().map(|l| format!("-{l}\n")).collect();
    let delete = format!(
        "--- a/src/stats.rs\n+++ /dev/null\n@@ -1,{} +0,0 @@\n{removed}",
        text.lines().count()
    );
    let moved = tool_reply(
        &[
            (
                "write_file",
                json!({"path": "src/statistics.rs", "content": text}),
            ),
            ("apply_patch", json!({"patch": delete})),
        ],
        usage(),
    );
    let script = ScriptedProvider::new([moved, text_reply("Moved the module.", usage())]);
    let report = fix_all(&repo, script).await;
    assert_nothing_landed(&report);
    assert_left_open(
        &report,
        &id,
        "the fix did not change the code it quotes in src/stats.rs",
    );
}

/// The branch's own `.gitattributes` cannot hide what a fix changed (`-diff` would blank its
/// hunks): a guard written just above the quoted line, which stays, still resolves its finding.
#[tokio::test]
async fn the_branchs_attributes_do_not_hide_a_fix() {
    let (repo, id) = reviewed().await;
    repo.write(".gitattributes", "*.rs -diff\n");
    repo.commit("attributes");
    let guard = stats_edit(
        "    sorted[index]\n",
        "    let index = index.min(sorted.len() - 1);\n    sorted[index]\n",
    );
    let script = ScriptedProvider::new([guard, text_reply("Clamped.", usage())]);
    let report = fix_all(&repo, script).await;
    assert_eq!(report.resolved, std::slice::from_ref(&id), "{report:?}");
}

/// A proven finding counts as fixed by a commit only where the commit had to pass its test (a
/// fix runs it); a commit made without it (a solve round's) must change its code like any.
#[tokio::test]
async fn a_proof_stands_for_a_change_only_where_its_test_ran() {
    let (repo, _, query) = reviewed_twice().await;
    rewrite_the_lookup(
        &repo,
        "    sorted[index.min(sorted.len() - 1)]\n",
        "clamp the index",
    );
    let commit = git(repo.path(), &["rev-parse", "HEAD"]);
    let missed = with_env(
        &repo,
        support::config(),
        ScriptedProvider::new([]),
        async |env| {
            let (_, state) = env.conversation(&env.git.conversation_key()).await.unwrap();
            let mut thread = state
                .threads
                .iter()
                .find(|t| t.finding_id.as_ref().is_some_and(|id| id.as_str() == query))
                .unwrap()
                .clone();
            let test = bugloop_domain::proof::ProofTest {
                path: "tests/proof_query.rs".to_owned(),
                source: "#[test]\nfn quoted() {}\n".to_owned(),
            };
            thread
                .assessment
                .as_mut()
                .unwrap()
                .extra
                .insert(bugloop_domain::proof::PROOF_KEY.to_owned(), test.to_value());
            let fix = act::FixCommit::read(env, &commit);
            (fix.missed(&thread), fix.without_proofs().missed(&thread))
        },
    )
    .await;
    assert_eq!(missed.0, None, "its test ran with the fix");
    assert_eq!(
        missed.1.as_deref(),
        Some("the fix did not change the code it quotes in src/db.rs")
    );
}
