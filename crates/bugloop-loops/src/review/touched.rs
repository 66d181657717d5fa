//! Which open findings the code changed under since they were last reviewed, and how. A finding
//! is touched when the changes since the reviewed head remove or change a line of its recorded
//! range or a line of its quoted code, delete or rename its file, or when its quoted code is no
//! longer in its file at head. A touched finding is always asked about again, whatever else the
//! review shows; one nothing touched keeps its status without a question.
//!
//! How a fix looks does not matter: a line put back to what the base had, a line deleted, a
//! file deleted, a function moved elsewhere all touch the finding, although the incremental
//! review shows none of them as new code.

use bugloop_diff::{Diff, FileDiff, LineKind};
use bugloop_domain::dedup::evidence_key;
use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::finding::FindingId;
use bugloop_domain::grounding::{Head, evidence_lines, find_evidence};
use bugloop_domain::paths::prompt_path;

use super::shifted::carried;

/// A finding that stays open and now points at `file:line`, where its code is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Relocation {
    pub id: FindingId,
    pub file: String,
    pub line: u32,
}

/// What happened to one open finding's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Touched {
    pub id: FindingId,
    /// Where it was recorded.
    pub file: String,
    pub line: Option<u32>,
    pub what: Touch,
    /// The commit since the last review that took its code away, where it can be told.
    pub changed_in: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Touch {
    /// Its quoted code is still at head, at `file:line`: where it was (the lines around it
    /// changed), in the file it was renamed to, or where the changes since moved it.
    Still {
        file: String,
        line: u32,
        moved: bool,
    },
    /// Its quoted code is nowhere at head that the changes since put it.
    Gone {
        file_deleted: bool,
        /// What the changes since put in its place (the lines added where it was removed).
        replaced_by: Vec<String>,
        /// Where those lines are at head, in its file.
        replaced_at: Vec<u32>,
    },
}

impl Touched {
    /// How the finding's code changed, in a sentence for the model and the report.
    pub fn describe(&self, since: Option<&str>) -> String {
        let since = since.map_or(String::new(), |s| format!(" since {s}"));
        match &self.what {
            Touch::Still { file, line, moved } if *moved => {
                let file = prompt_path(file);
                format!("its code moved{since}: it is now at {file}:{line}")
            }
            Touch::Still { file, line, .. } => {
                let file = prompt_path(file);
                format!("the lines around it changed{since}; its code is still at {file}:{line}")
            }
            Touch::Gone {
                file_deleted: true, ..
            } => format!("{} was deleted{since}", prompt_path(&self.file)),
            Touch::Gone { replaced_by, .. } if replaced_by.is_empty() => {
                format!("the code it quoted was removed{since}")
            }
            Touch::Gone { .. } => format!("the code it quoted was changed{since}"),
        }
    }
}

/// The open findings (with a file) that `interdiff` (the changes since the reviewed head; none
/// in a full review) or the code at `head` show were touched, in the order given. `head` must
/// hold every finding's file and every file the interdiff adds or renames to.
pub(super) fn touched(
    interdiff: Option<&Diff>,
    open: &[&ExistingFinding],
    head: &dyn Head,
) -> Vec<Touched> {
    open.iter()
        .filter_map(|finding| {
            let file = finding.file.clone()?;
            let what = touch(interdiff, finding, &file, head)?;
            Some(Touched {
                id: finding.id.clone(),
                file,
                line: finding.line,
                what,
                changed_in: None,
            })
        })
        .collect()
}

