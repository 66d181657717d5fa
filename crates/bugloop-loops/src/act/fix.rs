//! `fix`: a Build agent fixes open findings in a worktree; one verified commit lands and the
//! findings are resolved.

use bugloop_domain::proof::ProofTest;
use bugloop_domain::safety::sanitize_user_comment;
use bugloop_domain::thread::{Comment, ReviewState, ThreadState, ThreadStatus, find_thread};
use bugloop_forge::ChangeKey;

use bugloop_report::act::{ActReport, ChosenBy, Intent};
use bugloop_report::build::{BuildResult, BuildStatus, Landing};
use bugloop_report::text::{build_outcome, build_status};

use crate::build::{BuildTask, ProvenTest, Workbench, build, land_on_target};
use crate::comment_bodies::info_reply;
use crate::env::LoopEnv;
use crate::prompt::fill;

use super::addressed::FixCommit;
use super::{ActError, FIX_PROMPT, Targets, findings_block, landed, open_threads};

/// Fixes open findings: one verified commit `fix: bugloop autofix - resolve <ids>`.
pub async fn fix(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    targets: &Targets,
    user_comment: Option<&str>,
) -> Result<ActReport, ActError> {
    // A fix that landed before its run was stopped resolves its findings first.
    let recovered = landed::recover(env, change).await?;
    let targets = match &recovered {
        Some(recovered) => recovered.leave_out_of(targets),
        None => targets.clone(),
    };
    let (comments, state) = env.conversation(change).await?;
    if let Some(answered) = answered_without_fixing(&state, &targets, change)? {
        return Ok(answered);
    }
    let open = open_threads(&state);
    let chosen = chosen_threads(&open, &targets, change)?;
    if chosen.is_empty() {
        return match (&targets, recovered) {
            (_, Some(recovered)) if !recovered.ids.is_empty() => Ok(recovered.report()),
            (Targets::StillOpen(ids), _) => Ok(nothing_left(ids)),
            // "Fix everything open" with nothing open is done, not an error.
            (Targets::All, _) => Ok(nothing_left(&[])),
            _ => Err(ActError::Invalid(format!(
                "{change} has no open findings to fix"
            ))),
        };
    }
    // A finding whose quoted code is gone from head has nothing left for a fix to change: the
    // model is not asked, and the next review rechecks it.
    let (gone, chosen): (Vec<_>, Vec<_>) = chosen
        .into_iter()
        .map(|thread| (code_gone(env, thread), thread))
        .partition(|(gone, _)| gone.is_some());
    let gone: Vec<String> = gone.into_iter().filter_map(|(gone, _)| gone).collect();
    let chosen: Vec<&ThreadState> = chosen.into_iter().map(|(_, thread)| thread).collect();
    let mut report = if !chosen.is_empty() {
        let mut report = fix_chosen(env, change, &comments, &chosen, user_comment).await?;
        if let Some(recovered) = recovered {
            recovered.add_to(&mut report);
        }
        report
    } else if let Some(recovered) = recovered.filter(|r| !r.ids.is_empty()) {
        recovered.report()
    } else {
        let message = format!("nothing to fix: {}", gone.join("; "));
        return Ok(ActReport::nothing_built(
            Intent::Fix(Vec::new()),
            ChosenBy::Command,
            message,
        ));
    };
    for note in gone {
        report.message.push_str(&format!(" (left out: {note})"));
    }
    Ok(report)
}

/// Why the finding of `thread` has nothing left to fix at head, if so: its file is gone, or
/// the code it quoted is nowhere in it. `None` when its code is there, when it quoted none (it
/// cannot be told apart then), or when the developer wrote in its thread since bugloop last
/// did ("that did not fix it"): their words go to the model with it.
fn code_gone(env: &LoopEnv<'_>, thread: &ThreadState) -> Option<String> {
    if thread.awaiting_bot {
        return None;
    }
    let finding = crate::review::existing_finding(thread)?;
    let file = finding.file.as_deref()?;
    let shown = bugloop_domain::paths::prompt_path(file);
    let Some(text) = crate::head::committed_text(env, file) else {
        return Some(format!(
            "{}: {shown} no longer exists; the next review rechecks it",
            finding.id
        ));
    };
    let evidence = finding
        .evidence
        .as_deref()
        .filter(|e| !e.trim().is_empty() && e.len() <= crate::review::MAX_QUOTE_BYTES)?;
    let at = finding.line.unwrap_or(1);
    match bugloop_domain::grounding::find_evidence(&text, evidence, at) {
        Some(_) => None,
        None => Some(format!(
            "{}: the code it quotes is no longer in {shown}; the next review rechecks it",
            finding.id
        )),
    }
}

