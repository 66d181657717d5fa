//! The rounds of a converge run, as named stages over one [`Run`]: `audit_round` (the gate, a
//! clean-room audit, its loop review in the conversation), `fix_round` (a verified Build run on
//! the audit's findings), and how a run ends (`stuck`, `finish`: the net change and landing).
//! A round either hands the next stage its result or says why the loop stops ([`Stop`]).

use bugloop_domain::finding::Finding;
use bugloop_forge::ChangeKey;
use bugloop_git::{Git, short};
use bugloop_report::build::BuildStatus;
use bugloop_report::converge::{ConvergeReport, Exit, LoopKind, LoopLine, Quarantined};

use super::audit::{Audit, audit};
use super::gate::gate;
use super::pending;
use super::record::{counts, loop_body};
use super::validate::findings_prompt;
use super::{Connect, FIX_PROMPT, record, status_text};
use crate::act::ActError;
use crate::build::{BuildTask, ProvenTest, Workbench, build, land_on_target, net_change};
use crate::env::LoopEnv;
use crate::kept;
use crate::prompt::fill;
use bugloop_domain::proof::ProofTest;
use bugloop_report::review::{FindingProof, ProofStatus};

/// Why the loop stopped, and the detail the report gives.
pub(super) struct Stop {
    exit: Exit,
    detail: String,
}

impl Stop {
    pub(super) fn new(exit: Exit, detail: String) -> Stop {
        Stop { exit, detail }
    }

    /// The stop of a run that went on from an interrupted one's commit: the detail says so.
    pub(super) fn resumed_from(mut self, tip: &str) -> Stop {
        let note = format!(
            "Went on from {}, where an interrupted run's loops had got to.",
            short(tip)
        );
        self.detail = if self.detail.is_empty() {
            note
        } else {
            format!("{note} {}", self.detail)
        };
        self
    }
}

/// What the loop did last, which decides what it does next.
pub(super) enum LastAction {
    Fresh,
    Audited(Vec<Finding>),
    Fixed { before: String },
}

/// One converge run in its task worktree.
pub(super) struct Run<'r, 'e> {
    pub env: &'r LoopEnv<'e>,
    pub connect: Connect<'r>,
    pub change: &'r ChangeKey,
    pub bench: Workbench,
    /// The task worktree's git.
    pub tree: Git,
    pub merge_base: String,
    pub cap: u32,
    /// Loops started (raised before the cap is checked).
    pub loops: u32,
    pub log: Vec<LoopLine>,
    pub quarantined: Vec<Quarantined>,
    /// The last audit's proven findings' tests, which its fix must make pass.
    pub proven: Vec<ProvenTest>,
}

/// The tests of the proven findings of an audit.
fn proven_tests(proofs: &[FindingProof]) -> Vec<ProvenTest> {
    proofs
        .iter()
        .filter(|p| p.status == ProofStatus::Proven)
        .filter_map(|p| {
            let test = ProofTest::checked(p.test_path.as_deref()?, p.test.as_deref()?).ok()?;
            Some(ProvenTest {
                finding: p.id.clone(),
                test,
            })
        })
        .collect()
}

impl Run<'_, '_> {
    /// Adds a line to the run's log (and reports it as progress).
    fn note(&mut self, kind: LoopKind, text: String) {
        let line = LoopLine {
            number: self.loops,
            kind,
            text,
        };
        record(&mut self.log, self.env.progress.as_ref(), line);
    }

