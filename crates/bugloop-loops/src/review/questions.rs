//! A small model's share of a review: short questions, each about a few hunks of code
//! ([`crate::plan::Reader::SmallModel`]), each answered with at most one finding. The answer's
//! grammar only lets it name a file the question shows and a line that question shows as added,
//! so what it says is grounded by construction; its strings are bounded so the answer ends
//! within a small output budget.

use bugloop_domain::finding::Category;
use serde_json::{Value, json};

use super::ReviewRequest;
use super::brief::Brief;
use crate::plan::Batch;

const NO_BUG: &str = "no bug";
const BUG: &str = "bug";

/// Most characters of the change's description a question repeats.
const DESCRIPTION_CHARS: usize = 400;

/// The one question about `batch` (answered in the JSON shape [`schema`]).
pub(super) fn question(brief: &Brief, request: &ReviewRequest, batch: &Batch) -> String {
    // The description comes before the diff, so consecutive questions share their prefix (a
    // local model keeps it evaluated).
    let (description, _) = crate::context::cut(request.description.trim(), DESCRIPTION_CHARS);
    let preface = brief.preface.trim();
    let mut question = String::from("# The change\n\n");
    for part in [description.as_str(), preface] {
        if !part.is_empty() {
            question.push_str(part);
            question.push_str("\n\n");
        }
    }
    question.push_str(&batch.text);
    question.push_str("\nIs there a bug on one of the added lines? Answer in JSON.");
    question
}

/// At most one finding, on a line `batch` shows as added in its file, with bounded strings; and
/// the open findings it resolves, when there are any to resolve.
pub(super) fn schema(batch: &Batch, open_ids: &[String]) -> Value {
    let categories: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let places: Vec<Value> = batch
        .added
        .iter()
        .map(|(file, lines)| {
            json!({
                "type": "object",
                "properties": {
                    "file": {"type": "string", "enum": [file]},
                    "line": {"type": "integer", "enum": lines},
                    "title": {"type": "string", "minLength": 1, "maxLength": 80},
                    "description": {"type": "string", "minLength": 1, "maxLength": 160},
                    "score": {"type": "integer", "enum": (1..=10).collect::<Vec<u8>>()},
                    "category": {"type": "string", "enum": categories}
                },
                "required": ["file", "line", "title", "description", "score", "category"],
                "additionalProperties": false
            })
        })
        .collect();
    let findings = match places.len() {
        0 => json!({"type": "array", "maxItems": 0}),
        1 => json!({"type": "array", "maxItems": 1, "items": places[0]}),
        _ => json!({"type": "array", "maxItems": 1, "items": {"anyOf": places}}),
    };
    // The verdict comes first (a grammar built from the schema orders properties by name, and
    // `answer` sorts before `findings`): the model decides whether there is a bug before it
    // describes one, and after "no bug" it can only close the answer.
    let mut resolved = None;
    if !open_ids.is_empty() {
        resolved = Some(json!({
            "type": "array",
            "maxItems": open_ids.len(),
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "enum": open_ids},
                    "reason": {"type": "string", "minLength": 1, "maxLength": 160}
                },
                "required": ["id", "reason"],
                "additionalProperties": false
            }
        }));
    }
    let alternative = |answer: &str, findings: Value| {
        let mut properties =
            json!({"answer": {"type": "string", "enum": [answer]}, "findings": findings});
        let mut required = vec!["answer", "findings"];
        if let Some(resolved) = &resolved {
            properties["resolved"] = resolved.clone();
            required.push("resolved");
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        })
    };
    json!({"anyOf": [
        alternative(NO_BUG, json!({"type": "array", "maxItems": 0})),
        alternative(BUG, findings),
    ]})
}

