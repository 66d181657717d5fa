//! Acting on findings with a scripted model over real repositories: fixes that are verified and
//! land, fixes whose verification fails (nothing committed, tree untouched), dirty trees refused,
//! a HEAD that moved meanwhile, `do`, `ask`, comments routed by intent, and disputes.

mod asking;
mod disputes;
mod resolving;

use crate::support;

use std::sync::Arc;

use bugloop_domain::finding::FindingId;
use bugloop_domain::thread::{Comment, ThreadStatus};
use bugloop_forge::local::LocalForge;
use bugloop_forge::{Forge, Write};
use bugloop_llm::Capabilities;
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_loops::LoopEnv;
use bugloop_loops::act::{self, Targets};
use bugloop_report::act::{ChosenBy, Intent};
use bugloop_report::build::{BuildStatus, Landing};
use bugloop_report::dispute::{Decision, DisputeOutcome, DisputeResult};
use serde_json::json;

use crate::support::{Repo, StallingForge, git, off_by_one, run, session, usage};

/// Everything a repository looks like to its user: branch, HEAD, index and working tree.
fn snapshot(repo: &Repo) -> (String, String, String, String) {
    (
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]),
        git(repo.path(), &["rev-parse", "HEAD"]),
        git(repo.path(), &["diff", "--cached", "--stat"]),
        git(
            repo.path(),
            &["status", "--porcelain", "--untracked-files=all"],
        ),
    )
}

/// A repository with the index finding published on `feature`.
async fn reviewed() -> (Repo, String) {
    let repo = Repo::with_feature();
    let line = repo.line_of("src/stats.rs", "sorted[index]");
    let script = session(vec![off_by_one(line)], vec![]);
    let (report, _) = run(&repo, support::config(), script).await;
    let id = report.findings[0].finding.id.as_str().to_owned();
    (repo, id)
}

/// The model's answer that edits src/stats.rs, replacing `old_text` by `new_text`.
fn stats_edit(old_text: &str, new_text: &str) -> bugloop_llm::ChatResponse {
    let edit = json!({"path": "src/stats.rs", "old_text": old_text, "new_text": new_text});
    tool_reply(&[("edit_file", edit)], usage())
}

fn clamp_edit() -> bugloop_llm::ChatResponse {
    stats_edit(
        "    sorted[index]\n",
        "    sorted[index.min(sorted.len() - 1)]\n",
    )
}

