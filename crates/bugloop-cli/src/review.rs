//! `bugloop review`, `bugloop findings` and `bugloop store`: their arguments, the call into the
//! application layer, and printing.

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Result;
use bugloop_app::types::style::Style;
use bugloop_app::types::{json, markdown, sarif, text};
use bugloop_app::{FindingThread, ReviewJob, ReviewScope, StoreAction, StoreResult, Verdict};
use clap::ValueEnum;

use crate::Here;
use crate::{open_app, runtime, warn};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
    Sarif,
    Markdown,
}

#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// Compare with this revision (default: the merge base with origin/HEAD, main or master).
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "working"])]
    pub base: Option<String>,
    /// Review up to this revision instead of HEAD.
    #[arg(long, value_name = "REV", conflicts_with_all = ["staged", "working"])]
    pub head: Option<String>,
    /// Review what is staged, against HEAD.
    #[arg(long, conflicts_with = "working")]
    pub staged: bool,
    /// Review every uncommitted change (staged, unstaged and untracked files), against HEAD.
    #[arg(long)]
    pub working: bool,
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Exit with status 1 when an open finding scores at least this (1-10).
    #[arg(long, value_name = "SCORE", value_parser = clap::value_parser!(u8).range(1..=10))]
    pub fail_on: Option<u8>,
    /// The model (provider:model), instead of the configured one.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Report only: publish nothing to the local conversation.
    #[arg(long)]
    pub dry_run: bool,
    /// Show the model the whole change, even when an earlier commit of it was reviewed
    /// (otherwise only what changed since that review is shown).
    #[arg(long)]
    pub full: bool,
}

pub fn review(here: &Here, args: &ReviewArgs, out: &mut impl Write) -> Result<Verdict> {
    let runtime = runtime()?;
    let app = open_app(&runtime, here)?;
    let scope = if args.staged {
        ReviewScope::Staged
    } else if args.working {
        ReviewScope::Working
    } else if args.base.is_some() || args.head.is_some() {
        ReviewScope::Range {
            base: args.base.clone(),
            head: args.head.clone(),
        }
    } else {
        ReviewScope::Branch
    };
    let outcome = runtime.block_on(app.review(ReviewJob {
        scope,
        fail_on: args.fail_on,
        model: args.model.clone(),
        dry_run: args.dry_run,
        full: args.full,
    }))?;
    if let Verdict::NothingToDo { reason } = &outcome.verdict {
        // Every format says it, so a report redirected to a file is always one of its kind.
        match args.format {
            ReportFormat::Text => writeln!(out, "{reason}")?,
            ReportFormat::Json => writeln!(
                out,
                "{}",
                serde_json::json!({"reviewed": false, "reason": reason})
            )?,
            ReportFormat::Sarif => {
                writeln!(out, "{}", json::to_json(&sarif::nothing_reviewed(reason))?)?;
            }
            ReportFormat::Markdown => writeln!(out, "## bugloop review\n\n{reason}")?,
        }
    }
    warn(&outcome.warnings)?;
    if let Some(report) = &outcome.report {
        match args.format {
            ReportFormat::Text => {
                let color =
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
                write!(out, "{}", text::review(report, Style::new(color)))?;
            }
            ReportFormat::Json => writeln!(out, "{}", json::to_json(report)?)?,
            ReportFormat::Sarif => {
                writeln!(out, "{}", json::to_json(&sarif::review(report))?)?;
            }
            ReportFormat::Markdown => write!(out, "{}", markdown::review(report))?,
        }
    }
    if let Verdict::Incomplete { cause } = &outcome.verdict {
        warn(&[format!("the review is incomplete: {cause}")])?;
    }
    Ok(outcome.verdict)
}

#[derive(Debug, clap::Subcommand)]
pub enum FindingsCommand {
    /// One finding with its whole thread.
    Show {
        /// The finding id (or a unique prefix of it).
        id: String,
        #[arg(long, value_enum, default_value_t = crate::Format::Text)]
        format: crate::Format,
    },
}

#[derive(Debug, clap::Args)]
pub struct FindingsArgs {
    #[command(subcommand)]
    pub command: Option<FindingsCommand>,
    /// The conversation to read (default: the checked-out branch's), e.g. `branch:main`.
    #[arg(long, value_name = "KEY", global = true)]
    pub change: Option<String>,
    #[arg(long, value_enum, default_value_t = crate::Format::Text)]
    pub format: crate::Format,
}

/// Names the conversations of branches that no longer exist, and how to read one. A branch name
/// may hold what a shell or a terminal would act on (`;`, `$`, control or bidi characters): such a
/// name is shown escaped, and never as part of a command to copy.
fn write_orphaned(out: &mut impl Write, orphaned: &[String]) -> Result<()> {
    let plain = |key: &str| {
        key.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
    };
    let names: Vec<String> = orphaned
        .iter()
        .map(|key| {
            if plain(key) {
                key.clone()
            } else {
                format!("{key:?}")
            }
        })
        .collect();
    write!(
        out,
        "Conversations of branches that no longer exist: {}.",
        names.join(", ")
    )?;
    match orphaned.iter().find(|key| plain(key)) {
        Some(key) => writeln!(
            out,
            " If this branch was renamed, `bugloop findings --change {key}` reads its findings \
             (and `git branch -m` back to the old name has them followed again).",
        )?,
        None => writeln!(out)?,
    }
    Ok(())
}

