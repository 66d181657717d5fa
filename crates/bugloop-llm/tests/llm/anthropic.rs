use bugloop_llm::anthropic::AnthropicProvider;
use bugloop_llm::{
    ChatRequest, FinishReason, LlmError, Message, Provider, ToolChoice, ToolDefinition,
};
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{
    Collected, bodies, fast_settings, mount, mount_stream, ok_json, server_answering, sse,
    user_request,
};

fn provider(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new(
        "anthropic:claude-test",
        "claude-test",
        server.uri(),
        "sk-ant-test".into(),
        fast_settings(),
    )
    .unwrap()
}

fn tools() -> Vec<ToolDefinition> {
    ["read_file", "grep"]
        .iter()
        .map(|name| ToolDefinition {
            name: (*name).into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        })
        .collect()
}

#[tokio::test]
async fn plain_answer_with_tool_use_caching_and_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ok_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-2026",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "src/lib.rs"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 20, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0, "output_tokens": 15}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let request = ChatRequest {
        system: Some("You review code.".into()),
        messages: vec![
            Message::user("Find the bug"),
            Message {
                role: bugloop_llm::Role::Assistant,
                content: String::new(),
                tool_calls: vec![bugloop_llm::ToolCall {
                    id: "toolu_0".into(),
                    name: "grep".into(),
                    arguments: "{\"path\":\"x\"}".into(),
                }],
                tool_call_id: None,
            },
            Message::tool_result("toolu_0", "no match"),
            Message::user("Keep going"),
        ],
        tools: tools(),
        tool_choice: ToolChoice::Required,
        ..ChatRequest::default()
    };
    let response = provider(&server).chat(&request, None).await.unwrap();
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(response.message.content, "Let me look.");
    assert_eq!(response.message.tool_calls[0].name, "read_file");
    assert_eq!(
        response.message.tool_calls[0].parse_arguments().unwrap(),
        json!({"path": "src/lib.rs"})
    );
    assert_eq!(response.usage.input_tokens, 1020);
    assert_eq!(response.usage.cached_input_tokens, 1000);
    insta::assert_json_snapshot!(bodies(&server).await[0], @r#"
    {
      "max_tokens": 4096,
      "messages": [
        {
          "content": [
            {
              "cache_control": {
                "type": "ephemeral"
              },
              "text": "Find the bug",
              "type": "text"
            }
          ],
          "role": "user"
        },
        {
          "content": [
            {
              "id": "toolu_0",
              "input": {
                "path": "x"
              },
              "name": "grep",
              "type": "tool_use"
            }
          ],
          "role": "assistant"
        },
        {
          "content": [
            {
              "content": "no match",
              "tool_use_id": "toolu_0",
              "type": "tool_result"
            },
            {
              "cache_control": {
                "type": "ephemeral"
              },
              "text": "Keep going",
              "type": "text"
            }
          ],
          "role": "user"
        }
      ],
      "model": "claude-test",
      "system": [
        {
          "cache_control": {
            "type": "ephemeral"
          },
          "text": "You review code.",
          "type": "text"
        }
      ],
      "tool_choice": {
        "type": "any"
      },
      "tools": [
        {
          "description": "read_file tool",
          "input_schema": {
            "properties": {
              "path": {
                "type": "string"
              }
            },
            "type": "object"
          },
          "name": "read_file"
        },
        {
          "description": "grep tool",
          "input_schema": {
            "properties": {
              "path": {
                "type": "string"
              }
            },
            "type": "object"
          },
          "name": "grep"
        }
      ]
    }
    "#);
}

fn streamed_events(complete: bool) -> String {
    let mut events = vec![
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {"id": "m", "model": "claude-test", "usage": {"input_tokens": 7, "output_tokens": 1}}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (Some("ping"), json!({"type": "ping"})),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Checking "}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "the file."}}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "grep", "input": {}}}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
        ),
    ];
    if complete {
        events.extend([
            (Some("content_block_delta"), json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"lib.rs\"}"}})),
            (Some("content_block_stop"), json!({"type": "content_block_stop", "index": 1})),
            (Some("message_delta"), json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 22}})),
            (Some("message_stop"), json!({"type": "message_stop"})),
        ]);
    }
    sse(&events)
}

#[tokio::test]
async fn streamed_answer_with_tool_use() {
    let server = MockServer::start().await;
    mount_stream(&server, streamed_events(true), None).await;
    let collected = Collected::default();
    let sink = collected.sink();
    let request = ChatRequest {
        tools: tools(),
        stream: true,
        ..user_request("go")
    };
    let response = provider(&server).chat(&request, Some(&sink)).await.unwrap();
    assert_eq!(response.message.content, "Checking the file.");
    assert_eq!(collected.text(), "Checking the file.");
    assert_eq!(
        response.message.tool_calls[0].arguments,
        "{\"path\": \"lib.rs\"}"
    );
    assert_eq!(response.finish, FinishReason::ToolCalls);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (7, 22)
    );
    assert_eq!(bodies(&server).await[0]["stream"], json!(true));
}

