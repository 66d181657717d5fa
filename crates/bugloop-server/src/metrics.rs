//! The App server's figures for Prometheus (`GET /metrics`): deliveries by outcome, jobs run by
//! this process (how long they waited and ran, how they ended), the model's tokens and cost, and
//! the rate-limit headroom GitHub last reported per installation. Jobs in the queue by kind and
//! state are read from the queue at each scrape, so they cover every process sharing it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bugloop_github::RateLimit;
use bugloop_queue::{JobKind, JobState};

/// Deliveries by how they were answered.
#[derive(Debug, Default)]
pub struct DeliveryCounts {
    /// 202 with a new job.
    pub queued: AtomicU64,
    /// 202 for a delivery seen before.
    pub redelivered: AtomicU64,
    /// 204: no job (an event no loop handles, a bot, no mention).
    pub ignored: AtomicU64,
    /// 401: the signature did not verify.
    pub refused: AtomicU64,
    /// 400: not a delivery bugloop can read.
    pub invalid: AtomicU64,
    /// 503: the queue could not record it.
    pub failed: AtomicU64,
}

/// Upper bounds of the duration histograms' buckets, in seconds.
const BUCKETS: [f64; 10] = [0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0];

#[derive(Debug, Default, Clone)]
struct Histogram {
    /// Observations at or under each bucket's bound (not cumulative; summed when shown).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        if let Some(at) = BUCKETS.iter().position(|bound| seconds <= *bound) {
            self.buckets[at] += 1;
        }
        self.count += 1;
        self.sum += seconds;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(self.buckets) {
            cumulative += count;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", self.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// What the model spent on one job.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Default)]
struct Figures {
    /// By kind: from queued to started.
    waited: BTreeMap<&'static str, Histogram>,
    /// By kind and how the attempt ended.
    ran: BTreeMap<(&'static str, &'static str), Histogram>,
    /// By kind: input, cached input, output.
    tokens: BTreeMap<(&'static str, &'static str), u64>,
    cost_usd: BTreeMap<&'static str, f64>,
    /// By installation and resource.
    rate_limits: BTreeMap<(u64, String), RateLimit>,
}

/// Everything `/metrics` shows of this process.
#[derive(Debug, Default)]
pub struct ServerMetrics {
    pub deliveries: DeliveryCounts,
    figures: Mutex<Figures>,
}

/// How an attempt at a job ended, as the metrics name it.
pub fn ending(state: Option<JobState>) -> &'static str {
    match state {
        Some(JobState::Done) => "done",
        Some(JobState::Queued) => "retry",
        Some(JobState::Dead) => "dead",
        Some(JobState::Running | JobState::Superseded) | None => "lease_lost",
    }
}

impl ServerMetrics {
    fn figures(&self) -> std::sync::MutexGuard<'_, Figures> {
        // A panic elsewhere while holding the lock leaves figures that are still worth showing.
        self.figures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One attempt at a job: how long it waited in the queue and ran, how it ended, what the
    /// model spent.
    pub fn job(
        &self,
        kind: JobKind,
        waited: Duration,
        ran: Duration,
        ended: &'static str,
        spent: Spent,
    ) {
        let kind = kind.name();
        let mut figures = self.figures();
        figures
            .waited
            .entry(kind)
            .or_default()
            .observe(waited.as_secs_f64());
        figures
            .ran
            .entry((kind, ended))
            .or_default()
            .observe(ran.as_secs_f64());
        for (direction, tokens) in [
            ("input", spent.input_tokens),
            ("cached_input", spent.cached_input_tokens),
            ("output", spent.output_tokens),
        ] {
            *figures.tokens.entry((kind, direction)).or_default() += tokens;
        }
        if let Some(cost) = spent.cost_usd {
            *figures.cost_usd.entry(kind).or_default() += cost;
        }
    }

    /// GitHub's latest word on an installation's rate limit for `resource`.
    pub fn rate_limit(&self, installation: u64, resource: &str, rate: RateLimit) {
        self.figures()
            .rate_limits
            .insert((installation, resource.to_owned()), rate);
    }

    /// Prometheus' text format; `queue` is the queue's jobs by kind and state.
    pub fn render(&self, queue: &[(JobKind, JobState, i64)]) -> String {
        let mut out = String::new();
        self.render_deliveries(&mut out, queue);
        let figures = self.figures();
        render_jobs(&mut out, &figures);
        render_rate_limits(&mut out, &figures);
        out
    }

    /// Deliveries by outcome, and the queue's jobs by kind and state.
    fn render_deliveries(&self, out: &mut String, queue: &[(JobKind, JobState, i64)]) {
        family(
            out,
            "bugloop_deliveries_total",
            "counter",
            "Webhook deliveries since the server started, by outcome.",
        );
        let d = &self.deliveries;
        for (outcome, count) in [
            ("queued", &d.queued),
            ("redelivered", &d.redelivered),
            ("ignored", &d.ignored),
            ("refused", &d.refused),
            ("invalid", &d.invalid),
            ("failed", &d.failed),
        ] {
            let _ = writeln!(
                out,
                "bugloop_deliveries_total{{outcome=\"{outcome}\"}} {}",
                count.load(Ordering::Relaxed)
            );
        }
        family(
            out,
            "bugloop_jobs",
            "gauge",
            "Jobs in the queue (every process sharing it), by kind and state.",
        );
        for (kind, state, count) in queue {
            let _ = writeln!(
                out,
                "bugloop_jobs{{kind=\"{}\",state=\"{}\"}} {count}",
                kind.name(),
                state.as_str()
            );
        }
    }
}

