//! The solve record's step details as typed data: one struct per kind of step (the step's
//! `from -> to` says which), read and written with serde in the JSON shape the records already
//! stored have, in the local store (`solve_transitions.detail`) and in the GitHub issue's record
//! comment. The trackers keep a step's detail as JSON and do not read it (but for the GitHub
//! one emptying failed attempts' `output` when its comment runs out of room); only the pipeline
//! reads it, through these structs.
//!
//! Reading is as forgiving as reading the JSON key by key was: a missing field, or one of
//! another type, reads as its default (`None`, 0, `false`, empty), a list keeps the items that
//! read, and a detail that is not a JSON object reads as all defaults. A record may have been
//! written by an older bugloop (failed attempts without `tree`), or edited by hand on GitHub: a
//! run must still resume, show and escalate it, never stop on it.

use bugloop_forge::tracker::SolveTransition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The detail of step `step`, read as `T` (the struct of its kind). A detail that is not a JSON
/// object reads as `T`'s default: each field missing, as when each was read by its key (serde
/// would read an array as the struct's fields in order, which reading by key never did).
pub(super) fn read<T: DeserializeOwned + Default>(step: &SolveTransition) -> T {
    if !step.detail.is_object() {
        return T::default();
    }
    T::deserialize(&step.detail).unwrap_or_default()
}

/// A step's detail as the JSON the tracker records.
pub(super) fn to_json(detail: &impl Serialize) -> Result<Value, super::SolveError> {
    serde_json::to_value(detail).map_err(|error| {
        super::SolveError::Invalid(format!("a step's detail could not be written: {error}"))
    })
}

/// A field that reads as its default when it has another type, as a missing one does.
fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_default())
}

/// A field whose presence is what counts, with a text or not: `Some(None)` when it is there
/// but `null` (or not a text), `None` (through `default`) when it is missing.
fn present<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    Ok(Some(value.as_str().map(str::to_owned)))
}

/// A list of texts: the items that are texts, in order; anything but a list reads as empty.
fn texts<'de, D>(deserializer: D) -> Result<Vec<String>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    Ok(value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect())
}

/// [`texts`], for a field that only some steps of its kind have.
fn some_texts<'de, D>(deserializer: D) -> Result<Option<Vec<String>>, D::Error>
where
    D: Deserializer<'de>,
{
    texts(deserializer).map(Some)
}

/// A list of verify runs: each item that is not one reads as a run with no command that did
/// not pass (it is still listed, as it was); anything but a list reads as empty.
fn verify_runs<'de, D>(deserializer: D) -> Result<Option<Vec<VerifyResult>>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    Ok(Some(
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                if item.is_object() {
                    VerifyResult::deserialize(item).unwrap_or_default()
                } else {
                    VerifyResult::default()
                }
            })
            .collect(),
    ))
}

/// A step that carries nothing: filed (-> OPEN), escalated, merged, a ready draft's review
/// reopened. Written as `{}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Empty {}

/// -> ASSIGNED: the issue's text as it was taken, which is what is solved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Taken {
    #[serde(deserialize_with = "lenient")]
    pub title: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub body: Option<String>,
}

/// ASSIGNED -> SOLVING: the branch the solution goes on, its base, and the commit it starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct SolvingStarted {
    #[serde(deserialize_with = "lenient")]
    pub branch: String,
    #[serde(deserialize_with = "lenient")]
    pub base: String,
    #[serde(deserialize_with = "lenient")]
    pub start: String,
}

/// One test command's result, as a passing attempt records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct VerifyResult {
    #[serde(deserialize_with = "lenient")]
    pub command: String,
    #[serde(deserialize_with = "lenient")]
    pub passed: bool,
    /// How many tests it ran passed, failed and were skipped, when its runner said.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub counts: Option<bugloop_domain::test_counts::TestCounts>,
    /// Counts read from this many JUnit XML reports the commands wrote, not from a command.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub junit_reports: Option<u32>,
}

impl VerifyResult {
    /// A command's result, with the counts its output reports.
    pub fn of(run: &bugloop_report::build::VerifyRun) -> VerifyResult {
        VerifyResult {
            command: run.command.clone(),
            passed: run.passed,
            counts: bugloop_domain::test_counts::from_output(&run.output),
            junit_reports: None,
        }
    }

    /// The counts of `files` JUnit XML reports, as a result of their own.
    pub fn of_junit(counts: bugloop_domain::test_counts::TestCounts, files: u32) -> VerifyResult {
        VerifyResult {
            command: String::new(),
            passed: counts.failed == 0,
            counts: Some(counts),
            junit_reports: Some(files),
        }
    }

    /// "- `cmd`: passed (12 passed, 1 skipped)", a line of a change request's test results.
    pub fn line(&self) -> String {
        let counts = self
            .counts
            .map(|c| format!(" ({})", c.describe()))
            .unwrap_or_default();
        let what = match self.junit_reports {
            Some(files) => format!(
                "JUnit XML ({files} report{})",
                if files == 1 { "" } else { "s" }
            ),
            None => format!("`{}`", self.command),
        };
        format!(
            "- {what}: {}{counts}\n",
            if self.passed { "passed" } else { "failed" }
        )
    }
}

