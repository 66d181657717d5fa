//! The reviewer's own tools: `report_finding`, `resolve_finding` and `submit_pass_results`
//! (pr-reviewer-design.md 4.2), and the tool-less answer's schema. What they receive is checked
//! here and errors go back to the model, so a malformed report is corrected, not lost.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bugloop_domain::finding::{Category, Finding, FindingId};
use bugloop_domain::score::Score;
use bugloop_tools::{ToolContext, ToolError, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Progress;

/// A finding as the model reports it. The schema says what [`accept`] checks: a line is 1-based
/// and needs a file, title and description have some text; an `end_line` of 0 or before `line`
/// is how models say "no end line", so the schema admits it and [`accept`] drops it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[schemars(extend(
    "if" = {"required": ["line"], "properties": {"line": {"type": "integer"}}},
    "then" = {"required": ["file"], "properties": {"file": {"type": "string"}}}
))]
pub struct ReportedFinding {
    /// Only to update a finding reported earlier in this review (pass 4 consolidation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Repository-relative path at head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub file: Option<String>,
    /// 1-based line at head (new side of the diff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// Last line of a range; 0 or a line before `line` means none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    /// The code on `line`, quoted exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// One line: what is wrong.
    #[schemars(pattern(r"\S"))]
    pub title: String,
    /// Why it matters and when it fails.
    #[schemars(pattern(r"\S"))]
    pub description: String,
    /// 1-10 by the rubric.
    pub score: Score,
    #[schemars(schema_with = "category_names")]
    pub category: Category,
    /// Markdown or pseudo-code illustrating a fix; never a committable suggestion block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// A finding as the arguments of the `report_finding` call that would report it again (what the
/// consolidation asked on its own is shown, to copy back).
impl From<&Finding> for ReportedFinding {
    fn from(finding: &Finding) -> Self {
        ReportedFinding {
            id: Some(finding.id.as_str().to_owned()),
            file: finding.file.clone(),
            line: finding.line,
            end_line: finding.end_line,
            evidence: finding.evidence.clone(),
            title: finding.title.clone(),
            description: finding.description.clone(),
            score: finding.score,
            category: finding.category,
            suggestion: finding.suggestion.clone(),
        }
    }
}

/// A previous finding this change fixed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct Resolution {
    pub id: String,
    #[schemars(pattern(r"\S"))]
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct PassResults {
    pub pass_number: u32,
    pub summary: String,
    #[serde(default)]
    pub has_blocking_issues: bool,
}

/// What one review session reported.
#[derive(Debug, Default)]
pub struct Collected {
    /// In order of first report; a re-report under the same id in the same file replaces the
    /// finding.
    pub findings: Vec<Finding>,
    pub resolutions: BTreeMap<String, String>,
    pub passes: Vec<PassResults>,
    /// Reports that could not be used (structured answers, where nobody can be asked again).
    pub invalid: Vec<String>,
}

/// A stable id from what a finding is about, when the model gave none.
pub(crate) fn derive_id(finding: &ReportedFinding) -> FindingId {
    let slug: String = finding
        .title
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>()
        .split('-')
        .filter(|part| !part.is_empty())
        .take(6)
        .collect::<Vec<_>>()
        .join("-");
    let mut hasher = Sha256::new();
    hasher.update(finding.file.as_deref().unwrap_or("").as_bytes());
    hasher.update([0]);
    hasher.update(finding.title.as_bytes());
    let digest = hex::encode(hasher.finalize());
    let slug = if slug.is_empty() {
        "finding".to_owned()
    } else {
        slug
    };
    FindingId::new(format!("{slug}-{}", &digest[..6]))
}

/// Checks a report and turns it into a finding.
pub(crate) fn accept(reported: ReportedFinding) -> Result<Finding, String> {
    if reported.title.trim().is_empty() {
        return Err("`title` is empty".to_owned());
    }
    if reported.description.trim().is_empty() {
        return Err("`description` is empty".to_owned());
    }
    if reported.line == Some(0) {
        return Err("`line` is 1-based; 0 is not a line".to_owned());
    }
    let file = reported
        .file
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_owned);
    if reported.line.is_some() && file.is_none() {
        return Err("`line` was given without `file`".to_owned());
    }
    // Models send 0, or a line before the start, for "no end line"; without a line there is no
    // range at all.
    let end_line = match (reported.line, reported.end_line) {
        (Some(start), Some(end)) if end >= start => Some(end),
        _ => None,
    };
    let id = match reported.id.as_deref().map(str::trim) {
        Some(id) if !id.is_empty() => FindingId::new(id),
        _ => derive_id(&reported),
    };
    Ok(Finding {
        id,
        title: reported.title.trim().to_owned(),
        description: reported.description.trim().to_owned(),
        file,
        line: reported.line,
        end_line,
        score: reported.score,
        category: reported.category,
        evidence: reported.evidence.filter(|e| !e.trim().is_empty()),
        suggestion: reported
            .suggestion
            .filter(|s| !s.trim().is_empty())
            .map(|s| defuse_suggestion(&s)),
        // What the model says is its own: a source is set only by bugloop, from a tool's hit.
        source: None,
    })
}

