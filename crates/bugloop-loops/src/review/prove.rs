//! Proven findings (`review.prove`): before a serious finding is published, a Build agent in a
//! task tree of the head writes the smallest test that shows it, and bugloop runs that test in
//! the sandbox itself. A finding is proven only when bugloop's own run of the test fails and the
//! model, shown the output as quoted data, confirms that it fails for the reason the finding
//! states. A test that passes does not reproduce the finding; one that changes the code under
//! test, does not finish or fails for another reason proves nothing. Nothing the test prints is
//! trusted, and its command comes from trusted configuration only. A change that touches what
//! its tests load besides the test (a module shadowing `unittest`, `conftest.py`, `.pth` files,
//! the runner's configuration: [`bugloop_domain::test_files::test_setup_reason`]) controls how
//! the test runs, so a passing test there is "not tried"; and `lower`/`drop` never apply to a
//! change whose author cannot write to the repository.

use std::time::Duration;

use bugloop_config::{ProveConfig, Unreproduced};
use bugloop_domain::Score;
use bugloop_domain::finding::{Category, Finding};
use bugloop_domain::proof::MAX_PROOF_TEST_BYTES;
use bugloop_domain::safety::VerifyCommand;
use bugloop_report::review::{FindingProof, ProofStatus};
use bugloop_sandbox::ChangeKind;

use super::ReviewRequest;
use crate::build::{Workbench, proof_command, run_commands};
use crate::env::LoopEnv;
use crate::prompt::fill;
use crate::{Question, structured_answer};

const PROVE_PROMPT: &str = include_str!("../../prompts/prove-finding.md");
const CONFIRM_SYSTEM: &str = include_str!("../../prompts/prove-confirm.md");

/// What a passing proof may do to a change: a branch that touches what its tests load besides
/// the tests controls how they run, and an author without write access decides nothing about
/// their own change's findings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProofContext {
    /// Why a passing test proves nothing about this change, when it touches the test setup.
    pub setup_touched: Option<String>,
    /// The change's author may write to the repository (locally: the person running it).
    pub author_may_write: bool,
}

impl ProofContext {
    /// The context of the change `base..head` (`change`, when a forge knows its author).
    pub(crate) async fn of(
        env: &LoopEnv<'_>,
        base: &str,
        head: &str,
        change: Option<&bugloop_git::ChangeKey>,
    ) -> ProofContext {
        let setup_touched = match env.git.changed_files(base, head) {
            Ok(files) => files.iter().find_map(|f| {
                bugloop_domain::test_files::test_setup_reason(&f.path).or_else(|| {
                    f.previous_path
                        .as_deref()
                        .and_then(bugloop_domain::test_files::test_setup_reason)
                })
            }),
            // Files that cannot be listed cannot be cleared.
            Err(error) => Some(format!("the change's files could not be listed: {error}")),
        };
        let author_may_write = match change {
            None => true,
            Some(change) => match env.forge.change_author(change).await {
                // No author known: a local change, whose author runs bugloop.
                Ok(None) => true,
                Ok(Some(author)) => env
                    .forge
                    .permission(&author)
                    .await
                    .is_ok_and(|p| p.may_modify_files()),
                Err(_) => false,
            },
        };
        ProofContext {
            setup_touched,
            author_may_write,
        }
    }
}

/// Tries to prove the findings about to be published (see [`prove_findings`]); not in a clean
/// room, whose findings are proven by the caller that owns them (converge's validator).
pub(super) async fn prove(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    findings: &mut Vec<Finding>,
) -> Vec<FindingProof> {
    if request.clean_room || !proving_is_on(env.config()) {
        return Vec::new();
    }
    let context = ProofContext::of(env, &request.base, &request.head, Some(&request.change)).await;
    prove_findings(env, &request.head, findings, &context).await
}

