//! Unified-diff parsing for bugloop.
//!
//! [`parse`] reads multi-file git diffs (renames, copies, mode changes, binary files, new and
//! deleted files, `\ No newline at end of file`, CRLF, quoted and non-UTF-8 paths) and plain
//! `diff -u` output; [`parse_patch`] reads the hunks-only `patch` of GitHub's pull-request files
//! API. Neither ever fails as a whole or panics: they return what they could read plus a list of
//! [`Problem`]s with the line of the input each is about.
//!
//! On top of the parse, [`FileDiff`] answers the questions review publishing asks: is a line in
//! the diff (and on which side), what is the first diff line of a file, and where does a line of the
//! old file sit in the new one (and back).
//!
//! **Invariants:** it never panics and never fails as a whole: it returns every file it could read
//! and a `Problem` (1-based input line, message) for everything it could not. Hunk line counts, not
//! line prefixes, decide where a hunk ends, so `---`, `+++` and `@@` inside content are content.
//! Text is bytes until the end: non-UTF-8 lines are read lossily and the file is flagged `lossy`,
//! but paths are never read lossily (a name that is not UTF-8 is in its quoted form, see `paths` in
//! `bugloop-domain`, the one crate `diff` depends on); a trailing `\r` is removed from every line.

mod parse;
mod query;

pub use parse::{parse, parse_patch};
pub use query::{Anchor, LineMapping};

use serde::Serialize;

/// The two sides of a diff, named as GitHub's review API names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Side {
    /// The old file (`-` lines).
    Left,
    /// The new file (`+` lines).
    Right,
}

/// What happened to a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
    Renamed,
    Copied,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// One line of a hunk. Text is without its `+`/`-`/` ` prefix and without the line ending
/// (a trailing `\r` is removed too; non-UTF-8 bytes are replaced with U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiffLine {
    pub kind: LineKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_line: Option<u32>,
    pub text: String,
    /// Followed by `\ No newline at end of file`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_newline: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
    /// The text after the second `@@` (usually the enclosing function).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub section: String,
    pub lines: Vec<DiffLine>,
}

/// One file of a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    /// Path before the change; `None` for a new file. A name that is not UTF-8 is in git's quoted
    /// form (`"bad\377.py"`, see `bugloop_domain::paths::display_path`), never read lossily.
    pub old_path: Option<String>,
    /// Path after the change; `None` for a deleted file.
    pub new_path: Option<String>,
    pub change: ChangeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_mode: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Some line of this file was not valid UTF-8 and was read lossily.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub lossy: bool,
    pub hunks: Vec<Hunk>,
}

/// Something in the input that could not be read as a diff, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// Everything read from a diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Diff {
    pub files: Vec<FileDiff>,
    pub problems: Vec<Problem>,
}

impl Diff {
    /// The file whose new path (or, when deleted, old path) is `path`.
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.files.iter().find(|f| f.path() == path)
    }

    /// Lines added and removed over all files.
    pub fn stats(&self) -> (usize, usize) {
        self.files.iter().fold((0, 0), |(a, r), f| {
            let (fa, fr) = f.stats();
            (a + fa, r + fr)
        })
    }
}

impl FileDiff {
    /// The path a reviewer knows the file by: the new path, or the old one if it was deleted.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    /// Lines added and removed.
    pub fn stats(&self) -> (usize, usize) {
        let mut added = 0;
        let mut removed = 0;
        for line in self.hunks.iter().flat_map(|h| &h.lines) {
            match line.kind {
                LineKind::Added => added += 1,
                LineKind::Removed => removed += 1,
                LineKind::Context => {}
            }
        }
        (added, removed)
    }
}
