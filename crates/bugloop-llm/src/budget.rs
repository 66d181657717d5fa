//! Budgets that fail closed: a [`Meter`] checks every call of a run before it is sent (turns, wall
//! time, the input it would add, what output and money are left, which also caps `max_tokens`)
//! and after it returns (what it really used). Reaching a limit stops the run with
//! [`BudgetExceeded`], which carries what was spent. Calls sent at once (a review's parts) hold
//! what they may use until they are answered, and a call the rest cannot cover waits for them,
//! so a run never spends past a limit by more than the one call that crossed it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Serialize;

pub use crate::overrun::{BudgetExceeded, Limit, Refused, UsageSummary};
use crate::types::{ChatRequest, Usage};
use crate::{ChatResult, Sink};
use crate::{Provider, ProviderLayer};

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    pub input_per_mtok: f64,
    /// Price of input served from the prompt cache; the input price when absent.
    pub cached_input_per_mtok: Option<f64>,
    pub output_per_mtok: f64,
}

impl Price {
    /// What a model that runs on this machine costs.
    pub const FREE: Price = Price {
        input_per_mtok: 0.0,
        cached_input_per_mtok: None,
        output_per_mtok: 0.0,
    };

    pub fn cost(&self, usage: Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(fresh, self.input_per_mtok)
            + per(
                cached,
                self.cached_input_per_mtok.unwrap_or(self.input_per_mtok),
            )
            + per(usage.output_tokens, self.output_per_mtok)
    }
}

/// The price of a model string from a table keyed by model strings; the longest key that is a
/// prefix of the model wins, so `openai:gpt-4o` prices `openai:gpt-4o-2024-08-06`.
pub fn price_for<'a>(
    table: impl IntoIterator<Item = (&'a String, &'a Price)>,
    model: &str,
) -> Option<Price> {
    table
        .into_iter()
        .filter(|(key, _)| model.starts_with(key.as_str()))
        .max_by_key(|(key, _)| key.len())
        .map(|(_, price)| *price)
}

/// Limits for one run; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// Only enforced for priced models.
    pub max_cost_usd: Option<f64>,
    pub max_turns: Option<u32>,
    pub max_wall_time: Option<Duration>,
}

#[derive(Debug, Default)]
struct Spent {
    usage: Usage,
    turns: u32,
    /// The last answered call: its size by [`request_chars`] and the input the provider counted.
    last_call: Option<(u64, Usage)>,
    /// What the calls sent and not answered yet may use at most: their input as estimated and
    /// their `max_tokens`.
    reserved: Usage,
    in_flight: u32,
}

/// What [`Meter::before_call`] decided.
#[derive(Debug)]
pub enum Admission {
    /// Send it; it holds `Usage` until [`Meter::settle`].
    Send(Usage),
    /// Calls in flight hold what this one needs: ask again when one is answered.
    Wait,
}

/// Tracks one run's spending against its limits. Shared by every call of the run.
#[derive(Debug)]
pub struct Meter {
    model: String,
    limits: BudgetLimits,
    price: Option<Price>,
    started: Instant,
    spent: Mutex<Spent>,
    /// Told whenever a call in flight is answered or given up.
    settled: tokio::sync::Notify,
}

impl Meter {
    pub fn new(model: impl Into<String>, limits: BudgetLimits, price: Option<Price>) -> Self {
        Meter {
            model: model.into(),
            limits,
            price,
            started: Instant::now(),
            spent: Mutex::new(Spent::default()),
            settled: tokio::sync::Notify::new(),
        }
    }

    fn spent(&self) -> std::sync::MutexGuard<'_, Spent> {
        // A poisoned lock only means another call panicked mid-update; the numbers are still the
        // best we have.
        self.spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn summary(&self) -> UsageSummary {
        let spent = self.spent();
        UsageSummary {
            model: self.model.clone(),
            usage: spent.usage,
            cost_usd: self.price.map(|p| p.cost(spent.usage)),
            turns: spent.turns,
            elapsed: self.started.elapsed(),
        }
    }

    fn exceeded(&self, limit: Limit) -> BudgetExceeded {
        BudgetExceeded {
            limit,
            refused: None,
            spent: self.summary(),
        }
    }

    fn refused(&self, limit: Limit, refused: Refused) -> BudgetExceeded {
        BudgetExceeded {
            refused: Some(Box::new(refused)),
            ..self.exceeded(limit)
        }
    }

    /// The input a request will use, in tokens, and how many of them the provider will serve
    /// from its cache. Until a call has been answered this is 4 characters a token with nothing
    /// cached; after that, the provider's own count of the last call sets both ratios. A fixed
    /// ratio refuses calls that fit: prose and indented code take 5-6 characters a token with
    /// hosted tokenizers, and most of a conversation's prefix is cached after its first turn.
    pub fn estimate(&self, request: &ChatRequest) -> Usage {
        estimate_after(self.spent().last_call, request)
    }

