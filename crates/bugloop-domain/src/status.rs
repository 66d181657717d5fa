//! A finding's status in its conversation (pr-reviewer-design.md 3.2): its own module because
//! the state block, the reply tags and the thread rebuild all name it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    Default,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ThreadStatus {
    /// Raised; no verdict yet, or discussion ongoing.
    #[default]
    Pending,
    /// Fixed, or the bot accepted the developer's reasoning.
    Resolved,
    /// The bot replied to a developer without conceding.
    Disputed,
    /// Left to a human reviewer.
    Escalated,
}

impl ThreadStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
