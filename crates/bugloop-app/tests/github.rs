//! bugloop on a GitHub pull request, end to end: the application layer's event entry against the
//! GitHub simulator (a real HTTP server on 127.0.0.1), real git repositories and scripted models.
//! Every flow is checked for what it leaves on the pull request: each finding exactly once, none
//! lost, after faults and re-runs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "github/job.rs"]
mod job;

#[path = "github/support.rs"]
mod support;

#[path = "github/review.rs"]
mod review;

#[path = "github/trust.rs"]
mod trust;

#[path = "github/comments.rs"]
mod comments;
