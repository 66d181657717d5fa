//! Disputes (pr-reviewer-design.md 3.2): a developer's reply to a finding is weighed by the
//! model, which concedes (the thread is resolved), maintains (DISPUTED) or escalates to a person
//! (ESCALATED); a dispute the two cannot settle goes the developer's way when the change has no
//! human reviewer. The review loop settles every open dispute before it reviews.

use bugloop_domain::finding::FindingId;
use bugloop_domain::paths::prompt_path;
use bugloop_domain::safety::truncate_finding_body;
use bugloop_domain::thread::{ThreadState, ThreadStatus};
use bugloop_forge::ChangeKey;
use bugloop_report::dispute::{Decision, DisputeOutcome, DisputeResult};
use serde::Deserialize;

use crate::comment_bodies::{ResolvedBy, resolve_thread};
use crate::comment_bodies::{accepted_reply, disputed_reply, escalated_reply, info_reply};
use crate::env::LoopEnv;
use crate::error::ActError;
use crate::prompt::fill;

pub(crate) const DISPUTE_PROMPT: &str = include_str!("../prompts/dispute.md");
const DISPUTE_SYSTEM: &str = include_str!("../prompts/dispute-system.md").trim_ascii_end();

#[derive(Debug, Deserialize)]
struct DisputeAnswer {
    decision: Decision,
    reasoning: String,
}

fn thread_text(thread: &ThreadState) -> String {
    let mut out = String::new();
    for reply in &thread.developer_replies {
        out.push_str(&format!(
            "- {} (developer): {}\n",
            reply.author,
            truncate_finding_body(reply.body.trim(), 2_000)
        ));
    }
    out
}

fn code_around(env: &LoopEnv<'_>, thread: &ThreadState) -> String {
    let (Some(file), Some(line)) = (&thread.file, thread.line) else {
        return String::new();
    };
    let text = crate::head::work_text(env, file);
    let shown = prompt_path(file);
    let Some(text) = text else {
        return format!("\n({shown} no longer exists.)\n");
    };
    let start = line.saturating_sub(8).max(1) as usize;
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .skip(start - 1)
        .take(16)
        .map(|(i, l)| format!("{:>5} {l}", i + 1))
        .collect();
    format!(
        "\nThe code at {shown} now:\n\n```\n{}\n```\n",
        lines.join("\n")
    )
}

/// Weighs the developer's latest reply in a finding's thread (pr-reviewer-design.md 3.2). A
/// thread already disputed or escalated where the developer still disagrees is settled in the
/// developer's favour when the change has no human reviewer.
pub async fn settle_dispute(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    id: &FindingId,
) -> Result<DisputeOutcome, ActError> {
    let (comments, state) = env.conversation(change).await?;
    let thread = state
        .threads
        .iter()
        .find(|t| t.finding_id.as_ref() == Some(id))
        .ok_or_else(|| ActError::Invalid(format!("no finding {id} in {change}")))?;
    let root = comments
        .iter()
        .find(|c| c.id == thread.id)
        .ok_or_else(|| ActError::Invalid(format!("the comment of {id} is missing")))?;
    if thread.status == ThreadStatus::Resolved {
        let reasoning = "already resolved".to_owned();
        return Ok(left_as_it_was(
            id,
            thread,
            DisputeResult::NothingToWeigh,
            reasoning,
        ));
    }
    if !thread.awaiting_bot {
        return Err(ActError::Invalid(format!(
            "{id} has no developer reply awaiting an answer"
        )));
    }
    // Only the change's author and people with write access may have a finding withdrawn:
    // anyone else's disagreement is answered, not weighed.
    let disputer = thread
        .developer_replies
        .last()
        .map(|reply| reply.author.clone())
        .unwrap_or_default();
    let settler = settler(env, change, &disputer).await?;
    if settler == Settler::Nobody {
        return not_theirs_to_settle(env, change, root, id, thread, &disputer).await;
    }
    if matches!(
        thread.status,
        ThreadStatus::Disputed | ThreadStatus::Escalated
    ) {
        let reviewers = env.forge.human_reviewers(change).await?;
        if reviewers.is_empty() && settler == Settler::AuthorOnly && serious(thread) {
            return held_for_a_maintainer(env, change, root, id, thread, &disputer).await;
        }
        if reviewers.is_empty() {
            // Unless the reply accepts the finding ("you're right, I'll fix it"), the developer
            // still disagrees, and nobody else is there to decide.
            let answer = weigh(env, id, thread).await?;
            if answer.decision != Decision::Accepted {
                return developer_decides(env, change, root, id).await;
            }
            return carried_out(env, change, root, id, answer).await;
        }
    }
    let answer = weigh(env, id, thread).await?;
    if matches!(answer.decision, Decision::Concede)
        && settler == Settler::AuthorOnly
        && serious(thread)
    {
        let held = held_for_a_maintainer(env, change, root, id, thread, &disputer).await?;
        return Ok(DisputeOutcome {
            decision: Some(answer.decision),
            reasoning: format!("{} ({})", answer.reasoning.trim(), held.reasoning),
            ..held
        });
    }
    carried_out(env, change, root, id, answer).await
}

