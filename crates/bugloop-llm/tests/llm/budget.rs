use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bugloop_llm::budget::{Limit, Meter, Metered, Price};
use bugloop_llm::scripted::{ScriptedProvider, text_reply};
use bugloop_llm::{
    BudgetLimits, Capabilities, ChatRequest, ChatResult, LlmError, Provider, Sink, Usage,
};

use crate::support::user_request;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: 0,
    }
}

/// A conversation of ten turns, each using 1,000 input and 100 output tokens.
fn conversation() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::new(
        (0..10).map(|i| text_reply(format!("answer {i}"), usage(1_000, 100))),
    ))
}

/// Budget limits with only `limit` set.
fn only(limit: Limit) -> BudgetLimits {
    let mut limits = BudgetLimits::default();
    match limit {
        Limit::InputTokens(n) => limits.max_input_tokens = Some(n),
        Limit::OutputTokens(n) => limits.max_output_tokens = Some(n),
        Limit::CostUsd(n) => limits.max_cost_usd = Some(n),
        Limit::Turns(n) => limits.max_turns = Some(n),
        Limit::WallTime(n) => limits.max_wall_time = Some(n),
    }
    limits
}

/// $1 per million input tokens, $10 per million output.
fn turn_price() -> Price {
    Price {
        input_per_mtok: 1.0,
        cached_input_per_mtok: None,
        output_per_mtok: 10.0,
    }
}

/// Runs the conversation under `limit` until it stops there: the calls completed, the error and
/// the provider.
async fn run(limit: Limit, price: Option<Price>) -> (usize, LlmError, Arc<ScriptedProvider>) {
    let scripted = conversation();
    let meter = Arc::new(Meter::new("openai:gpt-test", only(limit), price));
    let metered = Metered::new(scripted.clone(), meter);
    let mut completed = 0;
    loop {
        let request = user_request("next");
        match metered.chat(&request, None).await {
            Ok(_) => completed += 1,
            Err(error) => {
                assert_eq!(exceeded_limit(&error), limit);
                return (completed, error, scripted);
            }
        }
    }
}

fn exceeded(error: &LlmError) -> &bugloop_llm::BudgetExceeded {
    match error {
        LlmError::Budget(exceeded) => exceeded,
        other => panic!("expected a budget error, got {other}"),
    }
}

#[tokio::test]
async fn turn_limit() {
    let (completed, error, scripted) = run(Limit::Turns(3), None).await;
    assert_eq!(completed, 3);
    let exceeded = exceeded(&error);
    assert_eq!(exceeded.spent.turns, 3);
    assert_eq!(exceeded.spent.usage, usage(3_000, 300));
    // Stopped before the fourth call was sent.
    assert_eq!(scripted.requests().len(), 3);
    assert_eq!(exceeded.spent.cost_usd, None);
}

#[tokio::test]
async fn input_token_limit() {
    let (completed, error, scripted) = run(Limit::InputTokens(2_500), None).await;
    // Two calls fit (2,000). Each "next" was counted as 1,000 tokens, so the third is estimated
    // at 1,000 with 500 left: it would cross 2,500 and is not sent.
    assert_eq!(completed, 2);
    let exceeded = exceeded(&error);
    assert_eq!(
        exceeded.refused.as_deref(),
        Some(&bugloop_llm::Refused::InputTokens {
            estimate: 1_000,
            left: 500
        })
    );
    assert_eq!(exceeded.spent.usage.input_tokens, 2_000);
    assert_eq!(scripted.requests().len(), 2);

    // A request whose own size already crosses the limit is never sent.
    let scripted = conversation();
    let metered = Metered::new(
        scripted.clone(),
        Arc::new(Meter::new("m", only(Limit::InputTokens(10)), None)),
    );
    let big = user_request("x".repeat(400));
    let error = metered.chat(&big, None).await.unwrap_err();
    assert_eq!(exceeded_limit(&error), Limit::InputTokens(10));
    assert!(scripted.requests().is_empty());
    // The error says what the call needed and what was left, not only the limit.
    insta::assert_snapshot!(error.to_string(), @"budget exhausted: input token limit of 10 reached: the next call would send about 100 input tokens and 10 are left (spent m: 0 input tokens (0 cached), 0 output tokens, cost unknown, 0 turns, 0.0s)");
}

