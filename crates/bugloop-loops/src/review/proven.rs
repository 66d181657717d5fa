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
    // A change that decides how its tests run (a `conftest.py`, the runner's settings, a module
    // named as one the runner imports) can make any test pass: then a passing test is no
    // evidence, as for a new proof. Nor is it from an author who may not write: their code runs
    // the test, and can make it pass without fixing anything (an attacker's review exited 0
    // from a module the runner imports), so only a fix bugloop makes or a maintainer resolves it.
    let context = ProofContext::of(env, &request.base, &request.head, Some(&request.change)).await;
    let short = bugloop_git::short(&request.head);
    for (id, title, said, test) in proven {
        let why = match (context.author_may_write, &context.setup_touched) {
            (false, _) => "was not run again: the change's author may not write to the \
                           repository, and their code decides what its tests do; a fix bugloop \
                           makes, or a maintainer, resolves it"
                .to_owned(),
            // Whatever it would come to, a run the change decides is no evidence: not run.
            (true, Some(touched)) => {
                format!("was not run again: {touched}, so the change decides how its tests run")
            }
            (true, None) => match passes_at(env, &request.head, &test).await {
                Ok(()) => continue,
                Err(why) => why,
            },
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
    if let Some(taken) = name_taken(bench.path(), &test.path) {
        return Err(cannot(format!(
            "the head holds `{taken}` beside it, which a runner would load in its place"
        )));
    }
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

/// Another entry beside the test at `test` (relative to `root`) that has its name before the
/// first dot: a package `test_x/` or a module `test_x.so` beside `test_x.py` is what
/// `python -m unittest test_x.py` imports (an attacker's review put a passing test there).
fn name_taken(root: &std::path::Path, test: &str) -> Option<String> {
    let path = std::path::Path::new(test);
    let file = path.file_name()?.to_str()?;
    let stem = file.split('.').next()?;
    let dir = path.parent().unwrap_or(std::path::Path::new(""));
    std::fs::read_dir(root.join(dir))
        .ok()?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .find(|name| name != file && name.split('.').next() == Some(stem))
        .map(|name| dir.join(name).to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_or_module_of_the_tests_name_is_seen() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("tests/test_x")).unwrap();
        std::fs::write(
            root.path().join("test_y.cpython-311-x86_64-linux-gnu.so"),
            "",
        )
        .unwrap();
        std::fs::write(root.path().join("test_z.py"), "").unwrap();
        assert_eq!(
            name_taken(root.path(), "tests/test_x.py").as_deref(),
            Some("tests/test_x")
        );
        assert_eq!(
            name_taken(root.path(), "test_y.py").as_deref(),
            Some("test_y.cpython-311-x86_64-linux-gnu.so")
        );
        assert_eq!(name_taken(root.path(), "test_z.py"), None);
        assert_eq!(name_taken(root.path(), "missing/test_w.py"), None);
    }
}
