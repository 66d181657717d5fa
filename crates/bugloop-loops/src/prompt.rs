//! The reviewer's prompts: markdown files under `prompts/`, filled in here.

use bugloop_domain::finding::Category;
use bugloop_domain::safety::truncate_finding_body;
use bugloop_domain::score::{RUBRIC, Score, rubric_markdown};
use bugloop_domain::thread::ThreadState;

use crate::context::{RuleFile, SensitivityVerdict};

pub const SYSTEM: &str = include_str!("../prompts/review-system.md");
pub const WORKFLOW_TOOLS: &str = include_str!("../prompts/review-workflow-tools.md");
pub const WORKFLOW_STRUCTURED: &str = include_str!("../prompts/review-workflow-structured.md");
pub const CHANGE: &str = include_str!("../prompts/review-change.md");
/// Says that the four passes of a small change are given at once.
pub const PASSES_TOGETHER: &str = include_str!("../prompts/review-passes-together.md");
/// What a model that stopped after a pass is told: the next pass's number, whose instructions
/// it was given with the change (not sent again).
pub const PASS_NEXT: &str = include_str!("../prompts/review-pass-next.md");
/// What a review says about the open findings whose code changed since they were raised.
pub const TOUCHED: &str = include_str!("../prompts/review-touched.md");
/// The diff shown when nothing new is to be shown, only findings whose code changed.
pub const NOTHING_NEW_SHOWN: &str = include_str!("../prompts/review-nothing-new.md");
/// What an incremental review says about the diff it shows.
pub const INCREMENT: &str = include_str!("../prompts/review-increment.md");
pub const PASSES: [&str; 4] = [
    include_str!("../prompts/review-pass-1.md"),
    include_str!("../prompts/review-pass-2.md"),
    include_str!("../prompts/review-pass-3.md"),
    include_str!("../prompts/review-pass-4.md"),
];

/// Untrusted text for a prompt, between triple quotes: `"""` cannot end the quote, and at most
/// `max` bytes.
pub(crate) fn quoted(text: &str, max: usize) -> String {
    let (text, cut) = crate::context::cut(text.trim(), max);
    let mut text = text.replace("\"\"\"", "\\\"\\\"\\\"");
    if cut {
        text.push_str("\n[... cut for length ...]");
    }
    text
}

/// Replaces each `{{name}}` with its value (values are inserted verbatim, never re-expanded).
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match values.iter().find(|(key, _)| *key == name) {
                    Some((_, value)) => out.push_str(value),
                    None => {
                        out.push_str("{{");
                        out.push_str(name);
                        out.push_str("}}");
                    }
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The rubric in one line per score, for models with a small context.
pub fn compact_rubric() -> String {
    RUBRIC
        .iter()
        .map(|level| format!("- {} {}: {}\n", level.score, level.name, level.description))
        .collect()
}

/// Previous unresolved findings, each with its id, place, status and the developer's replies.
pub fn previous_block(threads: &[&ThreadState], max_chars: usize) -> String {
    if threads.is_empty() {
        return "None: this is the first review of this change, or every earlier finding is \
                resolved."
            .to_owned();
    }
    let mut out = String::from(
        "These findings were raised on earlier versions of this change and are not resolved. Do \
         not report them again. If the change now fixes one, resolve it with its id and the \
         reason.\n\n",
    );
    for thread in threads {
        let Some(id) = &thread.finding_id else {
            continue;
        };
        let place = match (&thread.file, thread.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => "the change".to_owned(),
        };
        let score = thread
            .score
            .map_or(String::new(), |s| format!(", score {s}"));
        let mut entry = format!(
            "- id `{id}` ({}{score}) at {place}: {}\n",
            thread.status, thread.title
        );
        let body = truncate_finding_body(&thread.body, 1_500);
        // The entry's first line already says the title, score and place; markers say nothing
        // to the model.
        let said = |line: &str| {
            let line = line.trim();
            line.is_empty()
                || line.starts_with("<!--")
                || line.trim_start_matches('#').trim() == thread.title.trim()
                || (line.starts_with("**") && line.contains(" · score "))
        };
        for line in body.lines().filter(|l| !said(l)).take(12) {
            entry.push_str(&format!("  > {line}\n"));
        }
        for reply in &thread.developer_replies {
            let text = truncate_finding_body(&reply.body, 600);
            entry.push_str(&format!(
                "  developer {} replied: {}\n",
                reply.author,
                text.trim()
            ));
        }
        if out.len() + entry.len() > max_chars {
            out.push_str("- (more open findings not shown for length)\n");
            break;
        }
        out.push_str(&entry);
    }
    out
}

pub fn rules_block(rules: &[RuleFile]) -> String {
    if rules.is_empty() {
        return "The repository has no rule files (AGENTS.md, CLAUDE.md, .cursor/rules, \
                .github/copilot-instructions.md, .bugloop/rules.md)."
            .to_owned();
    }
    let mut out = String::new();
    for rule in rules {
        out.push_str(&format!("### {}\n\n{}\n", rule.path, rule.text.trim()));
        if rule.truncated {
            out.push_str("[... cut for length]\n");
        }
        out.push('\n');
    }
    out
}

#[derive(Debug)]
pub struct SystemInputs<'a> {
    pub compact: bool,
    pub tools: bool,
    pub threshold: Score,
    pub sensitivity: &'a SensitivityVerdict,
    pub promotion: u8,
    pub rules: &'a str,
    pub previous: &'a str,
}

pub fn system(inputs: &SystemInputs<'_>) -> String {
    let rubric = if inputs.compact {
        compact_rubric()
    } else {
        rubric_markdown()
    };
    let sensitivity = if inputs.sensitivity.sensitive {
        format!(
            "This repository handles personal or financial data ({}): security findings gain {} \
             points automatically; score them on the rubric as usual.",
            inputs.sensitivity.reason, inputs.promotion
        )
    } else {
        String::new()
    };
    let categories = Category::ALL
        .iter()
        .map(|c| format!("`{}`", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let workflow = if inputs.tools {
        fill(WORKFLOW_TOOLS, &[("passes", "4")])
    } else {
        WORKFLOW_STRUCTURED.to_owned()
    };
    fill(
        SYSTEM,
        &[
            ("rubric", &rubric),
            ("threshold", &inputs.threshold.to_string()),
            ("sensitivity", &sensitivity),
            ("categories", &categories),
            ("rules", inputs.rules),
            ("previous", inputs.previous),
            ("workflow", &workflow),
        ],
    )
}

pub fn change(description: &str, scope: &str, diff: &str) -> String {
    fill(
        CHANGE,
        &[
            ("description", description),
            ("scope", scope),
            ("diff", diff),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_inserts_values_once_and_leaves_unknown_names() {
        assert_eq!(
            fill("a {{x}} b {{y}} {{x", &[("x", "{{y}}"), ("y", "2")]),
            "a {{y}} b 2 {{x"
        );
        assert_eq!(fill("{{nope}}", &[]), "{{nope}}");
    }

    #[test]
    fn every_placeholder_of_the_prompts_is_filled() {
        let verdict = SensitivityVerdict {
            sensitive: true,
            reason: "README.md mentions \"payments\"".into(),
        };
        for tools in [true, false] {
            let text = system(&SystemInputs {
                compact: !tools,
                tools,
                threshold: Score::saturating(5),
                sensitivity: &verdict,
                promotion: 2,
                rules: "r",
                previous: "p",
            });
            assert!(!text.contains("{{"), "{text}");
        }
        assert!(!change("d", "s", "x").contains("{{"));
    }
}