/// [`support::with_env`] with the scripted model `scripted`.
async fn with_env<T>(
    repo: &Repo,
    config: bugloop_config::Config,
    scripted: ScriptedProvider,
    work: impl AsyncFnOnce(&LoopEnv<'_>) -> T,
) -> T {
    support::with_env(repo, config, Arc::new(scripted), work).await
}

/// The developer replies `reply` in the thread of the finding `id`: the reply.
async fn reply_in_thread(env: &LoopEnv<'_>, id: &str, reply: &str) -> Comment {
    let change = env.git.conversation_key();
    let forge = LocalForge::open(env.git.clone(), "bugloop").await.unwrap();
    let comments = forge.comments(&change).await.unwrap();
    let root = comments
        .iter()
        .find(|c| c.body.contains(id) && c.in_reply_to.is_none())
        .unwrap();
    forge
        .developer_comment(&change, reply, Some(&root.id))
        .await
        .unwrap()
}

/// `fix` of every open finding with the scripted model `scripted` and the default settings.
async fn fix_all(repo: &Repo, scripted: ScriptedProvider) -> bugloop_report::act::ActReport {
    fix_all_under(repo, support::config(), scripted).await
}

/// [`fix_all`] under `config`.
async fn fix_all_under(
    repo: &Repo,
    config: bugloop_config::Config,
    scripted: ScriptedProvider,
) -> bugloop_report::act::ActReport {
    with_env(repo, config, scripted, async |env| {
        act::fix(env, &env.git.conversation_key(), &Targets::All, None)
            .await
            .unwrap()
    })
    .await
}

fn verifying(commands: &[&str]) -> bugloop_config::Config {
    let mut config = support::config();
    config.fix.verify_commands = commands.iter().map(|c| (*c).to_owned()).collect();
    config
}

#[tokio::test]
async fn a_verified_fix_lands_and_resolves_the_finding() {
    let (repo, id) = reviewed().await;
    let before = snapshot(&repo);
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped the index.", usage())]);
    let config = verifying(&["grep -q min( src/stats.rs", "git status --short"]);
    let report = with_env(&repo, config, script, async |env| {
        act::fix(
            env,
            &env.git.conversation_key(),
            &Targets::Ids(vec![id[..12].to_owned()]),
            None,
        )
        .await
        .unwrap()
    })
    .await;
    let build = report.build.as_ref().unwrap();
    assert!(
        matches!(
            build.status,
            BuildStatus::Committed {
                unverified: false,
                ..
            }
        ),
        "{build:#?}"
    );
    assert!(build.verify.iter().all(|v| v.passed), "{:#?}", build.verify);
    assert!(
        matches!(report.landing, Some(Landing::FastForwarded { .. })),
        "{:?}",
        report.landing
    );
    assert_eq!(report.resolved, std::slice::from_ref(&id));
    let after = snapshot(&repo);
    assert_eq!(after.0, before.0, "same branch");
    assert_ne!(after.1, before.1, "one commit landed");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD~1"]), before.1);
    assert_eq!(after.3, "", "clean tree");
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]),
        format!("fix: bugloop autofix - resolve {id}")
    );
    assert!(
        repo.read("src/stats.rs")
            .contains("sorted[index.min(sorted.len() - 1)]")
    );
    // The finding is resolved in its thread.
    let (_, comments) = run(&repo, support::config(), session(vec![], vec![])).await;
    let review = comments.iter().any(|c| c.body.contains("Fixed in"));
    assert!(review);
    // No worktree is left behind.
    assert_eq!(git(repo.path(), &["worktree", "list"]).lines().count(), 1);
    // A request read while the finding was open, acted on after this fix resolved it: answered,
    // nothing built, the model not asked; naming it by hand says it is resolved, and by what.
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let script = Arc::new(ScriptedProvider::new([clamp_edit()]));
    support::with_env(&repo, support::config(), script.clone(), async |env| {
        let key = env.git.conversation_key();
        let late = act::fix(env, &key, &Targets::StillOpen(vec![id.clone()]), None)
            .await
            .unwrap();
        assert!(late.build.is_none() && late.resolved.is_empty(), "{late:?}");
        assert_eq!(
            late.message,
            format!("nothing to fix: {id} was resolved since the request was read")
        );
        let by_hand = act::fix(env, &key, &Targets::Ids(vec![id.clone()]), None)
            .await
            .unwrap();
        assert!(by_hand.build.is_none(), "{by_hand:?}");
        assert!(
            by_hand.message.starts_with(&format!(
                "nothing to fix: {id} is already resolved (fixed in "
            )),
            "{}",
            by_hand.message
        );
    })
    .await;
    assert_eq!(script.requests().len(), 0);
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), head);
}

/// Runs a fix of every open finding and stops it (as a kill would) after it landed, at the
/// first answer in a thread.
async fn stop_a_fix_after_landing(repo: &Repo) {
    let stalls_on_answer =
        |write: &Write<'_>| matches!(write, Write::UpdateComment { .. } | Write::Reply { .. });
    let forge = StallingForge::new(repo, stalls_on_answer).await;
    let script = Arc::new(ScriptedProvider::new([
        clamp_edit(),
        text_reply("Clamped.", usage()),
    ]));
    let all = async |env: &LoopEnv<'_>| {
        act::fix(env, &env.git.conversation_key(), &Targets::All, None).await
    };
    support::stop_when(repo, &forge, script, &forge.stalled, all).await;
}

