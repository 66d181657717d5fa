//! A fix that landed but whose run was stopped before its findings were resolved. Just before
//! the branch moves, `fix` keeps the commit and the threads it fixes ([`crate::kept`], locally
//! only); once the threads are answered it forgets them. The next `fix` on the change finds the
//! record: when the branch holds the commit, it resolves the threads it names that are still
//! pending, with no word from a developer since, as the stopped run would have; when it does
//! not, nothing is resolved. A fix left on a branch of its own (the developer's branch moved
//! while it ran) keeps its record until the developer merges that branch, and the next `fix`
//! resolves what it fixed then.
//!
//! Only this record, in bugloop's own directory, can resolve a finding this way: a commit
//! message saying "resolve <id>" is anyone's to write.

use bugloop_domain::finding::FindingId;
use bugloop_domain::status::ThreadStatus;
use bugloop_domain::thread::{Comment, ThreadState, find_thread, fix_resolution};
use bugloop_forge::ChangeKey;
use bugloop_report::act::{ActReport, ChosenBy, Intent};
use serde::{Deserialize, Serialize};

use crate::comment_bodies::{ResolvedBy, resolve_thread};
use crate::env::LoopEnv;
use crate::kept;

use super::{ActError, Targets, open_threads};

const KIND: &str = "fix";

/// What a fix keeps while it lands.
#[derive(Debug, Serialize, Deserialize)]
struct Landing {
    commit: String,
    /// The threads it fixes: the root comment's id and its finding's.
    threads: Vec<(String, String)>,
    /// When it was about to land: a developer's word in a thread after this is not overruled.
    at: jiff::Timestamp,
    /// Committed without verification (no verify command is configured); a record kept
    /// before this was written says nothing, and was verified.
    #[serde(default)]
    unverified: bool,
    /// The ids of the conversation's comments when the fix started: a word written in a thread
    /// after them is not overruled (empty in a record kept before this was: `at` says).
    #[serde(default)]
    seen: Vec<String>,
    /// The branch it was left on because the developer's branch moved while it ran: once the
    /// developer merges it, the next `fix` resolves what it fixed.
    #[serde(default)]
    left_on: Option<String>,
}

/// Keeps `commit` and the threads of `chosen` before the fix lands; an error is said and the
/// fix goes on (it only costs the recovery).
pub(super) fn keep(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    chosen: &[&ThreadState],
    commit: &str,
    unverified: bool,
    seen: &[Comment],
) {
    let Some(dir) = kept::dir(env) else {
        return;
    };
    let landing = Landing {
        commit: commit.to_owned(),
        threads: chosen
            .iter()
            .filter_map(|t| Some((t.id.clone(), t.finding_id.as_ref()?.as_str().to_owned())))
            .collect(),
        at: jiff::Timestamp::now(),
        unverified,
        seen: seen.iter().map(|c| c.id.clone()).collect(),
        left_on: None,
    };
    if let Err(error) = kept::keep(dir, KIND, change, &landing) {
        env.progress.event(crate::ProgressEvent::Step(format!(
            "the fix was not kept for a rerun ({error})"
        )));
    }
}

/// The fix was left on `branch` of its own: its record stays, naming the branch, until the
/// developer's branch holds its commit.
pub(super) fn left_on(env: &LoopEnv<'_>, change: &ChangeKey, branch: &str) {
    let Some(dir) = kept::dir(env) else {
        return;
    };
    let Some(mut landing) = kept::read::<Landing>(dir, KIND, change) else {
        return;
    };
    landing.left_on = Some(branch.to_owned());
    if let Err(error) = kept::keep(dir, KIND, change, &landing) {
        env.progress.event(crate::ProgressEvent::Step(format!(
            "the fix left on {branch} was not kept for when it is merged ({error})"
        )));
    }
}

/// The fix's threads are answered: nothing is left to recover.
pub(super) fn forget(env: &LoopEnv<'_>, change: &ChangeKey) {
    if let Some(dir) = kept::dir(env) {
        kept::forget(dir, KIND, change);
    }
}

/// A fix found landed by a later run: its commit, the findings it resolved then and their
/// threads, and the threads open before (what a request's ids are read against).
pub(super) struct Recovered {
    pub commit: String,
    pub ids: Vec<String>,
    threads: Vec<String>,
    open_before: Vec<ThreadState>,
    left_on: Option<String>,
}

impl Recovered {
    /// `targets` without the findings this resolved, each id read as it was before (so an
    /// ambiguous prefix stays ambiguous, and a thread's own id counts): naming one is no error.
    pub(super) fn leave_out_of(&self, targets: &Targets) -> Targets {
        let resolved_here = |id: &String| {
            find_thread(&self.open_before, id).is_ok_and(|t| self.threads.contains(&t.id))
        };
        let left = |ids: &[String]| ids.iter().filter(|i| !resolved_here(i)).cloned().collect();
        match targets {
            Targets::All => Targets::All,
            Targets::Ids(ids) => Targets::Ids(left(ids)),
            Targets::StillOpen(ids) => Targets::StillOpen(left(ids)),
        }
    }

