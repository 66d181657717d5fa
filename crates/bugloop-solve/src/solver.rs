//! SOLVING: the build/test/evaluate loop. A Build agent works in a task tree off the base, the
//! test commands run in the sandbox, and an attempt that fails leaves its edits for the next one,
//! told what failed. Each attempt is recorded as it ends; at `solve.max_iterations` attempts, or
//! `solve.timeout_minutes` after solving started, the issue is escalated with what was tried. A
//! passing solution is checked against the guardrails (protected paths, `solve.max_diff_lines`),
//! recorded, published on the issue's branch and proposed as a draft change request.

use std::time::Duration;

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::DraftRequest;
use bugloop_report::build::{BuildResult, BuildStatus};
use jiff::Timestamp;

use bugloop_loops::build::{BuildTask, Workbench, binary_changes, build, net_change};
use bugloop_loops::prompt::fill;

use super::detail::{AttemptStep, DraftOpened, Solution, VerifyResult};
use super::record::Solving;
use super::{Flow, Run, SOLVE_PROMPT, SolveError};
use bugloop_loops::prompt::quoted;

pub(super) async fn run(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    let solving = run.record.solving().ok_or_else(|| {
        SolveError::Invalid(format!(
            "issue #{}'s record has no ASSIGNED -> SOLVING step to resume from",
            run.number()
        ))
    })?;
    if let Some(solution) = run.record.solution() {
        return propose(run, &solving, &solution).await;
    }
    let limits = Limits::of(run, &solving);
    let bench = Workbench::at(run.env.git, &solving.start, "solve")?;
    // The attempt whose edits the tree holds as it left them (none: as solving started). A run
    // that was killed or stopped left each attempt's edits in a snapshot: the tree starts
    // from the last one, and the prompt says only what is there.
    let mut tree_after = restore_last(run, &bench);
    loop {
        let done = run.record.attempts().len() as u64;
        let left = match limits.time_left(done) {
            Ok(left) => left,
            Err(reason) => return run.escalate(&reason).await,
        };
        let number = done + 1;
        let task = attempt_task(run, number, tree_after);
        let started = std::time::SystemTime::now();
        let Ok(result) = tokio::time::timeout(left, build(run.env, &bench, task)).await else {
            tree_after = stopped_at_the_time_limit(run, &bench, number).await?;
            continue;
        };
        if result.out_of_budget {
            let reason = format!("the budget ran out during attempt {number} (budgets.*)");
            return stop_before_an_attempt(run, &bench, "budget", reason).await;
        }
        if result.model_unavailable {
            return model_stop(run, &bench, number, &result).await;
        }
        let outcome = match &result.status {
            BuildStatus::Committed { commit, files, .. } => {
                // Reports the tests wrote count where the commands' output says nothing (read off
                // the async threads: the tree is the code's).
                let root = bench.path().to_path_buf();
                let junit =
                    tokio::task::spawn_blocking(move || super::junit::counts(&root, started))
                        .await
                        .ok()
                        .flatten();
                return passed(run, &solving, number, &result, commit, files, junit).await;
            }
            BuildStatus::Refused {
                reason,
                guardrail: true,
            } => {
                let breach = Breach {
                    guardrail: "protected_paths",
                    outcome: format!("refused: {reason}"),
                    escalation: format!("the solution was refused: {reason}"),
                };
                return escalate_breach(run, number, breach).await;
            }
            // Anything else refused is the agent's to mend, in the next attempt.
            BuildStatus::Refused {
                reason,
                guardrail: false,
            } => format!("refused: {reason}"),
            BuildStatus::VerifyFailed { command, output } => {
                failed_outcome(command, &bench.relative(output))
            }
            BuildStatus::NoChanges { .. } => "the agent changed nothing".to_owned(),
            BuildStatus::AgentFailed { error } => format!("the agent did not finish: {error}"),
        };
        keep_failed_attempt(run, &bench, number, &result, &outcome).await?;
        tree_after = Some(number);
    }
}

/// The run stops for a model that could not be used during attempt `number` (it is resumed
/// later), and the issue is escalated at the third such stop in a row.
async fn model_stop(
    run: &mut Run<'_, '_>,
    bench: &Workbench,
    number: u64,
    result: &BuildResult,
) -> Result<Flow, SolveError> {
    let reason = match &result.status {
        BuildStatus::AgentFailed { error } => {
            format!("the model could not be used during attempt {number}: {error}")
        }
        _ => format!("the model could not be used during attempt {number}"),
    };
    // An outage ends; a failure an issue's own text sets off again and again (a
    // prompt the provider refuses at every try) would hold the issue forever.
    if run.record.stops_in_a_row("model") + 1 >= MODEL_STOPS_TO_ESCALATE {
        let _ = bench.discard();
        return run
            .escalate(&format!(
                "{reason}; the model could not be used in {MODEL_STOPS_TO_ESCALATE} runs \
                 in a row"
            ))
            .await;
    }
    stop_before_an_attempt(run, bench, "model", reason).await
}

