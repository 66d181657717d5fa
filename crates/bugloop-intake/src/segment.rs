//! Finding error reports in a stream of log lines (`bugloop watch`): each trace, from the line
//! that starts it (a Python traceback, a JavaScript or Java exception followed by its frames, a
//! Go panic, a Rust panic) to the first line that does not belong to it, and each JSON log line
//! at an error level or above, is one report for [`crate::read`]. Lines that are neither
//! are passed over. Pure: the caller feeds lines and, after a quiet spell or at the end, calls
//! [`Segmenter::finish`].

use std::sync::LazyLock;

use regex::Regex;

/// The most lines one report keeps (a trace of thousands of frames is cut, not held forever).
pub const MAX_REPORT_LINES: usize = 500;

static EXCEPTION_HEAD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^(?:Uncaught |Exception in thread .* )?[A-Za-z_$][\w$.]*(?:Error|Exception|Throwable)(?::.*)?$").ok()
});
static FRAME: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^\s+at \S").ok());
static RUST_PANIC: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^thread '[^']*' panicked at ").ok());
/// A line that opens a log record (a date, a bracketed time or level): never a trace's.
static LOG_RECORD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(?:\d{4}-\d{2}-\d{2}|\[|\{|[A-Z][a-z]{2} [ \d]\d )").ok());

fn matches(pattern: &LazyLock<Option<Regex>>, line: &str) -> bool {
    pattern.as_ref().is_some_and(|p| p.is_match(line))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A traceback: frames indented, then the error's line, unindented; another traceback goes
    /// on it only after the line that chains them.
    Python { error_line: bool, chained: bool },
    /// An exception and its `at` frames (JavaScript, Java: `Caused by:` goes on).
    Frames,
    /// A Go panic: function lines unindented, their files indented, until two blank lines or a
    /// new log record.
    Go { blank: u8 },
    /// A Rust panic: its message, notes and backtrace.
    Rust { message: bool },
}

/// Splits lines into reports.
#[derive(Debug, Default)]
pub struct Segmenter {
    current: Option<(Kind, Vec<String>)>,
    /// A line that may head an exception whose frames follow (JavaScript, Java).
    held: Option<String>,
}

impl Segmenter {
    pub fn new() -> Self {
        Segmenter::default()
    }

    /// Takes one line (without its line end); the reports it completed, oldest first.
    pub fn push_line(&mut self, line: &str) -> Vec<String> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut done = Vec::new();
        if let Some((kind, lines)) = &mut self.current {
            match continues(kind, line) {
                Some(next) => {
                    *kind = next;
                    lines.push(line.to_owned());
                    if lines.len() >= MAX_REPORT_LINES {
                        done.extend(self.take());
                    }
                    return done;
                }
                None => done.extend(self.take()),
            }
        }
        if let Some(head) = self.held.take()
            && matches(&FRAME, line)
        {
            self.current = Some((Kind::Frames, vec![head, line.to_owned()]));
            return done;
        }
        done.extend(self.start(line));
        done
    }

    /// Ends the report being collected (the stream went quiet, or ended).
    pub fn finish(&mut self) -> Option<String> {
        self.held = None;
        self.take()
    }

    /// Whether a report is being collected.
    pub fn collecting(&self) -> bool {
        self.current.is_some() || self.held.is_some()
    }

    fn take(&mut self) -> Option<String> {
        let (_, mut lines) = self.current.take()?;
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        Some(lines.join("\n") + "\n")
    }

    /// A line outside any report: it may start one, or be one (a JSON log line).
    fn start(&mut self, line: &str) -> Vec<String> {
        let trimmed = line.trim_start();
        if trimmed.starts_with('{') {
            return match serde_json::from_str::<serde_json::Value>(trimmed) {
                Ok(entry) if entry.is_object() && crate::trace::is_error_entry(&entry) => {
                    vec![format!("{trimmed}\n")]
                }
                _ => Vec::new(),
            };
        }
        // A trace starts at a line's start, as runtimes print it; one inside a logged value
        // can be forged only by a newline in that value (docs/trust.md, "Error reports").
        let kind = if line.starts_with("Traceback (most recent call last):") {
            Some(Kind::Python {
                error_line: false,
                chained: false,
            })
        } else if line.starts_with("panic: ") {
            Some(Kind::Go { blank: 0 })
        } else if matches(&RUST_PANIC, line) {
            Some(Kind::Rust { message: false })
        } else {
            if matches(&EXCEPTION_HEAD, line.trim_end()) {
                self.held = Some(line.to_owned());
            }
            None
        };
        if let Some(kind) = kind {
            self.current = Some((kind, vec![line.to_owned()]));
        }
        Vec::new()
    }
}

/// Whether `line` goes on a report of `kind`, and the kind after it.
fn continues(kind: &Kind, line: &str) -> Option<Kind> {
    let indented = line.starts_with(' ') || line.starts_with('\t');
    let blank = line.trim().is_empty();
    match *kind {
        Kind::Python {
            error_line,
            chained,
        } => {
            if indented || blank {
                return Some(*kind);
            }
            if line.starts_with("During handling of the above exception")
                || line.starts_with("The above exception was the direct cause")
            {
                return Some(Kind::Python {
                    error_line: false,
                    chained: true,
                });
            }
            if line.starts_with("Traceback (most recent call last):") {
                // Chained, one report; otherwise the next error's.
                return chained.then_some(Kind::Python {
                    error_line: false,
                    chained: false,
                });
            }
            (!error_line && !matches(&LOG_RECORD, line)).then_some(Kind::Python {
                error_line: true,
                chained: false,
            })
        }
        Kind::Frames => (matches(&FRAME, line)
            || (indented && !blank)
            || line.starts_with("Caused by: ")
            || line.starts_with("Suppressed: "))
        .then_some(Kind::Frames),
        Kind::Go { blank: blanks } => {
            if blank {
                return (blanks < 1).then_some(Kind::Go { blank: blanks + 1 });
            }
            // The runtime's own `[signal SIGSEGV: ...]` line is the panic's, not a log record.
            let record = matches(&LOG_RECORD, line) && !line.starts_with("[signal ");
            if record || line.starts_with("exit status ") {
                return None;
            }
            Some(Kind::Go { blank: 0 })
        }
        Kind::Rust { message } => {
            if indented {
                Some(*kind)
            } else if blank {
                None
            } else if !message {
                Some(Kind::Rust { message: true })
            } else if line.starts_with("note: ") || line.starts_with("stack backtrace:") {
                Some(*kind)
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn split(text: &str) -> Vec<String> {
        let mut segmenter = Segmenter::new();
        let mut reports = Vec::new();
        for line in text.lines() {
            reports.extend(segmenter.push_line(line));
        }
        reports.extend(segmenter.finish());
        reports
    }

    #[test]
    fn each_trace_in_a_log_is_one_report() {
        let log = "\
2026-11-24 07:12:01 INFO started
2026-11-24 07:12:02 ERROR worker crashed
Traceback (most recent call last):
  File \"/srv/app/app/models.py\", line 3, in last
    return items[len(items)]
IndexError: list index out of range
2026-11-24 07:12:03 INFO retrying
{\"level\": \"info\", \"msg\": \"fine\"}
{\"level\": \"error\", \"msg\": \"payment failed\", \"stack\": \"Error: x\\n    at pay (/app/pay.js:3:1)\"}
TypeError: Cannot read properties of undefined (reading 'price')
    at total (/home/ci/build/web/cart.js:4:22)
    at checkout (/home/ci/build/web/cart.js:9:10)
2026-11-24 07:12:04 WARN TypeError: looks like a head but has no frames
panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
main.last(...)
\t/go/src/app/cmd/main.go:8 +0x1d
main.main()
\t/go/src/app/cmd/main.go:13 +0x25
exit status 2
Exception in thread \"main\" java.lang.NullPointerException: boom
\tat com.acme.Cart.label(Cart.java:5)
Caused by: java.lang.IllegalStateException: inner
\tat com.acme.Cart.main(Cart.java:8)
thread 'main' panicked at src/main.rs:2:5:
index out of bounds: the len is 3 but the index is 3
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
done
";
        let reports = split(log);
        let kinds: Vec<String> = reports
            .iter()
            .map(|r| {
                let read = crate::read(r.as_bytes()).unwrap();
                format!(
                    "{:?} {} ({} frames)",
                    read.language,
                    read.kind,
                    read.frames.len()
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "Python IndexError (1 frames)",
                "JavaScript Error (1 frames)",
                "JavaScript TypeError (2 frames)",
                "Go panic (2 frames)",
                // Named by its root cause, with the frames of both sections.
                "Java java.lang.IllegalStateException (2 frames)",
                "Rust panic (1 frames)",
            ],
            "{reports:#?}"
        );
        assert!(reports[4].contains("Caused by: java.lang.IllegalStateException"));
        assert!(!reports[0].contains("retrying"));
    }

    #[test]
    fn a_chained_traceback_is_one_report_and_a_cut_one_ends_at_the_end() {
        let chained = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\nValueError: bad\nnext line\n";
        let reports = split(chained);
        assert_eq!(reports.len(), 1, "{reports:#?}");
        assert!(reports[0].ends_with("ValueError: bad\n"), "{reports:#?}");
        // Two tracebacks one after the other, not chained: two reports.
        let two = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\nValueError: bad\n";
        let reports = split(two);
        assert_eq!(reports.len(), 2, "{reports:#?}");
        let mut segmenter = Segmenter::new();
        assert!(
            segmenter
                .push_line("Traceback (most recent call last):")
                .is_empty()
        );
        assert!(segmenter.collecting());
        assert!(segmenter.finish().unwrap().starts_with("Traceback"));
        assert!(!segmenter.collecting());
    }

    /// A Go nil dereference prints the runtime's `[signal SIGSEGV: ...]` line after the panic:
    /// it is the panic's, not a log record that ends it.
    #[test]
    fn a_go_panic_keeps_its_signal_line_and_frames() {
        let log = "2026-12-06 09:00:00 INFO serving\npanic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x48f1c2]\n\ngoroutine 1 [running]:\nmain.handle(...)\n\t/home/ci/build/cmd/server/main.go:5\nexit status 2\n[2026-12-06 09:00:01] INFO restarted\n";
        let reports = split(log);
        assert_eq!(reports.len(), 1, "{reports:#?}");
        assert!(
            reports[0].contains("\t/home/ci/build/cmd/server/main.go:5"),
            "{reports:#?}"
        );
        assert!(!reports[0].contains("restarted"), "{reports:#?}");
    }

    #[test]
    fn an_endless_trace_is_cut() {
        let mut segmenter = Segmenter::new();
        let mut reports = segmenter.push_line("Traceback (most recent call last):");
        for n in 0..MAX_REPORT_LINES * 2 {
            reports.extend(segmenter.push_line(&format!("  File \"a.py\", line {n}, in f")));
        }
        // The rest of the cut trace starts nothing; the next trace is a report of its own.
        reports.extend(segmenter.push_line("Traceback (most recent call last):"));
        reports.extend(segmenter.finish());
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].lines().count(), MAX_REPORT_LINES);
    }
}
