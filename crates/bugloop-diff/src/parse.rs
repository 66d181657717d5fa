//! The parser. It works on bytes (diffs are not always UTF-8), never indexes past a slice's end,
//! and turns everything it cannot read into a [`Problem`].

use std::borrow::Cow;

use bugloop_domain::paths::display_path;

use crate::{ChangeKind, Diff, DiffLine, FileDiff, Hunk, LineKind, Problem};

/// Parses a multi-file diff (`git diff`, `git format-patch`, `diff -u`).
pub fn parse(input: impl AsRef<[u8]>) -> Diff {
    let lines = split_lines(input.as_ref());
    let mut parser = Parser {
        lines: &lines,
        pos: 0,
        diff: Diff::default(),
        file: None,
        signature: false,
    };
    parser.run();
    let mut diff = parser.diff;
    // Text with no file in it at all is no diff (random bytes, a bare binary patch): said, so
    // it is not read as an empty change.
    if diff.files.is_empty()
        && diff.problems.is_empty()
        && let Some(at) = lines.iter().position(|l| !l.trim_ascii().is_empty())
    {
        diff.problems.push(Problem {
            line: at + 1,
            message: "no file header (`diff --git`, or `---` and `+++`) in the input: it is \
                      not a diff"
                .to_owned(),
        });
    }
    diff
}

/// Parses the hunks-only `patch` of one file, as GitHub's pull-request files API returns it.
pub fn parse_patch(path: &str, patch: impl AsRef<[u8]>) -> Diff {
    let lines = split_lines(patch.as_ref());
    let mut file = FileBuilder::new(Some(path.to_owned()), Some(path.to_owned()));
    file.saw_file_header = true;
    let mut parser = Parser {
        lines: &lines,
        pos: 0,
        diff: Diff::default(),
        file: Some(file),
        signature: false,
    };
    parser.run();
    parser.diff
}

fn split_lines(input: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn text(bytes: &[u8]) -> (String, bool) {
    match String::from_utf8_lossy(bytes) {
        Cow::Borrowed(s) => (s.to_owned(), false),
        Cow::Owned(s) => (s, true),
    }
}

#[derive(Debug)]
struct FileBuilder {
    header_old: Option<String>,
    header_new: Option<String>,
    minus_path: Option<Option<String>>,
    plus_path: Option<Option<String>>,
    rename_from: Option<String>,
    rename_to: Option<String>,
    copy: bool,
    new_file: bool,
    deleted_file: bool,
    similarity: Option<u8>,
    old_mode: Option<String>,
    new_mode: Option<String>,
    binary: bool,
    lossy: bool,
    hunks: Vec<Hunk>,
    /// `---`/`+++` seen: the next pair starts another file.
    saw_file_header: bool,
}

impl FileBuilder {
    fn new(old: Option<String>, new: Option<String>) -> Self {
        FileBuilder {
            header_old: old,
            header_new: new,
            minus_path: None,
            plus_path: None,
            rename_from: None,
            rename_to: None,
            copy: false,
            new_file: false,
            deleted_file: false,
            similarity: None,
            old_mode: None,
            new_mode: None,
            binary: false,
            lossy: false,
            hunks: Vec::new(),
            saw_file_header: false,
        }
    }

    fn finish(self) -> FileDiff {
        let old_path = match (&self.rename_from, &self.minus_path) {
            (Some(from), _) => Some(from.clone()),
            (None, Some(minus)) => minus.clone(),
            (None, None) => self.header_old.clone(),
        };
        let new_path = match (&self.rename_to, &self.plus_path) {
            (Some(to), _) => Some(to.clone()),
            (None, Some(plus)) => plus.clone(),
            (None, None) => self.header_new.clone(),
        };
        let (old_path, new_path) = if self.new_file {
            (None, new_path.or(old_path))
        } else if self.deleted_file {
            (old_path.or(new_path), None)
        } else {
            (old_path, new_path)
        };
        let change = if old_path.is_none() {
            ChangeKind::Added
        } else if new_path.is_none() {
            ChangeKind::Deleted
        } else if self.copy {
            ChangeKind::Copied
        } else if self.rename_from.is_some() || self.rename_to.is_some() {
            ChangeKind::Renamed
        } else {
            ChangeKind::Modified
        };
        FileDiff {
            old_path,
            new_path,
            change,
            similarity: self.similarity,
            old_mode: self.old_mode,
            new_mode: self.new_mode,
            binary: self.binary,
            lossy: self.lossy,
            hunks: self.hunks,
        }
    }
}

struct Parser<'a> {
    lines: &'a [&'a [u8]],
    pos: usize,
    diff: Diff,
    file: Option<FileBuilder>,
    /// A `-- ` line was seen: what follows is an email signature (format-patch output).
    signature: bool,
}

