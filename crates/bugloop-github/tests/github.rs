//! The GitHub client's integration tests, one binary: acting as an App (`app`), the client
//! against a local server (`client`), against GitHub's own REST description (`contract`), and
//! its GraphQL documents against GitHub's schema (`graphql_schema`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod app;
mod client;
mod contract;
mod graphql_schema;
