//! Whether a fix's commit changed a finding's code: only then does the fix resolve it. An
//! agent asked to fix several findings may fix one and not the others, or change some other
//! code altogether; the verify commands passing says nothing of which finding was fixed.

use bugloop_diff::Diff;
use bugloop_domain::grounding::find_evidence;
use bugloop_domain::proof::ProofTest;
use bugloop_domain::thread::ThreadState;

use crate::env::LoopEnv;

/// The commit's changes, read once for every finding it is checked against (by a fix, and by
/// the rounds that address a draft's review threads).
pub struct FixCommit<'e> {
    env: &'e LoopEnv<'e>,
    commit: String,
    diff: Option<Diff>,
    /// The proven findings' tests ran and passed with the commit (`bugloop fix` places them
    /// and requires them; a solve round does not).
    proofs_passed: bool,
}

impl std::fmt::Debug for FixCommit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FixCommit")
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

impl<'e> FixCommit<'e> {
    pub fn read(env: &'e LoopEnv<'e>, commit: &str) -> Self {
        let diff = env.git.commit_diff(commit).ok().map(bugloop_diff::parse);
        FixCommit {
            env,
            commit: commit.to_owned(),
            diff,
            proofs_passed: true,
        }
    }

    /// The same for a commit made without running the proven findings' tests (a solve
    /// round's): a proof says nothing of what it changed.
    pub fn without_proofs(self) -> Self {
        FixCommit {
            proofs_passed: false,
            ..self
        }
    }

    /// `None` when the commit changed the code of `thread`'s finding (or it cannot be told:
    /// a finding on the change as a whole, or one whose proven test the fix had to pass);
    /// else why it did not, for the finding's thread and the report.
    pub fn missed(&self, thread: &ThreadState) -> Option<String> {
        if self.proofs_passed
            && thread
                .assessment
                .as_ref()
                .and_then(ProofTest::from_block)
                .is_some()
        {
            return None;
        }
        let finding = crate::review::existing_finding(thread)?;
        let file = finding.file.as_deref()?;
        let evidence = finding
            .evidence
            .as_deref()
            .filter(|e| !e.trim().is_empty() && e.len() <= crate::review::MAX_QUOTE_BYTES);
        let recorded = finding.line.unwrap_or(1);
        self.missed_code(file, (recorded, finding.end_line), evidence)
    }

    /// Whether the commit changed the code at `recorded` (to `end_line`) of `file`, or the
    /// quoted `evidence` nearest it.
    fn missed_code(
        &self,
        file: &str,
        (recorded, end_line): (u32, Option<u32>),
        evidence: Option<&str>,
    ) -> Option<String> {
        let shown = bugloop_domain::paths::prompt_path(file);
        let not_changed = format!("the fix did not change the code it quotes in {shown}");
        let changed = self.diff.as_ref().and_then(|diff| {
            diff.files
                .iter()
                .find(|f| f.old_path.as_deref() == Some(file))
        });
        let Some(changed) = changed else {
            return Some(not_changed);
        };
        // Deleted: its code went with it. Renamed: its code is looked for where it went.
        let now_at = changed.new_path.as_deref()?;
        let text = |rev: &str, path: &str| {
            self.env
                .git
                .show(rev, path)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default()
        };
        // Where the finding's code was just before the fix, and how many lines it spans.
        let (start, lines) = match evidence {
            Some(evidence) => {
                let before = text(&format!("{}^", self.commit), file);
                let Some(start) = find_evidence(&before, evidence, recorded) else {
                    // Gone before the fix: nothing it did can be told to have fixed it.
                    return Some(format!(
                        "the code it quotes was no longer in {shown} when the fix started; the \
                         next review rechecks it"
                    ));
                };
                let after = text(&self.commit, now_at);
                let quoted_code_gone = find_evidence(&after, evidence, start).is_none();
                if quoted_code_gone {
                    return None;
                }
                let lines = u32::try_from(evidence.trim().lines().count()).unwrap_or(1);
                (start, lines.max(1))
            }
            None => {
                let end = end_line.unwrap_or(recorded).max(recorded);
                (recorded, end - recorded + 1)
            }
        };
        if crate::review::near::changes_code_near(changed, start, lines) {
            None
        } else {
            Some(not_changed)
        }
    }
}
