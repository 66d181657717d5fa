//! A scripted model, in-process: answers are given up front and handed out in order. It is how the
//! agent and loop crates test themselves without a network or a model; every request it receives
//! is kept for assertions.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::Provider;
use crate::error::LlmError;
use crate::types::{
    Capabilities, ChatRequest, ChatResponse, FinishReason, Message, Role, StreamEvent, ToolCall,
    Usage,
};
use crate::{ChatResult, Sink};

type Step = Box<dyn FnOnce(&ChatRequest) -> ChatResult + Send>;

pub struct ScriptedProvider {
    label: String,
    capabilities: Capabilities,
    /// How long each answer takes, as a hosted model's would (`latency_ms` on a script's first
    /// line): for measuring what a user waits for, never in tests' assertions.
    latency: std::time::Duration,
    /// Each answer with the text its request's system prompt must contain, if any.
    script: Mutex<VecDeque<(Option<Needle>, Step)>>,
    requests: Mutex<Vec<ChatRequest>>,
    /// When each request came and when its answer went, in the order they came: whether
    /// requests overlapped in time.
    spans: Mutex<Vec<(std::time::Instant, std::time::Instant)>>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// One line of a script file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptLine {
    #[serde(default)]
    capabilities: Option<ScriptCapabilities>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ScriptCall>>,
    /// Only a request whose system prompt contains this takes the answer (for reviewers that
    /// run at the same time, told apart by their focus).
    #[serde(default)]
    when: Option<String>,
    /// Only a request whose first user message (the task) contains this takes the answer (for
    /// agents that run at the same time on different tasks: issues solved in parallel).
    #[serde(default)]
    when_task: Option<String>,
    /// The tokens the answer says it used (none: zero), for runs whose spending is shown.
    #[serde(default)]
    usage: Option<ScriptUsage>,
    /// `"length"`: a text answer the output limit cut off (as a provider says it).
    #[serde(default)]
    finish: Option<ScriptFinish>,
}

#[derive(serde::Deserialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum ScriptFinish {
    Stop,
    Length,
}

#[derive(serde::Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct ScriptUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// Which requests an answer is for.
#[derive(Debug, Clone)]
enum Needle {
    System(String),
    Task(String),
}

impl Needle {
    fn of(when: Option<String>, when_task: Option<String>) -> Option<Needle> {
        when.map(Needle::System).or(when_task.map(Needle::Task))
    }

