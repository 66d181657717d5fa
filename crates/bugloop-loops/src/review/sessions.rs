//! Stage 5 of a review: the model sessions, one per planned batch (the four passes with tools, or
//! one structured answer), and what they reported: findings (ids made unique across sessions),
//! resolutions of open findings, pass summaries, unusable reports, and the parts not reviewed.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bugloop_agent::{Agent, OpenStage, Outcome, Stages, Task};
use bugloop_domain::finding::{Finding, FindingId};
use bugloop_llm::{Capabilities, JsonSchemaFormat, LlmError, Message};
use bugloop_report::review::{DroppedFinding, PassSummary, ReportStage, StageChange, Unreviewed};
use bugloop_sandbox::Policy;
use bugloop_tools::{ToolContext, Toolset, Workspace, typed};
use futures_util::StreamExt;

use super::brief::Brief;
use super::early::EarlyPublisher;
use super::tools::{
    self, Collected, ReportFinding, ReportedFinding, ResolveFinding, SUBMIT_PASS, StructuredAnswer,
    SubmitPass, accept, structured_schema,
};
use super::{ReviewRequest, web};
use crate::env::LoopEnv;
use crate::plan::{Batch, Importance};
use crate::{ProgressEvent, prompt, sandbox_settings};

/// What a review records beside its findings, added to stage after stage (the sessions, the
/// analyzers, grounding and filtering) and reported at the end.
#[derive(Default)]
pub(super) struct Record {
    /// Files or parts not reviewed, and why.
    pub unreviewed: Vec<Unreviewed>,
    /// What failed: the review is incomplete when any did.
    pub errors: Vec<String>,
    pub passes: Vec<PassSummary>,
    pub dropped: Vec<DroppedFinding>,
    pub changes: Vec<StageChange>,
}

/// What the sessions reported, before grounding and filtering.
pub(super) struct Reported {
    /// bugloop's own findings first, then the model's, in order.
    pub findings: Vec<Finding>,
    /// Open findings the model said are resolved, with why.
    pub resolutions: BTreeMap<String, String>,
    pub record: Record,
    /// Why some part of the review got no answer from the model (the first session error, or
    /// the budget running out), if one did: what the model did not say then says nothing.
    pub unanswered: Option<String>,
    /// Ids findings published as their part ended hold: another finding is renamed.
    pub reserved: Vec<FindingId>,
}

/// One model session's result.
struct Session {
    collected: Collected,
    error: Option<String>,
    budget_exhausted: bool,
}

/// Runs the planned sessions, up to `review.parallel_sessions` at once; a session that exhausts
/// the budget stops the ones not started (their files are listed as not reviewed). `errors`
/// holds what failed before (answering disputes). With `early`, each part's findings are
/// published as the part ends, and are not in what this returns.
pub(super) async fn run(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    brief: &Brief,
    open_ids: &[String],
    own_findings: Vec<Finding>,
    errors: Vec<String>,
    early: Option<&EarlyPublisher<'_, '_>>,
) -> Reported {
    // 5. The sessions.
    let plan = &brief.plan;
    let mut reported = Reported {
        findings: own_findings,
        resolutions: BTreeMap::new(),
        record: Record {
            unreviewed: plan.unreviewed.clone(),
            errors,
            ..Record::default()
        },
        unanswered: None,
        reserved: Vec::new(),
    };
    let total = plan.batches.len();
    // Parts at once, up to `review.parallel_sessions`, their results taken in part order. A part
    // that exhausts the shared budget stops the parts not started yet.
    let stopped: std::cell::RefCell<Option<String>> = std::cell::RefCell::new(None);
    let at_once = env.config().review.parallel_sessions.max(1);
    let sessions: Vec<(usize, &Batch, Option<Session>)> =
        futures_util::stream::iter(plan.batches.iter().enumerate())
            .map(|(index, batch)| {
                let stopped = &stopped;
                async move {
                    let call = index + 1;
                    if stopped.borrow().is_some() {
                        return (call, batch, None);
                    }
                    env.progress.event(ProgressEvent::CallStarted {
                        call,
                        of: total,
                        files: batch.files.len(),
                    });
                    let session =
                        run_session(env, request, brief, batch, (call, total), open_ids).await;
                    env.progress.event(ProgressEvent::CallDone {
                        call,
                        findings: session.collected.findings.len(),
                        error: session.error.clone(),
                    });
                    if let Some(early) = early {
                        early.part_done(call, &session.collected.findings).await;
                    }
                    if session.budget_exhausted
                        && let Some(error) = &session.error
                    {
                        stopped.borrow_mut().get_or_insert_with(|| error.clone());
                    }
                    (call, batch, Some(session))
                }
            })
            .buffered(at_once)
            .collect()
            .await;
    let published = match early {
        Some(early) => early.published_ids().await,
        None => Vec::new(),
    };
    reported.reserved = published.iter().map(|(_, id)| id.clone()).collect();
    let stopped = stopped.borrow().clone().unwrap_or_default();
    reported.take(sessions, &plan.unreviewed, &stopped, &published);
    reported
}

