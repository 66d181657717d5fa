//! What a run spent and the limit it ran into: the data [`crate::budget::Meter`] reports and
//! [`crate::LlmError`] carries (its own module so the error type does not depend on the meter).

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::types::Usage;

/// Which limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "limit", content = "value")]
pub enum Limit {
    InputTokens(u64),
    OutputTokens(u64),
    CostUsd(f64),
    Turns(u32),
    WallTime(Duration),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::InputTokens(n) => write!(f, "input token limit of {n}"),
            Limit::OutputTokens(n) => write!(f, "output token limit of {n}"),
            // Shortest exact form: a limit of $0.005 is not "$0.01".
            Limit::CostUsd(n) => write!(f, "cost limit of ${n}"),
            Limit::Turns(n) => write!(f, "limit of {n} model turns"),
            Limit::WallTime(d) => write!(f, "time limit of {}s", d.as_secs()),
        }
    }
}

/// What a run spent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageSummary {
    pub model: String,
    pub usage: Usage,
    /// `None` for models without a price.
    pub cost_usd: Option<f64>,
    pub turns: u32,
    pub elapsed: Duration,
}

/// A run's cost as people read it: `$0.0123`, `$0` for a model that costs nothing, or
/// `cost unknown` for a model without a price.
pub fn cost_text(cost_usd: Option<f64>) -> String {
    match cost_usd {
        Some(0.0) => "$0".to_owned(),
        Some(cost) => format!("${cost:.4}"),
        None => "cost unknown".to_owned(),
    }
}

impl fmt::Display for UsageSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} input tokens ({} cached), {} output tokens, {}, {} turns, {:.1}s",
            self.model,
            self.usage.input_tokens,
            self.usage.cached_input_tokens,
            self.usage.output_tokens,
            cost_text(self.cost_usd),
            self.turns,
            self.elapsed.as_secs_f64()
        )
    }
}

/// A call refused before it was sent: what it would have needed and what was left of the limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "of")]
pub enum Refused {
    InputTokens { estimate: u64, left: u64 },
    CostUsd { estimate: f64, left: f64 },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::InputTokens { estimate, left } => write!(
                f,
                "the next call would send about {estimate} input tokens and {left} are left"
            ),
            Refused::CostUsd { estimate, left } => write!(
                f,
                "the next call's input would cost about ${estimate:.4} and ${left:.4} is left"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[error("budget exhausted: {limit} reached{} (spent {spent})", refused_text(.refused))]
pub struct BudgetExceeded {
    pub limit: Limit,
    /// Set when the limit stopped a call before it was sent (boxed: `LlmError` carries this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Box<Refused>>,
    pub spent: UsageSummary,
}

fn refused_text(refused: &Option<Box<Refused>>) -> String {
    refused
        .as_ref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::cost_text;

    #[test]
    fn a_cost_is_dollars_nothing_or_unknown() {
        assert_eq!(cost_text(Some(0.012_34)), "$0.0123");
        assert_eq!(cost_text(Some(0.0)), "$0");
        assert_eq!(cost_text(None), "cost unknown");
    }
}
