//! An analyzer's finding stands on the tool's evidence: the model's word alone does not resolve
//! it while its code is as it was (a small model answers "no bug" of a real injection, and a
//! review where the tool could not run has nothing to set against it). It is resolved when its
//! code changes (the recheck), when the developer's dispute is conceded, or by a fix.

use bugloop_domain::finding::FindingSource;
use bugloop_report::review::{ReportStage, StageChange};

use super::conversation::Conversation;
use super::increment::Shown;
use super::sessions::Reported;

/// Takes out of `reported`'s resolutions those of analyzers' findings whose code the change has
/// not touched since they were raised; each is said as a change of the triage stage.
pub(super) fn hold_tool_findings(
    conversation: &Conversation,
    shown: &Shown,
    reported: &mut Reported,
) {
    for thread in &conversation.state.threads {
        let Some(id) = thread.finding_id.as_ref().map(|id| id.as_str()) else {
            continue;
        };
        let Some(tool) = tool_of(thread) else {
            continue;
        };
        if shown.touched.iter().any(|t| t.id.as_str() == id) {
            continue;
        }
        if let Some(said) = reported.resolutions.remove(id) {
            reported.changes.push(StageChange {
                stage: ReportStage::Triage,
                id: id.to_owned(),
                note: format!(
                    "the model said it is resolved ({}), but it stands on {tool}'s report and \
                     its code has not changed: it stays open until its code changes, a \
                     developer's dispute is conceded, or a fix lands",
                    said.trim()
                ),
            });
        }
    }
}

/// The analyzer and rule a finding's thread says it came from (bugloop's own state block),
/// when an analyzer, not the model, found it.
fn tool_of(thread: &bugloop_domain::thread::ThreadState) -> Option<String> {
    let source = thread.assessment.as_ref()?.extra.get("source")?.clone();
    let source: FindingSource = serde_json::from_value(source).ok()?;
    (!source.model).then(|| format!("{} {}", source.tool, source.rule))
}
