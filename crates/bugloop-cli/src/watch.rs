//! `bugloop watch [FILE...|-]`: follows log files as `tail -F` does (a file rotated away is read
//! to its end and the new one from its start; a truncated one from its start; a missing one
//! waited for), or standard input, finds the error reports in them (the intake's segmenter),
//! and files or counts each through the same gate (`bugloop_app::Watch`: one count per error
//! and window, a rate over all). `--once` reads what is there and stops.

use std::fs::File;
use std::io::{Read as _, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bugloop_app::types::Segmenter;
use bugloop_app::{Verdict, WatchEvent, WatchLimits};

use crate::Here;
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
    /// Reports whose trace is in files under PREFIX are filed in the repository at REPOSITORY
    /// (a directory), not this one: `--route /srv/api/=../api`. The first route a frame matches
    /// wins (the innermost frame first); other reports are this repository's.
    #[arg(long = "route", value_name = "PREFIX=REPOSITORY")]
    pub routes: Vec<String>,
    /// Read a file through a symbolic link at its path (by default a link is not read: whoever
    /// may write the log's directory could point it at a file only the watcher may read).
    #[arg(long)]
    pub follow_symlinks: bool,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// A trace still being written ends after this long without a new line.
const QUIET: Duration = Duration::from_millis(1_000);
/// The most bytes read from a source per look (a huge log is read in steps).
const CHUNK: usize = 1 << 20;
/// The longest line kept; the rest of a longer one is dropped up to its end (a log line that
/// never ends does not grow the watcher's memory).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// What the files gave since the last look.
enum Got {
    Line(String),
    /// Another file from here on (rotated, truncated): a trace does not span the two.
    Boundary,
}

/// Lines out of bytes as they arrive, a line at most [`MAX_LINE_BYTES`].
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    /// Dropping the rest of a line that was too long, up to its end.
    dropping: bool,
}

impl Lines {
    fn push(&mut self, bytes: &[u8], out: &mut Vec<Got>) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            if !self.dropping {
                self.take(&rest[..end]);
            }
            out.push(Got::Line(
                String::from_utf8_lossy(&self.partial).into_owned(),
            ));
            self.partial.clear();
            self.dropping = false;
            rest = &rest[end + 1..];
        }
        if !self.dropping {
            self.take(rest);
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        if bytes.len() > room {
            // Kept as cut, the rest dropped: the line is still read (a trace's head line).
            self.dropping = true;
        }
    }

    /// A last line without its end (the file ended, or another one begins).
    fn flush(&mut self, out: &mut Vec<Got>) {
        if !self.partial.is_empty() {
            out.push(Got::Line(
                String::from_utf8_lossy(&self.partial).into_owned(),
            ));
        }
        self.partial.clear();
        self.dropping = false;
    }
}

/// One followed file: where it is read up to, and which file (device, inode) that is.
struct Followed {
    path: PathBuf,
    file: Option<(File, u64, u64)>,
    /// The owner of the file first opened: a file of another owner at the path later is not
    /// read (a log writer swapping in someone else's file).
    owner: Option<u32>,
    follow_symlinks: bool,
    lines: Lines,
    segmenter: Segmenter,
    last_line: Instant,
    /// Why the path is not read, said once per reason.
    said: Option<String>,
    /// The last bytes read (at most [`TAIL`]): a file truncated and written again past where it
    /// was read up to before the next look (`copytruncate`, then a burst) has other bytes there.
    tail: Vec<u8>,
}

/// How many of the last bytes read are kept to notice a file written anew.
const TAIL: usize = 64;

impl Followed {
    fn new(path: PathBuf, from_start: bool, follow_symlinks: bool) -> Followed {
        let mut followed = Followed {
            path,
            file: None,
            owner: None,
            follow_symlinks,
            lines: Lines::default(),
            segmenter: Segmenter::new(),
            last_line: Instant::now(),
            said: None,
            tail: Vec::new(),
        };
        followed.open(!from_start);
        followed
    }

