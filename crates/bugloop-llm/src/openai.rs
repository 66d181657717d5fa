//! OpenAI-compatible Chat Completions: OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio,
//! OpenRouter, Groq and anything else that speaks `POST {base}/chat/completions`.

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

#[derive(Debug)]
pub struct OpenAiProvider {
    label: String,
    model: String,
    base_url: String,
    /// Never printed: the provider's `Debug` says `[REDACTED]`.
    api_key: Option<SecretString>,
    http: Http,
    native_json_schema: bool,
}

impl OpenAiProvider {
    /// `api_key` is the key itself (read from the environment by the caller), if the server needs
    /// one. `native_json_schema` says whether the server honours `response_format: json_schema`.
    pub fn new(
        label: impl Into<String>,
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<String>,
        settings: HttpSettings,
        native_json_schema: bool,
    ) -> Result<Self, LlmError> {
        Ok(OpenAiProvider {
            label: label.into(),
            model: model.into(),
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: api_key.map(SecretString::from),
            http: Http::new(settings)?,
            native_json_schema,
        })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for message in &request.messages {
            messages.push(wire_message(message));
        }
        let model = if request.model.is_empty() {
            &self.model
        } else {
            &request.model
        };
        let mut body = json!({"model": model, "messages": messages});
        let object = body.as_object_mut();
        let Some(object) = object else { return body };
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters
                    }})
                })
                .collect();
            object.insert("tools".into(), Value::Array(tools));
            let choice = match &request.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::None => json!("none"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            object.insert("tool_choice".into(), choice);
        }
        if let Some(format) = &request.response_format
            && self.native_json_schema
        {
            object.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": format.name, "schema": format.schema, "strict": false
                }}),
            );
        }
        if let Some(max) = request.max_tokens {
            object.insert("max_tokens".into(), json!(max));
        }
        if let Some(temperature) = request.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if request.stream {
            object.insert("stream".into(), json!(true));
            object.insert("stream_options".into(), json!({"include_usage": true}));
        }
        body
    }

    async fn attempt(&self, request: &ChatRequest, body: &Value, sink: Sink<'_>) -> ChatResult {
        let url = format!("{}/chat/completions", self.base_url);
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push(("authorization", format!("Bearer {}", key.expose_secret())));
        }
        self.http
            .exchange::<StreamState>(&url, &headers, body, request.stream, sink, &self.model)
            .await
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tools: true,
            json_schema: self.native_json_schema,
            streaming: true,
            context_tokens: None,
            cache_at_breakpoints: false,
        }
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let body = self.body(request);
        let mut response = self
            .http
            .with_retries(sink, || self.attempt(request, &body, sink))
            .await?;
        // A count the server left out (or gave as nothing: some servers report no prompt tokens
        // for a prompt they cached) is estimated, part by part.
        let estimate = estimated_usage(request, &response);
        let usage = &mut response.usage;
        if usage.input_tokens == 0 {
            usage.input_tokens = estimate.input_tokens;
        }
        if usage.output_tokens == 0 {
            usage.output_tokens = estimate.output_tokens;
        }
        Ok(response)
    }
}

fn wire_message(message: &Message) -> Value {
    match message.role {
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.clone().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Assistant => {
            let mut value = json!({"role": "assistant", "content": message.content});
            if !message.tool_calls.is_empty() {
                let calls: Vec<Value> = message
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
                value["tool_calls"] = Value::Array(calls);
                if message.content.is_empty() {
                    value["content"] = Value::Null;
                }
            }
            value
        }
    }
}