/// The model's `answer` carried out on the thread: conceded (resolved), maintained, escalated or
/// accepted, each with its reply; the outcome has the thread's status and the reasoning (with
/// the resolving note).
async fn carried_out(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &bugloop_domain::thread::Comment,
    id: &FindingId,
    answer: DisputeAnswer,
) -> Result<DisputeOutcome, ActError> {
    let decision = answer.decision;
    let mut reasoning = answer.reasoning.trim().to_owned();
    let markers = &env.settings.markers;
    let status = match decision {
        Decision::Concede => {
            if let Some(note) = resolve_thread(
                env.forge,
                change,
                markers,
                root,
                (id, ResolvedBy::Argument),
                &format!("Conceded: {reasoning}"),
            )
            .await?
            {
                reasoning.push_str(&format!(" ({note})"));
            }
            ThreadStatus::Resolved
        }
        Decision::Maintain => {
            env.forge
                .reply(change, root, &disputed_reply(markers, &reasoning))
                .await?;
            ThreadStatus::Disputed
        }
        Decision::Escalate => {
            env.forge
                .reply(change, root, &escalated_reply(markers, &reasoning))
                .await?;
            ThreadStatus::Escalated
        }
        Decision::Accepted => {
            env.forge
                .reply(change, root, &accepted_reply(markers, &reasoning))
                .await?;
            ThreadStatus::Pending
        }
    };
    Ok(DisputeOutcome {
        finding: id.as_str().to_owned(),
        result: DisputeResult::from(Some(decision)),
        decision: Some(decision),
        reasoning,
        status,
    })
}

/// Someone who is neither the change's author nor a writer disputed: the finding stays open,
/// and the reply says who can settle it.
async fn not_theirs_to_settle(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &bugloop_domain::thread::Comment,
    id: &FindingId,
    thread: &ThreadState,
    disputer: &str,
) -> Result<DisputeOutcome, ActError> {
    let reasoning = format!(
        "{disputer} may not have this finding withdrawn: only the change's author and people \
         with write access to the repository can. It stays open; one of them can reply to \
         settle it."
    );
    env.forge
        .reply(change, root, &info_reply(&env.settings.markers, &reasoning))
        .await?;
    Ok(left_as_it_was(
        id,
        thread,
        DisputeResult::NotTheirs,
        reasoning,
    ))
}

/// A dispute that leaves the finding as it was (its status kept), with no decision, for
/// `reasoning`.
fn left_as_it_was(
    id: &FindingId,
    thread: &ThreadState,
    result: DisputeResult,
    reasoning: String,
) -> DisputeOutcome {
    DisputeOutcome {
        finding: id.as_str().to_owned(),
        result,
        decision: None,
        reasoning,
        status: thread.status,
    }
}

/// The developer still disagrees and no human reviewer is there to decide: the developer's
/// decision stands, and the thread is resolved.
async fn developer_decides(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &bugloop_domain::thread::Comment,
    id: &FindingId,
) -> Result<DisputeOutcome, ActError> {
    let mut reasoning = "The developer still disagrees and this change has no human \
                         reviewer to decide, so the developer's decision stands."
        .to_owned();
    if let Some(note) = resolve_thread(
        env.forge,
        change,
        &env.settings.markers,
        root,
        (id, ResolvedBy::Argument),
        &reasoning,
    )
    .await?
    {
        reasoning.push_str(&format!(" ({note})"));
    }
    Ok(DisputeOutcome {
        finding: id.as_str().to_owned(),
        result: DisputeResult::DeveloperPrevails,
        decision: None,
        reasoning,
        status: ThreadStatus::Resolved,
    })
}

/// The model weighs the developer's reply against the finding and the code: concede,
/// maintain or escalate, with its reasoning.
async fn weigh(
    env: &LoopEnv<'_>,
    id: &FindingId,
    thread: &ThreadState,
) -> Result<DisputeAnswer, ActError> {
    let finding = format!(
        "`{id}` (score {}): {}\n\n{}{}",
        thread.score.map_or("-".to_owned(), |s| s.to_string()),
        thread.title,
        truncate_finding_body(thread.body.trim(), 6_000),
        code_around(env, thread)
    );
    let prompt = fill(
        DISPUTE_PROMPT,
        &[("finding", &finding), ("thread", &thread_text(thread))],
    );
    let question = crate::Question {
        name: "dispute",
        system: DISPUTE_SYSTEM,
        prompt,
        schema: serde_json::json!({
            "type": "object",
            "properties": {
                "decision": {
                    "type": "string",
                    "enum": ["concede", "maintain", "escalate", "accepted"]
                },
                "reasoning": {"type": "string"}
            },
            "required": ["decision", "reasoning"],
            "additionalProperties": false
        }),
        max_tokens: 1_024,
    };
    Ok(crate::structured_answer(env, env.git.root(), question).await?)
}

