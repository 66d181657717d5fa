//! A fix through the App server while people write in the finding's thread, as GitHub has it: a
//! word from someone who may settle the finding (the change's author, a writer) written while
//! the fix ran keeps the finding open; an outsider's (read access) does not, so no outsider can
//! keep a fixed finding open by talking in its thread.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use bugloop_queue::JobState;
use serde_json::{Value, json};

use crate::worker::{enqueue_fix_all, setup};

/// An OpenAI-compatible model on a local port: its first answer is the fix's edit, given after
/// `login` replied `said` in the thread of review comment `thread` through GitHub's API (with
/// `token`, as that person would); every later answer is the fix's summary.
fn model_that_lets_someone_speak(api: String, token: &str, thread: u64, said: &str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (token, said) = (token.to_owned(), said.to_owned());
    std::thread::spawn(move || {
        let mut first = true;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let request = read_request(&mut stream);
            let answer = if first {
                first = false;
                reply_through_the_api(&api, &token, thread, &said);
                let edit = json!({"path": "lib.rs", "old_text": "v[v.len()]", "new_text": "v[v.len() - 1]"});
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call-1", "type": "function",
                    "function": {"name": "edit_file", "arguments": edit.to_string()}}]})
            } else {
                json!({"role": "assistant", "content": "Indexed the last element."})
            };
            let body = if request["stream"] == true {
                streamed(&answer)
            } else {
                let reason = if answer["tool_calls"].is_null() {
                    "stop"
                } else {
                    "tool_calls"
                };
                json!({"id": "c", "model": "m", "choices": [{"index": 0, "message": answer, "finish_reason": reason}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
                .to_string()
            };
            let kind = if request["stream"] == true {
                "text/event-stream"
            } else {
                "application/json"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// A request's JSON body.
fn read_request(stream: &mut std::net::TcpStream) -> Value {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

/// `answer` as server-sent events: the message in one chunk, its end, the usage.
fn streamed(answer: &Value) -> String {
    let mut delta = answer.clone();
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
    }
    let reason = if answer["tool_calls"].is_null() {
        "stop"
    } else {
        "tool_calls"
    };
    [
        json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}),
    ]
    .iter()
    .map(|chunk| format!("data: {chunk}\n\n"))
    .chain(["data: [DONE]\n\n".to_owned()])
    .collect()
}

/// A reply in a review thread, written through the simulator's REST API with `token`.
fn reply_through_the_api(api: &str, token: &str, thread: u64, said: &str) {
    let url = format!("{api}/repos/acme/widgets/pulls/7/comments/{thread}/replies");
    let (token, said) = (token.to_owned(), said.to_owned());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let status = runtime.block_on(async {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .json(&json!({"body": said}))
                .send()
                .await
                .unwrap()
                .status()
        });
        assert!(status.is_success(), "{status}");
    })
    .join()
    .unwrap();
}

/// The fix of the reviewed off-by-one, with `login` (`role` on the repository) replying in its
/// thread while the fix runs: whether the finding's thread ends resolved, and the fix pushed.
async fn fixed_while(login: &str, role: &str) -> bool {
    let mut s = setup(Duration::from_secs(60)).await;
    let reviewed = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(reviewed.state, Some(JobState::Done), "{reviewed:?}");
    let root = s.fixture.sim.review_comments(7)[0].id;
    s.fixture.sim.set_permission(login, role);
    let token = format!("token-of-{login}");
    s.fixture.sim.add_token(&token, login);
    let port = model_that_lets_someone_speak(
        s.fixture.sim.api_url(),
        &token,
        root,
        "Wait: callers rely on this index, don't change it.",
    );
    let config = s.settings.config.file.clone().unwrap();
    std::fs::write(
        &config,
        format!("model:\n  max_retries: 0\n  providers:\n    stub:\n      base_url: http://127.0.0.1:{port}/v1\n"),
    )
    .unwrap();
    s.settings.model = Some("stub:any".to_owned());
    enqueue_fix_all(&s).await;
    let before = s.fixture.origin_head();
    let run = crate::run_one(&s.queue, &s.settings).await;
    assert_eq!(run.state, Some(JobState::Done), "{run:?}");
    assert_ne!(
        s.fixture.origin_head(),
        before,
        "the fix is pushed: {run:?}"
    );
    let spoke = s.fixture.sim.review_comments(7);
    assert!(
        spoke
            .iter()
            .any(|c| c.author == login && c.in_reply_to == Some(root)),
        "{spoke:#?}"
    );
    let threads = s.fixture.sim.threads(7);
    threads.iter().find(|t| t.root == root).unwrap().resolved
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outsiders_word_during_a_fix_does_not_keep_its_finding_open() {
    assert!(fixed_while("mallory", "read").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authors_word_during_a_fix_keeps_its_finding_open() {
    assert!(!fixed_while("alice", "write").await);
}
