//! The model validator (`converge.validator: model`): one question per finding, with the code
//! around it; what it rejects is quarantined with its reason.

use bugloop_domain::finding::Finding;
use bugloop_domain::grounding::Head;
use bugloop_report::converge::Quarantined;
use serde::Deserialize;

use crate::act::ActError;
use crate::build::Workbench;
use crate::env::LoopEnv;

use super::validate::findings_prompt;

const VALIDATOR_PROMPT: &str = include_str!("../../prompts/audit-validator.md");

#[derive(Debug, Deserialize)]
pub(super) struct Verdict {
    keep: bool,
    reason: String,
}

/// Lines around a finding's line (numbered), for the model validator.
pub(super) fn excerpt(head: &dyn Head, finding: &Finding) -> String {
    let Some(text) = finding.file.as_deref().and_then(|f| head.text(f)) else {
        return "(no file: the finding is about the change as a whole)".to_owned();
    };
    let lines: Vec<&str> = text.lines().collect();
    let (first, last) = match finding.line {
        Some(line) => {
            let line = line as usize;
            let end = finding.end_line.map_or(line, |e| e as usize).max(line);
            (line.saturating_sub(15), (end + 15).min(lines.len()))
        }
        None => (0, lines.len().min(200)),
    };
    let body: String = lines
        .iter()
        .enumerate()
        .skip(first)
        .take(last.saturating_sub(first))
        .map(|(i, l)| format!("{:>5} | {l}\n", i + 1))
        .collect();
    let fence = crate::comment_bodies::fence_for(&body);
    format!("{fence}text\n{body}{fence}")
}

/// The model validator: one question per finding, after the code checks; what it rejects is
/// quarantined with its reason. A validator that cannot answer stops the audit (it would
/// otherwise pass findings it never judged).
pub(super) async fn judge(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    number: u32,
    findings: Vec<Finding>,
    head: &dyn Head,
) -> Result<(Vec<Finding>, Vec<Quarantined>), ActError> {
    let mut kept = Vec::new();
    let mut quarantined = Vec::new();
    for finding in findings {
        let question = format!(
            "## The finding\n\n{}\n\n## The code at {}\n\n{}\n",
            findings_prompt(std::slice::from_ref(&finding)),
            finding.location(),
            excerpt(head, &finding)
        );
        let question = crate::Question {
            name: "audit-validator",
            system: VALIDATOR_PROMPT,
            prompt: question,
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "keep": {"type": "boolean"},
                    "reason": {"type": "string"}
                },
                "required": ["keep", "reason"],
                "additionalProperties": false
            }),
            max_tokens: 512,
        };
        let verdict: Verdict = crate::structured_answer(env, bench.path(), question)
            .await
            .map_err(|e| {
                ActError::Invalid(format!("the validator model on {}: {e}", finding.id))
            })?;
        if verdict.keep {
            kept.push(finding);
        } else {
            quarantined.push(Quarantined {
                loop_number: number,
                auditor: "validator".to_owned(),
                title: finding.title.clone(),
                location: finding.location(),
                reason: format!("validator model: {}", verdict.reason.trim()),
            });
        }
    }
    Ok((kept, quarantined))
}
