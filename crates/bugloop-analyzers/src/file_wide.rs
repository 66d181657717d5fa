//! A suppression the change keeps that reaches past its own line: a `biome-ignore-all` or a
//! `@ts-nocheck` for the whole file, a `biome-ignore-start` down to its `biome-ignore-end`, a
//! shellcheck directive above a script's first command. The tools honour them, so the lines a
//! change writes under one are never checked; the diff shows neither the marker nor its
//! reach, so the file at head is read for them.

use std::collections::BTreeSet;
use std::path::Path;

use bugloop_diff::{Diff, LineKind};

use crate::hit::Candidate;
use crate::suppression::{Said, candidate_for, suppression_marker};

/// A file read for its suppressions is at most this large.
const MAX_READ: u64 = 4 << 20;

/// One candidate for each kept suppression of wider reach over lines the change writes, at the
/// first of them.
pub(crate) fn under_a_kept_wide_suppression(diff: &Diff, workspace: &Path) -> Vec<Candidate> {
    let mut found = Vec::new();
    for file in &diff.files {
        let Some(path) = file.new_path.as_deref() else {
            continue;
        };
        let added: BTreeSet<u32> = file
            .hunks
            .iter()
            .flat_map(|hunk| &hunk.lines)
            .filter(|line| line.kind == LineKind::Added)
            .filter_map(|line| line.new_line)
            .collect();
        let Some(kind) = Kind::of(path).filter(|_| !added.is_empty()) else {
            continue;
        };
        let Some(text) = crate::tree::read_at_most(workspace, path, MAX_READ) else {
            continue;
        };
        let text = String::from_utf8_lossy(&text);
        let lines: Vec<&str> = text.lines().collect();
        for (start, end) in kind.reaches(&lines) {
            let Some((marker, codes)) = suppression_marker(lines[start].trim()) else {
                continue;
            };
            // `biome-ignore-all lint/x: why` names `lint/x: why`, not `all ...`.
            let codes = codes
                .trim_start_matches('-')
                .trim_start_matches("all")
                .trim_start_matches("start")
                .trim()
                .to_owned();
            let marker = (marker, codes);
            let kept = u32::try_from(start + 1).unwrap_or(u32::MAX);
            if added.contains(&kept) {
                continue;
            }
            let covered = added.iter().find(|line| {
                let index = usize::try_from(**line).unwrap_or(usize::MAX) - 1;
                index > start && index < end
            });
            if let Some(line) = covered {
                let index = usize::try_from(*line).unwrap_or(usize::MAX) - 1;
                let said = Said::KeptForMore {
                    line: kept,
                    range: end < lines.len(),
                };
                let text = lines.get(index).copied().unwrap_or_default();
                found.push(candidate_for(path, *line, text, marker, said));
            }
        }
    }
    found
}

#[derive(Clone, Copy)]
enum Kind {
    Script { typescript: bool },
    Shell,
}

impl Kind {
    fn of(path: &str) -> Option<Kind> {
        let ending = path.rsplit('.').next().unwrap_or_default();
        match ending {
            "js" | "jsx" | "mjs" | "cjs" => Some(Kind::Script { typescript: false }),
            "ts" | "tsx" | "mts" | "cts" => Some(Kind::Script { typescript: true }),
            "sh" | "bash" => Some(Kind::Shell),
            _ => None,
        }
    }

    /// Each suppression of wider reach in `lines`: its line's index and the index its reach
    /// ends before (the file's length for the whole file).
    fn reaches(self, lines: &[&str]) -> Vec<(usize, usize)> {
        let comment = |line: &str| {
            let line = line.trim_start();
            line.starts_with("//") || line.starts_with("/*") || line.starts_with('*')
        };
        let mut found = Vec::new();
        match self {
            Kind::Script { typescript } => {
                let mut open: Option<usize> = None;
                for (index, line) in lines.iter().enumerate() {
                    if !comment(line) {
                        continue;
                    }
                    let whole = line.contains("biome-ignore-all")
                        || (typescript && line.contains("@ts-nocheck"));
                    if whole {
                        found.push((index, lines.len()));
                    } else if line.contains("biome-ignore-start") {
                        open = open.or(Some(index));
                    } else if line.contains("biome-ignore-end")
                        && let Some(start) = open.take()
                    {
                        found.push((start, index));
                    }
                }
                // A range never closed reaches the end of the file.
                found.extend(open.map(|start| (start, lines.len())));
            }
            // A directive above the first command reaches the whole script.
            Kind::Shell => {
                for (index, line) in lines.iter().enumerate() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with("#!") {
                        continue;
                    }
                    if !line.starts_with('#') {
                        break;
                    }
                    if line.contains("shellcheck") && line.contains("disable=") {
                        found.push((index, lines.len()));
                    }
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_written_under_a_kept_file_or_range_suppression_are_said() {
        let tree = crate::tree::test_tree(&[
            (
                "a.ts",
                "// @ts-nocheck\nexport const a = 1;\nexport const b: number = \"x\";\n",
            ),
            (
                "b.js",
                "const x = 1;\n// biome-ignore-start lint: legacy\nif (x == NaN) {}\n// biome-ignore-end lint: legacy\nif (x == NaN) {}\n",
            ),
            (
                "c.sh",
                "#!/bin/sh\n# shellcheck disable=SC2115\nrm -rf $DIR/*\n",
            ),
            ("d.ts", "// @ts-nocheck\nexport const d = 1;\n"),
        ]);
        let diff = bugloop_diff::parse(concat!(
            "diff --git a/a.ts b/a.ts\n--- a/a.ts\n+++ b/a.ts\n@@ -1,2 +1,3 @@\n // @ts-nocheck\n export const a = 1;\n+export const b: number = \"x\";\n",
            "diff --git a/b.js b/b.js\n--- a/b.js\n+++ b/b.js\n@@ -1,4 +1,5 @@\n const x = 1;\n // biome-ignore-start lint: legacy\n+if (x == NaN) {}\n // biome-ignore-end lint: legacy\n+if (x == NaN) {}\n",
            "diff --git a/c.sh b/c.sh\n--- a/c.sh\n+++ b/c.sh\n@@ -1,2 +1,3 @@\n #!/bin/sh\n # shellcheck disable=SC2115\n+rm -rf $DIR/*\n",
            // The suppression is the change's own: said as added, not here.
            "diff --git a/d.ts b/d.ts\n--- a/d.ts\n+++ b/d.ts\n@@ -0,0 +1,2 @@\n+// @ts-nocheck\n+export const d = 1;\n",
        ));
        let found = under_a_kept_wide_suppression(&diff, tree.path());
        let places: Vec<(&str, u32)> = found
            .iter()
            .map(|c| (c.hit.file.as_str(), c.hit.line))
            .collect();
        assert_eq!(places, [("a.ts", 3), ("b.js", 3), ("c.sh", 3)]);
        assert!(
            found[0].hit.message.contains("on line 1")
                && found[0].hit.message.contains("in the whole file")
        );
        assert!(
            found[1].hit.message.contains("down to its end marker"),
            "{}",
            found[1].hit.message
        );
    }
}
