//! Stage 6 of a review: path safety first (nothing outside the repository is read to ground a
//! finding), grounding against the code at head, then the filter pipeline (validation, threshold,
//! dedup against the conversation, the comment limit). Every drop and every change a stage makes
//! to a finding it keeps is recorded for the report.

use std::collections::{BTreeMap, HashMap};

use bugloop_domain::filter::{
    self, ExistingFinding, FilterOutcome, Overflow, Rediscovered, Stage, StageReport, run_pipeline,
};
use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding;
use bugloop_domain::status::ThreadStatus;
use bugloop_report::review::{
    DroppedFinding, RecheckedFinding, ReportStage, ReviewedScope, StageChange, StageCount,
};

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::Conversation;
use super::increment::Shown;
use super::recheck;
use super::sessions::{Record, Reported};
use super::touched::Relocation;
use super::touched::Touch;
use crate::head::HeadTree;

/// What survived the stages, and the record of each.
pub(super) struct Filtered<'a> {
    /// The code at head of every finding's file (for placement and reports).
    pub head: HeadTree<'a>,
    /// New findings to publish, highest score first.
    pub publish: Vec<Finding>,
    /// Findings that are ones the conversation holds.
    pub rediscovered: Vec<Rediscovered>,
    /// Findings over the comment limit.
    pub overflow: Overflow,
    /// What grounding corrected, by finding.
    pub notes: HashMap<FindingId, String>,
    pub stage_counts: Vec<StageCount>,
    /// Open findings resolved: by the model, or because their code is gone.
    pub resolutions: BTreeMap<String, String>,
    /// What became of each open finding whose code changed.
    pub rechecked: Vec<RecheckedFinding>,
    /// Findings that stay open and now point where their code went.
    pub relocations: Vec<Relocation>,
    pub record: Record,
    /// What proving the most severe findings came to (`review.prove`), set after filtering.
    pub proofs: Vec<bugloop_report::review::FindingProof>,
}

/// Grounds and filters what the sessions and the analyzers reported. `early` are the findings
/// already published as their parts ended: they count as the conversation's (a later report
/// of the same problem is that finding) and hold their comments' places under the limit.
pub(super) fn ground_and_filter<'a>(
    request: &'a ReviewRequest,
    conversation: &Conversation,
    brief: &Brief,
    shown: &Shown,
    reported: Reported,
    early: &[Finding],
) -> Filtered<'a> {
    let Reported {
        findings: reported,
        mut resolutions,
        mut record,
        unanswered,
        reserved: _,
    } = reported;
    let reported_count = reported.len();
    let Screened {
        existing,
        head,
        notes,
        safety_stages,
        grounding_stage,
        outcome:
            FilterOutcome {
                mut publish,
                rediscovered,
                overflow,
                stages,
            },
    } = screen(
        request,
        (conversation, shown),
        brief,
        reported,
        early,
        (&mut record.changes, &mut record.dropped),
    );
    let existing = &existing;
    let rediscovered = same_as_early(rediscovered, early, &mut publish, &mut record.dropped);
    let stage_reports = stage_reports(safety_stages, stages, early);
    let stage_counts = record_stages(
        reported_count,
        &stage_reports,
        grounding_stage,
        &mut record.dropped,
        &mut record.changes,
    );
    let (rechecked, mut relocations) = recheck_touched(
        request,
        shown,
        existing,
        (&rediscovered, &record.dropped),
        &mut resolutions,
        unanswered.as_deref(),
    );
    relocations.extend(shown.shifted.iter().cloned());
    Filtered {
        head,
        publish,
        rediscovered,
        overflow,
        notes,
        stage_counts,
        resolutions,
        rechecked,
        relocations,
        record,
        proofs: Vec::new(),
    }
}

/// The stages' reports in order: the path safety checks' (made before grounding), then the
/// filter's. A finding published early is not said to be updated by its repetition (the
/// pipeline's stages would say so).
fn stage_reports(
    safety: Vec<StageReport>,
    mut stages: Vec<StageReport>,
    early: &[Finding],
) -> Vec<StageReport> {
    for stage in &mut stages {
        stage
            .changed
            .retain(|c| !early.iter().any(|e| e.id == c.id));
    }
    let mut reports = safety;
    reports.extend(stages.into_iter().filter(|s| s.stage != Stage::PathSafety));
    reports
}