/// What a request to fix `targets` comes to before any model is needed: an error naming an id
/// that is no finding of the change, or the answer when every finding named is resolved
/// already (said with how); `None` when there is something to fix. The front ends ask it
/// before they connect a model, so a typo is said as one wherever the model is.
pub fn answered_without_fixing(
    state: &ReviewState,
    targets: &Targets,
    change: &ChangeKey,
) -> Result<Option<ActReport>, ActError> {
    let open = open_threads(state);
    let Err(error) = chosen_threads(&open, targets, change) else {
        return Ok(None);
    };
    match already_resolved(&state.threads, targets) {
        Some(said) => Ok(Some(ActReport::nothing_built(
            Intent::Fix(Vec::new()),
            ChosenBy::Command,
            format!("nothing to fix: {said}"),
        ))),
        None => Err(error),
    }
}

/// Builds, lands and answers the fix of the `chosen` open findings.
async fn fix_chosen(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comments: &[Comment],
    chosen: &[&ThreadState],
    user_comment: Option<&str>,
) -> Result<ActReport, ActError> {
    let ids: Vec<String> = chosen
        .iter()
        .filter_map(|t| t.finding_id.as_ref().map(|f| f.as_str().to_owned()))
        .collect();
    let proofs = proven_tests(chosen);
    let bench = Workbench::open(env.git, "fix", &env.work)?;
    let mut result = build(
        env,
        &bench,
        BuildTask {
            name: "fix".to_owned(),
            prompt: fix_prompt(chosen, user_comment),
            commit_message: format!(
                "fix{}: bugloop autofix - resolve {}",
                env.work.commit_scope(),
                ids.join(", ")
            ),
            keep_failed: false,
            proofs,
            tool_fixes: chosen.iter().filter_map(|t| tool_fix_of(t)).collect(),
        },
    )
    .await;
    let (fixed, missed) = split_by_commit(env, &result, chosen);
    if fixed.is_empty() {
        refuse_a_commit_that_fixes_none(&mut result, &missed);
    }
    let landing = match &result.status {
        BuildStatus::Committed { commit, .. } => {
            landed::keep(env, change, &fixed, commit, result.unverified(), comments);
            land_on_target(env, &bench, "fix").await?
        }
        _ => None,
    };
    drop(bench);
    let answered = Answered {
        result: &result,
        landing: landing.as_ref(),
    };
    let (resolved, notes) = answer_threads(env, change, comments, &fixed, &answered).await?;
    let notes = notes
        .into_iter()
        .chain(tell_missed(env, change, comments, &missed).await?);
    match &landing {
        Some(Landing::Branch { name, .. }) => {
            landed::left_on(env, change, name);
        }
        _ => landed::forget(env, change),
    }
    let mut message = build_outcome(&result.status, landing.as_ref());
    for note in notes {
        message.push_str(&format!(" ({note})"));
    }
    Ok(ActReport {
        action: Intent::Fix(ids),
        chosen_by: ChosenBy::Command,
        message,
        answer: Some(result.summary.clone()).filter(|s| !s.is_empty()),
        build: Some(result),
        landing,
        resolved,
    })
}

/// A commit that changed none of the findings' code (a changelog line, a comment) is no fix of
/// them, whatever its message says: it does not land.
fn refuse_a_commit_that_fixes_none(result: &mut BuildResult, missed: &[(&ThreadState, String)]) {
    if let BuildStatus::Committed { .. } = &result.status {
        let why: Vec<&str> = missed.iter().map(|(_, why)| why.as_str()).collect();
        result.status = BuildStatus::Refused {
            reason: format!(
                "the agent's change fixes none of the findings it was asked to fix ({}); \
                 nothing landed",
                why.join("; ")
            ),
            guardrail: false,
        };
    }
}

