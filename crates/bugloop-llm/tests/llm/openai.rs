use std::time::{Duration, Instant};

use bugloop_llm::openai::OpenAiProvider;
use bugloop_llm::structured::{Structured, StructuredError, complete_json};
use bugloop_llm::{
    Advice, ChatRequest, ChatResponse, FinishReason, HttpSettings, JsonSchemaFormat, LlmError,
    Message, Provider, StreamEvent, ToolCall, ToolChoice, ToolDefinition,
};
use serde_json::json;
use wiremock::matchers::{body_partial_json, body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    Collected, bodies, fast_settings, mount, mount_stream, ok_json, server_answering, sse,
};

fn provider(server: &MockServer, native_json_schema: bool) -> OpenAiProvider {
    provider_with(server, fast_settings(), native_json_schema)
}

fn provider_with(
    server: &MockServer,
    settings: HttpSettings,
    native_json_schema: bool,
) -> OpenAiProvider {
    OpenAiProvider::new(
        "openai:gpt-test",
        "gpt-test",
        format!("{}/v1", server.uri()),
        Some("sk-test".into()),
        settings,
        native_json_schema,
    )
    .unwrap()
}

/// A streamed chat of `text` with the server's provider: its answer, and what the sink was told.
async fn streamed_chat(server: &MockServer, text: &str) -> (ChatResponse, Collected) {
    let collected = Collected::default();
    let sink = collected.sink();
    let mut req = request(text);
    req.stream = true;
    let response = provider(server, true)
        .chat(&req, Some(&sink))
        .await
        .unwrap();
    (response, collected)
}

fn answer(content: &str) -> serde_json::Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-2026",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15, "prompt_tokens_details": {"cached_tokens": 8}}
    })
}

fn request(text: &str) -> ChatRequest {
    ChatRequest {
        system: Some("You review code.".into()),
        messages: vec![Message::user(text)],
        ..ChatRequest::default()
    }
}