/// Tries to prove the findings at `head` that score at least `review.prove.min_score`, most
/// severe first, up to `review.prove.max_findings`; applies `review.prove.unreproduced` to those
/// whose test passes (removing the dropped ones from `findings`). Returns what came of each.
/// Proofs spend from the run's budget: when it runs out, the rest are not tried and say so.
pub(crate) async fn prove_findings(
    env: &LoopEnv<'_>,
    head: &str,
    findings: &mut Vec<Finding>,
    context: &ProofContext,
) -> Vec<FindingProof> {
    let settings = &env.config().review.prove;
    // Without a command that runs one test nothing can be proven, and saying so on every review
    // of every repository that did not ask for proofs would be noise: proving is off.
    if !proving_is_on(env.config()) {
        return Vec::new();
    }
    let mut candidates: Vec<usize> = (0..findings.len())
        .filter(|&i| findings[i].score.get() >= settings.min_score)
        .collect();
    candidates.sort_by_key(|&i| std::cmp::Reverse(findings[i].score.get()));
    let mut proofs = Vec::new();
    let mut cannot = cannot_prove(env, head);
    for (rank, &index) in candidates.iter().enumerate() {
        let mut proof = try_proof(env, head, &findings[index], rank, &mut cannot).await;
        if proof.status == ProofStatus::NotReproduced
            && let Some(touched) = &context.setup_touched
        {
            proof.status = ProofStatus::NotTried;
            proof.reason = format!(
                "a passing test proves nothing about this change: {touched}, so the change \
                 decides how its tests run"
            );
        }
        proofs.push((index, proof));
    }
    apply_unreproduced(settings, context, findings, &mut proofs);
    proofs.into_iter().map(|(_, proof)| proof).collect()
}

/// Tries to prove the finding of `rank` (most severe first), unless the proofs are over
/// `review.prove.max_findings` or cannot be made; once the run's budget runs out, `cannot` says
/// so for the rest.
async fn try_proof(
    env: &LoopEnv<'_>,
    head: &str,
    finding: &Finding,
    rank: usize,
    cannot: &mut Option<String>,
) -> FindingProof {
    let settings = &env.config().review.prove;
    if cannot.is_none() && env.meter.remaining_time() == Some(Duration::ZERO) {
        *cannot = Some(out_of_budget(
            "the run's wall time (budgets.max_wall_seconds)",
        ));
    }
    if let Some(reason) = cannot {
        not_tried(finding, reason.clone())
    } else if rank >= settings.max_findings {
        not_tried(
            finding,
            format!(
                "over review.prove.max_findings ({}): the most severe were proven first",
                settings.max_findings
            ),
        )
    } else {
        let mut limit = Duration::from_secs(settings.timeout_seconds.max(1));
        if let Some(left) = env.meter.remaining_time() {
            limit = limit.min(left);
        }
        match tokio::time::timeout(limit, prove_one(env, head, finding)).await {
            Ok(Ok(proof)) => proof,
            Ok(Err(Stopped::Budget(limit))) => {
                let reason = out_of_budget(&limit);
                *cannot = Some(reason.clone());
                not_tried(finding, reason)
            }
            Err(_) => proof(
                finding,
                ProofStatus::NotProven,
                format!(
                    "the proof did not finish within {}s (review.prove.timeout_seconds, or \
                     the run's wall time left)",
                    limit.as_secs()
                ),
            ),
        }
    }
}

/// Applies `review.prove.unreproduced` to the findings whose test passed (lowering them, or
/// removing the dropped ones from `findings`), and records what came of each in its proof.
fn apply_unreproduced(
    settings: &ProveConfig,
    context: &ProofContext,
    findings: &mut Vec<Finding>,
    proofs: &mut [(usize, FindingProof)],
) {
    let mut dropped = Vec::new();
    for (index, proof) in proofs {
        if proof.status != ProofStatus::NotReproduced {
            continue;
        }
        // A passing test is weak evidence against a hostile change (its code controls how its
        // tests run): a security or critical finding is never lowered or dropped for one.
        let finding = &findings[*index];
        if settings.unreproduced != Unreproduced::Keep && !context.author_may_write {
            proof.reason.push_str(
                "; kept as it was: the change's author cannot write to the repository, so a \
                 passing test of theirs lowers or drops nothing",
            );
            continue;
        }
        if settings.unreproduced != Unreproduced::Keep
            && (finding.category == Category::Security || finding.score.get() >= 9)
        {
            // Published as it was (the report's outcomes are published, lowered, dropped);
            // the reason says why.
            proof.reason.push_str(
                "; kept as it was: a security or critical finding is never lowered or dropped \
                 for a passing test",
            );
            continue;
        }
        match settings.unreproduced {
            Unreproduced::Keep => {}
            Unreproduced::Lower => {
                let finding = &mut findings[*index];
                let lowered = Score::saturating(i64::from(finding.score.get()) - 2);
                proof.outcome = "lowered".to_owned();
                proof
                    .reason
                    .push_str(&format!("; lowered from {} to {lowered}", finding.score));
                finding.score = lowered;
            }
            Unreproduced::Drop => {
                proof.outcome = "dropped".to_owned();
                dropped.push(*index);
            }
        }
    }
    dropped.sort_unstable();
    for index in dropped.into_iter().rev() {
        findings.remove(index);
    }
}

