//! Printing for the commands that show what bugloop reads or has: the rubric, a parsed diff, a
//! comment's state, recorded runs and their transcripts, and the doctor's checks.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use bugloop_app::Verdict;
use bugloop_app::doctor::{Check, CheckState};
use bugloop_app::inspect::CommentReading;
use bugloop_app::runs::{Event, RunSummary};
use bugloop_app::types::{Diff, RUBRIC, Score};

use crate::Format;

/// The 1-10 rubric with each score's severity and priority.
pub fn rubric(out: &mut impl Write, format: Format) -> Result<()> {
    if let Format::Json = format {
        let levels: Vec<serde_json::Value> = RUBRIC
            .iter()
            .map(|level| {
                let score = Score::saturating(i64::from(level.score));
                serde_json::json!({
                    "score": level.score,
                    "name": level.name,
                    "band": level.band,
                    "description": level.description,
                    "example": level.example,
                    "severity": score.severity(),
                    "priority": score.priority(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&levels)?)?;
        return Ok(());
    }
    for level in &RUBRIC {
        let score = Score::saturating(i64::from(level.score));
        writeln!(
            out,
            "{:>2}  {:<28} {:<6} {}  {}",
            level.score,
            level.name,
            score.severity(),
            score.priority(),
            level.description
        )?;
    }
    Ok(())
}

/// A parsed diff: files, changes, hunks, problems.
pub fn diff(out: &mut impl Write, diff: &Diff) -> Result<()> {
    for file in &diff.files {
        let (added, removed) = file.stats();
        let name = match (&file.old_path, &file.new_path) {
            (Some(old), Some(new)) if old != new => format!("{old} -> {new}"),
            _ => file.path().to_owned(),
        };
        let mut notes = Vec::new();
        if file.binary {
            notes.push("binary".to_owned());
        }
        if let (Some(old), Some(new)) = (&file.old_mode, &file.new_mode)
            && old != new
        {
            notes.push(format!("mode {old} -> {new}"));
        }
        if file.lossy {
            notes.push("not UTF-8".to_owned());
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        writeln!(
            out,
            "{:?} {name}: +{added} -{removed}, {} hunks{notes}",
            file.change,
            file.hunks.len()
        )?;
        if let Some(anchor) = file.first_diff_line() {
            writeln!(out, "  first diff line: {:?} {}", anchor.side, anchor.line)?;
        }
    }
    let (added, removed) = diff.stats();
    writeln!(out, "{} files, +{added} -{removed}", diff.files.len())?;
    for problem in &diff.problems {
        writeln!(out, "problem at line {}: {}", problem.line, problem.message)?;
    }
    Ok(())
}

/// One run's transcript: prompts, model answers, tool calls and results.
pub fn transcript(out: &mut impl Write, events: &[Event]) -> Result<()> {
    for event in events {
        match event {
            Event::Start {
                run,
                task,
                model,
                tools,
                at,
                system,
                messages,
            } => {
                writeln!(out, "run {run}: task {task} with {model} at {at}")?;
                writeln!(
                    out,
                    "tools: {}",
                    if tools.is_empty() {
                        "none".to_owned()
                    } else {
                        tools.join(", ")
                    }
                )?;
                writeln!(out, "--- system\n{system}")?;
                for message in messages {
                    let role = message.get("role").and_then(|r| r.as_str()).unwrap_or("?");
                    let content = message
                        .get("content")
                        .and_then(|c| c.as_str())
                        .unwrap_or("");
                    writeln!(out, "--- {role}\n{content}")?;
                }
            }
            Event::Response {
                turn,
                content,
                tool_calls,
                finish,
                input_tokens,
                output_tokens,
                ..
            } => {
                writeln!(
                    out,
                    "=== turn {turn}: model ({input_tokens} in, {output_tokens} out, {finish})"
                )?;
                if !content.is_empty() {
                    writeln!(out, "{content}")?;
                }
                for call in tool_calls {
                    let name = call.get("name").and_then(|n| n.as_str()).unwrap_or("?");
                    let arguments = call.get("arguments").and_then(|a| a.as_str()).unwrap_or("");
                    writeln!(out, "-> {name} {arguments}")?;
                }
            }
            Event::Tool {
                name, ok, result, ..
            } => {
                let shown: String = result.chars().take(2_000).collect();
                writeln!(
                    out,
                    "<- {name} {}:\n{shown}",
                    if *ok { "ok" } else { "failed" }
                )?;
            }
            Event::Note { text } => writeln!(out, "--- note: {text}")?,
            Event::End {
                outcome,
                detail,
                at,
                ..
            } => {
                writeln!(out, "=== end at {at}: {outcome}")?;
                if !detail.is_empty() {
                    writeln!(out, "{detail}")?;
                }
            }
        }
    }
    Ok(())
}

/// The runs recorded in `dir`, newest first.
pub fn runs(out: &mut impl Write, dir: &Path, runs: &[RunSummary], format: Format) -> Result<()> {
    match format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&runs)?)?,
        Format::Text if runs.is_empty() => {
            writeln!(out, "no runs recorded in {}", dir.display())?;
        }
        Format::Text => {
            for run in runs {
                writeln!(
                    out,
                    "{}  {}  {}  {} turns, {} tool calls, {} in / {} out tokens  {}",
                    run.run,
                    run.task,
                    run.model,
                    run.turns,
                    run.tool_calls,
                    run.input_tokens,
                    run.output_tokens,
                    run.outcome
                )?;
            }
        }
    }
    Ok(())
}

/// What bugloop reads as a comment's state, and every other marker outside code.
pub fn comment(out: &mut impl Write, reading: &CommentReading) -> Result<()> {
    match &reading.own_marker {
        Some(marker) => writeln!(
            out,
            "own marker: {} finding_id={} resolved={}",
            marker.prefix, marker.finding_id, marker.resolved
        )?,
        None => writeln!(out, "own marker: none")?,
    }
    match reading.reply_tag {
        Some(kind) => writeln!(out, "reply tag: {kind:?}")?,
        None => writeln!(out, "reply tag: none")?,
    }
    writeln!(out, "markers outside code: {}", reading.markers.len())?;
    for marker in &reading.markers {
        writeln!(
            out,
            "  {} finding_id={} resolved={}",
            marker.prefix, marker.finding_id, marker.resolved
        )?;
    }
    match &reading.rmcoc.block {
        Some(block) => {
            let status = block
                .status
                .map(|s| format!(" status={s}"))
                .unwrap_or_default();
            writeln!(
                out,
                "state block: score={}{status}: {}",
                block.score, block.finding
            )?;
        }
        None => writeln!(out, "state block: none")?,
    }
    for problem in &reading.rmcoc.problems {
        writeln!(out, "problem at line {}: {}", problem.line, problem.message)?;
    }
    Ok(())
}

/// The doctor's checks; [`Verdict::Problems`] when something the configuration relies on is
/// missing.
pub fn doctor(out: &mut impl Write, checks: &[Check]) -> Result<Verdict> {
    for check in checks {
        let state = match check.state {
            CheckState::Ok => "ok",
            CheckState::Off => "off",
            CheckState::Info => "info",
            CheckState::Warning => "WARNING",
            CheckState::Fail => "FAIL",
        };
        writeln!(out, "{state:<7} {}: {}", check.subject, check.detail)?;
    }
    let failed = checks
        .iter()
        .filter(|c| c.state == CheckState::Fail)
        .count();
    Ok(if failed == 0 {
        Verdict::Done
    } else {
        Verdict::Problems {
            what: format!("{failed} check(s) failed"),
        }
    })
}
