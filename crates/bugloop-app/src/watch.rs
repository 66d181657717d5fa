//! `bugloop watch`'s gate between the reports found in a log and the issues: the same error
//! (its fingerprint) is filed or counted once per window, its repeats within the window only
//! tallied, and at most so many reports a minute reach the store, so a burst of one crash (or
//! a log made to flood) costs a count, not thousands of writes.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{App, AppError, ErrorReportOutcome};

/// How much of a log's errors reaches the issues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchLimits {
    /// A fingerprint filed or counted is not counted again for this long.
    pub window: Duration,
    /// Reports filed or counted in any minute, over every fingerprint.
    pub per_minute: usize,
}

impl Default for WatchLimits {
    fn default() -> Self {
        WatchLimits {
            window: Duration::from_secs(60),
            per_minute: 20,
        }
    }
}

/// What became of one report found in the log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum WatchEvent {
    /// Filed as a new issue, or counted on the issue of its fingerprint.
    Reported(Box<ErrorReportOutcome>),
    /// The same error within the window: tallied, not counted on the issue.
    Repeat { fingerprint: String, repeats: u64 },
    /// Over the rate: dropped (the count so far).
    RateLimited { dropped: u64 },
}

/// The gate's memory over one watch.
#[derive(Debug)]
pub struct Watch<'a> {
    app: &'a App,
    limits: WatchLimits,
    /// When each fingerprint was last reported, and its repeats since.
    seen: HashMap<String, (Instant, u64)>,
    /// When the reports of the last minute were sent.
    sent: VecDeque<Instant>,
    dropped: u64,
    /// Warnings of the reports (a regression half handled, say).
    pub warnings: Vec<String>,
}

impl App {
    /// A watch over this repository's issues.
    pub fn watch(&self, limits: WatchLimits) -> Watch<'_> {
        Watch {
            app: self,
            limits,
            seen: HashMap::new(),
            sent: VecDeque::new(),
            dropped: 0,
            warnings: Vec::new(),
        }
    }
}

impl Watch<'_> {
    /// Offers one report found at `now`.
    pub async fn offer(&mut self, report: &str, now: Instant) -> Result<WatchEvent, AppError> {
        let fingerprint = self.app.error_fingerprint(report.as_bytes())?;
        if let Some((at, repeats)) = self.seen.get_mut(&fingerprint)
            && now.duration_since(*at) < self.limits.window
        {
            *repeats += 1;
            return Ok(WatchEvent::Repeat {
                fingerprint,
                repeats: *repeats,
            });
        }
        while self
            .sent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(60))
        {
            self.sent.pop_front();
        }
        if self.sent.len() >= self.limits.per_minute {
            self.dropped += 1;
            return Ok(WatchEvent::RateLimited {
                dropped: self.dropped,
            });
        }
        let outcome = self.app.file_error_report(report.as_bytes()).await?;
        self.warnings.extend(outcome.warnings);
        self.sent.push_back(now);
        // Errors not seen within the window are forgotten: a long watch of many errors keeps
        // only the recent ones.
        if self.seen.len() >= 1024 {
            let window = self.limits.window;
            self.seen
                .retain(|_, (at, _)| now.duration_since(*at) < window);
        }
        self.seen.insert(fingerprint, (now, 0));
        Ok(WatchEvent::Reported(Box::new(outcome.report)))
    }

    /// Reports dropped over the rate so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}