/// The counts of all `results` that report any, summed: "**Tests:** 14 passed, 1 skipped".
pub(super) fn total_line(results: &[VerifyResult]) -> Option<String> {
    let mut total: Option<bugloop_domain::test_counts::TestCounts> = None;
    for counts in results.iter().filter_map(|r| r.counts) {
        let sum = total.get_or_insert_default();
        sum.passed = sum.passed.saturating_add(counts.passed);
        sum.failed = sum.failed.saturating_add(counts.failed);
        sum.skipped = sum.skipped.saturating_add(counts.skipped);
    }
    total.map(|t| format!("\n**Tests:** {}\n", t.describe()))
}

/// SOLVING -> SOLVING: an attempt (failed, stopped by a guardrail or at the time limit, or
/// passed), or a run that stopped before finishing one (out of budget). Which fields a step has
/// depends on which of those it is (the constructors below); a field a step does not have is
/// not written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct AttemptStep {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub attempt: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub passed: Option<bool>,
    /// What came of it, without the "attempt N: " of the step's reason.
    #[serde(deserialize_with = "lenient")]
    pub outcome: String,
    /// Why the run stopped before the attempt ended (`budget`, `model`). Its presence is what makes the
    /// step no attempt, whatever its value, as before.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub stopped: Option<Option<String>>,
    /// The guardrail a passing change was over (`binary`, `max_diff_lines`, `protected_paths`).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub guardrail: Option<String>,
    /// A passing attempt's commit.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub commit: Option<String>,
    /// The agent's summary.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub summary: Option<String>,
    /// A passing attempt's test commands.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "verify_runs"
    )]
    pub verify: Option<Vec<VerifyResult>>,
    /// A passing attempt's changed files.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_texts"
    )]
    pub files: Option<Vec<String>>,
    /// What the test commands left in the tree, not committed.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "some_texts"
    )]
    pub left_out: Option<Vec<String>>,
    /// The end of a failed attempt's failing command's output (emptied when the GitHub record
    /// comment runs out of room).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub output: Option<String>,
    /// The commit that keeps a failed attempt's edits: written as `null` when they could not be
    /// kept, missing in steps that keep none.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "present")]
    pub tree: Option<Option<String>>,
}

impl AttemptStep {
    /// Attempt `number` ran out of the time solving had left.
    pub fn stopped_at_the_time_limit(number: u64) -> AttemptStep {
        AttemptStep {
            attempt: Some(number),
            passed: Some(false),
            outcome: "stopped at the time limit".to_owned(),
            ..AttemptStep::default()
        }
    }

    /// The run stopped for `why` (`budget`, `model`): no attempt, a run to resume.
    pub fn stopped(why: &str, outcome: String) -> AttemptStep {
        AttemptStep {
            stopped: Some(Some(why.to_owned())),
            outcome,
            ..AttemptStep::default()
        }
    }

    /// Attempt `number`'s change was over `guardrail`.
    pub fn breach(number: u64, guardrail: &str, outcome: String) -> AttemptStep {
        AttemptStep {
            attempt: Some(number),
            passed: Some(false),
            guardrail: Some(guardrail.to_owned()),
            outcome,
            ..AttemptStep::default()
        }
    }

    /// Attempt `number` passed with `solution`.
    pub fn passed(
        number: u64,
        outcome: String,
        solution: &Solution,
        left_out: &[String],
    ) -> AttemptStep {
        AttemptStep {
            attempt: Some(number),
            passed: Some(true),
            outcome,
            commit: Some(solution.commit.clone()),
            summary: Some(solution.summary.clone()),
            verify: Some(solution.verify.clone()),
            files: Some(solution.files.clone()),
            left_out: Some(left_out.to_vec()),
            ..AttemptStep::default()
        }
    }

    /// Attempt `number` failed; `tree` keeps its edits, when they could be kept.
    pub fn failed(
        number: u64,
        outcome: String,
        summary: String,
        output: String,
        left_out: &[String],
        tree: Option<String>,
    ) -> AttemptStep {
        AttemptStep {
            attempt: Some(number),
            passed: Some(false),
            outcome,
            summary: Some(summary),
            output: Some(output),
            left_out: Some(left_out.to_vec()),
            tree: Some(tree),
            ..AttemptStep::default()
        }
    }

    /// Whether the step is a run that stopped (out of budget) rather than an attempt.
    pub fn is_stop(&self) -> bool {
        self.stopped.is_some()
    }

    /// Why the run stopped, when it did and said so.
    pub fn stop_reason(&self) -> Option<String> {
        self.stopped.clone().flatten()
    }

    pub fn has_passed(&self) -> bool {
        self.passed == Some(true)
    }

