//! A local OpenAI-compatible chat server for `bench tokens`: it answers as a reviewer that runs
//! the four passes without exploring (a grounded finding in the first pass), and records what
//! each request costs: its tokens under a real tokenizer (`o200k_base`), how many of them an
//! OpenAI-style prefix cache would have served, and its tool definitions' share. bugloop talks
//! to it through its real OpenAI provider, so what is counted is what would go over the wire.
//! For `bench latency` it answers after a delay of its [`Latency`] and records when each
//! request came and went.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{Value, json};
use tiktoken_rs::CoreBPE;

use super::models::synthetic_finding;
use super::setup_error;
use bugloop_app::AppError;

/// OpenAI serves a prompt prefix from its cache only from this many tokens on, in steps of
/// [`CACHE_STEP`] (platform.openai.com, "Prompt caching").
const CACHE_MINIMUM: usize = 1024;
const CACHE_STEP: usize = 128;

/// What one request cost.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct RequestTokens {
    /// All input tokens: tool definitions and messages.
    pub input: u64,
    /// The tool definitions' part of `input`.
    pub tools: u64,
    /// The part of `input` a prefix cache would have served.
    pub cached: u64,
}

/// How long the server takes to answer: a fixed time per request, and optionally per thousand
/// input tokens and per output token (a hosted model's time to first token and its speed).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Latency {
    pub request_ms: u64,
    pub input_ms_per_ktok: f64,
    pub output_ms_per_token: f64,
}

/// Tokens the benchmark's reviewer says each answer generated.
const OUTPUT_TOKENS: u64 = 50;

impl Latency {
    fn of(&self, input_tokens: u64) -> Duration {
        let ms = self.request_ms as f64
            + self.input_ms_per_ktok * input_tokens as f64 / 1000.0
            + self.output_ms_per_token * OUTPUT_TOKENS as f64;
        Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }
}

/// When one request came and was answered, from the recorder's start (or last
/// [`Recorder::take_timings`]), and whether its answer reported a finding.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct RequestTiming {
    pub came_ms: f64,
    pub answered_ms: f64,
    pub reported_finding: bool,
}

struct Ledger {
    tokenizer: CoreBPE,
    /// The reviewer runs one pass per reply even when all four were asked for at once (as
    /// many models do).
    one_pass_per_turn: bool,
    /// Every earlier prompt, as tokens, for the prefix cache.
    prompts: Vec<Vec<u32>>,
    requests: Vec<RequestTokens>,
    latency: Latency,
    since: Instant,
    timings: Vec<RequestTiming>,
}

/// The running server; it stops when dropped.
pub(crate) struct Recorder {
    pub(crate) url: String,
    ledger: Arc<Mutex<Ledger>>,
    server: tokio::task::JoinHandle<()>,
}

impl Recorder {
    pub(crate) async fn start(one_pass_per_turn: bool) -> Result<Recorder, AppError> {
        Recorder::start_with(one_pass_per_turn, Latency::default()).await
    }

    /// A recorder that answers after `latency`.
    pub(crate) async fn start_with(
        one_pass_per_turn: bool,
        latency: Latency,
    ) -> Result<Recorder, AppError> {
        let tokenizer = tiktoken_rs::o200k_base()
            .map_err(|e| setup_error(format!("the o200k_base tokenizer: {e}")))?;
        let ledger = Arc::new(Mutex::new(Ledger {
            tokenizer,
            one_pass_per_turn,
            prompts: Vec::new(),
            requests: Vec::new(),
            latency,
            since: Instant::now(),
            timings: Vec::new(),
        }));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .map_err(|e| setup_error(format!("the recording server: {e}")))?;
        let address = listener
            .local_addr()
            .map_err(|e| setup_error(format!("the recording server: {e}")))?;
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .with_state(ledger.clone());
        let server = tokio::spawn(async move {
            // The server ends with the benchmark (the task is aborted on drop).
            let _ = axum::serve(listener, app).await;
        });
        Ok(Recorder {
            url: format!("http://{address}/v1"),
            ledger,
            server,
        })
    }

    /// When each request since the last call came and went, from the last call (or the start).
    pub(crate) fn take_timings(&self) -> Vec<RequestTiming> {
        self.ledger
            .lock()
            .map(|mut ledger| {
                ledger.since = Instant::now();
                std::mem::take(&mut ledger.timings)
            })
            .unwrap_or_default()
    }