/// Runs in a row that stop for a model that cannot be used before the issue is escalated.
const MODEL_STOPS_TO_ESCALATE: usize = 3;

/// What ends solving without a solution: `solve.max_iterations` attempts, or
/// `solve.timeout_minutes` after solving started.
struct Limits {
    max_attempts: u64,
    timeout_minutes: u64,
    deadline: Timestamp,
}

impl Limits {
    fn of(run: &Run<'_, '_>, solving: &Solving) -> Limits {
        let solve = &run.env.config().solve;
        Limits {
            max_attempts: u64::from(solve.max_iterations),
            timeout_minutes: solve.timeout_minutes,
            deadline: solving.started_at
                + jiff::SignedDuration::from_secs(
                    i64::try_from(solve.timeout_minutes.saturating_mul(60)).unwrap_or(i64::MAX),
                ),
        }
    }

    /// The time the next attempt has, after `done` attempts; or why there is no next attempt
    /// (the escalation's reason).
    fn time_left(&self, done: u64) -> Result<Duration, String> {
        if done >= self.max_attempts {
            return Err(format!(
                "no solution passed the tests in {done} attempt{} (solve.max_iterations)",
                if done == 1 { "" } else { "s" }
            ));
        }
        let left = self.deadline.duration_since(Timestamp::now());
        if left.is_negative() || left.is_zero() {
            return Err(format!(
                "solving took longer than solve.timeout_minutes ({} min)",
                self.timeout_minutes
            ));
        }
        Ok(Duration::try_from(left).unwrap_or(Duration::ZERO))
    }
}

/// The Build task of attempt `number`; its edits stay in the tree when it fails.
fn attempt_task(run: &Run<'_, '_>, number: u64, tree_after: Option<u64>) -> BuildTask {
    BuildTask {
        name: format!("solve-{}-{number}", run.number()),
        prompt: prompt(run, tree_after),
        commit_message: format!(
            "fix: {} (#{})",
            first_line(&run.issue.title, 60),
            run.number()
        ),
        keep_failed: true,
        proofs: Vec::new(),
        tool_fixes: Vec::new(),
    }
}

/// Attempt `number` ran out of the time solving has left: its edits are dropped (it may have
/// stopped halfway through one), the tree goes back to the last kept attempt's (returned, as
/// the tree the next prompt describes), and the attempt is recorded as failed.
async fn stopped_at_the_time_limit(
    run: &mut Run<'_, '_>,
    bench: &Workbench,
    number: u64,
) -> Result<Option<u64>, SolveError> {
    let _ = bench.discard();
    let tree_after = restore_last(run, bench);
    run.step(
        SolveState::Solving,
        &format!("attempt {number}: stopped at the time limit"),
        &AttemptStep::stopped_at_the_time_limit(number),
    )
    .await?;
    Ok(tree_after)
}

/// The run stopped during an attempt for a reason that is not the attempt's (`why`: `budget`,
/// the run's budget is spent; `model`, the model could not be used). Not escalated, and not an
/// attempt: the next run, with the budget it is given or the model back, resumes solving here.
async fn stop_before_an_attempt(
    run: &mut Run<'_, '_>,
    bench: &Workbench,
    why: &str,
    what: String,
) -> Result<Flow, SolveError> {
    let _ = bench.discard();
    let reason = format!("stopped: {what}; `bugloop solve {}` resumes", run.number());
    run.step(
        SolveState::Solving,
        &reason,
        &AttemptStep::stopped(why, reason.clone()),
    )
    .await?;
    Ok(Flow::Stop(reason))
}

/// A change that passed the tests but is over a guardrail: it is not proposed, and a person
/// decides.
struct Breach {
    /// The guardrail, as the record names it.
    guardrail: &'static str,
    /// The attempt's outcome.
    outcome: String,
    /// Why the issue is escalated.
    escalation: String,
}

/// Records attempt `number` as stopped by a guardrail, and escalates.
async fn escalate_breach(
    run: &mut Run<'_, '_>,
    number: u64,
    breach: Breach,
) -> Result<Flow, SolveError> {
    run.step(
        SolveState::Solving,
        &format!("attempt {number}: {}", breach.outcome),
        &AttemptStep::breach(number, breach.guardrail, breach.outcome.clone()),
    )
    .await?;
    run.escalate(&breach.escalation).await
}