#[tokio::test]
async fn overloaded_then_success_and_cut_stream() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(529).set_body_json(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})), Some(1)).await;
    mount_stream(&server, streamed_events(false), Some(1)).await;
    mount_stream(&server, streamed_events(true), None).await;
    let request = ChatRequest {
        stream: true,
        ..user_request("go")
    };
    let response = provider(&server).chat(&request, None).await.unwrap();
    assert_eq!(response.message.content, "Checking the file.");
    // 529, then a stream without message_stop, then the whole answer.
    assert_eq!(bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn error_event_in_stream_and_bad_request() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}})), None).await;
    let error = provider(&server)
        .chat(&user_request("x"), None)
        .await
        .unwrap_err();
    assert!(matches!(error, LlmError::ContextTooLong { .. }), "{error}");
}

fn message(text: &str) -> serde_json::Value {
    json!({
        "id": "msg", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 5}
    })
}

#[tokio::test]
async fn structured_output_is_instructed_and_repaired() {
    let server = server_answering(
        [ok_json(message("{\"bug\": \"yes\"}"))],
        ok_json(message("```json\n{\"bug\": true}\n```")),
    )
    .await;
    let format = bugloop_llm::JsonSchemaFormat {
        name: "verdict".into(),
        schema: json!({"type": "object", "properties": {"bug": {"type": "boolean"}}, "required": ["bug"]}),
    };
    let request = ChatRequest {
        system: Some("Review.".into()),
        messages: vec![Message::user("bug?")],
        ..ChatRequest::default()
    };
    let structured =
        bugloop_llm::structured::complete_json(&provider(&server), request, format, None)
            .await
            .unwrap();
    assert_eq!(structured.value, json!({"bug": true}));
    let sent = bodies(&server).await;
    // No native format on this wire: the schema is in the (cached) system prompt.
    assert!(sent[0].get("response_format").is_none());
    assert!(
        sent[0]["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"required\"")
    );
    let repair = &sent[1]["messages"][2]["content"][0]["text"];
    assert!(repair.as_str().unwrap().contains("/bug"), "{repair}");
}

#[tokio::test]
async fn rate_limit_server_error_malformed_and_hung() {
    let server = server_answering(
        [
            ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_json(
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
            ),
            ResponseTemplate::new(500).set_body_json(
                json!({"type": "error", "error": {"type": "api_error", "message": "internal"}}),
            ),
            ok_json(message("fine")),
            ResponseTemplate::new(200).set_body_string("{\"content\": ["),
            ok_json(message("whole")),
        ],
        ResponseTemplate::new(200)
            .set_body_json(message("late"))
            .set_delay(std::time::Duration::from_secs(10)),
    )
    .await;
    let request = user_request("x");
    let started = std::time::Instant::now();
    // 429 (waits the second it was told), then 500, then the answer.
    let response = provider(&server).chat(&request, None).await.unwrap();
    assert_eq!(response.message.content, "fine");
    assert!(started.elapsed() >= std::time::Duration::from_millis(950));
    assert_eq!(bodies(&server).await.len(), 3);
    // A malformed body is retried like a cut stream.
    let retried = provider(&server).chat(&request, None).await.unwrap();
    assert_eq!(retried.message.content, "whole");
    assert_eq!(bodies(&server).await.len(), 5);
    let mut settings = fast_settings();
    settings.idle_timeout = std::time::Duration::from_millis(300);
    settings.max_retries = 0;
    let hung =
        AnthropicProvider::new("anthropic:x", "x", server.uri(), "k".into(), settings).unwrap();
    let error = hung.chat(&request, None).await.unwrap_err();
    assert!(matches!(error, LlmError::Timeout(_)), "{error}");
}

/// A model server that redirects is not followed: the key and the prompt (the code under
/// review) would go wherever it points; the error says where and what to set.
#[tokio::test]
async fn a_redirect_is_not_followed_with_the_key() {
    let elsewhere = MockServer::start().await;
    let server = MockServer::start().await;
    let location = format!("{}/v1/messages", elsewhere.uri());
    mount(
        &server,
        ResponseTemplate::new(307).insert_header("location", location.as_str()),
        None,
    )
    .await;
    mount(&elsewhere, ok_json(message("captured")), None).await;
    let error = provider(&server)
        .chat(&user_request("go"), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("redirect") && error.contains(&location),
        "{error}"
    );
    assert_eq!(bodies(&server).await.len(), 1, "asked once, not retried");
    assert!(
        bodies(&elsewhere).await.is_empty(),
        "nothing reached the other server"
    );
}