/// Before any answer the estimate is 4 characters a token; after one, the provider's own count
/// sets the ratio. Text at 6 characters a token is not refused on the fixed ratio's guess.
#[tokio::test]
async fn the_input_estimate_follows_the_providers_count() {
    let scripted = Arc::new(ScriptedProvider::new(
        [usage(100, 10), usage(150, 10)].map(|u| text_reply("ok", u)),
    ));
    let meter = Arc::new(Meter::new("m", only(Limit::InputTokens(250)), None));
    let metered = Metered::new(scripted.clone(), meter.clone());
    let asking = |chars: usize| user_request("y".repeat(chars));
    assert_eq!(meter.estimate(&asking(600)).input_tokens, 150);
    metered.chat(&asking(600), None).await.unwrap();
    // 600 characters were 100 tokens: 900 are 150, exactly what is left (225 at 4 a token).
    assert_eq!(meter.estimate(&asking(900)).input_tokens, 150);
    metered.chat(&asking(900), None).await.unwrap();
    assert_eq!(scripted.requests().len(), 2);
    let error = metered.chat(&asking(6), None).await.unwrap_err();
    assert_eq!(
        exceeded(&error).refused.as_deref(),
        Some(&bugloop_llm::Refused::InputTokens {
            estimate: 1,
            left: 0
        })
    );
    assert_eq!(scripted.requests().len(), 2);
}

/// Input the provider served from its cache last time is priced as cached in the estimate (up to
/// what that call sent), so a grown conversation is not refused at the full input price.
#[tokio::test]
async fn the_cost_estimate_counts_the_cached_share() {
    let price = Price {
        input_per_mtok: 10.0,
        cached_input_per_mtok: Some(1.0),
        output_per_mtok: 0.0,
    };
    let reported = Usage {
        input_tokens: 1_000,
        output_tokens: 0,
        cached_input_tokens: 900,
    };
    let scripted = Arc::new(ScriptedProvider::new(
        [reported, reported].map(|u| text_reply("ok", u)),
    ));
    let meter = Arc::new(Meter::new("m", only(Limit::CostUsd(0.02)), Some(price)));
    let metered = Metered::new(scripted.clone(), meter.clone());
    let asking = |chars: usize| user_request("z".repeat(chars));
    // $0.01 at the full price, $0.0019 as answered: $0.0181 left.
    metered.chat(&asking(4_000), None).await.unwrap();
    // 8,000 characters: 2,000 tokens, $0.02 at the full price; 1,000 of them cached: $0.011.
    let estimate = meter.estimate(&asking(8_000));
    assert_eq!(
        (estimate.input_tokens, estimate.cached_input_tokens),
        (2_000, 1_000)
    );
    metered.chat(&asking(8_000), None).await.unwrap();
    assert_eq!(scripted.requests().len(), 2);
}

fn exceeded_limit(error: &LlmError) -> Limit {
    exceeded(error).limit
}

#[tokio::test]
async fn output_token_limit_caps_max_tokens_then_stops() {
    let (completed, _, scripted) = run(Limit::OutputTokens(250), None).await;
    assert_eq!(completed, 2);
    let requests = scripted.requests();
    // Each request may only ask for what is left.
    assert_eq!(requests[0].max_tokens, Some(250));
    assert_eq!(requests[1].max_tokens, Some(150));
    assert_eq!(requests[2].max_tokens, Some(50));
}

#[tokio::test]
async fn cost_limit() {
    // $1 per million input tokens, $10 per million output: each turn costs $0.002.
    let (completed, error, _) = run(Limit::CostUsd(0.005), Some(turn_price())).await;
    let exceeded = exceeded(&error);
    // $0.004 spent; the third call's input alone ($0.001, as the last ones were counted) leaves
    // nothing for its answer, so it is not sent.
    assert_eq!(completed, 2);
    assert!(matches!(
        exceeded.refused.as_deref(),
        Some(bugloop_llm::Refused::CostUsd { .. })
    ));
    let cost = exceeded.spent.cost_usd.unwrap();
    assert!((cost - 0.004).abs() < 1e-9, "{cost}");
    insta::assert_snapshot!(error.to_string(), @"budget exhausted: cost limit of $0.005 reached: the next call's input would cost about $0.0010 and $0.0010 is left (spent openai:gpt-test: 2000 input tokens (0 cached), 200 output tokens, $0.0040, 2 turns, 0.0s)");
}

/// Answers after `after` with `input` input tokens and 100 output tokens: calls overlap, or
/// outlast a limit.
#[derive(Debug)]
struct Paced {
    after: Duration,
    input: u64,
}

/// Answers only after half a minute.
fn slow() -> Arc<Paced> {
    Arc::new(Paced {
        after: Duration::from_secs(30),
        input: 0,
    })
}