/// The Build agent's task: the findings, and the developer's words with the request.
fn fix_prompt(chosen: &[&ThreadState], user_comment: Option<&str>) -> String {
    let comment = match user_comment {
        Some(text) if !text.trim().is_empty() => format!(
            "The developer's comment with the request:\n\n\"\"\"\n{}\n\"\"\"",
            sanitize_user_comment(text)
        ),
        _ => String::new(),
    };
    fill(
        FIX_PROMPT,
        &[("findings", &findings_block(chosen)), ("comment", &comment)],
    )
}

/// The chosen findings whose code the fix's commit changed (the ones it resolves), and the
/// others with why; without a commit, all of them (none is resolved then).
fn split_by_commit<'t>(
    env: &LoopEnv<'_>,
    result: &BuildResult,
    chosen: &[&'t ThreadState],
) -> (Vec<&'t ThreadState>, Vec<(&'t ThreadState, String)>) {
    let BuildStatus::Committed { commit, .. } = &result.status else {
        return (chosen.to_vec(), Vec::new());
    };
    let fix = FixCommit::read(env, commit);
    let mut fixed = Vec::new();
    let mut missed = Vec::new();
    for thread in chosen.iter().copied() {
        match fix.missed(thread) {
            Some(why) => missed.push((thread, why)),
            None => fixed.push(thread),
        }
    }
    (fixed, missed)
}

/// What a developer's request to fix comes to when every finding it named was resolved after
/// it was read: an answer, nothing built.
fn nothing_left(ids: &[String]) -> ActReport {
    let message = if ids.is_empty() {
        "nothing to fix: no finding of this change is open".to_owned()
    } else {
        format!(
            "nothing to fix: {} {} resolved since the request was read",
            ids.join(", "),
            if ids.len() == 1 { "was" } else { "were" }
        )
    };
    ActReport::nothing_built(Intent::Fix(Vec::new()), ChosenBy::Command, message)
}

/// The tests of the chosen findings that were proven (kept in bugloop's own comment): each must
/// pass after the fix.
fn proven_tests(chosen: &[&ThreadState]) -> Vec<ProvenTest> {
    chosen
        .iter()
        .filter_map(|t| {
            let test = t.assessment.as_ref().and_then(ProofTest::from_block)?;
            Some(ProvenTest {
                finding: t.finding_id.as_ref()?.as_str().to_owned(),
                test,
            })
        })
        .collect()
}

/// The tool fix of a finding that stands on an analyzer's hit, read from bugloop's own state
/// block in its comment (`source`, `file`).
fn tool_fix_of(thread: &ThreadState) -> Option<crate::build::ToolFix> {
    let block = thread.assessment.as_ref()?;
    let source: bugloop_domain::finding::FindingSource =
        serde_json::from_value(block.extra.get("source")?.clone()).ok()?;
    crate::build::ToolFix::of(
        thread.finding_id.as_ref()?.as_str(),
        &source,
        (thread.file.as_deref(), thread.line),
    )
}

/// When every finding `targets` names is resolved already: that, and how (by which commit,
/// when a fix resolved it).
fn already_resolved(threads: &[ThreadState], targets: &Targets) -> Option<String> {
    let Targets::Ids(ids) = targets else {
        return None;
    };
    let said: Option<Vec<String>> = ids
        .iter()
        .map(|id| {
            let thread = find_thread(threads.iter(), id).ok()?;
            let finding = thread.finding_id.as_ref()?.as_str();
            (thread.status == ThreadStatus::Resolved).then(|| match &thread.fixed_in {
                Some(commit) => format!(
                    "{finding} is already resolved (fixed in {})",
                    bugloop_git::short(commit)
                ),
                None => format!("{finding} is already resolved"),
            })
        })
        .collect();
    said.filter(|said| !said.is_empty())
        .map(|said| said.join("; "))
}