fn touch(
    interdiff: Option<&Diff>,
    finding: &ExistingFinding,
    file: &str,
    head: &dyn Head,
) -> Option<Touch> {
    let changed = interdiff.and_then(|diff| {
        diff.files
            .iter()
            .find(|f| f.old_path.as_deref() == Some(file))
    });
    let evidence = quote(finding);
    let recorded = finding.line.unwrap_or(1);
    let now_named = match changed {
        Some(f) if f.new_path.is_none() => None,
        Some(f) => f.new_path.clone(),
        None => Some(file.to_owned()),
    };
    let text = now_named.as_deref().and_then(|name| head.text(name));
    let renamed = now_named.as_deref().is_some_and(|name| name != file);
    let hit = changed.is_some_and(|f| !hits(f, finding, evidence).is_empty());
    let Some(evidence) = evidence else {
        // Nothing quoted: only the recorded lines (or the file) can tell.
        return match (text, now_named) {
            (None, _) => Some(gone(changed, finding, None, true)),
            (Some(_), Some(name)) if hit || renamed => Some(Touch::Still {
                file: name,
                line: recorded,
                moved: renamed,
            }),
            _ => None,
        };
    };
    if let (Some(text), Some(name)) = (text, &now_named)
        && let Some(line) = still_there(text, evidence, recorded, changed.filter(|_| hit))
    {
        return (hit || renamed).then(|| Touch::Still {
            file: name.clone(),
            line,
            moved: renamed,
        });
    }
    // Not in its file any more: did the changes since put it somewhere else?
    if let Some((file, line)) = interdiff.and_then(|diff| moved_to(diff, file, evidence, head)) {
        return Some(Touch::Still {
            file,
            line,
            moved: true,
        });
    }
    // In a review of what changed since, code is gone only from a file that changed since (its
    // quote was found there when it was last reviewed).
    if interdiff.is_some() && changed.is_none() && text.is_some() {
        return None;
    }
    Some(gone(changed, finding, Some(evidence), text.is_none()))
}

/// Where the finding's quoted code is in its file at head. When the changes since removed or
/// changed its lines (`changed`, the file's diff), only a place they added the quote at, or its
/// own first line where that line survived, is its code: an identical line elsewhere that the
/// changes did not touch (the same statement in another function) is other code.
fn still_there(
    text: &str,
    evidence: &str,
    recorded: u32,
    changed: Option<&FileDiff>,
) -> Option<u32> {
    let Some(changed) = changed else {
        return find_evidence(text, evidence, recorded);
    };
    let near = carried(changed, recorded);
    let added = added_lines(changed);
    evidence_lines(text, evidence)
        .into_iter()
        .filter(|line| added.contains(line) || near == Some(*line))
        .filter(|line| !in_a_comment(text, *line, evidence))
        .min_by_key(|line| line.abs_diff(near.unwrap_or(recorded)))
}

/// The head lines the changes added to `file`.
fn added_lines(file: &FileDiff) -> std::collections::BTreeSet<u32> {
    file.hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter(|l| l.kind == LineKind::Added)
        .filter_map(|l| l.new_line)
        .collect()
}

/// Whether line `line` of `text` quotes `evidence` in a comment (`# was: <the old code>`) when
/// the code quoted is no comment: a copy, not the code.
fn in_a_comment(text: &str, line: u32, evidence: &str) -> bool {
    let commented = |t: &str| {
        super::near::COMMENT_MARKERS
            .iter()
            .any(|m| t.trim_start().starts_with(m))
    };
    let at = usize::try_from(line).ok().and_then(|l| l.checked_sub(1));
    let holder = at.and_then(|at| text.lines().nth(at)).unwrap_or_default();
    commented(holder) && !commented(evidence)
}

/// The longest quote matched against the code (longer ones are treated as no quote).
pub(crate) const MAX_QUOTE_BYTES: usize = 2_000;

/// The code a finding quotes, as it is matched against the code at head: a quote too long to be
/// one place's code is matched like no quote at all (and cannot make the searches expensive).
pub(super) fn quote(finding: &ExistingFinding) -> Option<&str> {
    finding
        .evidence
        .as_deref()
        .filter(|e| !e.trim().is_empty() && e.len() <= MAX_QUOTE_BYTES)
}