    /// Opens the file at the path (at its end when `at_end`), when it is a regular file (not a
    /// symbolic link unless `--follow-symlinks`, not a pipe, device or directory) of the owner
    /// the watch began with; otherwise says why, once.
    fn open(&mut self, at_end: bool) -> Option<String> {
        use std::os::unix::fs::OpenOptionsExt;
        let before = std::fs::symlink_metadata(&self.path).ok()?;
        let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
        if !self.follow_symlinks {
            flags |= libc::O_NOFOLLOW;
        }
        let refused = |why: &str| Some(format!("{} is not read: {why}", self.path.display()));
        if before.file_type().is_symlink() && !self.follow_symlinks {
            return refused("it is a symbolic link (--follow-symlinks reads through one)");
        }
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(&self.path)
        {
            Ok(file) => file,
            Err(error) => return refused(&error.to_string()),
        };
        let Ok(meta) = file.metadata() else {
            return refused("its metadata cannot be read");
        };
        if !meta.is_file() {
            return refused("it is not a regular file");
        }
        if !self.follow_symlinks && (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
            return refused("it changed while it was opened");
        }
        match self.owner {
            Some(owner) if owner != meta.uid() => {
                return refused(&format!(
                    "its owner is now uid {} (uid {owner} when the watch began)",
                    meta.uid()
                ));
            }
            _ => self.owner = Some(meta.uid()),
        }
        self.tail.clear();
        if at_end {
            let end = file.seek(SeekFrom::End(0)).unwrap_or(0);
            self.tail = bytes_before(&file, end);
        }
        self.file = Some((file, meta.dev(), meta.ino()));
        None
    }

    /// Reads what was written since the last look: the lines of the file it has open, then,
    /// when the path is another file now (rotated) or the file shrank (truncated), a boundary
    /// and the new one's. `true` when the open file had nothing more (its end, for now).
    fn read(&mut self, out: &mut Vec<Got>, once: bool) -> bool {
        if self.file.is_none() {
            match self.open(false) {
                None => {}
                Some(why) => {
                    self.say(why);
                    return true;
                }
            }
        }
        let Some((file, dev, ino)) = &mut self.file else {
            if self.said.is_none() {
                // Said once, on standard error: standard output is the events (one JSON object
                // a line with `--format json`).
                let _ = writeln!(
                    crate::terminal::stderr(),
                    "waiting for {} to appear",
                    self.path.display()
                );
                self.said = Some(format!("waiting for {} to appear", self.path.display()));
            }
            return true;
        };
        // Truncated and written again past where it was read up to, since the last look
        // (`copytruncate`, then a burst): the bytes before that point are others now.
        let position = file.stream_position().unwrap_or(0);
        if bytes_before(file, position) != self.tail {
            self.lines.flush(out);
            out.push(Got::Boundary);
            let _ = file.seek(SeekFrom::Start(0));
            self.tail.clear();
        }
        let mut buffer = vec![0u8; CHUNK];
        let read = match file.read(&mut buffer) {
            Ok(read) => read,
            Err(error) => {
                let why = format!("{} could not be read: {error}", self.path.display());
                self.file = None;
                self.say(why);
                return true;
            }
        };
        self.lines.push(&buffer[..read], out);
        if read > 0 {
            let keep = self.tail.len().min(TAIL.saturating_sub(read));
            self.tail.drain(..self.tail.len() - keep);
            self.tail
                .extend_from_slice(&buffer[read.saturating_sub(TAIL)..read]);
            return false;
        }
        if once {
            self.lines.flush(out);
            return true;
        }
        // Nothing more in the open file: has the path moved on?
        let position = file.stream_position().unwrap_or(0);
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.dev() != *dev || meta.ino() != *ino => {
                // Rotated: the old file was read to its end; the new one from its start.
                self.lines.flush(out);
                out.push(Got::Boundary);
                self.file = None;
                if let Some(why) = self.open(false) {
                    self.say(why);
                }
            }
            Ok(meta) if meta.len() < position => {
                // Truncated in place (`> app.log`, copytruncate): from its start again.
                self.lines.flush(out);
                out.push(Got::Boundary);
                let _ = file.seek(SeekFrom::Start(0));
                self.tail.clear();
            }
            _ => {}
        }
        true
    }

    fn say(&mut self, why: String) {
        if self.said.as_deref() != Some(why.as_str()) {
            let _ = crate::warn(std::slice::from_ref(&why));
            self.said = Some(why);
        }
    }
}

/// The bytes of `file` just before `end` (at most [`TAIL`]), read without moving its position.
fn bytes_before(file: &File, end: u64) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    let start = end.saturating_sub(TAIL as u64);
    let mut bytes = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
    match file.read_exact_at(&mut bytes, start) {
        Ok(()) => bytes,
        Err(_) => Vec::new(),
    }
}