/// The answer as the review reads it: its findings only when its verdict is "bug", each
/// quoting the added line it names as the question showed it (grounding checks the quote).
pub(super) fn read(mut answer: Value, batch: &Batch) -> Value {
    let bug = answer.get("answer").and_then(Value::as_str) == Some(BUG);
    let Some(Value::Array(findings)) = answer.get_mut("findings") else {
        return answer;
    };
    if !bug {
        findings.clear();
    }
    for finding in findings {
        let file = finding.get("file").and_then(Value::as_str);
        let line = finding.get("line").and_then(Value::as_u64);
        if let (Some(file), Some(line)) = (file, line)
            && let Some(quote) = shown_line(batch, file, line)
        {
            finding["evidence"] = json!(quote);
        }
    }
    answer
}

/// The text of `file`'s added `line` as `batch` shows it (a cut line's shown part).
fn shown_line(batch: &Batch, file: &str, line: u64) -> Option<String> {
    let header = format!("## {} (", bugloop_domain::paths::prompt_path(file));
    let prefix = format!("{line}+");
    batch
        .text
        .lines()
        .skip_while(|l| !l.starts_with(&header))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|text| text.trim_end_matches(crate::plan::LINE_CUT).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        Batch {
            files: vec!["app.py".into(), "util.py".into()],
            text: String::new(),
            tokens: 0,
            added: vec![("app.py".into(), vec![3, 4]), ("util.py".into(), vec![10])],
            sections: Vec::new(),
        }
    }

    #[test]
    fn an_answer_may_only_name_a_shown_file_and_one_of_its_added_lines() {
        let schema = schema(&batch(), &[]);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let finding = |file: &str, line: u32| {
            json!({"answer": "bug", "findings": [{"file": file, "line": line, "title": "t",
                "description": "d", "score": 7, "category": "logic"}]})
        };
        assert!(validator.is_valid(&json!({"answer": "no bug", "findings": []})));
        assert!(validator.is_valid(&finding("app.py", 4)));
        assert!(validator.is_valid(&finding("util.py", 10)));
        assert!(
            !validator.is_valid(&finding("util.py", 4)),
            "a line of another file"
        );
        assert!(
            !validator.is_valid(&finding("other.py", 3)),
            "a file not shown"
        );
        let two = json!({"answer": "bug",
            "findings": [finding("app.py", 3)["findings"][0], finding("app.py", 4)["findings"][0]]});
        assert!(!validator.is_valid(&two), "one finding per question");
        assert!(
            !validator.is_valid(&json!({"answer": "bug", "findings": [], "resolved": []})),
            "nothing to resolve"
        );
        assert!(
            !validator.is_valid(&finding("app.py", 3).tap_answer("no bug")),
            "no finding after no bug"
        );
    }

    trait Answer {
        fn tap_answer(self, answer: &str) -> Value;
    }

    impl Answer for Value {
        fn tap_answer(mut self, answer: &str) -> Value {
            self["answer"] = json!(answer);
            self
        }
    }

    #[test]
    fn a_finding_quotes_its_line_and_none_is_taken_after_no_bug() {
        let mut batch = batch();
        batch.text = "## app.py (modified, +2 -0)\n@@\n3+x = 1\n4+y = v[len(v)]\n\n## util.py (added, +1 -0)\n@@\n10+z = 2\n".into();
        let finding = json!({"file": "app.py", "line": 4, "title": "t"});
        let read_one =
            |answer: &str| read(json!({"answer": answer, "findings": [finding]}), &batch);
        assert_eq!(read_one("bug")["findings"][0]["evidence"], "y = v[len(v)]");
        assert_eq!(read_one("no bug")["findings"], json!([]));
        assert_eq!(shown_line(&batch, "util.py", 10).as_deref(), Some("z = 2"));
        assert_eq!(shown_line(&batch, "util.py", 4), None);
    }

    #[test]
    fn open_findings_can_only_be_resolved_by_their_ids() {
        let schema = schema(&batch(), &["old-one".to_owned()]);
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(
            validator.is_valid(&json!({"answer": "no bug", "findings": [],
                "resolved": [{"id": "old-one", "reason": "fixed"}]}))
        );
        assert!(
            !validator.is_valid(&json!({"answer": "no bug", "findings": [],
                "resolved": [{"id": "other", "reason": "fixed"}]}))
        );
    }
}
