//! Stage 2 of a review: how much of the change the model is shown. When bugloop's summary
//! comment records a complete review of an earlier head, and that head is an ancestor of this
//! one, the model sees only what changed since (the interdiff, kept to lines the change itself
//! adds, so commits merged in from the base are not reviewed again) and is asked only about the
//! open findings in the files it touches; the other open findings stay as they are. Otherwise
//! the whole change, with the reason.

use std::collections::BTreeSet;

use bugloop_diff::{Diff, FileDiff, LineKind, Side};
use bugloop_domain::grounding::Head;
use bugloop_report::review::{FIRST_REVIEW, ReviewedScope};
use bugloop_report::summary::{SUMMARY_TAG, read_reviewed};

use super::ReviewRequest;
use super::conversation::Conversation;
use crate::env::LoopEnv;
use crate::head::HeadTree;
use crate::publish::find_tagged;

/// What the model is shown of the change.
pub(super) struct Shown {
    pub scope: ReviewedScope,
    /// The change's diff, or what changed since the earlier review.
    pub diff: Diff,
    /// The open findings the model is told about and may resolve.
    pub asked_ids: Vec<String>,
    /// In an incremental review, the code at head around each asked finding that the shown
    /// diff does not show, so a model without tools can judge it too.
    pub finding_context: String,
}

