//! `bench prove`: what proving findings adds to a review. A Python repository whose change has
//! an off-by-one in each of `findings` functions is reviewed with an instant scripted model, with
//! and without `review.prove` (alternating, `runs` times each); in the proving runs the model
//! writes a failing test for each finding and confirms the failure, and bugloop runs each test in
//! the sandbox. Reported: the added wall time per proven finding, how much of it was the tests'
//! own runs and how much bugloop's (task trees, reading the test, the agent's tool calls, the
//! sandbox's set-up), and the tokens a proof adds and their share of the review's and the
//! budget's.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bugloop_llm::budget::estimate_input_tokens;
use bugloop_llm::scripted::{text_reply, tool_reply};
use bugloop_llm::{Capabilities, ChatRequest, ChatResult, Provider, Role, Sink, Usage};
use bugloop_report::review::{ProofStatus, ReviewReport};
use serde::Serialize;
use serde_json::json;

use super::models::TOOLS_ONLY;
use super::review::{git, review_once};
use super::setup_error;
use bugloop_app::{AppError, Models};

/// The figures of `bench prove` (medians over the runs).
#[derive(Debug, Clone, Serialize)]
pub struct ProveBench {
    pub findings: usize,
    pub runs: usize,
    /// Findings proven in each proving run.
    pub proven: usize,
    pub review_seconds_without: f64,
    pub review_seconds_with: f64,
    pub added_seconds_per_proof: f64,
    /// bugloop's run of each test (the interpreter's start and the test itself).
    pub test_seconds_per_proof: f64,
    /// What is left: bugloop's own time per proof, with a model that answers at once.
    pub own_seconds_per_proof: f64,
    pub model_calls_per_proof: f64,
    pub input_tokens_per_proof: f64,
    pub output_tokens_per_proof: f64,
    /// The proofs' share of the proving review's input tokens.
    pub share_of_review_input: f64,
    /// One proof's input tokens against `budgets.max_input_tokens`.
    pub share_of_budget_per_proof: f64,
}

fn function(k: usize, off_by_one: bool) -> String {
    let end = if off_by_one { " + 1" } else { "" };
    format!(
        "def total_{k}(xs):\n    total = 0\n    for i in range(len(xs){end}):\n        total += xs[i]\n    return total\n\n\n"
    )
}

fn module(findings: usize, off_by_one: bool) -> String {
    (0..findings).map(|k| function(k, off_by_one)).collect()
}

/// The line of `total_<k>`'s loop in the module.
fn loop_line(k: usize) -> u32 {
    (k * 7 + 3) as u32
}

/// An instant model for the three tasks of a proving review: the review's passes (reporting one
/// finding per function), each proof's agent (writes the test, then names it) and each
/// confirmation (the failure shows the problem).
#[derive(Debug)]
struct ProvingModel {
    findings: usize,
}

impl ProvingModel {
    fn usage(request: &ChatRequest) -> Usage {
        Usage {
            input_tokens: estimate_input_tokens(request),
            output_tokens: 60,
            cached_input_tokens: 0,
        }
    }
}

#[async_trait]
impl Provider for ProvingModel {
    fn name(&self) -> &str {
        "bench:proving"
    }

    fn capabilities(&self) -> Capabilities {
        TOOLS_ONLY
    }

