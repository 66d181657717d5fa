//! What a developer's comment asks for (bugbot's fix intent): fix findings (which ones), do some
//! other change, or neither (a question, a dispute, thanks). Clear-cut commands ("fix it", "fix
//! all", "lgtm", a question) are recognised without a model; everything else is the model's call
//! (`prompts/intent.md`), and its answer is checked: only open finding ids survive.

use bugloop_domain::dedup::significant_words;
use bugloop_domain::safety::{sanitize_user_comment, truncate_finding_body};
use bugloop_report::act::{ChosenBy, Intent};
use serde::{Deserialize, Serialize};

use crate::env::LoopEnv;
use crate::prompt::fill;
use crate::{Question, structured_answer};

pub(crate) const PROMPT: &str = include_str!("../prompts/intent.md");
const SYSTEM: &str = include_str!("../prompts/intent-system.md").trim_ascii_end();

/// An open finding as the classifier sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenFinding {
    pub id: String,
    pub title: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Classified {
    pub intent: Intent,
    /// `Rules` when recognised without a model, `Model` otherwise.
    pub by: ChosenBy,
}

#[derive(Debug, Deserialize)]
struct ModelAnswer {
    is_fix_request: bool,
    #[serde(default)]
    target_finding_ids: Vec<String>,
    is_do_request: bool,
}

fn normalized(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '?' || c == '_' {
                c
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

const ACKS: &[&str] = &[
    "lgtm",
    "looks good",
    "looks good to me",
    "thanks",
    "thank you",
    "thx",
    "ok",
    "okay",
    "nice",
    "great",
    "approved",
    "ship it",
];

const DO_VERBS: &[&str] = &[
    "add",
    "write",
    "create",
    "rename",
    "refactor",
    "update",
    "remove",
    "delete",
    "implement",
    "extract",
    "move",
    "replace",
    "change",
    "make",
    "bump",
    "document",
    "test",
];

const QUESTION_WORDS: &[&str] = &[
    "why", "what", "how", "is", "are", "can", "could", "does", "do", "should", "would", "where",
    "when", "which", "who",
];

/// The commands recognised without a model; `None` leaves the decision to the model.
pub(crate) fn by_rules(
    comment: &str,
    parent: Option<&str>,
    open: &[OpenFinding],
) -> Option<Intent> {
    let text = normalized(comment);
    let words: Vec<&str> = text
        .split(' ')
        .map(|w| w.trim_end_matches('?'))
        .filter(|w| !w.is_empty())
        .collect();
    // "can you ...", "could you please ...": a request, not a question.
    let (request_form, words) = match words.as_slice() {
        [modal, "you", rest @ ..] if matches!(*modal, "can" | "could" | "would" | "will") => {
            (true, rest.to_vec())
        }
        _ => (false, words),
    };
    let bare: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "please" | "pls" | "bugloop" | "now"))
        .collect();
    let all_ids = || open.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    // "@bugloop thanks" is as much an acknowledgement as "thanks".
    let unaddressed = bare.join(" ");
    if text.is_empty()
        || ACKS.contains(&text.trim_end_matches(['?', '!']).trim())
        || ACKS.contains(&unaddressed.as_str())
    {
        return Some(Intent::Acknowledge);
    }
    match bare.as_slice() {
        ["fix", "all"]
        | ["fix", "them", "all"]
        | ["fix", "all", "of", "them"]
        | ["fix", "everything"]
        | ["fix", "all", "findings"]
        | ["fix", "them"] => {
            return Some(Intent::Fix(all_ids()));
        }
        ["fix"] | ["fix", "it"] | ["fix", "this"] | ["fix", "that"] => {
            return match parent {
                Some(id) if open.iter().any(|f| f.id == id) => {
                    Some(Intent::Fix(vec![id.to_owned()]))
                }
                _ if open.len() == 1 => Some(Intent::Fix(all_ids())),
                // Which one is meant is the model's call.
                _ => None,
            };
        }
        ["fix", rest @ ..] => {
            // "fix the null check": the one open finding whose words it names.
            let asked = significant_words(&rest.join(" "));
            let matching: Vec<&OpenFinding> = open
                .iter()
                .filter(|f| {
                    let words = significant_words(&format!("{} {}", f.title, f.description));
                    asked.iter().any(|w| words.contains(w))
                })
                .collect();
            if let [one] = matching.as_slice() {
                return Some(Intent::Fix(vec![one.id.clone()]));
            }
            return None;
        }
        _ => {}
    }
    let first = bare.first().copied().unwrap_or("");
    if DO_VERBS.contains(&first) && (request_form || !text.ends_with('?')) {
        return Some(Intent::Do);
    }
    if text.ends_with('?') || QUESTION_WORDS.contains(&first) {
        return Some(Intent::Think);
    }
    None
}

fn findings_block(open: &[OpenFinding]) -> String {
    if open.is_empty() {
        return "None.".to_owned();
    }
    open.iter()
        .map(|f| {
            format!(
                "- id `{}`: {}\n  {}",
                f.id,
                f.title,
                truncate_finding_body(&f.description, 4_000).replace('\n', "\n  ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "is_fix_request": {"type": "boolean"},
            "target_finding_ids": {"type": "array", "items": {"type": "string"}},
            "is_do_request": {"type": "boolean"}
        },
        "required": ["is_fix_request", "target_finding_ids", "is_do_request"],
        "additionalProperties": false
    })
}

/// Classifies a comment, asking `env`'s model when the rules do not decide. `parent` is the
/// finding id of the thread the comment replies in, and that comment's text.
pub(crate) async fn classify(
    env: &LoopEnv<'_>,
    comment: &str,
    parent: Option<(&str, &str)>,
    open: &[OpenFinding],
) -> Result<Classified, bugloop_agent::AgentError> {
    if let Some(intent) = by_rules(comment, parent.map(|(id, _)| id), open) {
        return Ok(Classified {
            intent,
            by: ChosenBy::Rules,
        });
    }
    let parent_text = match parent {
        Some((id, body)) => format!(
            "## The comment replies to finding `{id}`\n\n{}",
            truncate_finding_body(body, 1_500).trim()
        ),
        None => String::new(),
    };
    let prompt = fill(
        PROMPT,
        &[
            ("findings", &findings_block(open)),
            ("parent", &parent_text),
            ("comment", &sanitize_user_comment(comment)),
        ],
    );
    let question = Question {
        name: "intent",
        system: SYSTEM,
        prompt,
        schema: schema(),
        max_tokens: 512,
    };
    let answer: ModelAnswer = structured_answer(env, env.git.root(), question).await?;
    let intent = if answer.is_fix_request {
        let mut ids: Vec<String> = answer
            .target_finding_ids
            .into_iter()
            .filter(|id| open.iter().any(|f| &f.id == id))
            .collect();
        ids.dedup();
        if ids.is_empty() {
            match parent {
                Some((id, _)) if open.iter().any(|f| f.id == id) => {
                    Intent::Fix(vec![id.to_owned()])
                }
                // A fix request naming nothing we know: answer instead of guessing.
                _ => Intent::Think,
            }
        } else {
            Intent::Fix(ids)
        }
    } else if answer.is_do_request {
        Intent::Do
    } else {
        Intent::Think
    };
    Ok(Classified {
        intent,
        by: ChosenBy::Model,
    })
}

#[cfg(test)]
mod tests;