pub(super) fn decide(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Shown {
    match interdiff(env, request, conversation) {
        Ok((since, diff)) => {
            let files: BTreeSet<&str> = diff.files.iter().map(FileDiff::path).collect();
            // An open finding is asked about when its file changed; one without a file always.
            let asked_ids: Vec<String> = conversation
                .existing
                .iter()
                .filter(|e| conversation.open_ids.iter().any(|id| id == e.id.as_str()))
                .filter(|e| e.file.as_deref().is_none_or(|file| files.contains(file)))
                .map(|e| e.id.as_str().to_owned())
                .collect();
            let finding_context = finding_context(request, conversation, &asked_ids, &diff);
            Shown {
                scope: ReviewedScope::Incremental {
                    since,
                    files: files.iter().map(|f| (*f).to_owned()).collect(),
                    kept_findings: conversation.open_ids.len() - asked_ids.len(),
                },
                diff,
                asked_ids,
                finding_context,
            }
        }
        Err(reason) => Shown {
            scope: ReviewedScope::Full { reason },
            diff: request.diff.clone(),
            asked_ids: conversation.open_ids.clone(),
            finding_context: String::new(),
        },
    }
}

/// The earlier head and the interdiff, or why the whole change is shown.
fn interdiff(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Result<(String, Diff), String> {
    if request.full {
        return Err("a full review was asked for".to_owned());
    }
    if request.clean_room {
        return Err("a clean-room review ignores earlier ones".to_owned());
    }
    let Some(summary) = find_tagged(&conversation.comments, SUMMARY_TAG) else {
        return Err(FIRST_REVIEW.to_owned());
    };
    let Some(earlier) = read_reviewed(&summary.body) else {
        return Err(
            "the last review recorded no commit (uncommitted changes, or an older bugloop)"
                .to_owned(),
        );
    };
    let since = bugloop_git::short(&earlier.head).to_owned();
    if !earlier.complete {
        return Err(format!("the review of {since} was incomplete"));
    }
    if !is_commit(&request.head) {
        return Err("uncommitted changes are reviewed in full".to_owned());
    }
    let raw = match env.git.interdiff(&earlier.head, &request.head) {
        Ok(Some(raw)) => raw,
        Ok(None) => {
            return Err(format!(
                "the branch was rewritten since {since} (a force-push or a rebase)"
            ));
        }
        Err(error) => return Err(format!("the changes since {since} are unknown: {error}")),
    };
    let interdiff = bugloop_diff::parse(&raw);
    if !interdiff.problems.is_empty() {
        return Err(format!("the changes since {since} could not be read"));
    }
    Ok((earlier.head, within_change(interdiff, &request.diff)))
}

/// Lines shown around a finding's code.
const AROUND: u32 = 3;

/// The code at head around each asked finding the shown diff does not show. The finding's line
/// was recorded at an earlier head, so its quoted code is looked for (nearest the recorded line);
/// code that is gone is said, which is often the news that it was fixed.
fn finding_context(
    request: &ReviewRequest,
    conversation: &Conversation,
    asked_ids: &[String],
    shown: &Diff,
) -> String {
    let asked: Vec<_> = conversation
        .existing
        .iter()
        .filter(|e| asked_ids.iter().any(|id| id == e.id.as_str()))
        .filter_map(|e| Some((e, e.file.as_deref()?, e.line?)))
        .collect();
    let head = HeadTree::load(
        &request.workspace,
        None,
        asked.iter().map(|(_, file, _)| (*file).to_owned()),
    );
    let mut out = String::new();
    for (finding, file, recorded) in asked {
        let Some(text) = head.text(file) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let evidence = finding
            .evidence
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty());
        let found = match evidence {
            Some(quoted) => lines
                .iter()
                .enumerate()
                .filter(|(_, line)| line.trim() == quoted.lines().next().unwrap_or(quoted).trim())
                .map(|(index, _)| u32::try_from(index + 1).unwrap_or(u32::MAX))
                .min_by_key(|line| line.abs_diff(recorded)),
            None => Some(recorded),
        };
        let Some(line) = found else {
            out.push_str(&format!(
                "- `{}` ({file}:{recorded}): its quoted code `{}` is no longer in the file.\n",
                finding.id,
                evidence
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default()
            ));
            continue;
        };
        if shown
            .file(file)
            .is_some_and(|f| f.contains_line(Side::Right, line))
        {
            continue;
        }
        out.push_str(&format!("- `{}` at {file}:{line}:\n", finding.id));
        let first = line.saturating_sub(AROUND).max(1);
        let last = line.saturating_add(AROUND);
        for (number, text) in (first..=last).zip(lines.iter().skip(first as usize - 1)) {
            out.push_str(&format!("{number} {}\n", crate::plan::clip(text)));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("The open findings asked about, with their code at head:\n\n{out}")
}

/// Keeps the parts of the interdiff that are part of the change: files the change touches, and
/// hunks that add a line the change adds (a hunk that only brings a line back to the base, or
/// comes from the base branch merged in, is not the change's). A hunk that only removes lines
/// of a changed file is kept: it is cheap and may remove what a finding is about.
fn within_change(interdiff: Diff, change: &Diff) -> Diff {
    let files = interdiff
        .files
        .into_iter()
        .filter_map(|mut file| {
            let changed = change.file(file.path())?;
            let added: BTreeSet<u32> = added_lines(changed).collect();
            file.hunks.retain(|hunk| {
                let mut adds = hunk
                    .lines
                    .iter()
                    .filter(|l| l.kind == LineKind::Added)
                    .filter_map(|l| l.new_line)
                    .peekable();
                adds.peek().is_none() || adds.any(|line| added.contains(&line))
            });
            (!file.hunks.is_empty() || file.binary).then_some(file)
        })
        .collect();
    Diff {
        files,
        problems: Vec::new(),
    }
}

fn added_lines(file: &FileDiff) -> impl Iterator<Item = u32> + '_ {
    file.hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .filter(|l| l.kind == LineKind::Added)
        .filter_map(|l| l.new_line)
}

fn is_commit(head: &str) -> bool {
    matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(text: &str) -> Diff {
        bugloop_diff::parse(text.as_bytes())
    }

    const CHANGE: &str = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,4 @@\n one\n+two\n+three\n four\n";

    #[test]
    fn the_interdiff_keeps_what_the_change_adds_and_drops_the_rest() {
        let interdiff = diff(concat!(
            // Line 3 was edited since: the change adds it, so it is shown.
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -3 +3 @@\n-three\n+THREE\n",
            // A file the change does not touch (merged in from the base): not shown.
            "diff --git a/b.py b/b.py\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-x\n+y\n",
        ));
        let kept = within_change(interdiff, &diff(&CHANGE.replace("+three", "+THREE")));
        assert_eq!(kept.files.len(), 1);
        assert_eq!(kept.files[0].path(), "a.py");
        assert_eq!(kept.files[0].hunks.len(), 1);
    }

    #[test]
    fn a_hunk_that_goes_back_to_the_base_is_not_the_changes() {
        // Line 1 is the base's line: the change does not add it.
        let interdiff =
            diff("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-uno\n+one\n");
        assert!(within_change(interdiff, &diff(CHANGE)).files.is_empty());
        // Only removed lines: kept.
        let removal =
            diff("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -3,1 +2,0 @@\n-gone\n");
        assert_eq!(within_change(removal, &diff(CHANGE)).files.len(), 1);
    }
}