/// The categories as a plain enum of their names: every request of a review carries this
/// schema, and the names say enough (the documented `oneOf`, each with its description, costs
/// about 145 tokens more per request; the report's schema keeps it).
fn category_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

/// GitHub turns a ```suggestion fence into a committable change; the reviewer must never make
/// one, so such fences become plain ones.
pub(crate) fn defuse_suggestion(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            let ticks = trimmed
                .chars()
                .take_while(|c| *c == '`' || *c == '~')
                .count();
            if ticks >= 3 && trimmed[ticks..].trim_start().starts_with("suggestion") {
                let indent = &line[..line.len() - trimmed.len()];
                format!("{indent}{}text", &trimmed[..ticks])
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Collected {
    /// Adds a finding, or replaces the one with its id in the same file, or with its id when
    /// it names no file (a correction, such as the consolidation's lower score). The same id in
    /// another file is another problem; the review renames it. A correction states what it
    /// changes: the place, quoted code and suggestion it leaves out are the finding's as
    /// reported, so a rescored finding keeps its line.
    pub fn add(&mut self, mut finding: Finding) -> bool {
        if let Some(existing) = self
            .findings
            .iter_mut()
            .find(|f| f.id == finding.id && (f.file == finding.file || finding.file.is_none()))
        {
            if finding.file.is_none() {
                finding.file = existing.file.clone();
            }
            if finding.line.is_none() {
                finding.line = existing.line;
                finding.end_line = finding.end_line.or(existing.end_line);
            }
            if finding.evidence.is_none() && finding.line == existing.line {
                finding.evidence = existing.evidence.clone();
            }
            if finding.suggestion.is_none() {
                finding.suggestion = existing.suggestion.clone();
            }
            *existing = finding;
            false
        } else {
            self.findings.push(finding);
            true
        }
    }
}

pub(crate) type Shared = Arc<Mutex<Collected>>;

#[derive(Debug)]
pub struct ReportFinding {
    pub collected: Shared,
    pub progress: Arc<dyn Progress>,
    pub batch: usize,
}

#[async_trait]
impl TypedTool for ReportFinding {
    type Params = ReportedFinding;
    // Each field's description says what it holds; every request pays for this text.
    bugloop_tools::tool_named!("report_finding");

    async fn run(&self, _: &ToolContext, params: ReportedFinding) -> Result<String, ToolError> {
        let finding = accept(params).map_err(ToolError::Model)?;
        let id = finding.id.clone();
        let title = finding.title.clone();
        let added = match self.collected.lock() {
            Ok(mut collected) => collected.add(finding),
            Err(_) => return Err(ToolError::Abort("the findings list is unusable".to_owned())),
        };
        self.progress.event(crate::ProgressEvent::Finding {
            batch: self.batch,
            title,
        });
        Ok(if added {
            format!("recorded as {id}")
        } else {
            format!("{id} updated")
        })
    }
}

#[derive(Debug)]
pub struct ResolveFinding {
    pub collected: Shared,
    /// The ids of previous unresolved findings.
    pub open_ids: Vec<String>,
}

#[async_trait]
impl TypedTool for ResolveFinding {
    type Params = Resolution;
    bugloop_tools::tool_named!("resolve_finding");

    /// Only an open previous finding can be resolved, so the schema lists them. With none open
    /// the schema stays as derived: an empty `enum` is refused by some providers' schema checks,
    /// which would fail the whole request.
    fn narrow_schema(&self, mut schema: serde_json::Value) -> serde_json::Value {
        if !self.open_ids.is_empty()
            && let Some(id) = schema.pointer_mut("/properties/id")
        {
            id["enum"] = serde_json::json!(self.open_ids);
        }
        schema
    }

    async fn run(&self, _: &ToolContext, params: Resolution) -> Result<String, ToolError> {
        let id = FindingId::new(&params.id);
        if !self.open_ids.iter().any(|open| open == id.as_str()) {
            return Err(ToolError::Model(format!(
                "{:?} is not an open previous finding; open ones: {}",
                params.id,
                if self.open_ids.is_empty() {
                    "none".to_owned()
                } else {
                    self.open_ids.join(", ")
                }
            )));
        }
        if !says_why(&params.reason, id.as_str()) {
            return Err(ToolError::Model(
                "give the reason it is fixed, in words (not only its id)".to_owned(),
            ));
        }
        match self.collected.lock() {
            Ok(mut collected) => {
                collected
                    .resolutions
                    .insert(id.as_str().to_owned(), params.reason.trim().to_owned());
            }
            Err(_) => return Err(ToolError::Abort("the findings list is unusable".to_owned())),
        }
        Ok(format!("{id} will be marked resolved"))
    }
}

#[derive(Debug)]
pub struct SubmitPass {
    pub collected: Shared,
    pub progress: Arc<dyn Progress>,
    pub batch: usize,
    pub passes: u32,
}

pub(crate) const SUBMIT_PASS: &str = <SubmitPass as TypedTool>::NAME;

#[async_trait]
impl TypedTool for SubmitPass {
    type Params = PassResults;
    bugloop_tools::tool_named!("submit_pass_results");

    async fn run(&self, _: &ToolContext, params: PassResults) -> Result<String, ToolError> {
        // The agent calls this before it sends the next pass's prompt.
        record_pass(
            &self.collected,
            self.progress.as_ref(),
            self.batch,
            self.passes,
            params,
        )?;
        Ok("recorded".to_owned())
    }
}

pub(crate) fn record_pass(
    collected: &Shared,
    progress: &dyn Progress,
    batch: usize,
    passes: u32,
    params: PassResults,
) -> Result<(), ToolError> {
    progress.event(crate::ProgressEvent::PassDone {
        batch,
        pass: params.pass_number,
        of: passes,
    });
    match collected.lock() {
        Ok(mut c) => {
            c.passes.push(params);
            Ok(())
        }
        Err(_) => Err(ToolError::Abort("the findings list is unusable".to_owned())),
    }
}

/// The tool-less answer: findings, resolutions and a summary in one JSON object.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct StructuredAnswer {
    #[serde(default)]
    pub findings: Vec<serde_json::Value>,
    #[serde(default)]
    pub resolved: Vec<serde_json::Value>,
    #[serde(default)]
    pub summary: String,
}

/// The schema of the tool-less answer. Scores and lines are checked per finding afterwards (so
/// one bad entry does not cost the whole answer).
pub(crate) fn structured_schema() -> serde_json::Value {
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let text = || serde_json::json!({"type": "string"});
    let findings = serde_json::json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "file": text(),
                "line": {"type": "integer"},
                "evidence": text(),
                "title": text(),
                "description": text(),
                "score": {"type": "integer"},
                "category": {"type": "string", "enum": categories},
                "suggestion": text()
            },
            "required": ["file", "line", "evidence", "title", "description", "score", "category"],
            "additionalProperties": false
        }
    });
    let resolved = serde_json::json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"id": text(), "reason": text()},
            "required": ["id", "reason"],
            "additionalProperties": false
        }
    });
    serde_json::json!({
        "type": "object",
        "properties": {"findings": findings, "resolved": resolved, "summary": text()},
        "required": ["findings", "resolved", "summary"],
        "additionalProperties": false
    })
}

