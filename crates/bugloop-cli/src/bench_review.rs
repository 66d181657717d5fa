//! `bugloop bench review`: everything a review does except the model's own time, on a synthetic
//! change (default 2,000 files, 100,000 added lines): change selection and diff, parsing, planning,
//! the agent sessions of a tool-calling model (answered instantly: four passes, a finding reported
//! with `report_finding`), the configured budgets (metered as `bugloop review` meters them, so a
//! change too large for them stops as a real review would), grounding, the filter pipeline,
//! publishing to the local store and the report. And `bugloop bench tokens`: what a review of a reference change sends to
//! the model.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use async_trait::async_trait;
use bugloop_forge::git::{Git, Selection};
use bugloop_forge::local::LocalForge;
use bugloop_llm::budget::{Meter, Metered, estimate_input_tokens};
use bugloop_llm::scripted::tool_reply;
use bugloop_llm::{
    BudgetLimits, Capabilities, ChatRequest, ChatResponse, FinishReason, LlmError, Message,
    Provider, Role, StreamSink, Usage,
};
use bugloop_loops::review::{ReviewEnv, ReviewRequest, review};
use bugloop_report::review::ReviewReport;
use serde_json::json;

use crate::Format;

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@bugloop.invalid",
        ])
        .args(args)
        .output()
        .context("cannot run git")?;
    if !output.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

/// A model that answers at once: one grounded finding per session, on the first added line of
/// the first file it is shown (so grounding, the filter and publishing all have work).
#[derive(Debug, Default)]
struct InstantModel {
    requests: Mutex<Vec<u64>>,
}

#[async_trait]
impl Provider for InstantModel {
    fn name(&self) -> &str {
        "bench:instant"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tools: false,
            json_schema: true,
            streaming: false,
            context_tokens: None,
        }
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        _: Option<StreamSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let input = estimate_input_tokens(request);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(input);
        }
        let prompt = request
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or_default();
        let findings: Vec<serde_json::Value> = synthetic_finding(prompt).into_iter().collect();
        let answer = json!({"findings": findings, "resolved": [], "summary": "bench"});
        Ok(ChatResponse {
            message: Message {
                role: Role::Assistant,
                content: answer.to_string(),
                tool_calls: Vec::new(),
                tool_call_id: None,
            },
            finish: FinishReason::Stop,
            usage: Usage {
                input_tokens: input,
                output_tokens: 50,
                cached_input_tokens: 0,
            },
            model: "bench:instant".to_owned(),
        })
    }
}

/// A finding on the first added line of the first file of a prompt.
fn synthetic_finding(prompt: &str) -> Option<serde_json::Value> {
    let file = prompt
        .lines()
        .find_map(|l| l.strip_prefix("## "))
        .and_then(|l| l.split(" (").next())?;
    let (line, text) = prompt.lines().find_map(|l| {
        let (number, rest) = l.trim_start().split_once(" + ")?;
        Some((number.parse::<u32>().ok()?, rest.to_owned()))
    })?;
    Some(json!({
        "file": file, "line": line, "evidence": text,
        "title": format!("Synthetic finding in {file}"),
        "description": format!("Generated for the benchmark on {file} line {line}."),
        "score": 7, "category": "logic"
    }))
}

fn peak_rss_mb() -> Option<f64> {
    crate::bench::peak_rss_kib().map(|kib| kib as f64 / 1024.0)
}

fn unlimited(model: &str) -> Arc<Meter> {
    Arc::new(Meter::new(model, BudgetLimits::default(), None))
}

