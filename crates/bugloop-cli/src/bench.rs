//! `bugloop bench ...`: runs a benchmark of the application layer and prints its figures (they
//! belong in BENCHMARKS.md).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use bugloop_app::Verdict;
use bugloop_bench::{
    self as bench, DetectBench, Latency, LatencyBench, ModelBench, ProveBench, ReviewBench,
    ServedBench, TokensBench, TokensSource,
};

use crate::Here;
use crate::{BenchChange, BenchCommand, BenchPace, Format, configuration, runtime};

pub fn run(here: &Here, command: BenchCommand, out: &mut impl Write) -> Result<Verdict> {
    match command {
        BenchCommand::Model {
            model,
            runs,
            max_tokens,
            format,
        } => {
            let config = configuration(here)?.loaded.config;
            let figures = bench::model(&config, &model, runs, max_tokens)?;
            show(out, format, &figures, model_text)?;
        }
        BenchCommand::Session {
            model,
            max_tokens,
            format,
        } => {
            let config = configuration(here)?.loaded.config;
            let figures = bench::session(&config, &model, max_tokens)?;
            show(out, format, &figures, session_text)?;
        }
        BenchCommand::Review {
            files,
            lines,
            format,
        } => {
            let config = configuration(here)?.loaded.config;
            let figures = runtime()?.block_on(bench::review(&config, files, lines))?;
            show(out, format, &figures, review_text)?;
        }
        BenchCommand::Prove {
            findings,
            runs,
            format,
        } => {
            let config = configuration(here)?.loaded.config;
            let figures = runtime()?.block_on(bench::prove(&config, findings, runs))?;
            show(out, format, &figures, prove_text)?;
        }
        BenchCommand::Tokens { change, format } => {
            let figures = runtime()?.block_on(bench::tokens(
                &source(change.example, change.repo),
                change.one_pass_per_turn,
            ))?;
            show(out, format, &figures, tokens_text)?;
        }
        BenchCommand::Latency {
            change,
            pace,
            serve,
            format,
        } => latency_command(out, change, &pace, serve, format)?,
        BenchCommand::Detect {
            corpus,
            model,
            format,
        } => {
            let config = configuration(here)?.loaded.config;
            let figures =
                runtime()?.block_on(bench::detect(&config, &here.cwd.join(corpus), &model))?;
            show(out, format, &figures, detect_text)?;
        }
        BenchCommand::Prompt => {
            let (system, prompt) = bench::prompt_texts();
            writeln!(
                out,
                "{}",
                serde_json::json!({"system": system, "user": prompt})
            )?;
        }
    }
    Ok(Verdict::Done)
}

/// Prints `figures` as JSON, or in words as `text` writes them.
fn show<W: Write, T: serde::Serialize>(
    out: &mut W,
    format: Format,
    figures: &T,
    text: impl FnOnce(&mut W, &T) -> Result<()>,
) -> Result<()> {
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(figures)?)?,
        Format::Text => text(out, figures)?,
    }
    Ok(())
}

fn detect_text(out: &mut impl Write, b: &DetectBench) -> Result<()> {
    writeln!(
        out,
        "{} cases reviewed with {} in {:.0} s",
        b.cases, b.model, b.seconds
    )?;
    writeln!(
        out,
        "{:<11} {:>5} {:>5} {:>6} | {:>18} {:>9} {:>7} | {:>18} {:>9} {:>7}",
        "language",
        "bugs",
        "model",
        "clean",
        "bugloop recall",
        "precision",
        "noisy",
        "yardstick recall",
        "precision",
        "noisy"
    )?;
    let row = |out: &mut dyn Write, name: &str, ours: &bench::Tally, alone: &bench::Tally| {
        writeln!(
            out,
            "{:<11} {:>5} {:>5} {:>6} | {:>4}/{:<3} {:>4.0}% {:>4.0}% {:>9.0}% {:>7} | {:>4}/{:<3} {:>4.0}% {:>4.0}% {:>9.0}% {:>7}",
            name,
            ours.analyzer_bugs,
            ours.model_bugs,
            ours.clean,
            ours.analyzer_bugs_found + ours.model_bugs_found,
            ours.analyzer_bugs + ours.model_bugs,
            100.0 * ours.recall(),
            100.0 * ours.analyzer_recall(),
            100.0 * ours.precision(),
            ours.clean_with_findings,
            alone.analyzer_bugs_found + alone.model_bugs_found,
            alone.analyzer_bugs + alone.model_bugs,
            100.0 * alone.recall(),
            100.0 * alone.analyzer_recall(),
            100.0 * alone.precision(),
            alone.clean_with_findings,
        )
    };
    for (language, (ours, alone)) in &b.by_language {
        row(out, language, ours, alone)?;
    }
    row(out, "all", &b.bugloop, &b.yardstick)?;
    writeln!(
        out,
        "(recall: found/planted, all bugs then analyzer-detectable ones; noisy: clean changes with a finding)"
    )?;
    for result in b.results.iter().filter(|r| {
        r.bugloop.analyzer_bugs_found + r.bugloop.model_bugs_found
            < r.bugloop.analyzer_bugs + r.bugloop.model_bugs
            || r.bugloop.clean_with_findings > 0
            || r.bugloop.true_findings < r.bugloop.findings
    }) {
        writeln!(
            out,
            "  {}: {}",
            result.name,
            if result.findings.is_empty() {
                "no finding".to_owned()
            } else {
                result.findings.join(", ")
            }
        )?;
    }
    Ok(())
}

