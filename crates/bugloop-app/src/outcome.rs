//! A job's outcome: its report and a [`Verdict`] that says what happened, in the terms every
//! front end maps from (the CLI to an exit code, the Action to a check conclusion, the server to
//! a job state).

use bugloop_report::act::ActReport;
use bugloop_report::build::{BuildStatus, Landing};
use bugloop_report::converge::{ConvergeReport, Exit};
use bugloop_report::review::ReviewReport;

/// What a job did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It did what was asked.
    Done,
    /// There was nothing to do (an empty change); the reason says why.
    NothingToDo { reason: String },
    /// The job was not run here, by design (a write asked for on a fork's pull request); the
    /// reason says why. A check reports it as neutral.
    Skipped { reason: String },
    /// Open findings score at or above the threshold the caller set.
    FindingsAtThreshold { max_score: u8, threshold: u8 },
    /// Part of the work failed; the report shows what was done and what was not.
    Incomplete { cause: String },
    /// A change was asked for and nothing was committed (the agent changed nothing, a verify
    /// command failed, the agent did not finish).
    NotCommitted { reason: String },
    /// The change was refused by a guardrail (a protected path): nothing was committed.
    Refused { reason: String },
    /// A verified commit waits on a branch of its own (the user's branch moved on meanwhile).
    LeftOnBranch { branch: String },
    /// A converge run stopped without a clean audit (cap reached or stuck).
    NotConverged { why: String },
    /// The job ran and failed; its report says where.
    Failed { cause: String },
    /// A check found problems (an input read with problems, a machine missing what the
    /// configuration relies on).
    Problems { what: String },
}

/// A job's report and verdict, plus warnings the user should see beside the report.
#[derive(Debug, Clone)]
pub struct Outcome<R> {
    pub report: R,
    pub verdict: Verdict,
    pub warnings: Vec<String>,
}

impl<R> Outcome<R> {
    pub fn new(report: R, verdict: Verdict) -> Self {
        Outcome {
            report,
            verdict,
            warnings: Vec::new(),
        }
    }
}

/// A review's verdict: incomplete first (its findings may be partial), then the threshold.
pub(crate) fn review_verdict(report: &ReviewReport, fail_on: Option<u8>) -> Verdict {
    if !report.complete {
        let cause = match report.errors.as_slice() {
            // One cause (a budget that ran out) is said as it is.
            [one] => format!("{one}; see \"Not reviewed\""),
            errors => format!(
                "{} error(s) stopped parts of the review; see \"Not reviewed\"",
                errors.len()
            ),
        };
        return Verdict::Incomplete { cause };
    }
    match (fail_on, report.max_open_score()) {
        (Some(threshold), Some(max_score)) if max_score >= threshold => {
            Verdict::FindingsAtThreshold {
                max_score,
                threshold,
            }
        }
        _ => Verdict::Done,
    }
}

/// An action's verdict: what became of the change it was asked to make.
pub(crate) fn act_verdict(report: &ActReport) -> Verdict {
    let Some(build) = &report.build else {
        return Verdict::Done;
    };
    match &build.status {
        BuildStatus::Committed { .. } => match &report.landing {
            Some(Landing::Branch { name, .. }) => Verdict::LeftOnBranch {
                branch: name.clone(),
            },
            _ => Verdict::Done,
        },
        BuildStatus::Refused { reason, .. } => Verdict::Refused {
            reason: reason.clone(),
        },
        BuildStatus::NoChanges { .. } => Verdict::NotCommitted {
            reason: "the agent changed nothing".to_owned(),
        },
        BuildStatus::VerifyFailed { command, .. } => Verdict::NotCommitted {
            reason: format!("the verify command `{command}` failed"),
        },
        BuildStatus::AgentFailed { error } => Verdict::NotCommitted {
            reason: format!("the agent did not finish: {error}"),
        },
    }
}

pub(crate) fn converge_verdict(report: &ConvergeReport) -> Verdict {
    match report.exit {
        Exit::Converged => Verdict::Done,
        Exit::CapReached | Exit::Stuck => Verdict::NotConverged {
            why: format!("{}: {}", report.exit.as_str(), report.detail),
        },
        Exit::Error => Verdict::Failed {
            cause: report.detail.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bugloop_report::build::BuildResult;

    fn act_report(status: Option<BuildStatus>, landing: Option<Landing>) -> ActReport {
        ActReport {
            action: bugloop_report::act::Intent::Fix(vec!["a".to_owned()]),
            chosen_by: bugloop_report::act::ChosenBy::Command,
            build: status.map(|status| BuildResult {
                status,
                summary: String::new(),
                verify: Vec::new(),
                left_out: Vec::new(),
                out_of_budget: false,
                model_unavailable: false,
                usage: bugloop_llm::Usage::default(),
                transcript: std::path::PathBuf::new(),
            }),
            landing,
            answer: None,
            resolved: Vec::new(),
            message: String::new(),
        }
    }

    #[test]
    fn an_action_without_a_build_is_done_and_a_commit_on_a_side_branch_says_where() {
        assert_eq!(act_verdict(&act_report(None, None)), Verdict::Done);
        let committed = BuildStatus::Committed {
            commit: "abc".to_owned(),
            files: vec!["a.rs".to_owned()],
            unverified: false,
        };
        let branch = Landing::Branch {
            name: "bugloop/fix-1".to_owned(),
            commit: "abc".to_owned(),
            reason: "the branch moved".to_owned(),
        };
        assert_eq!(
            act_verdict(&act_report(Some(committed.clone()), Some(branch))),
            Verdict::LeftOnBranch {
                branch: "bugloop/fix-1".to_owned()
            }
        );
        assert_eq!(
            act_verdict(&act_report(Some(committed), None)),
            Verdict::Done
        );
    }

    #[test]
    fn a_refusal_is_not_a_failed_verification() {
        let refused = BuildStatus::Refused {
            reason: "touches .github/workflows".to_owned(),
            guardrail: true,
        };
        assert_eq!(
            act_verdict(&act_report(Some(refused), None)),
            Verdict::Refused {
                reason: "touches .github/workflows".to_owned()
            }
        );
        let failed = BuildStatus::VerifyFailed {
            command: "cargo test".to_owned(),
            output: String::new(),
        };
        assert_eq!(
            act_verdict(&act_report(Some(failed), None)),
            Verdict::NotCommitted {
                reason: "the verify command `cargo test` failed".to_owned()
            }
        );
    }
}
