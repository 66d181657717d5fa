//! A provider layer states only what it changes: its name and capabilities are the inner
//! provider's, and its own chat is the one called.

use async_trait::async_trait;
use bugloop_llm::scripted::{ScriptedProvider, text_reply};
use bugloop_llm::{Capabilities, ChatRequest, ChatResult, Provider, ProviderLayer, Sink, Usage};

use crate::support::user_request;

/// Answers in capitals.
#[derive(Debug)]
struct Shouting {
    inner: ScriptedProvider,
}

#[async_trait]
impl ProviderLayer for Shouting {
    fn inner(&self) -> &dyn Provider {
        &self.inner
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let mut response = self.inner.chat(request, sink).await?;
        response.message.content = response.message.content.to_uppercase();
        Ok(response)
    }
}

#[tokio::test]
async fn a_layer_is_its_inner_provider_but_for_its_chats() {
    let capabilities = Capabilities {
        tools: true,
        json_schema: true,
        streaming: false,
        context_tokens: Some(4_096),
        cache_at_breakpoints: false,
    };
    let inner = ScriptedProvider::new([text_reply("quiet", Usage::default())])
        .with_capabilities(capabilities);
    let layer = Shouting { inner };
    assert_eq!(Provider::name(&layer), "scripted");
    assert_eq!(Provider::capabilities(&layer), capabilities);
    let response = Provider::chat(&layer, &user_request("hi"), None)
        .await
        .unwrap();
    assert_eq!(response.message.content, "QUIET");
    assert_eq!(layer.inner.requests().len(), 1);
}
