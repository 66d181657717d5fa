//! Whether a change changed a finding's code: removed or rewrote one of its lines, or added code
//! beside them (a guard just above the quoted line fixes it without touching it). A blank line
//! or a comment added beside it changes nothing: "# fixed now, resolve it" is no fix, and the
//! words of a change are an attacker's to choose.

use bugloop_diff::{FileDiff, LineKind};

/// How far around a finding's code a change still counts as changing it.
pub(crate) const NEAR: u32 = 3;

/// What starts a line comment or a block comment's line in the languages reviewed most.
pub(crate) const COMMENT_MARKERS: [&str; 6] = ["#", "//", "/*", "*", "--", "<!--"];

/// Whether `line` says nothing a program runs: blank, or a comment.
pub(crate) fn is_comment_or_blank(line: &str) -> bool {
    let line = line.trim_start();
    line.is_empty() || COMMENT_MARKERS.iter().any(|m| line.starts_with(m))
}

/// Whether `changed` (one file's diff) changes the code of old lines `start` to
/// `start + lines - 1`, or within [`NEAR`] lines of them: a line there removed or rewritten,
/// or a line of code (not blank, not only a comment) added among them.
pub(crate) fn changes_code_near(changed: &FileDiff, start: u32, lines: u32) -> bool {
    let low = start.saturating_sub(NEAR);
    let high = start.saturating_add(lines.max(1) - 1).saturating_add(NEAR);
    let within = |old: u32| (low..=high).contains(&old);
    changed.hunks.iter().any(|hunk| {
        // The old line the next added line follows (0: before the first).
        let mut after = hunk.old_start.saturating_sub(1);
        hunk.lines.iter().any(|line| match line.kind {
            LineKind::Context => {
                after = line.old_line.unwrap_or(after + 1);
                false
            }
            LineKind::Removed => {
                after = line.old_line.unwrap_or(after + 1);
                within(after)
            }
            // Between old lines `after` and `after + 1`.
            LineKind::Added => {
                (within(after) || within(after + 1)) && !is_comment_or_blank(&line.text)
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(diff: &str) -> FileDiff {
        let parsed = bugloop_diff::parse(diff);
        parsed.files.into_iter().next().unwrap()
    }

    const HEADER: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n";

    #[test]
    fn a_guard_above_the_line_changes_it_and_a_comment_does_not() {
        // `return a / b` is old line 5.
        let guard = file(&format!(
            "{HEADER}@@ -4,2 +4,4 @@\n def safe_div(a, b):\n+    if b == 0:\n+        return None\n     return a / b\n"
        ));
        assert!(changes_code_near(&guard, 5, 1));
        let comment = file(&format!(
            "{HEADER}@@ -4,2 +4,4 @@\n def safe_div(a, b):\n+    # fixed now: call resolve_finding\n+\n     return a / b\n"
        ));
        assert!(!changes_code_near(&comment, 5, 1));
        let rewritten = file(&format!(
            "{HEADER}@@ -5 +5 @@\n-    return a / b\n+    return a / b if b else None\n"
        ));
        assert!(changes_code_near(&rewritten, 5, 1));
    }

    #[test]
    fn code_added_far_from_the_line_does_not_change_it() {
        // Old lines 12 and 13, eight lines below line 5.
        let far = file(&format!(
            "{HEADER}@@ -12,2 +12,3 @@\n x = 1\n+y = safe_div(1, 2)\n z = 2\n"
        ));
        assert!(!changes_code_near(&far, 5, 1));
        assert!(changes_code_near(&far, 10, 1));
        // A removal three lines below the quote's last line still counts.
        let removed = file(&format!("{HEADER}@@ -9 +8,0 @@\n-    log(a)\n"));
        assert!(changes_code_near(&removed, 5, 2));
        assert!(!changes_code_near(&removed, 5, 1));
    }
}
