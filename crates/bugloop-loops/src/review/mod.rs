//! The review loop (bugbot detection + the multi-pass reviewer): load the review state from the
//! forge's conversation, plan the model calls, run the four passes per call (or one structured
//! answer for models without tools), ground and filter what the model reported, publish, and
//! report.

pub mod tools;
pub mod web;

use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bugloop_agent::{Agent, Outcome, Task};
use bugloop_config::ConfigError;
use bugloop_diff::{Diff, Side};
use bugloop_domain::filter::{
    self, ExistingFinding, FilterOutcome, Stage, StageReport, run_pipeline,
};
use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding::{self, Head};
use bugloop_domain::thread::{Comment, ReviewState, ThreadStatus, reconstruct};
use bugloop_forge::{ChangeKey, Forge, ForgeError, LineAnchor, Upsert};
use bugloop_llm::{JsonSchemaFormat, LlmError, Message, Provider};
use bugloop_report::dispute::DisputeSummary;
use bugloop_report::review::{
    ChangeInfo, CommentAction, DroppedFinding, OverflowInfo, PassSummary, Placement,
    PublishedFinding, REPORT_VERSION, ReportStage, ResolvedFinding, ReviewReport, SensitivityInfo,
    StageChange, StageCount, TrackedFinding, Unreviewed, UsageInfo,
};
use bugloop_report::summary::{SUMMARY_TAG, comment_body as summary_body};
use bugloop_sandbox::Policy;
use bugloop_tools::{ToolContext, Toolset, Workspace, typed};

use crate::context::{ContextReader, read_rules, sensitivity};
use crate::env::LoopEnv;
use crate::plan::{Batch, estimate_tokens, plan};
use crate::prompt;
use crate::publish::{
    OVERFLOW_TAG, find_tagged, finding_body, overflow_body, overflow_cleared_body,
};
use crate::{ProgressEvent, sandbox_settings};

use self::tools::{
    Collected, ReportFinding, ResolveFinding, SUBMIT_PASS, StructuredAnswer, SubmitPass, accept,
    structured_schema,
};

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error(transparent)]
    Forge(#[from] ForgeError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the review workspace {path}: {message}")]
    Workspace { path: PathBuf, message: String },
    #[error(transparent)]
    Web(#[from] web::WebError),
}

/// The change to review and where its head is checked out.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    pub change: ChangeKey,
    pub description: String,
    pub base: String,
    /// The head commit, or `index` / `working-tree`; line comments are anchored to it.
    pub head: String,
    pub diff: Diff,
    /// The code at head (a worktree or the repository itself).
    pub workspace: PathBuf,
    /// The sanitized git directory sandboxed commands see in the workspace (none: `.git` hidden).
    pub git_mount: Option<bugloop_sandbox::GitMount>,
    /// Publish to the forge (false: a dry run that only reports).
    pub publish: bool,
    /// Ignore the conversation: no previous findings, no dedup against them, no disputes (the
    /// converge loop's audits start from scratch every loop).
    pub clean_room: bool,
    /// What this reviewer looks at first (a converge auditor's focus, markdown), added to the
    /// system prompt.
    pub focus: Option<String>,
}

/// Below this many tokens of context a model gets the compact prompt.
const SMALL_CONTEXT: u32 = 16_000;
/// Output tokens per call in a tools session.
const TOOLS_MAX_OUTPUT: u32 = 4_096;

/// The code at head, for grounding: files are read once, only inside the workspace. Without a
/// diff (the converge validator) no line counts as shown in one.
pub(crate) struct HeadTree<'a> {
    texts: HashMap<String, Option<String>>,
    diff: Option<&'a Diff>,
}

impl<'a> HeadTree<'a> {
    pub(crate) fn load(
        root: &Path,
        diff: Option<&'a Diff>,
        paths: impl Iterator<Item = String>,
    ) -> Self {
        let mut texts = HashMap::new();
        for path in paths {
            if texts.contains_key(&path) {
                continue;
            }
            let text = crate::context::read_inside(root, &path);
            texts.insert(path, text);
        }
        HeadTree { texts, diff }
    }