impl<'a> Parser<'a> {
    fn problem(&mut self, line_index: usize, message: impl Into<String>) {
        self.diff.problems.push(Problem {
            line: line_index + 1,
            message: message.into(),
        });
    }

    fn finish_file(&mut self) {
        if let Some(file) = self.file.take() {
            self.diff.files.push(file.finish());
        }
    }

    fn line(&self, index: usize) -> Option<&'a [u8]> {
        self.lines.get(index).map(|l| strip_cr(l))
    }

    fn run(&mut self) {
        while let Some(line) = self.line(self.pos) {
            let at = self.pos;
            if let Some(rest) = line.strip_prefix(b"diff --git ") {
                self.finish_file();
                self.signature = false;
                let (old, new) = git_header_paths(rest);
                if old.is_none() && new.is_none() {
                    self.problem(at, "cannot read the paths of this `diff --git` header");
                }
                self.file = Some(FileBuilder::new(old, new));
                self.pos += 1;
                continue;
            }
            if line.starts_with(b"diff --cc ") || line.starts_with(b"diff --combined ") {
                self.finish_file();
                self.problem(at, "combined (merge) diffs are not supported; file skipped");
                self.pos += 1;
                self.skip_until_next_file();
                continue;
            }
            if line.starts_with(b"--- ")
                && self.line(at + 1).is_some_and(|n| n.starts_with(b"+++ "))
            {
                self.file_header(at);
                continue;
            }
            if line.starts_with(b"@@ ") || line == b"@@" {
                self.hunk(at);
                continue;
            }
            if self.extended_header(line) {
                self.pos += 1;
                continue;
            }
            if line.starts_with(b"diff ") {
                // `diff -u old new` between files of a plain recursive diff.
                self.finish_file();
                self.signature = false;
                self.pos += 1;
                continue;
            }
            if line == b"-- " {
                self.signature = true;
            }
            let in_file = self.file.as_ref().is_some_and(|f| !f.hunks.is_empty());
            let ignorable = line.is_empty() || line == b"-- " || line.starts_with(b"Only in ");
            if in_file && !ignorable && !self.signature {
                let (shown, _) = text(line);
                self.problem(
                    at,
                    format!("unexpected line outside a hunk: {:?}", truncate(&shown)),
                );
            }
            self.pos += 1;
        }
        self.finish_file();
    }

    fn skip_until_next_file(&mut self) {
        while let Some(line) = self.line(self.pos) {
            if line.starts_with(b"diff ") {
                return;
            }
            self.pos += 1;
        }
    }

    fn extended_header(&mut self, line: &[u8]) -> bool {
        let Some(file) = self.file.as_mut() else {
            if line.starts_with(b"Binary files ") && line.ends_with(b" differ") {
                let (old, new) = binary_line_paths(line);
                let mut file = FileBuilder::new(old, new);
                file.binary = true;
                self.diff.files.push(file.finish());
                return true;
            }
            return false;
        };
        if !file.hunks.is_empty() {
            return false;
        }
        let value = |prefix: &[u8]| line.strip_prefix(prefix).map(|v| text(v).0);
        if let Some(mode) = value(b"old mode ") {
            file.old_mode = Some(mode);
        } else if let Some(mode) = value(b"new mode ") {
            file.new_mode = Some(mode);
        } else if let Some(mode) = value(b"new file mode ") {
            file.new_file = true;
            file.new_mode = Some(mode);
        } else if let Some(mode) = value(b"deleted file mode ") {
            file.deleted_file = true;
            file.old_mode = Some(mode);
        } else if let Some(pct) = value(b"similarity index ") {
            file.similarity = pct.trim_end_matches('%').parse().ok();
        } else if line.starts_with(b"dissimilarity index ") || line.starts_with(b"index ") {
            if let Some(mode) = line.strip_prefix(b"index ").and_then(|v| {
                let v = text(v).0;
                v.split_once(' ').map(|(_, mode)| mode.to_owned())
            }) {
                file.old_mode.get_or_insert(mode.clone());
                file.new_mode.get_or_insert(mode);
            }
        } else if let Some(path) = line.strip_prefix(b"rename from ") {
            file.rename_from = Some(header_path(path));
        } else if let Some(path) = line.strip_prefix(b"rename to ") {
            file.rename_to = Some(header_path(path));
        } else if let Some(path) = line.strip_prefix(b"copy from ") {
            file.copy = true;
            file.rename_from = Some(header_path(path));
        } else if let Some(path) = line.strip_prefix(b"copy to ") {
            file.copy = true;
            file.rename_to = Some(header_path(path));
        } else if line.starts_with(b"Binary files ") && line.ends_with(b" differ") {
            file.binary = true;
        } else if line == b"GIT binary patch" {
            file.binary = true;
            self.pos += 1;
            while let Some(next) = self.line(self.pos) {
                if next.starts_with(b"diff ") {
                    break;
                }
                self.pos += 1;
            }
            // `run` adds one; step back so the next header is not skipped.
            self.pos -= 1;
        } else {
            return false;
        }
        true
    }

    fn file_header(&mut self, at: usize) {
        let minus = self
            .line(at)
            .and_then(|l| l.strip_prefix(b"--- "))
            .map(|p| side_path(p, b"a/"));
        let plus = self
            .line(at + 1)
            .and_then(|l| l.strip_prefix(b"+++ "))
            .map(|p| side_path(p, b"b/"));
        let starts_new = match &self.file {
            None => true,
            Some(file) => file.saw_file_header || !file.hunks.is_empty(),
        };
        if starts_new {
            self.finish_file();
            let old = minus.clone().flatten();
            let new = plus.clone().flatten();
            self.file = Some(FileBuilder::new(old, new));
        }
        if let Some(file) = self.file.as_mut() {
            file.minus_path = minus;
            file.plus_path = plus;
            file.saw_file_header = true;
            if file.minus_path == Some(None) {
                file.new_file = true;
            }
            if file.plus_path == Some(None) {
                file.deleted_file = true;
            }
        }
        self.pos = at + 2;
    }

    /// A hunk from its `@@` header at `at`: its lines, numbered and checked against the header's
    /// counts, added to the current file. A broken header or one outside a file is reported and
    /// what looks like its body skipped.
    fn hunk(&mut self, at: usize) {
        self.pos = at + 1;
        let header = self.line(at).unwrap_or_default();
        let Some((old_start, old_len, new_start, new_len, section)) = hunk_header(header) else {
            let (shown, _) = text(header);
            self.problem(at, format!("malformed hunk header {:?}", truncate(&shown)));
            self.skip_hunk_body();
            return;
        };
        if self.file.is_none() {
            self.problem(at, "hunk without a file header; skipped");
            self.skip_hunk_body();
            return;
        }
        let mut hunk = Hunk {
            old_start,
            old_len,
            new_start,
            new_len,
            section,
            lines: Vec::new(),
        };
        let lossy = self.hunk_lines(at, &mut hunk);
        // A `\ No newline at end of file` after the last counted line still belongs to the hunk.
        while self.line(self.pos).is_some_and(|l| l.starts_with(b"\\")) {
            if let Some(last) = hunk.lines.last_mut() {
                last.no_newline = true;
            }
            self.pos += 1;
        }
        self.add_hunk(at, hunk, lossy);
    }

    /// Reads the lines of the hunk whose header is at `at` into `hunk`, as many as its header
    /// counts; a body that ends early or runs over the counts is reported where it goes wrong.
    /// Whether any line was not UTF-8.
    fn hunk_lines(&mut self, at: usize, hunk: &mut Hunk) -> bool {
        let mut left = Remaining::of(hunk);
        let mut lossy = false;
        while left.old > 0 || left.new > 0 {
            let Some(line) = self.line(self.pos) else {
                self.problem(
                    at,
                    format!(
                        "hunk is truncated: {} old and {} new lines missing",
                        left.old, left.new
                    ),
                );
                break;
            };
            let (kind, body) = match line.first() {
                Some(b' ') => (LineKind::Context, line.get(1..).unwrap_or_default()),
                // Some tools strip the single space of an empty context line.
                None => (LineKind::Context, line),
                Some(b'-') => (LineKind::Removed, line.get(1..).unwrap_or_default()),
                Some(b'+') => (LineKind::Added, line.get(1..).unwrap_or_default()),
                Some(b'\\') => {
                    if let Some(last) = hunk.lines.last_mut() {
                        last.no_newline = true;
                    }
                    self.pos += 1;
                    continue;
                }
                Some(_) => {
                    self.problem(
                        self.pos,
                        format!(
                            "hunk starting at line {} ends early: {} old and {} new lines missing",
                            at + 1,
                            left.old,
                            left.new
                        ),
                    );
                    break;
                }
            };
            if !left.fits(kind) {
                self.problem(
                    self.pos,
                    format!(
                        "hunk starting at line {} has more lines than its header counts ({} old and {} new left)",
                        at + 1,
                        left.old,
                        left.new
                    ),
                );
                break;
            }
            let (content, was_lossy) = text(body);
            lossy |= was_lossy;
            let (old_line, new_line) = left.take(kind);
            hunk.lines.push(DiffLine {
                kind,
                old_line,
                new_line,
                text: content,
                no_newline: false,
            });
            self.pos += 1;
        }
        lossy
    }

    /// Adds `hunk` to the current file; one that starts before the previous hunk of the file
    /// ends is kept but reported (applying it would go wrong).
    fn add_hunk(&mut self, at: usize, hunk: Hunk, lossy: bool) {
        let previous_end = self
            .file
            .as_ref()
            .and_then(|f| f.hunks.last())
            .map(|h| h.old_start.saturating_add(h.old_len));
        if previous_end.is_some_and(|end| hunk.old_start < end) {
            self.problem(
                at,
                "hunk overlaps or precedes the previous hunk of this file",
            );
        }
        if let Some(file) = self.file.as_mut() {
            file.lossy |= lossy;
            file.hunks.push(hunk);
        }
    }

    /// After a broken header: skip what looks like hunk content.
    fn skip_hunk_body(&mut self) {
        while let Some(line) = self.line(self.pos) {
            match line.first() {
                Some(b' ' | b'+' | b'\\') => self.pos += 1,
                Some(b'-') if !line.starts_with(b"--- ") => self.pos += 1,
                _ => return,
            }
        }
    }
}

