//! What the solve pipeline did with an issue: its state, the solver's attempts, the review rounds,
//! the gate, and every transition with its reason; and how `bugloop solve` and `bugloop status`
//! show it.

use bugloop_domain::solve::SolveState;
use serde::{Deserialize, Serialize};

/// What solving an issue has spent, over every run: the model's tokens, its price where the
/// model has one, and the wall time of the steps that used it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct IssueSpend {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub seconds: u64,
}

impl IssueSpend {
    pub fn add(&mut self, other: &IssueSpend) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        // A record is text anyone with write access can edit: a cost that is no price
        // (negative, not finite) is not added, and the sum stays finite.
        let sane = |cost: Option<f64>| cost.filter(|c| c.is_finite() && *c >= 0.0);
        self.cost_usd = match (sane(self.cost_usd), sane(other.cost_usd)) {
            (None, None) => None,
            (a, b) => Some((a.unwrap_or(0.0) + b.unwrap_or(0.0)).min(f64::MAX)),
        };
        self.seconds = self.seconds.saturating_add(other.seconds);
    }

    /// "1,234 input and 56 output tokens, $0.0123, 42 s".
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} input and {} output tokens",
            thousands(self.input_tokens),
            thousands(self.output_tokens)
        );
        if let Some(cost) = self.cost_usd {
            text.push_str(&format!(", ${cost:.4}"));
        }
        text.push_str(&format!(", {} s", self.seconds));
        text
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One attempt of the build/test/evaluate loop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    pub number: u64,
    pub passed: bool,
    /// What came of it: the failing command, the guardrail, the model's error.
    pub outcome: String,
}

/// One round of answering the draft's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Round {
    pub number: u64,
    /// The threads it addressed (finding ids).
    pub threads: Vec<String>,
    /// The commit it pushed, when it made one.
    pub commit: Option<String>,
    pub outcome: String,
}

/// One recorded transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub from: Option<SolveState>,
    pub to: SolveState,
    pub reason: String,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolveReport {
    pub issue: u64,
    pub title: String,
    /// `None`: bugloop never took the issue.
    pub state: Option<SolveState>,
    pub branch: Option<String>,
    pub change_request: Option<u64>,
    pub attempts: Vec<Attempt>,
    pub rounds: Vec<Round>,
    /// What the last run did, or why it stopped where it did.
    pub message: String,
    /// The last run stopped before the pipeline's next state, and why: `budget` (the run's
    /// budget ran out; `bugloop solve N` with more budget resumes where it stopped).
    pub stopped: Option<String>,
    pub history: Vec<Step>,
    /// When the pipeline should be looked at again without an event (a wait for a reviewer
    /// ends then): the App queues a run for that time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_at: Option<String>,
    /// What solving it has spent so far (none recorded: no model call spent anything).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spent: Option<IssueSpend>,
}

impl SolveReport {
    /// The report as text, for a terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "#{} {}: {}\n",
            self.issue,
            self.title,
            self.state
                .map_or("not taken by bugloop", SolveState::as_str)
        );
        if let Some(branch) = &self.branch {
            out.push_str(&format!("  branch: {branch}\n"));
        }
        if let Some(number) = self.change_request {
            out.push_str(&format!("  change request: #{number}\n"));
        }
        for attempt in &self.attempts {
            out.push_str(&format!(
                "  attempt {}: {} ({})\n",
                attempt.number,
                if attempt.passed { "passed" } else { "failed" },
                attempt.outcome
            ));
        }
        for round in &self.rounds {
            out.push_str(&format!(
                "  review round {}: {} thread{}, {}\n",
                round.number,
                round.threads.len(),
                if round.threads.len() == 1 { "" } else { "s" },
                round.outcome
            ));
        }
        if let Some(spent) = &self.spent {
            out.push_str(&format!("  spent: {}\n", spent.describe()));
        }
        if !self.message.is_empty() {
            out.push_str(&format!("  {}\n", self.message));
        }
        out
    }

    /// Every transition, one line each.
    pub fn history_text(&self) -> String {
        self.history
            .iter()
            .map(|step| {
                format!(
                    "{}  {} -> {}: {}\n",
                    step.at,
                    step.from.map_or("(new)", SolveState::as_str),
                    step.to,
                    step.reason
                )
            })
            .collect()
    }
}