/// What a part's findings come to when the part ends (its share of [`ground_and_filter`]): the
/// ones to publish at once, with the code at head and grounding's notes. `already` are the
/// findings published for the parts that ended before.
pub(super) fn early<'a>(
    request: &'a ReviewRequest,
    conversation: &Conversation,
    brief: &Brief,
    shown: &Shown,
    findings: Vec<Finding>,
    already: &[Finding],
) -> (Vec<Finding>, HeadTree<'a>, HashMap<FindingId, String>) {
    let screened = screen(
        request,
        (conversation, shown),
        brief,
        findings,
        already,
        (&mut Vec::new(), &mut Vec::new()),
    );
    (screened.outcome.publish, screened.head, screened.notes)
}

/// What grounding and the filter pipeline made of some findings, compared with the
/// conversation's and those published early.
struct Screened<'a> {
    existing: Vec<ExistingFinding>,
    head: HeadTree<'a>,
    notes: HashMap<FindingId, String>,
    safety_stages: Vec<StageReport>,
    grounding_stage: (StageCount, Vec<StageChange>),
    outcome: FilterOutcome,
}

/// Names read back, path safety, grounding against head and the filter pipeline, with the
/// findings published `early` counted as the conversation's and holding their places under the
/// comment limit; what the stages changed and dropped goes to `changes` and `dropped`.
fn screen<'a>(
    request: &'a ReviewRequest,
    (conversation, shown): (&Conversation, &Shown),
    brief: &Brief,
    findings: Vec<Finding>,
    early: &[Finding],
    (changes, dropped): (&mut Vec<StageChange>, &mut Vec<DroppedFinding>),
) -> Screened<'a> {
    let mut existing = existing_findings(conversation, shown);
    existing.extend(early.iter().map(as_existing));
    let reported = read_names_back(request, findings, changes);
    let mut safety_stages = Vec::new();
    let settings = settings_after(request, brief, early.len());
    let safe = filter::path_safety(reported, &settings.known_files, &mut safety_stages);
    let head = load_head(request, &safe, &existing, &conversation.open_ids);
    let Grounding {
        findings,
        notes,
        stage: grounding_stage,
    } = ground_findings(safe, &head, dropped);
    let outcome = run_pipeline(findings, &existing, &settings);
    Screened {
        existing,
        head,
        notes,
        safety_stages,
        grounding_stage,
        outcome,
    }
}

/// The filter's settings with `published` comments already made by this run, and the change's
/// files as names a finding may give as they are.
fn settings_after(
    request: &ReviewRequest,
    brief: &Brief,
    published: usize,
) -> filter::FilterSettings {
    let mut settings = brief.filter.clone();
    settings.comment_limit = settings.comment_limit.saturating_sub(published);
    settings.known_files = request
        .diff
        .files
        .iter()
        .map(|file| file.path().to_owned())
        .collect();
    settings
}

/// A finding published early in this run, as the pipeline compares new ones with.
fn as_existing(finding: &Finding) -> ExistingFinding {
    ExistingFinding {
        id: finding.id.clone(),
        title: finding.title.clone(),
        description: finding.description.clone(),
        file: finding.file.clone(),
        line: finding.line,
        end_line: finding.end_line,
        evidence: finding.evidence.clone(),
        status: ThreadStatus::Pending,
        reopenable: false,
        moved: false,
        tool_rule: finding
            .source
            .as_ref()
            .filter(|source| !source.model)
            .map(|source| (source.tool.clone(), source.rule.clone())),
    }
}

/// Findings the pipeline found to be one published early in this run. A stronger report of it
/// (a higher score, or an analyzer's hit merged into it) updates its comment: it goes to
/// `publish` under the early id, so it is proven and published as any; a suppression the change
/// adds is a finding of its own (a tool's hit is never another's duplicate); the rest are
/// dropped as that finding, whose comment stays as it is.
fn same_as_early(
    rediscovered: Vec<Rediscovered>,
    early: &[Finding],
    publish: &mut Vec<Finding>,
    dropped: &mut Vec<DroppedFinding>,
) -> Vec<Rediscovered> {
    let mut rest = Vec::new();
    for again in rediscovered {
        let Some(first) = early.iter().find(|e| e.id == again.existing) else {
            rest.push(again);
            continue;
        };
        let suppression = again
            .finding
            .source
            .as_ref()
            .is_some_and(|s| s.tool == "bugloop");
        let stronger = again.finding.score > first.score
            || (again.finding.source.is_some() && first.source.is_none());
        if suppression && again.finding.id != first.id {
            publish.push(again.finding);
        } else if stronger {
            let mut finding = again.finding;
            finding.id = first.id.clone();
            finding.score = finding.score.max(first.score);
            publish.push(finding);
        } else {
            dropped.push(DroppedFinding {
                stage: ReportStage::DedupExisting,
                id: again.finding.id.as_str().to_owned(),
                title: again.finding.title.clone(),
                location: again.finding.location(),
                reason: format!(
                    "the same finding as {}, published when its part of the review ended",
                    again.existing
                ),
            });
        }
    }
    rest
}

