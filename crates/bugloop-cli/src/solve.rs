//! `bugloop solve ISSUE` and `bugloop status [ISSUE]`: the solve pipeline on the local forge's
//! issues. This file parses, calls the application layer and prints.

use std::io::Write;

use anyhow::Result;
use bugloop_app::types::json;
use bugloop_app::{SolveAsk, SolveJob, Verdict};

use crate::Here;
use crate::act::{ModelArg, with_app};

#[derive(Debug, clap::Args)]
pub struct SolveArgs {
    /// The issue's number (from `bugloop report` or `bugloop status`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub issue: Option<u64>,
    /// Every open issue labelled for solving that is not finished, most severe first, then
    /// oldest.
    #[arg(long)]
    pub all: bool,
    /// With --all: how many issues are solved at the same time.
    #[arg(long, default_value_t = 1, value_name = "N", requires = "all")]
    pub jobs: usize,
    /// The branch the solution goes into (default: the default branch).
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// Take an escalated issue again.
    #[arg(long, conflicts_with = "all")]
    pub retry: bool,
    /// Approve the solution waiting for approval (`solve.approval: required`): its draft opens.
    #[arg(long, conflicts_with = "all")]
    pub approve: bool,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// One issue, with every transition; without it, every issue's state.
    pub issue: Option<u64>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

pub fn solve(here: &Here, args: &SolveArgs, out: &mut impl Write) -> Result<Verdict> {
    let Some(issue) = args.issue else {
        return solve_all(here, args, out);
    };
    let job = SolveJob {
        issue,
        base: args.base.clone(),
        model: args.common.model.clone(),
        ask: SolveAsk {
            retry: args.retry,
            approve: args.approve,
            ..SolveAsk::default()
        },
    };
    let outcome = with_app(here, async |app| app.solve(job).await)?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&outcome.report)?)?,
        crate::Format::Text => write!(out, "{}", outcome.report.to_text())?,
    }
    Ok(outcome.verdict)
}

fn solve_all(here: &Here, args: &SolveArgs, out: &mut impl Write) -> Result<Verdict> {
    let job = bugloop_app::SolveAllJob {
        base: args.base.clone(),
        model: args.common.model.clone(),
        jobs: args.jobs,
    };
    let outcome = with_app(here, async |app| app.solve_all(job).await)?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&outcome.report)?)?,
        crate::Format::Text => {
            if outcome.report.is_empty() {
                writeln!(out, "no issue is waiting to be solved")?;
            }
            for solved in &outcome.report {
                match (&solved.report, &solved.error) {
                    (Some(report), _) => write!(out, "{}", report.to_text())?,
                    (None, Some(error)) => writeln!(out, "#{}: {error}", solved.issue)?,
                    (None, None) => {}
                }
            }
        }
    }
    Ok(outcome.verdict)
}

pub fn status(here: &Here, args: &StatusArgs, out: &mut impl Write) -> Result<Verdict> {
    let reports = with_app(here, async |app| app.solve_status(args.issue).await)?;
    match (args.format, args.issue) {
        (crate::Format::Json, Some(_)) => {
            if let Some(report) = reports.first() {
                writeln!(out, "{}", json::to_json(report)?)?;
            }
        }
        (crate::Format::Json, None) => writeln!(out, "{}", json::to_json(&reports)?)?,
        (crate::Format::Text, Some(_)) => {
            for report in &reports {
                write!(out, "{}{}", report.to_text(), report.history_text())?;
            }
        }
        (crate::Format::Text, None) => {
            if reports.is_empty() {
                writeln!(out, "No issues.")?;
            }
            for report in &reports {
                writeln!(
                    out,
                    "#{:<5} {:<10} {}",
                    report.issue,
                    // As `status ISSUE` and the JSON (`null`) say it.
                    report.state.map_or("not taken", |s| s.as_str()),
                    report.title
                )?;
            }
        }
    }
    Ok(Verdict::Done)
}

#[derive(Debug, clap::Args)]
pub struct ItemArgs {
    /// The issue's or change request's number.
    pub number: u64,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

/// An issue or change request of the local forge with its conversation.
pub fn item(here: &Here, args: &ItemArgs, out: &mut impl Write) -> Result<Verdict> {
    let view = with_app(here, async |app| app.item(args.number).await)?;
    if let crate::Format::Json = args.format {
        writeln!(out, "{}", json::to_json(&view)?)?;
        return Ok(Verdict::Done);
    }
    let item = &view.item;
    let (kind, draft) = match (item.branch.as_deref(), item.draft) {
        (Some(_), Some(true)) => ("change request", ", draft"),
        (Some(_), _) => ("change request", ""),
        (None, _) => ("issue", ""),
    };
    writeln!(
        out,
        "#{} {kind} ({}{draft}): {}",
        item.number,
        serde_json::to_value(item.state)?
            .as_str()
            .unwrap_or_default(),
        item.title
    )?;
    if let (Some(branch), Some(base)) = (&item.branch, &item.base) {
        write!(out, "  {branch} into {base}")?;
        if let Some(closes) = item.closes {
            write!(out, " · closes #{closes}")?;
        }
        writeln!(out)?;
    }
    if !item.labels.is_empty() {
        writeln!(out, "  labels: {}", item.labels.join(", "))?;
    }
    if !item.assignees.is_empty() {
        writeln!(out, "  assigned to: {}", item.assignees.join(", "))?;
    }
    if item.reports > 0 {
        writeln!(out, "  error reports: {}", item.reports)?;
    }
    writeln!(out, "\n{}", crate::terminal::quoted(&view.body_as_read()))?;
    for comment in &view.comments {
        let place = match (&comment.path, comment.line) {
            (Some(path), Some(line)) => format!(" · {path}:{line}"),
            (Some(path), None) => format!(" · {path}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "\n── {} · {}{place}\n{}",
            comment.author,
            comment.created_at.strftime("%Y-%m-%d %H:%M"),
            crate::terminal::quoted(&comment.as_read())
        )?;
    }
    Ok(Verdict::Done)
}