/// A fix stopped after it landed but before its thread was answered: the next `fix` resolves
/// the finding from what the stopped one kept, asks no model, and names it by hand without an
/// error.
#[tokio::test]
async fn a_fix_stopped_after_landing_is_resolved_by_the_next() {
    let (repo, id) = reviewed().await;
    let start = git(repo.path(), &["rev-parse", "HEAD"]);
    stop_a_fix_after_landing(&repo).await;
    let landed = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_eq!(
        git(repo.path(), &["rev-parse", "HEAD~1"]),
        start,
        "it landed"
    );

    let script = Arc::new(ScriptedProvider::new([]));
    let report = support::with_env(&repo, support::config(), script.clone(), async |env| {
        let by_hand = Targets::Ids(vec![id[..12].to_owned()]);
        act::fix(env, &env.git.conversation_key(), &by_hand, None)
            .await
            .unwrap()
    })
    .await;
    assert!(script.requests().is_empty(), "no model call");
    assert_eq!(report.resolved, std::slice::from_ref(&id));
    assert_eq!(
        report.message,
        format!(
            "nothing to fix: the fix {} that landed before its run was stopped resolved {id}",
            &landed[..7]
        )
    );
    let comments = support::conversation(&repo).await;
    let fixed = format!("Fixed in commit {landed}");
    assert_eq!(
        comments.iter().filter(|c| c.body.contains(&fixed)).count(),
        1
    );
}

/// The record of a stopped fix names a commit; one the branch no longer holds (reset away
/// after the kill) resolves nothing, and the finding is fixed again.
#[tokio::test]
async fn a_stopped_fix_reset_away_resolves_nothing() {
    let (repo, id) = reviewed().await;
    stop_a_fix_after_landing(&repo).await;
    git(repo.path(), &["reset", "-q", "--hard", "HEAD~1"]);
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped.", usage())]);
    let report = fix_all_under(&repo, verifying(&["true"]), script).await;
    assert!(report.build.is_some(), "{report:?}");
    assert_eq!(report.resolved, std::slice::from_ref(&id));
    assert!(!report.message.contains("stopped"), "{}", report.message);
}

/// A developer who wrote in the finding's thread after the stopped fix landed ("that did not
/// fix it") is not overruled by its note: the finding stays open and the next fix works on it.
#[tokio::test]
async fn a_stopped_fix_does_not_overrule_a_word_written_since() {
    let (repo, id) = reviewed().await;
    stop_a_fix_after_landing(&repo).await;
    let script = ScriptedProvider::new([text_reply("It is clamped already.", usage())]);
    let report = with_env(&repo, support::config(), script, async |env| {
        reply_in_thread(env, &id, "that did not fix it").await;
        act::fix(env, &env.git.conversation_key(), &Targets::All, None)
            .await
            .unwrap()
    })
    .await;
    assert!(report.resolved.is_empty(), "{report:?}");
    assert!(report.build.is_some(), "the model was asked: {report:?}");
    let comments = support::conversation(&repo).await;
    assert!(!comments.iter().any(|c| c.body.contains("Fixed in commit")));
}