fn finish_reason(text: Option<&str>) -> FinishReason {
    match text {
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

/// What a call used, estimated (four characters a token) where the server said nothing of it
/// (some local servers and proxies leave `usage` out): counted so, the run's token budgets
/// still bind, and a server that reports nothing cannot spend without limit.
fn estimated_usage(request: &ChatRequest, response: &ChatResponse) -> Usage {
    let message = &response.message;
    let answer = message.content.chars().count()
        + message
            .tool_calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.to_string().chars().count())
            .sum::<usize>();
    Usage {
        input_tokens: crate::budget::estimate_input_tokens(request),
        output_tokens: u64::try_from(answer.div_ceil(4)).unwrap_or(u64::MAX),
        cached_input_tokens: 0,
    }
}

fn usage(value: Option<&Value>) -> Usage {
    let Some(value) = value else {
        return Usage::default();
    };
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: number(value.get("prompt_tokens")),
        output_tokens: number(value.get("completion_tokens")),
        cached_input_tokens: number(value.pointer("/prompt_tokens_details/cached_tokens")),
    }
}

fn parse_response(value: &Value, default_model: &str) -> ChatResult {
    if let Some(error) = value.get("error") {
        return Err(LlmError::InvalidResponse(format!(
            "error in a successful response: {error}"
        )));
    }
    let choice = value
        .pointer("/choices/0")
        .ok_or_else(|| LlmError::InvalidResponse("no `choices[0]` in the answer".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| LlmError::InvalidResponse("no `choices[0].message` in the answer".into()))?;
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut tool_calls = Vec::new();
    for (index, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                LlmError::InvalidResponse(format!("tool call {index} has no function name"))
            })?;
        let arguments = match call.pointer("/function/arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("call_{index}"));
        tool_calls.push(ToolCall {
            id,
            name: name.to_owned(),
            arguments,
        });
    }
    Ok(ChatResponse {
        message: Message::assistant_calling(content, tool_calls),
        finish: finish_reason(choice.get("finish_reason").and_then(Value::as_str)),
        usage: usage(value.get("usage")),
        model: value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(default_model)
            .to_owned(),
    })
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assembles a streamed answer from its chunks.
#[derive(Default)]
struct StreamState {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    model: Option<String>,
    done: bool,
}

impl WireFormat for StreamState {
    /// Folds one chunk into the answer (OpenAI's events carry no type: every one is data).
    fn on_event(&mut self, _event: &str, data: &str, sink: Sink<'_>) -> Result<(), LlmError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            LlmError::InvalidResponse(format!(
                "stream chunk is not JSON ({e}): {}",
                data.chars().take(200).collect::<String>()
            ))
        })?;
        if let Some(error) = chunk.get("error") {
            // An error sent inside the stream: classify it like an HTTP error body.
            let status = error
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(500);
            return Err(crate::error::classify_status(status, data, None));
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            self.model.get_or_insert_with(|| model.to_owned());
        }
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.usage = usage(Some(u));
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(text) = delta
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.text.push_str(text);
                if let Some(sink) = sink {
                    sink(StreamEvent::Text(text.to_owned()));
                }
            }
            for call in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    entry.id = id.to_owned();
                }
                if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                    entry.name.push_str(name);
                    if let Some(sink) = sink {
                        sink(StreamEvent::ToolCallStarted {
                            id: entry.id.clone(),
                            name: name.to_owned(),
                        });
                    }
                }
                if let Some(arguments) = call.pointer("/function/arguments").and_then(Value::as_str)
                {
                    entry.arguments.push_str(arguments);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(finish_reason(Some(reason)));
        }
        Ok(())
    }

    fn finish(self, default_model: &str) -> ChatResult {
        let Some(finish) = self.finish else {
            return Err(LlmError::StreamInterrupted(format!(
                "no finish reason after {} characters{}",
                self.text.chars().count(),
                if self.done {
                    " (got [DONE])"
                } else {
                    " and no [DONE]"
                }
            )));
        };
        let tool_calls = self
            .calls
            .into_iter()
            .map(|(index, c)| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{index}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        Ok(ChatResponse {
            message: Message::assistant_calling(self.text, tool_calls),
            finish,
            usage: self.usage,
            model: self.model.unwrap_or_else(|| default_model.to_owned()),
        })
    }

    fn parse(value: &Value, default_model: &str) -> ChatResult {
        parse_response(value, default_model)
    }
}
