//! Stage 2 of a review: how much of the change the model is shown, and which open findings it
//! is asked about. When bugloop's summary comment records a complete review of an earlier head,
//! and that head is an ancestor of this one, the model sees only what changed since (the
//! interdiff, kept to lines the change itself adds, so commits merged in from the base are not
//! reviewed again). Otherwise the whole change, with the reason.
//!
//! Asked about are the open findings the changes since touched (see [`super::touched`]: their
//! code changed, moved or went, whatever the shown diff holds), those in files the shown diff
//! shows, and those about no file; the others stay as they are without a question. In a full
//! review every open finding is asked about.

use std::collections::BTreeSet;

use bugloop_diff::{Diff, FileDiff, LineKind, Side};
use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::grounding::{Head, find_evidence};
use bugloop_domain::paths::prompt_path;
use bugloop_report::review::{FIRST_REVIEW, ReviewedScope};
use bugloop_report::summary::{SUMMARY_TAG, read_reviewed};

use super::ReviewRequest;
use super::conversation::Conversation;
use super::shifted::shifted;
use super::touched::{Relocation, Touch, Touched, touched};
use crate::comment_bodies::find_tagged;
use crate::env::LoopEnv;
use crate::head::HeadTree;
use crate::prompt;

/// What the model is shown of the change.
pub(super) struct Shown {
    pub scope: ReviewedScope,
    /// The change's diff, or what changed since the earlier review.
    pub diff: Diff,
    /// The open findings the model is told about and may resolve.
    pub asked_ids: Vec<String>,
    /// The asked findings' code at head that the shown diff does not show, and what became of
    /// the code of those the changes touched, so a model without tools can judge them too.
    pub finding_context: String,
    /// The open findings whose code changed, moved or went.
    pub touched: Vec<Touched>,
    /// The open findings the changes did not touch whose code is now at another line of its
    /// file: they follow it without a question (see [`super::shifted`]).
    pub shifted: Vec<Relocation>,
    /// The open findings whose code the changes since the earlier review changed (see
    /// [`super::near`]: touched, or code added beside it); `None` where that cannot be told
    /// (no earlier head to compare with).
    pub code_changed: Option<BTreeSet<String>>,
}