    /// The commit that keeps the attempt's edits, if one does.
    pub fn kept_tree(&self) -> Option<String> {
        self.tree.clone().flatten()
    }
}

/// A solver attempt whose solution passed, with what the draft says about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Solution {
    pub commit: String,
    pub summary: String,
    pub verify: Vec<VerifyResult>,
    pub files: Vec<String>,
}

impl Solution {
    /// The solution a passing attempt's step records.
    pub fn of(step: &AttemptStep) -> Solution {
        Solution {
            commit: step.commit.clone().unwrap_or_default(),
            summary: step.summary.clone().unwrap_or_default(),
            verify: step.verify.clone().unwrap_or_default(),
            files: step.files.clone().unwrap_or_default(),
        }
    }
}

/// SOLVING -> PR_DRAFT: the draft change request, and the commit it proposes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct DraftOpened {
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub change_request: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub commit: String,
}

/// PR_DRAFT -> REVIEWING (the draft's first review) and REVIEWING -> READY (the gate): the head
/// reviewed or passed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct ReviewedHead {
    #[serde(deserialize_with = "lenient")]
    pub head: String,
}

/// Where a review round is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RoundPhase {
    /// Its commit is made, not yet pushed, answered and reviewed.
    Built,
    /// Its Build run made no commit.
    Failed,
    /// Pushed, its threads answered and the new head reviewed.
    Done,
    /// The review of `commit` was not complete (the model failed or its budget ran out): not a
    /// round; the next run reviews the commit again.
    Unreviewed,
    /// `commit` reviewed again after an incomplete review: not a round.
    Reviewed,
}

/// REVIEWING -> REVIEWING: a review round, built, failed or done (the constructors below).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct RoundStep {
    #[serde(deserialize_with = "lenient")]
    pub round: u64,
    /// `None` when missing or not a phase bugloop writes: then the round is neither built nor
    /// done, as when the text was compared.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub phase: Option<RoundPhase>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub commit: Option<String>,
    /// The head the round's commit was built on.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub previous: Option<String>,
    /// The threads the round addresses.
    #[serde(deserialize_with = "texts")]
    pub threads: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub summary: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient")]
    pub outcome: Option<String>,
}

/// A review round recorded as built (its commit made) and maybe not finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct BuiltRound {
    pub number: u64,
    pub commit: String,
    pub previous: String,
    pub threads: Vec<String>,
    pub summary: String,
}

impl RoundStep {
    /// `round` was built: its commit is made.
    pub fn built(round: &BuiltRound) -> RoundStep {
        RoundStep {
            round: round.number,
            phase: Some(RoundPhase::Built),
            commit: Some(round.commit.clone()),
            previous: Some(round.previous.clone()),
            threads: round.threads.clone(),
            summary: Some(round.summary.clone()),
            outcome: None,
        }
    }

    /// Round `number`'s Build run, on `threads`, made no commit.
    pub fn failed(number: u64, threads: Vec<String>, outcome: String) -> RoundStep {
        RoundStep {
            round: number,
            phase: Some(RoundPhase::Failed),
            threads,
            outcome: Some(outcome),
            ..RoundStep::default()
        }
    }

    /// `round` is finished.
    pub fn done(round: &BuiltRound, outcome: String) -> RoundStep {
        RoundStep {
            round: round.number,
            phase: Some(RoundPhase::Done),
            commit: Some(round.commit.clone()),
            threads: round.threads.clone(),
            outcome: Some(outcome),
            ..RoundStep::default()
        }
    }

    /// The review of `commit` (the head of round `number`, 0 for the draft as opened) was not
    /// complete, for `why`.
    pub fn unreviewed(number: u64, commit: &str, why: String) -> RoundStep {
        RoundStep::review(RoundPhase::Unreviewed, number, commit, why)
    }

    /// `commit`, whose review was not complete before, is reviewed.
    pub fn reviewed(number: u64, commit: &str, outcome: String) -> RoundStep {
        RoundStep::review(RoundPhase::Reviewed, number, commit, outcome)
    }

    /// A review of round `number`'s head again (no round of its own), in `phase`.
    fn review(phase: RoundPhase, number: u64, commit: &str, outcome: String) -> RoundStep {
        RoundStep {
            round: number,
            phase: Some(phase),
            commit: Some(commit.to_owned()),
            outcome: Some(outcome),
            ..RoundStep::default()
        }
    }

    /// Whether the step is a round of its own (built, failed or done), not a review of a head
    /// again.
    pub fn is_round(&self) -> bool {
        !matches!(
            self.phase,
            Some(RoundPhase::Unreviewed | RoundPhase::Reviewed)
        )
    }

    /// The built round this step records.
    pub fn as_built(&self) -> BuiltRound {
        BuiltRound {
            number: self.round,
            commit: self.commit.clone().unwrap_or_default(),
            previous: self.previous.clone().unwrap_or_default(),
            threads: self.threads.clone(),
            summary: self.summary.clone().unwrap_or_default(),
        }
    }
}