    /// Remembers the size of an answered request and the input the provider counted for it.
    pub fn calibrate(&self, request_chars: u64, usage: Usage) {
        if request_chars > 0 && usage.input_tokens > 0 {
            self.spent().last_call = Some((request_chars, usage));
        }
    }

    /// Time left before the wall-time limit.
    pub fn remaining_time(&self) -> Option<Duration> {
        self.limits
            .max_wall_time
            .map(|max| max.saturating_sub(self.started.elapsed()))
    }

    /// Checks a call before it is sent and caps its `max_tokens` to what output and money allow,
    /// counting what the calls in flight may still use. A call they leave no room for waits
    /// while any is in flight (they may use less); alone, it is refused. Decided and held under
    /// one lock, so two calls never both take the same room.
    pub fn before_call(&self, request: &mut ChatRequest) -> Result<Admission, BudgetExceeded> {
        let refusal = {
            let mut spent = self.spent();
            let mut usage = spent.usage;
            usage.add(spent.reserved);
            let estimate = estimate_after(spent.last_call, request);
            let turns = spent.turns.saturating_add(spent.in_flight);
            match self.check(request, usage, turns, estimate) {
                Ok(()) => {
                    // What it holds is an upper bound, not the estimate: text the estimate's
                    // ratio undercounts (base64, CJK) would otherwise let calls at once past
                    // the limit. A byte-level tokenizer's token is at least a byte.
                    let hold = Usage {
                        input_tokens: estimate.input_tokens.max(request_bytes(request)),
                        output_tokens: request.max_tokens.map_or(0, u64::from),
                        cached_input_tokens: estimate.cached_input_tokens,
                    };
                    spent.reserved.add(hold);
                    spent.in_flight += 1;
                    return Ok(Admission::Send(hold));
                }
                Err(_) if spent.in_flight > 0 => return Ok(Admission::Wait),
                Err(refusal) => refusal,
            }
        };
        Err(match refusal {
            (limit, Some(refused)) => self.refused(limit, refused),
            (limit, None) => self.exceeded(limit),
        })
    }

    /// A call sent with [`Admission::Send`] is answered or given up: what it held is free.
    pub fn settle(&self, held: Usage) {
        {
            let mut spent = self.spent();
            let reserved = spent.reserved;
            spent.reserved = Usage {
                input_tokens: reserved.input_tokens.saturating_sub(held.input_tokens),
                output_tokens: reserved.output_tokens.saturating_sub(held.output_tokens),
                cached_input_tokens: reserved
                    .cached_input_tokens
                    .saturating_sub(held.cached_input_tokens),
            };
            spent.in_flight = spent.in_flight.saturating_sub(1);
        }
        self.settled.notify_waiters();
    }

    /// The limits against `usage` (spent and held) and `turns` (taken and in flight) for a call
    /// estimated at `estimate`; caps its `max_tokens`. A refusal is the limit and, when the call
    /// itself does not fit, what it needed.
    fn check(
        &self,
        request: &mut ChatRequest,
        usage: Usage,
        turns: u32,
        estimate: Usage,
    ) -> Result<(), (Limit, Option<Refused>)> {
        let limits = self.limits;
        if let Some(max) = limits.max_turns
            && turns >= max
        {
            return Err((Limit::Turns(max), None));
        }
        if let Some(max) = limits.max_wall_time
            && self.started.elapsed() >= max
        {
            return Err((Limit::WallTime(max), None));
        }
        if let Some(max) = limits.max_input_tokens {
            let left = max.saturating_sub(usage.input_tokens);
            if estimate.input_tokens > left {
                let needed = Refused::InputTokens {
                    estimate: estimate.input_tokens,
                    left,
                };
                return Err((Limit::InputTokens(max), Some(needed)));
            }
        }
        let mut cap: Option<u64> = None;
        if let Some(max) = limits.max_output_tokens {
            let left = max.saturating_sub(usage.output_tokens);
            if left == 0 {
                return Err((Limit::OutputTokens(max), None));
            }
            cap = Some(left);
        }
        if let (Some(max), Some(price)) = (limits.max_cost_usd, self.price) {
            let left = max - price.cost(usage);
            let input_cost = price.cost(estimate);
            // The answer needs at least one token, so the input alone must leave room for it.
            let affordable = if price.output_per_mtok > 0.0 {
                ((left - input_cost) * 1_000_000.0 / price.output_per_mtok).max(0.0) as u64
            } else {
                u64::MAX
            };
            if left <= input_cost || affordable == 0 {
                let needed = Refused::CostUsd {
                    estimate: input_cost,
                    left: left.max(0.0),
                };
                return Err((Limit::CostUsd(max), Some(needed)));
            }
            if price.output_per_mtok > 0.0 {
                cap = Some(cap.map_or(affordable, |c| c.min(affordable)));
            }
        }
        if let Some(cap) = cap {
            let cap = u32::try_from(cap).unwrap_or(u32::MAX);
            request.max_tokens = Some(request.max_tokens.map_or(cap, |m| m.min(cap)));
        }
        Ok(())
    }