pub(super) fn decide(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Shown {
    let open: Vec<&ExistingFinding> = conversation
        .existing
        .iter()
        .filter(|e| conversation.open_ids.iter().any(|id| id == e.id.as_str()))
        .collect();
    match interdiff(env, request, conversation) {
        Ok((since, raw)) => {
            let head = head_of(request, &open, Some(&raw));
            let mut touched = touched(Some(&raw), &open, &head);
            let shifted = shifted(Some(&raw), &open, &touched, &head);
            let code_changed = code_changed(Some(&raw), &open, &touched);
            for touch in &mut touched {
                touch.changed_in = changed_in(env, touch, &open, (&since, &request.head));
            }
            let diff = within_change(raw, &request.diff);
            let files: BTreeSet<&str> = diff.files.iter().map(FileDiff::path).collect();
            // What the user is told was reviewed: the change's files that changed since, and
            // those of findings whose code changed (a file put back as the base has it is no
            // longer the change's, but its finding was looked at).
            let since_files: BTreeSet<String> = files
                .iter()
                .map(|f| (*f).to_owned())
                .chain(touched.iter().map(|t| t.file.clone()))
                .collect();
            let asked: Vec<&ExistingFinding> = open
                .iter()
                .copied()
                .filter(|e| {
                    touched.iter().any(|t| t.id == e.id)
                        || e.file.as_deref().is_none_or(|file| files.contains(file))
                })
                .collect();
            let finding_context = finding_context(
                &asked,
                &touched,
                &head,
                &diff,
                Some(bugloop_git::short(&since)),
            );
            Shown {
                scope: ReviewedScope::Incremental {
                    files: since_files.into_iter().collect(),
                    kept_findings: open.len() - asked.len(),
                    since,
                },
                diff,
                asked_ids: asked.iter().map(|e| e.id.as_str().to_owned()).collect(),
                finding_context,
                touched,
                shifted,
                code_changed,
            }
        }
        Err(reason) => full(env, request, conversation, &open, reason),
    }
}

/// What a full review shows: the whole change. The open findings follow their code through
/// what changed since the earlier review, when its head is still here (a rebase since, say):
/// changed, moved to another file, gone, or only pushed up or down its file.
fn full(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
    open: &[&ExistingFinding],
    reason: String,
) -> Shown {
    let carried = since_earlier(env, request, conversation);
    let head = head_of(request, open, carried.as_ref());
    let touched = touched(carried.as_ref(), open, &head);
    let shifted = shifted(carried.as_ref(), open, &touched, &head);
    let code_changed = code_changed(carried.as_ref(), open, &touched);
    // The whole change is shown: only what became of the touched findings' code is news to
    // the model.
    let finding_context = finding_context(&[], &touched, &head, &request.diff, None);
    Shown {
        scope: ReviewedScope::Full { reason },
        diff: request.diff.clone(),
        asked_ids: conversation.open_ids.clone(),
        finding_context,
        touched,
        shifted,
        code_changed,
    }
}

/// The open findings whose code `changes` (what changed since the earlier review) changed: the
/// touched ones, and those beside whose lines it added code; `None` without `changes`.
fn code_changed(
    changes: Option<&Diff>,
    open: &[&ExistingFinding],
    touched: &[Touched],
) -> Option<BTreeSet<String>> {
    let changes = changes?;
    let beside = |finding: &ExistingFinding| {
        let Some(file) = finding.file.as_deref() else {
            return false;
        };
        let start = finding.line.unwrap_or(1);
        let lines = match super::touched::quote(finding) {
            Some(quote) => u32::try_from(quote.trim().lines().count()).unwrap_or(1),
            None => finding
                .end_line
                .map_or(1, |end| end.saturating_sub(start) + 1),
        };
        changes
            .files
            .iter()
            .filter(|f| f.old_path.as_deref() == Some(file))
            .any(|f| super::near::changes_code_near(f, start, lines))
    };
    Some(
        open.iter()
            .filter(|e| touched.iter().any(|t| t.id == e.id) || beside(e))
            .map(|e| e.id.as_str().to_owned())
            .collect(),
    )
}

/// The code at head of the open findings' files and of the change's files that `changes` (what
/// changed since the earlier review) adds or renames to: where their code may have gone.
fn head_of<'r>(
    request: &'r ReviewRequest,
    open: &[&ExistingFinding],
    changes: Option<&Diff>,
) -> HeadTree<'r> {
    let finding_files = open.iter().filter_map(|e| e.file.clone());
    let new_files = changes
        .iter()
        .flat_map(|diff| &diff.files)
        .filter_map(|f| f.new_path.clone())
        .filter(|path| request.diff.file(path).is_some());
    HeadTree::load(&request.workspace, None, finding_files.chain(new_files))
}

