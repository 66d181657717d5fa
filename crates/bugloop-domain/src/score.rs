//! The 1-10 issue rubric of the reviewer design (pr-reviewer-design.md 3.1) as data, and its
//! mappings to the bugbot severities and the bugteam priorities.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A severity score from 1 (micro-nit) to 10 (systemic catastrophe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Score(u8);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("score {0} is outside the rubric's range 1-10")]
pub struct ScoreOutOfRange(pub i64);

impl Score {
    pub const MIN: Score = Score(1);
    pub const MAX: Score = Score(10);

    pub fn new(value: u8) -> Result<Self, ScoreOutOfRange> {
        if (1..=10).contains(&value) {
            Ok(Score(value))
        } else {
            Err(ScoreOutOfRange(i64::from(value)))
        }
    }

    /// Clamps any integer into 1-10; for model output that strays outside the scale.
    pub fn saturating(value: i64) -> Self {
        Score(value.clamp(1, 10) as u8)
    }

    pub fn get(self) -> u8 {
        self.0
    }

    /// Adds points, capped at 10 (used by the +2 security promotion).
    pub fn promoted(self, points: u8) -> Self {
        Score(self.0.saturating_add(points).min(10))
    }

    pub fn rubric(self) -> &'static RubricLevel {
        // RUBRIC is indexed 0..10 by score-1, and a Score is always 1..=10.
        &RUBRIC[usize::from(self.0 - 1)]
    }

    pub fn severity(self) -> Severity {
        Severity::from_score(self)
    }

    pub fn priority(self) -> Priority {
        Priority::from_score(self)
    }
}

impl TryFrom<u8> for Score {
    type Error = ScoreOutOfRange;
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Score::new(value)
    }
}

impl From<Score> for u8 {
    fn from(score: Score) -> u8 {
        score.0
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl JsonSchema for Score {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Score".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "Severity score on the 1-10 rubric"
        })
    }
}

/// One level of the rubric: what a score means, in the words the prompts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RubricLevel {
    pub score: u8,
    pub name: &'static str,
    pub band: &'static str,
    pub description: &'static str,
    pub example: &'static str,
}

/// The rubric, score 1 first. Prompts render it with [`rubric_markdown`].
pub const RUBRIC: [RubricLevel; 10] = [
    RubricLevel {
        score: 1,
        name: "Micro-Nit",
        band: "Pure nit-picks",
        description: "Extremely subjective preferences with zero impact on execution, security or reliability.",
        example: "Suggesting `Array.from` instead of a spread operator where performance is irrelevant.",
    },
    RubricLevel {
        score: 2,
        name: "Stylistic Nit",
        band: "Pure nit-picks",
        description: "Inconsistencies a linter does not catch that do not hinder readability.",
        example: "The variable name `data` is a bit generic here, maybe `userData`?",
    },
    RubricLevel {
        score: 3,
        name: "Minor Improvement",
        band: "Quality & maintenance",
        description: "Redundant code or slightly confusing naming.",
        example: "A function that is 5 lines longer than necessary due to a verbose if/else block.",
    },
    RubricLevel {
        score: 4,
        name: "Readability/Documentation",
        band: "Quality & maintenance",
        description: "Missing documentation on a complex public method or a hard-to-parse exported type.",
        example: "This regex is complex; it would benefit from a comment explaining the groups.",
    },
    RubricLevel {
        score: 5,
        name: "Suboptimal Pattern",
        band: "Best practices & efficiency",
        description: "A pattern that works but is known to be brittle.",
        example: "Passing 6 individual arguments instead of an options object.",
    },
    RubricLevel {
        score: 6,
        name: "Local Performance/Complexity",
        band: "Best practices & efficiency",
        description: "Code that is unnecessarily heavy.",
        example: "Mapping over a large array twice instead of once, or a nested loop that could be a map lookup.",
    },
    RubricLevel {
        score: 7,
        name: "Logic Risk",
        band: "Logic, edge cases & consistency",
        description: "A missing edge case: the code fails under specific conditions.",
        example: "Success and error are handled, but an empty array from the API crashes the UI on line 42.",
    },
    RubricLevel {
        score: 8,
        name: "Structural/Rule Violation",
        band: "Logic, edge cases & consistency",
        description: "Direct violation of the repository's rules (AGENTS.md) or architectural standards.",
        example: "A UI component performing direct DB queries instead of using the service layer.",
    },
    RubricLevel {
        score: 9,
        name: "Major Bug / Security Leak",
        band: "Critical failures",
        description: "High probability of failure or data exposure.",
        example: "SQL injection, a missing authorization check on a sensitive endpoint, a race in a payment flow.",
    },
    RubricLevel {
        score: 10,
        name: "Systemic Catastrophe",
        band: "Critical failures",
        description: "Fundamental failures.",
        example: "Hard-coded production secrets, MD5 for passwords, logic that can cause mass data loss.",
    },
];

