//! The audit-fix loop (bugteam-audit-fix-loop.md): in a task worktree off HEAD, gate (formatters
//! and linters, with gate-fix rounds), audit from scratch, fix with a verified Build run, and again,
//! until an audit is clean (converged), the loop cap is reached, a fix leaves HEAD unchanged
//! (stuck), or something fails (error). Every audit is recorded in the conversation as
//! `loop <L> audit: <a>P0 / <b>P1 / <c>P2`; a run on a HEAD whose last loop was clean stops at
//! once. At the end the worktree's commits land on the user's branch (fast-forward) or wait on a
//! named branch; the worktree is always removed.
//!
//! From `parallel_from_loop` on, `parallel_auditors` auditors run at the same time, each with its
//! own focus (and model or temperature when configured); the validator grounds and merges their
//! findings and, with `converge.validator: model`, has the model judge each one. Nothing it
//! rejects is lost: it is quarantined, with the reason, in the loop review and the final report.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bugloop_config::{AuditFocus, Validator};

use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding::{Head, ground};
use bugloop_domain::markdown::inline;
use bugloop_domain::safety::{MAX_FINDING_BODY_CHARS, truncate_finding_body};
use bugloop_domain::score::Priority;
use bugloop_forge::ChangeKey;
use bugloop_git::{Git, Selection, short};
use bugloop_llm::{ChatRequest, ChatResponse, LlmError, Provider, StreamSink};
use serde::{Deserialize, Serialize};

use crate::act::{ActEnv, ActError};
use crate::build::{
    BuildStatus, BuildTask, Landing, Workbench, build, land, net_change, run_commands,
};
use crate::prompt::fill;
use crate::review::{ReviewEnv, ReviewRequest, review};

pub const GATE_FIX_PROMPT: &str = include_str!("../prompts/gate-fix.md");
const FIX_PROMPT: &str = include_str!("../prompts/fix.md");
const VALIDATOR_PROMPT: &str = include_str!("../prompts/audit-validator.md");
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
    /// Findings the auditors' code checks or the validator rejected, with the reason.
    pub quarantined: Vec<Quarantined>,
}

/// A finding an audit reported that was not counted, and why: kept for the record rather than
/// discarded, so a wrong rejection can be seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    #[serde(rename = "loop")]
    pub loop_number: u32,
    /// Who reported it: `auditor` alone, or `auditor 2 (security)` among parallel ones.
    pub auditor: String,
    pub title: String,
    pub location: String,
    /// The check that rejected it (`grounding`, `validation`, `path_safety`, `validator`,
    /// `validator model`) and why.
    pub reason: String,
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
        if !self.quarantined.is_empty() {
            out.push_str(&format!("Quarantined ({}):\n", self.quarantined.len()));
            for q in &self.quarantined {
                out.push_str(&format!(
                    "{} {}: {} ({}): {}\n",
                    q.loop_number, q.auditor, q.title, q.location, q.reason
                ));
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

fn loop_body(number: u32, head: &str, findings: &[Finding], quarantined: &[Quarantined]) -> String {
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
                inline(&f.title),
                inline(&f.location()),
                inline(f.description.lines().next().unwrap_or(""))
            ));
        }
    }
    if !quarantined.is_empty() {
        body.push_str(&format!(
            "\n### Quarantined ({}): not counted\n\n",
            quarantined.len()
        ));
        for q in quarantined {
            body.push_str(&format!(
                "- **{}** — {} — {} — {}\n",
                inline(&q.title),
                inline(&q.location),
                q.auditor,
                inline(&q.reason)
            ));
        }
    }
    body
}

/// Whether a loop review says its audit was clean (the header line, so a quarantine list after
/// it does not hide a clean loop).
fn is_clean(body: &str) -> bool {
    body.lines()
        .nth(1)
        .is_some_and(|header| header.trim_end().ends_with(CLEAN_MARK))
}

