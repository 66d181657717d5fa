//! bugloop's GitHub App server, a front end beside the CLI's Action. It receives webhooks (the
//! signature checked on the raw body first), decides what each delivery asks for, records it in
//! the durable job queue, and runs the queued jobs in workers through the application layer's
//! one GitHub event path (`bugloop_app::run_github_event`), each in a clone of its own.
//!
//! Invariant: this is the only crate that knows HTTP serving, the job queue and Prometheus; the
//! application layer below it knows jobs, not how they arrive.
//!
//! **Invariant:** it is the only crate that knows HTTP serving, the job queue (`bugloop-queue`) and
//! Prometheus (the tidy test checks that no other crate depends on the queue, hyper or tower; the
//! benchmark's recorder and the simulator serve HTTP on 127.0.0.1 for measurements and tests only);
//! it runs no loop itself and wires no forge or model: jobs go through `bugloop-app`.

mod body;
mod error;
pub mod intake_permissions;
pub mod metrics;
pub mod outsider_intake;
pub mod report_endpoint;
pub mod sentry_endpoint;
pub mod serve;
pub mod server_config;
mod status_page;
mod store_location;
pub mod worker;
mod workers;

pub use self::error::ServerError;
/// What a deployment and the tools that play GitHub name: the events the App subscribes to,
/// the signature GitHub puts on a delivery, the App's credentials (its id and private key).
pub use bugloop_github::AppCredentials;
pub use bugloop_webhooks::{APP_EVENTS, signature};