/// Where the body of a hunk stands: the lines its header still counts on each side, and the
/// numbers of the next line on each side. A zero-length side starts *after* its start line, but
/// then it has no lines to number.
struct Remaining {
    old: u32,
    new: u32,
    old_no: u32,
    new_no: u32,
}

impl Remaining {
    fn of(hunk: &Hunk) -> Self {
        Remaining {
            old: hunk.old_len,
            new: hunk.new_len,
            old_no: hunk.old_start,
            new_no: hunk.new_start,
        }
    }

    /// Whether a line of `kind` is still counted by the header.
    fn fits(&self, kind: LineKind) -> bool {
        match kind {
            LineKind::Context => self.old > 0 && self.new > 0,
            LineKind::Removed => self.old > 0,
            LineKind::Added => self.new > 0,
        }
    }

    /// The old and new line numbers of a line of `kind`, counted off.
    fn take(&mut self, kind: LineKind) -> (Option<u32>, Option<u32>) {
        let (old_line, new_line) = match kind {
            LineKind::Context => (Some(self.old_no), Some(self.new_no)),
            LineKind::Removed => (Some(self.old_no), None),
            LineKind::Added => (None, Some(self.new_no)),
        };
        if old_line.is_some() {
            self.old_no = self.old_no.saturating_add(1);
            self.old -= 1;
        }
        if new_line.is_some() {
            self.new_no = self.new_no.saturating_add(1);
            self.new -= 1;
        }
        (old_line, new_line)
    }
}