fn read_file_tool() -> ToolDefinition {
    ToolDefinition {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

#[tokio::test]
async fn plain_answer_and_the_request_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ok_json(answer("Looks fine.")))
        .expect(1)
        .mount(&server)
        .await;
    let mut req = request("Review this.");
    req.max_tokens = Some(100);
    req.temperature = Some(0.0);
    let response = provider(&server, true).chat(&req, None).await.unwrap();
    assert_eq!(response.message.content, "Looks fine.");
    assert_eq!(response.finish, FinishReason::Stop);
    assert_eq!(response.model, "gpt-test-2026");
    assert_eq!(
        (
            response.usage.input_tokens,
            response.usage.output_tokens,
            response.usage.cached_input_tokens
        ),
        (12, 3, 8)
    );
    insta::assert_json_snapshot!(bodies(&server).await[0], @r#"
    {
      "max_tokens": 100,
      "messages": [
        {
          "content": "You review code.",
          "role": "system"
        },
        {
          "content": "Review this.",
          "role": "user"
        }
      ],
      "model": "gpt-test",
      "temperature": 0.0
    }
    "#);
}

#[tokio::test]
async fn streamed_answer() {
    let server = MockServer::start().await;
    let chunk = |delta: serde_json::Value, finish: Option<&str>| json!({"id": "c", "model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let mut body = sse(&[
        (
            None,
            chunk(json!({"role": "assistant", "content": ""}), None),
        ),
        (None, chunk(json!({"content": "Hel"}), None)),
        (None, chunk(json!({"content": "lo ✓"}), None)),
        (None, chunk(json!({}), Some("stop"))),
        (
            None,
            json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        ),
    ]);
    body.push_str("data: [DONE]\n\n");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(
            json!({"stream": true, "stream_options": {"include_usage": true}}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body),
        )
        .expect(1)
        .mount(&server)
        .await;
    let (response, collected) = streamed_chat(&server, "Hi").await;
    assert_eq!(response.message.content, "Hello ✓");
    assert_eq!(collected.text(), "Hello ✓");
    assert_eq!(response.usage.input_tokens, 5);
    assert_eq!(response.usage.output_tokens, 2);
}

#[tokio::test]
async fn tool_calls_plain_and_streamed_and_their_results_sent_back() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(ResponseTemplate::new(200).insert_header("content-type", "text/event-stream").set_body_string({
            let chunk = |delta: serde_json::Value, finish: Option<&str>| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            let mut body = sse(&[
                (None, chunk(json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}), None)),
                (None, chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": "}}]}), None)),
                (None, chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"src/lib.rs\"}"}}]}), None)),
                (None, chunk(json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}]}), None)),
                (None, chunk(json!({}), Some("tool_calls"))),
            ]);
            body.push_str("data: [DONE]\n\n");
            body
        }))
        .mount(&server)
        .await;
    mount(&server, ok_json(json!({
            "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"README.md\"}"}}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 9}
        })), None).await;
    let provider = provider(&server, true);
    let mut req = request("Find the bug");
    req.tools = vec![read_file_tool()];
    let first = provider.chat(&req, None).await.unwrap();
    assert_eq!(first.finish, FinishReason::ToolCalls);
    assert_eq!(
        first.message.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"README.md\"}".into()
        }]
    );

    let collected = Collected::default();
    let sink = collected.sink();
    let mut streamed = req.clone();
    streamed.stream = true;
    let second = provider.chat(&streamed, Some(&sink)).await.unwrap();
    assert_eq!(second.message.tool_calls.len(), 2);
    assert_eq!(
        second.message.tool_calls[0].arguments,
        "{\"path\": \"src/lib.rs\"}"
    );
    assert_eq!(
        second.message.tool_calls[0].parse_arguments().unwrap(),
        json!({"path": "src/lib.rs"})
    );
    assert!(collected.events().contains(&StreamEvent::ToolCallStarted {
        id: "call_a".into(),
        name: "read_file".into()
    }));

    // The follow-up carries the assistant's calls and the tool's result in the wire shape.
    req.messages.push(first.message.clone());
    req.messages
        .push(Message::tool_result("call_1", "# README"));
    req.tool_choice = ToolChoice::Tool("read_file".into());
    provider.chat(&req, None).await.unwrap();
    let sent = bodies(&server).await;
    insta::assert_json_snapshot!(sent[0]["tools"], @r#"
    [
      {
        "function": {
          "description": "Read a file",
          "name": "read_file",
          "parameters": {
            "properties": {
              "path": {
                "type": "string"
              }
            },
            "required": [
              "path"
            ],
            "type": "object"
          }
        },
        "type": "function"
      }
    ]
    "#);
    assert_eq!(sent[0]["tool_choice"], json!("auto"));
    insta::assert_json_snapshot!((&sent[2]["messages"], &sent[2]["tool_choice"]), @r##"
    [
      [
        {
          "content": "You review code.",
          "role": "system"
        },
        {
          "content": "Find the bug",
          "role": "user"
        },
        {
          "content": null,
          "role": "assistant",
          "tool_calls": [
            {
              "function": {
                "arguments": "{\"path\": \"README.md\"}",
                "name": "read_file"
              },
              "id": "call_1",
              "type": "function"
            }
          ]
        },
        {
          "content": "# README",
          "role": "tool",
          "tool_call_id": "call_1"
        }
      ],
      {
        "function": {
          "name": "read_file"
        },
        "type": "function"
      }
    ]
    "##);
}

fn verdict_format() -> JsonSchemaFormat {
    JsonSchemaFormat {
        name: "verdict".into(),
        schema: json!({
            "type": "object",
            "properties": {"bug": {"type": "boolean"}, "line": {"type": "integer", "minimum": 1}},
            "required": ["bug", "line"],
            "additionalProperties": false
        }),
    }
}

/// `question` answered in [`verdict_format`].
async fn verdict(provider: &OpenAiProvider, question: &str) -> Result<Structured, StructuredError> {
    complete_json(provider, request(question), verdict_format(), None).await
}

#[tokio::test]
async fn structured_output_native() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"response_format": {"type": "json_schema", "json_schema": {"name": "verdict", "strict": false}}})))
        .respond_with(ok_json(answer("{\"bug\": true, \"line\": 4}")))
        .expect(1)
        .mount(&server)
        .await;
    let provider = provider(&server, true);
    let structured = verdict(&provider, "Is there a bug?").await.unwrap();
    assert_eq!(structured.value, json!({"bug": true, "line": 4}));
    assert_eq!(structured.responses.len(), 1);
}