/// A fix undone by a reset (no new commit, so nothing changed since the last review) is
/// raised again in its thread; the same fix rebased onto a new base (another commit, the same
/// patch) still holds it.
#[tokio::test]
async fn a_fix_reset_away_is_raised_again_and_a_rebased_one_is_not() {
    let (repo, id) = reviewed().await;
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped the index.", usage())]);
    let report = fix_all_under(&repo, verifying(&["true"]), script).await;
    assert_eq!(report.resolved, std::slice::from_ref(&id));
    let fixed = git(repo.path(), &["rev-parse", "HEAD"]);
    // Rebased: the fix is another commit with the same patch, on top of a new one.
    git(repo.path(), &["reset", "-q", "--hard", "HEAD~1"]);
    repo.write("NOTES.md", "notes\n");
    repo.commit("notes");
    git(repo.path(), &["cherry-pick", &fixed]);
    let open_ids = |report: &bugloop_report::review::ReviewReport| -> Vec<String> {
        report
            .tracked
            .iter()
            .filter(|t| t.status != ThreadStatus::Resolved)
            .map(|t| t.id.clone())
            .collect()
    };
    let (after_rebase, _) = run(&repo, support::config(), session(vec![], vec![])).await;
    assert!(
        open_ids(&after_rebase).is_empty(),
        "{:?}",
        after_rebase.tracked
    );
    // Amended with more (another patch, the fix still in it): not raised again either.
    repo.write("NOTES.md", "notes, amended\n");
    git(
        repo.path(),
        &["commit", "-q", "-a", "--amend", "-m", "fix and notes"],
    );
    let (after_amend, _) = run(&repo, support::config(), session(vec![], vec![])).await;
    assert!(
        open_ids(&after_amend).is_empty(),
        "{:?}",
        after_amend.tracked
    );
    // Reset away: the code is as it was before the fix.
    git(repo.path(), &["reset", "-q", "--hard", "HEAD~1"]);
    let (after_reset, comments) = run(&repo, support::config(), session(vec![], vec![])).await;
    assert_eq!(
        open_ids(&after_reset),
        std::slice::from_ref(&id),
        "{:?}",
        after_reset.tracked
    );
    assert!(
        comments
            .iter()
            .any(|c| c.body.contains("is no longer on this branch")),
        "raised again in its thread"
    );
}

#[tokio::test]
async fn a_failed_verification_commits_nothing_and_shows_the_output() {
    let (repo, id) = reviewed().await;
    let before = snapshot(&repo);
    let before_text = repo.read("src/stats.rs");
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped.", usage())]);
    let mut config = verifying(&[]);
    config.fix.verify_commands = vec![
        bugloop_config::CommandEntry::from("grep -q min( src/stats.rs"),
        bugloop_config::CommandEntry::shell("echo tests failed: 3 of 12; exit 1"),
    ]
    .into();
    let report = with_env(&repo, config, script, async |env| {
        act::fix(
            env,
            &env.git.conversation_key(),
            &Targets::Ids(vec![id.clone()]),
            None,
        )
        .await
        .unwrap()
    })
    .await;
    let build = report.build.as_ref().unwrap();
    match &build.status {
        BuildStatus::VerifyFailed { command, output } => {
            assert!(command.starts_with("sh -c"));
            assert!(output.contains("tests failed: 3 of 12"), "{output}");
        }
        other => panic!("{other:?}"),
    }
    assert!(report.landing.is_none());
    assert!(report.resolved.is_empty());
    assert_eq!(snapshot(&repo), before);
    assert_eq!(repo.read("src/stats.rs"), before_text);
}

#[tokio::test]
async fn a_dirty_tree_is_refused_before_anything_starts() {
    let (repo, id) = reviewed().await;
    repo.write("notes.txt", "mine\n");
    let before = snapshot(&repo);
    let script = Arc::new(ScriptedProvider::new([clamp_edit()]));
    support::with_env(&repo, support::config(), script.clone(), async |env| {
        let error = act::fix(
            env,
            &env.git.conversation_key(),
            &Targets::Ids(vec![id]),
            None,
        )
        .await
        .unwrap_err();
        assert!(
            error.to_string().contains("Uncommitted changes detected"),
            "{error}"
        );
        // Which files: the ones to stash, commit or revert.
        assert!(error.to_string().ends_with("(notes.txt)"), "{error}");
        assert_eq!(script.requests().len(), 0, "the model was not asked");
        assert_eq!(snapshot(&repo), before);
        let error = act::do_request(env, "add a test").await.unwrap_err();
        assert!(
            error.to_string().contains("Uncommitted changes detected"),
            "{error}"
        );
        // An uncommitted edit of the finding's own code is no fix of HEAD's: refused alike.
        let edited = repo
            .read("src/stats.rs")
            .replace("sorted[index]", "sorted[0]");
        repo.write("src/stats.rs", &edited);
        let error = act::fix(env, &env.git.conversation_key(), &Targets::All, None)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("Uncommitted changes detected"),
            "{error}"
        );
    })
    .await;
}

