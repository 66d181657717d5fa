//! An issue's recorded transitions, read for what the pipeline resumes from: the state, the
//! branch, the attempts and rounds so far, the draft.

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{SolveTransition, TrackedIssue};
use bugloop_report::solve::{Attempt, Round, SolveReport, Step};
use jiff::Timestamp;
use serde_json::Value;

#[derive(Debug, Clone, Default)]
pub struct Record {
    history: Vec<SolveTransition>,
}

/// Where the solving started (the ASSIGNED -> SOLVING step).
#[derive(Debug, Clone)]
pub(super) struct Solving {
    pub branch: String,
    pub base: String,
    /// The commit the solution starts from.
    pub start: String,
    pub started_at: Timestamp,
}

/// A solver attempt whose solution passed, with what the draft says about it.
#[derive(Debug, Clone)]
pub(super) struct Solution {
    pub commit: String,
    pub summary: String,
    pub verify: Value,
    pub files: Value,
}

/// A review round recorded as built (its commit made) and maybe not finished.
#[derive(Debug, Clone)]
pub(super) struct BuiltRound {
    pub number: u64,
    pub commit: String,
    pub previous: String,
    pub threads: Vec<String>,
    pub summary: String,
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A step's outcome without its "attempt N: " or "round N: " prefix.
fn outcome(t: &SolveTransition) -> String {
    Some(text(&t.detail, "outcome"))
        .filter(|o| !o.is_empty())
        .unwrap_or_else(|| t.reason.clone())
}

impl Record {
    pub fn new(history: Vec<SolveTransition>) -> Record {
        Record { history }
    }

    pub fn state(&self) -> Option<SolveState> {
        self.history.last().map(|t| t.to)
    }

    pub fn len(&self) -> usize {
        self.history.len()
    }

    pub fn is_empty(&self) -> bool {
        self.history.is_empty()
    }

    pub fn last_reason(&self) -> String {
        self.history
            .last()
            .map(|t| t.reason.clone())
            .unwrap_or_default()
    }

    pub(super) fn push(&mut self, transition: SolveTransition) {
        self.history.push(transition);
    }

    /// Transitions since the issue was last (re)assigned: a retry starts a new solve.
    fn current(&self) -> &[SolveTransition] {
        let start = self
            .history
            .iter()
            .rposition(|t| t.to == SolveState::Assigned)
            .unwrap_or(0);
        &self.history[start..]
    }

    fn within(&self, state: SolveState) -> impl Iterator<Item = &SolveTransition> {
        self.current()
            .iter()
            .filter(move |t| t.from == Some(state) && t.to == state)
    }

    /// The issue's title and body as they were taken (ASSIGNED): what is solved, whatever the
    /// issue says now.
    pub(super) fn taken_text(&self) -> Option<(String, String)> {
        let step = self
            .current()
            .first()
            .filter(|t| t.to == SolveState::Assigned)?;
        let title = step.detail.get("title")?.as_str()?.to_owned();
        let body = step.detail.get("body")?.as_str()?.to_owned();
        Some((title, body))
    }

    pub(super) fn solving(&self) -> Option<Solving> {
        let step = self
            .current()
            .iter()
            .find(|t| t.to == SolveState::Solving && t.from == Some(SolveState::Assigned))?;
        Some(Solving {
            branch: text(&step.detail, "branch"),
            base: text(&step.detail, "base"),
            start: text(&step.detail, "start"),
            started_at: step.at,
        })
    }

    pub fn attempts(&self) -> Vec<Attempt> {
        self.within(SolveState::Solving)
            // A run that stopped (out of budget) made no attempt of its own.
            .filter(|t| t.detail.get("stopped").is_none())
            .map(|t| Attempt {
                number: t.detail.get("attempt").and_then(Value::as_u64).unwrap_or(0),
                passed: t.detail.get("passed").and_then(Value::as_bool) == Some(true),
                outcome: outcome(t),
            })
            .collect()
    }

