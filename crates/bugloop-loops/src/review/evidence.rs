//! A finding stands while its code stands: the model's word alone does not resolve it. An
//! analyzer's finding stands on the tool's evidence (a small model answers "no bug" of a real
//! injection, and a review where the tool could not run has nothing to set against it): it is
//! resolved when its code changes (the recheck), when the developer's dispute is conceded, or by
//! a fix. The model's own finding may be resolved by the model once the changes since it was
//! raised changed its code or added code beside it (see [`super::near`]): a push that only
//! writes "this is fixed, resolve it" near, or far from, a finding resolves nothing.

use std::collections::BTreeSet;

use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::finding::{Finding, FindingId, FindingSource};
use bugloop_report::review::{ReportStage, StageChange};

use super::conversation::Conversation;
use super::increment::Shown;
use super::sessions::Reported;
use super::touched::Touch;

/// Takes out of `reported`'s resolutions those of findings whose code has not changed since
/// they were raised: an analyzer's not touched, a model's (about a file) without a change to
/// its code where that can be told. Each is said as a change of the triage stage.
pub(super) fn hold_unchanged_findings(
    conversation: &Conversation,
    shown: &Shown,
    reported: &mut Reported,
) {
    for thread in &conversation.state.threads {
        let Some(id) = thread.finding_id.as_ref().map(|id| id.as_str()) else {
            continue;
        };
        if shown.touched.iter().any(|t| t.id.as_str() == id) {
            continue;
        }
        let why = match tool_of(thread) {
            Some(tool) => format!(
                "it stands on {tool}'s report and its code has not changed: it stays open until \
                 its code changes"
            ),
            None => {
                let about_a_file = thread.recorded("file").is_some_and(|f| f.is_string());
                let unchanged = shown
                    .code_changed
                    .as_ref()
                    .is_some_and(|changed| !changed.contains(id));
                if !(about_a_file && unchanged) {
                    continue;
                }
                "the changes since it was raised did not change its code or add code beside \
                 it: it stays open until they do"
                    .to_owned()
            }
        };
        if let Some(said) = reported.resolutions.remove(id) {
            reported.record.changes.push(StageChange {
                stage: ReportStage::Triage,
                id: id.to_owned(),
                note: format!(
                    "kept open: the model said it is resolved ({}), but {why}, a developer's \
                     dispute is conceded, or a fix lands",
                    said.trim()
                ),
            });
        }
    }
}

/// The analyzer and rule a finding's thread says it came from (bugloop's own state block),
/// when an analyzer, not the model, found it.
fn tool_of(thread: &bugloop_domain::thread::ThreadState) -> Option<String> {
    let source = thread.recorded("source")?.clone();
    let source: FindingSource = serde_json::from_value(source).ok()?;
    (!source.model).then(|| format!("{} {}", source.tool, source.rule))
}

/// An analyzer's hit on the lines that replaced a tracked finding's code, of the finding's own
/// tool and rule (the code rewritten or rewrapped: `eval(text)` now on the line after), is that
/// finding: it takes the finding's id, so the finding follows its code instead of being resolved
/// beside a new one for the same defect. One hit a finding, the first; none where a hit of this
/// run already has the finding's id (the same rule at the finding's own line: that hit is
/// matched to it, and a second under its id would be lost as its duplicate).
pub(super) fn follow_rewritten(conversation: &Conversation, shown: &Shown, hits: &mut [Finding]) {
    free_moved_ids(conversation, shown, hits);
    let mut followed: BTreeSet<_> = hits.iter().map(|hit| hit.id.clone()).collect();
    for hit in hits.iter_mut() {
        let (Some(source), Some(line)) = (hit.source.as_ref().filter(|s| !s.model), hit.line)
        else {
            continue;
        };
        let same_rule = |id: &FindingId| {
            conversation.existing.iter().any(|e| {
                e.id == *id
                    && e.tool_rule
                        .as_ref()
                        .is_some_and(|(tool, rule)| *tool == source.tool && *rule == source.rule)
            })
        };
        let rewritten = shown.touched.iter().find(|t| {
            hit.file.as_deref() == Some(t.file.as_str())
                && matches!(&t.what, Touch::Gone { replaced_at, .. } if replaced_at.contains(&line))
                && !followed.contains(&t.id)
                && same_rule(&t.id)
        });
        if let Some(touched) = rewritten {
            followed.insert(touched.id.clone());
            hit.id = touched.id.clone();
        }
    }
}

/// A hit under the id of a tracked finding whose code is elsewhere now (moved by this push or an
/// earlier one) is another problem at the finding's old line: an analyzer's id names the line
/// it was raised at (`ruff-S307-db.py-21`), so it would be taken for the finding and lost beside
/// it. It gets an id of its own.
fn free_moved_ids(conversation: &Conversation, shown: &Shown, hits: &mut [Finding]) {
    let moved_to = |id: &FindingId| -> Option<(&str, u32)> {
        let touched = shown.touched.iter().find_map(|t| match &t.what {
            Touch::Still {
                file,
                line,
                moved: true,
            } if t.id == *id => Some((file.as_str(), *line)),
            _ => None,
        });
        let shifted = || {
            shown
                .shifted
                .iter()
                .find(|r| r.id == *id)
                .map(|r| (r.file.as_str(), r.line))
        };
        // Followed to another place by an earlier push: its record says where it is now.
        let recorded = || {
            conversation
                .existing
                .iter()
                .find(|e| e.id == *id)
                .and_then(|e| Some((e.file.as_deref()?, e.line?)))
        };
        touched.or_else(shifted).or_else(recorded)
    };
    let mut taken: BTreeSet<FindingId> = hits.iter().map(|hit| hit.id.clone()).collect();
    taken.extend(conversation.existing.iter().map(|e| e.id.clone()));
    for hit in hits.iter_mut() {
        if hit.source.as_ref().is_none_or(|s| s.model) {
            continue;
        }
        let elsewhere = moved_to(&hit.id).is_some_and(|(file, line)| {
            hit.file.as_deref() != Some(file) || hit.line != Some(line)
        });
        if !elsewhere {
            continue;
        }
        if let Some(own) = (2..1000)
            .map(|n| hit.id.with_suffix(n))
            .find(|id| !taken.contains(id))
        {
            taken.insert(own.clone());
            hit.id = own;
        }
    }
}

/// The open findings whose code the changes since left as it was (perhaps at another line of
/// its file): an analyzer's hit there is the finding, not weighed again. A resolved finding is
/// never one: a hit of its rule at its line is new, or the finding back.
pub(super) fn unchanged(conversation: &Conversation, shown: &Shown) -> Vec<ExistingFinding> {
    conversation
        .existing
        .iter()
        .filter(|e| conversation.open_ids.iter().any(|id| id == e.id.as_str()))
        .filter(|e| {
            !shown
                .touched
                .iter()
                .any(|t| t.id == e.id && !matches!(t.what, Touch::Still { moved: false, .. }))
        })
        .cloned()
        .collect()
}