    /// The requests recorded since the last call.
    pub(crate) fn take(&self) -> Vec<RequestTokens> {
        self.ledger
            .lock()
            .map(|mut ledger| std::mem::take(&mut ledger.requests))
            .unwrap_or_default()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn answer(
    State(ledger): State<Arc<Mutex<Ledger>>>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, (StatusCode, String)> {
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err((
            StatusCode::BAD_REQUEST,
            "the benchmark's server does not stream".to_owned(),
        ));
    }
    let came = Instant::now();
    let (cost, one_pass_per_turn, latency) = {
        let mut ledger = ledger
            .lock()
            .map_err(|_| (StatusCode::INTERNAL_SERVER_ERROR, "poisoned".to_owned()))?;
        (
            ledger.record(&body),
            ledger.one_pass_per_turn,
            ledger.latency,
        )
    };
    let message = reply(&body, one_pass_per_turn);
    let wait = latency.of(cost.input);
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let reported_finding = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c.pointer("/function/name").and_then(Value::as_str) == Some("report_finding"));
    if let Ok(mut ledger) = ledger.lock() {
        let since = ledger.since;
        let ms = |at: Instant| at.saturating_duration_since(since).as_secs_f64() * 1000.0;
        ledger.timings.push(RequestTiming {
            came_ms: ms(came),
            answered_ms: ms(Instant::now()),
            reported_finding,
        });
    }
    Ok(Json(json!({
        "id": "bench",
        "object": "chat.completion",
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": message, "finish_reason":
            if message.get("tool_calls").is_some() { "tool_calls" } else { "stop" }}],
        "usage": {
            "prompt_tokens": cost.input,
            "completion_tokens": OUTPUT_TOKENS,
            "prompt_tokens_details": {"cached_tokens": cost.cached},
        },
    })))
}

impl Ledger {
    fn record(&mut self, body: &Value) -> RequestTokens {
        let (tools, messages) = render(body);
        let mut prompt = self.tokenizer.encode_ordinary(&tools);
        let tool_tokens = prompt.len();
        prompt.extend(self.tokenizer.encode_ordinary(&messages));
        let shared = self
            .prompts
            .iter()
            .map(|earlier| common_prefix(earlier, &prompt))
            .max()
            .unwrap_or(0);
        let cached = if shared >= CACHE_MINIMUM {
            shared - shared % CACHE_STEP
        } else {
            0
        };
        let cost = RequestTokens {
            input: prompt.len() as u64,
            tools: tool_tokens as u64,
            cached: cached as u64,
        };
        self.prompts.push(prompt);
        self.requests.push(cost);
        cost
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The request as the model reads it: the tool definitions (servers put them first), then each
/// message with its role, text and tool calls.
fn render(body: &Value) -> (String, String) {
    let tools = body.get("tools").map(Value::to_string).unwrap_or_default();
    let mut messages = String::new();
    for message in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        messages.push_str("<|");
        messages.push_str(role);
        messages.push_str("|>\n");
        if let Some(content) = message.get("content").and_then(Value::as_str) {
            messages.push_str(content);
        }
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let arguments = function
                .and_then(|f| f.get("arguments"))
                .and_then(Value::as_str)
                .unwrap_or("");
            messages.push('\n');
            messages.push_str(name);
            messages.push_str(arguments);
        }
        messages.push('\n');
    }
    (tools, messages)
}

/// A reviewer that answers at once: in a tools session, a grounded finding with the first pass
/// and each pass submitted (all in one reply when all were asked for together, unless it runs
/// `one_pass_per_turn`); asked for one structured answer, an empty review; asked to weigh the
/// analyzers' hits, no verdict (each published as its tool says); asked by PR-Agent, a review
/// in its YAML with no issue.
fn reply(body: &Value, one_pass_per_turn: bool) -> Value {
    let offered: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
        .collect();
    let messages: Vec<&Value> = body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let system = first_said(&messages, "system");
    if system.contains("hits of static analyzers") {
        // The analyzers' triage, answered at once: every hit is left as its tool says.
        let answer = json!({"verdicts": []});
        return json!({"role": "assistant", "content": answer.to_string()});
    }
    if system.contains("You are PR-Reviewer") {
        // PR-Agent's review, for the side-by-side figure: the smallest review it publishes.
        let answer = "```yaml\nreview:\n  estimated_effort_to_review_[1-5]: 2\n  \
                      relevant_tests: |\n    No\n  key_issues_to_review: []\n  \
                      security_concerns: |\n    No\n```";
        return json!({"role": "assistant", "content": answer});
    }
    if !offered.contains(&"submit_pass_results") {
        let answer = json!({"findings": [], "resolved": [], "summary": "bench"});
        return json!({"role": "assistant", "content": answer.to_string()});
    }
    let change = first_said(&messages, "user");
    let (pass, given) = pass_asked(&messages, change);
    // Given every pass's instructions at once, it runs the passes left in one reply, as asked.
    let last = if given > 1 && !one_pass_per_turn {
        given.max(pass)
    } else {
        pass
    };
    let mut calls = Vec::new();
    if pass == 1
        && offered.contains(&"report_finding")
        && let Some(finding) = synthetic_finding(change)
    {
        calls.push(("report_finding", finding));
    }
    for number in pass..=last {
        calls.push((
            "submit_pass_results",
            json!({"pass_number": number, "summary": "bench", "has_blocking_issues": false}),
        ));
    }
    let tool_calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(index, (name, arguments))| {
            json!({"id": format!("call-{pass}-{index}"), "type": "function",
                   "function": {"name": name, "arguments": arguments.to_string()}})
        })
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": tool_calls})
}