/// Whether this configuration proves findings: a minimum score and a trusted test command.
pub(crate) fn proving_is_on(config: &bugloop_config::Config) -> bool {
    let settings = &config.review.prove;
    settings.min_score > 0 && settings.test_command.is_some()
}

/// How the reason of a proof the run's budget stopped starts.
pub(super) const OUT_OF_BUDGET: &str = "the run's budget ran out";

/// Why a finding was not tried once the run's budget ran out.
fn out_of_budget(limit: &str) -> String {
    format!("{OUT_OF_BUDGET} ({limit}): published unproven")
}

/// Why a proof stopped short of an answer about its finding.
enum Stopped {
    /// The run's budget ran out (the limit, as said).
    Budget(String),
}

/// Why nothing can be proven in this review, when nothing can.
fn cannot_prove(env: &LoopEnv<'_>, head: &str) -> Option<String> {
    if env.git.resolve(&format!("{head}^{{commit}}")).is_none() {
        return Some(format!(
            "the change's head ({head}) is not a commit: proofs run on a commit's files"
        ));
    }
    if !env.provider.capabilities().tools {
        return Some(format!(
            "{} cannot call tools, and writing a test needs a model that can",
            env.provider.name()
        ));
    }
    let sandbox = bugloop_sandbox::probe();
    if !sandbox.can_confine() {
        return Some(format!(
            "the sandbox cannot confine commands here ({}); a proof's test runs only confined",
            sandbox.problem.as_deref().unwrap_or("unknown")
        ));
    }
    None
}

fn proof(finding: &Finding, status: ProofStatus, reason: String) -> FindingProof {
    FindingProof {
        id: finding.id.as_str().to_owned(),
        title: finding.title.clone(),
        status,
        reason,
        test_path: None,
        test: None,
        command: None,
        output: None,
        test_seconds: None,
        outcome: "published".to_owned(),
    }
}

fn not_tried(finding: &Finding, reason: String) -> FindingProof {
    proof(finding, ProofStatus::NotTried, reason)
}

/// Proves one finding: the Build agent writes a test in a task tree of the head, bugloop runs
/// it, and the model says whether its failure shows the problem. `Err` only when the run's
/// budget ran out.
async fn prove_one(
    env: &LoopEnv<'_>,
    head: &str,
    finding: &Finding,
) -> Result<FindingProof, Stopped> {
    let bench = match Workbench::at(env.git, head, "prove") {
        Ok(bench) => bench,
        Err(error) => {
            return Ok(not_tried(
                finding,
                format!("no task tree of the head: {error}"),
            ));
        }
    };
    let answer = match write_test(env, &bench, finding).await? {
        Ok(answer) => answer,
        Err(error) => {
            return Ok(proof(
                finding,
                ProofStatus::NotProven,
                format!("the agent did not finish: {error}"),
            ));
        }
    };
    let test_path = match chosen_test(&bench, &answer) {
        Ok(path) => path,
        Err(reason) => return Ok(proof(finding, ProofStatus::NotProven, reason)),
    };
    let mut result = proof(finding, ProofStatus::NotProven, String::new());
    let source = match read_test(&bench, &test_path) {
        Ok(source) => source,
        Err(reason) => {
            result.reason = reason;
            return Ok(result);
        }
    };
    result.test = Some(source.clone());
    result.test_path = Some(test_path.clone());
    let commands = match proof_command(env.config(), &test_path) {
        Ok(command) => vec![command],
        Err(reason) => {
            result.reason = reason;
            return Ok(result);
        }
    };
    result.command = Some(
        commands
            .iter()
            .map(|c| c.raw.clone())
            .collect::<Vec<_>>()
            .join(" && "),
    );
    let Some(output) = run_test(env, &bench, &commands, &mut result).await else {
        return Ok(result);
    };
    confirm_failure(env, &bench, finding, &source, &output, &mut result).await?;
    Ok(result)
}

