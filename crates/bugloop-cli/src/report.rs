//! `bugloop report [FILE|-]`: an error (a stack trace, a log excerpt, JSON log lines) filed as
//! an issue of the local forge, or counted on the issue already filed for it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bugloop_app::Verdict;

use crate::Here;
use crate::{Format, open_app, runtime};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The report: a file, or `-` (the default) for standard input.
    #[arg(value_name = "FILE|-")]
    pub input: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

fn read_input(input: Option<&Path>) -> Result<Vec<u8>> {
    let limit = u64::try_from(bugloop_app::types::MAX_REPORT_BYTES).unwrap_or(u64::MAX);
    let mut bytes = Vec::new();
    match input.filter(|path| *path != Path::new("-")) {
        None => {
            std::io::stdin()
                .lock()
                .take(limit)
                .read_to_end(&mut bytes)
                .context("cannot read the report from standard input")?;
        }
        Some(path) => {
            std::fs::File::open(path)
                .with_context(|| format!("cannot open the report {}", path.display()))?
                .take(limit)
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read the report {}", path.display()))?;
        }
    }
    Ok(bytes)
}

pub fn report(here: &Here, args: &ReportArgs, out: &mut impl Write) -> Result<Verdict> {
    let bytes = read_input(args.input.as_deref())?;
    let runtime = runtime()?;
    let app = open_app(&runtime, here)?;
    let outcome = runtime.block_on(app.file_error_report(&bytes))?;
    crate::warn(&outcome.warnings)?;
    let report = &outcome.report;
    match args.format {
        Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(report)?)?,
        Format::Text => {
            let what = if report.filed { "filed" } else { "counted on" };
            writeln!(
                out,
                "{what} issue #{}: {} ({} report{}, severity {})",
                report.issue,
                report.title,
                report.count,
                if report.count == 1 { "" } else { "s" },
                report.severity.as_str()
            )?;
            for place in &report.located {
                let line = place.line.map(|l| format!(":{l}")).unwrap_or_default();
                writeln!(out, "  at {}{line}", place.path)?;
            }
            if report.located.is_empty() {
                // Free text, a log line, or a trace of code elsewhere: said, so a report that is
                // not what was meant (the wrong file piped in) is seen at once.
                writeln!(
                    out,
                    "  no frame of it is a file of this repository: solving starts from its text alone"
                )?;
            }
            if let Some(regression) = &report.regression {
                let state = regression.state.map_or("(none)", |s| s.as_str());
                writeln!(out, "regression: {} [{state}]", regression.message)?;
            }
            if let Some(another) = &report.another_error {
                let what = if another.filed { "filed" } else { "counted on" };
                writeln!(
                    out,
                    "not a regression of #{}: {}; {what} issue #{} ({} report{})",
                    report.issue,
                    another.reason,
                    another.issue,
                    another.count,
                    if another.count == 1 { "" } else { "s" }
                )?;
            }
        }
    }
    Ok(outcome.verdict)
}