fn gone(
    changed: Option<&FileDiff>,
    finding: &ExistingFinding,
    evidence: Option<&str>,
    file_deleted: bool,
) -> Touch {
    let (replaced_by, replaced_at) = match changed {
        _ if file_deleted => (Vec::new(), Vec::new()),
        // git shows the change as binary (an attribute of the branch's may say so): what
        // replaced the code is not known from the diff, and it was not "removed".
        Some(f) if f.binary || f.hunks.is_empty() => (
            vec![
                "(git shows this change as binary; the file at head holds what replaced it)"
                    .to_owned(),
            ],
            Vec::new(),
        ),
        // Only the hunks that removed the finding's lines or quote: what replaced them.
        Some(f) => hits(f, finding, evidence)
            .into_iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Added)
            .map(|l| (l.text.clone(), l.new_line.unwrap_or_default()))
            .unzip(),
        None => (Vec::new(), Vec::new()),
    };
    Touch::Gone {
        file_deleted,
        replaced_by,
        replaced_at,
    }
}

/// The file's hunks that remove a line of the finding's recorded range or a line of its quoted
/// code.
fn hits<'f>(
    file: &'f FileDiff,
    finding: &ExistingFinding,
    evidence: Option<&str>,
) -> Vec<&'f bugloop_diff::Hunk> {
    let range = finding
        .line
        .map(|line| line..=finding.end_line.filter(|end| *end >= line).unwrap_or(line));
    let quoted = evidence_key(evidence);
    let quoted_lines: Vec<String> = evidence
        .unwrap_or_default()
        .lines()
        .filter_map(|l| evidence_key(Some(l)))
        .collect();
    let removes_it = |line: &bugloop_diff::DiffLine| {
        let in_range = range
            .as_ref()
            .zip(line.old_line)
            .is_some_and(|(range, old)| range.contains(&old));
        let removed = evidence_key(Some(&line.text));
        let quotes = match (&quoted, &removed) {
            (Some(quoted), Some(removed)) => {
                quoted.contains(removed.as_str())
                    || quoted_lines.iter().any(|q| removed.contains(q.as_str()))
            }
            _ => false,
        };
        in_range || quotes
    };
    file.hunks
        .iter()
        .filter(|hunk| {
            hunk.lines
                .iter()
                .any(|line| line.kind == LineKind::Removed && removes_it(line))
        })
        .collect()
}

