//! Deterministic replay of recorded model exchanges, and the recorder that writes them.
//!
//! A cassette is JSONL: one `{"key", "request", "response"}` object per exchange. The key is the
//! SHA-256 of the normalized request (canonical JSON with sorted keys; the `stream` flag is left
//! out, so a streamed and a plain call match). The same request recorded twice is answered in
//! recorded order. A request with no recorded answer is an error naming it, never a made-up answer.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::LlmError;
use crate::types::{Capabilities, ChatRequest, ChatResponse, Role, StreamEvent};
use crate::{ChatResult, Sink};
use crate::{Provider, ProviderLayer};

#[derive(Debug, Serialize, Deserialize)]
struct Exchange {
    key: String,
    request: serde_json::Value,
    response: ChatResponse,
    /// What the recorded provider could do: a review asks a provider whose cache serves only
    /// its breakpoints, or that has no tools, other requests, so a replay claims the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capabilities: Option<Capabilities>,
}

/// The normalized form of a request that keys it.
pub fn normalize(request: &ChatRequest) -> serde_json::Value {
    let mut request = request.clone();
    request.stream = false;
    // serde_json's map is ordered by key, so this is canonical.
    serde_json::to_value(&request).unwrap_or(serde_json::Value::Null)
}

pub fn request_key(request: &ChatRequest) -> String {
    let canonical = normalize(request).to_string();
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

fn summary(request: &ChatRequest) -> String {
    let last = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User || m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .unwrap_or("");
    let shown: String = last.chars().take(80).collect();
    format!(
        "{} messages, {} tools, last: {shown:?}",
        request.messages.len(),
        request.tools.len()
    )
}

/// Answers from a cassette.
#[derive(Debug)]
pub struct ReplayProvider {
    label: String,
    path: PathBuf,
    answers: Mutex<HashMap<String, VecDeque<ChatResponse>>>,
    capabilities: Capabilities,
}

impl ReplayProvider {
    pub fn open(path: &Path) -> Result<Self, LlmError> {
        let cassette_error = |message: String| LlmError::Cassette {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| cassette_error(format!("cannot read: {e}")))?;
        let mut answers: HashMap<String, VecDeque<ChatResponse>> = HashMap::new();
        let mut recorded = None;
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let exchange: Exchange = serde_json::from_str(line)
                .map_err(|e| cassette_error(format!("line {}: {e}", index + 1)))?;
            recorded = recorded.or(exchange.capabilities);
            answers
                .entry(exchange.key)
                .or_default()
                .push_back(exchange.response);
        }
        Ok(ReplayProvider {
            label: format!("replay:{}", path.display()),
            path: path.to_path_buf(),
            answers: Mutex::new(answers),
            // What the recorded provider could do; a cassette that does not say (recorded
            // before it was kept) replays whatever was recorded, so claims what any can do.
            capabilities: recorded.unwrap_or(Capabilities {
                tools: true,
                json_schema: true,
                streaming: true,
                context_tokens: None,
                cache_at_breakpoints: false,
            }),
        })
    }

    /// Replays as a provider with other capabilities (those of the recorded one).
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }
}

#[async_trait]
impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let key = request_key(request);
        let answer = {
            let mut answers = self
                .answers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            answers.get_mut(&key).and_then(VecDeque::pop_front)
        };
        let Some(response) = answer else {
            return Err(LlmError::ReplayMiss {
                cassette: self.path.display().to_string(),
                key,
                summary: summary(request),
            });
        };
        if request.stream
            && let Some(sink) = sink
            && !response.message.content.is_empty()
        {
            sink(StreamEvent::Text(response.message.content.clone()));
        }
        Ok(response)
    }
}

/// Wraps a provider and appends every exchange to a cassette.
#[derive(Debug)]
pub struct Recorder {
    inner: Arc<dyn Provider>,
    path: PathBuf,
    file: Mutex<std::fs::File>,
}

impl Recorder {
    /// Appends to `path` (created if missing).
    pub fn new(inner: Arc<dyn Provider>, path: &Path) -> Result<Self, LlmError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| LlmError::Cassette {
                path: path.display().to_string(),
                message: format!("cannot open for recording: {e}"),
            })?;
        Ok(Recorder {
            inner,
            path: path.to_path_buf(),
            file: Mutex::new(file),
        })
    }
}

#[async_trait]
impl ProviderLayer for Recorder {
    fn inner(&self) -> &dyn Provider {
        &*self.inner
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let response = self.inner.chat(request, sink).await?;
        let exchange = Exchange {
            key: request_key(request),
            request: normalize(request),
            response: response.clone(),
            capabilities: Some(self.inner.capabilities()),
        };
        let line = serde_json::to_string(&exchange).map_err(|e| LlmError::Cassette {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // One write per line keeps lines whole even if the run dies right after.
        file.write_all(format!("{line}\n").as_bytes())
            .and_then(|()| file.flush())
            .map_err(|e| LlmError::Cassette {
                path: self.path.display().to_string(),
                message: format!("cannot write: {e}"),
            })?;
        Ok(response)
    }
}
