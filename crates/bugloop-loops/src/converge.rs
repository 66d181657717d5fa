//! The audit-fix loop (bugteam-audit-fix-loop.md): in a task worktree off HEAD, gate (formatters
//! and linters, with gate-fix rounds), audit from scratch, fix with a verified Build run, and again,
//! until an audit is clean (converged), the loop cap is reached, a fix leaves HEAD unchanged
//! (stuck), or something fails (error). Every audit is recorded in the conversation as
//! `loop <L> audit: <a>P0 / <b>P1 / <c>P2`; a run on a HEAD whose last loop was clean stops at
//! once. At the end the worktree's commits land on the user's branch (fast-forward) or wait on a
//! named branch; the worktree is always removed.

use std::collections::BTreeMap;

use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding::{Head, ground};
use bugloop_domain::safety::{MAX_FINDING_BODY_CHARS, truncate_finding_body};
use bugloop_domain::score::Priority;
use bugloop_forge::ChangeKey;
use bugloop_forge::git::{Git, Selection, short};
use serde::Serialize;

use crate::act::{ActEnv, ActError};
use crate::build::{
    BuildStatus, BuildTask, Landing, Workbench, build, land, net_change, run_commands,
};
use crate::review::prompt::fill;
use crate::review::{ReviewEnv, ReviewRequest, review};

pub const GATE_FIX_PROMPT: &str = include_str!("../prompts/gate-fix.md");
const FIX_PROMPT: &str = include_str!("../prompts/fix.md");
/// Tags the loop reviews in the conversation: `<!-- bugloop:converge loop=3 head=<sha> -->`.
pub const LOOP_TAG: &str = "<!-- bugloop:converge";
/// How a clean loop review ends.
pub const CLEAN_MARK: &str = "→ clean";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Exit {
    Converged,
    CapReached,
    Stuck,
    Error,
}

