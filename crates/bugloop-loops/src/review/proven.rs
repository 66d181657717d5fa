//! A proven finding is resolved by its test, not by words: when the change is said to resolve
//! an open finding whose proof (a test that failed at the head it was raised on) bugloop keeps,
//! the test runs again at this head, and unless it passes the finding stays open. An attacker's
//! review pushed a line that changed nothing, had the model call `resolve_finding`, and the
//! proven finding was resolved with its test still failing. A test that now fails before its
//! own assertion keeps the finding open too: a module renamed with the bug inside it fails so.

use bugloop_domain::finding::FindingId;
use bugloop_domain::proof::ProofTest;
use bugloop_domain::thread::ThreadStatus;
use bugloop_report::review::{RecheckOutcome, RecheckedFinding};

use super::ReviewRequest;
use super::conversation::Conversation;
use super::filtering::Filtered;
use super::prove::{ProofContext, proving_is_on};
use crate::build::{Workbench, proof_command, run_commands};
use crate::env::LoopEnv;

/// Takes back each resolution of an open proven finding whose test does not pass at head (it
/// fails, or cannot be run) or passes where the change touched the test setup, and says so
/// among the rechecked findings. Without a trusted test
/// command nothing can run the tests, and resolutions stand as the review made them.
pub(super) async fn keep_unpassed_proofs_open(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
    filtered: &mut Filtered<'_>,
) {
    if !proving_is_on(env.config()) {
        return;
    }
    let by_finding = conversation.state.by_finding();
    let proven: Vec<(String, String, String, ProofTest)> = filtered
        .resolutions
        .iter()
        .filter_map(|(id, said)| {
            let thread = by_finding.get(&FindingId::new(id))?;
            let test = thread.assessment.as_ref().and_then(ProofTest::from_block)?;
            (thread.status != ThreadStatus::Resolved)
                .then(|| (id.clone(), thread.title.clone(), said.clone(), test))
        })
        .collect();
    if proven.is_empty() {
        return;
    }
    // A change that decides how its tests run (a `conftest.py`, the runner's settings) can make
    // any test pass: then a passing test is no evidence, as for a new proof.
    let setup = ProofContext::of(env, &request.base, &request.head, None)
        .await
        .setup_touched;
    let short = bugloop_git::short(&request.head);
    for (id, title, said, test) in proven {
        let why = match (passes_at(env, &request.head, &test).await, &setup) {
            (Ok(()), None) => continue,
            (Ok(()), Some(touched)) => {
                format!("passes at {short}, but {touched}, so the change decides how its tests run")
            }
            (Err(why), _) => why,
        };
        filtered.resolutions.remove(&id);
        filtered.rechecked.retain(|r| r.id != id);
        filtered.rechecked.push(RecheckedFinding {
            id,
            title,
            change: format!("its proof ran again at {short}"),
            outcome: RecheckOutcome::KeptOpen,
            reason: format!(
                "said to be resolved ({}), but the test that proved it, `{}`, {why}",
                said.trim(),
                test.path
            ),
        });
    }
}

/// `Ok` when `test`, placed in a task tree of `head` (over whatever the head holds at its path:
/// the test is bugloop's), passes; else what happened, as the end of a sentence.
async fn passes_at(env: &LoopEnv<'_>, head: &str, test: &ProofTest) -> Result<(), String> {
    let cannot = |why: String| format!("could not run again: {why}");
    let bench = Workbench::at(env.git, head, "recheck-proof").map_err(|e| cannot(e.to_string()))?;
    let command = proof_command(env.config(), &test.path).map_err(cannot)?;
    bench
        .write_regular_file(&test.path, &test.source)
        .map_err(cannot)?;
    let runs = run_commands(
        env.config(),
        bench.path(),
        Some(bench.git_mount()),
        std::slice::from_ref(&command),
    )
    .await
    .map_err(|e| cannot(e.to_string()))?;
    match runs.into_iter().find(|r| !r.passed) {
        None => Ok(()),
        Some(failing) => {
            let output = crate::context::last_lines(&bench.relative(&failing.output), 3);
            Err(format!(
                "still fails at {}: {}",
                bugloop_git::short(head),
                output.split_whitespace().collect::<Vec<_>>().join(" ")
            ))
        }
    }
}