/// Where the changes since added the quoted code in another file: the first place at head,
/// nearest the top, where the whole quote (whitespace aside, so a reformat over several lines
/// too) starts on a line the changes added.
fn moved_to(diff: &Diff, from: &str, evidence: &str, head: &dyn Head) -> Option<(String, u32)> {
    diff.files
        .iter()
        .filter(|f| f.new_path.as_deref().is_some_and(|path| path != from))
        .find_map(|f| {
            let path = f.new_path.clone()?;
            let added = added_lines(f);
            if added.is_empty() {
                return None;
            }
            let text = head.text(&path)?;
            let line = evidence_lines(text, evidence)
                .into_iter()
                .find(|line| added.contains(line) && !in_a_comment(text, *line, evidence))?;
            Some((path, line))
        })
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;

    use bugloop_domain::status::ThreadStatus;

    use super::*;

    /// The code at head: files by path.
    pub(in crate::review) struct Files(pub BTreeMap<&'static str, &'static str>);

    impl Head for Files {
        fn text(&self, path: &str) -> Option<&str> {
            self.0.get(path).copied()
        }
        fn in_diff(&self, _: &str, _: u32) -> Option<bool> {
            None
        }
    }

    /// An open finding at `file:line` quoting `evidence`.
    pub(in crate::review) fn open(
        file: &str,
        line: u32,
        evidence: Option<&str>,
    ) -> ExistingFinding {
        ExistingFinding {
            id: FindingId::new("off-by-one"),
            title: "Off by one".to_owned(),
            description: String::new(),
            file: Some(file.to_owned()),
            line: Some(line),
            end_line: None,
            evidence: evidence.map(str::to_owned),
            status: ThreadStatus::Pending,
            reopenable: false,
            moved: false,
            tool_rule: None,
        }
    }

    const BAD: &str = "def mean(xs):\n    t = 0\n    for i in range(len(xs) + 1):\n        t += xs[i]\n    return t / len(xs)\n";
    const GOOD: &str = "def mean(xs):\n    t = 0\n    for i in range(len(xs)):\n        t += xs[i]\n    return t / len(xs)\n";

    fn one(
        interdiff: &str,
        files: &[(&'static str, &'static str)],
        finding: &ExistingFinding,
    ) -> Option<Touch> {
        let diff = bugloop_diff::parse(interdiff.as_bytes());
        let head = Files(files.iter().copied().collect());
        touched(Some(&diff), &[finding], &head)
            .into_iter()
            .next()
            .map(|t| t.what)
    }

    /// The finding on BAD's loop (line 3 of stats.py), quoting the whole loop line.
    fn the_loop() -> ExistingFinding {
        open("stats.py", 3, Some("for i in range(len(xs) + 1):"))
    }

    const RESTORE: &str = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -3 +3 @@\n-    for i in range(len(xs) + 1):\n+    for i in range(len(xs)):\n";

    #[test]
    fn a_line_put_back_as_the_base_had_it_is_gone_and_says_what_replaced_it() {
        let touch = one(RESTORE, &[("stats.py", GOOD)], &the_loop());
        assert_eq!(
            touch,
            Some(Touch::Gone {
                file_deleted: false,
                replaced_by: vec!["    for i in range(len(xs)):".to_owned()],
                replaced_at: vec![3],
            })
        );
    }

    #[test]
    fn a_deleted_line_or_file_is_gone() {
        let delete_line = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -3 +2,0 @@\n-    for i in range(len(xs) + 1):\n";
        let touch = one(
            delete_line,
            &[("stats.py", "def mean(xs):\n    t = 0\n        t += xs[i]\n")],
            &open("stats.py", 3, Some("range(len(xs) + 1)")),
        );
        assert!(
            matches!(touch, Some(Touch::Gone { file_deleted: false, ref replaced_by, .. }) if replaced_by.is_empty())
        );
        let delete_file = "diff --git a/stats.py b/stats.py\ndeleted file mode 100644\n--- a/stats.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def mean(xs):\n-    t = 0\n";
        let touch = one(
            delete_file,
            &[],
            &open("stats.py", 3, Some("range(len(xs) + 1)")),
        );
        assert!(matches!(
            touch,
            Some(Touch::Gone {
                file_deleted: true,
                ..
            })
        ));
        // A finding without quoted code in a deleted file too.
        let touch = one(delete_file, &[], &open("stats.py", 3, None));
        assert!(matches!(
            touch,
            Some(Touch::Gone {
                file_deleted: true,
                ..
            })
        ));
    }

    #[test]
    fn code_moved_to_another_file_or_a_renamed_one_is_still_there() {
        // Moved as it was, and moved and wrapped over three lines on the way.
        let removed = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -1,5 +0,0 @@\n-def mean(xs):\n-    t = 0\n-    for i in range(len(xs) + 1):\n-        t += xs[i]\n-    return t / len(xs)\n";
        for loop_lines in [
            "    for i in range(len(xs) + 1):\n",
            "    for i in range(\n        len(xs) + 1\n    ):\n",
        ] {
            let body = format!(
                "def mean(xs):\n    t = 0\n{loop_lines}        t += xs[i]\n    return t / len(xs)\n"
            );
            let added: String = body.lines().map(|l| format!("+{l}\n")).collect();
            let moved = format!(
                "{removed}diff --git a/util.py b/util.py\n--- a/util.py\n+++ b/util.py\n@@ -1 +1,{} @@\n import os\n{added}",
                body.lines().count() + 1
            );
            let util: &'static str = Box::leak(format!("import os\n{body}").into_boxed_str());
            let touch = one(&moved, &[("stats.py", ""), ("util.py", util)], &the_loop());
            assert_eq!(
                touch,
                Some(Touch::Still {
                    file: "util.py".to_owned(),
                    line: 4,
                    moved: true
                }),
                "{loop_lines}"
            );
        }
        let renamed = "diff --git a/stats.py b/lib/stats.py\nsimilarity index 100%\nrename from stats.py\nrename to lib/stats.py\n";
        let touch = one(renamed, &[("lib/stats.py", BAD)], &the_loop());
        assert_eq!(
            touch,
            Some(Touch::Still {
                file: "lib/stats.py".to_owned(),
                line: 3,
                moved: true
            })
        );
    }

    #[test]
    fn changes_elsewhere_in_the_file_touch_nothing_and_changes_on_its_lines_do() {
        let elsewhere = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -5 +5 @@\n-    return t / len(xs)\n+    return t / max(len(xs), 1)\n";
        let bad_then = BAD.replace("t / len(xs)", "t / max(len(xs), 1)");
        let text: &'static str = Box::leak(bad_then.into_boxed_str());
        assert_eq!(one(elsewhere, &[("stats.py", text)], &the_loop()), None);
        // The finding's own line rewritten around the same quoted code: still there, asked again.
        let reworded = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -3 +3 @@\n-    for i in range(len(xs) + 1):\n+    for i in range(len(xs) + 1):  # all of them\n";
        let text: &'static str = Box::leak(
            BAD.replace("+ 1):", "+ 1):  # all of them")
                .into_boxed_str(),
        );
        assert_eq!(
            one(
                reworded,
                &[("stats.py", text)],
                &open("stats.py", 3, Some("range(len(xs) + 1)"))
            ),
            Some(Touch::Still {
                file: "stats.py".to_owned(),
                line: 3,
                moved: false
            })
        );
    }

    #[test]
    fn a_changed_line_is_not_found_again_in_an_identical_line_elsewhere() {
        // get_a's line is guarded; the finding is get_b's, which the push changes.
        let after = "def get_a(cache, key):\n    if key in cache:\n        value = cache[key]\n\n\ndef get_b(cache, key):\n    value = cache.get(key, \"\")\n";
        let fixed = "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -7 +7 @@\n-    value = cache[key]\n+    value = cache.get(key, \"\")\n";
        let touch = one(
            fixed,
            &[("c.py", after)],
            &open("c.py", 7, Some("value = cache[key]")),
        );
        assert!(
            matches!(
                touch,
                Some(Touch::Gone {
                    file_deleted: false,
                    ..
                })
            ),
            "{touch:?}"
        );
    }

    #[test]
    fn a_comment_quoting_the_old_line_is_not_its_code() {
        // The loop moved to util.py; stats.py keeps a note of what it was.
        let moved = "diff --git a/stats.py b/stats.py\n--- a/stats.py\n+++ b/stats.py\n@@ -3 +3 @@\n-    for i in range(len(xs) + 1):\n+    # was: for i in range(len(xs) + 1):\ndiff --git a/util.py b/util.py\n--- a/util.py\n+++ b/util.py\n@@ -1 +1,2 @@\n import os\n+for i in range(len(xs) + 1): pass\n";
        let stats = "def mean(xs):\n    t = 0\n    # was: for i in range(len(xs) + 1):\n";
        let touch = one(
            moved,
            &[
                ("stats.py", stats),
                ("util.py", "import os\nfor i in range(len(xs) + 1): pass\n"),
            ],
            &the_loop(),
        );
        assert_eq!(
            touch,
            Some(Touch::Still {
                file: "util.py".to_owned(),
                line: 2,
                moved: true
            })
        );
    }

    #[test]
    fn without_an_interdiff_only_code_gone_from_head_counts() {
        let head = Files([("stats.py", GOOD)].into_iter().collect());
        let kept = open("stats.py", 3, Some("t += xs[i]"));
        let fixed = open("stats.py", 3, Some("range(len(xs) + 1)"));
        let found = touched(None, &[&kept, &fixed], &head);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(matches!(found[0].what, Touch::Gone { .. }));
        assert_eq!(
            found[0].describe(Some("abc1234")),
            "the code it quoted was removed since abc1234"
        );
    }
}