#[async_trait]
impl Provider for Paced {
    fn name(&self) -> &str {
        "paced"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn chat(&self, _: &ChatRequest, _: Sink<'_>) -> ChatResult {
        tokio::time::sleep(self.after).await;
        Ok(text_reply("answer", usage(self.input, 100)))
    }
}

#[tokio::test]
async fn wall_time_limit_stops_a_call_in_flight() {
    let meter = Arc::new(Meter::new(
        "slow",
        only(Limit::WallTime(Duration::from_millis(200))),
        None,
    ));
    let metered = Metered::new(slow(), meter.clone());
    // The call in flight is stopped, and the next call is refused before it starts.
    for _ in 0..2 {
        let error = metered
            .chat(&ChatRequest::default(), None)
            .await
            .unwrap_err();
        assert_eq!(
            exceeded_limit(&error),
            Limit::WallTime(Duration::from_millis(200))
        );
    }
    assert_eq!(meter.summary().turns, 0);
}

#[test]
fn prices_match_the_longest_prefix_and_count_cached_input() {
    let table = std::collections::BTreeMap::from([
        (
            "openai:gpt-4o".to_owned(),
            Price {
                input_per_mtok: 2.5,
                cached_input_per_mtok: Some(1.25),
                output_per_mtok: 10.0,
            },
        ),
        (
            "openai:gpt-4o-mini".to_owned(),
            Price {
                input_per_mtok: 0.15,
                cached_input_per_mtok: None,
                output_per_mtok: 0.6,
            },
        ),
    ]);
    let price = bugloop_llm::budget::price_for(&table, "openai:gpt-4o-2024-08-06").unwrap();
    assert_eq!(price.input_per_mtok, 2.5);
    assert_eq!(
        bugloop_llm::budget::price_for(&table, "openai:gpt-4o-mini-x")
            .unwrap()
            .input_per_mtok,
        0.15
    );
    assert!(bugloop_llm::budget::price_for(&table, "anthropic:claude").is_none());
    let cost = price.cost(Usage {
        input_tokens: 1_000_000,
        cached_input_tokens: 400_000,
        output_tokens: 100_000,
    });
    assert!(
        (cost - (0.6 * 2.5 + 0.4 * 1.25 + 1.0)).abs() < 1e-9,
        "{cost}"
    );
}

/// Sessions at once share one budget: each call holds what it may use until it is answered, so
/// eight sessions spend no more than one alone would past the limit (before, each checked the
/// budget, all passed and all spent).
#[tokio::test]
async fn calls_at_once_never_spend_past_the_limit_together() {
    let spent = at_once(1_000, 0.005).await;
    // Each call costs $0.002: two fit, the third's input would leave nothing for its answer.
    assert_eq!(spent.turns, 2, "{spent:?}");
    assert!(spent.cost_usd.unwrap() <= 0.005, "{spent:?}");
    // Text the estimate undercounts fourfold (4,000 tokens in 4,000 characters, as base64 or
    // CJK may be): what a call holds is its bytes, so they still pass the limit by one call at
    // most ($0.005 each).
    let spent = at_once(4_000, 0.012).await;
    assert!(spent.cost_usd.unwrap() <= 0.012 + 0.005, "{spent:?}");
}

/// Eight sessions calling at once until the budget of `max_cost_usd` stops them, each call of
/// 4,000 characters counted as `tokens` input tokens by the provider: what was spent.
async fn at_once(tokens: u64, max_cost_usd: f64) -> bugloop_llm::budget::UsageSummary {
    let limits = only(Limit::CostUsd(max_cost_usd));
    let meter = Arc::new(Meter::new("openai:gpt-test", limits, Some(turn_price())));
    let metered = Arc::new(Metered::new(
        Arc::new(Paced {
            after: Duration::from_millis(20),
            input: tokens,
        }),
        meter.clone(),
    ));
    let sessions = (0..8).map(|_| {
        let metered = metered.clone();
        tokio::spawn(async move {
            // 4,000 characters: estimated at 1,000 tokens, as the provider counts them.
            let mut request = user_request("x".repeat(4_000));
            request.max_tokens = Some(100);
            loop {
                if let Err(error) = metered.chat(&request, None).await {
                    return error;
                }
            }
        })
    });
    for session in sessions.collect::<Vec<_>>() {
        let error = session.await.unwrap();
        assert_eq!(exceeded(&error).limit, Limit::CostUsd(max_cost_usd));
    }
    meter.summary()
}

/// A call given up (a timeout, a cancelled session) gives back what it held.
#[tokio::test]
async fn a_call_given_up_gives_back_what_it_held() {
    let meter = Arc::new(Meter::new(
        "openai:gpt-test",
        only(Limit::InputTokens(1_500)),
        None,
    ));
    let metered = Metered::new(slow(), meter.clone());
    let request = user_request("x".repeat(4_000));
    let given_up = tokio::time::timeout(Duration::from_millis(50), metered.chat(&request, None));
    assert!(given_up.await.is_err());
    let mut next = request.clone();
    assert!(matches!(
        meter.before_call(&mut next),
        Ok(bugloop_llm::budget::Admission::Send(_))
    ));
}