/// What changed from the head the last review recorded to this one, however the branch got
/// here, when both are commits here and that review was complete (an incomplete one settled
/// nothing: what changed since the findings were last weighed is not known from it).
fn since_earlier(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Option<Diff> {
    let summary = find_tagged(&conversation.comments, SUMMARY_TAG)?;
    let earlier = read_reviewed(&summary.body)?;
    if !earlier.complete || !is_commit(&earlier.head) || !is_commit(&request.head) {
        return None;
    }
    let raw = env.git.diff_between(&earlier.head, &request.head).ok()??;
    let diff = bugloop_diff::parse(&raw);
    diff.problems.is_empty().then_some(diff)
}

/// The commit in `since..head` that took `touch`'s code away, when its code is gone: the last
/// one that deleted its file, or changed how often its first quoted line occurs there (git's
/// pickaxe), else the last one that changed its file. Not HEAD by default: a later commit of
/// something else did not fix it.
fn changed_in(
    env: &LoopEnv<'_>,
    touch: &Touched,
    open: &[&ExistingFinding],
    (since, head): (&str, &str),
) -> Option<String> {
    let Touch::Gone { file_deleted, .. } = &touch.what else {
        return None;
    };
    let range = format!("{since}..{head}");
    let file = bugloop_domain::paths::text_name(&touch.file).unwrap_or_else(|| touch.file.clone());
    let last = |extra: &[&str]| {
        let mut args = vec!["log", "-1", "--format=%H", "--no-ext-diff", "--no-textconv"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[range.as_str(), "--", file.as_str()]);
        let found = env.git.run(&args).ok()?;
        let found = found.trim();
        is_commit(found).then(|| found.to_owned())
    };
    if *file_deleted {
        return last(&["--diff-filter=D"]).or_else(|| last(&[]));
    }
    let quoted = open
        .iter()
        .find(|e| e.id == touch.id)
        .and_then(|e| e.evidence.as_deref())
        .and_then(|evidence| evidence.lines().map(str::trim).find(|l| !l.is_empty()))
        .map(|line| format!("-S{line}"));
    quoted
        .and_then(|pickaxe| last(&[pickaxe.as_str()]))
        .or_else(|| last(&[]))
}

/// The earlier head and the changes since (all of them: what the change did not add is taken
/// out by the caller, after the touched findings are found in it), or why the whole change is
/// shown.
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
    let raw = match env
        .git
        .interdiff(&request.base, &earlier.head, &request.head)
    {
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
    Ok((earlier.head, interdiff))
}

/// Lines shown around a finding's code.
const AROUND: u32 = 3;

/// What the model is told about the asked findings beyond the shown diff: for each touched one,
/// what became of its code (its code at head, or that it is gone and what replaced it); for the
/// others, their code at head where the shown diff does not show it. The recorded line is from
/// an earlier head, so quoted code is looked for nearest it.
fn finding_context(
    asked: &[&ExistingFinding],
    touched: &[Touched],
    head: &HeadTree<'_>,
    shown: &Diff,
    since: Option<&str>,
) -> String {
    let mut changed = String::new();
    for touch in touched {
        changed.push_str(&format!(
            "- `{}` (recorded at {}",
            touch.id,
            prompt_path(&touch.file)
        ));
        if let Some(line) = touch.line {
            changed.push_str(&format!(":{line}"));
        }
        changed.push_str(&format!("): {}.\n", touch.describe(since)));
        match &touch.what {
            Touch::Still { file, line, .. } => {
                if let Some(text) = head.text(file) {
                    changed.push_str(&around(text, *line));
                }
            }
            Touch::Gone { replaced_by, .. } => {
                if !replaced_by.is_empty() {
                    changed.push_str("  In its place now:\n");
                    for line in replaced_by.iter().take(2 * AROUND as usize + 1) {
                        changed.push_str(&format!("  {}\n", crate::plan::clip(line)));
                    }
                }
            }
        }
    }
    let mut others = String::new();
    for finding in asked
        .iter()
        .filter(|e| !touched.iter().any(|t| t.id == e.id))
    {
        let (Some(file), Some(recorded)) = (finding.file.as_deref(), finding.line) else {
            continue;
        };
        let Some(text) = head.text(file) else {
            continue;
        };
        let line = match finding.evidence.as_deref() {
            Some(quoted) => find_evidence(text, quoted, recorded).unwrap_or(recorded),
            None => recorded,
        };
        if shown
            .file(file)
            .is_some_and(|f| f.contains_line(Side::Right, line))
        {
            continue;
        }
        others.push_str(&format!(
            "- `{}` at {}:{line}:\n",
            finding.id,
            prompt_path(file)
        ));
        others.push_str(&around(text, line));
    }
    let mut out = String::new();
    if !changed.is_empty() {
        out.push_str(&prompt::fill(prompt::TOUCHED, &[("findings", &changed)]));
    }
    if !others.is_empty() {
        out.push_str(&format!(
            "\nThe other open findings asked about, with their code at head:\n\n{others}"
        ));
    }
    out
}

/// Lines of `text` around `line`, numbered.
fn around(text: &str, line: u32) -> String {
    let first = line.saturating_sub(AROUND).max(1);
    let last = line.saturating_add(AROUND);
    (first..=last)
        .zip(text.lines().skip(first as usize - 1))
        .map(|(number, text)| format!("  {number} {}\n", crate::plan::clip(text)))
        .collect()
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