fn model_text(out: &mut impl Write, b: &ModelBench) -> Result<()> {
    writeln!(out, "model      {} ({})", b.model, b.file)?;
    writeln!(out, "load       {:.3} s", b.load_seconds)?;
    writeln!(
        out,
        "prompt     {} tokens, {:.1} tokens/s (median of {})",
        b.prompt_tokens, b.prompt_tokens_per_second, b.runs
    )?;
    writeln!(
        out,
        "generation {:.1} tokens/s (median; tokens per run: {:?})",
        b.generation_tokens_per_second, b.generated_tokens
    )?;
    if let Some(mb) = b.peak_rss_mb {
        writeln!(out, "peak RSS   {mb:.0} MB")?;
    }
    Ok(())
}

fn review_text(out: &mut impl Write, b: &ReviewBench) -> Result<()> {
    writeln!(
        out,
        "change      {} files, {} added lines",
        b.files, b.added_lines
    )?;
    writeln!(
        out,
        "first run   {:.3} s ({} sessions, {} model calls, {} findings in the report, {} over the limit)",
        b.first_run_seconds, b.sessions, b.model_calls, b.findings_in_report, b.overflow
    )?;
    if !b.complete {
        writeln!(
            out,
            "incomplete  {} files not reviewed: {}",
            b.unreviewed_files,
            b.errors.join("; ")
        )?;
    }
    writeln!(
        out,
        "re-run      {:.3} s (everything already published)",
        b.rerun_seconds
    )?;
    if let Some(mb) = b.peak_rss_mb {
        writeln!(out, "peak RSS    {mb:.0} MB")?;
    }
    Ok(())
}

fn prove_text(out: &mut impl Write, b: &ProveBench) -> Result<()> {
    writeln!(
        out,
        "reviews      {} findings, {} proven; medians of {} runs each way",
        b.findings, b.proven, b.runs
    )?;
    writeln!(
        out,
        "wall         {:.3} s without proofs, {:.3} s with",
        b.review_seconds_without, b.review_seconds_with
    )?;
    writeln!(
        out,
        "per proof    {:.3} s added: {:.3} s the test's run, {:.3} s bugloop's own",
        b.added_seconds_per_proof, b.test_seconds_per_proof, b.own_seconds_per_proof
    )?;
    writeln!(
        out,
        "tokens       {:.1} model calls, {:.0} input and {:.0} output tokens per proof",
        b.model_calls_per_proof, b.input_tokens_per_proof, b.output_tokens_per_proof
    )?;
    writeln!(
        out,
        "share        {:.1}% of the proving review's input; {:.3}% of budgets.max_input_tokens per proof",
        b.share_of_review_input * 100.0,
        b.share_of_budget_per_proof * 100.0
    )?;
    Ok(())
}

fn session_text(out: &mut impl Write, b: &bench::SessionBench) -> Result<()> {
    writeln!(out, "model      {} ({} threads)", b.model, b.threads)?;
    for (number, turn) in b.turns.iter().enumerate() {
        writeln!(
            out,
            "turn {}     {} prompt tokens, {} kept: {:.3} s kept, {:.3} s fresh",
            number + 1,
            turn.prompt_tokens,
            turn.reused_tokens,
            turn.kept_prompt_seconds,
            turn.fresh_prompt_seconds
        )?;
    }
    writeln!(
        out,
        "prompts    {:.3} s with the context kept, {:.3} s with a fresh one per call",
        b.kept_prompt_seconds, b.fresh_prompt_seconds
    )?;
    Ok(())
}