    /// The gate, then a clean-room audit whose loop review is added to the conversation.
    pub(super) async fn audit_round(&mut self) -> Result<Result<Vec<Finding>, Stop>, ActError> {
        let env = self.env;
        if let Err(detail) = gate(env, &self.bench, self.loops + 1, &mut self.log).await? {
            return Ok(Err(Stop::new(Exit::Error, detail)));
        }
        self.loops += 1;
        if self.loops > self.cap {
            return Ok(Err(Stop::new(
                Exit::CapReached,
                format!("{} loops used before the audit.", self.cap),
            )));
        }
        let head = self.bench.head()?;
        let audited = audit(
            env,
            self.connect,
            &self.bench,
            &self.tree,
            self.change,
            &self.merge_base,
            self.loops,
        )
        .await;
        let Audit {
            findings,
            quarantined: rejected,
            proofs,
        } = match audited {
            Ok(audit) => audit,
            Err(error) => {
                self.note(LoopKind::Audit, format!("error: {error}"));
                let detail = format!("loop {} audit: {error}", self.loops);
                return Ok(Err(Stop::new(Exit::Error, detail)));
            }
        };
        let (p0, p1, p2) = counts(&findings);
        env.forge
            .add_comment(
                self.change,
                &loop_body(self.loops, &head, &findings, &rejected),
                None,
            )
            .await?;
        let mut aside = if rejected.is_empty() {
            String::new()
        } else {
            format!(" ({} quarantined)", rejected.len())
        };
        self.quarantined.extend(rejected);
        self.proven = proven_tests(&proofs);
        if !self.proven.is_empty() {
            aside.push_str(&format!(
                " ({} proven by a failing test)",
                self.proven.len()
            ));
        }
        let text = if findings.is_empty() {
            format!("{p0}P0 {p1}P1 {p2}P2 (clean){aside}")
        } else {
            format!(
                "{p0}P0 {p1}P1 {p2}P2: {}{aside}",
                findings
                    .iter()
                    .map(|f| f.title.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        };
        self.note(LoopKind::Audit, text);
        Ok(Ok(findings))
    }

    /// A verified Build run on the audit's findings; hands on the head it started from, so the
    /// next stage can tell whether it moved.
    pub(super) async fn fix_round(
        &mut self,
        findings: &[Finding],
    ) -> Result<Result<String, Stop>, ActError> {
        self.loops += 1;
        if self.loops > self.cap {
            return Ok(Err(Stop::new(
                Exit::CapReached,
                format!(
                    "{} finding(s) still open after {} loops; review them with `bugloop review`.",
                    findings.len(),
                    self.cap
                ),
            )));
        }
        let before = self.bench.head()?;
        let ids: Vec<String> = findings.iter().map(|f| f.id.as_str().to_owned()).collect();
        let result = build(self.env, &self.bench, self.fix_task(findings, &ids)).await;
        let text = match &result.status {
            BuildStatus::Committed { commit, files, .. } => {
                // The findings' files, and their proofs' tests when committed with the fix.
                let expected: Vec<&str> = findings
                    .iter()
                    .filter_map(|f| f.file.as_deref())
                    .chain(self.proven.iter().map(|p| p.test.path.as_str()))
                    .collect();
                let outside: Vec<&str> = files
                    .iter()
                    .map(String::as_str)
                    .filter(|f| !expected.contains(f))
                    .collect();
                if outside.is_empty() && result.verify.is_empty() {
                    // Nothing was run on it: only the next audit judges it.
                    format!(
                        "{} -> {} (unverified: no verify commands configured)",
                        short(&before),
                        short(commit)
                    )
                } else if outside.is_empty() {
                    format!("{} -> {} (verified)", short(&before), short(commit))
                } else {
                    format!(
                        "{} -> {} (unverified: commit touched unexpected files: {})",
                        short(&before),
                        short(commit),
                        outside.join(", ")
                    )
                }
            }
            BuildStatus::AgentFailed { error } => {
                self.note(LoopKind::Fix, format!("error: {error}"));
                let detail = format!("loop {} fix: {error}", self.loops);
                return Ok(Err(Stop::new(Exit::Error, detail)));
            }
            other => format!("no commit: {}", status_text(other)),
        };
        self.note(LoopKind::Fix, text);
        Ok(Ok(before))
    }

    /// The Build run on the audit's `findings` (their `ids`): the fix prompt, the loop's commit
    /// message, the proofs of those findings and the tools' own fixes for theirs.
    fn fix_task(&self, findings: &[Finding], ids: &[String]) -> BuildTask {
        let prompt = fill(
            FIX_PROMPT,
            &[("findings", &findings_prompt(findings)), ("comment", "")],
        );
        BuildTask {
            name: "converge-fix".to_owned(),
            prompt,
            commit_message: format!(
                "fix{}: bugloop converge loop {} - resolve {}",
                self.env.work.commit_scope(),
                self.loops,
                ids.join(", ")
            ),
            keep_failed: false,
            proofs: self
                .proven
                .iter()
                .filter(|p| ids.contains(&p.finding))
                .cloned()
                .collect(),
            tool_fixes: findings
                .iter()
                .filter_map(|f| {
                    crate::build::ToolFix::of(
                        f.id.as_str(),
                        f.source.as_ref()?,
                        (f.file.as_deref(), f.line),
                    )
                })
                .collect(),
        }
    }

    /// Rounds of audit and fix from `last` until the loop stops: an audit is clean, a round
    /// says why it stops, or a fix did not land.
    pub(super) async fn until_stopped(&mut self, mut last: LastAction) -> Result<Stop, ActError> {
        Ok(loop {
            self.keep_progress();
            last = match last {
                LastAction::Audited(findings) if findings.is_empty() => {
                    break Stop::new(Exit::Converged, String::new());
                }
                LastAction::Audited(findings) => match self.fix_round(&findings).await? {
                    Ok(before) => LastAction::Fixed { before },
                    Err(stop) => break stop,
                },
                LastAction::Fixed { before } if self.bench.head()? == before => break self.stuck(),
                LastAction::Fresh | LastAction::Fixed { .. } => match self.audit_round().await? {
                    Ok(findings) => LastAction::Audited(findings),
                    Err(stop) => break stop,
                },
            };
        })
    }

    /// Keeps the commit the loops have reached for a rerun to go on from, should this run be
    /// killed (nothing to keep while it is still the start).
    pub(super) fn keep_progress(&self) {
        let Ok(tip) = self.bench.head() else {
            return;
        };
        if tip == self.bench.start_head {
            return;
        }
        let Some(dir) = kept::dir(self.env) else {
            return;
        };
        let start = &self.bench.start_head;
        let done = (self.loops, self.log.as_slice());
        if let Err(error) = pending::keep_progress(dir, self.change, (start, &tip), done) {
            self.env.progress.event(crate::ProgressEvent::Step(format!(
                "the loops' progress was not kept for a rerun ({error})"
            )));
        }
    }

    /// The fix left HEAD where it was: what the last audit found is still open.
    pub(super) fn stuck(&self) -> Stop {
        let open: Vec<String> = self
            .log
            .iter()
            .rev()
            .find(|l| l.kind == LoopKind::Audit)
            .map(|l| vec![l.text.clone()])
            .unwrap_or_default();
        Stop::new(
            Exit::Stuck,
            format!(
                "The last fix made no commit (its loop says why); still open: {}",
                open.join("; ")
            ),
        )
    }

    /// The net change of the run, landed (fast-forward, or a branch of its own); the worktree is
    /// removed.
    pub(super) async fn finish(
        self,
        stop: Stop,
        earlier_dirty: usize,
    ) -> Result<ConvergeReport, ActError> {
        let final_commit = self.bench.head()?;
        let (files_changed, additions, deletions) =
            net_change(&self.tree, &self.bench.start_head, &final_commit)?;
        let mut report = ConvergeReport {
            exit: stop.exit,
            detail: stop.detail,
            // The count is raised before the cap is checked; report the loops that ran.
            loops: self.loops.min(self.cap),
            start_commit: self.bench.start_head.clone(),
            final_commit,
            files_changed,
            additions,
            deletions,
            log: self.log,
            landing: None,
            earlier_dirty_loops: earlier_dirty,
            quarantined: self.quarantined,
            description: None,
            description_error: None,
        };
        // Kept until the description is written: a run killed after landing leaves it to the
        // next, which would otherwise find the last loop clean on this head and do nothing.
        keep_report(self.env, self.change, &report);
        report.landing = land_on_target(self.env, &self.bench, "converge").await?;
        keep_report(self.env, self.change, &report);
        drop(self.bench);
        Ok(report)
    }
}

/// Keeps a finished run's report for a rerun ([`pending`]); an error is said, not fatal.
fn keep_report(env: &LoopEnv<'_>, change: &ChangeKey, report: &ConvergeReport) {
    let Some(dir) = kept::dir(env) else {
        return;
    };
    if let Err(error) = pending::keep_report(dir, change, report) {
        env.progress.event(crate::ProgressEvent::Step(format!(
            "the report was not kept for a rerun ({error})"
        )));
    }
}
