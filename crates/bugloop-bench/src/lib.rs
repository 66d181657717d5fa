//! Benchmarks (their results belong in BENCHMARKS.md): the embedded model's speed and memory on a
//! fixed review prompt (`bench/model-prompt.md`), everything a review does except the model's
//! time on a synthetic change, the input tokens a review of a reference change sends, the wall
//! time of a review with a model that takes time to answer, and what proving findings adds to a
//! review.
//!
//! **Never:** be linked into a default build: the CLI takes it only with its feature `bench`, which
//! `scripts/test` turns on; without it `bugloop bench` says how to build it. **Start reading:**
//! `lib.rs`.

mod detect;
mod latency;
mod models;
mod prove;
mod recorder;
mod review;
mod session;
mod tokens;

pub use self::detect::{CaseResult, DetectBench, Tally, detect};
pub use self::latency::{LatencyBench, ServedBench, latency, serve};
pub use self::prove::{ProveBench, prove};
pub use self::recorder::{Latency, RequestTiming, RequestTokens};
pub use self::review::{ReviewBench, review};
pub use self::session::{SessionBench, SessionTurn, session};
pub use self::tokens::{ScenarioTokens, TokensBench, TokensSource, tokens};

use serde::Serialize;

use bugloop_app::AppError;

const PROMPT: &str = include_str!("../bench/model-prompt.md");
const SYSTEM: &str = include_str!("../bench/model-system.md").trim_ascii_end();

/// The embedded model's figures: medians over the runs.
#[derive(Debug, Clone, Serialize)]
pub struct ModelBench {
    pub model: String,
    pub file: String,
    pub load_seconds: f64,
    pub runs: usize,
    pub prompt_tokens: u64,
    pub generated_tokens: Vec<u64>,
    pub prompt_tokens_per_second: f64,
    pub generation_tokens_per_second: f64,
    pub peak_rss_mb: Option<f64>,
    pub threads: usize,
}

/// What a model error is, for the benchmarks of the embedded model `model`.
#[cfg(feature = "local")]
fn unusable(model: &str) -> impl Fn(bugloop_llm::LlmError) -> AppError + Copy + '_ {
    move |source| AppError::Model {
        model: model.to_owned(),
        source: Box::new(source),
    }
}

/// Loads the embedded model `model` (a `local:` model, else `benchmark` says it measures only
/// those), from the configured model directory; with the file it was loaded from.
#[cfg(feature = "local")]
fn load_local(
    config: &bugloop_config::Config,
    model: &str,
    benchmark: &str,
) -> Result<(bugloop_llm::local::LocalProvider, std::path::PathBuf), AppError> {
    use bugloop_llm::local::{LocalProvider, resolve_model};

    let unusable = unusable(model);
    let spec = bugloop_llm::ModelSpec::parse(model).map_err(unusable)?;
    if spec.provider != "local" {
        return Err(AppError::Invalid(format!(
            "`{benchmark}` measures the embedded model: give a local: model, not {model}"
        )));
    }
    let settings = bugloop_app::Models::new(config).settings().clone();
    let path = resolve_model(&spec.model, settings.model_dir.as_deref()).map_err(unusable)?;
    let provider = LocalProvider::load(model, &path).map_err(unusable)?;
    Ok((provider, path))
}

/// Runs the fixed prompt `runs` times through the embedded model `model` (a `local:` model).
#[cfg(feature = "local")]
pub fn model(
    config: &bugloop_config::Config,
    model: &str,
    runs: usize,
    max_tokens: u32,
) -> Result<ModelBench, AppError> {
    use bugloop_llm::{ChatRequest, Message};

    let unusable = unusable(model);
    let (provider, path) = load_local(config, model, "bench model")?;
    let request = ChatRequest {
        system: Some(SYSTEM.to_owned()),
        messages: vec![Message::user(PROMPT)],
        max_tokens: Some(max_tokens),
        ..ChatRequest::default()
    };
    let mut rows = Vec::new();
    for _ in 0..runs.max(1) {
        // Each run evaluates the whole prompt, as a first call does.
        provider.forget_session();
        let (_, timings) = provider.generate_blocking(&request).map_err(unusable)?;
        rows.push(timings);
    }
    let rate = |tokens: u64, seconds: f64| {
        if seconds > 0.0 {
            tokens as f64 / seconds
        } else {
            0.0
        }
    };
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(0.0)
    };
    let first = rows.first().copied().unwrap_or_default();
    Ok(ModelBench {
        model: model.to_owned(),
        file: path.display().to_string(),
        load_seconds: provider.load_time().as_secs_f64(),
        runs: rows.len(),
        prompt_tokens: first.prompt_tokens,
        generated_tokens: rows.iter().map(|t| t.generated_tokens).collect(),
        prompt_tokens_per_second: median(
            rows.iter()
                .map(|t| rate(t.prompt_tokens, t.prompt.as_secs_f64()))
                .collect(),
        ),
        generation_tokens_per_second: median(
            rows.iter()
                .map(|t| rate(t.generated_tokens, t.generation.as_secs_f64()))
                .collect(),
        ),
        peak_rss_mb: peak_rss_mb(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

#[cfg(not(feature = "local"))]
pub fn model(
    _: &bugloop_config::Config,
    _: &str,
    _: usize,
    _: u32,
) -> Result<ModelBench, AppError> {
    Err(AppError::Invalid(
        "this bugloop was built without the embedded model (the `local` feature)".to_owned(),
    ))
}

/// Peak resident memory of this process in MB (Linux `VmHWM`).
pub(crate) fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib as f64 / 1024.0)
}

/// The prompt and system text, for the llama.cpp comparison script.
pub fn prompt_texts() -> (&'static str, &'static str) {
    (SYSTEM, PROMPT)
}

/// An I/O or process error of a benchmark's set-up, named.
pub(crate) fn setup_error(what: impl std::fmt::Display) -> AppError {
    AppError::Invalid(format!("benchmark set-up: {what}"))
}
