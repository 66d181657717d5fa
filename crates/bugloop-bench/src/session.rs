//! `bench session`: a four-turn conversation on the embedded model, its prompt evaluation timed
//! with the context kept between calls (only what follows the shared prefix is evaluated) and,
//! for the same prompts, with a fresh context each call. Prints the rendered prompts and the
//! answers, so `scripts/bench-llama-cpp-python.py --session` replays the same conversation.

use serde::Serialize;

use bugloop_app::AppError;

/// The follow-up questions after the benchmark's review prompt.
#[cfg(feature = "local")]
const FOLLOW_UPS: [&str; 3] = [
    "Which of those problems matters most, and why?",
    "Write the smallest fix for it.",
    "What test would show the fix works?",
];

/// One turn of the conversation.
#[derive(Debug, Clone, Serialize)]
pub struct SessionTurn {
    pub prompt_tokens: u64,
    /// Tokens the kept context had evaluated already.
    pub reused_tokens: u64,
    pub kept_prompt_seconds: f64,
    pub fresh_prompt_seconds: f64,
    /// The prompt as the model's template renders it.
    pub prompt: String,
    pub answer: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SessionBench {
    pub model: String,
    pub threads: usize,
    pub turns: Vec<SessionTurn>,
    pub kept_prompt_seconds: f64,
    pub fresh_prompt_seconds: f64,
}

#[cfg(feature = "local")]
pub fn session(
    config: &bugloop_config::Config,
    model: &str,
    max_tokens: u32,
) -> Result<SessionBench, AppError> {
    use bugloop_llm::{ChatRequest, Message};

    let unusable = super::unusable(model);
    let (provider, _) = super::load_local(config, model, "bench session")?;
    let (system, first) = super::prompt_texts();
    let mut messages = vec![Message::user(first)];
    let mut requests = Vec::new();
    let mut turns = Vec::new();
    for turn in 0..=FOLLOW_UPS.len() {
        if turn > 0 {
            messages.push(Message::user(FOLLOW_UPS[turn - 1]));
        }
        let request = ChatRequest {
            system: Some(system.to_owned()),
            messages: messages.clone(),
            max_tokens: Some(max_tokens),
            ..ChatRequest::default()
        };
        let (response, timings) = provider.generate_blocking(&request).map_err(unusable)?;
        turns.push(SessionTurn {
            prompt_tokens: timings.prompt_tokens,
            reused_tokens: timings.reused_tokens,
            kept_prompt_seconds: timings.prompt.as_secs_f64(),
            fresh_prompt_seconds: 0.0,
            prompt: provider.render(&request).map_err(unusable)?,
            answer: response.message.content.clone(),
        });
        messages.push(response.message);
        requests.push(request);
    }
    // The same prompts, each evaluated whole.
    for (turn, request) in turns.iter_mut().zip(&requests) {
        provider.forget_session();
        let (_, timings) = provider.generate_blocking(request).map_err(unusable)?;
        turn.fresh_prompt_seconds = timings.prompt.as_secs_f64();
    }
    Ok(SessionBench {
        model: model.to_owned(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kept_prompt_seconds: turns.iter().map(|t| t.kept_prompt_seconds).sum(),
        fresh_prompt_seconds: turns.iter().map(|t| t.fresh_prompt_seconds).sum(),
        turns,
    })
}

#[cfg(not(feature = "local"))]
pub fn session(_: &bugloop_config::Config, _: &str, _: u32) -> Result<SessionBench, AppError> {
    Err(AppError::Invalid(
        "this bugloop was built without the embedded model (the `local` feature)".to_owned(),
    ))
}