    /// The last failed attempt's command output, if it kept one.
    pub(super) fn last_output(&self) -> Option<String> {
        self.within(SolveState::Solving)
            .filter(|t| t.detail.get("stopped").is_none())
            .last()
            .map(|t| text(&t.detail, "output"))
            .filter(|o| !o.is_empty())
    }

    /// The last attempt whose edits were kept, with the commit that keeps them.
    pub(super) fn last_snapshot(&self) -> Option<(u64, String)> {
        self.within(SolveState::Solving)
            .filter_map(|t| {
                let tree = t.detail.get("tree")?.as_str()?.to_owned();
                Some((t.detail.get("attempt")?.as_u64()?, tree))
            })
            .last()
    }

    /// The attempt whose solution passed, once one did.
    pub(super) fn solution(&self) -> Option<Solution> {
        self.within(SolveState::Solving)
            .find(|t| t.detail.get("passed").and_then(Value::as_bool) == Some(true))
            .map(|t| Solution {
                commit: text(&t.detail, "commit"),
                summary: text(&t.detail, "summary"),
                verify: t.detail.get("verify").cloned().unwrap_or(Value::Null),
                files: t.detail.get("files").cloned().unwrap_or(Value::Null),
            })
    }

    pub(super) fn change_request(&self) -> Option<u64> {
        self.current()
            .iter()
            .find(|t| t.to == SolveState::PrDraft)
            .and_then(|t| t.detail.get("change_request").and_then(Value::as_u64))
    }

    /// Review rounds that ended (done or failed).
    pub fn rounds(&self) -> Vec<Round> {
        self.within(SolveState::Reviewing)
            .filter(|t| text(&t.detail, "phase") != "built")
            .map(|t| Round {
                number: t.detail.get("round").and_then(Value::as_u64).unwrap_or(0),
                threads: t
                    .detail
                    .get("threads")
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                commit: t
                    .detail
                    .get("commit")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                outcome: outcome(t),
            })
            .collect()
    }

    /// The last round, if it was built and not yet finished.
    pub(super) fn unfinished_round(&self) -> Option<BuiltRound> {
        let last = self.history.last()?;
        if last.from != Some(SolveState::Reviewing)
            || last.to != SolveState::Reviewing
            || text(&last.detail, "phase") != "built"
        {
            return None;
        }
        Some(BuiltRound {
            number: last
                .detail
                .get("round")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            commit: text(&last.detail, "commit"),
            previous: text(&last.detail, "previous"),
            threads: last
                .detail
                .get("threads")
                .and_then(Value::as_array)
                .map(|ids| {
                    ids.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            summary: text(&last.detail, "summary"),
        })
    }

    /// The last commit the pipeline verified (a passing solution or a finished round).
    pub(super) fn verified_head(&self) -> Option<String> {
        self.current()
            .iter()
            .rev()
            .find_map(|t| match (t.from, t.to) {
                (Some(SolveState::Reviewing), SolveState::Reviewing)
                    if text(&t.detail, "phase") == "done" =>
                {
                    Some(text(&t.detail, "commit"))
                }
                (Some(SolveState::Solving), SolveState::Solving)
                    if t.detail.get("passed").and_then(Value::as_bool) == Some(true) =>
                {
                    Some(text(&t.detail, "commit"))
                }
                _ => None,
            })
            .filter(|c| !c.is_empty())
    }

    pub fn report(&self, issue: &TrackedIssue, message: String) -> SolveReport {
        SolveReport {
            issue: issue.number,
            title: issue.title.clone(),
            state: self.state(),
            branch: self.solving().map(|s| s.branch),
            change_request: self.change_request(),
            attempts: self.attempts(),
            rounds: self.rounds(),
            message,
            stopped: self
                .current()
                .last()
                .and_then(|t| t.detail.get("stopped"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            history: self
                .history
                .iter()
                .map(|t| Step {
                    from: t.from,
                    to: t.to,
                    reason: t.reason.clone(),
                    at: t.at.to_string(),
                })
                .collect(),
        }
    }
}