    fn line(&self, path: &str, line: u32) -> Option<String> {
        let text = self.texts.get(path)?.as_deref()?;
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        text.lines().nth(index).map(|l| l.trim_end().to_owned())
    }
}

impl Head for HeadTree<'_> {
    fn text(&self, path: &str) -> Option<&str> {
        self.texts.get(path)?.as_deref()
    }

    fn in_diff(&self, path: &str, line: u32) -> Option<bool> {
        self.diff?
            .file(path)
            .map(|file| file.contains_line(Side::Right, line))
    }
}

/// One model session's result.
struct Session {
    collected: Collected,
    error: Option<String>,
    budget_exhausted: bool,
}

fn existing_of(state: &ReviewState) -> Vec<ExistingFinding> {
    state
        .threads
        .iter()
        .filter_map(|thread| {
            let id = thread.finding_id.clone()?;
            let extra = thread.assessment.as_ref().map(|a| &a.extra);
            let file = thread.file.clone().or_else(|| {
                extra
                    .and_then(|e| e.get("file"))
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            });
            let line = thread.line.or_else(|| {
                extra
                    .and_then(|e| e.get("line"))
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|l| u32::try_from(l).ok())
            });
            let end_line = extra
                .and_then(|e| e.get("end_line"))
                .and_then(serde_json::Value::as_u64)
                .and_then(|l| u32::try_from(l).ok());
            let evidence = extra
                .and_then(|e| e.get("evidence"))
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            Some(ExistingFinding {
                id,
                title: thread.title.clone(),
                description: thread
                    .assessment
                    .as_ref()
                    .map_or_else(|| thread.body.clone(), |a| a.assessment.clone()),
                file,
                line,
                end_line,
                evidence,
                status: thread.status,
            })
        })
        .collect()
}

fn tracked_of(state: &ReviewState) -> Vec<TrackedFinding> {
    let existing = existing_of(state);
    state
        .threads
        .iter()
        .filter_map(|thread| {
            let id = thread.finding_id.as_ref()?;
            let place = existing.iter().find(|e| &e.id == id);
            Some(TrackedFinding {
                id: id.as_str().to_owned(),
                title: thread.title.clone(),
                status: thread.status,
                score: thread.score.map(|s| s.get()),
                file: place.and_then(|p| p.file.clone()),
                line: place.and_then(|p| p.line),
                comment: thread.id.clone(),
            })
        })
        .collect()
}

/// Runs one review.
pub async fn review(
    env: &LoopEnv<'_>,
    request: ReviewRequest,
) -> Result<ReviewReport, ReviewError> {
    review_with(env, request, Vec::new()).await
}

