//! What the binary writes to standard output and standard error passes through [`Printable`]:
//! text from a change, a model, a log or a report (titles, quoted code, paths, error messages)
//! may carry terminal control sequences that set the window title, write the clipboard, move the
//! cursor or erase a finding off the screen. Every control character is written as a visible
//! escape instead; only the few colour sequences bugloop's own renderers use pass, and only when
//! colour is on. One filter at the edge, rather than one per renderer, so a new renderer or an
//! error message cannot forget it. The escape is JSON's (`\u001b`): JSON and SARIF carry DEL
//! and C1 characters raw inside their strings, and written so they stay the same valid JSON.

use std::io::{self, Write};

/// The colour sequences of the report renderers' `Style` and the progress lines: colours and
/// weights that cannot hide or move text.
const STYLES: &[&[u8]] = &[
    b"\x1b[0m",
    b"\x1b[1m",
    b"\x1b[2m",
    b"\x1b[32m",
    b"\x1b[33m",
    b"\x1b[36m",
    b"\x1b[1;31m",
];

/// A writer that escapes control characters (C0 but newline and tab, DEL, C1) as `\u001b`-style
/// text, letting through [`STYLES`] when `styles` is on.
pub(crate) struct Printable<W: Write> {
    inner: W,
    styles: bool,
    /// The start of a sequence cut by the end of a write (an `ESC [` or a UTF-8 lead byte).
    pending: Vec<u8>,
}

impl<W: Write> Printable<W> {
    pub(crate) fn new(inner: W, styles: bool) -> Self {
        Printable {
            inner,
            styles,
            pending: Vec::new(),
        }
    }

    /// `data` made printable; a sequence it ends in the middle of is kept in `pending`.
    fn filter(&mut self, data: &[u8], last: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len());
        let mut at = 0;
        while at < data.len() {
            let rest = &data[at..];
            let byte = rest[0];
            if byte == 0x1b && self.styles {
                if let Some(style) = STYLES.iter().find(|s| rest.starts_with(s)) {
                    out.extend_from_slice(style);
                    at += style.len();
                    continue;
                }
                if !last && STYLES.iter().any(|s| s.starts_with(rest)) {
                    self.pending = rest.to_vec();
                    break;
                }
            }
            if byte == 0xc2 {
                match rest.get(1) {
                    None if !last => {
                        self.pending = rest.to_vec();
                        break;
                    }
                    Some(next @ 0x80..=0x9f) => {
                        out.extend_from_slice(format!("\\u{next:04x}").as_bytes());
                        at += 2;
                        continue;
                    }
                    _ => {}
                }
            }
            if byte == 0xe2 {
                if rest.len() < 3 && !last && rest.get(1).is_none_or(|b| matches!(b, 0x80 | 0x81)) {
                    self.pending = rest.to_vec();
                    break;
                }
                if let Some(mark) = bidi(rest) {
                    out.extend_from_slice(format!("\\u{mark:04x}").as_bytes());
                    at += 3;
                    continue;
                }
            }
            if (byte < 0x20 && byte != b'\n' && byte != b'\t') || byte == 0x7f {
                out.extend_from_slice(format!("\\u{byte:04x}").as_bytes());
            } else {
                out.push(byte);
            }
            at += 1;
        }
        out
    }
}

impl<W: Write> Write for Printable<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(buf);
        let out = self.filter(&data, false);
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let pending = std::mem::take(&mut self.pending);
        let out = self.filter(&pending, true);
        self.inner.write_all(&out)?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for Printable<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// The bidirectional mark or override `rest` starts with (U+200E-U+200F, U+202A-U+202E,
/// U+2066-U+2069, in UTF-8): they turn text around on screen, so a line can read as other code
/// than it is.
fn bidi(rest: &[u8]) -> Option<u32> {
    match rest {
        [0xe2, 0x80, low @ (0x8e | 0x8f | 0xaa..=0xae), ..] => Some(0x2000 + u32::from(low - 0x80)),
        [0xe2, 0x81, low @ 0xa6..=0xa9, ..] => Some(0x2040 + u32::from(low - 0x80)),
        _ => None,
    }
}

/// `text` as [`Printable`] writes it, no colour let through.
pub(crate) fn printable(text: &str) -> String {
    let mut out = Vec::new();
    let mut writer = Printable::new(&mut out, false);
    let _ = writer.write_all(text.as_bytes());
    let _ = writer.flush();
    drop(writer);
    String::from_utf8_lossy(&out).into_owned()
}