    fn note(&self) -> String {
        let commit = bugloop_git::short(&self.commit);
        match &self.left_on {
            Some(branch) => format!(
                "the fix {commit}, merged from {branch}, resolved {}",
                self.ids.join(", ")
            ),
            None => format!(
                "the fix {commit} that landed before its run was stopped resolved {}",
                self.ids.join(", ")
            ),
        }
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

/// Resolves the threads a stopped fix landed for, when the branch holds its commit. The
/// record is forgotten first, so a failure here never blocks the fixes after it.
pub(super) async fn recover(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
) -> Result<Option<Recovered>, ActError> {
    let Some(dir) = kept::dir(env) else {
        return Ok(None);
    };
    let Some(landing) = kept::read::<Landing>(dir, KIND, change) else {
        return Ok(None);
    };
    let held = kept::is_commit_id(&landing.commit)
        && env.git.head().is_some_and(|head| {
            env.git.is_ancestor(&landing.commit, &head).unwrap_or(false)
                && still_at(env, &landing.commit, &head)
        });
    if !held {
        // Left on a branch of its own: kept until the developer merges it (or another fix's
        // record takes its place). Any other: it did not land, nothing to recover.
        if landing.left_on.is_none() {
            kept::forget(dir, KIND, change);
        }
        return Ok(None);
    }
    // Forgotten first, so a failure below never blocks the fixes after it.
    kept::forget(dir, KIND, change);
    let (comments, state) = env.conversation(change).await?;
    let open_before: Vec<ThreadState> = open_threads(&state).into_iter().cloned().collect();
    let mut recovered = Recovered {
        commit: landing.commit.clone(),
        ids: Vec::new(),
        threads: Vec::new(),
        open_before,
        left_on: landing.left_on.clone(),
    };
    for thread in open_threads(&state) {
        let Some((root, id)) = still_fixed_by(&landing, &comments, thread) else {
            continue;
        };
        // A record kept before the fix's own reading was kept says when instead.
        let spoken = if landing.seen.is_empty() {
            spoken_since(&comments, root, landing.at)
        } else {
            settling_word_beyond(env, change, &comments, root, &landing.seen).await?
        };
        if spoken {
            continue;
        }
        let resolved = resolve_fixed(env, change, root, id, &landing.commit, landing.unverified);
        if let Err(error) = resolved.await {
            env.progress.event(crate::ProgressEvent::Step(format!(
                "a stopped fix's finding {id} was not resolved ({error})"
            )));
            continue;
        }
        recovered.ids.push(id.as_str().to_owned());
        recovered.threads.push(thread.id.clone());
    }
    Ok(Some(recovered))
}

/// Whether the code `commit` added is at `head`: each line of code it added (not blank, not a
/// comment) is in its file there. A merge that took none of it (`git merge -s ours`), or a
/// revert since, holds the commit but not the fix.
fn still_at(env: &LoopEnv<'_>, commit: &str, head: &str) -> bool {
    use crate::review::near::{code_of, says_nothing};
    let Ok(raw) = env.git.commit_diff(commit) else {
        return false;
    };
    let diff = bugloop_diff::parse(&raw);
    diff.files.iter().all(|file| {
        let added: Vec<String> = file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == bugloop_diff::LineKind::Added && !says_nothing(&l.text))
            .map(|l| code_of(&l.text))
            .collect();
        if added.is_empty() {
            return true;
        }
        let Some(path) = file.new_path.as_deref() else {
            return true;
        };
        let Some(bytes) = env.git.show(head, path) else {
            return false;
        };
        let there: std::collections::BTreeSet<String> = String::from_utf8_lossy(&bytes)
            .lines()
            .map(code_of)
            .collect();
        added.iter().all(|line| there.contains(line))
    })
}

/// The root comment and finding of `thread` when the stopped fix `landing` fixed it: the same
/// thread and finding, still pending.
fn still_fixed_by<'c, 't>(
    landing: &Landing,
    comments: &'c [Comment],
    thread: &'t ThreadState,
) -> Option<(&'c Comment, &'t FindingId)> {
    let id = thread.finding_id.as_ref()?;
    let named = landing
        .threads
        .iter()
        .any(|(root, finding)| *root == thread.id && finding == id.as_str());
    let root = comments.iter().find(|c| c.id == thread.id)?;
    (named && thread.status == ThreadStatus::Pending).then_some((root, id))
}

/// Whether someone other than bugloop wrote in the thread at `root` after `at`.
fn spoken_since(comments: &[Comment], root: &Comment, at: jiff::Timestamp) -> bool {
    comments
        .iter()
        .any(|c| c.created_at > at && said_in_thread(c, root))
}

/// Whether someone who may settle the finding (the change's author, or a writer) wrote in the
/// thread at `root` a comment whose id is not among `known` (the conversation the fix read when
/// it started). Anyone else's word is answered elsewhere, and keeps nothing open.
pub(super) async fn settling_word_beyond(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    comments: &[Comment],
    root: &Comment,
    known: &[String],
) -> Result<bool, ActError> {
    let new = comments
        .iter()
        .filter(|c| said_in_thread(c, root) && !known.contains(&c.id));
    for comment in new {
        if crate::disputes::may_settle(env, change, &comment.author).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A person's comment in the thread at `root`: the root itself, a reply to it (GitHub's review
/// comments name the comment they answer), or a comment the forge puts in its thread.
fn said_in_thread(comment: &Comment, root: &Comment) -> bool {
    !comment.by_bugloop
        && (comment.id == root.id
            || comment.in_reply_to.as_deref() == Some(root.id.as_str())
            || (comment.thread_id.is_some() && comment.thread_id == root.thread_id))
}

/// Resolves the finding `id` of the thread at `root` as fixed by `bugloop fix`'s `commit`;
/// the note resolving it gave, if any.
pub(super) async fn resolve_fixed(
    env: &LoopEnv<'_>,
    change: &ChangeKey,
    root: &Comment,
    id: &FindingId,
    commit: &str,
    unverified: bool,
) -> Result<Option<String>, ActError> {
    let reason = fix_resolution(commit, !unverified);
    let by = (id, ResolvedBy::Code);
    Ok(resolve_thread(env.forge, change, &env.settings.markers, root, by, &reason).await?)
}
