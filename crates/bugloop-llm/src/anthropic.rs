//! Anthropic's Messages API, with tool use and prompt caching by construction: bugloop's requests
//! are a stable prefix (tools, system prompt, the task's first message: the change under review)
//! followed by appended turns, and three of Anthropic's four cache breakpoints mark it: the system
//! prompt (tools and system), the first message, and the last message (the conversation so far,
//! read back by the next turn).

use std::collections::BTreeMap;

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};

use crate::Provider;
use crate::error::LlmError;
use crate::http::{Http, HttpSettings, WireFormat};
use crate::types::{
    Capabilities, ChatRequest, ChatResponse, FinishReason, Message, Role, StreamEvent, ToolCall,
    ToolChoice, Usage,
};
use crate::{ChatResult, Sink};

/// The API version bugloop speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is used when the request has none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

#[derive(Debug)]
pub struct AnthropicProvider {
    label: String,
    model: String,
    base_url: String,
    /// Never printed: the provider's `Debug` says `[REDACTED]`.
    api_key: SecretString,
    http: Http,
}

impl AnthropicProvider {
    pub fn new(
        label: impl Into<String>,
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: String,
        settings: HttpSettings,
    ) -> Result<Self, LlmError> {
        Ok(AnthropicProvider {
            label: label.into(),
            model: model.into(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: SecretString::from(api_key),
            http: Http::new(settings)?,
        })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let model = if request.model.is_empty() {
            &self.model
        } else {
            &request.model
        };
        let mut messages = wire_messages(&request.messages);
        mark_cache_breakpoints(&mut messages);
        let mut body = json!({
            "model": model,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        let Some(object) = body.as_object_mut() else {
            return body;
        };
        if let Some(system) = &request.system {
            object.insert(
                "system".into(),
                json!([{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]),
            );
        }
        if !request.tools.is_empty() {
            // Tools come first in the cached prefix; the system prompt's breakpoint covers them.
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            object.insert("tools".into(), Value::Array(tools));
            let choice = match &request.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            object.insert("tool_choice".into(), choice);
        }
        if let Some(temperature) = request.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if request.stream {
            object.insert("stream".into(), json!(true));
        }
        body
    }

    async fn attempt(&self, request: &ChatRequest, body: &Value, sink: Sink<'_>) -> ChatResult {
        let url = format!("{}/v1/messages", self.base_url);
        let headers = [
            ("x-api-key", self.api_key.expose_secret().to_owned()),
            ("anthropic-version", ANTHROPIC_VERSION.to_owned()),
        ];
        self.http
            .exchange::<StreamState>(&url, &headers, body, request.stream, sink, &self.model)
            .await
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tools: true,
            json_schema: false,
            streaming: true,
            context_tokens: None,
            cache_at_breakpoints: true,
        }
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let body = self.body(request);
        self.http
            .with_retries(sink, || self.attempt(request, &body, sink))
            .await
    }
}

/// Messages as content blocks; consecutive messages of one role are merged, as the API requires
/// alternating roles (tool results travel in a user message).
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::User => (
                "user",
                vec![json!({"type": "text", "text": message.content})],
            ),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": message.content,
                })],
            ),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": message.content}));
                }
                for call in &message.tool_calls {
                    let input = call
                        .parse_arguments()
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some((last_role, last_blocks)) if last_role == role => last_blocks.extend(blocks),
            _ => out.push((role.to_owned(), blocks)),
        }
    }
    out.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// Cache breakpoints on the last block of the first message (the task: the change under review,