/// Runs one review, adding findings of bugloop's own (not the model's) to what the model
/// reports, such as the branch's ignored changes to trusted configuration
/// (`bugloop_config::ignored_settings_finding`). They are grounded, filtered and published like
/// the model's.
pub async fn review_with(
    env: &LoopEnv<'_>,
    request: ReviewRequest,
    own_findings: Vec<Finding>,
) -> Result<ReviewReport, ReviewError> {
    let started = Instant::now();
    let config = env.config();
    let mut dispute_error = None;
    let markers = &env.settings.markers;

    // 0. Developers' replies since the last run are answered first (pr-reviewer-design.md 3.2).
    let mut disputes = Vec::new();
    // Disputes read the code under review: the git of the review's workspace.
    if request.publish
        && !request.clean_room
        && let Ok(git) = bugloop_git::Git::open(&request.workspace)
    {
        let act = LoopEnv {
            git: &git,
            ..env.clone()
        };
        match crate::disputes::settle_all_disputes(&act, &request.change).await {
            Ok(outcomes) => {
                disputes.extend(outcomes.into_iter().map(DisputeSummary::from));
            }
            Err(error) => dispute_error = Some(format!("answering developer replies: {error}")),
        }
    }

    // 1. The review state, from the conversation.
    let comments = if request.clean_room {
        Vec::new()
    } else {
        env.forge.comments(&request.change).await?
    };
    let state = reconstruct(&comments, markers);
    let existing = existing_of(&state);
    let open: Vec<_> = state.unresolved().collect();
    let open_ids: Vec<String> = open
        .iter()
        .filter_map(|t| t.finding_id.as_ref().map(|id| id.as_str().to_owned()))
        .collect();

    // 2. What the reviewer is told besides the change.
    let mut context_reader = ContextReader::new(&request.workspace);
    let rules = read_rules(&mut context_reader);
    let verdict = sensitivity(&mut context_reader, config.review.sensitive_data);
    let refused_context = context_reader.into_refused();
    let mut settings = bugloop_config::filter_settings_for(config, verdict.sensitive)?;
    // The comment limit is per change, as on a pull request: open findings count against it, so
    // re-runs never add comments beyond it.
    let comment_limit = settings.comment_limit;
    settings.comment_limit = comment_limit.saturating_sub(open_ids.len());

    // 3. Model calls within the budget.
    let capabilities = env.provider.capabilities();
    let tools_mode = capabilities.tools;
    let compact = capabilities
        .context_tokens
        .is_some_and(|context| context < SMALL_CONTEXT);
    let previous_chars = if compact { 2_000 } else { 16_000 };
    let rules_text = if compact && !rules.is_empty() {
        // A small model cannot take long rule files; give it the first of them, cut.
        let (text, _) = crate::context::cut(&prompt::rules_block(&rules), 1_200);
        text
    } else {
        prompt::rules_block(&rules)
    };
    let mut system = prompt::system(&prompt::SystemInputs {
        compact,
        tools: tools_mode,
        threshold: settings.threshold,
        sensitivity: &verdict,
        promotion: settings.security_promotion,
        rules: &rules_text,
        previous: &prompt::previous_block(&open, previous_chars),
    });
    if let Some(focus) = &request.focus {
        system.push_str("\n\n");
        system.push_str(focus.trim());
        system.push('\n');
    }
    // Web access needs tools; a model answering in one structured reply cannot use it.
    let web = if tools_mode {
        web::WebAccess::new(&config.review)?
    } else {
        None
    };
    let system = match &web {
        Some(web) => format!(
            "{system}\n\n{}",
            prompt::fill(
                web::PROMPT,
                &[
                    (
                        "hosts",
                        &if web.allowed_hosts().is_empty() {
                            "none (only search results can be seen)".to_owned()
                        } else {
                            web.allowed_hosts().join(", ")
                        },
                    ),
                    (
                        "search",
                        if web.can_search() {
                            "`web_search(query)` searches the web and returns titles, URLs and \
                             snippets."
                        } else {
                            "There is no web search; fetch documentation pages directly."
                        },
                    ),
                ],
            )
        ),
        None => system,
    };
    let output_tokens = match capabilities.context_tokens {
        // Two findings' worth: small models are slow under a grammar and rarely find more.
        Some(context) if !tools_mode => (context / 5).clamp(256, 768),
        _ => TOOLS_MAX_OUTPUT,
    };
    let budget = match capabilities.context_tokens {
        Some(context) => {
            let room = u64::from(context)
                .saturating_sub(estimate_tokens(&system))
                .saturating_sub(u64::from(output_tokens))
                .saturating_sub(300);
            room.min(config.review.max_tokens_per_call)
        }
        None => config.review.max_tokens_per_call,
    };
    let plan = plan(&request.diff, &settings.ignore, budget);
    env.progress.event(ProgressEvent::Planned {
        calls: plan.batches.len(),
        files: plan.files,
        tokens: plan.batches.iter().map(|b| b.tokens).sum(),
    });

    // 4. The sessions.
    let mut unreviewed = plan.unreviewed.clone();
    let mut errors: Vec<String> = dispute_error.into_iter().collect();
    let mut passes = Vec::new();
    let mut reported: Vec<Finding> = own_findings;
    let mut dropped = Vec::new();
    let mut changes: Vec<StageChange> = Vec::new();
    let mut resolutions: BTreeMap<String, String> = BTreeMap::new();
    let mut stopped: Option<String> = None;
    let total = plan.batches.len();
    for (index, batch) in plan.batches.iter().enumerate() {
        let call = index + 1;
        if let Some(reason) = &stopped {
            for file in &batch.files {
                unreviewed.push(Unreviewed {
                    path: file.clone(),
                    reason: format!("not reviewed: {reason}"),
                });
            }
            continue;
        }
        env.progress.event(ProgressEvent::CallStarted {
            call,
            of: total,
            files: batch.files.len(),
        });
        let session = run_session(
            env,
            &request,
            &system,
            batch,
            (call, total),
            tools_mode,
            compact,
            &open_ids,
            output_tokens,
            web.as_ref(),
        )
        .await;
        env.progress.event(ProgressEvent::CallDone {
            call,
            findings: session.collected.findings.len(),
            error: session.error.clone(),
        });
        if let Some(error) = &session.error {
            errors.push(format!("part {call} of {total}: {error}"));
            for file in &batch.files {
                unreviewed.push(Unreviewed {
                    path: file.clone(),
                    reason: format!("the review of this part stopped: {error}"),
                });
            }
            if session.budget_exhausted {
                stopped = Some(error.clone());
            }
        }
        let Collected {
            findings,
            resolutions: resolved,
            passes: pass_results,
            invalid,
        } = session.collected;
        for (position, problem) in invalid.into_iter().enumerate() {
            dropped.push(DroppedFinding {
                stage: ReportStage::Validation,
                id: format!("part-{call}-report-{}", position + 1),
                title: "(unusable report)".to_owned(),
                location: "(model output)".to_owned(),
                reason: problem,
            });
        }
        for pass in pass_results {
            passes.push(PassSummary {
                call,
                pass: pass.pass_number,
                summary: pass.summary,
                blocking: pass.has_blocking_issues,
            });
        }
        for mut finding in findings {
            // Ids chosen by the model may repeat across sessions for different problems.
            let base = finding.id.clone();
            let mut n = 2;
            while reported.iter().any(|f| f.id == finding.id) {
                finding.id = base.with_suffix(n);
                n += 1;
            }
            if finding.id != base {
                changes.push(StageChange {
                    stage: ReportStage::Reported,
                    id: finding.id.as_str().to_owned(),
                    note: format!(
                        "renamed from {base}: an earlier part of this review used that id"
                    ),
                });
            }
            reported.push(finding);
        }
        resolutions.extend(resolved);
    }
    let reported_count = reported.len();

    // 5. Grounding and the filter pipeline (path safety first: nothing outside the repository is
    // read to ground a finding).
    let mut safety_stages = Vec::new();
    let safe = filter::path_safety(reported, &mut safety_stages);
    let open_files: Vec<(String, String)> = existing
        .iter()
        .filter(|e| open_ids.iter().any(|id| id == e.id.as_str()))
        .filter_map(|e| Some((e.id.as_str().to_owned(), e.file.clone()?)))
        .collect();
    let head = HeadTree::load(
        &request.workspace,
        Some(&request.diff),
        safe.iter()
            .filter_map(|f| f.file.clone())
            .chain(open_files.iter().map(|(_, file)| file.clone())),
    );
    // An open finding whose file no longer exists at head is resolved without asking the model:
    // the code it was about is gone.
    for (id, file) in &open_files {
        let on_disk = bugloop_domain::paths::normalize_finding_path(file)
            .ok()
            .and_then(|safe| bugloop_domain::paths::path_bytes(&safe));
        if let Some(name) = on_disk
            && !request
                .workspace
                .join(std::ffi::OsStr::from_bytes(&name))
                .exists()
            && head.text(file).is_none()
            && !resolutions.contains_key(id)
        {
            resolutions.insert(id.clone(), format!("{file} was deleted"));
        }
    }
    let grounded = grounding::ground(safe, &head);
    let grounding_stage = StageCount {
        stage: ReportStage::Grounding,
        input: grounded.kept.len() + grounded.dropped.len(),
        output: grounded.kept.len(),
    };
    for d in &grounded.dropped {
        dropped.push(DroppedFinding {
            stage: ReportStage::Grounding,
            id: d.id.as_str().to_owned(),
            title: d.title.clone(),
            location: d.location.clone(),
            reason: d.reason.clone(),
        });
    }
    let mut notes: HashMap<FindingId, String> = HashMap::new();
    let mut grounding_changes = Vec::new();
    let findings: Vec<Finding> = grounded
        .kept
        .into_iter()
        .map(|g| {
            if let Some(note) = g.note {
                grounding_changes.push(StageChange {
                    stage: ReportStage::Grounding,
                    id: g.finding.id.as_str().to_owned(),
                    note: note.clone(),
                });
                notes.insert(g.finding.id.clone(), note);
            }
            g.finding
        })
        .collect();
    let FilterOutcome {
        publish,
        rediscovered,
        overflow,
        stages,
    } = run_pipeline(findings, &existing, &settings);
    let mut stage_reports: Vec<StageReport> = safety_stages;
    stage_reports.extend(stages.into_iter().filter(|s| s.stage != Stage::PathSafety));
    let mut stage_counts = vec![StageCount {
        stage: ReportStage::Reported,
        input: reported_count,
        output: reported_count,
    }];
    for report in &stage_reports {
        let name = ReportStage::from(report.stage);
        stage_counts.push(StageCount {
            stage: name,
            input: report.input,
            output: report.output,
        });
        for c in &report.changed {
            changes.push(StageChange {
                stage: name,
                id: c.id.as_str().to_owned(),
                note: c.note.clone(),
            });
        }
        if report.stage == Stage::PathSafety {
            // Grounding runs right after path safety.
            stage_counts.push(grounding_stage.clone());
            changes.append(&mut grounding_changes);
        }
        for d in &report.dropped {
            dropped.push(DroppedFinding {
                stage: name,
                id: d.id.as_str().to_owned(),
                title: d.title.clone(),
                location: d.location.clone(),
                reason: d.reason.clone(),
            });
        }
    }

    // 6. Publishing.
    let placement_of = |finding: &Finding| match (&finding.file, finding.line) {
        (Some(file), Some(line)) if head.in_diff(file, line) == Some(true) => Placement::Line,
        _ => Placement::Summary,
    };
    let by_finding = state.by_finding();
    let mut published = Vec::new();
    for finding in publish {
        let placement = placement_of(&finding);
        let action = if request.publish {
            let body = finding_body(&finding, markers, false);
            let anchor = anchor_for(&finding, placement, &request.head);
            let upsert = env
                .forge
                .upsert_by_marker(
                    &request.change,
                    markers,
                    &finding.id,
                    &body,
                    anchor.as_ref(),
                )
                .await?;
            match upsert {
                Upsert::Added => CommentAction::Added,
                Upsert::Updated => CommentAction::Updated,
                Upsert::Unchanged => CommentAction::Unchanged,
            }
        } else {
            CommentAction::NotPublished
        };
        published.push(published_finding(
            &finding, placement, action, None, &head, &notes,
        ));
    }
    let mut rediscovered_ids = Vec::new();
    for again in rediscovered {
        let mut finding = again.finding;
        let reported_as = finding.id.as_str().to_owned();
        finding.id = again.existing.clone();
        rediscovered_ids.push(again.existing.clone());
        let placement = by_finding
            .get(&again.existing)
            .map_or(Placement::Summary, |t| {
                if t.kind == bugloop_domain::thread::CommentKind::Review {
                    Placement::Line
                } else {
                    Placement::Summary
                }
            });
        let action = match (request.publish, by_finding.get(&again.existing)) {
            (true, Some(thread)) => {
                let body = finding_body(&finding, markers, false);
                match comments.iter().find(|c| c.id == thread.id) {
                    Some(root) if root.body == body => CommentAction::Unchanged,
                    Some(root) => {
                        env.forge
                            .update_comment(&request.change, root, &body)
                            .await?;
                        CommentAction::Updated
                    }
                    None => CommentAction::Unchanged,
                }
            }
            _ => CommentAction::NotPublished,
        };
        published.push(published_finding(
            &finding,
            placement,
            action,
            Some(reported_as),
            &head,
            &notes,
        ));
    }
    published.sort_by_key(|p| std::cmp::Reverse(p.finding.score));

    let mut resolved = Vec::new();
    for (id, reason) in &resolutions {
        let id = FindingId::new(id);
        // A finding reported again in this same run is evidently not fixed.
        if rediscovered_ids.contains(&id) {
            continue;
        }
        let Some(thread) = by_finding.get(&id) else {
            continue;
        };
        if thread.status == ThreadStatus::Resolved {
            continue;
        }
        if request.publish
            && let Some(root) = comments.iter().find(|c| c.id == thread.id)
        {
            crate::publish::resolve_thread(env.forge, &request.change, markers, root, &id, reason)
                .await?;
        }
        resolved.push(ResolvedFinding {
            id: id.as_str().to_owned(),
            title: thread.title.clone(),
            reason: reason.clone(),
        });
    }

    let overflow_info = OverflowInfo {
        count: overflow.count,
        titles: overflow.titles.clone(),
    };
    let overflow_text = if overflow.count > 0 {
        Some(overflow_body(
            overflow.count,
            &overflow.titles,
            comment_limit,
        ))
    } else {
        // A list left by an earlier run would otherwise claim findings that now have comments.
        find_tagged(&comments, OVERFLOW_TAG).map(|_| overflow_cleared_body(comment_limit))
    };
    if request.publish
        && let Some(body) = overflow_text
    {
        upsert_tagged(env.forge, &request.change, &comments, OVERFLOW_TAG, &body).await?;
    }

    // 7. The report, and the summary comment made from it.
    let tracked = if request.publish {
        let after = env.forge.comments(&request.change).await?;
        tracked_of(&reconstruct(&after, markers))
    } else {
        tracked_of(&state)
    };
    let spent = env.meter.summary();
    let (additions, deletions) = request.diff.stats();
    let mut report = ReviewReport {
        version: REPORT_VERSION,
        change: ChangeInfo {
            key: request.change.0.clone(),
            description: request.description.clone(),
            base: request.base.clone(),
            head: request.head.clone(),
            files: request.diff.files.len(),
            additions,
            deletions,
        },
        model: env.provider.name().to_owned(),
        findings: published,
        resolved,
        tracked,
        dropped,
        changes,
        stages: stage_counts,
        overflow: overflow_info,
        conversation_problems: state
            .problems
            .iter()
            .map(|p| format!("comment {}: {}", p.comment_id, p.message))
            .chain((state.ignored_untrusted > 0).then(|| {
                format!(
                    "{} comment(s) by others carried bugloop markers or state blocks and were ignored",
                    state.ignored_untrusted
                )
            }))
            .collect(),
        disputes,
        refused_context,
        complete: errors.is_empty(),
        unreviewed,
        summarized: plan.summarized.clone(),
        ignored: plan.ignored.clone(),
        passes,
        usage: UsageInfo {
            input_tokens: spent.usage.input_tokens,
            cached_input_tokens: spent.usage.cached_input_tokens,
            output_tokens: spent.usage.output_tokens,
            cost_usd: spent.cost_usd,
            model_calls: spent.turns,
            sessions: total,
            seconds: 0.0,
        },
        errors,
        sensitive_data: SensitivityInfo {
            sensitive: verdict.sensitive,
            reason: verdict.reason.clone(),
        },
    };
    report.usage.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    if request.publish {
        env.progress.event(ProgressEvent::Publishing);
        upsert_tagged(
            env.forge,
            &request.change,
            &comments,
            SUMMARY_TAG,
            &summary_body(&report),
        )
        .await?;
    }
    Ok(report)
}

