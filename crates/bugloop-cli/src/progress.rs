//! Progress lines on standard error while a job runs on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use bugloop_app::types::{Progress, ProgressEvent, Silent};

#[derive(Debug)]
struct StderrProgress;

impl Progress for StderrProgress {
    fn event(&self, event: ProgressEvent) {
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
            ProgressEvent::Step(text) => text,
        };
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "\x1b[2m· {line}\x1b[0m");
    }
}

/// Progress on standard error when it is a terminal.
pub fn progress() -> Arc<dyn Progress> {
    if std::io::stderr().is_terminal() {
        Arc::new(StderrProgress)
    } else {
        Arc::new(Silent)
    }
}