/// A fix left on a branch of its own because the developer committed while it ran: the
/// repository, the finding and the branch.
async fn left_on_a_branch() -> (Repo, String, String) {
    let (repo, id) = reviewed().await;
    let path = repo.path().to_path_buf();
    let script = ScriptedProvider::new([clamp_edit()]);
    script.push_fn(move |_| {
        // The developer commits while bugloop works.
        std::fs::write(path.join("README.md"), "# Tools, edited\n").unwrap();
        git(&path, &["commit", "-qam", "meanwhile"]);
        Ok(text_reply("Clamped.", usage()))
    });
    let report = fix_all(&repo, script).await;
    let branch = match &report.landing {
        Some(Landing::Branch { name, reason, .. }) => {
            assert!(name.starts_with("bugloop/fix-"), "{name}");
            assert!(reason.contains("HEAD moved"), "{reason}");
            assert!(git(repo.path(), &["branch", "--list", name]).contains(name));
            name.clone()
        }
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        report.build.unwrap().status,
        BuildStatus::Committed {
            unverified: true,
            ..
        }
    ));
    assert!(report.resolved.is_empty(), "not resolved until merged");
    assert_eq!(git(repo.path(), &["log", "-1", "--format=%s"]), "meanwhile");
    assert!(
        !repo.read("src/stats.rs").contains("min("),
        "the user's tree is untouched"
    );
    (repo, id, branch)
}

#[tokio::test]
async fn a_head_that_moved_meanwhile_leaves_the_fix_on_a_branch() {
    let (repo, id, branch) = left_on_a_branch().await;
    // Merged as told, the next fix resolves what it fixed, without asking the model again.
    git(repo.path(), &["merge", "-q", "--no-edit", &branch]);
    let idle = ScriptedProvider::new([]);
    let merged = fix_all(&repo, idle).await;
    assert_eq!(merged.resolved, std::slice::from_ref(&id), "{merged:?}");
    assert!(
        merged.message.contains(&format!("merged from {branch}")),
        "{}",
        merged.message
    );
}

/// A merge that holds the fix's commit but none of its code (`-s ours`) is no landing of it: the
/// finding waits for a fix that is there.
#[tokio::test]
async fn a_merge_that_took_none_of_the_fix_resolves_nothing() {
    let (repo, id, branch) = left_on_a_branch().await;
    git(
        repo.path(),
        &["merge", "-q", "-s", "ours", "--no-edit", &branch],
    );
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped again.", usage())]);
    let report = fix_all(&repo, script).await;
    assert!(
        !report.message.contains("merged from"),
        "{}",
        report.message
    );
    assert!(matches!(
        report.landing,
        Some(Landing::FastForwarded { .. })
    ));
    assert_eq!(report.resolved, std::slice::from_ref(&id), "{report:?}");
}

/// A finding whose quoted code was changed by hand since the review, or whose file is gone, has
/// nothing left for a fix to change: said so, nothing built, the model not asked.
#[tokio::test]
async fn a_finding_whose_code_is_gone_is_not_given_to_the_model() {
    let (repo, id) = reviewed().await;
    let fixed = repo
        .read("src/stats.rs")
        .replace("sorted[index]", "sorted[index.min(sorted.len() - 1)]");
    repo.write("src/stats.rs", &fixed);
    repo.commit("clamp by hand");
    let script = Arc::new(ScriptedProvider::new([clamp_edit()]));
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let fix = async |targets: Targets| {
        support::with_env(&repo, support::config(), script.clone(), async |env| {
            act::fix(env, &env.git.conversation_key(), &targets, None)
                .await
                .unwrap()
        })
        .await
    };
    let report = fix(Targets::Ids(vec![id.clone()])).await;
    assert!(report.build.is_none(), "{report:?}");
    assert_eq!(
        report.message,
        format!(
            "nothing to fix: {id}: the code it quotes is no longer in src/stats.rs; the next \
             review rechecks it"
        )
    );
    repo.git(&["rm", "-q", "src/stats.rs"]);
    repo.commit("drop stats");
    let report = fix(Targets::All).await;
    assert_eq!(
        report.message,
        format!("nothing to fix: {id}: src/stats.rs no longer exists; the next review rechecks it")
    );
    assert_eq!(script.requests().len(), 0);
    assert_ne!(
        git(repo.path(), &["rev-parse", "HEAD"]),
        head,
        "two commits of the user"
    );
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]),
        "drop stats"
    );
}