/// Where the benchmark's change comes from: the repository when one is given, else the example.
fn source(example: PathBuf, repo: Option<PathBuf>) -> TokensSource {
    match repo {
        Some(repo) => TokensSource::Repository(repo),
        None => TokensSource::Example(example),
    }
}

/// `bench latency`: a review with the slow reviewer, or (`--serve`) the reviewer alone.
fn latency_command(
    out: &mut impl Write,
    change: BenchChange,
    pace: &BenchPace,
    serve: bool,
    format: Format,
) -> Result<()> {
    let latency = Latency {
        request_ms: pace.request_ms,
        input_ms_per_ktok: pace.input_ms_per_ktok,
        output_ms_per_token: pace.output_ms_per_token,
    };
    let one_pass_per_turn = change.one_pass_per_turn;
    if serve {
        let announce = |url: &str| {
            // Standard error, so standard output stays the figures alone.
            let _ = writeln!(
                std::io::stderr(),
                "serving the reviewer at {url}; Ctrl-C ends"
            );
        };
        let served = runtime()?.block_on(bench::serve(one_pass_per_turn, latency, announce))?;
        match format {
            Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&served)?)?,
            Format::Text => served_text(out, &served)?,
        }
        return Ok(());
    }
    let source = source(change.example, change.repo);
    let figures = runtime()?.block_on(bench::latency(&source, one_pass_per_turn, latency))?;
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&figures)?)?,
        Format::Text => latency_text(out, &figures)?,
    }
    Ok(())
}

fn latency_line(latency: &Latency) -> String {
    format!(
        "{} ms per request, {} ms per thousand input tokens, {} ms per output token",
        latency.request_ms, latency.input_ms_per_ktok, latency.output_ms_per_token
    )
}

fn latency_text(out: &mut impl Write, b: &LatencyBench) -> Result<()> {
    writeln!(out, "change       {}", b.change)?;
    writeln!(out, "reviewer     {}", b.reviewer)?;
    writeln!(out, "latency      {}", latency_line(&b.latency))?;
    writeln!(
        out,
        "files        {} of {} reviewed, in {} part(s)",
        b.files_reviewed, b.files, b.parts
    )?;
    writeln!(
        out,
        "requests     {} in {} round trips one after another",
        b.requests, b.round_trips
    )?;
    writeln!(out, "wall time    {:.2} s", b.wall_seconds)?;
    match b.first_finding_seconds {
        Some(seconds) => writeln!(
            out,
            "first finding {seconds:.2} s (the model's answer that reported it)"
        )?,
        None => writeln!(out, "first finding none reported")?,
    }
    match b.first_published_seconds {
        Some(seconds) => writeln!(
            out,
            "published    {seconds:.2} s (the first part's findings)"
        )?,
        None => writeln!(out, "published    at the end only")?,
    }
    writeln!(out, "findings     {} tracked", b.findings)?;
    for error in &b.errors {
        writeln!(out, "error        {error}")?;
    }
    Ok(())
}

fn served_text(out: &mut impl Write, b: &ServedBench) -> Result<()> {
    writeln!(out, "latency      {}", latency_line(&b.latency))?;
    writeln!(
        out,
        "requests     {} in {} round trips one after another",
        b.requests, b.round_trips
    )?;
    writeln!(
        out,
        "busy         {:.2} s from the first request to the last answer",
        b.busy_seconds
    )?;
    Ok(())
}

fn tokens_text(out: &mut impl Write, b: &TokensBench) -> Result<()> {
    writeln!(out, "change     {}", b.change)?;
    writeln!(
        out,
        "size       {} files, +{} -{} (tokens counted with {})",
        b.files, b.additions, b.deletions, b.tokenizer
    )?;
    writeln!(out, "reviewer   {}", b.reviewer)?;
    for s in &b.scenarios {
        writeln!(out, "\n{}", s.name)?;
        writeln!(out, "  scope    {}", s.scope)?;
        writeln!(
            out,
            "  input    {} tokens in {} requests ({} of them tool definitions)",
            s.input_tokens,
            s.requests.len(),
            s.tool_tokens
        )?;
        writeln!(
            out,
            "  cached   {} tokens; billed equivalent {} (cached at 10%)",
            s.cached_tokens, s.billed_equivalent
        )?;
        writeln!(
            out,
            "  files    {} reviewed, {} not reviewed; {} findings tracked",
            s.files_reviewed, s.unreviewed, s.findings
        )?;
        writeln!(
            out,
            "  requests {:?}",
            s.requests.iter().map(|r| r.input).collect::<Vec<_>>()
        )?;
        for error in &s.errors {
            writeln!(out, "  error    {error}")?;
        }
    }
    Ok(())
}