    async fn chat(&self, request: &ChatRequest, _: Sink<'_>) -> ChatResult {
        let usage = Self::usage(request);
        let first = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or_default();
        let system = request.system.as_deref().unwrap_or_default();
        let mut reply = if system.starts_with("You decide whether a failing test shows") {
            text_reply(
                json!({"shows_the_problem": true, "why": "IndexError: list index out of range"})
                    .to_string(),
                usage,
            )
        } else if first.starts_with("# Task: prove this finding with a failing test") {
            let k = (0..self.findings)
                .find(|k| first.contains(&format!("total_{k} reads one past the end")))
                .unwrap_or(0);
            let path = format!("test_total_{k}.py");
            if request.messages.iter().any(|m| m.role == Role::Tool) {
                text_reply(format!("{path} fails with IndexError."), usage)
            } else {
                let test = format!(
                    "import unittest\n\nfrom stats import total_{k}\n\n\nclass Total{k}(unittest.TestCase):\n    def test_three(self):\n        self.assertEqual(total_{k}([1, 2, 3]), 6)\n"
                );
                tool_reply(
                    &[("write_file", json!({"path": path, "content": test}))],
                    usage,
                )
            }
        } else {
            let pass = request
                .messages
                .iter()
                .filter(|m| m.role == Role::User)
                .count();
            let mut calls = Vec::new();
            if pass == 1 {
                for k in 0..self.findings {
                    calls.push((
                        "report_finding",
                        json!({"file": "stats.py", "line": loop_line(k),
                               "evidence": "for i in range(len(xs) + 1):",
                               "title": format!("total_{k} reads one past the end"),
                               "description": format!("`xs[len(xs)]` raises IndexError in total_{k}."),
                               "score": 8, "category": "logic"}),
                    ));
                }
            }
            calls.push((
                "submit_pass_results",
                json!({"pass_number": pass, "summary": "bench"}),
            ));
            tool_reply(&calls, usage)
        };
        reply.model = self.name().to_owned();
        Ok(reply)
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// A fresh repository for one run (each review publishes to its own store).
fn repository(findings: usize) -> Result<tempfile::TempDir, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let repo = dir.path();
    let write = |name: &str, text: &str| {
        std::fs::write(repo.join(name), text).map_err(|e| setup_error(format!("{name}: {e}")))
    };
    git(repo, &["init", "-q", "-b", "main"])?;
    write("stats.py", &module(findings, false))?;
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-qm", "base"])?;
    git(repo, &["switch", "-qc", "change"])?;
    write("stats.py", &module(findings, true))?;
    git(repo, &["commit", "-qam", "change"])?;
    Ok(dir)
}

async fn one_review(
    config: &bugloop_config::Config,
    findings: usize,
) -> Result<(f64, ReviewReport), AppError> {
    let dir = repository(findings)?;
    let runs = tempfile::tempdir().map_err(setup_error)?;
    let model: Arc<dyn Provider> = Arc::new(ProvingModel { findings });
    let meter = Arc::new(Models::new(config).meter(model.name()));
    let started = Instant::now();
    let report = review_once(dir.path(), config, model, meter, runs.path()).await?;
    Ok((started.elapsed().as_secs_f64(), report))
}

/// Runs the comparison. `config` supplies the budgets and the sandbox; proving is set here.
pub async fn prove(
    config: &bugloop_config::Config,
    findings: usize,
    runs: usize,
) -> Result<ProveBench, AppError> {
    let findings = findings.max(1);
    let (without, with) = without_and_with_proving(config, findings);
    let sandbox = bugloop_sandbox::probe();
    if !sandbox.can_confine() {
        return Err(AppError::Invalid(format!(
            "`bench prove` runs tests in the sandbox, which cannot confine commands here: {}",
            sandbox.problem.as_deref().unwrap_or("unknown")
        )));
    }
    let mut samples = Samples::default();
    let mut proven = 0;
    for _ in 0..runs.max(1) {
        let (seconds, base) = one_review(&without, findings).await?;
        samples.plain.push(seconds);
        let (seconds, report) = one_review(&with, findings).await?;
        samples.proving.push(seconds);
        proven = samples.add_proofs(&base, &report)?;
    }
    Ok(samples.figures(config, findings, runs.max(1), proven))
}

/// The two configurations compared: proving off, and proving every finding the model reports
/// (they all score 8) with the Python test runner.
fn without_and_with_proving(
    config: &bugloop_config::Config,
    findings: usize,
) -> (bugloop_config::Config, bugloop_config::Config) {
    let mut without = config.clone();
    without.review.prove.test_command = None;
    let mut with = config.clone();
    with.review.prove.test_command = Some("python3 -m unittest -q {test}".to_owned());
    with.review.prove.min_score = 7;
    with.review.prove.max_findings = findings;
    (without, with)
}

/// Each run's figures, one entry per run, until the medians are taken.
#[derive(Default)]
struct Samples {
    plain: Vec<f64>,
    proving: Vec<f64>,
    added_calls: Vec<f64>,
    added_in: Vec<f64>,
    added_out: Vec<f64>,
    tests: Vec<f64>,
    shares: Vec<f64>,
}

impl Samples {
    /// What the proving review `report` added over the plain one `base`, per proven finding;
    /// returns how many were proven. None proven is an error: the figures would mean nothing.
    fn add_proofs(
        &mut self,
        base: &ReviewReport,
        report: &ReviewReport,
    ) -> Result<usize, AppError> {
        let done: Vec<_> = report
            .proofs
            .iter()
            .filter(|p| p.status == ProofStatus::Proven)
            .collect();
        let proven = done.len();
        if proven == 0 {
            let why: Vec<String> = report.proofs.iter().map(|p| p.reason.clone()).collect();
            return Err(setup_error(format!(
                "no finding was proven: {}",
                why.join("; ")
            )));
        }
        let per = |value: u64, base: u64| value.saturating_sub(base) as f64 / proven as f64;
        self.added_calls.push(per(
            u64::from(report.usage.model_calls),
            u64::from(base.usage.model_calls),
        ));
        self.added_in
            .push(per(report.usage.input_tokens, base.usage.input_tokens));
        self.added_out
            .push(per(report.usage.output_tokens, base.usage.output_tokens));
        self.shares.push(
            report
                .usage
                .input_tokens
                .saturating_sub(base.usage.input_tokens) as f64
                / report.usage.input_tokens.max(1) as f64,
        );
        self.tests
            .push(done.iter().filter_map(|p| p.test_seconds).sum::<f64>() / proven as f64);
        Ok(proven)
    }

    /// The medians over the runs, and what follows from them: bugloop's own time per proof is
    /// the added time less the tests' own, and a proof's share of the budget is its input tokens
    /// over the budget's.
    fn figures(
        self,
        config: &bugloop_config::Config,
        findings: usize,
        runs: usize,
        proven: usize,
    ) -> ProveBench {
        let review_seconds_without = median(self.plain);
        let review_seconds_with = median(self.proving);
        let added_seconds_per_proof =
            (review_seconds_with - review_seconds_without) / proven as f64;
        let test_seconds_per_proof = median(self.tests);
        let input_tokens_per_proof = median(self.added_in);
        ProveBench {
            findings,
            runs,
            proven,
            review_seconds_without,
            review_seconds_with,
            added_seconds_per_proof,
            test_seconds_per_proof,
            own_seconds_per_proof: added_seconds_per_proof - test_seconds_per_proof,
            model_calls_per_proof: median(self.added_calls),
            input_tokens_per_proof,
            output_tokens_per_proof: median(self.added_out),
            share_of_review_input: median(self.shares),
            share_of_budget_per_proof: input_tokens_per_proof
                / config.budgets.max_input_tokens.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_line_is_where_the_module_has_it() {
        let text = module(3, true);
        let lines: Vec<&str> = text.lines().collect();
        for k in 0..3 {
            assert_eq!(
                lines[loop_line(k) as usize - 1],
                "    for i in range(len(xs) + 1):",
                "{k}"
            );
        }
    }
}
