//! A finding: one problem the reviewer reports, with its location, score and evidence.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::score::{Priority, Score, Severity};

/// A finding's id, sanitized so it can sit inside a hidden HTML marker (see [`crate::marker`]).
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(from = "String", into = "String")]
pub struct FindingId(String);

/// Longest id we keep; longer ids are cut (models sometimes use a whole sentence as an id).
pub const MAX_FINDING_ID_LEN: usize = 128;

impl FindingId {
    /// Builds an id from any text, sanitizing it (see [`sanitize_finding_id`]).
    pub fn new(raw: impl AsRef<str>) -> Self {
        FindingId(sanitize_finding_id(raw.as_ref()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// This id with `-<n>` appended, the base cut so the suffix always fits: two findings that
    /// share an id get distinct ones however long the id is.
    pub fn with_suffix(&self, n: usize) -> FindingId {
        let suffix = format!("-{n}");
        let room = MAX_FINDING_ID_LEN.saturating_sub(suffix.chars().count());
        let base: String = self.0.chars().take(room).collect();
        FindingId::new(format!("{}{suffix}", base.trim_end_matches('-')))
    }
}

impl From<String> for FindingId {
    fn from(raw: String) -> Self {
        FindingId::new(raw)
    }
}

impl From<&str> for FindingId {
    fn from(raw: &str) -> Self {
        FindingId::new(raw)
    }
}

impl From<FindingId> for String {
    fn from(id: FindingId) -> String {
        id.0
    }
}

impl fmt::Display for FindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Makes an id safe inside `<!-- ... finding_id:"<id>" ... -->`: every character that could end the
/// comment, the attribute or the line (`<`, `>`, quotes, backslash, whitespace, control characters)
/// becomes `-`; runs of `-` collapse so `-->` cannot survive; the result is trimmed of `-`, cut at
/// [`MAX_FINDING_ID_LEN`] characters and never empty. Idempotent.
pub fn sanitize_finding_id(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_FINDING_ID_LEN));
    let mut count = 0;
    for ch in raw.chars() {
        let safe = if ch.is_control()
            || ch.is_whitespace()
            || matches!(ch, '<' | '>' | '"' | '\'' | '`' | '\\' | '-')
            || crate::markdown::is_invisible(ch)
        {
            '-'
        } else {
            ch
        };
        if safe == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        if count == MAX_FINDING_ID_LEN {
            break;
        }
        out.push(safe);
        count += 1;
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("finding");
    }
    out
}

/// What kind of problem a finding is. The security pass's findings are [`Category::Security`],
/// which is what the +2 promotion for sensitive repositories applies to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Category {
    /// Wrong result, missing edge case, off-by-one.
    Logic,
    /// Access control, injection, secrets, crypto, data exposure.
    Security,
    /// Error handling, resource leaks, crashes.
    Reliability,
    /// Races, deadlocks, ordering.
    Concurrency,
    /// Corruption or loss of stored data, migrations.
    DataIntegrity,
    /// Unnecessary work, complexity.
    Performance,
    /// Breaking public interfaces or contracts.
    Compatibility,
    /// Violation of the repository's own rules (AGENTS.md and the like) or its architecture.
    Rules,
    /// Missing or wrong tests.
    Testing,
    /// Naming, redundancy, documentation, style.
    Maintainability,
}

impl Category {
    pub const ALL: [Category; 10] = [
        Category::Logic,
        Category::Security,
        Category::Reliability,
        Category::Concurrency,
        Category::DataIntegrity,
        Category::Performance,
        Category::Compatibility,
        Category::Rules,
        Category::Testing,
        Category::Maintainability,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// One problem found in a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    pub id: FindingId,
    /// One line: what is wrong.
    pub title: String,
    /// Why it matters and under which conditions it fails.
    pub description: String,
    /// Repository-relative path at head, when the finding is about a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line at head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    pub score: Score,
    pub category: Category,
    /// The code quoted from `line`, used to check the finding is grounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// A markdown or pseudo-code block; never a committable suggestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// The static analyzer whose hit this finding stands on; none for a finding of the model's
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<FindingSource>,
}

/// A static analyzer's hit a finding stands on: the tool, its rule and the rule's page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FindingSource {
    /// The analyzer (`ruff`, `shellcheck`, a configured SARIF tool's name).
    pub tool: String,
    /// The tool's id of the rule (`S608`, `SC2115`).
    pub rule: String,
    /// The tool's documentation of the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The model found or confirmed the same problem (its explanation and score are the
    /// finding's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model: bool,
}

impl FindingSource {
    /// Who found it, for people: `ruff S608`, or `ruff S608 and the model`.
    pub fn found_by(&self) -> String {
        let tool = format!("{} {}", self.tool, self.rule);
        if self.model {
            format!("{tool} and the model")
        } else {
            tool
        }
    }
}

impl Finding {
    pub fn severity(&self) -> Severity {
        self.score.severity()
    }

    pub fn priority(&self) -> Priority {
        self.score.priority()
    }

    /// `file:line`, `file` or `(no file)`, for reports.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => "(no file)".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_break_a_comment() {
        for raw in [
            "a-->b",
            "<script>",
            "x\"y",
            "line\nbreak",
            "tab\there",
            "nul\0byte",
            "bidi\u{202E}x",
            "---",
            "",
            "   ",
        ] {
            let id = sanitize_finding_id(raw);
            assert!(!id.is_empty(), "{raw:?}");
            assert!(!id.contains("--"), "{raw:?} -> {id:?}");
            assert!(
                !id.contains(['<', '>', '"', '\n', '\0', '\t']),
                "{raw:?} -> {id:?}"
            );
            assert_eq!(sanitize_finding_id(&id), id, "idempotent for {raw:?}");
        }
        assert_eq!(
            sanitize_finding_id("null-check in parse()"),
            "null-check-in-parse()"
        );
        assert_eq!(
            sanitize_finding_id(&"x".repeat(500)).len(),
            MAX_FINDING_ID_LEN
        );
    }

    #[test]
    fn finding_id_deserializes_sanitized() {
        let id: FindingId = serde_json::from_str("\"a --> b\"").unwrap();
        assert_eq!(id.as_str(), "a-b");
    }

    #[test]
    fn a_suffix_always_makes_a_new_id() {
        for len in [1, 126, 127, 128, 300] {
            let id = FindingId::new("a".repeat(len));
            let two = id.with_suffix(2);
            let three = id.with_suffix(3);
            assert!(two != id && three != id && two != three, "{len}");
            assert!(two.as_str().ends_with("-2"));
        }
    }
}
