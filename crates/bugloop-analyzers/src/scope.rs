//! Which lines a change adds, file by file: a hit counts only where its lines meet them. A hit
//! on lines the change left alone is the code's old debt, not this change's bug, and is never
//! published.

use std::collections::{BTreeMap, BTreeSet};

use bugloop_diff::{ChangeKind, Diff, LineKind};

/// The lines the change adds (or rewrites), at head, by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangedLines {
    files: BTreeMap<String, BTreeSet<u32>>,
}

impl ChangedLines {
    pub fn of(diff: &Diff) -> ChangedLines {
        let mut files: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
        for (file, line, _) in added_lines(diff) {
            files.entry(file.to_owned()).or_default().insert(line);
        }
        ChangedLines { files }
    }

    /// The files with added lines.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The first added line of `file` within `start..=end`, if any.
    pub fn first_added(&self, file: &str, start: u32, end: u32) -> Option<u32> {
        let lines = self.files.get(file)?;
        lines.range(start..=end.max(start)).next().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// Every line the change adds, with its file and its line at head (deleted and binary files have
/// none).
pub(crate) fn added_lines(diff: &Diff) -> impl Iterator<Item = (&str, u32, &str)> {
    diff.files
        .iter()
        .filter(|f| f.change != ChangeKind::Deleted && !f.binary)
        .flat_map(|file| {
            file.hunks
                .iter()
                .flat_map(|h| &h.lines)
                .filter(|l| l.kind == LineKind::Added)
                .filter_map(move |l| Some((file.path(), l.new_line?, l.text.as_str())))
        })
}

/// A diff that adds `lines` as a new file `path` (for tests of the checks of added lines).
#[cfg(test)]
pub(crate) fn adding(path: &str, lines: &[&str]) -> Diff {
    let body: String = lines.iter().map(|l| format!("+{l}\n")).collect();
    bugloop_diff::parse(format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{body}",
        lines.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_added_lines_count() {
        let diff = bugloop_diff::parse(
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n x = 1\n-y = 2\n+y = 3\n+z = 4\n w = 5\ndiff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
        );
        let lines = ChangedLines::of(&diff);
        assert_eq!(lines.files().collect::<Vec<_>>(), ["a.py"]);
        assert_eq!(lines.first_added("a.py", 1, 1), None);
        assert_eq!(lines.first_added("a.py", 1, 4), Some(2));
        assert_eq!(lines.first_added("a.py", 3, 3), Some(3));
        assert_eq!(lines.first_added("a.py", 4, 4), None);
        assert_eq!(lines.first_added("b.py", 1, 9), None);
    }
}
