//! How a developer's reply to a finding was settled: the reviewer's `Decision` (the model's
//! answer), the `DisputeOutcome` of `bugloop reply --now`, and the `DisputeSummary` a review
//! report lists, whose decision reads as what happened (`conceded`, ...).

use std::fmt;

use bugloop_domain::status::ThreadStatus;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The reviewer's verdict on a developer's reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Concede,
    Maintain,
    Escalate,
    /// The developer's reply accepts the finding (agrees, or says it will be fixed): it stays
    /// open until the code changes.
    Accepted,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DisputeOutcome {
    pub finding: String,
    /// What became of the reply.
    pub result: DisputeResult,
    /// The model's answer; `None` when the reply was settled without asking the model.
    pub decision: Option<Decision>,
    pub reasoning: String,
    pub status: ThreadStatus,
}

impl DisputeOutcome {
    /// What happened, in words (`conceded`, ..., `nothing to weigh`).
    pub fn decision_label(&self) -> &'static str {
        self.result.as_str()
    }
}

/// What became of a dispute, as reports say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum DisputeResult {
    #[serde(rename = "conceded")]
    Conceded,
    #[serde(rename = "maintained")]
    Maintained,
    #[serde(rename = "escalated")]
    Escalated,
    /// The developer accepted the finding: it stays open.
    #[serde(rename = "accepted")]
    Accepted,
    /// The developer prevailed without asking the model (no human reviewer to decide).
    #[serde(rename = "the developer's decision stands")]
    DeveloperPrevails,
    /// The finding was resolved before the reply was weighed (a fix, say).
    #[serde(rename = "nothing to weigh")]
    NothingToWeigh,
    /// Someone who may not have the finding withdrawn disagreed: it stays open.
    #[serde(rename = "not theirs to settle")]
    NotTheirs,
    /// The author without write access argued a serious finding away: it stays open until
    /// someone with write access settles it.
    #[serde(rename = "held for a maintainer")]
    HeldForMaintainer,
}

impl DisputeResult {
    pub fn as_str(self) -> &'static str {
        match self {
            DisputeResult::Conceded => "conceded",
            DisputeResult::Maintained => "maintained",
            DisputeResult::Escalated => "escalated",
            DisputeResult::Accepted => "accepted",
            DisputeResult::DeveloperPrevails => "the developer's decision stands",
            DisputeResult::NothingToWeigh => "nothing to weigh",
            DisputeResult::NotTheirs => "not theirs to settle",
            DisputeResult::HeldForMaintainer => "held for a maintainer",
        }
    }
}

impl From<Option<Decision>> for DisputeResult {
    fn from(decision: Option<Decision>) -> Self {
        match decision {
            Some(Decision::Concede) => DisputeResult::Conceded,
            Some(Decision::Maintain) => DisputeResult::Maintained,
            Some(Decision::Escalate) => DisputeResult::Escalated,
            Some(Decision::Accepted) => DisputeResult::Accepted,
            None => DisputeResult::DeveloperPrevails,
        }
    }
}

impl fmt::Display for DisputeResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// A developer's reply answered before a review, as the review report lists it. (A plain comment:
// a doc comment would become a description in the published schema.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DisputeSummary {
    pub finding: String,
    /// conceded, maintained, escalated, accepted, the developer's decision stands, nothing to
    /// weigh, not theirs to settle, or held for a maintainer.
    #[schemars(with = "String")]
    pub decision: DisputeResult,
    /// The thread's status after it.
    #[schemars(with = "String")]
    pub status: ThreadStatus,
    pub reasoning: String,
}

impl From<DisputeOutcome> for DisputeSummary {
    fn from(outcome: DisputeOutcome) -> Self {
        DisputeSummary {
            decision: outcome.result,
            status: outcome.status,
            finding: outcome.finding,
            reasoning: outcome.reasoning,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispute_result_serializes_as_its_label() {
        for decision in [
            None,
            Some(Decision::Concede),
            Some(Decision::Maintain),
            Some(Decision::Escalate),
        ] {
            let result = DisputeResult::from(decision);
            assert_eq!(
                serde_json::to_value(result).unwrap(),
                serde_json::json!(result.as_str())
            );
        }
    }
}