    /// Records what a call used; errors when that crossed a limit.
    pub fn after_call(&self, usage: Usage) -> Result<(), BudgetExceeded> {
        let total = {
            let mut spent = self.spent();
            spent.usage.add(usage);
            spent.turns += 1;
            spent.usage
        };
        let limits = self.limits;
        if let Some(max) = limits.max_input_tokens
            && total.input_tokens > max
        {
            return Err(self.exceeded(Limit::InputTokens(max)));
        }
        if let Some(max) = limits.max_output_tokens
            && total.output_tokens > max
        {
            return Err(self.exceeded(Limit::OutputTokens(max)));
        }
        if let (Some(max), Some(price)) = (limits.max_cost_usd, self.price)
            && price.cost(total) > max
        {
            return Err(self.exceeded(Limit::CostUsd(max)));
        }
        Ok(())
    }
}

/// [`Meter::estimate`] given the last answered call.
fn estimate_after(last_call: Option<(u64, Usage)>, request: &ChatRequest) -> Usage {
    let chars = request_chars(request);
    match last_call {
        Some((last_chars, last)) if last_chars > 0 && last.input_tokens > 0 => {
            let scale = |value: u64, numerator: u64, denominator: u64| {
                u64::try_from(u128::from(value) * u128::from(numerator) / u128::from(denominator))
                    .unwrap_or(u64::MAX)
            };
            let input_tokens = scale(chars, last.input_tokens, last_chars);
            let cached = last.cached_input_tokens.min(last.input_tokens);
            Usage {
                input_tokens,
                output_tokens: 0,
                // At the last call's share, and never more than that call sent.
                cached_input_tokens: scale(input_tokens, cached, last.input_tokens)
                    .min(last.input_tokens),
            }
        }
        _ => Usage {
            input_tokens: chars.div_ceil(4),
            ..Usage::default()
        },
    }
}

/// The bytes a request sends (as [`request_chars`] counts its characters).
fn request_bytes(request: &ChatRequest) -> u64 {
    let mut bytes = request.system.as_ref().map_or(0, String::len);
    for message in &request.messages {
        bytes += message.content.len();
        bytes += message
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>();
    }
    for tool in &request.tools {
        bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    }
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// The characters a request sends: system prompt, messages, tool calls and tool definitions.
pub fn request_chars(request: &ChatRequest) -> u64 {
    let mut chars = request.system.as_ref().map_or(0, |s| s.chars().count());
    for message in &request.messages {
        chars += message.content.chars().count();
        chars += message
            .tool_calls
            .iter()
            .map(|c| c.name.chars().count() + c.arguments.chars().count())
            .sum::<usize>();
    }
    for tool in &request.tools {
        chars += tool.name.chars().count()
            + tool.description.chars().count()
            + tool.parameters.to_string().chars().count();
    }
    u64::try_from(chars).unwrap_or(u64::MAX)
}

/// A rough count of the tokens a request sends (4 characters a token), for planning before any
/// call was answered; [`Meter::estimate`] uses the provider's own count once it has one.
pub fn estimate_input_tokens(request: &ChatRequest) -> u64 {
    request_chars(request).div_ceil(4)
}

/// What a call in flight holds of the budget, given back on drop (answered, failed or
/// cancelled).
struct Held<'a> {
    meter: &'a Meter,
    usage: Usage,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.meter.settle(self.usage);
    }
}

/// A provider whose every call is metered.
#[derive(Debug, Clone)]
pub struct Metered {
    inner: Arc<dyn Provider>,
    meter: Arc<Meter>,
}

impl Metered {
    pub fn new(inner: Arc<dyn Provider>, meter: Arc<Meter>) -> Self {
        Metered { inner, meter }
    }

    pub fn meter(&self) -> &Arc<Meter> {
        &self.meter
    }
}

#[async_trait]
impl ProviderLayer for Metered {
    fn inner(&self) -> &dyn Provider {
        &*self.inner
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let mut request = request.clone();
        let held = loop {
            // Made before asking, so an answer that comes in between is not missed.
            let settled = self.meter.settled.notified();
            match self.meter.before_call(&mut request)? {
                Admission::Send(usage) => break usage,
                Admission::Wait => settled.await,
            }
        };
        // Given back when the call ends however it ends, after what it used is counted.
        let _held = Held {
            meter: &self.meter,
            usage: held,
        };
        let call = self.inner.chat(&request, sink);
        let response = match self.meter.remaining_time() {
            Some(left) => match tokio::time::timeout(left, call).await {
                Ok(result) => result?,
                Err(_) => {
                    let max = self.meter.limits.max_wall_time.unwrap_or(left);
                    return Err(self.meter.exceeded(Limit::WallTime(max)).into());
                }
            },
            None => call.await?,
        };
        self.meter
            .calibrate(request_chars(&request), response.usage);
        self.meter.after_call(response.usage)?;
        Ok(response)
    }
}
