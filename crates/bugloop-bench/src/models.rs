//! The benchmark's models: they answer at once, so a benchmark measures everything a review does
//! except the model's own time. `PassModel` runs the four tool passes and records each request's
//! estimated input tokens.

use std::sync::Mutex;

use async_trait::async_trait;
use bugloop_llm::budget::estimate_input_tokens;
use bugloop_llm::scripted::tool_reply;
use bugloop_llm::{Capabilities, ChatRequest, ChatResult, Provider, Role, Sink, Usage};
use serde_json::json;

/// What the benchmark's models can do: call tools, and no more.
pub(crate) const TOOLS_ONLY: Capabilities = Capabilities {
    tools: true,
    json_schema: false,
    streaming: false,
    context_tokens: None,
    cache_at_breakpoints: false,
};

/// A finding on the first added line of the first file of a prompt.
pub(crate) fn synthetic_finding(prompt: &str) -> Option<serde_json::Value> {
    let file = prompt
        .lines()
        .find_map(|l| l.strip_prefix("## "))
        .and_then(|l| l.split(" (").next())?;
    // Added lines are shown as `<head line>+<text>`.
    let (line, text) = prompt.lines().find_map(|l| {
        let (number, rest) = l.split_once('+')?;
        Some((number.parse::<u32>().ok()?, rest.to_owned()))
    })?;
    Some(json!({
        "file": file, "line": line, "evidence": text,
        "title": format!("Synthetic finding in {file}"),
        "description": format!("Generated for the benchmark on {file} line {line}."),
        "score": 7, "category": "logic"
    }))
}

/// A tool-calling model that answers at once and runs the four passes without exploring (the
/// least a tools session sends), recording the estimated input of every request. With
/// `reports_finding` it reports one grounded finding in the first pass (on the first added line of
/// the first file it is shown), as a real review's model is driven.
#[derive(Debug, Default)]
pub(crate) struct PassModel {
    pub(crate) reports_finding: bool,
    pub(crate) requests: Mutex<Vec<u64>>,
}

#[async_trait]
impl Provider for PassModel {
    fn name(&self) -> &str {
        if self.reports_finding {
            "bench:instant"
        } else {
            "bench:passes"
        }
    }

    fn capabilities(&self) -> Capabilities {
        TOOLS_ONLY
    }

    async fn chat(&self, request: &ChatRequest, _: Sink<'_>) -> ChatResult {
        let input = estimate_input_tokens(request);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(input);
        }
        let pass = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        let change = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or_default();
        let mut calls = Vec::new();
        if self.reports_finding
            && pass == 1
            && let Some(finding) = synthetic_finding(change)
        {
            calls.push(("report_finding", finding));
        }
        calls.push((
            "submit_pass_results",
            json!({"pass_number": pass, "summary": "bench"}),
        ));
        let mut reply = tool_reply(
            &calls,
            Usage {
                input_tokens: input,
                output_tokens: 50,
                cached_input_tokens: 0,
            },
        );
        reply.model = self.name().to_owned();
        Ok(reply)
    }
}
