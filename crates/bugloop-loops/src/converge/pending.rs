//! What a converge run keeps for the next one on the same change ([`crate::kept`]), should it
//! be killed. While it works: the commit its loops have reached on top of the start, so a rerun
//! on the same HEAD goes on from it rather than paying for those loops again. From just before
//! its commits land until its description is written: its report, so a rerun on the head it
//! landed writes the description, where it would otherwise find the last loop clean and do
//! nothing. A task ref an interrupted run leaves could have been fetched from elsewhere: it
//! alone is never trusted to go on from.

use std::path::Path;

use bugloop_forge::ChangeKey;
use bugloop_git::Git;
use bugloop_report::converge::{ConvergeReport, LoopLine};
use serde::{Deserialize, Serialize};

use crate::kept;

/// The kind of run in [`kept`]'s file names.
const KIND: &str = "converge";

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
enum Kept {
    /// The loops have reached `tip`, on top of `start` (HEAD when the run began), after
    /// `loops` loops whose lines are `log` (none in a record kept before they were).
    Working {
        start: String,
        tip: String,
        #[serde(default)]
        loops: u32,
        #[serde(default)]
        log: Vec<LoopLine>,
    },
    /// The run finished at the report's final commit; `landed` once its commits landed (the
    /// report then says where).
    Landing {
        report: Box<ConvergeReport>,
        landed: bool,
    },
}

fn keep(runs_dir: &Path, change: &ChangeKey, value: &Kept) -> Result<(), String> {
    kept::keep(runs_dir, KIND, change, value)
}

fn read(runs_dir: &Path, change: &ChangeKey) -> Option<Kept> {
    kept::read(runs_dir, KIND, change)
}

/// Keeps the commit the loops have reached, and what they did to get there.
pub(super) fn keep_progress(
    runs_dir: &Path,
    change: &ChangeKey,
    (start, tip): (&str, &str),
    (loops, log): (u32, &[LoopLine]),
) -> Result<(), String> {
    let kept = Kept::Working {
        start: start.to_owned(),
        tip: tip.to_owned(),
        loops,
        log: log.to_vec(),
    };
    keep(runs_dir, change, &kept)
}

/// Where an interrupted run got to, for a rerun to go on from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Resumed {
    pub tip: String,
    /// Its loops and their lines, which the rerun's report and description go on from.
    pub loops: u32,
    pub log: Vec<LoopLine>,
}

/// Keeps a finished run's report: before its commits land (`report.landing` unset), and
/// again once they did.
pub(super) fn keep_report(
    runs_dir: &Path,
    change: &ChangeKey,
    report: &ConvergeReport,
) -> Result<(), String> {
    let kept = Kept::Landing {
        report: Box::new(report.clone()),
        landed: report.landing.is_some(),
    };
    keep(runs_dir, change, &kept)
}

/// Where an interrupted run on `change` got from `head`, when there is a commit to go on from:
/// it was started on this very HEAD, and its commit is still there, past HEAD (a run stopped
/// while its commits were landing counts too).
pub(super) fn resumable(
    runs_dir: &Path,
    change: &ChangeKey,
    head: &str,
    git: &Git,
) -> Option<Resumed> {
    let (start, resumed) = match read(runs_dir, change)? {
        Kept::Working {
            start,
            tip,
            loops,
            log,
        } => (start, Resumed { tip, loops, log }),
        Kept::Landing {
            report,
            landed: false,
        } => {
            let report = *report;
            let resumed = Resumed {
                tip: report.final_commit,
                loops: report.loops,
                log: report.log,
            };
            (report.start_commit, resumed)
        }
        Kept::Landing { landed: true, .. } => return None,
    };
    let tip = &resumed.tip;
    let held = start == head
        && tip != head
        && kept::is_commit_id(tip)
        && git.is_ancestor(head, tip).ok()?;
    held.then_some(resumed)
}

/// The report kept by a run of `change` whose final commit is `head`, if it stopped before its
/// description was written.
pub(super) fn landed_on(runs_dir: &Path, change: &ChangeKey, head: &str) -> Option<ConvergeReport> {
    match read(runs_dir, change)? {
        Kept::Landing { report, .. } if report.final_commit == head => Some(*report),
        _ => None,
    }
}

/// Forgets what was kept for `change`: the run is over.
pub(super) fn forget(runs_dir: &Path, change: &ChangeKey) {
    kept::forget(runs_dir, KIND, change);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A finished run's report of two loops that landed `final_commit`.
    fn report(final_commit: &str) -> ConvergeReport {
        ConvergeReport {
            loops: 2,
            start_commit: "a".repeat(40),
            ..crate::converge::clean_already(final_commit.to_owned())
        }
    }

    #[test]
    fn a_kept_report_is_found_on_the_head_it_landed_and_only_there() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let change = ChangeKey("local:feature/x".to_owned());
        let other = ChangeKey("local:feature_x".to_owned());
        let head = "b".repeat(40);
        assert!(landed_on(&runs, &change, &head).is_none());
        keep_report(&runs, &change, &report(&head)).unwrap();
        assert_eq!(landed_on(&runs, &change, &head).unwrap().loops, 2);
        assert!(landed_on(&runs, &change, &"c".repeat(40)).is_none());
        assert!(landed_on(&runs, &other, &head).is_none());
        keep_report(&runs, &change, &report(&head)).unwrap();
        forget(&runs, &change);
        assert!(landed_on(&runs, &change, &head).is_none());
    }

    /// Work is resumed only on the HEAD it started from, and only when its commit is past it.
    #[test]
    fn work_is_resumed_only_from_where_it_started() {
        let repo = bugloop_testkit::TestRepo::with_files(&[("a.txt", "a\n")]);
        let git = Git::open(repo.path()).unwrap();
        let start = repo.head();
        repo.write("a.txt", "b\n");
        repo.commit("loop 1 fix");
        let tip = repo.head();
        let dir = tempfile::tempdir().unwrap();
        let change = ChangeKey("local:main".to_owned());
        let log = [LoopLine {
            number: 1,
            kind: bugloop_report::converge::LoopKind::Fix,
            text: "fixed 1".to_owned(),
        }];
        keep_progress(dir.path(), &change, (&start, &tip), (1, &log)).unwrap();
        // What the loops did comes back with where they got to, for the report to go on from.
        assert_eq!(
            resumable(dir.path(), &change, &start, &git),
            Some(Resumed {
                tip: tip.clone(),
                loops: 1,
                log: log.to_vec(),
            })
        );
        // Another HEAD (the branch moved, or the tip itself): nothing to resume.
        assert_eq!(resumable(dir.path(), &change, &tip, &git), None);
        // A tip that does not descend from the start is not taken.
        keep_progress(dir.path(), &change, (&tip, &start), (1, &log)).unwrap();
        assert_eq!(resumable(dir.path(), &change, &tip, &git), None);
        // A run stopped while landing goes on from its final commit; once landed, nothing is
        // left to go on from.
        let mut stopped = report(&tip);
        stopped.start_commit.clone_from(&start);
        keep_report(dir.path(), &change, &stopped).unwrap();
        assert_eq!(
            resumable(dir.path(), &change, &start, &git).map(|r| (r.tip, r.loops)),
            Some((tip.clone(), 2))
        );
        stopped.landing = Some(bugloop_report::build::Landing::FastForwarded {
            branch: "main".to_owned(),
            commit: tip,
        });
        keep_report(dir.path(), &change, &stopped).unwrap();
        assert_eq!(resumable(dir.path(), &change, &start, &git), None);
    }
}
