//! Other reviewers on a local change request (a solve draft): `bugloop comment --change N --file
//! F --line L`, `bugloop review-decision N`, and `bugloop checks N`. This file parses, calls the
//! application layer and prints.

use std::io::Write;

use anyhow::{Result, bail};
use bugloop_app::types::{CheckState, ReviewDecision, json};
use bugloop_app::{ChecksJob, ReviewCommentJob, ReviewDecisionJob, Verdict};

use crate::Here;
use crate::act::{CommentArgs, with_app};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("decision").required(true).args(["approve", "request_changes", "comment"])))]
pub struct ReviewDecisionArgs {
    /// The change request's number.
    pub change: u64,
    /// What the review says (optional).
    #[arg(default_value = "")]
    pub text: String,
    /// The reviewer approves the change request's head.
    #[arg(long)]
    pub approve: bool,
    /// The reviewer asks for changes: the ready gate waits until they review again.
    #[arg(long)]
    pub request_changes: bool,
    /// A review that only comments (no decision).
    #[arg(long)]
    pub comment: bool,
    /// The reviewer (default: you, from git's user.name).
    #[arg(long = "as", value_name = "NAME")]
    pub reviewer: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

#[derive(Debug, clap::Args)]
pub struct ChecksArgs {
    /// The change request's number.
    pub change: u64,
    /// Record a check's result on the head instead of running the test commands (a CI run
    /// elsewhere): NAME=passed, NAME=failed or NAME=pending; repeatable.
    #[arg(long, value_name = "NAME=STATE")]
    pub record: Vec<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

/// A reviewer's line comment (`bugloop comment --change N --file F --line L`).
pub fn comment(here: &Here, args: &CommentArgs, out: &mut impl Write) -> Result<Verdict> {
    let (Some(change), Some(file), Some(line)) = (args.change, &args.file, args.line) else {
        bail!("a reviewer's comment needs --change, --file and --line");
    };
    let job = ReviewCommentJob {
        change,
        reviewer: args.reviewer.clone(),
        file: file.clone(),
        line,
        body: args.text.clone(),
    };
    let added = with_app(here, async |app| app.review_comment(job).await)?;
    match args.common.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&added)?)?,
        crate::Format::Text => writeln!(
            out,
            "{}'s comment added to #{change} at {}:{}; `bugloop solve` addresses it in the next \
             review round.",
            added.author,
            added.path.as_deref().unwrap_or_default(),
            added.line.unwrap_or_default()
        )?,
    }
    Ok(Verdict::Done)
}

pub fn review_decision(
    here: &Here,
    args: &ReviewDecisionArgs,
    out: &mut impl Write,
) -> Result<Verdict> {
    let decision = if args.approve {
        ReviewDecision::Approved
    } else if args.request_changes {
        ReviewDecision::ChangesRequested
    } else {
        ReviewDecision::Commented
    };
    let job = ReviewDecisionJob {
        change: args.change,
        reviewer: args.reviewer.clone(),
        decision,
        body: args.text.clone(),
    };
    let review = with_app(here, async |app| app.review_decision(job).await)?;
    match args.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&review)?)?,
        crate::Format::Text => {
            let said = match review.decision {
                ReviewDecision::Approved => "approved",
                ReviewDecision::ChangesRequested => "requested changes on",
                ReviewDecision::Commented => "commented on",
            };
            writeln!(
                out,
                "{} {said} #{} at {}.",
                review.reviewer,
                args.change,
                &review.commit[..12.min(review.commit.len())]
            )?;
        }
    }
    Ok(Verdict::Done)
}

fn check_state(text: &str) -> Result<(String, CheckState)> {
    let Some((name, state)) = text.rsplit_once('=') else {
        bail!("--record {text:?}: write NAME=passed, NAME=failed or NAME=pending");
    };
    let state = match state.trim() {
        "passed" | "success" => CheckState::Passed,
        "failed" | "failure" => CheckState::Failed,
        "pending" => CheckState::Pending,
        other => bail!("--record {text:?}: {other:?} is not passed, failed or pending"),
    };
    Ok((name.trim().to_owned(), state))
}

pub fn checks(here: &Here, args: &ChecksArgs, out: &mut impl Write) -> Result<Verdict> {
    let record = args
        .record
        .iter()
        .map(|r| check_state(r))
        .collect::<Result<Vec<_>>>()?;
    let job = ChecksJob {
        change: args.change,
        record,
    };
    let view = with_app(here, async |app| app.checks(job).await)?;
    match args.format {
        crate::Format::Json => writeln!(out, "{}", json::to_json(&view)?)?,
        crate::Format::Text => {
            writeln!(
                out,
                "Checks on #{} at {}:",
                view.change,
                &view.head[..12.min(view.head.len())]
            )?;
            for check in &view.checks {
                let state = match check.state {
                    CheckState::Passed => "passed ",
                    CheckState::Failed => "failed ",
                    CheckState::Pending => "pending",
                };
                write!(out, "  {state}  {}", check.name)?;
                if check.state == CheckState::Failed && !check.detail.is_empty() {
                    write!(out, ": {}", check.detail)?;
                }
                writeln!(out)?;
            }
        }
    }
    let failed: Vec<&str> = view
        .checks
        .iter()
        .filter(|c| c.state == CheckState::Failed)
        .map(|c| c.name.as_str())
        .collect();
    Ok(if failed.is_empty() {
        Verdict::Done
    } else {
        Verdict::Problems {
            what: format!("failing checks: {}", failed.join(", ")),
        }
    })
}
