//! Open findings whose code the changes since left as it was but moved within its file: lines
//! added or removed above it. Such a finding follows its code without a question to the model:
//! its comment is relocated, and a new report of the same code (an analyzer's hit at the new
//! line) is that finding, never a new one beside it.
//!
//! The recorded line is carried through the hunks of what changed since the last review (the
//! interdiff, or after a rebase the diff from the last reviewed head), and a quote is looked for
//! nearest that line. Without them nothing moves: an identical line elsewhere (the same
//! statement in another function, a comment quoting the old code) is no place to move a finding
//! to, and nothing else tells where its code went.

use bugloop_diff::{Diff, FileDiff, LineKind};
use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::grounding::{Head, find_evidence};

use super::touched::{Relocation, Touched, quote};

/// The open findings `touched` does not hold whose code is now at another line of its file.
pub(super) fn shifted(
    interdiff: Option<&Diff>,
    open: &[&ExistingFinding],
    touched: &[Touched],
    head: &dyn Head,
) -> Vec<Relocation> {
    let Some(diff) = interdiff else {
        return Vec::new();
    };
    open.iter()
        .filter(|finding| !touched.iter().any(|t| t.id == finding.id))
        .filter_map(|finding| {
            let file = finding.file.as_deref()?;
            let recorded = finding.line?;
            // A file the changes since did not change (or renamed: then it is touched) moved
            // nothing.
            let changed = diff.files.iter().find(|f| {
                f.old_path.as_deref() == Some(file) && f.new_path.as_deref() == Some(file)
            })?;
            let expected = carried(changed, recorded)?;
            let line = match quote(finding) {
                Some(quote) => find_evidence(head.text(file)?, quote, expected)?,
                None => expected,
            };
            (line != recorded).then(|| Relocation {
                id: finding.id.clone(),
                file: file.to_owned(),
                line,
            })
        })
        .collect()
}

/// Where line `old` of the file before the changes is after them: its own line where a hunk
/// shows it unchanged, else moved by the lines the hunks above it added and removed; `None`
/// when a hunk removed it.
pub(super) fn carried(file: &FileDiff, old: u32) -> Option<u32> {
    let mut offset = 0i64;
    for hunk in &file.hunks {
        if let Some(line) = hunk.lines.iter().find(|l| l.old_line == Some(old)) {
            return match line.kind {
                LineKind::Context => line.new_line,
                _ => None,
            };
        }
        // A hunk that only adds lines (`-3,0`) adds them after its start line.
        let last_old = hunk.old_start + hunk.old_len.saturating_sub(1);
        if last_old >= old {
            break;
        }
        offset += i64::from(hunk.new_len) - i64::from(hunk.old_len);
    }
    u32::try_from(i64::from(old) + offset)
        .ok()
        .filter(|l| *l > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::touched::tests::{Files, open as open_at};

    fn open(line: u32, evidence: Option<&str>) -> ExistingFinding {
        open_at("app.py", line, evidence)
    }

    /// `app.py` with `above` lines of imports before the query on the line after them.
    fn app(above: usize) -> String {
        let mut text: String = (0..above).map(|i| format!("import m{i}\n")).collect();
        text.push_str(
            "def find(db, name):\n    return db.execute(f\"select * from t where n = '{name}'\")\n",
        );
        text
    }

    const QUERY: &str = "db.execute(f\"select * from t where n = '{name}'\")";

    /// The changes since: `added` import lines inserted after the file's first line.
    fn inserted(added: usize) -> Diff {
        let mut diff = format!(
            "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,0 +2,{added} @@\n"
        );
        for i in 0..added {
            diff.push_str(&format!("+import extra{i}\n"));
        }
        bugloop_diff::parse(diff.as_bytes())
    }

    fn moved_to(interdiff: Option<&Diff>, finding: &ExistingFinding, text: String) -> Vec<u32> {
        let text: &'static str = Box::leak(text.into_boxed_str());
        let head = Files([("app.py", text)].into_iter().collect());
        shifted(interdiff, &[finding], &[], &head)
            .into_iter()
            .map(|r| r.line)
            .collect()
    }

    #[test]
    fn code_pushed_down_by_lines_added_above_it_is_followed() {
        // Two imports, the function on line 3 and the query on line 4; ten imports added.
        let finding = open(4, Some(QUERY));
        assert_eq!(moved_to(Some(&inserted(10)), &finding, app(12)), vec![14]);
        // Without a quote the hunks alone carry the line.
        assert_eq!(
            moved_to(Some(&inserted(10)), &open(4, None), app(12)),
            vec![14]
        );
    }

    #[test]
    fn without_the_changes_nothing_moves() {
        // The code is 28 lines down, but nothing says it is the finding's: a copy of its line,
        // or the same statement in another function, would look the same.
        let finding = open(4, Some(QUERY));
        assert!(moved_to(None, &finding, app(30)).is_empty());
        assert!(moved_to(None, &open(4, None), app(30)).is_empty());
    }

    #[test]
    fn changes_below_it_or_to_other_files_move_nothing() {
        let below = bugloop_diff::parse(
            b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -4,0 +5,2 @@\n+x = 1\n+y = 2\n",
        );
        let mut text = app(2);
        text.push_str("x = 1\ny = 2\n");
        assert!(moved_to(Some(&below), &open(4, Some(QUERY)), text).is_empty());
        let other = bugloop_diff::parse(
            b"diff --git a/lib.py b/lib.py\n--- a/lib.py\n+++ b/lib.py\n@@ -1,0 +2,9 @@\n+a\n+b\n+c\n+d\n+e\n+f\n+g\n+h\n+i\n",
        );
        assert!(moved_to(Some(&other), &open(4, Some(QUERY)), app(2)).is_empty());
    }

    #[test]
    fn lines_carried_through_hunks_that_add_remove_or_show_them() {
        // Line 2 removed, three lines added after line 5; line 7 rewritten as two.
        let diff = bugloop_diff::parse(
            b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -2 +1,0 @@\n-two\n@@ -5,0 +5,3 @@\n+p\n+q\n+r\n@@ -6,3 +8,4 @@\n six\n-seven\n+seven a\n+seven b\n eight\n",
        );
        let file = &diff.files[0];
        assert_eq!(carried(file, 1), Some(1));
        assert_eq!(carried(file, 2), None);
        assert_eq!(carried(file, 4), Some(3));
        assert_eq!(carried(file, 5), Some(4));
        assert_eq!(carried(file, 6), Some(8));
        assert_eq!(carried(file, 7), None);
        assert_eq!(carried(file, 8), Some(11));
        assert_eq!(carried(file, 20), Some(23));
    }
}