/// "Fix everything open" with nothing open is done, not an error, and asks no model.
#[tokio::test]
async fn fixing_all_with_nothing_open_is_nothing_to_do() {
    let repo = Repo::with_feature();
    let before = snapshot(&repo);
    let report = fix_all(&repo, ScriptedProvider::new([])).await;
    assert!(report.build.is_none());
    assert!(
        report.message.starts_with("nothing to fix"),
        "{}",
        report.message
    );
    assert_eq!(snapshot(&repo), before);
}

#[tokio::test]
async fn do_requests_commit_as_chores_and_protected_paths_are_refused() {
    let repo = Repo::with_feature();
    let script = ScriptedProvider::new([
        tool_reply(
            &[(
                "write_file",
                json!({"path": "tests/percentile.rs", "content": "#[test]\nfn p() {}\n"}),
            )],
            usage(),
        ),
        text_reply("Added a test.", usage()),
    ]);
    let report = with_env(&repo, support::config(), script, async |env| {
        act::do_request(env, "add a test for percentile")
            .await
            .unwrap()
    })
    .await;
    assert!(
        matches!(report.landing, Some(Landing::FastForwarded { .. })),
        "{report:#?}"
    );
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]),
        "chore: apply user request"
    );

    // A command run by the agent writes into a protected path: nothing is committed.
    let before = snapshot(&repo);
    let script = ScriptedProvider::new([
        tool_reply(
            &[(
                "run",
                json!({"program": "mkdir", "args": ["-p", ".github/workflows"]}),
            )],
            usage(),
        ),
        tool_reply(
            &[(
                "run",
                json!({"program": "touch", "args": [".github/workflows/x.yml"]}),
            )],
            usage(),
        ),
        text_reply("Done.", usage()),
    ]);
    let report = with_env(&repo, support::config(), script, async |env| {
        act::do_request(env, "add a workflow").await.unwrap()
    })
    .await;
    assert!(matches!(
        report.build.unwrap().status,
        BuildStatus::Refused { .. }
    ));
    assert_eq!(snapshot(&repo), before);
}

#[tokio::test]
async fn comments_are_routed_by_intent() {
    let (repo, id) = reviewed().await;
    // "fix it" in the finding's thread: the fix runs (rules, no model call for the intent).
    let script = ScriptedProvider::new([clamp_edit(), text_reply("Clamped.", usage())]);
    let report = with_env(&repo, support::config(), script, async |env| {
        let comment = reply_in_thread(env, &id, "fix it").await;
        act::on_comment(env, &env.git.conversation_key(), &comment)
            .await
            .unwrap()
    })
    .await;
    assert_eq!(report.action, Intent::Fix(vec![id.clone()]));
    assert_eq!(report.chosen_by, ChosenBy::Rules);
    assert_eq!(report.resolved, [id]);

    // A question: answered by the Plan agent, reply posted.
    let script =
        ScriptedProvider::new([text_reply("`percentile` indexes the sorted copy.", usage())]);
    let report = with_env(&repo, support::config(), script, async |env| {
        let change = env.git.conversation_key();
        let forge = LocalForge::open(env.git.clone(), "bugloop").await.unwrap();
        let comment = forge
            .developer_comment(&change, "how does percentile pick its element?", None)
            .await
            .unwrap();
        act::on_comment(env, &change, &comment).await.unwrap()
    })
    .await;
    assert_eq!(report.action, Intent::Think);
    assert!(report.answer.unwrap().contains("sorted copy"));
}