pub fn watch(here: &Here, args: &WatchArgs, out: &mut impl Write) -> Result<Verdict> {
    let runtime = runtime()?;
    let routes = parse_routes(&here.cwd, &args.routes)?;
    let mut apps = vec![(String::new(), open_app(&runtime, here)?)];
    for (_, repository, label) in &routes {
        apps.push((
            label.clone(),
            crate::open_app_at(&runtime, repository, &here.choice)
                .with_context(|| format!("--route to {}", repository.display()))?,
        ));
    }
    let limits = WatchLimits {
        window: Duration::from_secs(args.window),
        per_minute: args.per_minute,
    };
    let mut gates: Vec<(String, bugloop_app::Watch<'_>)> = apps
        .iter()
        .map(|(name, app)| (name.clone(), app.watch(limits)))
        .collect();
    let stdin = args.inputs.is_empty() || args.inputs.iter().any(|p| p == Path::new("-"));
    let files: Vec<PathBuf> = args
        .inputs
        .iter()
        .filter(|p| *p != Path::new("-"))
        .cloned()
        .collect();
    let mut failures = 0;
    let result = runtime.block_on(async {
        // Asked to stop (Ctrl-C, SIGTERM): seen between any two steps, however busy the log.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let signals = tokio::spawn(async move {
            stop_signal().await;
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut sink = Sink {
            gates: &mut gates,
            prefixes: routes.iter().map(|(prefix, _, _)| prefix.clone()).collect(),
            format: args.format,
            failures: &mut failures,
        };
        let result = if stdin {
            watch_stdin(&mut sink, &stop, out).await
        } else {
            watch_files(&mut sink, &files, args, &stop, out).await
        };
        signals.abort();
        result
    });
    for (_, gate) in &gates {
        crate::warn(&gate.warnings)?;
    }
    result?;
    let dropped: u64 = gates.iter().map(|(_, gate)| gate.dropped()).sum();
    if dropped > 0 {
        writeln!(
            out,
            "{dropped} report{} dropped over the rate (--per-minute {})",
            if dropped == 1 { "" } else { "s" },
            args.per_minute
        )?;
    }
    if failures > 0 {
        return Ok(Verdict::Incomplete {
            cause: format!(
                "{failures} report{} could not be filed (said above)",
                if failures == 1 { "" } else { "s" }
            ),
        });
    }
    Ok(Verdict::Done)
}

/// `PREFIX=REPOSITORY` routes, each repository a directory (relative to `cwd`), with the
/// repository as written (what its reports' lines are marked with).
fn parse_routes(cwd: &Path, routes: &[String]) -> Result<Vec<(String, PathBuf, String)>> {
    routes
        .iter()
        .map(|route| {
            let Some((prefix, repository)) = route.split_once('=') else {
                anyhow::bail!("--route {route:?}: write it PREFIX=REPOSITORY");
            };
            if prefix.is_empty() || repository.is_empty() {
                anyhow::bail!("--route {route:?}: both the prefix and the repository are needed");
            }
            let label = repository.to_owned();
            let repository = cwd.join(repository);
            if !repository.is_dir() {
                anyhow::bail!(
                    "--route {route:?}: {} is not a directory",
                    repository.display()
                );
            }
            Ok((prefix.to_owned(), repository, label))
        })
        .collect()
}

/// Where the reports found go (the first gate is this repository's, one more per route), and
/// what came of them.
struct Sink<'g, 'a> {
    gates: &'g mut Vec<(String, bugloop_app::Watch<'a>)>,
    /// The routes' path prefixes; route `i` is gate `i + 1`.
    prefixes: Vec<String>,
    format: Format,
    failures: &'g mut usize,
}