/// Who is disputing, as far as settling goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settler {
    /// Someone with write access: their disagreement settles any finding.
    Writer,
    /// The change's author without write access (a fork's author, an outside contributor):
    /// weighed, but a serious finding they argue away stays open for a maintainer.
    AuthorOnly,
    /// Anyone else: answered, not weighed.
    Nobody,
}

/// Whether `actor` may settle a finding of `change` (the change's author, or a writer).
pub(crate) async fn may_settle(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    actor: &str,
) -> Result<bool, ActError> {
    Ok(settler(env, change, actor).await? != Settler::Nobody)
}

async fn settler(env: &LoopEnv<'_>, change: &ChangeKey, actor: &str) -> Result<Settler, ActError> {
    if env.forge.permission(actor).await?.may_modify_files() {
        return Ok(Settler::Writer);
    }
    Ok(
        if env.forge.change_author(change).await?.as_deref() == Some(actor) {
            Settler::AuthorOnly
        } else {
            Settler::Nobody
        },
    )
}

/// A security finding, a proven one (a test bugloop ran failed at its head), or one scored 8 or
/// more: what someone without write access cannot have withdrawn alone.
fn serious(thread: &ThreadState) -> bool {
    let security = thread
        .recorded("category")
        .and_then(serde_json::Value::as_str)
        == Some("security");
    let proven = thread
        .assessment
        .as_ref()
        .and_then(bugloop_domain::proof::ProofTest::from_block)
        .is_some();
    security || proven || thread.score.is_some_and(|score| score.get() >= 8)
}

/// The author without write access argued a serious finding away: recorded as such in the
/// thread, and the finding stays open until someone with write access settles it.
async fn held_for_a_maintainer(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &bugloop_domain::thread::Comment,
    id: &FindingId,
    thread: &ThreadState,
    author: &str,
) -> Result<DisputeOutcome, ActError> {
    let reasoning = format!(
        "conceded to {author}, the change's author, who has no write access: a security finding, \
         a proven one or one scored 8 or more stays open until someone with write access settles \
         it"
    );
    env.forge
        .reply(
            change,
            root,
            &info_reply(&env.settings.markers, &format!("Held open: {reasoning}.")),
        )
        .await?;
    Ok(left_as_it_was(
        id,
        thread,
        DisputeResult::HeldForMaintainer,
        reasoning,
    ))
}

/// Every thread where a developer spoke last, settled (the review loop runs this first).
pub(crate) async fn settle_all_disputes(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
) -> Result<Vec<DisputeOutcome>, ActError> {
    let (_, state) = env.conversation(change).await?;
    let waiting: Vec<FindingId> = state
        .threads
        .iter()
        .filter(|t| t.awaiting_bot && t.status != ThreadStatus::Resolved)
        .filter_map(|t| t.finding_id.clone())
        .collect();
    let mut outcomes = Vec::new();
    for id in waiting {
        outcomes.push(settle_dispute(env, change, &id).await?);
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use bugloop_domain::proof::{PROOF_KEY, ProofTest};
    use bugloop_domain::rmcoc::RmcocBlock;
    use bugloop_domain::score::Score;

    use super::*;

    fn scored(score: u8, proof: Option<&ProofTest>) -> ThreadState {
        let mut block = RmcocBlock {
            finding: "Loop reads one past the end".to_owned(),
            assessment: "IndexError".to_owned(),
            score: Score::new(score).unwrap(),
            status: None,
            extra: Default::default(),
        };
        if let Some(proof) = proof {
            block.extra.insert(PROOF_KEY.to_owned(), proof.to_value());
        }
        ThreadState {
            id: "7".into(),
            kind: bugloop_domain::thread::CommentKind::Review,
            forge_thread_id: None,
            finding_id: Some(FindingId::new("off-by-one")),
            score: Score::new(score).ok(),
            assessment: Some(block),
            title: "Loop reads one past the end".to_owned(),
            ..ThreadState::default()
        }
    }

    /// A proven finding is the author's to argue, never theirs alone to withdraw, whatever its
    /// score: an attacker's review noted that a proven 7 could be argued away with words.
    #[test]
    fn a_proven_finding_is_serious_at_any_score() {
        let proof = ProofTest::checked("test_mean_proof.py", "import unittest\n").unwrap();
        assert!(!serious(&scored(7, None)));
        assert!(serious(&scored(7, Some(&proof))));
        assert!(serious(&scored(8, None)));
    }
}