async fn review_once(
    repo: &Path,
    config: &bugloop_config::Config,
    provider: Arc<dyn Provider>,
    meter: Arc<Meter>,
    runs: &Path,
) -> Result<ReviewReport> {
    let git = Git::open(repo)?;
    let change = git.select(&Selection::Branch)?;
    let diff = bugloop_diff::parse(&change.diff);
    let checkout = bugloop_loops::checkout::checkout(&git, &change)?;
    let forge = LocalForge::open(git.clone(), "bugloop").await?;
    let env = ReviewEnv {
        forge: &forge,
        config,
        provider: Arc::new(Metered::new(provider, meter.clone())),
        meter,
        runs_dir: runs.to_path_buf(),
        progress: Arc::new(bugloop_loops::Silent),
    };
    let request = ReviewRequest {
        change: change.key.clone(),
        description: change.description.clone(),
        base: change.base.clone(),
        head: format!("{:?}", change.head),
        diff,
        workspace: checkout.path().to_path_buf(),
        git_mount: checkout.git_mount(),
        publish: true,
        clean_room: false,
        focus: None,
    };
    Ok(review(&env, request).await?)
}

/// `config` is the configuration `bugloop review` would use here (its budgets above all).
pub fn review_speed(
    out: &mut impl Write,
    config: &bugloop_config::Config,
    files: usize,
    lines: usize,
    format: Format,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"])?;
    let per_file = lines / files.max(1);
    for i in 0..files {
        let path = repo.join(format!("src/m{:02}/file{i:05}.rs", i % 50));
        std::fs::create_dir_all(path.parent().context("a parent")?)?;
        std::fs::write(
            &path,
            format!("// module {i}\npub fn base_{i}() -> u32 {{ {i} }}\n"),
        )?;
    }
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-qm", "base"])?;
    git(repo, &["switch", "-qc", "change"])?;
    for i in 0..files {
        let path = repo.join(format!("src/m{:02}/file{i:05}.rs", i % 50));
        let mut text = format!("// module {i}\npub fn base_{i}() -> u32 {{ {i} }}\n");
        for l in 0..per_file {
            text.push_str(&format!(
                "pub fn added_{i}_{l}(x: u64) -> u64 {{ x.wrapping_mul({l}) + {i} }}\n"
            ));
        }
        std::fs::write(&path, text)?;
    }
    git(repo, &["add", "-A"])?;
    git(repo, &["commit", "-qm", "change"])?;
    let runs = tempfile::tempdir()?;
    let runtime = crate::review::runtime()?;
    let mut timings = Vec::new();
    let mut reports = Vec::new();
    for _ in 0..2 {
        let model: Arc<dyn Provider> = Arc::new(PassModel {
            reports_finding: true,
            ..PassModel::default()
        });
        let meter = Arc::new(crate::review::meter_for(config, model.name()));
        let started = Instant::now();
        let report = runtime.block_on(review_once(repo, config, model, meter, runs.path()))?;
        timings.push(started.elapsed().as_secs_f64());
        reports.push(report);
    }
    let first = reports.first().context("no run")?;
    let report = reports.last().context("no run")?;
    let result = json!({
        "files": files,
        "added_lines": per_file * files,
        "first_run_seconds": timings[0],
        "rerun_seconds": timings[1],
        "sessions": report.usage.sessions,
        "model_calls": first.usage.model_calls,
        "input_tokens": first.usage.input_tokens,
        "complete": first.complete,
        "errors": first.errors,
        "unreviewed_files": first.unreviewed.len(),
        "findings_in_report": report.findings.len(),
        "overflow": report.overflow.count,
        "tracked": report.tracked.len(),
        "peak_rss_mb": peak_rss_mb(),
    });
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?,
        Format::Text => {
            writeln!(
                out,
                "change      {files} files, {} added lines",
                per_file * files
            )?;
            writeln!(
                out,
                "first run   {:.3} s ({} sessions, {} model calls, {} findings in the report, {} over the limit)",
                timings[0],
                first.usage.sessions,
                first.usage.model_calls,
                report.findings.len(),
                report.overflow.count
            )?;
            if !first.complete {
                writeln!(
                    out,
                    "incomplete  {} files not reviewed: {}",
                    first.unreviewed.len(),
                    first.errors.join("; ")
                )?;
            }
            writeln!(
                out,
                "re-run      {:.3} s (everything already published)",
                timings[1]
            )?;
            if let Some(mb) = peak_rss_mb() {
                writeln!(out, "peak RSS    {mb:.0} MB")?;
            }
        }
    }
    Ok(())
}