    fn matches(&self, request: &ChatRequest) -> bool {
        match self {
            Needle::System(text) => request.system.as_deref().unwrap_or("").contains(text),
            Needle::Task(text) => request
                .messages
                .iter()
                .find(|m| m.role == Role::User)
                .is_some_and(|m| m.content.contains(text)),
        }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCapabilities {
    #[serde(default = "yes")]
    tools: bool,
    #[serde(default)]
    json_schema: bool,
    #[serde(default)]
    latency_ms: u64,
    /// A small context (as the embedded model's), which the review plans around.
    #[serde(default)]
    context_tokens: Option<u32>,
    /// A cache as Anthropic's (see [`Capabilities::cache_at_breakpoints`]).
    #[serde(default)]
    cache_at_breakpoints: bool,
}

fn yes() -> bool {
    true
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    name: String,
    arguments: serde_json::Value,
}

impl ScriptedProvider {
    /// A script file (`script:<path>` models): JSON Lines, one answer per line, handed out in
    /// order: `{"text": "..."}` or `{"tool_calls": [{"name": ..., "arguments": {...}}]}`, either
    /// with an optional `"when": "<text>"` that only a request whose system prompt contains the
    /// text takes (or `"when_task"`: whose first user message does), and a text answer with an
    /// optional `"finish": "length"` that says the output limit cut it off; an optional first line `{"capabilities": {"tools": false, "json_schema":
    /// true, "latency_ms": 3000, "context_tokens": 4096}}` (`latency_ms`: each answer comes that long after its
    /// request; `context_tokens`: a context as small as a local model's). For reproducible runs
    /// of the whole program without a model.
    pub fn from_file(path: &std::path::Path) -> Result<Self, LlmError> {
        let error =
            |message: String| LlmError::Config(format!("script {}: {message}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| error(format!("cannot read: {e}")))?;
        let mut provider = ScriptedProvider::new([]);
        provider.label = format!("script:{}", path.display());
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed: ScriptLine = serde_json::from_str(line)
                .map_err(|e| error(format!("line {}: {e}", index + 1)))?;
            let spent = parsed.usage.unwrap_or_default();
            let usage = Usage {
                input_tokens: spent.input_tokens,
                output_tokens: spent.output_tokens,
                cached_input_tokens: 0,
            };
            match parsed {
                ScriptLine {
                    capabilities: Some(c),
                    text: None,
                    tool_calls: None,
                    when: None,
                    when_task: None,
                    usage: None,
                    finish: None,
                } if index == 0 => {
                    provider.capabilities.tools = c.tools;
                    provider.capabilities.json_schema = c.json_schema;
                    provider.latency = std::time::Duration::from_millis(c.latency_ms);
                    provider.capabilities.context_tokens = c.context_tokens;
                    provider.capabilities.cache_at_breakpoints = c.cache_at_breakpoints;
                }
                ScriptLine {
                    capabilities: None,
                    text: Some(text),
                    tool_calls: None,
                    when,
                    when_task,
                    finish,
                    ..
                } => {
                    let mut reply = text_reply(text, usage);
                    if let Some(ScriptFinish::Length) = finish {
                        reply.finish = FinishReason::Length;
                    }
                    provider.push_needle(Needle::of(when, when_task), reply);
                }
                ScriptLine {
                    capabilities: None,
                    text: None,
                    tool_calls: Some(calls),
                    when,
                    when_task,
                    ..
                } => {
                    let calls: Vec<(&str, serde_json::Value)> = calls
                        .iter()
                        .map(|c| (c.name.as_str(), c.arguments.clone()))
                        .collect();
                    provider.push_needle(Needle::of(when, when_task), tool_reply(&calls, usage));
                }
                _ => {
                    return Err(error(format!(
                        "line {}: give exactly one of `text` or `tool_calls` (`capabilities` only on the first line)",
                        index + 1
                    )));
                }
            }
        }
        Ok(provider)
    }

    pub fn new(replies: impl IntoIterator<Item = ChatResponse>) -> Self {
        let provider = ScriptedProvider {
            label: "scripted".to_owned(),
            capabilities: Capabilities {
                tools: true,
                json_schema: false,
                streaming: true,
                context_tokens: None,
                cache_at_breakpoints: false,
            },
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            spans: Mutex::new(Vec::new()),
            latency: std::time::Duration::ZERO,
        };
        for reply in replies {
            provider.push(reply);
        }
        provider
    }

    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    pub fn push(&self, reply: ChatResponse) {
        self.push_step(Box::new(move |_| Ok(reply)));
    }

    /// An answer only a request whose system prompt contains `needle` takes (any request when
    /// `None`); earlier answers for other requests stay queued.
    pub fn push_when(&self, needle: Option<String>, reply: ChatResponse) {
        self.push_needle(needle.map(Needle::System), reply);
    }

    fn push_needle(&self, needle: Option<Needle>, reply: ChatResponse) {
        self.script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back((needle, Box::new(move |_| Ok(reply))));
    }

    /// The next call fails with the error `make` builds.
    pub fn push_error(&self, make: impl FnOnce() -> LlmError + Send + 'static) {
        self.push_step(Box::new(move |_| Err(make())));
    }

    /// The next call is answered by `answer`, which sees the request.
    pub fn push_fn(&self, answer: impl FnOnce(&ChatRequest) -> ChatResult + Send + 'static) {
        self.push_step(Box::new(answer));
    }

    fn push_step(&self, step: Step) {
        self.script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back((None, step));
    }

    /// Every request received so far.
    /// When each answered request came and went, in the order they were answered.
    pub fn spans(&self) -> Vec<(std::time::Instant, std::time::Instant)> {
        self.spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Sets how long each answer takes (as a script's `latency_ms` does).
    pub fn with_latency(mut self, latency: std::time::Duration) -> Self {
        self.latency = latency;
        self
    }

    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn remaining(&self) -> usize {
        self.script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let step = {
            let mut script = self
                .script
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            script
                .iter()
                .position(|(needle, _)| needle.as_ref().is_none_or(|n| n.matches(request)))
                .and_then(|at| script.remove(at))
                .map(|(_, step)| step)
        };
        let Some(step) = step else {
            return Err(LlmError::InvalidResponse(
                "the scripted model has no more answers".into(),
            ));
        };
        let came = std::time::Instant::now();
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let response = step(request);
        self.spans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((came, std::time::Instant::now()));
        let response = response?;
        if request.stream
            && let Some(sink) = sink
            && !response.message.content.is_empty()
        {
            sink(StreamEvent::Text(response.message.content.clone()));
        }
        Ok(response)
    }
}

/// A plain text answer.
pub fn text_reply(text: impl Into<String>, usage: Usage) -> ChatResponse {
    ChatResponse {
        message: Message::assistant(text),
        finish: FinishReason::Stop,
        usage,
        model: "scripted".into(),
    }
}

/// An answer that calls tools: `(name, arguments JSON)` pairs, with ids `call_1`, `call_2`, ...
pub fn tool_reply(calls: &[(&str, serde_json::Value)], usage: Usage) -> ChatResponse {
    let tool_calls = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| ToolCall {
            id: format!("call_{}", i + 1),
            name: (*name).to_owned(),
            arguments: arguments.to_string(),
        })
        .collect();
    ChatResponse {
        message: Message::assistant_calling(String::new(), tool_calls),
        finish: FinishReason::ToolCalls,
        usage,
        model: "scripted".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn script_files_are_served_in_order_and_bad_lines_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.jsonl");
        std::fs::write(
            &path,
            "{\"capabilities\": {\"tools\": false, \"json_schema\": true}}\n\n{\"text\": \"one\"}\n{\"tool_calls\": [{\"name\": \"t\", \"arguments\": {\"a\": 1}}]}\n",
        )
        .unwrap();
        let provider = ScriptedProvider::from_file(&path).unwrap();
        assert!(!provider.capabilities().tools);
        let request = ChatRequest::default();
        assert_eq!(
            provider.chat(&request, None).await.unwrap().message.content,
            "one"
        );
        let second = provider.chat(&request, None).await.unwrap();
        assert_eq!(second.message.tool_calls[0].name, "t");
        assert!(provider.chat(&request, None).await.is_err());

        // Answers meant for a request that has not come stay queued for it.
        std::fs::write(
            &path,
            "{\"text\": \"for b\", \"when\": \"focus b\"}\n{\"text\": \"for a\", \"when\": \"focus a\"}\n{\"text\": \"any\"}\n",
        )
        .unwrap();
        let provider = ScriptedProvider::from_file(&path).unwrap();
        let asking = |system: &str| ChatRequest {
            system: Some(system.to_owned()),
            ..ChatRequest::default()
        };
        let answer = async |system: &str| {
            provider
                .chat(&asking(system), None)
                .await
                .unwrap()
                .message
                .content
        };
        assert_eq!(answer("focus a").await, "for a");
        assert_eq!(answer("focus c").await, "any");
        assert_eq!(answer("x focus b x").await, "for b");
        assert!(provider.chat(&asking("focus a"), None).await.is_err());

        std::fs::write(&path, "{\"text\": \"a\", \"tool_calls\": []}\n").unwrap();
        let error = ScriptedProvider::from_file(&path).unwrap_err().to_string();
        assert!(
            error.contains("line 1") && error.contains("exactly one"),
            "{error}"
        );
        std::fs::write(&path, "{\"text\": \"a\"}\n{\"capabilities\": {}}\n").unwrap();
        let error = ScriptedProvider::from_file(&path).unwrap_err().to_string();
        assert!(error.contains("line 2"), "{error}");
    }
}
