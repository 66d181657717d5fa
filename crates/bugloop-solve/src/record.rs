//! An issue's recorded transitions, read for what the pipeline resumes from: the state, the
//! branch, the attempts and rounds so far, the draft.

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{SolveTransition, TrackedIssue};
use bugloop_report::solve::{Attempt, Round, SolveReport, Step};
use jiff::Timestamp;

use super::detail::{
    AttemptStep, BuiltRound, DraftOpened, RoundPhase, RoundStep, Solution, SolvingStarted, Taken,
    read,
};

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

/// A step's outcome without its "attempt N: " or "round N: " prefix: the step's reason when its
/// detail has none.
fn outcome(t: &SolveTransition, recorded: Option<&str>) -> String {
    recorded
        .filter(|o| !o.is_empty())
        .map_or_else(|| t.reason.clone(), str::to_owned)
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

    /// The last step's detail, read as `T` (the struct of its kind).
    pub(super) fn last_detail<T: serde::de::DeserializeOwned + Default>(&self) -> T {
        self.history.last().map(read).unwrap_or_default()
    }

    /// When the last step to `state` was recorded.
    pub(super) fn last_at(&self, state: SolveState) -> Option<Timestamp> {
        self.history
            .iter()
            .rev()
            .find(|t| t.to == state)
            .map(|t| t.at)
    }

    /// How many steps of the whole record went to `state`.
    pub(super) fn count_of(&self, state: SolveState) -> usize {
        self.history
            .iter()
            .filter(|t| t.to == state && t.from != Some(state))
            .count()
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

    /// How many runs in a row, at the end of the solving steps, stopped for `why` (`model`).
    pub(super) fn stops_in_a_row(&self, why: &str) -> usize {
        let steps: Vec<AttemptStep> = self.attempt_steps().map(|(_, step)| step).collect();
        steps
            .iter()
            .rev()
            .take_while(|step| step.stop_reason().as_deref() == Some(why))
            .count()
    }

    /// The SOLVING -> SOLVING steps, with their details.
    fn attempt_steps(&self) -> impl Iterator<Item = (&SolveTransition, AttemptStep)> {
        self.within(SolveState::Solving).map(|t| (t, read(t)))
    }

    /// The REVIEWING -> REVIEWING steps, with their details.
    fn round_steps(&self) -> impl Iterator<Item = (&SolveTransition, RoundStep)> {
        self.within(SolveState::Reviewing).map(|t| (t, read(t)))
    }

    /// The issue's title and body as they were taken (ASSIGNED): what is solved, whatever the
    /// issue says now.
    pub(super) fn taken_text(&self) -> Option<(String, String)> {
        let step = self
            .current()
            .first()
            .filter(|t| t.to == SolveState::Assigned)?;
        let taken: Taken = read(step);
        Some((taken.title?, taken.body?))
    }

    pub(super) fn solving(&self) -> Option<Solving> {
        let step = self
            .current()
            .iter()
            .find(|t| t.to == SolveState::Solving && t.from == Some(SolveState::Assigned))?;
        let started: SolvingStarted = read(step);
        Some(Solving {
            branch: started.branch,
            base: started.base,
            start: started.start,
            started_at: step.at,
        })
    }

    pub fn attempts(&self) -> Vec<Attempt> {
        self.attempt_steps()
            // A run that stopped (out of budget) made no attempt of its own.
            .filter(|(_, step)| !step.is_stop())
            .map(|(t, step)| Attempt {
                number: step.attempt.unwrap_or(0),
                passed: step.has_passed(),
                outcome: outcome(t, Some(&step.outcome)),
            })
            .collect()
    }

    /// The last failed attempt's command output, if it kept one.
    pub(super) fn last_output(&self) -> Option<String> {
        self.attempt_steps()
            .filter(|(_, step)| !step.is_stop())
            .last()
            .and_then(|(_, step)| step.output)
            .filter(|o| !o.is_empty())
    }

    /// The last attempt whose edits were kept, with the commit that keeps them.
    pub(super) fn last_snapshot(&self) -> Option<(u64, String)> {
        self.attempt_steps()
            .filter_map(|(_, step)| Some((step.attempt?, step.kept_tree()?)))
            .last()
    }

    /// The attempt whose solution passed, once one did.
    pub(super) fn solution(&self) -> Option<Solution> {
        self.attempt_steps()
            .find(|(_, step)| step.has_passed())
            .map(|(_, step)| Solution::of(&step))
    }

    pub(super) fn change_request(&self) -> Option<u64> {
        self.current()
            .iter()
            .find(|t| t.to == SolveState::PrDraft)
            .and_then(|t| read::<DraftOpened>(t).change_request)
    }

    /// Review rounds that ended (done or failed).
    pub fn rounds(&self) -> Vec<Round> {
        self.round_steps()
            .filter(|(_, step)| step.is_round() && step.phase != Some(RoundPhase::Built))
            .map(|(t, step)| Round {
                number: step.round,
                outcome: outcome(t, step.outcome.as_deref()),
                threads: step.threads,
                commit: step.commit,
            })
            .collect()
    }

    /// The last round, if it was built and not yet finished (its new head's review may have
    /// been incomplete since).
    pub(super) fn unfinished_round(&self) -> Option<BuiltRound> {
        let (_, step) = self
            .last_steps_in_review()
            .find(|(_, step)| step.is_round())?;
        (step.phase == Some(RoundPhase::Built)).then(|| step.as_built())
    }

    /// The REVIEWING -> REVIEWING steps at the end of the record, last first.
    fn last_steps_in_review(&self) -> impl Iterator<Item = (&SolveTransition, RoundStep)> {
        self.history
            .iter()
            .rev()
            .take_while(|t| t.from == Some(SolveState::Reviewing) && t.to == SolveState::Reviewing)
            .map(|t| (t, read(t)))
    }

    /// The round and head whose review the last step says was not complete.
    pub(super) fn unreviewed(&self) -> Option<(u64, String)> {
        let (_, step) = self.last_steps_in_review().next()?;
        (step.phase == Some(RoundPhase::Unreviewed))
            .then(|| (step.round, step.commit.unwrap_or_default()))
            .filter(|(_, head)| !head.is_empty())
    }

    /// How many runs in a row, at the end of the record, found a review of the draft not
    /// complete.
    pub(super) fn unreviewed_in_a_row(&self) -> usize {
        self.last_steps_in_review()
            .take_while(|(_, step)| step.phase == Some(RoundPhase::Unreviewed))
            .count()
    }

    /// The last commit the pipeline verified (a passing solution or a finished round).
    pub(super) fn verified_head(&self) -> Option<String> {
        self.current()
            .iter()
            .rev()
            .find_map(|t| match (t.from, t.to) {
                (Some(SolveState::Reviewing), SolveState::Reviewing) => {
                    let step: RoundStep = read(t);
                    (step.phase == Some(RoundPhase::Done)).then(|| step.commit.unwrap_or_default())
                }
                (Some(SolveState::Solving), SolveState::Solving) => {
                    let step: AttemptStep = read(t);
                    step.has_passed().then(|| step.commit.unwrap_or_default())
                }
                _ => None,
            })
            .filter(|c| !c.is_empty())
    }

    /// Why the last run stopped before solving ended (out of budget), when it did. Only the
    /// SOLVING -> SOLVING step of a stop has ever written `stopped`; the last step is read for it
    /// whatever its kind, as before, so that no record reads differently.
    fn stopped(&self) -> Option<String> {
        read::<AttemptStep>(self.current().last()?).stop_reason()
    }

    /// What every step recorded as spent, summed (`None` when none did).
    pub fn spent(&self) -> Option<bugloop_report::solve::IssueSpend> {
        let mut total: Option<bugloop_report::solve::IssueSpend> = None;
        for transition in &self.history {
            let Some(spent) = transition
                .detail
                .get("spent")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
            else {
                continue;
            };
            total.get_or_insert_default().add(&spent);
        }
        total
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
            stopped: self.stopped(),
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
            wake_at: None,
            spent: self.spent(),
        }
    }
}
