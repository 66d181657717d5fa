//! The provider-neutral shape of a chat turn.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// The result of a tool call, answering `tool_call_id`.
    Tool,
}

/// A tool call the model asked for. `arguments` is the JSON text the model wrote (it may be
/// invalid; the caller decides what to tell the model).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl ToolCall {
    pub fn parse_arguments(&self) -> Result<serde_json::Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(serde_json::Value::Object(Default::default()));
        }
        serde_json::from_str(&self.arguments)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message::assistant_calling(text, Vec::new())
    }

    /// The model's answer: its text and the tools it calls.
    pub(crate) fn assistant_calling(text: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message {
            role: Role::Assistant,
            content: text.into(),
            tool_calls,
            tool_call_id: None,
        }
    }

    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            role: Role::Tool,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A tool the model may call; `parameters` is a JSON Schema of its arguments object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    #[default]
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

/// Ask for an answer that is a JSON value matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    /// A short identifier (letters, digits, `_`, `-`), required by some providers.
    pub name: String,
    pub schema: serde_json::Value,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChatRequest {
    /// The provider's own model name (without the `openai:` prefix).
    pub model: String,
    /// The stable prefix of every call in a run (providers may cache it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    #[serde(default)]
    pub tool_choice: ToolChoice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<JsonSchemaFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Stream the answer (deltas go to the caller's sink as they arrive).
    #[serde(default)]
    pub stream: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other,
}

/// Tokens one call used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache (a subset of `input_tokens`).
    #[serde(default)]
    pub cached_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The assistant's message: text and/or tool calls.
    pub message: Message,
    pub finish: FinishReason,
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
}

/// What a streamed answer reports as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the answer's text.
    Text(String),
    /// A tool call started.
    ToolCallStarted { id: String, name: String },
    /// The call is being retried: discard what was streamed so far.
    Restart,
}

/// Receives stream events; must not block.
pub type StreamSink<'a> = &'a (dyn Fn(StreamEvent) + Send + Sync);

/// What a provider can do natively (recorded with each exchange of a cassette; a field an older
/// cassette lacks reads as its default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    pub tools: bool,
    /// Honours [`ChatRequest::response_format`] itself (otherwise the structured-output helper
    /// instructs, validates and repairs).
    pub json_schema: bool,
    pub streaming: bool,
    /// The model's context window in tokens, when it is small enough to plan around (the
    /// embedded model); `None` for hosted models, where the configured budgets rule.
    pub context_tokens: Option<u32>,
    /// The provider's prompt cache serves a request only the prefixes that end where an earlier
    /// request marked one (Anthropic's cache breakpoints), not any prefix an earlier request
    /// shares (OpenAI's rule): a conversation that starts as another but differs within a
    /// message is served nothing of that message.
    pub cache_at_breakpoints: bool,
}