fn anchor_for(finding: &Finding, placement: Placement, head: &str) -> Option<LineAnchor> {
    match (placement, &finding.file, finding.line) {
        (Placement::Line, Some(path), Some(line)) => Some(LineAnchor {
            path: path.clone(),
            line,
            commit: head.to_owned(),
        }),
        _ => None,
    }
}

fn published_finding(
    finding: &Finding,
    placement: Placement,
    action: CommentAction,
    rediscovered_as: Option<String>,
    head: &HeadTree<'_>,
    notes: &HashMap<FindingId, String>,
) -> PublishedFinding {
    let code = match (&finding.file, finding.line) {
        (Some(file), Some(line)) => head.line(file, line),
        _ => None,
    };
    PublishedFinding {
        severity: finding.severity(),
        priority: finding.priority(),
        placement,
        action,
        rediscovered_as,
        code,
        note: notes.get(&finding.id).cloned(),
        finding: finding.clone(),
    }
}

async fn upsert_tagged(
    forge: &dyn Forge,
    change: &ChangeKey,
    comments: &[Comment],
    tag: &str,
    body: &str,
) -> Result<(), ForgeError> {
    match find_tagged(comments, tag) {
        Some(existing) if existing.body == body => Ok(()),
        Some(existing) => forge.update_comment(change, existing, body).await,
        None => forge.add_comment(change, body, None).await.map(|_| ()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_session(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    system: &str,
    batch: &Batch,
    (call, total): (usize, usize),
    tools_mode: bool,
    compact: bool,
    open_ids: &[String],
    output_tokens: u32,
    web: Option<&Arc<web::WebAccess>>,
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
    let scope = if total > 1 {
        format!(
            "This is part {call} of {total} of the change (files: {}). The other parts are \
             reviewed separately; you may still read any file.",
            batch.files.join(", ")
        )
    } else {
        String::new()
    };
    let change = prompt::change(&request.description, &scope, &batch.text);
    let shared = Arc::new(Mutex::new(Collected::default()));
    let task = if tools_mode {
        let mut extra_tools = vec![
            typed(ReportFinding {
                collected: shared.clone(),
                progress: env.progress.clone(),
                batch: call,
            }),
            typed(ResolveFinding {
                collected: shared.clone(),
                open_ids: open_ids.to_vec(),
            }),
            typed(SubmitPass {
                collected: shared.clone(),
                progress: env.progress.clone(),
                batch: call,
                passes: 4,
            }),
        ];
        if let Some(web) = web {
            extra_tools.push(typed(web::WebFetch { web: web.clone() }));
            if web.can_search() {
                extra_tools.push(typed(web::WebSearch { web: web.clone() }));
            }
        }
        Task {
            name: "review".to_owned(),
            system: system.to_owned(),
            messages: vec![Message::user(format!("{change}\n\n{}", prompt::PASSES[0]))],
            toolset: Some(Toolset::Plan),
            extra_tools,
            submit_tool: Some(SUBMIT_PASS.to_owned()),
            follow_ups: prompt::PASSES[1..]
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            answer_schema: None,
            // Each session gets its share of the run's turn budget, so the first parts of a
            // large change cannot use it all; at least enough for the four passes and a look.
            max_turns: (env.config().budgets.max_turns / u32::try_from(total).unwrap_or(1).max(1))
                .max(6),
            max_tokens: Some(output_tokens),
        }
    } else {
        Task {
            name: "review".to_owned(),
            system: system.to_owned(),
            messages: vec![Message::user(change)],
            toolset: None,
            extra_tools: Vec::new(),
            submit_tool: None,
            follow_ups: Vec::new(),
            answer_schema: Some(JsonSchemaFormat {
                name: "review".to_owned(),
                schema: structured_schema(compact.then_some(tools::AnswerBounds {
                    max_findings: usize::try_from(output_tokens / 350).unwrap_or(1).max(1),
                    max_resolved: open_ids.len(),
                })),
            }),
            max_turns: 1,
            max_tokens: Some(output_tokens),
        }
    };
    let run = agent.run(task).await;
    if let Ok(mut shared) = shared.lock() {
        session.collected = std::mem::take(&mut *shared);
    }
    match run.outcome {
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
            session.error = Some(format!(
                "{error} (transcript: {})",
                run.transcript.display()
            ));
        }
    }
    session
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
        let parsed = serde_json::from_value::<tools::ReportedFinding>(raw)
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
    use crate::context::read_inside;

    /// Grounding reads through `read_inside`: a symlink in the repository that leads outside it is
    /// refused (its target is never read), one that stays inside is followed.
    #[test]
    fn read_inside_follows_links_only_inside_the_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "token=hunter2\n").unwrap();
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", root.join("alias.rs")).unwrap();
        std::os::unix::fs::symlink("../src", root.join("src/up")).unwrap();

        assert_eq!(read_inside(root, "leak"), None);
        assert_eq!(read_inside(root, "out/secret"), None);
        assert_eq!(
            read_inside(root, "alias.rs").as_deref(),
            Some("pub fn f() {}\n")
        );
        assert_eq!(
            read_inside(root, "src/up/lib.rs").as_deref(),
            Some("pub fn f() {}\n")
        );
        // A path that is not a file, or leaves the root by itself, is no text either.
        assert_eq!(read_inside(root, "src"), None);
        assert_eq!(read_inside(root, "../secret"), None);
    }
}