/// Runs the proof's test in the task tree and judges its runner's output: the failing run's
/// last lines when it failed in the test's own code, else `None` with `result` saying why
/// there is nothing for the model to confirm.
async fn run_test(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    commands: &[VerifyCommand],
    result: &mut FindingProof,
) -> Option<String> {
    let started = std::time::Instant::now();
    let runs = match run_commands(
        env.config(),
        bench.path(),
        Some(bench.git_mount()),
        commands,
    )
    .await
    {
        Ok(runs) => runs,
        Err(error) => {
            result.status = ProofStatus::NotTried;
            result.reason = format!("the test could not run: {error}");
            return None;
        }
    };
    result.test_seconds = Some(started.elapsed().as_secs_f64());
    let Some(failing) = runs.iter().find(|r| !r.passed) else {
        result.status = ProofStatus::NotReproduced;
        result.reason = format!(
            "a test written for it passed at head (`{}`); the code under review controls how \
             its tests run, so this is no evidence that it is right",
            result.command.as_deref().unwrap_or_default()
        );
        return None;
    };
    let output = crate::context::last_lines(&bench.relative(&failing.output), 30);
    result.output = Some(output.clone());
    // A test that never reached its own assertion shows nothing about the finding, whatever a
    // model would say: bugloop decides that from the runner's output.
    if let Some(why) = failed_before_the_test(&failing.output) {
        result.reason = format!(
            "the test failed before its own assertion ({why}): that proves nothing about the \
             finding"
        );
        return None;
    }
    Some(output)
}

/// What a runner prints when a test fails before its own code ran to its assertion: an import,
/// collection, syntax or compile error, a missing fixture, no test run at all.
const FAILED_BEFORE_THE_TEST: &[(&str, &str)] = &[
    ("ModuleNotFoundError", "a module could not be imported"),
    ("ImportError", "an import failed"),
    ("SyntaxError", "a syntax error"),
    ("IndentationError", "a syntax error"),
    (
        "errors during collection",
        "the test could not be collected",
    ),
    ("ERROR collecting", "the test could not be collected"),
    ("no tests ran", "no test ran"),
    ("Ran 0 tests", "no test ran"),
    ("collected 0 items", "no test ran"),
    ("fixture '", "a fixture is missing"),
    ("Test suite failed to run", "the test suite failed to run"),
    ("Cannot find module", "a module could not be found"),
    ("could not compile", "the code did not compile"),
    ("error[E", "the code did not compile"),
    ("[setup failed]", "the test's package did not build"),
    ("[build failed]", "the test's package did not build"),
];

/// Why a failing test's output shows a failure before the test's own assertion, if it does.
fn failed_before_the_test(output: &str) -> Option<&'static str> {
    FAILED_BEFORE_THE_TEST
        .iter()
        .find(|(said, _)| output.contains(said))
        .map(|(_, why)| *why)
}

/// The test's source, read as data: never through a symlink, never a FIFO or a device, never
/// large. A proof's test is small, shown whole, and kept whole for the fix that must make it
/// pass.
fn read_test(bench: &Workbench, test_path: &str) -> Result<String, String> {
    match bench.read_regular_file(test_path, MAX_PROOF_TEST_BYTES as u64) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(source) => Ok(source),
            Err(_) => Err(format!("the test {test_path} is not UTF-8 text")),
        },
        Err(reason) => Err(format!(
            "the test cannot be read as a small file of the tree (at most \
             {MAX_PROOF_TEST_BYTES} bytes): {reason}"
        )),
    }
}

/// Asks the model whether the test fails because of the problem the finding states: only then
/// is the finding proven. `Err` when the run's budget ran out.
async fn confirm_failure(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finding: &Finding,
    source: &str,
    output: &str,
    result: &mut FindingProof,
) -> Result<(), Stopped> {
    match confirm(env, bench, finding, source, output).await {
        Ok(Confirmation {
            shows_the_problem: true,
            why,
        }) => {
            result.status = ProofStatus::Proven;
            result.reason = why;
        }
        Ok(Confirmation { why, .. }) => {
            result.reason = format!("the test fails, but not because of this problem: {why}");
        }
        Err(bugloop_agent::AgentError::Model(bugloop_llm::LlmError::Budget(exceeded))) => {
            return Err(Stopped::Budget(exceeded.limit.to_string()));
        }
        Err(error) => {
            result.reason =
                format!("whether the failure shows the problem could not be asked: {error}");
        }
    }
    Ok(())
}