impl Exit {
    pub fn as_str(self) -> &'static str {
        match self {
            Exit::Converged => "converged",
            Exit::CapReached => "cap reached",
            Exit::Stuck => "stuck",
            Exit::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoopLine {
    pub number: u32,
    /// `audit`, `fix` or `gate`.
    pub kind: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConvergeReport {
    pub exit: Exit,
    /// Why it stopped (stuck: which findings; error: what failed in which loop; cap reached: what
    /// is left).
    pub detail: String,
    pub loops: u32,
    pub start_commit: String,
    pub final_commit: String,
    pub files_changed: usize,
    pub additions: usize,
    pub deletions: usize,
    pub log: Vec<LoopLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// Loop reviews of earlier runs that were not clean.
    pub earlier_dirty_loops: usize,
}

impl ConvergeReport {
    /// The final report, as the spec prints it.
    pub fn text(&self) -> String {
        let mut out = format!(
            "bugloop converge exit: {}\nLoops: {}\nStarting commit: {}\nFinal commit: {}\nNet change: {} files, +{}/-{}\n",
            self.exit.as_str(),
            self.loops,
            short(&self.start_commit),
            short(&self.final_commit),
            self.files_changed,
            self.additions,
            self.deletions
        );
        if !self.log.is_empty() {
            out.push_str("Loop log:\n");
            for line in &self.log {
                out.push_str(&format!("{} {}: {}\n", line.number, line.kind, line.text));
            }
        }
        if !self.detail.is_empty() {
            out.push_str(&format!("{}\n", self.detail));
        }
        match &self.landing {
            Some(Landing::FastForwarded { branch, commit }) => {
                out.push_str(&format!("{branch} fast-forwarded to {}\n", short(commit)));
            }
            Some(Landing::Branch { name, reason, .. }) => {
                out.push_str(&format!("The commits wait on branch {name} ({reason}).\n"));
            }
            None => {}
        }
        out
    }
}

/// P0/P1/P2 counts.
fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for f in findings {
        match f.priority() {
            Priority::P0 => c.0 += 1,
            Priority::P1 => c.1 += 1,
            Priority::P2 => c.2 += 1,
        }
    }
    c
}

fn loop_body(number: u32, head: &str, findings: &[Finding]) -> String {
    let (p0, p1, p2) = counts(findings);
    let mut body = format!(
        "{LOOP_TAG} loop={number} head={head} -->\n## bugloop loop {number} audit: {p0}P0 / {p1}P1 / {p2}P2"
    );
    if findings.is_empty() {
        body.push_str(&format!(" {CLEAN_MARK}\n"));
    } else {
        body.push_str("\n\n");
        for f in findings {
            body.push_str(&format!(
                "- **[{:?}] {}** — {} — {}\n",
                f.priority(),
                f.title,
                f.location(),
                f.description.lines().next().unwrap_or("")
            ));
        }
    }
    body
}

/// The validator of parallel audits: drops findings that are not grounded at head (file, line,
/// quoted text), merges the rest by (file, line, category) keeping the highest score and the
/// longest description, and re-ids them `loop<L>-<K>`. Categories and scores are typed, so an
/// invalid one never gets this far.
pub fn validate_and_merge(
    number: u32,
    audits: Vec<Vec<Finding>>,
    head: &dyn Head,
) -> (Vec<Finding>, Vec<String>) {
    let all: Vec<Finding> = audits.into_iter().flatten().collect();
    let report = ground(all, head);
    let rejected: Vec<String> = report
        .dropped
        .iter()
        .map(|d| format!("{} ({}): {}", d.title, d.location, d.reason))
        .collect();
    let mut merged: BTreeMap<(Option<String>, Option<u32>, String), Finding> = BTreeMap::new();
    for kept in report.kept {
        let f = kept.finding;
        let key = (f.file.clone(), f.line, f.category.as_str().to_owned());
        match merged.get_mut(&key) {
            Some(existing) => {
                if f.description.len() > existing.description.len() {
                    existing.description = f.description.clone();
                    existing.title = f.title.clone();
                }
                existing.score = existing.score.max(f.score);
            }
            None => {
                merged.insert(key, f);
            }
        }
    }
    let findings = merged
        .into_values()
        .enumerate()
        .map(|(k, mut f)| {
            f.id = FindingId::new(format!("loop{number}-{}", k + 1));
            f
        })
        .collect();
    (findings, rejected)
}

fn findings_prompt(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let mut text = format!(
                "## Finding `{}` at {} (score {}, {})\n\n### {}\n\n{}\n",
                f.id,
                f.location(),
                f.score,
                f.category,
                f.title,
                f.description
            );
            if let Some(evidence) = &f.evidence {
                text.push_str(&format!("\nThe line: `{}`\n", evidence.trim()));
            }
            truncate_finding_body(&text, MAX_FINDING_BODY_CHARS)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

enum LastAction {
    Fresh,
    Audited(Vec<Finding>),
    Fixed { before: String },
}

/// Runs the loop on the change of `change` (its conversation) from `base` (default: the merge
/// base with the default branch).
pub async fn converge(
    env: &ActEnv<'_>,
    change: &ChangeKey,
    base: Option<String>,
) -> Result<ConvergeReport, ActError> {
    let git = env.git;
    let selection = match &base {
        Some(base) => Selection::Range {
            base: Some(base.clone()),
            head: None,
        },
        None => Selection::Branch,
    };
    let selected = git
        .select(&selection)
        .map_err(bugloop_forge::ForgeError::from)?;
    if selected.diff.is_empty() {
        return Err(ActError::Invalid(format!(
            "No upstream diff: {} has nothing to converge.",
            selected.description
        )));
    }
    let head_now = git.head().unwrap_or_default();
    // Earlier loop reviews, newest first: a clean one on this HEAD means there is nothing to do.
    let comments = env.forge.comments(change).await?;
    let mut loop_reviews: Vec<&bugloop_domain::thread::Comment> = comments
        .iter()
        .filter(|c| c.by_bugloop && c.body.starts_with(LOOP_TAG))
        .collect();
    loop_reviews
        .sort_by_key(|c| std::cmp::Reverse((c.created_at, c.id.parse::<u64>().unwrap_or(0))));
    let mut earlier_dirty = 0;
    for review in &loop_reviews {
        let clean = review.body.trim_end().ends_with(CLEAN_MARK);
        if clean {
            if review.body.contains(&format!("head={head_now} ")) && earlier_dirty == 0 {
                return Ok(ConvergeReport {
                    exit: Exit::Converged,
                    detail: "The last loop was clean on this HEAD: nothing to do.".to_owned(),
                    loops: 0,
                    start_commit: head_now.clone(),
                    final_commit: head_now,
                    files_changed: 0,
                    additions: 0,
                    deletions: 0,
                    log: Vec::new(),
                    landing: None,
                    earlier_dirty_loops: 0,
                });
            }
            break;
        }
        earlier_dirty += 1;
    }

    let bench = Workbench::open(git, "converge")?;
    let tree = bench.git().clone();
    let merge_base = selected.base.clone();
    let cap = env.config.converge.max_loops;
    let mut loop_count: u32 = 0;
    let mut log = Vec::new();
    let mut last = LastAction::Fresh;
    let (exit, detail) = loop {
        match last {
            LastAction::Audited(ref findings) if findings.is_empty() => {
                break (Exit::Converged, String::new());
            }
            LastAction::Audited(ref findings) => {
                loop_count += 1;
                if loop_count > cap {
                    break (
                        Exit::CapReached,
                        format!(
                            "{} finding(s) still open after {cap} loops; review them with `bugloop review`.",
                            findings.len()
                        ),
                    );
                }
                let before = bench.head()?;
                let ids: Vec<String> = findings.iter().map(|f| f.id.as_str().to_owned()).collect();
                let prompt = fill(
                    FIX_PROMPT,
                    &[("findings", &findings_prompt(findings)), ("comment", "")],
                );
                let result = build(
                    &env_build(env),
                    &bench,
                    BuildTask {
                        name: "converge-fix".to_owned(),
                        prompt,
                        commit_message: format!(
                            "fix: bugloop converge loop {loop_count} - resolve {}",
                            ids.join(", ")
                        ),
                    },
                )
                .await;
                let text = match &result.status {
                    BuildStatus::Committed { commit, files, .. } => {
                        let expected: Vec<&str> =
                            findings.iter().filter_map(|f| f.file.as_deref()).collect();
                        let outside: Vec<&String> = files
                            .iter()
                            .filter(|f| !expected.contains(&f.as_str()))
                            .collect();
                        if outside.is_empty() {
                            format!("{} -> {} (verified)", short(&before), short(commit))
                        } else {
                            format!(
                                "{} -> {} (unverified: commit touched unexpected files: {})",
                                short(&before),
                                short(commit),
                                outside
                                    .iter()
                                    .map(|s| s.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        }
                    }
                    BuildStatus::AgentFailed { error } => {
                        record(
                            &mut log,
                            env.progress.as_ref(),
                            LoopLine {
                                number: loop_count,
                                kind: "fix".to_owned(),
                                text: format!("error: {error}"),
                            },
                        );
                        break (Exit::Error, format!("loop {loop_count} fix: {error}"));
                    }
                    other => format!("no commit: {}", status_text(other)),
                };
                record(
                    &mut log,
                    env.progress.as_ref(),
                    LoopLine {
                        number: loop_count,
                        kind: "fix".to_owned(),
                        text,
                    },
                );
                last = LastAction::Fixed { before };
            }
            LastAction::Fixed { ref before } if bench.head()? == *before => {
                let ids: Vec<String> = log
                    .iter()
                    .rev()
                    .find(|l| l.kind == "audit")
                    .map(|l| vec![l.text.clone()])
                    .unwrap_or_default();
                break (
                    Exit::Stuck,
                    format!(
                        "The fix left HEAD unchanged; still open: {}",
                        ids.join("; ")
                    ),
                );
            }
            LastAction::Fresh | LastAction::Fixed { .. } => {
                if let Err(detail) = gate(env, &bench, loop_count + 1, &mut log).await? {
                    break (Exit::Error, detail);
                }
                loop_count += 1;
                if loop_count > cap {
                    break (
                        Exit::CapReached,
                        format!("{cap} loops used before the audit."),
                    );
                }
                let head = bench.head()?;
                let findings =
                    match audit(env, &bench, &tree, change, &merge_base, loop_count).await {
                        Ok(findings) => findings,
                        Err(error) => {
                            record(
                                &mut log,
                                env.progress.as_ref(),
                                LoopLine {
                                    number: loop_count,
                                    kind: "audit".to_owned(),
                                    text: format!("error: {error}"),
                                },
                            );
                            break (Exit::Error, format!("loop {loop_count} audit: {error}"));
                        }
                    };
                let (p0, p1, p2) = counts(&findings);
                env.forge
                    .add_comment(change, &loop_body(loop_count, &head, &findings), None)
                    .await?;
                record(
                    &mut log,
                    env.progress.as_ref(),
                    LoopLine {
                        number: loop_count,
                        kind: "audit".to_owned(),
                        text: if findings.is_empty() {
                            format!("{p0}P0 {p1}P1 {p2}P2 (clean)")
                        } else {
                            format!(
                                "{p0}P0 {p1}P1 {p2}P2: {}",
                                findings
                                    .iter()
                                    .map(|f| f.title.as_str())
                                    .collect::<Vec<_>>()
                                    .join("; ")
                            )
                        },
                    },
                );
                last = LastAction::Audited(findings);
            }
        }
    };
    let final_commit = bench.head()?;
    let (files_changed, additions, deletions) =
        net_change(&tree, &bench.start_head, &final_commit)?;
    let landing = land(&bench, env.config, "converge")?;
    let start_commit = bench.start_head.clone();
    drop(bench);
    Ok(ConvergeReport {
        exit,
        detail,
        // The count is raised before the cap is checked; report the loops that ran.
        loops: loop_count.min(cap),
        start_commit,
        final_commit,
        files_changed,
        additions,
        deletions,
        log,
        landing,
        earlier_dirty_loops: earlier_dirty,
    })
}

/// Adds a line to the loop log and reports it as progress.
fn record(log: &mut Vec<LoopLine>, progress: &dyn crate::Progress, line: LoopLine) {
    progress.event(crate::ProgressEvent::Step(format!(
        "{} {}: {}",
        line.number, line.kind, line.text
    )));
    log.push(line);
}

fn env_build<'a>(env: &'a ActEnv<'a>) -> crate::build::BuildEnv<'a> {
    crate::build::BuildEnv {
        config: env.config,
        provider: env.provider.clone(),
        meter: env.meter.clone(),
        runs_dir: env.runs_dir.clone(),
        progress: env.progress.clone(),
    }
}

fn status_text(status: &BuildStatus) -> String {
    match status {
        BuildStatus::NoChanges { .. } => "the fix changed nothing".to_owned(),
        BuildStatus::VerifyFailed { command, .. } => format!("verify `{command}` failed"),
        BuildStatus::Refused { reason } => reason.clone(),
        BuildStatus::AgentFailed { error } => error.clone(),
        BuildStatus::Committed { commit, .. } => format!("committed {}", short(commit)),
    }
}

/// The gate before an audit: the configured commands must pass, with at most `max_fix_rounds`
/// gate-fix rounds. `Ok(Err(detail))` stops the loop with an error.
async fn gate(
    env: &ActEnv<'_>,
    bench: &Workbench,
    number: u32,
    log: &mut Vec<LoopLine>,
) -> Result<Result<(), String>, ActError> {
    let commands = bugloop_domain::safety::parse_verify_commands(&env.config.gate.commands)
        .map_err(|e| ActError::Invalid(format!("gate.commands: {e}")))?;
    if commands.is_empty() {
        return Ok(Ok(()));
    }
    let mut failed_rounds = 0;
    loop {
        let runs =
            run_commands(env.config, bench.path(), Some(bench.git_mount()), &commands).await?;
        let failures: Vec<_> = runs.iter().filter(|r| !r.passed).collect();
        if failures.is_empty() {
            return Ok(Ok(()));
        }
        failed_rounds += 1;
        let names: Vec<&str> = failures.iter().map(|f| f.command.as_str()).collect();
        record(
            log,
            env.progress.as_ref(),
            LoopLine {
                number,
                kind: "gate".to_owned(),
                text: format!("failed: {} (round {failed_rounds})", names.join(", ")),
            },
        );
        if failed_rounds > env.config.gate.max_fix_rounds {
            return Ok(Err(format!(
                "the gate failed before audit {number} after {} fix rounds: {}",
                env.config.gate.max_fix_rounds,
                names.join(", ")
            )));
        }
        let text: String = failures
            .iter()
            .map(|f| format!("### `{}`\n\n```\n{}\n```\n", f.command, f.output.trim_end()))
            .collect();
        let result = build(
            &env_build(env),
            bench,
            BuildTask {
                name: "gate-fix".to_owned(),
                prompt: fill(GATE_FIX_PROMPT, &[("failures", &text)]),
                commit_message: "style: bugloop gate fixes".to_owned(),
            },
        )
        .await;
        if let BuildStatus::AgentFailed { error } = &result.status {
            return Ok(Err(format!(
                "the gate-fix agent failed before audit {number}: {error}"
            )));
        }
    }
}

/// One clean-room audit of the worktree's change (several auditors and the validator from
/// `parallel_from_loop` when `parallel_auditors` > 0).
async fn audit(
    env: &ActEnv<'_>,
    bench: &Workbench,
    tree: &Git,
    change: &ChangeKey,
    base: &str,
    number: u32,
) -> Result<Vec<Finding>, ActError> {
    let head = bench.head()?;
    let diff = tree
        .run_bytes(&[
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--find-renames",
            base,
            &head,
        ])
        .map_err(bugloop_forge::ForgeError::from)?;
    let request = ReviewRequest {
        change: change.clone(),
        description: format!("audit loop {number} of the change from {}", short(base)),
        base: base.to_owned(),
        head,
        diff: bugloop_diff::parse(&diff),
        workspace: bench.path().to_path_buf(),
        git_mount: Some(bench.git_mount()),
        publish: false,
        clean_room: true,
    };
    let review_env = ReviewEnv {
        forge: env.forge,
        config: env.config,
        provider: env.provider.clone(),
        meter: env.meter.clone(),
        runs_dir: env.runs_dir.clone(),
        progress: env.progress.clone(),
    };
    let parallel = env.config.converge.parallel_auditors;
    let auditors = if parallel > 0 && number >= env.config.converge.parallel_from_loop {
        parallel
    } else {
        1
    };
    let mut audits = Vec::new();
    for _ in 0..auditors {
        let report = review(&review_env, request.clone())
            .await
            .map_err(|e| ActError::Invalid(e.to_string()))?;
        if !report.errors.is_empty() {
            return Err(ActError::Invalid(report.errors.join("; ")));
        }
        audits.push(
            report
                .findings
                .into_iter()
                .map(|p| p.finding)
                .collect::<Vec<_>>(),
        );
    }
    if auditors == 1 {
        return Ok(audits.pop().unwrap_or_default());
    }
    let files = crate::review::HeadTree::load(
        bench.path(),
        None,
        audits.iter().flatten().filter_map(|f| f.file.clone()),
    );
    let (merged, _rejected) = validate_and_merge(number, audits, &files);
    Ok(merged)
}

#[cfg(test)]
mod tests;
