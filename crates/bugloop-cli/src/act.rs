//! `bugloop fix`, `do`, `ask`, `comment`, `reply` and `converge`: what a forge comment would
//! trigger, run locally. This file parses, calls the application layer and prints.

use std::io::Write;

use anyhow::Result;
use bugloop_app::types::ActReport;
use bugloop_app::types::{json, text};
use bugloop_app::{App, CommentJob, ConvergeJob, FixJob, Outcome, ReplyJob, ReplyOutcome, Verdict};

use crate::Here;
use crate::{open_app, runtime};

#[derive(Debug, clap::Args)]
pub struct ModelArg {
    /// The model (provider:model), instead of the configured one.
    #[arg(long, value_name = "MODEL", global = true)]
    pub model: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text, global = true)]
    pub format: crate::Format,
}

#[derive(Debug, clap::Args)]
pub struct FixArgs {
    /// The findings to fix (ids or unique prefixes, from `bugloop findings`).
    #[arg(value_name = "ID", required_unless_present = "all")]
    pub ids: Vec<String>,
    /// Fix every open finding of this branch.
    #[arg(long, conflicts_with = "ids")]
    pub all: bool,
    /// Extra guidance for the fix.
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct TextArgs {
    /// The request, question or comment.
    pub text: String,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct CommentArgs {
    /// The comment, as you would write it on a pull request.
    pub text: String,
    /// Reply in the thread of this finding (id) or comment (number).
    #[arg(long, value_name = "ID", conflicts_with = "change")]
    pub reply_to: Option<String>,
    /// A reviewer's line comment on this local change request (a solve draft) instead, at
    /// --file and --line of its head; `bugloop solve` addresses it in its next review round.
    #[arg(long, value_name = "NUMBER", requires_all = ["file", "line"])]
    pub change: Option<u64>,
    /// The file the line comment is on (with --change).
    #[arg(long, value_name = "PATH", requires = "change")]
    pub file: Option<String>,
    /// The line of --file at the change request's head (with --change).
    #[arg(long, value_name = "N", requires = "change")]
    pub line: Option<u32>,
    /// The reviewer who wrote it (with --change; default: you, from git's user.name).
    #[arg(long = "as", value_name = "NAME", requires = "change")]
    pub reviewer: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

#[derive(Debug, clap::Args)]
pub struct ReplyArgs {
    /// The finding (id or unique prefix).
    pub id: String,
    /// Your reply: why it is not a problem, or will be handled elsewhere.
    pub text: String,
    /// Have bugloop weigh the reply now (otherwise the next review does).
    #[arg(long)]
    pub now: bool,
    #[command(flatten)]
    pub common: ModelArg,
}

/// Runs `job` on the repository at `cwd`.
pub(crate) fn with_app<T>(
    here: &Here,
    job: impl AsyncFnOnce(&App) -> Result<T, bugloop_app::AppError>,
) -> Result<T> {
    let runtime = runtime()?;
    let app = open_app(&runtime, here)?;
    Ok(runtime.block_on(job(&app))?)
}

fn print_report(
    out: &mut impl Write,
    outcome: Outcome<ActReport>,
    format: crate::Format,
) -> Result<Verdict> {
    match format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&outcome.report)?)?,
        crate::Format::Text => write!(out, "{}", text::act(&outcome.report))?,
    }
    Ok(outcome.verdict)
}

pub fn fix(here: &Here, args: &FixArgs, out: &mut impl Write) -> Result<Verdict> {
    let job = FixJob {
        ids: if args.all {
            Vec::new()
        } else {
            args.ids.clone()
        },
        guidance: args.comment.clone(),
        model: args.common.model.clone(),
    };
    let outcome = with_app(here, async |app| app.fix(job).await)?;
    print_report(out, outcome, args.common.format)
}

pub fn do_request(here: &Here, args: &TextArgs, out: &mut impl Write) -> Result<Verdict> {
    let model = args.common.model.as_deref();
    let outcome = with_app(here, async |app| app.do_request(&args.text, model).await)?;
    print_report(out, outcome, args.common.format)
}

pub fn ask(here: &Here, args: &TextArgs, out: &mut impl Write) -> Result<Verdict> {
    let model = args.common.model.as_deref();
    let outcome = with_app(here, async |app| app.ask(&args.text, model).await)?;
    match args.common.format {
        crate::Format::Json => {
            writeln!(out, "{}", serde_json::json!({"answer": outcome.report}))?;
        }
        crate::Format::Text => writeln!(out, "{}", outcome.report.trim_end())?,
    }
    Ok(outcome.verdict)
}

pub fn comment(here: &Here, args: &CommentArgs, out: &mut impl Write) -> Result<Verdict> {
    let job = CommentJob {
        text: args.text.clone(),
        reply_to: args.reply_to.clone(),
        model: args.common.model.clone(),
    };
    let outcome = with_app(here, async |app| app.comment(job).await)?;
    print_report(out, outcome, args.common.format)
}

pub fn reply(here: &Here, args: &ReplyArgs, out: &mut impl Write) -> Result<Verdict> {
    let job = ReplyJob {
        finding: args.id.clone(),
        text: args.text.clone(),
        now: args.now,
        model: args.common.model.clone(),
    };
    let outcome = with_app(here, async |app| app.reply(job).await)?;
    match (&outcome.report, args.common.format) {
        (ReplyOutcome::Stored, crate::Format::Text) => writeln!(
            out,
            "Reply added; the next `bugloop review` (or `bugloop reply --now`) answers it."
        )?,
        (ReplyOutcome::StoredOnResolved { finding }, crate::Format::Text) => writeln!(
            out,
            "Reply added. {finding} is resolved, so nothing answers it: a review and \
             `bugloop reply --now` weigh replies to open findings only."
        )?,
        (ReplyOutcome::Stored, crate::Format::Json) => {
            writeln!(out, "{}", serde_json::json!({"added": true}))?;
        }
        (ReplyOutcome::StoredOnResolved { .. }, crate::Format::Json) => {
            writeln!(
                out,
                "{}",
                serde_json::json!({"added": true, "answered": false, "why": "the finding is resolved"})
            )?;
        }
        (ReplyOutcome::Weighed(weighed), crate::Format::Json) => {
            writeln!(out, "{}", json::to_json(weighed)?)?;
        }
        (ReplyOutcome::Weighed(weighed), crate::Format::Text) => {
            write!(out, "{}", text::dispute(weighed))?;
        }
    }
    Ok(outcome.verdict)
}

#[derive(Debug, clap::Args)]
pub struct ConvergeArgs {
    /// Converge the change from this revision (default: the merge base with the default branch).
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    #[command(flatten)]
    pub common: ModelArg,
}

pub fn converge(here: &Here, args: &ConvergeArgs, out: &mut impl Write) -> Result<Verdict> {
    let job = ConvergeJob {
        base: args.base.clone(),
        model: args.common.model.clone(),
    };
    let outcome = with_app(here, async |app| app.converge(job).await)?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&outcome.report)?)?,
        crate::Format::Text => write!(out, "{}", text::converge(&outcome.report))?,
    }
    Ok(outcome.verdict)
}