/// The conversation's findings, each marked moved when its code left its place.
fn existing_findings(conversation: &Conversation, shown: &Shown) -> Vec<ExistingFinding> {
    // A finding whose code left its place (gone, or moved elsewhere) is the same finding
    // wherever the model finds it again; one whose code is still where it was is not.
    conversation
        .existing
        .iter()
        .cloned()
        .map(|mut e| {
            e.moved = shown
                .touched
                .iter()
                .any(|t| t.id == e.id && !matches!(t.what, Touch::Still { moved: false, .. }));
            e
        })
        .collect()
}

/// The code at head of the files of the reported findings and of the open ones.
fn load_head<'a>(
    request: &'a ReviewRequest,
    safe: &[Finding],
    existing: &[ExistingFinding],
    open_ids: &[String],
) -> HeadTree<'a> {
    let open_files = existing
        .iter()
        .filter(|e| open_ids.iter().any(|id| id == e.id.as_str()))
        .filter_map(|e| e.file.clone());
    HeadTree::load(
        &request.workspace,
        Some(&request.diff),
        safe.iter().filter_map(|f| f.file.clone()).chain(open_files),
    )
}

/// The findings grounding kept, with the notes on what it changed, and its stage's record.
struct Grounding {
    findings: Vec<Finding>,
    notes: HashMap<FindingId, String>,
    stage: (StageCount, Vec<StageChange>),
}

/// Grounds the findings against the code at head; the ones it drops go to `dropped`.
fn ground_findings(
    safe: Vec<Finding>,
    head: &HeadTree<'_>,
    dropped: &mut Vec<DroppedFinding>,
) -> Grounding {
    let grounded = grounding::ground(safe, head);
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
    Grounding {
        findings,
        notes,
        stage: (grounding_stage, grounding_changes),
    }
}

/// What came of the findings whose code the change touched, and where they moved.
fn recheck_touched(
    request: &ReviewRequest,
    shown: &Shown,
    existing: &[ExistingFinding],
    (rediscovered, dropped): (&[Rediscovered], &[DroppedFinding]),
    resolutions: &mut BTreeMap<String, String>,
    unanswered: Option<&str>,
) -> (Vec<RecheckedFinding>, Vec<Relocation>) {
    let titles = existing
        .iter()
        .map(|e| (e.id.clone(), e.title.clone()))
        .collect();
    let since = match &shown.scope {
        ReviewedScope::Incremental { since, .. } => Some(bugloop_git::short(since)),
        ReviewedScope::Full { .. } => None,
    };
    recheck::settle(
        &shown.touched,
        &titles,
        (rediscovered, dropped),
        resolutions,
        unanswered,
        (since, &request.head),
    )
}

/// A file name that is not UTF-8, written by the model another way than the diff's (without
/// its quotes, as Latin-1, lossily as the tools list it), is read back as the diff's name.
fn read_names_back(
    request: &ReviewRequest,
    reported: Vec<Finding>,
    changes: &mut Vec<StageChange>,
) -> Vec<Finding> {
    reported
        .into_iter()
        .map(|mut finding| {
            let known = finding.file.as_deref().and_then(|file| {
                bugloop_domain::paths::known_name(
                    file,
                    request.diff.files.iter().map(bugloop_diff::FileDiff::path),
                )
            });
            if let (Some(known), Some(file)) = (known, &finding.file) {
                changes.push(StageChange {
                    stage: ReportStage::PathSafety,
                    id: finding.id.as_str().to_owned(),
                    note: format!("file {file:?} read as {known}, the name in the diff"),
                });
                finding.file = Some(known.to_owned());
            }
            finding
        })
        .collect()
}

/// The report's record of the stages, in the order they ran (reported, path safety, grounding,
/// then the filter pipeline): counts in and out, every drop, every change to a kept finding.
fn record_stages(
    reported: usize,
    stage_reports: &[StageReport],
    (grounding, mut grounding_changes): (StageCount, Vec<StageChange>),
    dropped: &mut Vec<DroppedFinding>,
    changes: &mut Vec<StageChange>,
) -> Vec<StageCount> {
    let mut stage_counts = vec![StageCount {
        stage: ReportStage::Reported,
        input: reported,
        output: reported,
    }];
    for report in stage_reports {
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
            stage_counts.push(grounding.clone());
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
    stage_counts
}
