use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bugloop_llm::budget::{Limit, Meter, Metered, Price};
use bugloop_llm::scripted::{ScriptedProvider, text_reply};
use bugloop_llm::{
    BudgetLimits, Capabilities, ChatRequest, ChatResponse, LlmError, Message, Provider, StreamSink,
    Usage,
};

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

async fn run(
    limits: BudgetLimits,
    price: Option<Price>,
) -> (usize, LlmError, Arc<ScriptedProvider>) {
    let scripted = conversation();
    let meter = Arc::new(Meter::new("openai:gpt-test", limits, price));
    let metered = Metered::new(scripted.clone(), meter);
    let mut completed = 0;
    loop {
        let request = ChatRequest {
            messages: vec![Message::user("next")],
            ..ChatRequest::default()
        };
        match metered.chat(&request, None).await {
            Ok(_) => completed += 1,
            Err(error) => return (completed, error, scripted),
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
    let (completed, error, scripted) = run(
        BudgetLimits {
            max_turns: Some(3),
            ..BudgetLimits::default()
        },
        None,
    )
    .await;
    assert_eq!(completed, 3);
    let exceeded = exceeded(&error);
    assert_eq!(exceeded.limit, Limit::Turns(3));
    assert_eq!(exceeded.spent.turns, 3);
    assert_eq!(exceeded.spent.usage, usage(3_000, 300));
    // Stopped before the fourth call was sent.
    assert_eq!(scripted.requests().len(), 3);
    assert_eq!(exceeded.spent.cost_usd, None);
}

#[tokio::test]
async fn input_token_limit() {
    let (completed, error, scripted) = run(
        BudgetLimits {
            max_input_tokens: Some(2_500),
            ..BudgetLimits::default()
        },
        None,
    )
    .await;
    // Two calls fit (2,000); the third would cross 2,500 once it returns: it is sent, counted, and stops the run.
    assert_eq!(completed, 2);
    let exceeded = exceeded(&error);
    assert_eq!(exceeded.limit, Limit::InputTokens(2_500));
    assert_eq!(exceeded.spent.usage.input_tokens, 3_000);
    assert_eq!(scripted.requests().len(), 3);

    // A request whose own size already crosses the limit is never sent.
    let scripted = conversation();
    let metered = Metered::new(
        scripted.clone(),
        Arc::new(Meter::new(
            "m",
            BudgetLimits {
                max_input_tokens: Some(10),
                ..BudgetLimits::default()
            },
            None,
        )),
    );
    let big = ChatRequest {
        messages: vec![Message::user("x".repeat(400))],
        ..ChatRequest::default()
    };
    let error = metered.chat(&big, None).await.unwrap_err();
    assert_eq!(exceeded_limit(&error), Limit::InputTokens(10));
    assert!(scripted.requests().is_empty());
}

fn exceeded_limit(error: &LlmError) -> Limit {
    exceeded(error).limit
}

#[tokio::test]
async fn output_token_limit_caps_max_tokens_then_stops() {
    let (completed, error, scripted) = run(
        BudgetLimits {
            max_output_tokens: Some(250),
            ..BudgetLimits::default()
        },
        None,
    )
    .await;
    assert_eq!(completed, 2);
    assert_eq!(exceeded_limit(&error), Limit::OutputTokens(250));
    let requests = scripted.requests();
    // Each request may only ask for what is left.
    assert_eq!(requests[0].max_tokens, Some(250));
    assert_eq!(requests[1].max_tokens, Some(150));
    assert_eq!(requests[2].max_tokens, Some(50));
}

#[tokio::test]
async fn cost_limit() {
    // $1 per million input tokens, $10 per million output: each turn costs $0.002.
    let price = Price {
        input_per_mtok: 1.0,
        cached_input_per_mtok: None,
        output_per_mtok: 10.0,
    };
    let (completed, error, _) = run(
        BudgetLimits {
            max_cost_usd: Some(0.005),
            ..BudgetLimits::default()
        },
        Some(price),
    )
    .await;
    let exceeded = exceeded(&error);
    assert_eq!(exceeded.limit, Limit::CostUsd(0.005));
    assert_eq!(completed, 2);
    let cost = exceeded.spent.cost_usd.unwrap();
    assert!(cost > 0.005 && cost <= 0.0061, "{cost}");
    insta::assert_snapshot!(error.to_string(), @"budget exhausted: cost limit of $0.01 reached (spent openai:gpt-test: 3000 input tokens (0 cached), 300 output tokens, $0.0060, 3 turns, 0.0s)");
}

#[derive(Debug)]
struct Slow;

#[async_trait]
impl Provider for Slow {
    fn name(&self) -> &str {
        "slow"
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    async fn chat(
        &self,
        _: &ChatRequest,
        _: Option<StreamSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(text_reply("too late", Usage::default()))
    }
}

#[tokio::test]
async fn wall_time_limit_stops_a_call_in_flight() {
    let meter = Arc::new(Meter::new(
        "slow",
        BudgetLimits {
            max_wall_time: Some(Duration::from_millis(200)),
            ..BudgetLimits::default()
        },
        None,
    ));
    let metered = Metered::new(Arc::new(Slow), meter.clone());
    let error = metered
        .chat(&ChatRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(
        exceeded_limit(&error),
        Limit::WallTime(Duration::from_millis(200))
    );
    // And the next call is refused before it starts.
    let error = metered
        .chat(&ChatRequest::default(), None)
        .await
        .unwrap_err();
    assert_eq!(
        exceeded_limit(&error),
        Limit::WallTime(Duration::from_millis(200))
    );
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