/// the same in every pass) and of the last message (everything so far, which the next turn reads
/// back). With the system prompt's, three of the four Anthropic allows.
fn mark_cache_breakpoints(messages: &mut [Value]) {
    let last = messages.len().saturating_sub(1);
    for index in [0, last] {
        let block = messages
            .get_mut(index)
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
            .and_then(|blocks| blocks.last_mut());
        if let Some(block) = block {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
    }
}

fn finish_reason(text: Option<&str>) -> FinishReason {
    match text {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// Anthropic counts cached and cache-writing input apart from `input_tokens`; bugloop's input is
/// all three, of which the cache reads are "cached".
fn add_usage(into: &mut Usage, value: &Value) {
    let number = |key: &str| value.get(key).and_then(Value::as_u64);
    if let Some(input) = number("input_tokens") {
        into.input_tokens = input
            + number("cache_read_input_tokens").unwrap_or(0)
            + number("cache_creation_input_tokens").unwrap_or(0);
        into.cached_input_tokens = number("cache_read_input_tokens").unwrap_or(0);
    }
    if let Some(output) = number("output_tokens") {
        into.output_tokens = output;
    }
}

fn parse_response(value: &Value, default_model: &str) -> ChatResult {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(LlmError::InvalidResponse(format!(
            "error in a successful response: {value}"
        )));
    }
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::InvalidResponse("no `content` array in the answer".into()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => tool_calls.push(ToolCall {
                id: block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                arguments: block
                    .get("input")
                    .map(Value::to_string)
                    .unwrap_or_else(|| "{}".into()),
            }),
            _ => {}
        }
    }
    let mut usage = Usage::default();
    if let Some(u) = value.get("usage") {
        add_usage(&mut usage, u);
    }
    Ok(ChatResponse {
        message: Message::assistant_calling(text, tool_calls),
        finish: finish_reason(value.get("stop_reason").and_then(Value::as_str)),
        usage,
        model: value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(default_model)
            .to_owned(),
    })
}

enum Block {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

#[derive(Default)]
struct StreamState {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    model: Option<String>,
    finish: Option<FinishReason>,
    stopped: bool,
}

impl StreamState {
    /// The model and the input side of the usage come first, in `message_start`.
    fn message_start(&mut self, value: &Value) {
        if let Some(message) = value.get("message") {
            self.model = message
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Some(u) = message.get("usage") {
                add_usage(&mut self.usage, u);
            }
        }
    }

    /// A new content block at `index`: a tool call (announced to `sink` at once, its arguments
    /// follow in deltas) or text.
    fn block_start(&mut self, index: u64, value: &Value, sink: Sink<'_>) {
        let block = value.get("content_block").cloned().unwrap_or(Value::Null);
        let started = match block.get("type").and_then(Value::as_str) {
            Some("tool_use") => {
                let id = block
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if let Some(sink) = sink {
                    sink(StreamEvent::ToolCallStarted {
                        id: id.clone(),
                        name: name.clone(),
                    });
                }
                Block::Tool {
                    id,
                    name,
                    json: String::new(),
                }
            }
            _ => Block::Text(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
        };
        self.blocks.insert(index, started);
    }

    /// A piece of the block at `index`: text (passed on to `sink`) or a tool call's JSON
    /// arguments. A delta for a block that never started means the stream is broken.
    fn block_delta(&mut self, index: u64, value: &Value, sink: Sink<'_>) -> Result<(), LlmError> {
        let delta = value.get("delta").cloned().unwrap_or(Value::Null);
        match (
            self.blocks.get_mut(&index),
            delta.get("type").and_then(Value::as_str),
        ) {
            (Some(Block::Text(text)), Some("text_delta")) => {
                let piece = delta
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                text.push_str(piece);
                if let Some(sink) = sink {
                    sink(StreamEvent::Text(piece.to_owned()));
                }
            }
            (Some(Block::Tool { json, .. }), Some("input_json_delta")) => {
                json.push_str(
                    delta
                        .get("partial_json")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                );
            }
            (None, _) => {
                return Err(LlmError::InvalidResponse(format!(
                    "delta for unknown content block {index}"
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// The stop reason and the output side of the usage come last, in `message_delta`.
    fn message_delta(&mut self, value: &Value) {
        if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(Some(reason)));
        }
        if let Some(u) = value.get("usage") {
            add_usage(&mut self.usage, u);
        }
    }
}

impl WireFormat for StreamState {
    /// Folds one server-sent event into the state, passing text and started tool calls on to
    /// `sink` as they come.
    fn on_event(&mut self, event: &str, data: &str, sink: Sink<'_>) -> Result<(), LlmError> {
        if event == "ping" || data.trim().is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::InvalidResponse(format!("stream event {event:?} is not JSON ({e})"))
        })?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or(event);
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => self.message_start(&value),
            "content_block_start" => self.block_start(index, &value, sink),
            "content_block_delta" => self.block_delta(index, &value, sink)?,
            "message_delta" => self.message_delta(&value),
            "message_stop" => self.stopped = true,
            "error" => return Err(stream_error(&value)),
            _ => {}
        }
        Ok(())
    }

    fn finish(self, default_model: &str) -> ChatResult {
        if !self.stopped {
            return Err(LlmError::StreamInterrupted("no message_stop event".into()));
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(t) => text.push_str(&t),
                Block::Tool { id, name, json } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: if json.is_empty() { "{}".into() } else { json },
                }),
            }
        }
        Ok(ChatResponse {
            message: Message::assistant_calling(text, tool_calls),
            finish: self.finish.unwrap_or(FinishReason::Other),
            usage: self.usage,
            model: self.model.unwrap_or_else(|| default_model.to_owned()),
        })
    }

    fn parse(value: &Value, default_model: &str) -> ChatResult {
        parse_response(value, default_model)
    }
}

/// An error event in the middle of a stream, classified as the HTTP status the same error would
/// have had before the stream began (so an overload mid-stream is retried like one up front).
fn stream_error(value: &Value) -> LlmError {
    let kind = value
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("error");
    let status = match kind {
        "overloaded_error" => 529,
        "rate_limit_error" => 429,
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        _ => 500,
    };
    crate::error::classify_status(status, &value.to_string(), None)
}
