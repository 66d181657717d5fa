//! `bench latency`: the wait a user feels with a real model. The benchmark's reviewer
//! ([`super::recorder`]) answers each request after a delay (a fixed time per request, and
//! optionally per input and output token); a review of the change then takes as long as its
//! sequential round trips make it, and the figures say how long: the whole review, until the
//! first finding came back from the model, and the longest chain of requests one after another.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bugloop_git::{Git, Selection};
use serde::Serialize;

use super::recorder::{Latency, Recorder, RequestTiming};
use super::setup_error;
use super::tokens::{TokensSource, files_reviewed, open_change, review};
use bugloop_app::AppError;
use bugloop_app::types::{Progress, ProgressEvent};

/// A review of one change with a model that takes time to answer.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyBench {
    pub change: String,
    /// `one pass per reply` or `every pass asked for, in one reply`.
    pub reviewer: &'static str,
    pub latency: Latency,
    pub files: usize,
    pub files_reviewed: usize,
    pub parts: usize,
    pub requests: usize,
    /// The longest chain of requests each sent after the one before it was answered: what a
    /// review's wall time is made of with a slow model.
    pub round_trips: usize,
    pub wall_seconds: f64,
    /// Until the model's first answer that reported a finding came back, from the start.
    pub first_finding_seconds: Option<f64>,
    /// Until the first finding was published (as its part ended, in a review of several
    /// parts), from the start; none when findings are only published at the end.
    pub first_published_seconds: Option<f64>,
    pub findings: usize,
    pub timings: Vec<RequestTiming>,
    pub errors: Vec<String>,
}

/// Reviews the change from `source` once with the benchmark's reviewer answering after
/// `latency`; it runs one pass per reply with `one_pass_per_turn`.
pub async fn latency(
    source: &TokensSource,
    one_pass_per_turn: bool,
    latency: Latency,
) -> Result<LatencyBench, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let recorder = Recorder::start_with(one_pass_per_turn, latency).await?;
    let published = Arc::new(FirstPublished::default());
    let (app, repo) = open_change(source, dir.path(), &recorder.url, published.clone()).await?;
    let change = Git::open(&repo)?.select(&Selection::Branch)?;
    let files = bugloop_diff::parse(&change.diff).files.len();
    recorder.take_timings();
    let started = Instant::now();
    let report = review(&app).await?;
    let wall_seconds = started.elapsed().as_secs_f64();
    let first_published_seconds = published
        .at
        .lock()
        .ok()
        .and_then(|at| *at)
        .map(|at| at.duration_since(started).as_secs_f64());
    let timings = recorder.take_timings();
    Ok(LatencyBench {
        change: format!("{} ({})", source.path().display(), change.description),
        reviewer: if one_pass_per_turn {
            "one pass per reply"
        } else {
            "every pass asked for, in one reply"
        },
        latency,
        files,
        files_reviewed: files_reviewed(&report),
        parts: report.usage.sessions,
        requests: timings.len(),
        round_trips: round_trips(&timings),
        wall_seconds,
        first_finding_seconds: timings
            .iter()
            .filter(|t| t.reported_finding)
            .map(|t| t.answered_ms / 1000.0)
            .min_by(f64::total_cmp),
        first_published_seconds,
        findings: report.tracked.len(),
        timings,
        errors: report.errors,
    })
}

/// Notes when the first part's findings were published.
#[derive(Debug, Default)]
struct FirstPublished {
    at: Mutex<Option<Instant>>,
}

impl Progress for FirstPublished {
    fn event(&self, event: ProgressEvent) {
        if let ProgressEvent::PartPublished { .. } = event
            && let Ok(mut at) = self.at.lock()
        {
            at.get_or_insert_with(Instant::now);
        }
    }
}

/// What another reviewer's run cost on the benchmark's server ([`serve`]).
#[derive(Debug, Clone, Serialize)]
pub struct ServedBench {
    pub latency: Latency,
    pub requests: usize,
    pub round_trips: usize,
    /// From the first request's coming to the last one's answer.
    pub busy_seconds: f64,
    pub timings: Vec<RequestTiming>,
}

/// Serves the benchmark's reviewer with `latency` until Ctrl-C, for another tool (PR-Agent) to
/// be measured on the same server: `announce` is given its OpenAI-compatible base URL.
pub async fn serve(
    one_pass_per_turn: bool,
    latency: Latency,
    announce: impl FnOnce(&str),
) -> Result<ServedBench, AppError> {
    let recorder = Recorder::start_with(one_pass_per_turn, latency).await?;
    announce(&recorder.url);
    tokio::signal::ctrl_c().await.map_err(setup_error)?;
    let timings = recorder.take_timings();
    let first = timings.iter().map(|t| t.came_ms).min_by(f64::total_cmp);
    let last = timings.iter().map(|t| t.answered_ms).max_by(f64::total_cmp);
    Ok(ServedBench {
        latency,
        requests: timings.len(),
        round_trips: round_trips(&timings),
        busy_seconds: first.zip(last).map_or(0.0, |(a, b)| (b - a) / 1000.0),
        timings,
    })
}

/// The longest chain of requests in which each came after the one before it was answered.
pub(crate) fn round_trips(timings: &[RequestTiming]) -> usize {
    let mut sorted = timings.to_vec();
    sorted.sort_by(|a, b| a.came_ms.total_cmp(&b.came_ms));
    let mut chain: Vec<usize> = Vec::with_capacity(sorted.len());
    for (index, request) in sorted.iter().enumerate() {
        let before = sorted[..index]
            .iter()
            .zip(&chain)
            .filter(|(earlier, _)| earlier.answered_ms <= request.came_ms)
            .map(|(_, length)| *length)
            .max()
            .unwrap_or(0);
        chain.push(before + 1);
    }
    chain.into_iter().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(came_ms: f64, answered_ms: f64) -> RequestTiming {
        RequestTiming {
            came_ms,
            answered_ms,
            reported_finding: false,
        }
    }

    #[test]
    fn requests_at_once_are_one_round_trip_and_one_after_another_are_each_one() {
        assert_eq!(round_trips(&[]), 0);
        // Two parts at once, each: one request, then three at once.
        let parts = [
            at(0.0, 100.0),
            at(1.0, 101.0),
            at(100.5, 200.0),
            at(100.6, 200.0),
            at(100.7, 201.0),
            at(101.5, 202.0),
            at(101.6, 202.0),
            at(101.7, 203.0),
        ];
        assert_eq!(round_trips(&parts), 2);
        let one_by_one = [
            at(0.0, 10.0),
            at(10.0, 20.0),
            at(20.5, 30.0),
            at(31.0, 40.0),
        ];
        assert_eq!(round_trips(&one_by_one), 4);
    }
}
