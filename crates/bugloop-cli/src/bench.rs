//! `bugloop bench model`: the embedded model's load time, prompt and generation speed and peak
//! memory, on a fixed review prompt (`bench/model-prompt.md`).

use std::io::Write;

use anyhow::Result;

use crate::Format;

const PROMPT: &str = include_str!("../bench/model-prompt.md");
const SYSTEM: &str = "You are a careful senior software engineer reviewing a change.";

#[cfg(feature = "local")]
pub fn model(
    out: &mut impl Write,
    config: &bugloop_config::Config,
    model: &str,
    runs: usize,
    max_tokens: u32,
    format: Format,
) -> Result<()> {
    use bugloop_llm::local::{LocalProvider, resolve_model};
    use bugloop_llm::{ChatRequest, Message, ModelSpec};

    let spec = ModelSpec::parse(model)?;
    if spec.provider != "local" {
        anyhow::bail!(
            "`bench model` measures the embedded model: give a local: model, not {model}"
        );
    }
    let settings = bugloop_app::Models::new(config).settings().clone();
    let path = resolve_model(&spec.model, settings.model_dir.as_deref())?;
    let provider = LocalProvider::load(model, &path)?;
    let request = ChatRequest {
        system: Some(SYSTEM.to_owned()),
        messages: vec![Message::user(PROMPT)],
        max_tokens: Some(max_tokens),
        ..ChatRequest::default()
    };
    let mut rows = Vec::new();
    for _ in 0..runs.max(1) {
        let (_, timings) = provider.generate_blocking(&request)?;
        rows.push(timings);
    }
    let rate = |tokens: u64, seconds: f64| {
        if seconds > 0.0 {
            tokens as f64 / seconds
        } else {
            0.0
        }
    };
    let mut prompt_rates: Vec<f64> = rows
        .iter()
        .map(|t| rate(t.prompt_tokens, t.prompt.as_secs_f64()))
        .collect();
    let mut generation_rates: Vec<f64> = rows
        .iter()
        .map(|t| rate(t.generated_tokens, t.generation.as_secs_f64()))
        .collect();
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(0.0)
    };
    let peak_rss_mb = peak_rss_kib().map(|kib| kib as f64 / 1024.0);
    let first = rows.first().copied().unwrap_or_default();
    let report = serde_json::json!({
        "model": model,
        "file": path.display().to_string(),
        "load_seconds": provider.load_time().as_secs_f64(),
        "runs": rows.len(),
        "prompt_tokens": first.prompt_tokens,
        "generated_tokens": rows.iter().map(|t| t.generated_tokens).collect::<Vec<_>>(),
        "prompt_tokens_per_second": median(&mut prompt_rates),
        "generation_tokens_per_second": median(&mut generation_rates),
        "peak_rss_mb": peak_rss_mb,
        "threads": std::thread::available_parallelism().map_or(1, |n| n.get()),
    });
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
        Format::Text => {
            writeln!(out, "model      {model} ({})", path.display())?;
            writeln!(
                out,
                "load       {:.3} s",
                provider.load_time().as_secs_f64()
            )?;
            writeln!(
                out,
                "prompt     {} tokens, {:.1} tokens/s (median of {})",
                first.prompt_tokens,
                report["prompt_tokens_per_second"].as_f64().unwrap_or(0.0),
                rows.len()
            )?;
            writeln!(
                out,
                "generation {:.1} tokens/s (median; tokens per run: {:?})",
                report["generation_tokens_per_second"]
                    .as_f64()
                    .unwrap_or(0.0),
                report["generated_tokens"]
            )?;
            if let Some(mb) = peak_rss_mb {
                writeln!(out, "peak RSS   {mb:.0} MB")?;
            }
        }
    }
    Ok(())
}

#[cfg(not(feature = "local"))]
pub fn model(
    _: &mut impl Write,
    _: &bugloop_config::Config,
    _: &str,
    _: usize,
    _: u32,
    _: Format,
) -> Result<()> {
    anyhow::bail!("this bugloop was built without the embedded model (the `local` feature)")
}

/// Peak resident memory of this process (Linux `VmHWM`).
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The prompt and system text, for the llama.cpp comparison script.
pub fn prompt_texts() -> (&'static str, &'static str) {
    (SYSTEM, PROMPT)
}