/// An answer the server cut at the output limit (`finish_reason: length`) is salvaged from its
/// complete entries in that one request, and said so; a cut that left nothing whole goes to the
/// repair round as any unusable answer.
#[tokio::test]
async fn a_cut_structured_answer_keeps_its_complete_entries() {
    let format = JsonSchemaFormat {
        name: "findings".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "findings": {"type": "array", "items": {
                    "type": "object",
                    "properties": {"line": {"type": "integer"}, "title": {"type": "string"}},
                    "required": ["line", "title"],
                }},
                "summary": {"type": "string"},
            },
            "required": ["findings", "summary"],
        }),
    };
    let cut = |content: &str| {
        let mut body = answer(content);
        body["choices"][0]["finish_reason"] = json!("length");
        body
    };
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok_json(cut(
            "```json\n{\"findings\": [{\"line\": 3, \"title\": \"off by one\"}, {\"line\": 9, \"title\": \"div",
        )))
        .expect(1)
        .mount(&server)
        .await;
    let structured = complete_json(
        &provider(&server, false),
        request("Review"),
        format.clone(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        structured.value,
        json!({"findings": [{"line": 3, "title": "off by one"}], "summary": ""})
    );
    assert_eq!(structured.responses.len(), 1);
    assert!(
        structured
            .salvaged
            .as_deref()
            .is_some_and(|note| note.contains("the 1 complete entries")),
        "{:?}",
        structured.salvaged
    );

    let server = server_answering(
        [ok_json(cut("{\"findings\": [{\"li"))],
        ok_json(answer("{\"findings\": [], \"summary\": \"nothing\"}")),
    )
    .await;
    let structured = complete_json(&provider(&server, false), request("Review"), format, None)
        .await
        .unwrap();
    assert_eq!(structured.responses.len(), 2, "the repair round");
    assert_eq!(structured.salvaged, None);
}

#[tokio::test]
async fn structured_output_instructed_with_one_repair_round() {
    let server = server_answering(
        [
            ok_json(answer("Sure:\n```json\n{\"bug\": true, \"line\": 0}\n```")),
            ok_json(answer("{\"bug\": true, \"line\": 3}")),
        ],
        ok_json(answer("not json at all")),
    )
    .await;
    let provider = provider(&server, false);
    let structured = verdict(&provider, "Is there a bug?").await.unwrap();
    assert_eq!(structured.value, json!({"bug": true, "line": 3}));
    let sent = bodies(&server).await;
    assert!(sent[0].get("response_format").is_none());
    assert!(
        sent[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("\"additionalProperties\": false")
    );
    let repair = sent[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(repair.contains("/line"), "{repair}");
    assert!(repair.contains("less than the minimum"), "{repair}");

    // Still wrong after the repair: a typed error with the answer and the reasons.
    match verdict(&provider, "Again?").await {
        Err(StructuredError::Invalid { answer, errors }) => {
            assert_eq!(answer, "not json at all");
            assert!(errors[0].contains("not valid JSON"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "1")
        .set_body_json(
            json!({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}}),
        );
    let server = server_answering([limited], ok_json(answer("ok"))).await;
    let started = Instant::now();
    let response = provider(&server, true)
        .chat(&request("x"), None)
        .await
        .unwrap();
    assert_eq!(response.message.content, "ok");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited only {:?}",
        started.elapsed()
    );
    assert_eq!(bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn server_error_then_success() {
    let exploded = ResponseTemplate::new(500).set_body_string("upstream exploded");
    let server = server_answering([exploded], ok_json(answer("ok"))).await;
    assert_eq!(
        provider(&server, true)
            .chat(&request("x"), None)
            .await
            .unwrap()
            .message
            .content,
        "ok"
    );
    assert_eq!(bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn errors_are_classified_and_not_retried_when_pointless() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(body_string_contains("\"auth\""))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"message": "Incorrect API key", "code": "invalid_api_key"}}),
        ))
        .mount(&server)
        .await;
    Mock::given(method("POST")).and(body_string_contains("\"long\""))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}})))
        .mount(&server).await;
    Mock::given(method("POST"))
        .and(body_string_contains("\"bad\""))
        .respond_with(
            ResponseTemplate::new(200).set_body_string("{\"choices\": [ this is not json"),
        )
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(body_string_contains("\"down\""))
        .respond_with(ResponseTemplate::new(503).set_body_string("maintenance"))
        .mount(&server)
        .await;
    let provider = provider(&server, true);
    let ask = |text: &'static str| {
        let provider = &provider;
        async move {
            let mut req = request(text);
            req.system = None;
            provider.chat(&req, None).await.unwrap_err()
        }
    };
    let auth = ask("auth").await;
    assert!(matches!(auth, LlmError::Auth { status: 401, .. }), "{auth}");
    assert_eq!(auth.advice(), Advice::Stop);
    let long = ask("long").await;
    assert!(matches!(long, LlmError::ContextTooLong { .. }), "{long}");
    assert_eq!(long.advice(), Advice::ShrinkInput);
    let bad = ask("bad").await;
    assert!(matches!(bad, LlmError::InvalidResponse(_)), "{bad}");
    let down = ask("down").await;
    assert!(
        matches!(down, LlmError::Server { status: 503, .. }),
        "{down}"
    );
    assert_eq!(down.advice(), Advice::Retry);
    // auth and long once each; bad and down three times (two retries).
    assert_eq!(bodies(&server).await.len(), 8);
    insta::assert_snapshot!(format!("{auth}\n{long}\n{bad}\n{down}"), @r#"
    authentication failed (HTTP 401): Incorrect API key (invalid_api_key)
    the input is too long for the model's context: This model's maximum context length is 8192 tokens (context_length_exceeded)
    the provider's answer could not be read: not JSON (expected ident at line 1 column 16): {"choices": [ this is not json
    the provider failed (HTTP 503): maintenance
    "#);
}