impl Sink<'_, '_> {
    /// Offers each report and says what became of it, one line (or JSON object) each. A
    /// report that cannot be filed (unreadable, the store or GitHub failing) is said and the
    /// watch goes on.
    async fn offer_all(&mut self, reports: Vec<String>, out: &mut impl Write) -> Result<()> {
        for report in reports {
            let index = route_of(&report, &self.prefixes);
            let (repository, gate) = &mut self.gates[index];
            let event = match gate.offer(&report, Instant::now()).await {
                Ok(event) => event,
                Err(error) => {
                    *self.failures += 1;
                    writeln!(out, "a report was not filed: {error}")?;
                    out.flush()?;
                    continue;
                }
            };
            if !repository.is_empty() && matches!(self.format, Format::Text) {
                write!(out, "[{repository}] ")?;
            }
            match self.format {
                Format::Json => {
                    let mut value = serde_json::to_value(&event)?;
                    if let (false, Some(object)) = (repository.is_empty(), value.as_object_mut()) {
                        object.insert("repository".to_owned(), repository.clone().into());
                    }
                    writeln!(out, "{value}")?;
                }
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
}

/// The gate a report goes to: the first route whose prefix one of its frames' files starts
/// with, the innermost frame first; 0 (this repository) otherwise.
fn route_of(report: &str, prefixes: &[String]) -> usize {
    if prefixes.is_empty() {
        return 0;
    }
    let Ok(read) = bugloop_app::types::read_report(report.as_bytes()) else {
        return 0;
    };
    read.frames
        .iter()
        .find_map(|frame| {
            prefixes
                .iter()
                // By whole path components: `/srv/api` is not a prefix of `/srv/api-gw/x.py`.
                .position(|p| Path::new(&frame.file).starts_with(Path::new(p)))
        })
        .map_or(0, |route| route + 1)
}

fn stopped(stop: &std::sync::atomic::AtomicBool) -> bool {
    stop.load(std::sync::atomic::Ordering::SeqCst)
}

async fn watch_files(
    sink: &mut Sink<'_, '_>,
    files: &[PathBuf],
    args: &WatchArgs,
    stop: &std::sync::atomic::AtomicBool,
    out: &mut impl Write,
) -> Result<()> {
    let mut followed: Vec<Followed> = files
        .iter()
        .map(|path| {
            Followed::new(
                path.clone(),
                args.from_start || args.once,
                args.follow_symlinks,
            )
        })
        .collect();
    if args.once {
        leave_out_unreadable(&mut followed)?;
    }
    let poll = Duration::from_millis(args.poll_ms.max(10));
    loop {
        let mut at_end = true;
        for file in &mut followed {
            let mut reads = Vec::new();
            at_end &= file.read(&mut reads, args.once);
            let mut reports = Vec::new();
            if !reads.is_empty() {
                file.last_line = Instant::now();
            }
            for read in reads {
                match read {
                    Got::Line(line) => reports.extend(file.segmenter.push_line(&line)),
                    Got::Boundary => reports.extend(file.segmenter.finish()),
                }
            }
            if file.segmenter.collecting() && file.last_line.elapsed() >= QUIET {
                reports.extend(file.segmenter.finish());
            }
            sink.offer_all(reports, out).await?;
        }
        if (args.once && at_end) || stopped(stop) {
            break;
        }
        if at_end {
            tokio::time::sleep(poll).await;
        }
    }
    // Done, or stopped: what was being collected is a report too.
    let mut reports = Vec::new();
    for file in &mut followed {
        let mut reads = Vec::new();
        file.lines.flush(&mut reads);
        for read in reads {
            if let Got::Line(line) = read {
                reports.extend(file.segmenter.push_line(&line));
            }
        }
        reports.extend(file.segmenter.finish());
    }
    sink.offer_all(reports, out).await
}

/// For `--once`: a file that cannot be read (missing, a link, not a regular file, unreadable) is
/// said and left out, as a first look says it; the others are read. None readable: an error.
fn leave_out_unreadable(followed: &mut Vec<Followed>) -> Result<()> {
    let mut unread = Vec::new();
    for file in followed.iter_mut().filter(|f| f.file.is_none()) {
        let shown = file.path.display().to_string();
        let why = match std::fs::symlink_metadata(&file.path) {
            Err(error) => Some(error.to_string()),
            Ok(_) => file.open(false),
        }
        .map(|why| {
            why.strip_prefix(&format!("{shown} is not read: "))
                .map(str::to_owned)
                .unwrap_or(why)
        });
        unread.push((
            shown,
            why.unwrap_or_else(|| "it cannot be opened".to_owned()),
        ));
    }
    followed.retain(|f| f.file.is_some());
    if followed.is_empty()
        && let Some((path, why)) = unread.first()
    {
        anyhow::bail!("cannot open {path} ({why})");
    }
    for (path, why) in unread {
        let _ = writeln!(
            crate::terminal::stderr(),
            "warning: {path} is not read: {why}"
        );
    }
    Ok(())
}

/// Standard input, read by a task of its own (a read is never cut short by a timer), its lines
/// sent here.
async fn watch_stdin(
    sink: &mut Sink<'_, '_>,
    stop: &std::sync::atomic::AtomicBool,
    out: &mut impl Write,
) -> Result<()> {
    use tokio::io::AsyncReadExt;
    let (send, mut receive) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(16);
    let reader = tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = stdin.read(&mut buffer).await.map(|n| buffer[..n].to_vec());
            let end = !matches!(&read, Ok(bytes) if !bytes.is_empty());
            if send.send(read).await.is_err() || end {
                break;
            }
        }
    });
    let mut lines = Lines::default();
    let mut segmenter = Segmenter::new();
    let mut last_line = Instant::now();
    while !stopped(stop) {
        let received = tokio::time::timeout(Duration::from_millis(200), receive.recv()).await;
        let mut reads = Vec::new();
        match received {
            // Quiet: a trace being collected ends after a while.
            Err(_) => {}
            Ok(None) => break,
            Ok(Some(Err(error))) => return Err(error).context("cannot read standard input"),
            Ok(Some(Ok(bytes))) if bytes.is_empty() => break,
            Ok(Some(Ok(bytes))) => {
                lines.push(&bytes, &mut reads);
                last_line = Instant::now();
            }
        }
        let mut reports = Vec::new();
        for read in reads {
            if let Got::Line(line) = read {
                reports.extend(segmenter.push_line(&line));
            }
        }
        if segmenter.collecting() && last_line.elapsed() >= QUIET {
            reports.extend(segmenter.finish());
        }
        sink.offer_all(reports, out).await?;
    }
    reader.abort();
    let mut reads = Vec::new();
    lines.flush(&mut reads);
    let mut reports = Vec::new();
    for read in reads {
        if let Got::Line(line) = read {
            reports.extend(segmenter.push_line(&line));
        }
    }
    reports.extend(segmenter.finish());
    sink.offer_all(reports, out).await
}