/// The rubric as a markdown list, one score a line with its meaning, and its example from
/// score `examples_from` up: the form the system prompts embed (a table says the same in about a
/// fifth more tokens; the band is implied by the score). Below the publishing threshold a
/// meaning is enough to tell a nit from a finding; every request pays for the examples.
pub fn rubric_markdown(examples_from: Score) -> String {
    RUBRIC
        .iter()
        .map(|level| {
            if level.score >= examples_from.get() {
                format!(
                    "- {} {}: {} E.g. {}\n",
                    level.score, level.name, level.description, level.example
                )
            } else {
                format!("- {} {}: {}\n", level.score, level.name, level.description)
            }
        })
        .collect()
}

/// The bugbot severities. Mapping (documented in ARCHITECTURE.md):
/// info = 1-2 (nits), low = 3-4 (quality), medium = 5-6 (best practice), high = 7-10 (bugs, rules,
/// security). A severity given without a score becomes the score in [`Severity::representative_score`].
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
}

impl Severity {
    pub const ALL: [Severity; 4] = [
        Severity::Info,
        Severity::Low,
        Severity::Medium,
        Severity::High,
    ];

    pub fn from_score(score: Score) -> Self {
        match score.get() {
            1..=2 => Severity::Info,
            3..=4 => Severity::Low,
            5..=6 => Severity::Medium,
            _ => Severity::High,
        }
    }

    /// The lowest score with this severity, used as a threshold.
    pub fn min_score(self) -> Score {
        match self {
            Severity::Info => Score(1),
            Severity::Low => Score(3),
            Severity::Medium => Score(5),
            Severity::High => Score(7),
        }
    }

    /// The score given to a finding that only carries a severity.
    pub fn representative_score(self) -> Score {
        match self {
            Severity::Info => Score(2),
            Severity::Low => Score(4),
            Severity::Medium => Score(6),
            Severity::High => Score(8),
        }
    }

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The bugteam priorities. Mapping: P0 = 9-10 (critical), P1 = 7-8 (logic and rule violations),
/// P2 = 1-6 (everything below a bug).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum Priority {
    P0,
    P1,
    P2,
}

impl Priority {
    pub fn from_score(score: Score) -> Self {
        match score.get() {
            9..=10 => Priority::P0,
            7..=8 => Priority::P1,
            _ => Priority::P2,
        }
    }

    pub fn representative_score(self) -> Score {
        match self {
            Priority::P0 => Score(9),
            Priority::P1 => Score(7),
            Priority::P2 => Score(5),
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Priority::P0 => "P0",
            Priority::P1 => "P1",
            Priority::P2 => "P2",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_range_is_enforced() {
        assert!(Score::new(0).is_err());
        assert!(Score::new(11).is_err());
        assert_eq!(Score::new(7).unwrap().get(), 7);
        assert_eq!(Score::saturating(-3).get(), 1);
        assert_eq!(Score::saturating(99).get(), 10);
        assert!(serde_json::from_str::<Score>("0").is_err());
        assert_eq!(serde_json::from_str::<Score>("9").unwrap().get(), 9);
    }

    #[test]
    fn promotion_is_capped_at_ten() {
        assert_eq!(Score::new(7).unwrap().promoted(2).get(), 9);
        assert_eq!(Score::new(9).unwrap().promoted(2).get(), 10);
        assert_eq!(Score::new(10).unwrap().promoted(2).get(), 10);
    }

    #[test]
    fn mappings_are_monotonic_and_consistent() {
        let mut last_severity = Severity::Info;
        let mut last_priority = Priority::P2;
        for value in 1..=10 {
            let score = Score::new(value).unwrap();
            assert_eq!(score.rubric().score, value);
            assert!(score.severity() >= last_severity);
            // P0 < P1 < P2 in Ord, so a higher score never has a larger priority value.
            assert!(score.priority() <= last_priority);
            last_severity = score.severity();
            last_priority = score.priority();
        }
        for severity in Severity::ALL {
            assert_eq!(severity.representative_score().severity(), severity);
            assert_eq!(severity.min_score().severity(), severity);
        }
        for priority in [Priority::P0, Priority::P1, Priority::P2] {
            assert_eq!(priority.representative_score().priority(), priority);
        }
    }

    #[test]
    fn rubric_renders_every_level() {
        let markdown = rubric_markdown(Score::MIN);
        for level in &RUBRIC {
            assert!(markdown.contains(level.name) && markdown.contains(level.example));
        }
        assert_eq!(markdown.lines().count(), 10);
        // From the threshold up, with examples; below it, their meaning only.
        let from_five = rubric_markdown(Score::saturating(5));
        assert_eq!(from_five.lines().count(), 10);
        for level in &RUBRIC {
            assert!(from_five.contains(level.description));
            assert_eq!(from_five.contains(level.example), level.score >= 5);
        }
    }
}