/// A body that is not JSON, one cut short, and one of the wrong shape, each served once before a
/// whole answer: every one is retried like a cut stream, plain and streamed.
#[tokio::test]
async fn malformed_bodies_are_retried_like_a_cut_stream() {
    let whole = answer("whole").to_string();
    let plain_bodies = [
        "<html>502 bad gateway</html>".to_owned(),
        whole[..whole.len() / 2].to_owned(),
        json!({"object": "chat.completion", "choices": []}).to_string(),
    ];
    for body in plain_bodies {
        let server = MockServer::start().await;
        mount(
            &server,
            ResponseTemplate::new(200).set_body_string(body.clone()),
            Some(1),
        )
        .await;
        mount(&server, ok_json(answer("whole")), None).await;
        let response = provider(&server, true).chat(&request("x"), None).await;
        assert_eq!(response.unwrap().message.content, "whole", "after {body}");
        assert_eq!(bodies(&server).await.len(), 2, "after {body}");
    }

    let server = MockServer::start().await;
    let mut garbled = sse(&[delta("Half", None)]);
    garbled.push_str("data: {\"choices\": [ not json\n\n");
    let mut streamed = sse(&[delta("Whole", Some("stop"))]);
    streamed.push_str("data: [DONE]\n\n");
    assert_streamed_again(&server, garbled, "Half", streamed, "Whole").await;
}

/// The delta `text` of a streamed answer, finished for `finish`: an event for [`sse`].
fn delta(text: &str, finish: Option<&str>) -> (Option<&'static str>, serde_json::Value) {
    (
        None,
        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}),
    )
}

/// `server` streams `broken` once (`half` of an answer, then the stream breaks), then
/// `streamed` (the whole answer `whole`): the answer is `whole`, and the sink was told to drop
/// the half answer before the retry streamed again.
async fn assert_streamed_again(
    server: &MockServer,
    broken: String,
    half: &str,
    streamed: String,
    whole: &str,
) {
    mount_stream(server, broken, Some(1)).await;
    mount_stream(server, streamed, None).await;
    let (response, collected) = streamed_chat(server, "x").await;
    assert_eq!(response.message.content, whole);
    assert_eq!(
        collected.events(),
        vec![
            StreamEvent::Text(half.into()),
            StreamEvent::Restart,
            StreamEvent::Text(whole.into())
        ]
    );
}

#[tokio::test]
async fn stream_cut_in_the_middle_is_retried_then_reported() {
    let server = MockServer::start().await;
    let cut = sse(&[delta("Half an ans", None)]);
    let mut whole = sse(&[
        delta("Whole answer", None),
        (
            None,
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ),
    ]);
    whole.push_str("data: [DONE]\n\n");
    assert_streamed_again(&server, cut.clone(), "Half an ans", whole, "Whole answer").await;

    let error = streamed_without_retries(cut).await;
    assert!(matches!(error, LlmError::StreamInterrupted(_)), "{error}");
}

