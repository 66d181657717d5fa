use std::sync::Arc;

use bugloop_llm::openai::OpenAiProvider;
use bugloop_llm::replay::{Recorder, ReplayProvider};
use bugloop_llm::{ChatRequest, LlmError, Provider};
use serde_json::json;
use wiremock::matchers::{body_string_contains, method};
use wiremock::{Mock, MockServer};

use crate::support::{fast_settings, mount, ok_json, user_request};

#[tokio::test]
async fn record_then_replay_offline_byte_identical() {
    let server = MockServer::start().await;
    for (question, answer) in [("first", "one"), ("second", "two")] {
        Mock::given(method("POST"))
            .and(body_string_contains(question))
            .respond_with(ok_json(json!({
                "model": "gpt-test",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1}
            })))
            .mount(&server)
            .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let live: Arc<dyn Provider> = Arc::new(
        OpenAiProvider::new(
            "openai:gpt-test",
            "gpt-test",
            format!("{}/v1", server.uri()),
            None,
            fast_settings(),
            true,
        )
        .unwrap(),
    );
    let recorder = Recorder::new(live, &cassette).unwrap();
    let requests: Vec<ChatRequest> = ["first", "second", "first"]
        .iter()
        .map(|q| user_request(*q))
        .collect();
    let mut recorded = Vec::new();
    for request in &requests {
        recorded.push(serde_json::to_string(&recorder.chat(request, None).await.unwrap()).unwrap());
    }
    drop(server); // offline from here on

    let replay = ReplayProvider::open(&cassette).unwrap();
    for (request, expected) in requests.iter().zip(&recorded) {
        // A streamed call matches the same recording.
        let mut streamed = request.clone();
        streamed.stream = true;
        let replayed = serde_json::to_string(&replay.chat(&streamed, None).await.unwrap()).unwrap();
        assert_eq!(&replayed, expected);
    }
    // "first" was recorded twice and is now used up; an unknown request is a miss, never an answer.
    let error = replay.chat(&requests[0], None).await.unwrap_err();
    assert!(matches!(error, LlmError::ReplayMiss { .. }), "{error}");
    let unknown = user_request("never asked");
    let message = replay.chat(&unknown, None).await.unwrap_err().to_string();
    assert!(message.contains("never asked"), "{message}");
    assert!(
        message.contains(&bugloop_llm::replay::request_key(&unknown)),
        "{message}"
    );
}

#[test]
fn broken_cassette_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("bad.jsonl");
    std::fs::write(
        &cassette,
        "{\"key\": \"k\", \"request\": {}, \"response\": {\"nope\": 1}}\n",
    )
    .unwrap();
    let error = ReplayProvider::open(&cassette).unwrap_err().to_string();
    assert!(error.contains("line 1"), "{error}");
}

#[tokio::test]
async fn connect_can_record_any_provider() {
    let server = MockServer::start().await;
    mount(&server, ok_json(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "recorded"}, "finish_reason": "stop"}]
        })), None).await;
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("session.jsonl");
    let mut settings = bugloop_llm::LlmSettings {
        record_to: Some(cassette.clone()),
        ..Default::default()
    };
    settings.providers.insert(
        "mock".into(),
        bugloop_llm::ProviderSettings {
            base_url: Some(format!("{}/v1", server.uri())),
            ..Default::default()
        },
    );
    let live = bugloop_llm::connect("mock:any", &settings, &|_| None).unwrap();
    let request = user_request("hello");
    assert_eq!(
        live.chat(&request, None).await.unwrap().message.content,
        "recorded"
    );
    let replayed = bugloop_llm::connect(
        &format!("replay:{}", cassette.display()),
        &bugloop_llm::LlmSettings::default(),
        &|_| None,
    )
    .unwrap();
    assert_eq!(
        replayed.chat(&request, None).await.unwrap().message.content,
        "recorded"
    );
}

/// A replay claims what the recorded provider could do (a review asks a provider without
/// tools, or whose cache serves only its breakpoints, other requests); a cassette recorded
/// before capabilities were kept claims what any provider can do.
#[tokio::test]
async fn a_replay_claims_the_recorded_providers_capabilities() {
    use bugloop_llm::Capabilities;
    use bugloop_llm::scripted::{ScriptedProvider, text_reply};
    let recorded = Capabilities {
        tools: false,
        json_schema: false,
        streaming: true,
        context_tokens: Some(8_192),
        cache_at_breakpoints: true,
    };
    let live: Arc<dyn Provider> = Arc::new(
        ScriptedProvider::new([text_reply("one", bugloop_llm::Usage::default())])
            .with_capabilities(recorded),
    );
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("run.jsonl");
    let recorder = Recorder::new(live, &cassette).unwrap();
    recorder.chat(&user_request("first"), None).await.unwrap();
    let replay = ReplayProvider::open(&cassette).unwrap();
    assert_eq!(replay.capabilities(), recorded);

    let text = std::fs::read_to_string(&cassette).unwrap();
    let mut old: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    old.as_object_mut().unwrap().remove("capabilities");
    std::fs::write(&cassette, format!("{old}\n")).unwrap();
    let replay = ReplayProvider::open(&cassette).unwrap();
    assert!(replay.capabilities().tools && !replay.capabilities().cache_at_breakpoints);
}