impl Reported {
    /// Takes the parts' sessions in part order: a part not started, or stopped by the shared
    /// budget, is listed as not reviewed for the budget that `stopped` it (one error for them
    /// all: one budget ran out, not each part), a part that failed otherwise is listed with its
    /// error, and a finding `published` as its part ended is left out.
    fn take(
        &mut self,
        sessions: Vec<(usize, &Batch, Option<Session>)>,
        plan: &[Unreviewed],
        stopped: &str,
        published: &[(usize, FindingId)],
    ) {
        let total = sessions.len();
        let mut out_of_budget = 0;
        for (call, batch, session) in sessions {
            let Some(session) = session else {
                out_of_budget += 1;
                self.not_reviewed(batch, plan, &format!("not reviewed: {stopped}"));
                continue;
            };
            if session.budget_exhausted && !stopped.is_empty() {
                out_of_budget += 1;
                self.unanswered.get_or_insert_with(|| stopped.to_owned());
                self.not_reviewed(batch, plan, &format!("not reviewed: {stopped}"));
            } else if let Some(error) = &session.error {
                self.unanswered.get_or_insert_with(|| error.clone());
                self.record
                    .errors
                    .push(format!("part {call} of {total}: {error}"));
                let reason = format!("the review of this part stopped: {error}");
                self.not_reviewed(batch, plan, &reason);
            }
            let mut collected = session.collected;
            collected.findings.retain(|f| {
                !published
                    .iter()
                    .any(|(part, id)| *part == call && *id == f.id)
            });
            self.add(collected, (call, total));
        }
        if out_of_budget > 0 {
            self.record.errors.push(format!(
                "{out_of_budget} of {total} part(s) not reviewed: {stopped}"
            ));
        }
    }
}

impl Reported {
    /// Lists `batch`'s files as not reviewed for `reason`, but for the binary files the plan
    /// listed (never shown to the model: its part failing changes nothing). A file the plan
    /// listed for another reason (a line shown cut) was to be shown, and is listed again.
    fn not_reviewed(&mut self, batch: &Batch, plan: &[Unreviewed], reason: &str) {
        for file in &batch.files {
            if plan
                .iter()
                .any(|listed| listed.path == *file && listed.reason == crate::plan::BINARY)
            {
                continue;
            }
            self.record.unreviewed.push(Unreviewed {
                path: file.clone(),
                reason: reason.to_owned(),
            });
        }
    }

    /// Adds what session `call` of `total` collected: its findings, resolutions and pass
    /// summaries, and its unusable reports as dropped.
    fn add(&mut self, collected: Collected, (call, total): (usize, usize)) {
        let Collected {
            findings,
            resolutions: resolved,
            passes: pass_results,
            invalid,
        } = collected;
        if !invalid.is_empty() {
            // Part of the answer could not be read: what it did not say may be in that part.
            self.unanswered.get_or_insert_with(|| {
                format!(
                    "part {call} of {total}: {} report(s) of the model's could not be used",
                    invalid.len()
                )
            });
        }
        for (position, problem) in invalid.into_iter().enumerate() {
            self.record.dropped.push(DroppedFinding {
                stage: ReportStage::Validation,
                id: format!("part-{call}-report-{}", position + 1),
                title: "(unusable report)".to_owned(),
                location: "(model output)".to_owned(),
                reason: problem,
            });
        }
        for pass in pass_results {
            self.record.passes.push(PassSummary {
                call,
                pass: pass.pass_number,
                summary: pass.summary,
                blocking: pass.has_blocking_issues,
            });
        }
        for finding in findings {
            self.add_finding(finding);
        }
        for (id, reason) in resolved {
            if tools::says_why(&reason, &id) {
                self.resolutions.insert(id, reason);
            } else {
                // Not a resolution: the recheck settles the finding as if the model had not
                // mentioned it (resolved with the commit that changed its code, or kept open).
                self.record.changes.push(StageChange {
                    stage: ReportStage::Validation,
                    id,
                    note: format!(
                        "the model said it is resolved but gave no reason ({:?}): not taken",
                        reason.trim()
                    ),
                });
            }
        }
    }