/// A streamed request to a server that streams `body`, by a provider that does not retry: the
/// error it ends with.
async fn streamed_without_retries(body: String) -> LlmError {
    let server = MockServer::start().await;
    mount_stream(&server, body, None).await;
    let mut settings = fast_settings();
    settings.max_retries = 0;
    let provider = provider_with(&server, settings, true);
    let mut req = request("x");
    req.stream = true;
    provider.chat(&req, None).await.unwrap_err()
}

#[tokio::test]
async fn hung_server_times_out() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(answer("late"))
            .set_delay(Duration::from_secs(10)),
        None,
    )
    .await;
    let mut settings = fast_settings();
    settings.idle_timeout = Duration::from_millis(300);
    settings.max_retries = 1;
    let provider = provider_with(&server, settings, true);
    let started = Instant::now();
    let error = provider.chat(&request("x"), None).await.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "did not time out: {:?}",
        started.elapsed()
    );
    assert_eq!(bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_error_inside_the_stream_is_classified() {
    let body = sse(&[(
        None,
        json!({"error": {"message": "model overloaded", "code": 503}}),
    )]);
    let error = streamed_without_retries(body).await;
    assert!(
        matches!(&error, LlmError::Server { status: 503, message } if message.contains("model overloaded")),
        "{error}"
    );
}

/// A server that leaves `usage` out (some local servers and proxies) is charged an estimate, so
/// a run's token budgets still bind.
#[tokio::test]
async fn an_answer_without_usage_is_charged_an_estimate() {
    let server = MockServer::start().await;
    let mut silent = answer("Looks fine to me.");
    silent.as_object_mut().unwrap().remove("usage");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ok_json(silent))
        .mount(&server)
        .await;
    let req = request(&"x".repeat(4_000));
    let response = provider(&server, true).chat(&req, None).await.unwrap();
    // 4,000 characters and the system prompt's, at four a token; the answer's 17.
    assert!(
        (1_000..1_100).contains(&response.usage.input_tokens),
        "{:?}",
        response.usage
    );
    assert_eq!(response.usage.output_tokens, 5);
    // A count given for the answer only: the prompt's is estimated all the same.
    server.reset().await;
    let mut partial = answer("Looks fine to me.");
    partial["usage"] = json!({"completion_tokens": 10});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ok_json(partial))
        .mount(&server)
        .await;
    let response = provider(&server, true).chat(&req, None).await.unwrap();
    assert!(response.usage.input_tokens >= 1_000, "{:?}", response.usage);
    assert_eq!(response.usage.output_tokens, 10);
}

/// A server (or a gateway before it) that echoes the key: refusing it, in an error event of a
/// stream, or in an error body sent with a success status. The key is not in the error, which
/// reaches the terminal, the run log and a server job's error.
#[tokio::test]
async fn a_provider_text_that_echoes_the_key_is_told_without_it() {
    let echo = json!({
        "message": "Incorrect API key provided: sk-test-echoed-key (header Bearer sk-test-echoed-key)",
        "code": 401
    });
    let cases = [
        (
            "a refusal",
            false,
            ResponseTemplate::new(401).set_body_json(json!({"error": echo})),
        ),
        (
            "an error event in a stream",
            true,
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(sse(&[(None, json!({"error": echo}))])),
        ),
        (
            "an error with a success status",
            false,
            ok_json(json!({"error": echo})),
        ),
    ];
    for (case, stream, answer) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(answer)
            .mount(&server)
            .await;
        let provider = OpenAiProvider::new(
            "openai:gpt-test",
            "gpt-test",
            format!("{}/v1", server.uri()),
            Some("sk-test-echoed-key".into()),
            fast_settings(),
            true,
        )
        .unwrap();
        let asked = ChatRequest {
            stream,
            ..request("hello")
        };
        let error = provider.chat(&asked, None).await.unwrap_err().to_string();
        assert!(
            error.contains("Incorrect API key provided"),
            "{case}: {error}"
        );
        assert!(!error.contains("sk-test-echoed-key"), "{case}: {error}");
    }
}
