//! `bugloop watch [FILE...|-]`: follows log files as `tail -F` does (a file rotated away is read
//! to its end and the new one from its start; a truncated one from its start; a missing one
//! waited for), or standard input, finds the error reports in them (the intake's segmenter),
//! and files or counts each through the same gate (`bugloop_app::Watch`: one count per error
//! and window, a rate over all). `--once` reads what is there and stops.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bugloop_app::types::Segmenter;
use bugloop_app::{ConfigChoice, Verdict, WatchEvent, WatchLimits};

use crate::{Format, open_app, runtime};

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Log files to follow; `-` (or none) for standard input.
    #[arg(value_name = "FILE|-")]
    pub inputs: Vec<PathBuf>,
    /// Read what the files hold now, from their start, and stop (a batch).
    #[arg(long)]
    pub once: bool,
    /// When following, read the files from their start rather than only what is written next.
    #[arg(long)]
    pub from_start: bool,
    /// An error filed or counted is not counted again for this many seconds.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub window: u64,
    /// At most this many reports filed or counted in any minute; the rest are dropped, and said.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub per_minute: usize,
    /// How often the files are looked at, in milliseconds.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub poll_ms: u64,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// A trace still being written ends after this long without a new line.
const QUIET: Duration = Duration::from_millis(1_000);
/// The most bytes read from a source per look (a huge log is read in steps).
const CHUNK: usize = 1 << 20;

/// One followed file: where it is read up to, and which file (device, inode) that is.
struct Followed {
    path: PathBuf,
    file: Option<(File, u64, u64)>,
    /// Bytes after the last line end.
    partial: Vec<u8>,
    segmenter: Segmenter,
    last_line: Instant,
    missing_said: bool,
}

impl Followed {
    fn new(path: PathBuf, from_start: bool) -> Followed {
        let mut followed = Followed {
            path,
            file: None,
            partial: Vec::new(),
            segmenter: Segmenter::new(),
            last_line: Instant::now(),
            missing_said: false,
        };
        followed.open(!from_start);
        followed
    }

    /// Opens the file at the path (at its end when `at_end`), if it is there.
    fn open(&mut self, at_end: bool) {
        let Ok(mut file) = File::open(&self.path) else {
            return;
        };
        let Ok(meta) = file.metadata() else {
            return;
        };
        if at_end {
            let _ = file.seek(SeekFrom::End(0));
        }
        self.file = Some((file, meta.dev(), meta.ino()));
    }

    /// Reads what was written since the last look: lines of the file it has open, then, when
    /// the path is another file now (rotated) or the file shrank (truncated), the new one's.
    fn read_lines(&mut self, lines: &mut Vec<String>) -> Result<()> {
        if self.file.is_none() {
            self.open(false);
        }
        let Some((file, dev, ino)) = &mut self.file else {
            return Ok(());
        };
        let mut buffer = vec![0u8; CHUNK];
        let read = file
            .read(&mut buffer)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        self.partial.extend_from_slice(&buffer[..read]);
        take_lines(&mut self.partial, lines);
        if read > 0 {
            return Ok(());
        }
        // Nothing more in the open file: has the path moved on?
        let position = file.stream_position().unwrap_or(0);
        match std::fs::metadata(&self.path) {
            Ok(meta) if meta.dev() != *dev || meta.ino() != *ino => {
                // Rotated: the old file is read to its end (above); the new one from its start.
                flush_partial(&mut self.partial, lines);
                self.file = None;
                self.open(false);
            }
            Ok(meta) if meta.len() < position => {
                // Truncated in place (`> app.log`, copytruncate): from its start again.
                flush_partial(&mut self.partial, lines);
                let _ = file.seek(SeekFrom::Start(0));
            }
            _ => {}
        }
        Ok(())
    }
}

/// Moves the complete lines of `partial` into `lines`.
fn take_lines(partial: &mut Vec<u8>, lines: &mut Vec<String>) {
    while let Some(end) = partial.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = partial.drain(..=end).collect();
        lines.push(String::from_utf8_lossy(&line[..end]).into_owned());
    }
}

/// A last line without its line end (the file ended there).
fn flush_partial(partial: &mut Vec<u8>, lines: &mut Vec<String>) {
    if !partial.is_empty() {
        lines.push(String::from_utf8_lossy(partial).into_owned());
        partial.clear();
    }
}

pub fn watch(
    cwd: &Path,
    choice: &ConfigChoice,
    args: &WatchArgs,
    out: &mut impl Write,
) -> Result<Verdict> {
    let runtime = runtime()?;
    let app = open_app(&runtime, cwd, choice)?;
    let limits = WatchLimits {
        window: Duration::from_secs(args.window),
        per_minute: args.per_minute,
    };
    let mut gate = app.watch(limits);
    let stdin = args.inputs.is_empty() || args.inputs.iter().any(|p| p == Path::new("-"));
    let files: Vec<PathBuf> = args
        .inputs
        .iter()
        .filter(|p| *p != Path::new("-"))
        .cloned()
        .collect();
    let result = runtime.block_on(async {
        if stdin {
            watch_stdin(&mut gate, args, out).await
        } else {
            watch_files(&mut gate, &files, args, out).await
        }
    });
    crate::warn(&gate.warnings)?;
    result?;
    if gate.dropped() > 0 {
        writeln!(
            out,
            "{} report{} dropped over the rate (--per-minute {})",
            gate.dropped(),
            if gate.dropped() == 1 { "" } else { "s" },
            args.per_minute
        )?;
    }
    Ok(Verdict::Done)
}