/// One auditor's findings.
#[derive(Debug, Clone)]
pub struct AuditFindings {
    /// `auditor 2 (security)`.
    pub auditor: String,
    pub findings: Vec<Finding>,
}

/// The code validator of parallel audits: quarantines findings that are not grounded at head
/// (file, line, quoted text) with the reason, merges the rest by (file, line, category) keeping
/// the highest score and the longest description, and re-ids them `loop<L>-<K>`. Categories and
/// scores are typed, so an invalid one never gets this far.
pub fn validate_and_merge(
    number: u32,
    audits: Vec<AuditFindings>,
    head: &dyn Head,
) -> (Vec<Finding>, Vec<Quarantined>) {
    let mut quarantined = Vec::new();
    let mut grounded = Vec::new();
    for audit in audits {
        let report = ground(audit.findings, head);
        quarantined.extend(report.dropped.into_iter().map(|d| Quarantined {
            loop_number: number,
            auditor: audit.auditor.clone(),
            title: d.title,
            location: d.location,
            reason: format!("validator: {}", d.reason),
        }));
        grounded.extend(report.kept.into_iter().map(|k| k.finding));
    }
    let mut merged: BTreeMap<(Option<String>, Option<u32>, String), Finding> = BTreeMap::new();
    for f in grounded {
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
    (findings, quarantined)
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

/// Connects a model string of `converge.auditors` (metered by the run's meter, so every auditor
/// spends from the same budget).
pub type Connect<'a> = &'a (dyn Fn(&str) -> Result<Arc<dyn Provider>, LlmError> + Send + Sync);

/// Runs the loop on the change of `change` (its conversation) from `base` (default: the merge
/// base with the default branch). `connect` gives the auditors configured with a model of their
/// own their provider.
pub async fn converge(
    env: &ActEnv<'_>,
    change: &ChangeKey,
    base: Option<String>,
    connect: Connect<'_>,
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
        let clean = is_clean(&review.body);
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
                    quarantined: Vec::new(),
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
    let mut quarantined = Vec::new();
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
                let Audit {
                    findings,
                    quarantined: rejected,
                } = match audit(env, connect, &bench, &tree, change, &merge_base, loop_count).await
                {
                    Ok(audit) => audit,
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
                    .add_comment(
                        change,
                        &loop_body(loop_count, &head, &findings, &rejected),
                        None,
                    )
                    .await?;
                let aside = if rejected.is_empty() {
                    String::new()
                } else {
                    format!(" ({} quarantined)", rejected.len())
                };
                quarantined.extend(rejected);
                record(
                    &mut log,
                    env.progress.as_ref(),
                    LoopLine {
                        number: loop_count,
                        kind: "audit".to_owned(),
                        text: if findings.is_empty() {
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
        quarantined,
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

/// What one loop's audit counts, and what it set aside.
struct Audit {
    findings: Vec<Finding>,
    quarantined: Vec<Quarantined>,
}

/// One reviewer of an audit.
struct Auditor {
    label: String,
    focus: Option<AuditFocus>,
    provider: Arc<dyn Provider>,
}

/// The focus prompt of `focus`.
pub fn focus_prompt(focus: AuditFocus) -> &'static str {
    match focus {
        AuditFocus::Correctness => include_str!("../prompts/audit-focus-correctness.md"),
        AuditFocus::Security => include_str!("../prompts/audit-focus-security.md"),
        AuditFocus::ConcurrencyAndResources => {
            include_str!("../prompts/audit-focus-concurrency_and_resources.md")
        }
        AuditFocus::ErrorHandling => include_str!("../prompts/audit-focus-error_handling.md"),
    }
}

/// The auditors of loop `number`: one with the run's model, or from `parallel_from_loop` on
/// `parallel_auditors` of them, each with its focus (configured, else the next of
/// `AuditFocus::ALL`) and its own model or temperature when configured.
fn auditors(env: &ActEnv<'_>, connect: Connect<'_>, number: u32) -> Result<Vec<Auditor>, ActError> {
    let settings = &env.config.converge;
    if settings.parallel_auditors == 0 || number < settings.parallel_from_loop {
        return Ok(vec![Auditor {
            label: "auditor".to_owned(),
            focus: None,
            provider: env.provider.clone(),
        }]);
    }
    let focuses = AuditFocus::ALL.iter().copied().cycle();
    (0..settings.parallel_auditors as usize)
        .zip(focuses)
        .map(|(index, rotation)| {
            let configured = settings.auditors.get(index);
            let focus = configured.map_or(rotation, |a| a.focus);
            let mut label = format!("auditor {} ({}", index + 1, focus.as_str());
            let mut provider = env.provider.clone();
            if let Some(model) = configured.and_then(|a| a.model.as_deref()) {
                provider = connect(model).map_err(|e| {
                    ActError::Invalid(format!("converge.auditors[{index}].model {model}: {e}"))
                })?;
                label.push_str(&format!(", {model}"));
            }
            if let Some(temperature) = configured.and_then(|a| a.temperature) {
                provider = Arc::new(Tempered {
                    inner: provider,
                    // The wire format carries f32; the configured value is checked to be 0-2.
                    temperature: temperature as f32,
                });
                label.push_str(&format!(", temperature {temperature}"));
            }
            label.push(')');
            Ok(Auditor {
                label,
                focus: Some(focus),
                provider,
            })
        })
        .collect()
}

/// A provider whose every request is sampled at one temperature (an auditor's own).
#[derive(Debug)]
struct Tempered {
    inner: Arc<dyn Provider>,
    temperature: f32,
}

#[async_trait]
impl Provider for Tempered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self) -> bugloop_llm::Capabilities {
        self.inner.capabilities()
    }

    async fn chat(
        &self,
        request: &ChatRequest,
        sink: Option<StreamSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let mut request = request.clone();
        request.temperature = Some(self.temperature);
        self.inner.chat(&request, sink).await
    }
}

/// Stages of an auditor's own review whose drops are rejections of what it claimed (not filter
/// decisions such as the threshold or dedup): they are quarantined.
const REJECTING_STAGES: [&str; 3] = ["validation", "path_safety", "grounding"];

/// One clean-room audit of the worktree's change: the auditors at the same time, then the
/// validator (code checks, merging, and the model when `converge.validator` is `model`).
async fn audit(
    env: &ActEnv<'_>,
    connect: Connect<'_>,
    bench: &Workbench,
    tree: &Git,
    change: &ChangeKey,
    base: &str,
    number: u32,
) -> Result<Audit, ActError> {
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
        focus: None,
    };
    // An audit publishes no finding comments, so the limit on them does not apply: every
    // finding counts toward the loop's P0/P1/P2 and goes to the fix.
    let mut config = env.config.clone();
    config.review.comment_limit = usize::MAX;
    let auditors = auditors(env, connect, number)?;
    let reviews = auditors.iter().map(|auditor| {
        let review_env = ReviewEnv {
            forge: env.forge,
            config: &config,
            provider: auditor.provider.clone(),
            meter: env.meter.clone(),
            runs_dir: env.runs_dir.clone(),
            progress: env.progress.clone(),
        };
        let mut request = request.clone();
        request.focus = auditor.focus.map(|f| focus_prompt(f).to_owned());
        async move { review(&review_env, request).await }
    });
    // At the same time: the auditors share the run's meter (one budget), not a turn each.
    let reports = futures_util::future::join_all(reviews).await;
    let mut audits = Vec::new();
    let mut quarantined = Vec::new();
    for (auditor, report) in auditors.iter().zip(reports) {
        let report = report.map_err(|e| ActError::Invalid(e.to_string()))?;
        if !report.errors.is_empty() {
            return Err(ActError::Invalid(format!(
                "{}: {}",
                auditor.label,
                report.errors.join("; ")
            )));
        }
        quarantined.extend(
            report
                .dropped
                .iter()
                .filter(|d| REJECTING_STAGES.contains(&d.stage.as_str()))
                .map(|d| Quarantined {
                    loop_number: number,
                    auditor: auditor.label.clone(),
                    title: d.title.clone(),
                    location: d.location.clone(),
                    reason: format!("{}: {}", d.stage, d.reason),
                }),
        );
        audits.push(AuditFindings {
            auditor: auditor.label.clone(),
            findings: report.findings.into_iter().map(|p| p.finding).collect(),
        });
    }
    let files = crate::review::HeadTree::load(
        bench.path(),
        None,
        audits
            .iter()
            .flat_map(|a| &a.findings)
            .filter_map(|f| f.file.clone()),
    );
    let findings = if audits.len() == 1 {
        audits.pop().map(|a| a.findings).unwrap_or_default()
    } else {
        let (merged, rejected) = validate_and_merge(number, audits, &files);
        quarantined.extend(rejected);
        merged
    };
    let findings = match env.config.converge.validator {
        Validator::Code => findings,
        Validator::Model => {
            let (kept, rejected) = judge(env, bench, number, findings, &files).await?;
            quarantined.extend(rejected);
            kept
        }
    };
    Ok(Audit {
        findings,
        quarantined,
    })
}

#[derive(Debug, Deserialize)]
struct Verdict {
    keep: bool,
    reason: String,
}

/// Lines around a finding's line (numbered), for the model validator.
fn excerpt(head: &dyn Head, finding: &Finding) -> String {
    let Some(text) = finding.file.as_deref().and_then(|f| head.text(f)) else {
        return "(no file: the finding is about the change as a whole)".to_owned();
    };
    let lines: Vec<&str> = text.lines().collect();
    let (first, last) = match finding.line {
        Some(line) => {
            let line = line as usize;
            let end = finding.end_line.map_or(line, |e| e as usize).max(line);
            (line.saturating_sub(15), (end + 15).min(lines.len()))
        }
        None => (0, lines.len().min(200)),
    };
    let body: String = lines
        .iter()
        .enumerate()
        .skip(first)
        .take(last.saturating_sub(first))
        .map(|(i, l)| format!("{:>5} | {l}\n", i + 1))
        .collect();
    let fence = crate::publish::fence_for(&body);
    format!("{fence}text\n{body}{fence}")
}

/// The model validator: one question per finding, after the code checks; what it rejects is
/// quarantined with its reason. A validator that cannot answer stops the audit (it would
/// otherwise pass findings it never judged).
async fn judge(
    env: &ActEnv<'_>,
    bench: &Workbench,
    number: u32,
    findings: Vec<Finding>,
    head: &dyn Head,
) -> Result<(Vec<Finding>, Vec<Quarantined>), ActError> {
    let mut kept = Vec::new();
    let mut quarantined = Vec::new();
    for finding in findings {
        let question = format!(
            "## The finding\n\n{}\n\n## The code at {}\n\n{}\n",
            findings_prompt(std::slice::from_ref(&finding)),
            finding.location(),
            excerpt(head, &finding)
        );
        let verdict: Verdict = crate::structured_answer(
            env.provider.clone(),
            bench.path(),
            &env.runs_dir,
            "audit-validator",
            VALIDATOR_PROMPT,
            question,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "keep": {"type": "boolean"},
                    "reason": {"type": "string"}
                },
                "required": ["keep", "reason"],
                "additionalProperties": false
            }),
            512,
        )
        .await
        .map_err(|e| ActError::Invalid(format!("the validator model on {}: {e}", finding.id)))?;
        if verdict.keep {
            kept.push(finding);
        } else {
            quarantined.push(Quarantined {
                loop_number: number,
                auditor: "validator".to_owned(),
                title: finding.title.clone(),
                location: finding.location(),
                reason: format!("validator model: {}", verdict.reason.trim()),
            });
        }
    }
    Ok((kept, quarantined))
}

#[cfg(test)]
mod tests;
