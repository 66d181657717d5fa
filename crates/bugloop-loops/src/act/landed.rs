//! A fix that landed but whose run was stopped before its findings were resolved. Just before
//! the branch moves, `fix` keeps the commit and the threads it fixes ([`crate::kept`]); once the
//! threads are answered it forgets them. The next `fix` on the change finds the record: when
//! the branch holds the commit, it resolves the threads still open as the stopped run would
//! have; when it does not (the landing failed, or went to a branch of its own), it forgets it.
//!
//! Only this record, in bugloop's own directory, can resolve a finding this way: a commit
//! message saying "resolve <id>" is anyone's to write.

use bugloop_domain::finding::FindingId;
use bugloop_domain::thread::{Comment, ThreadState, fix_resolution};
use bugloop_forge::ChangeKey;
use serde::{Deserialize, Serialize};

use crate::comment_bodies::{ResolvedBy, resolve_thread};
use crate::env::{LoopEnv, WorkTarget};
use crate::kept;

use bugloop_report::act::{ActReport, ChosenBy, Intent};

use super::{ActError, Targets, open_threads};

const KIND: &str = "fix";

/// What a fix keeps while it lands.
#[derive(Debug, Serialize, Deserialize)]
struct Landing {
    commit: String,
    /// The root comments of the threads it fixes.
    threads: Vec<String>,
}

/// Keeps `commit` and the threads of `chosen` before the fix lands; an error is said and the
/// fix goes on (it only costs the recovery).
pub(super) fn keep(env: &LoopEnv<'_>, change: &ChangeKey, chosen: &[&ThreadState], commit: &str) {
    let landing = Landing {
        commit: commit.to_owned(),
        threads: chosen.iter().map(|t| t.id.clone()).collect(),
    };
    if let Err(error) = kept::keep(&env.runs_dir, KIND, change, &landing) {
        env.progress.event(crate::ProgressEvent::Step(format!(
            "the fix was not kept for a rerun ({error})"
        )));
    }
}

/// The fix's threads are answered: nothing is left to recover.
pub(super) fn forget(env: &LoopEnv<'_>, change: &ChangeKey) {
    kept::forget(&env.runs_dir, KIND, change);
}

/// A fix found landed by a later run: its commit and the findings it resolved then.
pub(super) struct Recovered {
    pub commit: String,
    pub ids: Vec<String>,
}

impl Recovered {
    /// `targets` without the findings this resolved: naming one is no error now.
    pub(super) fn leave_out_of(&self, targets: &Targets) -> Targets {
        let resolved_here = |id: &String| self.ids.iter().any(|r| r.starts_with(id.as_str()));
        match targets {
            Targets::All => Targets::All,
            Targets::Ids(ids) => {
                Targets::Ids(ids.iter().filter(|i| !resolved_here(i)).cloned().collect())
            }
            Targets::StillOpen(ids) => {
                Targets::StillOpen(ids.iter().filter(|i| !resolved_here(i)).cloned().collect())
            }
        }
    }

    fn note(&self) -> String {
        format!(
            "the fix {} that landed before its run was stopped resolved {}",
            bugloop_git::short(&self.commit),
            self.ids.join(", ")
        )
    }

    /// The report when nothing else was left to fix.
    pub(super) fn report(self) -> ActReport {
        let message = format!("nothing to fix: {}", self.note());
        ActReport {
            resolved: self.ids,
            ..ActReport::nothing_built(Intent::Fix(Vec::new()), ChosenBy::Command, message)
        }
    }

    /// Adds what this resolved to the report of the fix that followed.
    pub(super) fn add_to(self, report: &mut ActReport) {
        if self.ids.is_empty() {
            return;
        }
        report.message.push_str(&format!(" ({})", self.note()));
        let mut resolved = self.ids;
        resolved.append(&mut report.resolved);
        report.resolved = resolved;
    }
}

/// Resolves the threads a stopped fix landed for, when the branch holds its commit.
pub(super) async fn recover(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
) -> Result<Option<Recovered>, ActError> {
    let Some(landing) = kept::read::<Landing>(&env.runs_dir, KIND, change) else {
        return Ok(None);
    };
    let head = match &env.work {
        WorkTarget::PullRequest { head, .. } => Some(head.clone()),
        WorkTarget::LocalBranch => env.git.head(),
    };
    let held =
        head.is_some_and(|head| env.git.is_ancestor(&landing.commit, &head).unwrap_or(false));
    if !held {
        forget(env, change);
        return Ok(None);
    }
    let (comments, state) = env.conversation(change).await?;
    let mut ids = Vec::new();
    for thread in open_threads(&state) {
        let (Some(id), Some(root)) = (&thread.finding_id, root_of(&comments, thread)) else {
            continue;
        };
        if !landing.threads.contains(&thread.id) {
            continue;
        }
        resolve_fixed(env, change, root, id, &landing.commit).await?;
        ids.push(id.as_str().to_owned());
    }
    forget(env, change);
    Ok(Some(Recovered {
        commit: landing.commit,
        ids,
    }))
}

/// Resolves the finding `id` of the thread at `root` as fixed by `bugloop fix`'s `commit`;
/// the note resolving it gave, if any.
pub(super) async fn resolve_fixed(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &Comment,
    id: &FindingId,
    commit: &str,
) -> Result<Option<String>, ActError> {
    let reason = fix_resolution(commit);
    let by = (id, ResolvedBy::Code);
    Ok(resolve_thread(env.forge, change, &env.settings.markers, root, by, &reason).await?)
}

fn root_of<'c>(comments: &'c [Comment], thread: &ThreadState) -> Option<&'c Comment> {
    comments.iter().find(|c| c.id == thread.id)
}
