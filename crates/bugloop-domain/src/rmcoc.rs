//! `rmcoc` blocks: the fenced JSON state a review comment carries (pr-reviewer-design.md 4.2).
//!
//! A comment is human text, a `---` line, then the block:
//!
//! ````markdown
//! The loop reads one element past the end.
//!
//! ---
//!
//! ```rmcoc
//! { "finding": "...", "assessment": "...", "score": 7 }
//! ```
//! ````
//!
//! Parsing never fails as a whole: a broken block is reported as a [`RmcocProblem`] and skipped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::markdown::{LineRole, line_roles};
use crate::score::Score;
use crate::status::ThreadStatus;

pub use crate::markdown::RMCOC_LANG;

/// The state of one finding as stored in a comment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RmcocBlock {
    /// One sentence: what was found.
    pub finding: String,
    /// Why it matters and its impact.
    pub assessment: String,
    pub score: Score,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ThreadStatus>,
    /// Fields written by other or newer tools, kept so that a rewrite does not lose them.
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl RmcocBlock {
    pub fn new(finding: impl Into<String>, assessment: impl Into<String>, score: Score) -> Self {
        RmcocBlock {
            finding: finding.into(),
            assessment: assessment.into(),
            score,
            status: None,
            extra: BTreeMap::new(),
        }
    }

    pub fn with_status(mut self, status: ThreadStatus) -> Self {
        self.status = Some(status);
        self
    }
}

/// A block that could not be read, with the 1-based line of its opening fence in the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RmcocProblem {
    pub line: usize,
    pub message: String,
}

/// What a comment body holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParsedRmcoc {
    /// The text before the state block, without the `---` separator (the whole body if none).
    pub human: String,
    /// The state block: the `rmcoc` fence that ends the body, outside any other fenced code.
    pub block: Option<RmcocBlock>,
    pub problems: Vec<RmcocProblem>,
}

/// `human`, a `---` line, then the block as pretty JSON in an `rmcoc` fence.
pub fn build_comment(human: &str, block: &RmcocBlock) -> String {
    // Serializing these types cannot fail (string keys, no non-finite floats); fall back to the
    // three required fields if it ever did rather than losing the comment.
    let json = serde_json::to_string_pretty(block).unwrap_or_else(|_| {
        format!(
            "{{\"finding\": {:?}, \"assessment\": {:?}, \"score\": {}}}",
            block.finding, block.assessment, block.score
        )
    });
    let fence = fence_for(&json);
    format!(
        "{}\n\n---\n\n{fence}{RMCOC_LANG}\n{json}\n{fence}\n",
        human.trim_end()
    )
}

