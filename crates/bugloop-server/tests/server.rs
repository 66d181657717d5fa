//! The App server's integration tests, one binary (each binary links the server again): the
//! webhook endpoint (`serve`), the worker (`worker`), the solve pipeline on GitHub end to end
//! (`solve_github`), and the status page in a browser (`status_page`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod serve;
mod solve_github;
mod status_page;
mod worker;

use bugloop_queue::Queue;
use bugloop_server::worker::{JobRun, Stop, WorkerSettings, run_next};

/// Claims and runs the next job, which must be there.
async fn run_one(queue: &Queue, settings: &WorkerSettings) -> JobRun {
    run_next(queue, settings, &Stop::never())
        .await
        .unwrap()
        .expect("a job to run")
}
