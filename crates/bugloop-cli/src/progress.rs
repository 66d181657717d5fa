//! Progress lines on standard error while a job runs on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bugloop_app::types::{Progress, ProgressEvent, Silent};

/// Progress lines; a local model's generation count is one line rewritten in place until the
/// next event.
#[derive(Debug, Default)]
struct StderrProgress {
    /// The last line written is the generation count, not ended yet.
    counting: AtomicBool,
}

impl Progress for StderrProgress {
    fn event(&self, event: ProgressEvent) {
        let mut stderr = std::io::stderr().lock();
        if let ProgressEvent::Generating { tokens, per_second } = event {
            self.counting.store(true, Ordering::Relaxed);
            let _ = write!(
                stderr,
                "\r\x1b[2K\x1b[2m· model: {tokens} token(s) generated, {per_second} tokens/s\x1b[0m"
            );
            let _ = stderr.flush();
            return;
        }
        if self.counting.swap(false, Ordering::Relaxed) {
            let _ = write!(stderr, "\r\x1b[2K");
        }
        let line = match event {
            ProgressEvent::Planned {
                calls,
                files,
                tokens,
            } => {
                format!("planned: {files} file(s) in {calls} session(s), ~{tokens} tokens of diff")
            }
            ProgressEvent::CallStarted { call, of, files } => {
                format!("part {call}/{of}: reviewing {files} file(s)")
            }
            ProgressEvent::PassDone { batch, pass, of } => {
                format!("part {batch}: pass {pass}/{of} done")
            }
            ProgressEvent::Finding { batch, title } => format!("part {batch}: found: {title}"),
            ProgressEvent::CallDone {
                call,
                findings,
                error,
            } => match error {
                Some(error) => format!("part {call}: stopped: {error}"),
                None => format!("part {call}: {findings} finding(s) reported"),
            },
            ProgressEvent::Publishing => "publishing".to_owned(),
            ProgressEvent::PartPublished { call, findings } => {
                format!("part {call}: {findings} finding(s) published")
            }
            ProgressEvent::Step(text) => text,
            ProgressEvent::Generating { .. } => return,
        };
        let line = crate::terminal::printable(&line);
        let _ = writeln!(stderr, "\x1b[2m· {line}\x1b[0m");
    }
}

/// Progress on standard error when it is a terminal.
pub fn progress() -> Arc<dyn Progress> {
    if std::io::stderr().is_terminal() {
        Arc::new(StderrProgress::default())
    } else {
        Arc::new(Silent)
    }
}
