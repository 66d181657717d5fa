//! The embedded model. Needs the GGUF that `scripts/fetch-model` installs; without it the test
//! fails with the install instructions (scripts/test always installs it first).

use bugloop_llm::structured::complete_json;
use bugloop_llm::{ChatRequest, JsonSchemaFormat, LlmError, LlmSettings, Message, connect};
use serde_json::json;

/// The embedded model, from where `scripts/fetch-model` installed it.
fn installed_model() -> std::sync::Arc<dyn bugloop_llm::Provider> {
    let settings = LlmSettings {
        model_dir: std::env::var_os("BUGLOOP_MODEL_DIR").map(Into::into),
        ..LlmSettings::default()
    };
    connect("local:smollm2", &settings, &|_| None).unwrap()
}

#[tokio::test]
async fn generates_schema_valid_json_through_the_grammar() {
    let provider = installed_model();
    assert!(provider.capabilities().json_schema);
    let format = JsonSchemaFormat {
        name: "finding".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": 60},
                "line": {"type": "integer", "minimum": 1, "maximum": 999},
                "severity": {"enum": ["low", "medium", "high"]}
            },
            "required": ["title", "line", "severity"],
            "additionalProperties": false
        }),
    };
    let request = ChatRequest {
        system: Some("You are a code reviewer.".into()),
        messages: vec![Message::user(
            "Report one finding for: `for i in 0..=v.len() { v[i] }`",
        )],
        max_tokens: Some(120),
        ..ChatRequest::default()
    };
    // Whatever the tiny model says, the grammar makes it valid: one call, no repair.
    let structured = complete_json(provider.as_ref(), request, format, None)
        .await
        .unwrap();
    assert_eq!(structured.responses.len(), 1);
    let value = structured.value;
    assert!(
        value["title"].is_string() && value["line"].is_u64() && value["severity"].is_string(),
        "{value}"
    );
    assert!(structured.responses[0].usage.output_tokens > 0);

    // Tools are refused clearly rather than ignored.
    let with_tools = ChatRequest {
        messages: vec![Message::user("hi")],
        tools: vec![bugloop_llm::ToolDefinition {
            name: "t".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }],
        ..ChatRequest::default()
    };
    assert!(matches!(
        provider.chat(&with_tools, None).await,
        Err(LlmError::Unsupported { .. })
    ));
}

#[test]
fn a_missing_model_says_how_to_install_it() {
    let settings = LlmSettings {
        model_dir: Some("/nonexistent".into()),
        ..LlmSettings::default()
    };
    let error = connect("local:smollm2", &settings, &|_| None)
        .unwrap_err()
        .to_string();
    assert!(error.contains("scripts/fetch-model"), "{error}");
    assert!(error.contains("BUGLOOP_MODEL_DIR"), "{error}");
}

/// A file that is no model (`--model local:/etc/passwd`) is said to be none, before llama.cpp
/// reads it (which says only "null result").
#[test]
fn a_file_that_is_no_model_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("text.gguf", &b"root:x:0:0:root:/root:/bin/sh\n"[..]),
        ("short.gguf", b"GG"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let error = connect(
            &format!("local:{}", path.display()),
            &LlmSettings::default(),
            &|_| None,
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("not a GGUF model file"), "{error}");
    }
}

/// A multi-turn session on the embedded model evaluates only what is new: each call after the
/// first keeps the longest prefix it shares with what the context holds (the conversation so
/// far, the answers included) and says so as cached input. Keeping the cache is the same
/// computation up to floating-point order (llama.cpp sums a batch of one token and a batch of
/// many in another order), so a long greedy answer may part from a fresh context's after many
/// turns; the second turn's answer, the first from a kept cache, is the fresh one's (a wrong
/// position in the cache garbles it).
#[tokio::test]
async fn a_session_evaluates_only_what_is_new_and_answers_as_a_fresh_context_does() {
    let kept = installed_model();
    let asks = [
        "Name one risk of `for i in 0..=v.len() { v[i] }`.",
        "How would you fix it?",
        "Write the fixed loop.",
        "Is the fix safe for an empty vector?",
    ];
    let mut messages = Vec::new();
    let mut last_prompt = 0;
    for (turn, ask) in asks.iter().enumerate() {
        messages.push(Message::user(*ask));
        let request = ChatRequest {
            system: Some("You are a code reviewer. Answer in one sentence.".into()),
            messages: messages.clone(),
            max_tokens: Some(24),
            ..ChatRequest::default()
        };
        let answer = kept.chat(&request, None).await.unwrap();
        let usage = answer.usage;
        if turn == 0 {
            assert_eq!(usage.cached_input_tokens, 0);
        } else {
            // At least the turn before's whole prompt was kept, and the new turn evaluated.
            assert!(
                usage.cached_input_tokens >= last_prompt
                    && usage.cached_input_tokens < usage.input_tokens,
                "turn {turn}: {usage:?}, the turn before's prompt {last_prompt}"
            );
        }
        last_prompt = usage.input_tokens;
        if turn <= 1 {
            let fresh = installed_model();
            let again = fresh.chat(&request, None).await.unwrap();
            assert_eq!(again.usage.cached_input_tokens, 0);
            assert_eq!(again.message.content, answer.message.content, "turn {turn}");
        }
        messages.push(answer.message);
    }
}
