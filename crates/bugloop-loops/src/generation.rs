//! Progress of a model that generates on this machine: a local model's answer takes seconds to
//! a minute, and a person watching the terminal should see it move. [`watched`] wraps such a
//! provider so each call streams, counting what arrives, and reports the tokens generated and
//! their rate to the job's [`Progress`] about twice a second. Hosted models are not wrapped: their
//! wait is the network's, and streaming would change the requests they are sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bugloop_llm::{ChatRequest, ChatResult, Provider, ProviderLayer, Sink, StreamEvent};

use crate::{Progress, ProgressEvent};

/// How often the count is reported at most.
const EVERY: Duration = Duration::from_millis(500);

/// `provider`, reporting its generation to `progress` when it runs on this machine (its context
/// is small enough to plan around: the embedded model).
pub fn watched(provider: Arc<dyn Provider>, progress: Arc<dyn Progress>) -> Arc<dyn Provider> {
    if provider.capabilities().context_tokens.is_some() {
        Arc::new(Watched {
            inner: provider,
            progress,
        })
    } else {
        provider
    }
}

#[derive(Debug)]
struct Watched {
    inner: Arc<dyn Provider>,
    progress: Arc<dyn Progress>,
}

/// What one call has generated so far.
struct Count {
    tokens: u64,
    first: Option<Instant>,
    said: Option<Instant>,
}

#[async_trait]
impl ProviderLayer for Watched {
    fn inner(&self) -> &dyn Provider {
        &*self.inner
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        // The caller's sink only gets the stream it asked for.
        let forward = sink.filter(|_| request.stream);
        let mut request = request.clone();
        request.stream = true;
        let count = Mutex::new(Count {
            tokens: 0,
            first: None,
            said: None,
        });
        let report = |count: &Count, now: Instant| {
            let seconds = count
                .first
                .map_or(0.0, |first| now.duration_since(first).as_secs_f64());
            let per_second = if seconds > 0.0 {
                (count.tokens as f64 / seconds).round() as u32
            } else {
                0
            };
            self.progress.event(ProgressEvent::Generating {
                tokens: count.tokens,
                per_second,
            });
        };
        let counting = |event: StreamEvent| {
            if let StreamEvent::Text(_) = &event
                && let Ok(mut count) = count.lock()
            {
                let now = Instant::now();
                count.tokens += 1;
                count.first.get_or_insert(now);
                if count
                    .said
                    .is_none_or(|said| now.duration_since(said) >= EVERY)
                {
                    count.said = Some(now);
                    report(&count, now);
                }
            }
            if let Some(forward) = forward {
                forward(event);
            }
        };
        let answer = self.inner.chat(&request, Some(&counting)).await;
        // The whole answer's count and rate.
        if let Ok(count) = count.lock()
            && count.tokens > 1
        {
            report(&count, Instant::now());
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use bugloop_llm::scripted::{ScriptedProvider, text_reply};
    use bugloop_llm::{Capabilities, Usage};

    #[derive(Debug, Default)]
    struct Seen(Mutex<Vec<ProgressEvent>>);

    impl Progress for Seen {
        fn event(&self, event: ProgressEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    #[tokio::test]
    async fn a_local_model_reports_what_it_generates_and_a_hosted_one_is_left_alone() {
        let seen = Arc::new(Seen::default());
        let local = ScriptedProvider::new([text_reply("a long answer", Usage::default())])
            .with_capabilities(Capabilities {
                streaming: true,
                context_tokens: Some(4096),
                ..Capabilities::default()
            });
        let provider = watched(Arc::new(local), seen.clone());
        let answer = provider.chat(&ChatRequest::default(), None).await.unwrap();
        assert_eq!(answer.message.content, "a long answer");
        let events = seen.0.lock().unwrap().clone();
        assert!(
            matches!(
                events.first(),
                Some(ProgressEvent::Generating { tokens: 1, .. })
            ),
            "{events:?}"
        );
        let hosted: Arc<dyn Provider> = Arc::new(ScriptedProvider::new([]));
        let same = watched(hosted.clone(), seen);
        assert!(Arc::ptr_eq(&hosted, &same));
    }
}
