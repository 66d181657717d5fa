//! Shared helpers: HTTP settings for fast tests, SSE bodies, responses mounted on the server, a
//! one-message request, and reading what the server received.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bugloop_llm::{ChatRequest, HttpSettings, Message, StreamEvent};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

pub fn fast_settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(2),
        max_retries: 2,
        base_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
    }
}

/// `data:` events (each with an optional `event:` line) as one SSE body.
pub fn sse(events: &[(Option<&str>, serde_json::Value)]) -> String {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body
}

/// A 200 response with `body` as JSON.
pub fn ok_json(body: serde_json::Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

/// Answers the server's next POSTs (`times` of them; `None`: every one) with `response`.
pub async fn mount(server: &MockServer, response: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST")).respond_with(response);
    match times {
        Some(times) => mock.up_to_n_times(times).mount(server).await,
        None => mock.mount(server).await,
    }
}

/// A server that answers its first POSTs with `first` (each once, in order), then every later
/// one with `then`: a failure or a bad answer before the one that settles it.
pub async fn server_answering(
    first: impl IntoIterator<Item = ResponseTemplate>,
    then: ResponseTemplate,
) -> MockServer {
    let server = MockServer::start().await;
    for response in first {
        mount(&server, response, Some(1)).await;
    }
    mount(&server, then, None).await;
    server
}

/// [`mount`] with `body` as an event stream.
pub async fn mount_stream(server: &MockServer, body: impl Into<String>, times: Option<u64>) {
    let response = ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body.into());
    mount(server, response, times).await;
}

/// A request of one user message.
pub fn user_request(text: impl Into<String>) -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user(text)],
        ..ChatRequest::default()
    }
}

/// The JSON bodies the server received, in order.
pub async fn bodies(server: &MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// A sink that collects what it is given.
#[derive(Clone, Default)]
pub struct Collected(pub Arc<Mutex<Vec<StreamEvent>>>);

impl Collected {
    pub fn sink(&self) -> impl Fn(StreamEvent) + Send + Sync + use<> {
        let events = Arc::clone(&self.0);
        move |event| events.lock().unwrap().push(event)
    }

    pub fn text(&self) -> String {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn events(&self) -> Vec<StreamEvent> {
        self.0.lock().unwrap().clone()
    }
}