/// The test the agent wrote: an added regular file, the one its answer names (or the only one
/// it added). Nothing that is not plainly a new file of the tree is ever run or read.
fn chosen_test(bench: &Workbench, answer: &str) -> Result<String, String> {
    let edits = bench.edits().map_err(|e| e.to_string())?;
    if let Some(refused) = edits.refused.first() {
        return Err(format!("the tree holds what a proof may not: {refused}"));
    }
    let changed: Vec<String> = edits
        .changes
        .iter()
        .filter(|c| c.kind != ChangeKind::Added)
        .map(|c| c.path.clone())
        .collect();
    if !changed.is_empty() {
        return Err(format!(
            "the test changed existing files ({}): a proof only adds a test",
            changed.join(", ")
        ));
    }
    let added: Vec<&str> = edits
        .changes
        .iter()
        .filter(|c| c.is_regular_file())
        .map(|c| c.path.as_str())
        .collect();
    let named = added
        .iter()
        .filter(|path| answer.contains(**path))
        .max_by_key(|path| path.len());
    let path = match (named, added.as_slice()) {
        (Some(path), _) => (*path).to_owned(),
        (None, [only]) => (*only).to_owned(),
        (None, []) => {
            let said = answer.lines().next().unwrap_or_default().trim();
            return Err(format!(
                "no test was written: {}",
                crate::context::cut(said, 300).0
            ));
        }
        (None, _) => {
            return Err(format!(
                "the agent added {} files and named none of them as its test",
                added.len()
            ));
        }
    };
    let name = std::path::Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with('-') {
        return Err(format!(
            "the test's name {name:?} starts with `-`, as an option would"
        ));
    }
    Ok(path)
}

/// The Build agent writes the test in the task tree; its final answer, or why it gave none.
async fn write_test(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finding: &Finding,
) -> Result<Result<String, String>, Stopped> {
    let how = format!(
        "The test is run with `{}`, where `{{test}}` is your test file's path.",
        env.config()
            .review
            .prove
            .test_command
            .as_deref()
            .unwrap_or_default()
    );
    let text = format!(
        "{}\n\n{}{}\n\n{}",
        finding.title,
        finding.location(),
        finding
            .evidence
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default(),
        finding.description
    );
    let prompt = fill(
        PROVE_PROMPT,
        &[
            ("how", &how),
            ("finding", &crate::prompt::quoted(&text, 6_000)),
        ],
    );
    let name = format!("prove-{}", finding.id.as_str());
    let run = match crate::build::run_build_agent(env, bench, &name, prompt).await {
        Ok(run) => run,
        Err(status) => return Ok(Err(bugloop_report::text::build_status(&status))),
    };
    Ok(match run.outcome {
        Ok(bugloop_agent::Outcome::Answer(text)) => Ok(text),
        Ok(
            bugloop_agent::Outcome::Submitted(value) | bugloop_agent::Outcome::Structured(value),
        ) => Ok(value.to_string()),
        Err(bugloop_agent::AgentError::Model(bugloop_llm::LlmError::Budget(exceeded))) => {
            return Err(Stopped::Budget(exceeded.limit.to_string()));
        }
        Err(error) => Err(error.to_string()),
    })
}

#[derive(Debug, serde::Deserialize)]
struct Confirmation {
    shows_the_problem: bool,
    why: String,
}

async fn confirm(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finding: &Finding,
    test: &str,
    output: &str,
) -> Result<Confirmation, bugloop_agent::AgentError> {
    use crate::prompt::quoted;
    let prompt = format!(
        "## The reported problem\n\n\"\"\"\n{}\n\n{}\n\"\"\"\n\n## The test\n\n\"\"\"\n{}\n\"\"\"\n\n## The end of what it printed when bugloop ran it (it failed)\n\n\"\"\"\n{}\n\"\"\"\n",
        quoted(&finding.title, 300),
        quoted(&finding.description, 3_000),
        quoted(test, 6_000),
        quoted(output, 4_000),
    );
    structured_answer(
        env,
        bench.path(),
        Question {
            name: "prove-confirm",
            system: CONFIRM_SYSTEM,
            prompt,
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "shows_the_problem": {"type": "boolean"},
                    "why": {"type": "string"}
                },
                "required": ["shows_the_problem", "why"],
                "additionalProperties": false
            }),
            max_tokens: 400,
        },
    )
    .await
}