/// What the first message of `role` says (`""` when there is none).
fn first_said<'m>(messages: &[&'m Value], role: &str) -> &'m str {
    messages
        .iter()
        .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The pass a review request asks for, and how many passes its first message gives: the one a
/// follow-up names ("Go on with pass N"; the passes left may be asked at once, each in its own
/// copy of the conversation), else the only pass a conversation of its own gives (the
/// consolidation beside the passes left), else the one after those submitted.
fn pass_asked(messages: &[&Value], change: &str) -> (usize, usize) {
    let submitted = messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter(|c| {
            c.pointer("/function/name").and_then(Value::as_str) == Some("submit_pass_results")
        })
        .count();
    let asked = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .and_then(|text| text.split("Go on with pass ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse::<usize>().ok());
    let headings: Vec<&str> = change
        .lines()
        .filter_map(|l| l.strip_prefix("# Pass "))
        .collect();
    let alone = match headings.as_slice() {
        [only] => only
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<usize>().ok()),
        _ => None,
    };
    (asked.or(alone).unwrap_or(submitted + 1), headings.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger {
            tokenizer: tiktoken_rs::o200k_base().unwrap(),
            one_pass_per_turn: false,
            prompts: Vec::new(),
            requests: Vec::new(),
            latency: Latency::default(),
            since: Instant::now(),
            timings: Vec::new(),
        }
    }

    fn request(user: &str, turns: usize) -> Value {
        let mut messages = vec![
            json!({"role": "system", "content": "review"}),
            json!({"role": "user", "content": user}),
        ];
        for turn in 0..turns {
            messages.push(json!({"role": "assistant", "content": format!("turn {turn}")}));
        }
        json!({"messages": messages, "tools": [{"type": "function", "function": {"name": "t"}}]})
    }

    #[test]
    fn a_grown_conversation_is_served_from_the_cache_in_steps() {
        let mut ledger = ledger();
        let long = "fn f() { return x + 1; }\n".repeat(200);
        let first = ledger.record(&request(&long, 0));
        assert_eq!(first.cached, 0, "nothing was cached before");
        assert!(first.input > 1_500 && first.tools > 0 && first.tools < 30);
        let second = ledger.record(&request(&long, 1));
        assert!(second.input > first.input);
        assert_eq!(second.cached % 128, 0);
        assert!(second.cached <= first.input && second.cached + 128 > first.input - 8);
    }

    #[test]
    fn a_short_or_different_prompt_is_not_cached() {
        let mut ledger = ledger();
        ledger.record(&request("short", 0));
        assert_eq!(ledger.record(&request("short", 1)).cached, 0);
        let long = "let a = 1;\n".repeat(600);
        ledger.record(&request(&long, 0));
        let other = "let b = 2;\n".repeat(600);
        assert_eq!(ledger.record(&request(&other, 0)).cached, 0);
    }

    #[test]
    fn the_reviewer_reports_in_the_first_pass_and_submits_each() {
        let tools = json!([{"type": "function", "function": {"name": "report_finding"}},
                           {"type": "function", "function": {"name": "submit_pass_results"}}]);
        let change = "## a.py (added)\n@@\n3+x = 1 / 0\n";
        let first = reply(
            &json!({"tools": tools, "messages": [{"role": "user", "content": change}]}),
            false,
        );
        let names: Vec<&str> = first["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["report_finding", "submit_pass_results"]);
        let second = reply(
            &json!({"tools": tools, "messages": [
                {"role": "user", "content": change},
                {"role": "assistant", "tool_calls": first["tool_calls"]},
            ]}),
            false,
        );
        let arguments = second["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert!(arguments.contains("\"pass_number\":2"), "{arguments}");
        // All four passes asked for at once: all four submitted in one reply.
        let together =
            format!("{change}\n# Pass 1 of 4\n# Pass 2 of 4\n# Pass 3 of 4\n# Pass 4 of 4\n");
        let asked = json!({"tools": tools, "messages": [{"role": "user", "content": together}]});
        assert_eq!(
            reply(&asked, false)["tool_calls"].as_array().unwrap().len(),
            5
        );
        // A reviewer that runs one pass per reply: the finding and the first pass only.
        let first = reply(&asked, true);
        assert_eq!(first["tool_calls"].as_array().unwrap().len(), 2);
        // Then the pass a follow-up asks for, whatever was submitted in its copy.
        let third = reply(
            &json!({"tools": tools, "messages": [
                {"role": "user", "content": together},
                {"role": "assistant", "tool_calls": first["tool_calls"]},
                {"role": "user", "content": "Recorded. Go on with pass 3 of 4 as given"},
            ]}),
            true,
        );
        let arguments = third["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert!(arguments.contains("\"pass_number\":3"), "{arguments}");
    }
}