    /// Adds a finding, renamed when an earlier session's finding has its id: ids chosen by the
    /// model may repeat across sessions for different problems.
    fn add_finding(&mut self, mut finding: Finding) {
        let base = finding.id.clone();
        let mut n = 2;
        while self.findings.iter().any(|f| f.id == finding.id)
            || self.reserved.contains(&finding.id)
        {
            finding.id = base.with_suffix(n);
            n += 1;
        }
        if finding.id != base {
            self.record.changes.push(StageChange {
                stage: ReportStage::Reported,
                id: finding.id.as_str().to_owned(),
                note: format!("renamed from {base}: an earlier part of this review used that id"),
            });
        }
        self.findings.push(finding);
    }
}

/// One model session on one batch of the change: the four passes with tools, or one structured
/// answer.
async fn run_session(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    brief: &Brief,
    batch: &Batch,
    (call, total): (usize, usize),
    open_ids: &[String],
) -> Session {
    let mut session = Session {
        collected: Collected::default(),
        error: None,
        budget_exhausted: false,
    };
    let workspace = match Workspace::new(&request.workspace) {
        Ok(workspace) => workspace,
        Err(error) => {
            session.error = Some(error.to_string());
            return session;
        }
    };
    let mut sandbox = sandbox_settings(env.config(), &request.workspace, Policy::ReadOnly);
    sandbox.git = request.git_mount.clone();
    let agent = Agent::new(
        env.provider.clone(),
        ToolContext::new(workspace, sandbox),
        &env.runs_dir,
    );
    let shared = Arc::new(Mutex::new(Collected::default()));
    let task = if brief.questions {
        let question = super::questions::question(brief, request, batch);
        one_answer_task(brief, question, super::questions::schema(batch, open_ids))
    } else {
        let scope = part_scope(brief, (call, total));
        let change = prompt::change(&request.description, &scope, &batch.text);
        if brief.tools_mode {
            let capabilities = env.provider.capabilities();
            let views = PassViews::of(batch, open_ids, capabilities, |text| {
                prompt::change(&request.description, &scope, text)
            });
            let shown = Shown { change, views };
            tools_task(env, brief, shown, (call, total), open_ids, &shared)
        } else {
            one_answer_task(brief, change, structured_schema())
        }
    };
    let run = agent.run(task).await;
    if let Ok(mut shared) = shared.lock() {
        session.collected = std::mem::take(&mut *shared);
    }
    let outcome = match run.outcome {
        Ok(Outcome::Structured(value)) if brief.questions => {
            Ok(Outcome::Structured(super::questions::read(value, batch)))
        }
        other => other,
    };
    read_outcome(outcome, &run.transcript, open_ids, &mut session);
    if let Some(note) = run.salvaged {
        // Said where the passes are: what the answer holds is all the model said in time.
        session.collected.passes.push(tools::PassResults {
            pass_number: 0,
            summary: note,
            has_blocking_issues: false,
        });
    }
    session
}

