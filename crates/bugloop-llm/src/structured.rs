//! Structured output: a typed value from any provider. Where the provider honours a JSON-Schema
//! response format it is used; otherwise the schema goes into the system prompt. Either way the
//! answer is stripped of code fences, parsed and validated with `jsonschema`, and a failure gets one
//! repair round that tells the model what was wrong. An answer the output limit cut off is first
//! salvaged where its complete entries make a valid answer (see `salvage`), and said so.

use serde::de::DeserializeOwned;

use crate::Provider;
use crate::Sink;
use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, FinishReason, JsonSchemaFormat, Message};

const INSTRUCTION: &str = include_str!("../prompts/structured-output.md");
const REPAIR: &str = include_str!("../prompts/structured-repair.md");

#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the requested JSON Schema is itself invalid: {0}")]
    BadSchema(String),
    #[error("the model's answer does not match the schema after a repair round: {}", .errors.join("; "))]
    Invalid { answer: String, errors: Vec<String> },
    #[error("the answer matches the schema but not the expected type: {0}")]
    Type(String),
}

/// A validated value and the responses that produced it (one, or two after a repair).
#[derive(Debug)]
pub struct Structured {
    pub value: serde_json::Value,
    pub responses: Vec<ChatResponse>,
    /// Said when the answer was cut off and only what came before the cut was kept.
    pub salvaged: Option<String>,
}

/// Asks for a JSON value matching `format.schema`.
pub async fn complete_json(
    provider: &dyn Provider,
    mut request: ChatRequest,
    format: JsonSchemaFormat,
    sink: Sink<'_>,
) -> Result<Structured, StructuredError> {
    let validator = jsonschema::validator_for(&format.schema)
        .map_err(|e| StructuredError::BadSchema(e.to_string()))?;
    if provider.capabilities().json_schema {
        request.response_format = Some(format.clone());
    } else {
        let schema = serde_json::to_string_pretty(&format.schema).unwrap_or_default();
        let instruction = INSTRUCTION.replace("{schema}", &schema);
        request.system = Some(match request.system.take() {
            Some(system) => format!("{system}\n\n{instruction}"),
            None => instruction,
        });
    }
    let mut responses = Vec::new();
    let first = provider.chat(&request, sink).await?;
    let answer = first.message.content.clone();
    responses.push(first);
    let errors = match check(&validator, &answer) {
        Ok(value) => {
            return Ok(Structured {
                value,
                responses,
                salvaged: None,
            });
        }
        Err(errors) => errors,
    };
    // An answer the output limit cut off: its complete entries, if they make an answer.
    let cut = responses[0].finish == FinishReason::Length
        || errors.iter().any(|e| e.contains("EOF while parsing"));
    if cut && let Some((value, kept)) = crate::salvage::salvage(&answer, &validator, &format.schema)
    {
        return Ok(Structured {
            value,
            responses,
            salvaged: Some(format!(
                "the model's answer was cut off at its output limit; the {kept} complete entries before the cut were kept"
            )),
        });
    }
    request.messages.push(Message::assistant(answer));
    let listed: Vec<String> = errors.iter().map(|e| format!("- {e}")).collect();
    request.messages.push(Message::user(
        REPAIR.replace("{errors}", &listed.join("\n")),
    ));
    let second = provider.chat(&request, sink).await?;
    let answer = second.message.content.clone();
    responses.push(second);
    match check(&validator, &answer) {
        Ok(value) => Ok(Structured {
            value,
            responses,
            salvaged: None,
        }),
        Err(errors) => Err(StructuredError::Invalid { answer, errors }),
    }
}

/// Asks for a value of type `T` described by `format.schema`.
pub async fn complete_typed<T: DeserializeOwned>(
    provider: &dyn Provider,
    request: ChatRequest,
    format: JsonSchemaFormat,
    sink: Sink<'_>,
) -> Result<(T, Vec<ChatResponse>), StructuredError> {
    let structured = complete_json(provider, request, format, sink).await?;
    let value = serde_json::from_value(structured.value)
        .map_err(|e| StructuredError::Type(e.to_string()))?;
    Ok((value, structured.responses))
}

fn check(
    validator: &jsonschema::Validator,
    answer: &str,
) -> Result<serde_json::Value, Vec<String>> {
    let text = extract_json(answer);
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| vec![format!("not valid JSON: {e}")])?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(value)
    } else {
        Err(errors)
    }
}

/// The JSON in an answer: inside a code fence if there is one, else from the first `{` or `[` to
/// the last matching closer, else the trimmed text.
pub fn extract_json(answer: &str) -> &str {
    let trimmed = answer.trim();
    if let Some(start) = trimmed.find("```") {
        let after = &trimmed[start + 3..];
        let body_start = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[body_start..];
        if let Some(end) = body.find("```") {
            return body[..end].trim();
        }
    }
    let open = trimmed.find(['{', '[']);
    let close = trimmed.rfind(['}', ']']);
    match (open, close) {
        (Some(open), Some(close)) if close > open => &trimmed[open..=close],
        _ => trimmed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_json() {
        assert_eq!(extract_json("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(
            extract_json("Sure! {\"a\": [1]} hope that helps"),
            "{\"a\": [1]}"
        );
        assert_eq!(extract_json("  [1,2] "), "[1,2]");
        assert_eq!(extract_json("nothing"), "nothing");
    }
}