/// `bugloop findings`: the findings tracked in a change's conversation, or one of them with its
/// whole thread.
pub fn findings(here: &Here, args: &FindingsArgs, out: &mut impl Write) -> Result<Verdict> {
    let runtime = runtime()?;
    let app = open_app(&runtime, here)?;
    let key = app.change_key(args.change.as_deref());
    match &args.command {
        None => {
            let threads = runtime.block_on(app.findings(&key))?;
            match args.format {
                crate::Format::Json => {
                    writeln!(out, "{}", serde_json::to_string_pretty(&threads)?)?;
                }
                crate::Format::Text if threads.is_empty() => {
                    writeln!(out, "No findings tracked for {key}.")?;
                    let orphaned = runtime.block_on(app.orphaned_conversations())?;
                    if args.change.is_none() && !orphaned.is_empty() {
                        write_orphaned(out, &orphaned)?;
                    }
                }
                crate::Format::Text => {
                    writeln!(out, "Findings of {key}:")?;
                    for t in &threads {
                        let place = match (&t.file, t.line) {
                            (Some(f), Some(l)) => format!("{f}:{l}"),
                            (Some(f), None) => f.clone(),
                            _ => String::new(),
                        };
                        let score = t.score.map_or("-".to_owned(), |s| format!("{s}/10"));
                        let replies = replies_note(t.developer_replies.len());
                        writeln!(
                            out,
                            "  {:<9} {:>5}  {}{replies}\n                   {}  {}",
                            t.status.as_str(),
                            score,
                            t.title,
                            t.finding_id.as_ref().map_or("", |f| f.as_str()),
                            place
                        )?;
                    }
                }
            }
        }
        Some(FindingsCommand::Show { id, format }) => {
            let found = runtime.block_on(app.finding(&key, id))?;
            finding_thread(out, &found, *format)?;
        }
    }
    Ok(Verdict::Done)
}

/// How many replies the developers wrote to a finding, after its title; nothing when none.
fn replies_note(count: usize) -> String {
    if count == 0 {
        String::new()
    } else {
        format!(" ({count} repl{})", if count == 1 { "y" } else { "ies" })
    }
}

/// One finding with its whole thread: as JSON, or its id, status and score, then each comment
/// under a line saying who wrote it, when, and where.
fn finding_thread(
    out: &mut impl Write,
    found: &FindingThread,
    format: crate::Format,
) -> Result<()> {
    let (thread, members) = (&found.finding, &found.comments);
    match format {
        crate::Format::Json => writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "finding": thread,
                "comments": members,
            }))?
        )?,
        crate::Format::Text => {
            // Where the finding is now (its record, moved with its code), which the comment's
            // own anchor below may no longer be.
            let recorded = |key: &str| thread.recorded(key);
            let file = recorded("file")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
                .or_else(|| thread.file.clone());
            let line = recorded("line")
                .and_then(serde_json::Value::as_u64)
                .or(thread.line.map(u64::from));
            let place = match (file, line) {
                (Some(file), Some(line)) => format!(" · {file}:{line}"),
                (Some(file), None) => format!(" · {file}"),
                _ => String::new(),
            };
            writeln!(
                out,
                "{} · {} · score {}{place}",
                thread.finding_id.as_ref().map_or("", |f| f.as_str()),
                thread.status,
                thread.score.map_or("-".to_owned(), |s| s.to_string())
            )?;
            for comment in members {
                writeln!(
                    out,
                    "\n── {} · {} · comment {}{}\n{}",
                    comment.author,
                    comment.created_at.strftime("%Y-%m-%d %H:%M"),
                    comment.id,
                    comment.path.as_ref().map_or(String::new(), |p| format!(
                        " · {p}:{}",
                        comment.line.unwrap_or(0)
                    )),
                    crate::terminal::quoted(&comment.as_read())
                )?;
            }
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, clap::Subcommand)]
pub enum StoreCommand {
    /// Print where the local store is.
    Path,
    /// Move a damaged store aside (kept for recovery) so the next command starts an empty one.
    Reset,
}

pub fn store(cwd: &Path, command: StoreCommand, out: &mut impl Write) -> Result<Verdict> {
    let action = match command {
        StoreCommand::Path => StoreAction::Path,
        StoreCommand::Reset => StoreAction::Reset,
    };
    match bugloop_app::store_action(cwd, action)? {
        StoreResult::Location(path) => writeln!(out, "{}", path.display())?,
        StoreResult::NothingToReset(path) => {
            writeln!(out, "There is no store at {} yet.", path.display())?;
        }
        StoreResult::MovedAside { from, to } => writeln!(
            out,
            "Moved {} to {}; the next command starts an empty store.",
            from.display(),
            to.display()
        )?,
    }
    Ok(Verdict::Done)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A branch name a shell would act on is shown escaped and never in a command to copy.
    #[test]
    fn an_orphaned_conversation_is_named_safely() {
        let mut out = Vec::new();
        let names = [
            "branch:fix;touch${IFS}/tmp/x;#".to_owned(),
            "branch:\u{202e}gnp.exe".to_owned(),
        ];
        write_orphaned(&mut out, &names).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Conversations of branches that no longer exist: \"branch:fix;touch${IFS}/tmp/x;#\", \
             \"branch:\\u{202e}gnp.exe\".\n"
        );
        let mut out = Vec::new();
        let names = ["branch:a b".to_owned(), "branch:feature".to_owned()];
        write_orphaned(&mut out, &names).unwrap();
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("`bugloop findings --change branch:feature` reads")
        );
    }
}
