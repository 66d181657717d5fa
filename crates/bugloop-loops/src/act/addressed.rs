//! Whether a fix's commit changed a finding's code: only then does the fix resolve it. An
//! agent asked to fix several findings may fix one and not the others, or change some other
//! code altogether; the verify commands passing says nothing of which finding was fixed.

use bugloop_diff::Diff;
use bugloop_domain::grounding::find_evidence;
use bugloop_domain::proof::ProofTest;
use bugloop_domain::thread::ThreadState;

use crate::env::LoopEnv;

/// How far around a finding's code a change still counts as changing it (a guard added just
/// above the quoted line, say).
const NEAR: u32 = 3;

/// The commit's changes, read once for every finding it is checked against.
pub(super) struct FixCommit<'e> {
    env: &'e LoopEnv<'e>,
    commit: String,
    diff: Option<Diff>,
}

impl<'e> FixCommit<'e> {
    pub fn read(env: &'e LoopEnv<'e>, commit: &str) -> Self {
        let parent = format!("{commit}^");
        let diff = env
            .git
            .run(&[
                "diff",
                "-U0",
                "-M",
                "--no-color",
                "--no-ext-diff",
                &parent,
                commit,
            ])
            .ok()
            .map(bugloop_diff::parse);
        FixCommit {
            env,
            commit: commit.to_owned(),
            diff,
        }
    }

    /// `None` when the commit changed the code of `thread`'s finding (or it cannot be told:
    /// a finding on the change as a whole, or one whose proven test the fix had to pass);
    /// else why it did not, for the finding's thread and the report.
    pub fn missed(&self, thread: &ThreadState) -> Option<String> {
        if thread
            .assessment
            .as_ref()
            .and_then(ProofTest::from_block)
            .is_some()
        {
            return None;
        }
        let finding = crate::review::existing_finding(thread)?;
        let file = finding.file.as_deref()?;
        let shown = bugloop_domain::paths::prompt_path(file);
        let not_changed = || {
            Some(format!(
                "the fix did not change the code it quotes in {shown}"
            ))
        };
        let Some(diff) = &self.diff else {
            return not_changed();
        };
        let Some(changed) = diff
            .files
            .iter()
            .find(|f| f.old_path.as_deref() == Some(file))
        else {
            return not_changed();
        };
        if changed.new_path.as_deref() != Some(file) {
            return None; // deleted or renamed
        }
        let text = |rev: &str| {
            self.env
                .git
                .show(rev, file)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        };
        let recorded = finding.line.unwrap_or(1);
        let evidence = finding
            .evidence
            .as_deref()
            .filter(|e| !e.trim().is_empty() && e.len() <= crate::review::MAX_QUOTE_BYTES);
        // Where the finding's code was just before the fix, and how many lines it spans.
        let (start, lines) = match evidence {
            Some(evidence) => {
                let before = text(&format!("{}^", self.commit)).unwrap_or_default();
                let after = text(&self.commit).unwrap_or_default();
                let quoted_code_gone = find_evidence(&after, evidence, recorded).is_none();
                if quoted_code_gone {
                    return None;
                }
                let start = find_evidence(&before, evidence, recorded).unwrap_or(recorded);
                let lines = u32::try_from(evidence.trim().lines().count()).unwrap_or(1);
                (start, lines.max(1))
            }
            None => {
                let end = finding.end_line.unwrap_or(recorded).max(recorded);
                (recorded, end - recorded + 1)
            }
        };
        let low = start.saturating_sub(NEAR);
        let high = start.saturating_add(lines - 1).saturating_add(NEAR);
        let touched = changed.hunks.iter().any(|hunk| {
            // A hunk that only adds lines sits after its old start line.
            let first = hunk.old_start;
            let last = hunk.old_start + hunk.old_len.saturating_sub(1);
            first <= high && last >= low
        });
        if touched { None } else { not_changed() }
    }
}
