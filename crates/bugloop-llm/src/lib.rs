//! bugloop's model layer: one [`Provider`] trait over hosted models (OpenAI-compatible servers,
//! Anthropic), an embedded local model, recorded cassettes and a scripted model for tests; with
//! structured output, retries, budgets that fail closed, and usage accounting. Nothing here knows
//! about reviews.
//!
//! **Never:** know about reviews.

pub mod anthropic;
pub mod budget;
pub mod error;
mod http;
#[cfg(feature = "local")]
pub mod local;
pub mod openai;
pub mod overrun;
pub mod replay;
mod salvage;
pub mod scripted;
pub mod structured;
pub mod types;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;

pub use budget::{BudgetExceeded, BudgetLimits, Meter, Metered, Price, Refused, UsageSummary};
pub use error::{Advice, LlmError};
pub use http::HttpSettings;
pub use types::*;

/// Where a chat's streamed text goes; `None` when nobody watches it.
pub type Sink<'a> = Option<StreamSink<'a>>;

/// What one chat turn returns.
pub type ChatResult = Result<ChatResponse, LlmError>;

/// A model behind one interface. Implementations retry transient failures themselves.
#[async_trait]
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The model string it was made from, for reports (`openai:gpt-4o`).
    fn name(&self) -> &str;
    fn capabilities(&self) -> Capabilities;
    /// One chat turn. With `request.stream`, text arrives at `sink` as it is generated; the
    /// returned response is always complete.
    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult;
}

#[async_trait]
impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        (**self).chat(request, sink).await
    }
}

/// A provider wrapped around another that changes only its chats (metering them, recording
/// them, setting a temperature): its name and capabilities are the inner provider's, through
/// the one implementation of [`Provider`] for every layer.
#[async_trait]
pub trait ProviderLayer: Send + Sync + std::fmt::Debug {
    /// The provider this one wraps.
    fn inner(&self) -> &dyn Provider;

    /// One chat turn, as [`Provider::chat`].
    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult;
}

#[async_trait]
impl<L: ProviderLayer> Provider for L {
    fn name(&self) -> &str {
        self.inner().name()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner().capabilities()
    }
    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        ProviderLayer::chat(self, request, sink).await
    }
}

/// How to reach one provider.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProviderSettings {
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Whether an OpenAI-compatible server honours `response_format: json_schema`.
    pub json_schema: Option<bool>,
}

/// Everything [`connect`] needs.
#[derive(Debug, Clone, Default)]
pub struct LlmSettings {
    pub providers: BTreeMap<String, ProviderSettings>,
    pub http: HttpSettings,
    /// Where `local:<name>` models are looked up.
    pub model_dir: Option<PathBuf>,
    /// Record every exchange of the connected provider into this cassette (for `replay:` later).
    pub record_to: Option<PathBuf>,
}

/// A parsed model string: `provider:model`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub provider: String,
    pub model: String,
}

impl ModelSpec {
    /// Whether the model runs in this process (`local:`, `replay:`, `script:`, whatever the
    /// configuration names): it spends no money.
    pub fn runs_in_process(&self) -> bool {
        matches!(self.provider.as_str(), "local" | "replay" | "script")
    }

    pub fn parse(text: &str) -> Result<Self, LlmError> {
        let (provider, model) = text.split_once(':').ok_or_else(|| {
            LlmError::Config(format!(
                "model {text:?} has no provider: write provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, ollama:qwen2.5-coder, local:smollm2"
            ))
        })?;
        let provider = provider.trim().to_lowercase();
        let model = model.trim();
        if provider.is_empty() || model.is_empty() {
            return Err(LlmError::Config(format!(
                "model {text:?} needs both a provider and a model name"
            )));
        }
        Ok(ModelSpec {
            provider,
            model: model.to_owned(),
        })
    }
}

/// Builds the provider a model string names. `env` reads environment variables (API keys are read
/// here and nowhere else).
pub fn connect(
    model: &str,
    settings: &LlmSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, LlmError> {
    let provider = connect_model(model, settings, env)?;
    match &settings.record_to {
        Some(cassette) => Ok(Arc::new(replay::Recorder::new(provider, cassette)?)),
        None => Ok(provider),
    }
}

fn connect_model(
    model: &str,
    settings: &LlmSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Provider>, LlmError> {
    let spec = ModelSpec::parse(model)?;
    let configured = settings
        .providers
        .get(&spec.provider)
        .cloned()
        .unwrap_or_default();
    let key_from = |var: &str| env(var).filter(|k| !k.trim().is_empty());
    match spec.provider.as_str() {
        "replay" => Ok(Arc::new(replay::ReplayProvider::open(
            std::path::Path::new(&spec.model),
        )?)),
        "script" => Ok(Arc::new(scripted::ScriptedProvider::from_file(
            std::path::Path::new(&spec.model),
        )?)),
        "local" => local_provider(&spec, settings),
        "anthropic" => {
            let var = configured
                .api_key_env
                .clone()
                .unwrap_or_else(|| "ANTHROPIC_API_KEY".into());
            let key = key_from(&var).ok_or_else(|| {
                LlmError::Config(format!(
                    "{model}: set the API key in the environment variable {var}"
                ))
            })?;
            let base = configured
                .base_url
                .unwrap_or_else(|| "https://api.anthropic.com".into());
            Ok(Arc::new(anthropic::AnthropicProvider::new(
                model,
                &spec.model,
                base,
                key,
                settings.http.clone(),
            )?))
        }
        provider => {
            let default_base = match provider {
                "openai" => Some("https://api.openai.com/v1"),
                "ollama" => Some("http://127.0.0.1:11434/v1"),
                _ => None,
            };
            let base = configured.base_url.clone().or(default_base.map(str::to_owned)).ok_or_else(|| {
                LlmError::Config(format!(
                    "{model}: unknown provider {provider:?}; configure model.providers.{provider}.base_url for an OpenAI-compatible server"
                ))
            })?;
            let var = configured
                .api_key_env
                .clone()
                .or_else(|| (provider == "openai").then(|| "OPENAI_API_KEY".to_owned()));
            let key = var.as_deref().and_then(key_from);
            if provider == "openai" && key.is_none() && base.contains("api.openai.com") {
                return Err(LlmError::Config(format!(
                    "{model}: set the API key in the environment variable {}",
                    var.unwrap_or_else(|| "OPENAI_API_KEY".into())
                )));
            }
            let json_schema = configured.json_schema.unwrap_or(provider == "openai");
            Ok(Arc::new(openai::OpenAiProvider::new(
                model,
                &spec.model,
                base,
                key,
                settings.http.clone(),
                json_schema,
            )?))
        }
    }
}

#[cfg(feature = "local")]
fn local_provider(spec: &ModelSpec, settings: &LlmSettings) -> Result<Arc<dyn Provider>, LlmError> {
    let path = local::resolve_model(&spec.model, settings.model_dir.as_deref())?;
    Ok(Arc::new(local::LocalProvider::load(
        &format!("local:{}", spec.model),
        &path,
    )?))
}

#[cfg(not(feature = "local"))]
fn local_provider(
    spec: &ModelSpec,
    _settings: &LlmSettings,
) -> Result<Arc<dyn Provider>, LlmError> {
    Err(LlmError::Unsupported {
        provider: format!("local:{}", spec.model),
        what: "this build (it was built without the `local` feature, which needs a C++ toolchain, cmake and libclang); rebuild with default features or use a hosted or Ollama model".into(),
    })
}