/// Attempt `number` passed the tests with `commit`: checked against the guardrails (binary
/// files, whose size cannot be judged; `solve.max_diff_lines`), then recorded as the solution
/// and proposed.
async fn passed(
    run: &mut Run<'_, '_>,
    solving: &Solving,
    number: u64,
    result: &BuildResult,
    commit: &str,
    files: &[String],
    junit: Option<(bugloop_domain::test_counts::TestCounts, u32)>,
) -> Result<Flow, SolveError> {
    let binary = binary_changes(run.env.git, &solving.start, commit)?;
    if !binary.is_empty() {
        let breach = Breach {
            guardrail: "binary",
            outcome: format!(
                "the tests pass, but the change has binary files, whose size in lines \
                 cannot be judged: {}",
                binary.join(", ")
            ),
            escalation: format!("the solution changes binary files: {}", binary.join(", ")),
        };
        return escalate_breach(run, number, breach).await;
    }
    let (_, added, removed) = net_change(run.env.git, &solving.start, commit)?;
    let lines = (added + removed) as u64;
    let limit = run.env.config().solve.max_diff_lines;
    if lines > limit {
        let breach = Breach {
            guardrail: "max_diff_lines",
            outcome: format!(
                "the tests pass, but the change is {lines} lines, over solve.max_diff_lines ({limit})"
            ),
            escalation: format!(
                "the solution changes {lines} lines, over solve.max_diff_lines ({limit}): a person should look at a change that large"
            ),
        };
        return escalate_breach(run, number, breach).await;
    }
    let mut verify: Vec<VerifyResult> = result.verify.iter().map(VerifyResult::of).collect();
    if let Some((counts, reports)) = junit
        && verify.iter().all(|v| v.counts.is_none())
    {
        verify.push(VerifyResult::of_junit(counts, reports));
    }
    let solution = Solution {
        commit: commit.to_owned(),
        summary: result.summary.clone(),
        verify,
        files: files.to_vec(),
    };
    let outcome = format!(
        "the tests pass ({} file{}, +{added} -{removed})",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    run.step(
        SolveState::Solving,
        &format!("attempt {number}: {outcome}"),
        &AttemptStep::passed(number, outcome.clone(), &solution, &result.left_out),
    )
    .await?;
    propose(run, solving, &solution).await
}

/// Records failed attempt `number` with its outcome and the end of the failing command's
/// output, its edits kept for the next attempt.
async fn keep_failed_attempt(
    run: &mut Run<'_, '_>,
    bench: &Workbench,
    number: u64,
    result: &BuildResult,
    outcome: &str,
) -> Result<(), SolveError> {
    let output = match &result.status {
        BuildStatus::VerifyFailed { output, .. } => {
            bugloop_loops::context::last_lines(&bench.relative(output), 40)
        }
        _ => String::new(),
    };
    // The edits stay for the next attempt; kept before the attempt is recorded, so a run
    // killed from here on finds them again.
    let snapshot = bench
        .snapshot(
            run.env.config(),
            &format!(
                "bugloop: #{} attempt {number} (not a solution)",
                run.number()
            ),
            &snapshot_ref(run.number(), number),
        )
        .map_err(|error| {
            run.env
                .progress
                .event(bugloop_loops::ProgressEvent::Step(format!(
                    "#{}: the edits of attempt {number} were not kept: {error}",
                    run.number()
                )));
        })
        .ok();
    run.step(
        SolveState::Solving,
        &format!("attempt {number}: {outcome}"),
        &AttemptStep::failed(
            number,
            outcome.to_owned(),
            result.summary.clone(),
            output,
            &result.left_out,
            snapshot,
        ),
    )
    .await
}

/// Where the edits of attempt `attempt` of issue `issue` are kept (a ref, so that `git gc`
/// keeps them too).
fn snapshot_ref(issue: u64, attempt: u64) -> String {
    format!("refs/bugloop/solve/{issue}/attempt-{attempt}")
}

/// Puts the last kept attempt's edits in the tree; returns that attempt's number, or `None`
/// when the tree is as solving started (no attempt kept any, or its snapshot is gone: a fresh
/// clone, a `git gc` of a deleted ref).
fn restore_last(run: &Run<'_, '_>, bench: &Workbench) -> Option<u64> {
    let (attempt, snapshot) = run.record.last_snapshot()?;
    match bench.restore(&snapshot) {
        Ok(()) => Some(attempt),
        Err(error) => {
            run.env
                .progress
                .event(bugloop_loops::ProgressEvent::Step(format!(
                    "#{}: the kept edits of attempt {attempt} could not be restored ({error}); the \
                 tree starts from where solving started",
                    run.number()
                )));
            let _ = bench.discard();
            None
        }
    }
}

/// Drops the kept edits of issue `issue`'s attempts: solving ended (a solution, an escalation).
pub(super) fn forget_snapshots(git: &bugloop_git::Git, issue: u64) {
    let prefix = format!("refs/bugloop/solve/{issue}/");
    let Ok(refs) = git.run(&["for-each-ref", "--format=%(refname)", &prefix]) else {
        return;
    };
    for reference in refs.lines().filter(|r| r.starts_with(&prefix)) {
        let _ = git.run(&["update-ref", "-d", reference]);
    }
}

/// The solver's prompt: the issue, and what the attempts before this one came to. The tree
/// holds the edits as attempt `tree_after` left them (`None`: as solving started).
fn prompt(run: &Run<'_, '_>, tree_after: Option<u64>) -> String {
    let mut attempts = String::new();
    let history = run.record.attempts();
    if let Some(last) = history.last() {
        let kept = match tree_after {
            Some(attempt) if attempt == last.number => {
                "Your edits of the attempts below are still in the tree; build on them or undo \
                 them."
                    .to_owned()
            }
            Some(attempt) => format!(
                "The tree holds your edits as attempt {attempt} left them; what the attempts \
                 after it changed is not in it (they stopped before it was kept)."
            ),
            None => "None of the edits of the attempts below are in the tree: it starts again \
                     from where solving started."
                .to_owned(),
        };
        attempts.push_str(&format!("## Attempts so far\n\n{kept}\n\n"));
        for attempt in &history {
            attempts.push_str(&format!(
                "- attempt {}: {}\n",
                attempt.number, attempt.outcome
            ));
        }
        if let Some(output) = run.record.last_output() {
            attempts.push_str(&format!(
                "\nThe last failing command's output (its end):\n\n\"\"\"\n{}\n\"\"\"\n",
                quoted(&output, 6_000)
            ));
        }
    }
    // The text that was taken, not whatever the issue says now.
    let (title, body) = run
        .record
        .taken_text()
        .unwrap_or_else(|| (run.issue.title.clone(), run.issue.body.clone()));
    fill(
        SOLVE_PROMPT,
        &[
            ("number", &run.number().to_string()),
            ("title", &quoted(&first_line(&title, 200), 400)),
            ("body", &quoted(&body, 16_000)),
            ("attempts", &attempts),
            (
                "repository",
                &super::repository_instructions(
                    run.env.settings,
                    bugloop_config::PromptKind::SolveIssue,
                ),
            ),
        ],
    )
}

/// Publishes the solution on the issue's branch (unless a run before this one did) and opens
/// the draft (or finds the one it opened).
async fn propose(
    run: &mut Run<'_, '_>,
    solving: &Solving,
    solution: &Solution,
) -> Result<Flow, SolveError> {
    let branch = &solving.branch;
    match run.tracker.branch_head(branch).await? {
        None => {
            run.tracker
                .publish_branch(branch, &solution.commit, None)
                .await?;
        }
        Some(head) if head == solution.commit => {}
        Some(other) => {
            return run
                .escalate(&format!(
                    "the branch {branch} already exists at {} and is not this solution's; it was left alone",
                    &other[..12.min(other.len())]
                ))
                .await;
        }
    }
    let approved = match run.env.config().solve.approval {
        bugloop_config::Approval::Auto => String::new(),
        bugloop_config::Approval::Required => {
            match super::approval::approved_by(run, solution).await? {
                Some(by) => format!(", approved by {by}"),
                None => return super::approval::wait(run, branch, solution).await,
            }
        }
    };
    let coverage = coverage_line(run, solving, solution).await?;
    let draft = run
        .tracker
        .open_draft(&DraftRequest {
            title: format!("fix: {}", first_line(&run.issue.title, 70)),
            body: draft_body(run, solution, &coverage),
            branch: branch.clone(),
            base: solving.base.clone(),
            closes: Some(run.number()),
        })
        .await?;
    run.step(
        SolveState::PrDraft,
        &format!("draft #{} opened from {branch}{approved}", draft.number),
        &DraftOpened {
            change_request: Some(draft.number),
            commit: solution.commit.clone(),
        },
    )
    .await?;
    Ok(Flow::Next)
}

/// `solve.coverage_command` on the commit solving started from and on the solution, each in
/// the sandbox: the draft's coverage line (empty without the setting). A run that fails, or
/// prints no summary bugloop reads, is said as such, never as a number.
async fn coverage_line(
    run: &Run<'_, '_>,
    solving: &Solving,
    solution: &Solution,
) -> Result<String, SolveError> {
    let config = run.env.config();
    let commands =
        bugloop_config::commands("solve.coverage_command", &config.solve.coverage_command)
            .map_err(|e| SolveError::Invalid(e.to_string()))?;
    if commands.is_empty() {
        return Ok(String::new());
    }
    let mut measured = Vec::new();
    for (what, commit) in [
        ("the base", &solving.start),
        ("this change", &solution.commit),
    ] {
        // A measurement that cannot be made is said in the draft; the solution stands.
        let runs = match Workbench::at(run.env.git, commit, "coverage") {
            Ok(bench) => {
                let runs = bugloop_loops::build::run_commands(
                    config,
                    bench.path(),
                    Some(bench.git_mount()),
                    &commands,
                )
                .await
                .map_err(|e| e.to_string());
                drop(bench);
                runs
            }
            Err(error) => Err(error.to_string()),
        };
        let runs = match runs {
            Ok(runs) => runs,
            Err(error) => {
                return Ok(format!(
                    "\n**Coverage:** not measured on {what}: {}.\n",
                    bugloop_domain::markdown::quiet(&error)
                ));
            }
        };
        let percent = match runs.last() {
            Some(last) if runs.iter().all(|r| r.passed) => {
                bugloop_domain::coverage::coverage_percent(&last.output)
            }
            _ => None,
        };
        match percent {
            Some(percent) => measured.push(percent),
            None => {
                let why = match runs.iter().find(|r| !r.passed) {
                    Some(failed) => format!(
                        "`{}` failed",
                        bugloop_domain::markdown::quiet(&failed.command)
                    ),
                    None => "no coverage summary bugloop reads was printed".to_owned(),
                };
                return Ok(format!("\n**Coverage:** not measured on {what}: {why}.\n"));
            }
        }
    }
    let (base, head) = (measured[0], measured[1]);
    let delta = head - base;
    // The code under test prints the summary read: its own claim, said as such.
    let command = commands.last().map(|c| c.raw.as_str()).unwrap_or_default();
    Ok(format!(
        "\n**Coverage:** {base:.1}% at the base, {head:.1}% with this change ({}{delta:.1} points), as `{}` reported.\n",
        if delta >= 0.0 { "+" } else { "" },
        bugloop_domain::markdown::quiet(command)
    ))
}

fn draft_body(run: &Run<'_, '_>, solution: &Solution, coverage: &str) -> String {
    let mut body = format!("Closes #{}\n\n## Summary\n\n", run.number());
    // The model's words: no hidden markers or open fences in a body bugloop writes.
    // Nor mentions: "@alice please approve" in it would page Alice.
    let summary = bugloop_domain::markdown::silence_mentions(
        &bugloop_domain::markdown::neutralise(solution.summary.trim()),
    );
    body.push_str(if summary.trim().is_empty() {
        "(the agent gave no summary)"
    } else {
        &summary
    });
    body.push_str("\n\n## Test results\n\n");
    for result in &solution.verify {
        body.push_str(&result.line());
    }
    body.push_str(&super::detail::total_line(&solution.verify).unwrap_or_default());
    body.push_str(coverage);
    body.push_str("\n## Files changed\n\n");
    // A file name is the solver's to choose (newlines, backticks, mentions): one inert line.
    for file in &solution.files {
        let file = bugloop_domain::markdown::quiet(file).replace('`', "'");
        body.push_str(&format!("- `{file}`\n"));
    }
    let attempts = run.record.attempts().len();
    let spent = run
        .record
        .spent()
        .map(|spent| format!(" ({})", spent.describe()))
        .unwrap_or_default();
    body.push_str(&format!(
        "\nSolved by bugloop in {attempts} attempt{}{spent}.\n",
        if attempts == 1 { "" } else { "s" }
    ));
    body
}

/// "`cmd` failed [Exited(1)]: <the last line it printed>": the exit status the runner appends is
/// said as such, and the line before it is what the command said.
fn failed_outcome(command: &str, output: &str) -> String {
    let mut lines = output.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut last = lines.next_back();
    let status = match last {
        Some(line) if line.starts_with('[') && line.ends_with(']') => {
            last = lines.next_back();
            format!(" {line}")
        }
        _ => String::new(),
    };
    match last {
        Some(said) => format!("`{command}` failed{status}: {}", first_line(said, 200)),
        None => format!("`{command}` failed{status}"),
    }
}

pub(super) fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    bugloop_loops::context::cut(line, max).0
}
