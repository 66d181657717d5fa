//! Findings the review's unit tests merge: security findings on app.py, from the model or from
//! an analyzer's rule.

use bugloop_domain::finding::{Category, Finding, FindingSource};
use bugloop_domain::score::Score;

/// A security finding `id` (its title too) at `line` of app.py, scored 6, from `source`.
pub(super) fn finding(id: &str, line: u32, source: Option<FindingSource>) -> Finding {
    Finding {
        id: id.into(),
        title: id.into(),
        description: String::new(),
        file: Some("app.py".into()),
        line: Some(line),
        end_line: None,
        score: Score::saturating(6),
        category: Category::Security,
        evidence: None,
        suggestion: None,
        source,
    }
}

/// `tool`'s rule S608 as a finding's source.
pub(super) fn s608(tool: &str) -> FindingSource {
    FindingSource {
        tool: tool.into(),
        rule: "S608".into(),
        url: None,
        model: false,
    }
}