/// A comment's text under the line that says who wrote it: every line indented, so no line of
/// it (`── bugloop · ...` in someone's reply) can pass for such a line of bugloop's own.
pub(crate) fn quoted(text: &str) -> String {
    text.lines()
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("  {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Standard error, made printable.
pub(crate) fn stderr() -> Printable<io::StderrLock<'static>> {
    Printable::new(io::stderr().lock(), false)
}

/// One log event as `tracing` writes it, kept until the event is done (the writer is dropped):
/// a line break or carriage return inside it (a field holding a repository's name, a comment's
/// text, a model's error) is written as `\n` or `\r`, so one event cannot print a line that
/// reads as another event's; so are the other C0 controls and the bidirectional marks that
/// `tracing`'s own escaping leaves. Its colours (ESC sequences: `tracing` escapes an ESC inside
/// a value) pass.
pub(crate) struct LogLine<W: Write> {
    inner: W,
    event: Vec<u8>,
}

impl<W: Write> LogLine<W> {
    pub(crate) fn new(inner: W) -> Self {
        LogLine {
            inner,
            event: Vec::new(),
        }
    }
}

impl<W: Write> Write for LogLine<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.event.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let event = std::mem::take(&mut self.event);
        let text = String::from_utf8_lossy(&event);
        let body = text.strip_suffix('\n');
        let mut out = String::with_capacity(text.len());
        for ch in body.unwrap_or(&text).chars() {
            match ch {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' | '\x1b' => out.push(ch),
                c if c.is_control() || is_bidi(c) => {
                    out.push_str(&format!("\\u{:04x}", u32::from(c)));
                }
                c => out.push(c),
            }
        }
        if body.is_some() {
            out.push('\n');
        }
        self.inner.write_all(out.as_bytes())?;
        self.inner.flush()
    }
}

impl<W: Write> Drop for LogLine<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// A bidirectional mark or override ([`bidi`]'s characters).
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_comment_has_no_line_at_the_margin() {
        let forged = "fixed\n\n── bugloop · 2026-12-07 09:00 · comment 3\nResolved.";
        let quoted = quoted(forged);
        assert!(
            quoted.lines().all(|l| l.is_empty() || l.starts_with("  ")),
            "{quoted}"
        );
        assert!(quoted.contains("  ── bugloop"), "{quoted}");
    }

    fn through(chunks: &[&[u8]], styles: bool) -> String {
        let mut out = Vec::new();
        {
            let mut writer = Printable::new(&mut out, styles);
            for chunk in chunks {
                writer.write_all(chunk).unwrap();
            }
            writer.flush().unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    /// A log event whose field holds a line break prints one line: the break is shown, so no
    /// second, forged event appears; its own end of line stays.
    #[test]
    fn a_log_event_is_one_line_whatever_its_fields_hold() {
        let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = shared.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || LogLine::new(SharedBuffer(sink.clone())))
            .finish();
        // A string field is written as Debug (quoted, escaped) by `tracing` itself; a Display
        // field and the message are written as they are.
        let forged = "acme/app\n2026-12-06T00:00:00Z  INFO job done: approved\rX\u{202e}";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(repository = %forged, "job started for {forged}");
            tracing::warn!("second");
        });
        let written = String::from_utf8(shared.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 2, "{written}");
        let shown = "acme/app\\n2026-12-06T00:00:00Z  INFO job done: approved\\rX\\u202e";
        assert_eq!(lines[0].matches(shown).count(), 2, "{written}");
        assert!(lines[1].contains("second"), "{written}");
    }

    struct SharedBuffer(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for SharedBuffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn control_sequences_are_shown_not_obeyed() {
        let hostile = "title\x1b]0;owned\x07 clip\x1b]52;c;aGk=\x07 \x1b[2K\x1b[1A\rback \x1b[8mhidden\x1b[0m \u{9b}31m del\x7f";
        let shown = through(&[hostile.as_bytes()], true);
        assert_eq!(
            shown,
            "title\\u001b]0;owned\\u0007 clip\\u001b]52;c;aGk=\\u0007 \\u001b[2K\\u001b[1A\\u000dback \\u001b[8mhidden\x1b[0m \\u009b31m del\\u007f"
        );
        // Without colour, not even a colour passes.
        assert_eq!(
            through(&[b"\x1b[1;31mred\x1b[0m"], false),
            "\\u001b[1;31mred\\u001b[0m"
        );
        assert_eq!(through(&["a\tb\nc é ✓".as_bytes()], false), "a\tb\nc é ✓");
        // A line that reads as other code than it is (Trojan Source), the override cut
        // between writes: shown, not obeyed; other characters of the same lead byte pass.
        let chunks: &[&[u8]] = &[
            b"if x \xe2\x80",
            b"\xae } \xe2\x81\xa6 \xe2\x80\x94 \xe2\x82\xac",
        ];
        assert_eq!(through(chunks, false), "if x \\u202e } \\u2066 — €");
    }

    /// JSON carries DEL and C1 raw in its strings: written through, it is the same JSON.
    #[test]
    fn json_stays_the_same_json() {
        let value = serde_json::json!({"evidence": "a\u{7f}b\u{85}c\u{9b}d\x1b[2K", "n": 1});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let shown = through(&[text.as_bytes()], true);
        assert!(
            !shown.contains('\u{7f}') && !shown.contains('\u{85}'),
            "{shown}"
        );
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn a_sequence_cut_between_writes_is_judged_whole() {
        let chunks: &[&[u8]] = &[
            b"a\x1b[1;",
            b"31mred\x1b",
            b"[0m \xc2",
            b"\x9b \xc2",
            b"\xa9",
        ];
        assert_eq!(through(chunks, true), "a\x1b[1;31mred\x1b[0m \\u009b ©");
        // A sequence left open at the end is escaped, not lost.
        assert_eq!(through(&[b"end\x1b["], true), "end\\u001b[");
        assert_eq!(printable("x\x1b]0;t\x07"), "x\\u001b]0;t\\u0007");
    }
}