fn truncate(text: &str) -> String {
    text.chars().take(80).collect()
}

/// `@@ -a[,b] +c[,d] @@[ section]`.
fn hunk_header(line: &[u8]) -> Option<(u32, u32, u32, u32, String)> {
    let rest = line.strip_prefix(b"@@ -")?;
    let (old, rest) = split_once(rest, b' ')?;
    let rest = rest.strip_prefix(b"+")?;
    let (new, rest) = split_once(rest, b' ')?;
    let rest = rest.strip_prefix(b"@@")?;
    let (old_start, old_len) = range(old)?;
    let (new_start, new_len) = range(new)?;
    let section = text(rest.strip_prefix(b" ").unwrap_or(rest)).0;
    Some((old_start, old_len, new_start, new_len, section))
}

fn range(spec: &[u8]) -> Option<(u32, u32)> {
    let (start, len) = match split_once(spec, b',') {
        Some((start, len)) => (number(start)?, number(len)?),
        None => (number(spec)?, 1),
    };
    Some((start, len))
}

fn number(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn split_once(bytes: &[u8], separator: u8) -> Option<(&[u8], &[u8])> {
    let at = bytes.iter().position(|b| *b == separator)?;
    Some((bytes.get(..at)?, bytes.get(at + 1..)?))
}

/// A path from `rename from`/`copy to` lines: quoted or verbatim, never prefixed.
fn header_path(raw: &[u8]) -> String {
    if raw.first() == Some(&b'"')
        && let Some((path, _)) = unquote(raw)
    {
        return display_path(&path);
    }
    display_path(raw)
}

/// A path from a `---` or `+++` line: `/dev/null` is no file; quoted paths are unquoted; a tab
/// starts the timestamp of `diff -u`; the side's `a/` or `b/` prefix is removed.
fn side_path(raw: &[u8], prefix: &[u8]) -> Option<String> {
    let path = if raw.first() == Some(&b'"') {
        unquote(raw).map(|(p, _)| p).unwrap_or_else(|| raw.to_vec())
    } else {
        let end = raw.iter().position(|b| *b == b'\t').unwrap_or(raw.len());
        raw.get(..end).unwrap_or(raw).to_vec()
    };
    // git ends the name with a tab when it has a space (`+++ b/trail.py \t`): up to the tab
    // is the name, its own trailing space too.
    let path = if raw.contains(&b'\t') || raw.first() == Some(&b'"') {
        path
    } else {
        path.trim_ascii_end().to_vec()
    };
    if path == b"/dev/null" {
        return None;
    }
    let stripped = path.strip_prefix(prefix).unwrap_or(&path);
    Some(display_path(stripped))
}

/// The two paths of `diff --git a/x b/y`, which may be quoted or contain spaces.
fn git_header_paths(rest: &[u8]) -> (Option<String>, Option<String>) {
    let strip = |bytes: &[u8], prefix: &[u8]| -> String {
        display_path(bytes.strip_prefix(prefix).unwrap_or(bytes))
    };
    if rest.first() == Some(&b'"') {
        let Some((old, used)) = unquote(rest) else {
            return (None, None);
        };
        let tail = rest.get(used..).unwrap_or_default().trim_ascii_start();
        let new = if tail.first() == Some(&b'"') {
            unquote(tail).map(|(p, _)| p)
        } else {
            Some(tail.to_vec())
        };
        return (Some(strip(&old, b"a/")), new.map(|n| strip(&n, b"b/")));
    }
    if let Some(at) = find(rest, b" \"") {
        let old = rest.get(..at).unwrap_or_default();
        let new = unquote(rest.get(at + 1..).unwrap_or_default()).map(|(p, _)| strip(&p, b"b/"));
        return (Some(strip(old, b"a/")), new);
    }
    // Same path on both sides (the common case, spaces allowed): `a/<p> b/<p>`.
    if rest.len() % 2 == 1 {
        let mid = rest.len() / 2;
        if let (Some(old), Some(b' '), Some(new)) =
            (rest.get(..mid), rest.get(mid), rest.get(mid + 1..))
        {
            let old_body = old.strip_prefix(b"a/").unwrap_or(old);
            let new_body = new.strip_prefix(b"b/").unwrap_or(new);
            if old_body == new_body {
                return (Some(display_path(old_body)), Some(display_path(new_body)));
            }
        }
    }
    // Different paths (a rename, whose `rename from/to` lines will give the exact names).
    match find(rest, b" b/") {
        Some(at) => (
            Some(strip(rest.get(..at).unwrap_or_default(), b"a/")),
            Some(strip(rest.get(at + 1..).unwrap_or_default(), b"b/")),
        ),
        None => match split_once(rest, b' ') {
            Some((old, new)) => (Some(display_path(old)), Some(display_path(new))),
            None => (None, None),
        },
    }
}

/// `Binary files a/x and b/y differ`.
fn binary_line_paths(line: &[u8]) -> (Option<String>, Option<String>) {
    let inner = line
        .strip_prefix(b"Binary files ")
        .and_then(|l| l.strip_suffix(b" differ"))
        .unwrap_or_default();
    match find(inner, b" and ") {
        Some(at) => (
            side_path(inner.get(..at).unwrap_or_default(), b"a/"),
            side_path(inner.get(at + 5..).unwrap_or_default(), b"b/"),
        ),
        None => (None, None),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Reads a C-style quoted path as git writes it (`"a/\303\251 \"x\""`); returns the path's bytes
/// and the number of bytes consumed, or `None` when the quote is not closed.
fn unquote(raw: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        let byte = *raw.get(i)?;
        match byte {
            b'"' => return Some((out, i + 1)),
            b'\\' => {
                let escaped = *raw.get(i + 1)?;
                i += 2;
                match escaped {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut value = u32::from(escaped - b'0');
                        for _ in 0..2 {
                            match raw.get(i) {
                                Some(d @ b'0'..=b'7') => {
                                    value = value * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        out.push((value & 0xff) as u8);
                    }
                    other => out.push(other),
                }
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_paths() {
        assert_eq!(
            git_header_paths(b"a/with space.txt b/with space.txt"),
            (Some("with space.txt".into()), Some("with space.txt".into()))
        );
        assert_eq!(
            git_header_paths(b"\"a/\\303\\251t\\303\\251.txt\" \"b/\\303\\251t\\303\\251.txt\""),
            (Some("été.txt".into()), Some("été.txt".into()))
        );
        // Not UTF-8: git's quoted form names the bytes (never U+FFFD, which names no file).
        assert_eq!(
            git_header_paths(b"\"a/bad\\377.py\" \"b/bad\\377.py\""),
            (
                Some("\"bad\\377.py\"".into()),
                Some("\"bad\\377.py\"".into())
            )
        );
        assert_eq!(
            side_path(b"b/raw\xff name", b"b/"),
            Some("\"raw\\377 name\"".into())
        );
        assert_eq!(
            git_header_paths(b"a/old b/new"),
            (Some("old".into()), Some("new".into()))
        );
        // git ends a name with a space by a tab: the name keeps its trailing space.
        assert_eq!(side_path(b"b/trail.py \t", b"b/"), Some("trail.py ".into()));
        assert_eq!(side_path(b"b/plain.py  ", b"b/"), Some("plain.py".into()));
    }

    #[test]
    fn hunk_headers() {
        assert_eq!(
            hunk_header(b"@@ -1,3 +1,4 @@ fn main"),
            Some((1, 3, 1, 4, "fn main".into()))
        );
        assert_eq!(
            hunk_header(b"@@ -1 +1 @@"),
            Some((1, 1, 1, 1, String::new()))
        );
        assert_eq!(
            hunk_header(b"@@ -0,0 +1,2 @@"),
            Some((0, 0, 1, 2, String::new()))
        );
        assert_eq!(hunk_header(b"@@ -x +1 @@"), None);
        assert_eq!(hunk_header(b"@@ -99999999999 +1 @@"), None);
    }
}