/// Offers each report and says what became of it, one line (or JSON object) each.
async fn offer_all(
    gate: &mut bugloop_app::Watch<'_>,
    reports: Vec<String>,
    format: Format,
    out: &mut impl Write,
) -> Result<()> {
    for report in reports {
        let event = match gate.offer(&report, Instant::now()).await {
            Ok(event) => event,
            // An unreadable report is said and the watch goes on.
            Err(bugloop_app::AppError::Invalid(reason)) => {
                writeln!(out, "skipped a report: {reason}")?;
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        match format {
            Format::Json => writeln!(out, "{}", serde_json::to_string(&event)?)?,
            Format::Text => match &event {
                WatchEvent::Reported(report) => writeln!(
                    out,
                    "{} issue #{}: {} ({} report{})",
                    if report.filed { "filed" } else { "counted on" },
                    report.issue,
                    report.title,
                    report.count,
                    if report.count == 1 { "" } else { "s" }
                )?,
                WatchEvent::Repeat {
                    fingerprint,
                    repeats,
                } => writeln!(
                    out,
                    "repeat of {fingerprint} within the window ({repeats} so far)"
                )?,
                WatchEvent::RateLimited { dropped } => {
                    writeln!(out, "over the rate: dropped ({dropped} so far)")?;
                }
            },
        }
        out.flush()?;
    }
    Ok(())
}

async fn watch_files(
    gate: &mut bugloop_app::Watch<'_>,
    files: &[PathBuf],
    args: &WatchArgs,
    out: &mut impl Write,
) -> Result<()> {
    let mut followed: Vec<Followed> = files
        .iter()
        .map(|path| Followed::new(path.clone(), args.from_start || args.once))
        .collect();
    if args.once {
        for file in &mut followed {
            if file.file.is_none() {
                anyhow::bail!("cannot open {}", file.path.display());
            }
        }
    }
    let poll = Duration::from_millis(args.poll_ms.max(10));
    let mut stop = std::pin::pin!(stop_signal());
    loop {
        let mut idle = true;
        for file in &mut followed {
            let mut lines = Vec::new();
            file.read_lines(&mut lines)?;
            if file.file.is_none() && !file.missing_said && !args.once {
                writeln!(out, "waiting for {} to appear", file.path.display())?;
                file.missing_said = true;
            }
            if args.once {
                flush_partial(&mut file.partial, &mut lines);
            }
            let mut reports = Vec::new();
            if !lines.is_empty() {
                idle = false;
                file.last_line = Instant::now();
            }
            for line in &lines {
                reports.extend(file.segmenter.push_line(line));
            }
            if file.segmenter.collecting() && file.last_line.elapsed() >= QUIET {
                reports.extend(file.segmenter.finish());
            }
            offer_all(gate, reports, args.format, out).await?;
        }
        if args.once && idle {
            let mut reports = Vec::new();
            for file in &mut followed {
                reports.extend(file.segmenter.finish());
            }
            return offer_all(gate, reports, args.format, out).await;
        }
        if idle {
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(poll) => {}
            }
        }
    }
    // Stopped: what was being collected is a report too.
    let mut reports = Vec::new();
    for file in &mut followed {
        let mut lines = Vec::new();
        flush_partial(&mut file.partial, &mut lines);
        for line in &lines {
            reports.extend(file.segmenter.push_line(line));
        }
        reports.extend(file.segmenter.finish());
    }
    offer_all(gate, reports, args.format, out).await
}

async fn watch_stdin(
    gate: &mut bugloop_app::Watch<'_>,
    args: &WatchArgs,
    out: &mut impl Write,
) -> Result<()> {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(tokio::io::stdin());
    let mut segmenter = Segmenter::new();
    let mut stop = std::pin::pin!(stop_signal());
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = tokio::select! {
            () = &mut stop => break,
            read = reader.read_until(b'\n', &mut line) => read.context("cannot read standard input")?,
            () = tokio::time::sleep(QUIET), if segmenter.collecting() => {
                let reports: Vec<String> = segmenter.finish().into_iter().collect();
                offer_all(gate, reports, args.format, out).await?;
                continue;
            }
        };
        if read == 0 {
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let reports = segmenter.push_line(text);
        offer_all(gate, reports, args.format, out).await?;
    }
    let reports: Vec<String> = segmenter.finish().into_iter().collect();
    offer_all(gate, reports, args.format, out).await
}

/// Resolves when the process is asked to stop (Ctrl-C, SIGTERM).
async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