/// What the session's prompt says first about the part it shows: the review's preface, and
/// which part of how many it is when the change is reviewed in parts.
fn part_scope(brief: &Brief, (call, total): (usize, usize)) -> String {
    let scope = if total > 1 {
        // The part's files are the ones shown below; naming them again costs tokens.
        format!(
            "This is part {call} of {total} of the change. The other parts are reviewed \
             separately; you may still read any file."
        )
    } else {
        String::new()
    };
    [brief.preface.trim(), scope.as_str()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The task of a session with tools: the four passes, each submitted, the findings and
/// resolutions reported through tools into `shared`.
fn tools_task(
    env: &LoopEnv<'_>,
    brief: &Brief,
    shown: Shown,
    (call, total): (usize, usize),
    open_ids: &[String],
    shared: &Arc<Mutex<Collected>>,
) -> Task {
    let mut extra_tools = vec![typed(ReportFinding {
        collected: shared.clone(),
        progress: env.progress.clone(),
        batch: call,
    })];
    // A review with no open finding to ask about (a first review) does not pay in every
    // request for a tool that could resolve none.
    let resolving = !open_ids.is_empty();
    if resolving {
        extra_tools.push(typed(ResolveFinding {
            collected: shared.clone(),
            open_ids: open_ids.to_vec(),
        }));
    }
    extra_tools.push(typed(SubmitPass {
        collected: shared.clone(),
        progress: env.progress.clone(),
        batch: call,
        passes: 4,
    }));
    if let Some(web) = &brief.web {
        extra_tools.push(typed(web::WebFetch { web: web.clone() }));
        if web.can_search() {
            extra_tools.push(typed(web::WebSearch { web: web.clone() }));
        }
    }
    // Every part gets its four passes at once (a part is planned to fit the model's context
    // with its answer): the model may run them in one turn instead of being sent the part
    // again for each, and one that runs a pass per turn is asked for the rest by the
    // submissions' answers, the conversation only growing at its end (its prefix cached).
    let passes = prompt::passes(resolving);
    let first = format!(
        "{}\n\n{}\n{}",
        shown.change,
        prompt::PASSES_TOGETHER,
        passes.join("\n")
    );
    Task {
        name: "review".to_owned(),
        system: brief.system.clone(),
        messages: vec![Message::user(first)],
        toolset: Some(Toolset::Read),
        extra_tools,
        submit_tool: Some(SUBMIT_PASS.to_owned()),
        follow_ups: (2..=prompt::PASSES.len())
            .map(|pass| prompt::fill(prompt::PASS_NEXT, &[("pass", &pass.to_string())]))
            .collect(),
        // A model that runs a pass per turn is asked the passes it left all at once, each
        // shown what it judges (see `passes_alone`).
        stages: Stages::UpFrontThenAtOnce,
        open_stage: Some(passes_alone(shared, shown.views, passes)),
        answer_schema: None,
        // Each session gets its share of the run's turn budget, so the first parts of a
        // large change cannot use it all; at least enough for the four passes and a look.
        max_turns: (env.config().budgets.max_turns / u32::try_from(total).unwrap_or(1).max(1))
            .max(6),
        max_tokens: Some(brief.output_tokens),
    }
}

/// A later pass is shown a part without the files it does not judge only when that leaves out
/// at least this many tokens: below it, a copy of the conversation so far costs about as much
/// and keeps what the model read and said in the passes before.
const MIN_LEFT_OUT_TOKENS: u64 = 1_000;

/// The change's prompt as a session shows it: whole, and as passes 2 and 3 are shown it when
/// they are asked on their own.
struct Shown {
    change: String,
    views: PassViews,
}

/// The change's prompt for pass 2 (the change's impact: the source and configuration) and pass
/// 3 (security and rules: the tests too, which run where CI's secrets are, and keys and
/// certificates), with the paths of the files each leaves out; `None` where that would not
/// leave out enough to be worth it.
#[derive(Default)]
struct PassViews {
    impact: Option<(String, Vec<String>)>,
    security: Option<(String, Vec<String>)>,
}

impl PassViews {
    /// The views of `batch`, its text made the change's prompt by `change`. None while open
    /// findings are asked about (whether one is resolved may show in any file), nor for a
    /// provider whose cache would not serve a view ([`Capabilities::cache_at_breakpoints`]).
    fn of(
        batch: &Batch,
        open_ids: &[String],
        capabilities: Capabilities,
        change: impl Fn(&str) -> String,
    ) -> PassViews {
        if !open_ids.is_empty() || capabilities.cache_at_breakpoints {
            return PassViews::default();
        }
        let view = |least| {
            batch
                .view(least)
                .filter(|view| view.saved_tokens >= MIN_LEFT_OUT_TOKENS)
                .map(|view| (change(&view.text), view.left_out))
        };
        PassViews {
            impact: view(Importance::Config),
            security: view(Importance::Data),
        }
    }
}

/// Opens the passes a model left, when they are asked at once, in conversations of their own
/// where that costs less than a copy of the conversation so far: passes 2 and 3 on the part as
/// they are shown it ([`PassViews`]) with the findings reported so far, and the consolidation,
/// which judges findings, not the change, on the findings alone.
fn passes_alone(
    shared: &Arc<Mutex<Collected>>,
    views: PassViews,
    passes: Vec<String>,
) -> OpenStage {
    let shared = shared.clone();
    Arc::new(move |stage| {
        let view = match stage {
            2 => Some(views.impact.as_ref()?),
            3 => Some(views.security.as_ref()?),
            _ if stage == prompt::PASSES.len() => None,
            _ => return None,
        };
        let reports: Vec<serde_json::Value> = (shared.lock().ok()?.findings.iter())
            .filter_map(|f| serde_json::to_value(ReportedFinding::from(f)).ok())
            .collect();
        let text = match view {
            Some((change, left_out)) => {
                let pass = passes.get(stage - 1)?;
                prompt::pass_alone(change, left_out, &reports, (stage, pass))
            }
            None => prompt::consolidation_alone(&reports),
        };
        Some(vec![Message::user(text)])
    })
}

/// The task of a session without tools: one answer to `message` in the JSON shape `schema` (the
/// review's, or a small model's question's).
fn one_answer_task(brief: &Brief, message: String, schema: serde_json::Value) -> Task {
    Task {
        answer_schema: Some(JsonSchemaFormat {
            name: "review".to_owned(),
            schema,
        }),
        max_tokens: Some(brief.output_tokens),
        ..Task::new("review", brief.system.clone(), Message::user(message))
    }
}

/// Reads how the session ended into `session`: a structured answer's findings, or why the
/// session failed (the budget spent, passes left unsubmitted, a model error).
fn read_outcome(
    outcome: Result<Outcome, bugloop_agent::AgentError>,
    transcript: &Path,
    open_ids: &[String],
    session: &mut Session,
) {
    match outcome {
        Ok(Outcome::Structured(value)) => {
            read_structured(value, open_ids, &mut session.collected);
        }
        Ok(Outcome::Submitted(_)) => {}
        Ok(Outcome::Answer(_)) => {
            let done = session.collected.passes.len();
            if done < 4 {
                session.error = Some(format!(
                    "the model stopped after {done} of 4 passes without submitting the rest"
                ));
            }
        }
        Err(error) => {
            session.budget_exhausted =
                matches!(error, bugloop_agent::AgentError::Model(LlmError::Budget(_)));
            // Published on the change: the kind of failure; the whole error is in the run.
            session.error = Some(format!(
                "{} ({})",
                error.public(),
                crate::run_reference(transcript)
            ));
        }
    }
}

/// Reads the tool-less answer; unusable entries are kept as reasons, not lost.
fn read_structured(value: serde_json::Value, open_ids: &[String], collected: &mut Collected) {
    let answer: StructuredAnswer = match serde_json::from_value(value) {
        Ok(answer) => answer,
        Err(error) => {
            collected.invalid.push(format!(
                "the answer does not have the review's shape: {error}"
            ));
            return;
        }
    };
    for (index, raw) in answer.findings.into_iter().enumerate() {
        let parsed = serde_json::from_value::<ReportedFinding>(raw)
            .map_err(|e| e.to_string())
            .and_then(accept);
        match parsed {
            Ok(finding) => {
                collected.add(finding);
            }
            Err(error) => collected
                .invalid
                .push(format!("finding {} of the answer: {error}", index + 1)),
        }
    }
    for (index, raw) in answer.resolved.into_iter().enumerate() {
        match serde_json::from_value::<tools::Resolution>(raw) {
            Ok(resolution) if open_ids.iter().any(|id| id == &resolution.id) => {
                collected
                    .resolutions
                    .insert(resolution.id, resolution.reason);
            }
            Ok(resolution) => collected.invalid.push(format!(
                "resolved entry {}: {:?} is not an open previous finding",
                index + 1,
                resolution.id
            )),
            Err(error) => collected
                .invalid
                .push(format!("resolved entry {}: {error}", index + 1)),
        }
    }
    if !answer.summary.trim().is_empty() {
        collected.passes.push(tools::PassResults {
            pass_number: 0,
            summary: answer.summary,
            has_blocking_issues: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_not_reviewed_lists_every_file_it_was_to_show() {
        let mut reported = Reported {
            findings: Vec::new(),
            resolutions: BTreeMap::new(),
            record: Record::default(),
            unanswered: None,
            reserved: Vec::new(),
        };
        let batch = Batch {
            files: vec!["logo.png".to_owned(), "src/evil.py".to_owned()],
            ..Batch::default()
        };
        let listed = |path: &str, reason: &str| Unreviewed {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        // The plan listed both: the image as never shown, the module for a line shown cut.
        let plan = [
            listed("logo.png", crate::plan::BINARY),
            listed(
                "src/evil.py",
                "1 added line(s) over 400 characters, shown cut",
            ),
        ];
        reported.not_reviewed(&batch, &plan, "not reviewed: the budget is spent");
        assert_eq!(
            reported.record.unreviewed,
            [listed("src/evil.py", "not reviewed: the budget is spent")]
        );
    }
}
