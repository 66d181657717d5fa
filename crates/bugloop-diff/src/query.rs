//! Questions asked of a parsed file: is a line in the diff, the first diff line, and line maps.

use serde::Serialize;

use crate::{FileDiff, LineKind, Side};

/// A place a review comment can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Anchor {
    pub side: Side,
    pub line: u32,
}

/// Where a line of one side is on the other side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum LineMapping {
    /// The same line, at this number on the other side.
    Line(u32),
    /// The line was removed (old -> new) or added (new -> old); the number is where the other side
    /// continues (the next surviving line), for placing a comment nearby.
    Gone { nearest: u32 },
}

impl FileDiff {
    /// Whether `line` of `side` is shown in the diff (a changed line or a context line of a hunk),
    /// which is where GitHub accepts a review comment.
    pub fn contains_line(&self, side: Side, line: u32) -> bool {
        self.find_line(side, line).is_some()
    }

    /// Whether `line` of `side` was added (right) or removed (left).
    pub fn is_changed(&self, side: Side, line: u32) -> bool {
        self.find_line(side, line)
            .is_some_and(|kind| kind != LineKind::Context)
    }

    fn find_line(&self, side: Side, line: u32) -> Option<LineKind> {
        let hunk = self.hunks.iter().find(|h| {
            let (start, len) = match side {
                Side::Left => (h.old_start, h.old_len),
                Side::Right => (h.new_start, h.new_len),
            };
            len > 0 && line >= start && line - start < len
        })?;
        hunk.lines
            .iter()
            .find(|l| match side {
                Side::Left => l.old_line == Some(line),
                Side::Right => l.new_line == Some(line),
            })
            .map(|l| l.kind)
    }

    /// Where to anchor a comment about the file as a whole: the first added line, else the first
    /// line of the new side shown in a hunk, else (a deleted file) the first removed line.
    pub fn first_diff_line(&self) -> Option<Anchor> {
        let lines = || self.hunks.iter().flat_map(|h| &h.lines);
        lines()
            .find(|l| l.kind == LineKind::Added)
            .and_then(|l| l.new_line)
            .or_else(|| lines().find_map(|l| l.new_line))
            .map(|line| Anchor {
                side: Side::Right,
                line,
            })
            .or_else(|| {
                lines().find_map(|l| l.old_line).map(|line| Anchor {
                    side: Side::Left,
                    line,
                })
            })
    }

    /// The new-side position of an old line.
    pub fn old_to_new(&self, line: u32) -> LineMapping {
        self.map(line, Side::Left)
    }

    /// The old-side position of a new line.
    pub fn new_to_old(&self, line: u32) -> LineMapping {
        self.map(line, Side::Right)
    }

    fn map(&self, line: u32, from: Side) -> LineMapping {
        // Lines outside every hunk shift by the net growth of the hunks before them.
        let mut offset: i64 = 0;
        for hunk in &self.hunks {
            let (start, len, other_start, other_len) = match from {
                Side::Left => (hunk.old_start, hunk.old_len, hunk.new_start, hunk.new_len),
                Side::Right => (hunk.new_start, hunk.new_len, hunk.old_start, hunk.old_len),
            };
            // A zero-length side has no lines; `start` is then the line just before the hunk.
            let first = if len == 0 {
                start.saturating_add(1)
            } else {
                start
            };
            if line < first {
                break;
            }
            if len > 0 && line - start < len {
                let mut next_other = if other_len == 0 {
                    other_start.saturating_add(1)
                } else {
                    other_start
                };
                for l in &hunk.lines {
                    let (this, other) = match from {
                        Side::Left => (l.old_line, l.new_line),
                        Side::Right => (l.new_line, l.old_line),
                    };
                    if this == Some(line) {
                        return match other {
                            Some(other) => LineMapping::Line(other),
                            None => LineMapping::Gone {
                                nearest: next_other,
                            },
                        };
                    }
                    if let Some(other) = other {
                        next_other = other.saturating_add(1);
                    }
                }
            }
            offset += i64::from(other_len) - i64::from(len);
        }
        let mapped = (i64::from(line) + offset).clamp(1, i64::from(u32::MAX));
        LineMapping::Line(u32::try_from(mapped).unwrap_or(u32::MAX))
    }
}