/// A tool-calling model that answers at once and runs the four passes without exploring (the
/// least a tools session sends), recording the estimated input of every request. With
/// `reports_finding` it reports one grounded finding in the first pass (on the first added line of
/// the first file it is shown), as a real review's model is driven.
#[derive(Debug, Default)]
struct PassModel {
    reports_finding: bool,
    requests: Mutex<Vec<u64>>,
}

#[async_trait]
impl Provider for PassModel {
    fn name(&self) -> &str {
        if self.reports_finding {
            "bench:instant"
        } else {
            "bench:passes"
        }
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            tools: true,
            json_schema: false,
            streaming: false,
            context_tokens: None,
        }
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        _: Option<StreamSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let input = estimate_input_tokens(request);
        if let Ok(mut requests) = self.requests.lock() {
            requests.push(input);
        }
        let pass = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .count();
        let change = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .unwrap_or_default();
        let mut calls = Vec::new();
        if self.reports_finding
            && pass == 1
            && let Some(finding) = synthetic_finding(change)
        {
            calls.push(("report_finding", finding));
        }
        calls.push((
            "submit_pass_results",
            json!({"pass_number": pass, "summary": "bench"}),
        ));
        let mut reply = tool_reply(
            &calls,
            Usage {
                input_tokens: input,
                output_tokens: 50,
                cached_input_tokens: 0,
            },
        );
        reply.model = self.name().to_owned();
        Ok(reply)
    }
}

pub fn tokens(out: &mut impl Write, example: &Path, format: Format) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let repo = dir.path().join("repo");
    let script = Path::new("scripts/example-repo");
    let made = Command::new(script)
        .arg(example)
        .arg(&repo)
        .output()
        .with_context(|| {
            format!(
                "cannot run {} (run from bugloop's checkout)",
                script.display()
            )
        })?;
    if !made.status.success() {
        bail!("{}", String::from_utf8_lossy(&made.stderr));
    }
    let runs = tempfile::tempdir()?;
    let config = bugloop_config::Config::default();
    let runtime = crate::review::runtime()?;
    let passes = Arc::new(PassModel::default());
    runtime.block_on(review_once(
        &repo,
        &config,
        passes.clone(),
        unlimited(passes.name()),
        runs.path(),
    ))?;
    let once = Arc::new(InstantModel::default());
    // A second repository: the first one's conversation now holds findings.
    let repo2 = dir.path().join("repo2");
    let made = Command::new(script).arg(example).arg(&repo2).output()?;
    if !made.status.success() {
        bail!("{}", String::from_utf8_lossy(&made.stderr));
    }
    runtime.block_on(review_once(
        &repo2,
        &config,
        once.clone(),
        unlimited(once.name()),
        runs.path(),
    ))?;
    let tools: Vec<u64> = passes
        .requests
        .lock()
        .map(|r| r.clone())
        .unwrap_or_default();
    let single: Vec<u64> = once.requests.lock().map(|r| r.clone()).unwrap_or_default();
    let result = json!({
        "change": example.display().to_string(),
        "tools_session_requests": tools,
        "tools_session_total": tools.iter().sum::<u64>(),
        "structured_answer_total": single.iter().sum::<u64>(),
    });
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?,
        Format::Text => {
            writeln!(out, "change                 {}", example.display())?;
            writeln!(
                out,
                "four-pass session      {} input tokens over {} requests {:?} (no exploration)",
                tools.iter().sum::<u64>(),
                tools.len(),
                tools
            )?;
            writeln!(
                out,
                "one structured answer  {} input tokens",
                single.iter().sum::<u64>()
            )?;
        }
    }
    Ok(())
}