/// Resolves when the process is asked to stop (Ctrl-C, SIGTERM).
async fn stop_signal() {
    bugloop_app::stop_requested().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for chunk in chunks {
            lines.push(chunk, &mut out);
        }
        lines.flush(&mut out);
        out.into_iter()
            .filter_map(|r| match r {
                Got::Line(line) => Some(line),
                Got::Boundary => None,
            })
            .collect()
    }

    #[test]
    fn lines_split_across_reads_and_an_endless_one_is_cut() {
        assert_eq!(lines_of(&[b"a\nb", b"c\n", b"d"]), ["a", "bc", "d"]);
        let long = vec![b'x'; MAX_LINE_BYTES * 3];
        let got = lines_of(&[&long, &long, b"\nnext\n"]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), MAX_LINE_BYTES);
        assert_eq!(got[1], "next");
        // A chunk of nothing but line ends is read in one pass.
        let ends = vec![b'\n'; CHUNK];
        assert_eq!(lines_of(&[&ends]).len(), CHUNK);
    }

    /// Everything [`Followed::read`] gives until the file has nothing more.
    fn read_all(followed: &mut Followed) -> Vec<String> {
        let mut got = Vec::new();
        loop {
            let before = got.len();
            if followed.read(&mut got, false) && got.len() == before {
                break;
            }
        }
        got.into_iter()
            .map(|g| match g {
                Got::Line(line) => line,
                Got::Boundary => "--".to_owned(),
            })
            .collect()
    }

    /// `copytruncate` and then a burst longer than what was read before the next look: the new
    /// file is read from its start (it once went unseen: the file had not shrunk by then).
    #[test]
    fn a_file_truncated_and_written_past_where_it_was_read_is_read_anew() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(
            &log,
            "Traceback (most recent call last):\nIndexError: one\n",
        )
        .unwrap();
        let mut followed = Followed::new(log.clone(), true, false);
        assert_eq!(
            read_all(&mut followed),
            ["Traceback (most recent call last):", "IndexError: one"]
        );
        let longer =
            "Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: two\n";
        std::fs::write(&log, longer).unwrap();
        assert_eq!(
            read_all(&mut followed),
            [
                "--",
                "Traceback (most recent call last):",
                "  File \"app.py\", line 3",
                "KeyError: two"
            ]
        );
        // Appended to as usual: read on, from where it was.
        let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        file.write_all(b"after\n").unwrap();
        assert_eq!(read_all(&mut followed), ["after"]);
    }

    #[test]
    fn a_symbolic_link_a_pipe_and_a_directory_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.pem");
        std::fs::write(&secret, "-----BEGIN PRIVATE KEY-----\n").unwrap();
        let link = dir.path().join("app.log");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let followed = Followed::new(link.clone(), true, false);
        assert!(followed.file.is_none());
        let mut followed = Followed::new(link, true, false);
        assert!(followed.open(false).unwrap().contains("symbolic link"));
        let fifo = dir.path().join("fifo.log");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let mut pipe = Followed::new(fifo, true, true);
        assert!(pipe.open(false).unwrap().contains("not a regular file"));
        let mut directory = Followed::new(dir.path().to_path_buf(), true, true);
        assert!(
            directory
                .open(false)
                .unwrap()
                .contains("not a regular file")
        );
    }
}
