//! bugloop-llm's integration tests. Each wire protocol is exercised against a local HTTP server
//! (wiremock) that speaks it; the requests the client sends are asserted as well as the answers it
//! reads. Budgets run against the scripted model; replay records against the local server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "llm/anthropic.rs"]
mod anthropic;
#[path = "llm/budget.rs"]
mod budget;
#[path = "llm/connect.rs"]
mod connect;
#[cfg(feature = "local")]
#[path = "llm/layer.rs"]
mod layer;
#[path = "llm/local.rs"]
mod local;
#[path = "llm/openai.rs"]
mod openai;
#[path = "llm/replay.rs"]
mod replay;
#[path = "llm/support.rs"]
mod support;