/// Whether a resolution's `reason` says anything besides the finding's `id`: a small model
/// answers with the id alone, which a developer reading the thread learns nothing from.
pub(crate) fn says_why(reason: &str, id: &str) -> bool {
    let rest = reason.to_lowercase().replace(&id.to_lowercase(), " ");
    rest.split(|c: char| !c.is_alphabetic())
        .any(|word| word.chars().count() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the embedded model answered in a user's test: the id alone, which says nothing.
    #[test]
    fn a_reason_is_more_than_the_findings_id() {
        let id = "bugloop-python-BLP001-shop/orders.py-6";
        assert!(!says_why(id, id));
        assert!(!says_why(&format!("  {} (6).", id.to_uppercase()), id));
        assert!(!says_why("", id));
        assert!(says_why(
            &format!("{id}: the range ends at len(prices) now"),
            id
        ));
        assert!(says_why("no bug", id));
    }

    fn reported(title: &str) -> ReportedFinding {
        ReportedFinding {
            id: None,
            file: Some("src/a.rs".into()),
            line: Some(3),
            end_line: None,
            evidence: Some("x".into()),
            title: title.into(),
            description: "d".into(),
            score: Score::saturating(7),
            category: Category::Logic,
            suggestion: None,
        }
    }

    /// The consolidation's "report it again with its id and a lower score" often names only
    /// what changes: the finding keeps its place, quoted code and suggestion.
    #[test]
    fn a_correction_keeps_what_it_leaves_out() {
        let mut first = reported("Off by one");
        first.id = Some("off-by-one".into());
        first.end_line = Some(4);
        first.suggestion = Some("use `..=`".into());
        let mut collected = Collected::default();
        assert!(collected.add(accept(first).unwrap()));
        let mut rescored = reported("Off by one, maybe");
        rescored.id = Some("off-by-one".into());
        (rescored.file, rescored.line, rescored.evidence) = (None, None, None);
        rescored.score = Score::saturating(4);
        assert!(!collected.add(accept(rescored).unwrap()));
        let [kept] = collected.findings.as_slice() else {
            panic!("{:?}", collected.findings)
        };
        assert_eq!(kept.title, "Off by one, maybe");
        assert_eq!(kept.score.get(), 4);
        assert_eq!(kept.file.as_deref(), Some("src/a.rs"));
        assert_eq!((kept.line, kept.end_line), (Some(3), Some(4)));
        assert_eq!(kept.evidence.as_deref(), Some("x"));
        assert_eq!(kept.suggestion.as_deref(), Some("use `..=`"));
        // Moved to another line without quoting it: the old quote is not carried there.
        let mut moved = reported("Off by one");
        moved.id = Some("off-by-one".into());
        (moved.line, moved.evidence) = (Some(9), None);
        collected.add(accept(moved).unwrap());
        assert_eq!(collected.findings[0].line, Some(9));
        assert_eq!(collected.findings[0].evidence, None);
        // The same id in another file is another finding.
        let mut elsewhere = reported("Off by one");
        elsewhere.id = Some("off-by-one".into());
        elsewhere.file = Some("src/b.rs".into());
        assert!(collected.add(accept(elsewhere).unwrap()));
    }

    #[test]
    fn ids_are_stable_and_readable() {
        let a = derive_id(&reported("Division by zero on empty input!"));
        assert_eq!(a, derive_id(&reported("Division by zero on empty input!")));
        assert!(
            a.as_str().starts_with("division-by-zero-on-empty-input-"),
            "{a}"
        );
        assert_ne!(a, derive_id(&reported("Another problem")));
    }

    #[test]
    fn bad_reports_are_explained() {
        let mut r = reported("t");
        r.line = Some(0);
        assert!(accept(r).unwrap_err().contains("1-based"));
        let mut r = reported("t");
        r.file = Some(String::new());
        assert!(accept(r).unwrap_err().contains("without `file`"));
        let mut r = reported("t");
        r.file = None;
        assert!(accept(r).unwrap_err().contains("without `file`"));
        assert!(accept(reported(" ")).unwrap_err().contains("title"));
    }

    #[test]
    fn an_end_line_of_zero_or_before_the_line_is_no_end_line() {
        for (end_line, kept) in [
            (Some(0), None),
            (Some(2), None),
            (Some(3), Some(3)),
            (Some(9), Some(9)),
            (None, None),
        ] {
            let mut r = reported("t");
            r.end_line = end_line;
            assert_eq!(accept(r).unwrap().end_line, kept, "{end_line:?}");
        }
        let mut r = reported("t");
        r.line = None;
        r.end_line = Some(9);
        assert_eq!(accept(r).unwrap().end_line, None);
    }

    #[test]
    fn suggestion_fences_are_never_committable() {
        let text = "Try:\n```suggestion\nlet x = 1;\n```\n  ~~~~ suggestion\ny\n~~~~";
        assert_eq!(
            defuse_suggestion(text),
            "Try:\n```text\nlet x = 1;\n```\n  ~~~~text\ny\n~~~~"
        );
    }
}