/// The open findings `targets` names (each once), or all of them.
fn chosen_threads<'t>(
    open: &[&'t ThreadState],
    targets: &Targets,
    change: &ChangeKey,
) -> Result<Vec<&'t ThreadState>, ActError> {
    Ok(match targets {
        Targets::All => open.to_vec(),
        Targets::StillOpen(ids) => {
            let mut chosen: Vec<&ThreadState> = Vec::new();
            for id in ids {
                if let Ok(thread) = find_thread(open.iter().copied(), id)
                    && !chosen.iter().any(|c| c.id == thread.id)
                {
                    chosen.push(thread);
                }
            }
            chosen
        }
        Targets::Ids(ids) => {
            let mut chosen = Vec::new();
            for id in ids {
                let thread = find_thread(open.iter().copied(), id).map_err(|_| {
                    ActError::Invalid(format!(
                        "{id:?} is not an open finding of {change}; open: {}",
                        if open.is_empty() {
                            "none".to_owned()
                        } else {
                            open.iter()
                                .filter_map(|t| {
                                    t.finding_id.as_ref().map(|f| f.as_str().to_owned())
                                })
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ))
                })?;
                if !chosen.iter().any(|c: &&ThreadState| c.id == thread.id) {
                    chosen.push(thread);
                }
            }
            chosen
        }
    })
}

/// What came of a fix, for the threads it was asked to fix.
struct Answered<'r> {
    result: &'r BuildResult,
    landing: Option<&'r Landing>,
}

/// Each fixed finding's thread told what came of the fix: resolved when it landed (unless a
/// developer wrote in it since the fix read it: their word is not overruled), pointed at the branch where it waits, or told
/// why it could not be fixed. Returns the findings resolved and the notes for the report.
async fn answer_threads(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comments: &[Comment],
    fixed: &[&ThreadState],
    answered: &Answered<'_>,
) -> Result<(Vec<String>, Vec<String>), ActError> {
    let markers = &env.settings.markers;
    let verified = if answered.result.unverified() {
        "An unverified fix (no verify command is configured)"
    } else {
        "A verified fix"
    };
    // Read again: what was written while the fix ran (a forge keeps its earlier listing until
    // it writes, and the fix wrote nothing in the conversation yet).
    env.forge.forget_listings();
    let (now, _) = env.conversation(change).await?;
    let seen: Vec<String> = comments.iter().map(|c| c.id.clone()).collect();
    let mut resolved = Vec::new();
    let mut notes = Vec::new();
    for thread in fixed {
        let Some(root) = comments.iter().find(|c| c.id == thread.id) else {
            continue;
        };
        let Some(id) = &thread.finding_id else {
            continue;
        };
        let spoken = match answered.landing {
            Some(Landing::FastForwarded { .. }) => {
                landed::settling_word_beyond(env, change, &now, root, &seen).await?
            }
            _ => false,
        };
        let unresolved = match answered.landing {
            Some(Landing::FastForwarded { commit, .. }) if spoken => {
                notes.push(format!(
                    "left open: {id}: a developer wrote in its thread while the fix ran"
                ));
                format!(
                    "The fix {} landed, but a developer wrote in this thread while it ran, so it \
                     stays open for them to settle.",
                    bugloop_git::short(commit)
                )
            }
            Some(Landing::FastForwarded { commit, .. }) => {
                let unverified = answered.result.unverified();
                notes.extend(
                    landed::resolve_fixed(env, change, root, id, commit, unverified).await?,
                );
                resolved.push(id.as_str().to_owned());
                continue;
            }
            Some(Landing::Branch { name, reason, .. }) => format!(
                "{verified} waits on branch `{name}` ({reason}); once it is merged, the next \
                 review resolves this."
            ),
            None => format!(
                "Could not fix this: {}",
                build_status(&answered.result.status)
            ),
        };
        env.forge
            .reply(change, root, &info_reply(markers, &unresolved))
            .await?;
    }
    Ok((resolved, notes))
}

/// Each finding the fix was asked to fix but whose code its commit did not change is told so
/// in its thread, and stays open; the notes for the report.
async fn tell_missed(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comments: &[Comment],
    missed: &[(&ThreadState, String)],
) -> Result<Vec<String>, ActError> {
    let mut notes = Vec::new();
    for (thread, why) in missed {
        let (Some(root), Some(id)) = (
            comments.iter().find(|c| c.id == thread.id),
            &thread.finding_id,
        ) else {
            continue;
        };
        let said = format!("Not fixed: {why}, so this stays open.");
        env.forge
            .reply(change, root, &info_reply(&env.settings.markers, &said))
            .await?;
        notes.push(format!("left open: {id}: {why}"));
    }
    Ok(notes)
}