/// This process's jobs: how long they waited and ran, the tokens and money they spent.
fn render_jobs(out: &mut String, figures: &Figures) {
    family(
        out,
        "bugloop_job_wait_seconds",
        "histogram",
        "How long jobs this process started waited in the queue.",
    );
    for (kind, histogram) in &figures.waited {
        histogram.render(out, "bugloop_job_wait_seconds", &format!("kind=\"{kind}\""));
    }
    family(
        out,
        "bugloop_job_run_seconds",
        "histogram",
        "How long this process's attempts at jobs ran, by how they ended.",
    );
    for ((kind, ended), histogram) in &figures.ran {
        histogram.render(
            out,
            "bugloop_job_run_seconds",
            &format!("kind=\"{kind}\",outcome=\"{ended}\""),
        );
    }
    family(
        out,
        "bugloop_model_tokens_total",
        "counter",
        "Model tokens spent by this process's jobs.",
    );
    for ((kind, direction), tokens) in &figures.tokens {
        let _ = writeln!(
            out,
            "bugloop_model_tokens_total{{kind=\"{kind}\",direction=\"{direction}\"}} {tokens}"
        );
    }
    family(
        out,
        "bugloop_model_cost_usd_total",
        "counter",
        "What this process's jobs cost, for priced models.",
    );
    for (kind, cost) in &figures.cost_usd {
        let _ = writeln!(
            out,
            "bugloop_model_cost_usd_total{{kind=\"{kind}\"}} {cost}"
        );
    }
}

/// GitHub's rate limits, as last reported, per installation and resource.
fn render_rate_limits(out: &mut String, figures: &Figures) {
    type Gauge = (&'static str, &'static str, fn(&RateLimit) -> u64);
    let gauges: [Gauge; 2] = [
        (
            "bugloop_github_rate_limit_remaining",
            "Requests left in GitHub's window, as last reported.",
            |rate| rate.remaining,
        ),
        (
            "bugloop_github_rate_limit_limit",
            "The size of GitHub's window, as last reported.",
            |rate| rate.limit,
        ),
    ];
    for (name, help, value) in gauges {
        family(out, name, "gauge", help);
        for ((installation, resource), rate) in &figures.rate_limits {
            let _ = writeln!(
                out,
                "{name}{{installation=\"{installation}\",resource=\"{}\"}} {}",
                label(resource),
                value(rate)
            );
        }
    }
}

/// The `# HELP` and `# TYPE` lines that open a metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value as Prometheus' text format wants it (the resource name comes from a header).
fn label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn figures_render_as_prometheus_text() {
        let metrics = ServerMetrics::default();
        metrics.deliveries.queued.fetch_add(3, Ordering::Relaxed);
        metrics.job(
            JobKind::Review,
            Duration::from_millis(300),
            Duration::from_secs(20),
            "done",
            Spent {
                input_tokens: 1200,
                cached_input_tokens: 200,
                output_tokens: 80,
                cost_usd: Some(0.25),
            },
        );
        metrics.job(
            JobKind::Review,
            Duration::from_secs(2),
            Duration::from_secs(4000),
            "retry",
            Spent::default(),
        );
        metrics.rate_limit(
            42,
            "core\"\n",
            RateLimit {
                limit: 5000,
                remaining: 4990,
                reset: 1,
            },
        );
        let text = metrics.render(&[(JobKind::Review, JobState::Queued, 2)]);
        for line in [
            "bugloop_deliveries_total{outcome=\"queued\"} 3",
            "bugloop_jobs{kind=\"review\",state=\"queued\"} 2",
            "bugloop_job_wait_seconds_bucket{kind=\"review\",le=\"0.5\"} 1",
            "bugloop_job_wait_seconds_bucket{kind=\"review\",le=\"5\"} 2",
            "bugloop_job_wait_seconds_count{kind=\"review\"} 2",
            "bugloop_job_run_seconds_bucket{kind=\"review\",outcome=\"done\",le=\"15\"} 0",
            "bugloop_job_run_seconds_bucket{kind=\"review\",outcome=\"done\",le=\"60\"} 1",
            // Over the last bound: only in +Inf.
            "bugloop_job_run_seconds_bucket{kind=\"review\",outcome=\"retry\",le=\"3600\"} 0",
            "bugloop_job_run_seconds_bucket{kind=\"review\",outcome=\"retry\",le=\"+Inf\"} 1",
            "bugloop_model_tokens_total{kind=\"review\",direction=\"input\"} 1200",
            "bugloop_model_tokens_total{kind=\"review\",direction=\"output\"} 80",
            "bugloop_model_cost_usd_total{kind=\"review\"} 0.25",
            "bugloop_github_rate_limit_remaining{installation=\"42\",resource=\"core\\\"\\n\"} 4990",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