/// A fence longer than any backtick run in the content, so the content cannot close it early.
pub fn fence_for(content: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in content.chars() {
        if ch == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Reads the state block where bugloop puts it: an `rmcoc` fence that ends the body (only blank
/// lines after it). Blocks anywhere else, and anything inside other fenced code, are text: a
/// comment can quote code or a model's words without them being read as its state.
pub fn parse_comment(body: &str) -> ParsedRmcoc {
    let lines: Vec<&str> = body.split('\n').collect();
    let roles = line_roles(&lines);
    let mut parsed = ParsedRmcoc {
        human: String::new(),
        block: None,
        problems: Vec::new(),
    };
    let last = lines.iter().rposition(|line| !line.trim().is_empty());
    // The fence the body ends in (closed on its last line, or never closed).
    let ending_fence = last.and_then(|last| {
        let open = roles[..=last]
            .iter()
            .rposition(|role| matches!(role, LineRole::Open(_)))?;
        let closed_at_end = roles[last] == LineRole::Close;
        let still_open = roles[open..].iter().all(|r| *r != LineRole::Close);
        match &roles[open] {
            LineRole::Open(fence)
                if fence.lang.eq_ignore_ascii_case(RMCOC_LANG) && (closed_at_end || still_open) =>
            {
                Some((open, closed_at_end.then_some(last)))
            }
            _ => None,
        }
    });
    let human_end = match ending_fence {
        Some((open, Some(close))) => {
            let json = lines[open + 1..close].join("\n");
            match parse_block(&json) {
                Ok(block) => parsed.block = Some(block),
                Err(message) => parsed.problems.push(RmcocProblem {
                    line: open + 1,
                    message,
                }),
            }
            open
        }
        Some((open, None)) => {
            // Not a state block: reported, and the body stays text, so nothing before an
            // unclosed fence can pass for the comment's own marker.
            parsed.problems.push(RmcocProblem {
                line: open + 1,
                message: "rmcoc block is not closed".to_owned(),
            });
            lines.len()
        }
        None => lines.len(),
    };
    parsed.human = human_text(&lines[..human_end]);
    parsed
}

/// A comment of bugloop's as a person reads it: without the state block bugloop keeps at its end
/// (when it is one: a block that does not read stays, as the text it is), nor its hidden
/// `<!-- ... -->` lines outside code (a line that is one such comment, as a forge hides it).
pub fn as_read(body: &str) -> String {
    let parsed = parse_comment(body);
    let human = if parsed.block.is_some() {
        parsed.human
    } else {
        body.to_owned()
    };
    let lines: Vec<&str> = human.split('\n').collect();
    let roles = line_roles(&lines);
    lines
        .iter()
        .zip(&roles)
        .filter(|(line, role)| !(**role == LineRole::Text && is_hidden_line(line)))
        .map(|(line, _)| *line)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// A line that is one HTML comment, which a forge does not show: not indented as code (four
/// spaces), and nothing outside the comment.
fn is_hidden_line(line: &str) -> bool {
    let text = line.trim_start_matches(' ');
    let indent = line.len() - text.len();
    let text = text.trim_end();
    indent < 4
        && text.starts_with("<!--")
        && text.find("-->").is_some_and(|end| end + 3 == text.len())
}

fn human_text(lines: &[&str]) -> String {
    let mut end = lines.len();
    // Drop trailing blank lines, then the `---` separator, then blank lines before it.
    while end > 0 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    if end > 0 && lines[end - 1].trim() == "---" {
        end -= 1;
        while end > 0 && lines[end - 1].trim().is_empty() {
            end -= 1;
        }
    }
    lines[..end].join("\n").trim_end_matches('\r').to_owned()
}

fn parse_block(json: &str) -> Result<RmcocBlock, String> {
    let value: serde_json::Value = serde_json::from_str(json).map_err(|error| {
        format!(
            "rmcoc block is not valid JSON (line {} column {} of the block): {error}",
            error.line(),
            error.column()
        )
    })?;
    let serde_json::Value::Object(mut object) = value else {
        return Err("rmcoc block must be a JSON object".to_owned());
    };
    for field in ["finding", "assessment"] {
        match object.get(field) {
            Some(serde_json::Value::String(_)) => {}
            Some(_) => return Err(format!("rmcoc field `{field}` must be a string")),
            None => return Err(format!("rmcoc block has no `{field}` field")),
        }
    }
    // The schema says "number": accept 7 and 7.0, refuse 7.5 and anything outside 1-10.
    let score = match object.get("score") {
        Some(serde_json::Value::Number(number)) => number
            .as_i64()
            .or_else(|| {
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| format!("rmcoc `score` must be a whole number, got {number}"))?,
        Some(_) => return Err("rmcoc field `score` must be a number".to_owned()),
        None => return Err("rmcoc block has no `score` field".to_owned()),
    };
    let score = u8::try_from(score)
        .ok()
        .and_then(|s| Score::new(s).ok())
        .ok_or_else(|| format!("rmcoc `score` {score} is outside 1-10"))?;
    object.insert("score".to_owned(), serde_json::Value::from(score.get()));
    if let Some(status) = object.get_mut("status") {
        if status.is_null() {
            object.remove("status");
        } else if let Some(text) = status.as_str() {
            *status = serde_json::Value::String(text.to_ascii_uppercase());
        }
    }
    serde_json::from_value(serde_json::Value::Object(object))
        .map_err(|error| format!("rmcoc block is malformed: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_as_read_has_no_state_block_and_no_hidden_line_outside_code() {
        let block = RmcocBlock::new("t", "a", Score::new(7).unwrap());
        let human =
            "### A bug\n\n```html\n<!-- kept: code -->\n```\n\n<!-- bugloop finding_id:\"x\" -->";
        assert_eq!(
            as_read(&build_comment(human, &block)),
            "### A bug\n\n```html\n<!-- kept: code -->\n```"
        );
        // What a forge shows stays: text beside a comment, text between two on a line, a
        // comment indented as code, a state block that does not read.
        for shown in [
            "plain <!-- inline --> words",
            "<!-- a --> shown <!-- b -->",
            "text\n\n    <!-- indented: code -->",
            "text\n\n---\n\n```rmcoc\n{not json\n```",
        ] {
            assert_eq!(as_read(shown), shown);
        }
    }

    #[test]
    fn round_trip() {
        let block = RmcocBlock::new("Off by one", "Reads past the end.", Score::new(7).unwrap());
        let body = build_comment("The loop reads one element too far.", &block);
        let parsed = parse_comment(&body);
        assert_eq!(parsed.problems, vec![]);
        assert_eq!(parsed.block, Some(block));
        assert_eq!(parsed.human, "The loop reads one element too far.");
    }

    #[test]
    fn broken_block_is_a_problem_not_a_crash() {
        let parsed = parse_comment("text\n\n---\n\n```rmcoc\n{\"finding\": \n```\n");
        assert!(parsed.block.is_none());
        assert_eq!(parsed.problems.len(), 1);
        assert_eq!(parsed.problems[0].line, 5);
    }
}
