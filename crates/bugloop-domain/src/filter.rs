//! The filter pipeline between the model and publishing (bugbot detection step 5 and the
//! reviewer's threshold, promotion, elevation and dedup rules). Every stage reports what it dropped
//! and why, so nothing disappears silently.
//!
//! Order: path safety -> ignore globs -> security promotion -> score elevation -> threshold and
//! severity floor -> dedup (within the run, then against existing findings) -> comment limit.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::dedup::{Candidate, DedupIndex, DedupRule, Place};
use crate::finding::{Category, Finding, FindingId};
use crate::paths::{IgnoreMatcher, normalize_finding_path};
use crate::score::{Score, Severity};
use crate::thread::ThreadStatus;

mod elevation;
pub use self::elevation::elevation;

/// The settings the pipeline reads (built from the configuration).
#[derive(Debug, Clone)]
pub struct FilterSettings {
    pub ignore: IgnoreMatcher,
    /// Findings scoring below this are not published (`problem_score_threshold`, default 5).
    pub threshold: Score,
    /// Findings below this severity are not published (`bugbot-severity`, default low).
    pub severity_floor: Severity,
    /// The repository handles personal or financial data: security findings gain
    /// `security_promotion` points, capped at 10.
    pub sensitive_data: bool,
    pub security_promotion: u8,
    /// At least this many below-threshold findings on one file are combined into one elevated
    /// finding (`score_elevation_threshold`); 0 turns elevation off.
    pub elevation_threshold: usize,
    /// Findings below this score never take part in elevation: nits stay silent.
    pub elevation_min_score: Score,
    pub dedup: DedupRule,
    /// At most this many new finding comments per run; the rest go into one overflow comment.
    pub comment_limit: usize,
    /// The change's files, by their display names: a finding naming one exactly keeps that
    /// name, which git allows although a path from elsewhere would be rewritten (`x\y.py`,
    /// ` lead.py`) or refused (`~x.py`, `c:x.py`).
    pub known_files: BTreeSet<String>,
}

impl Default for FilterSettings {
    fn default() -> Self {
        FilterSettings {
            ignore: IgnoreMatcher::empty(),
            threshold: Score::saturating(5),
            severity_floor: Severity::Low,
            sensitive_data: false,
            security_promotion: 2,
            elevation_threshold: 5,
            elevation_min_score: Score::saturating(3),
            dedup: DedupRule::default(),
            comment_limit: 20,
            known_files: BTreeSet::new(),
        }
    }
}

/// A finding already published, as reconstructed from the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExistingFinding {
    pub id: FindingId,
    pub title: String,
    pub description: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub end_line: Option<u32>,
    /// The code the finding quoted (read back from its comment; older comments have none).
    pub evidence: Option<String>,
    pub status: ThreadStatus,
    /// RESOLVED because its code changed: reported again, it is raised again (not dropped).
    pub reopenable: bool,
    /// Its quoted code left the place it was recorded at (changed, moved or deleted since):
    /// reported under its id, or quoting its code, anywhere, it is this finding at a new place.
    pub moved: bool,
    /// The analyzer and rule that found it (from its comment's state block); `None` for the
    /// model's findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_rule: Option<(String, String)>,
}

impl ExistingFinding {
    fn place(&self) -> Place<'_> {
        Place {
            file: self.file.as_deref(),
            line: self.line,
            end_line: self.end_line,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    PathSafety,
    IgnoreGlobs,
    SecurityPromotion,
    Elevation,
    Threshold,
    DedupRun,
    DedupExisting,
    CommentLimit,
}

/// A finding a stage removed, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    pub id: FindingId,
    pub title: String,
    pub location: String,
    pub reason: String,
}

impl Dropped {
    pub fn new(finding: &Finding, reason: String) -> Self {
        Dropped {
            id: finding.id.clone(),
            title: finding.title.clone(),
            location: finding.location(),
            reason,
        }
    }
}

/// A finding a stage changed without removing it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    pub id: FindingId,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageReport {
    pub stage: Stage,
    pub input: usize,
    pub output: usize,
    pub dropped: Vec<Dropped>,
    pub changed: Vec<Changed>,
}

/// A new finding that is an existing one reported again: it updates that comment in place.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rediscovered {
    pub existing: FindingId,
    pub finding: Finding,
    /// The existing finding was resolved when its code changed: this raises it again.
    pub reopens: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Overflow {
    pub count: usize,
    pub titles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterOutcome {
    /// New findings to publish, one comment each, highest score first.
    pub publish: Vec<Finding>,
    pub rediscovered: Vec<Rediscovered>,
    pub overflow: Overflow,
    pub stages: Vec<StageReport>,
}

impl FilterOutcome {
    pub fn dropped(&self) -> impl Iterator<Item = (Stage, &Dropped)> {
        self.stages
            .iter()
            .flat_map(|s| s.dropped.iter().map(move |d| (s.stage, d)))
    }
}

/// Runs every stage.
pub fn run_pipeline(
    findings: Vec<Finding>,
    existing: &[ExistingFinding],
    settings: &FilterSettings,
) -> FilterOutcome {
    let mut stages = Vec::new();
    let findings = path_safety(findings, &settings.known_files, &mut stages);
    let findings = ignore_globs(findings, settings, &mut stages);
    let findings = security_promotion(findings, settings, &mut stages);
    let findings = elevation(findings, settings, &mut stages);
    let findings = threshold(findings, settings, &mut stages);
    let findings = dedup_run(findings, settings, &mut stages);
    let (findings, rediscovered) = dedup_existing(findings, existing, settings, &mut stages);
    let (publish, overflow) = comment_limit(findings, settings, &mut stages);
    FilterOutcome {
        publish,
        rediscovered,
        overflow,
        stages,
    }
}

fn report(stage: Stage, input: usize, output: usize) -> StageReport {
    StageReport {
        stage,
        input,
        output,
        dropped: Vec::new(),
        changed: Vec::new(),
    }
}

/// Normalizes each finding's path or drops the finding when its path is unsafe; a path that is
/// exactly one of the change's `known` files stays as it is.
pub fn path_safety(
    findings: Vec<Finding>,
    known: &BTreeSet<String>,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    let mut stage = report(Stage::PathSafety, findings.len(), 0);
    let mut kept = Vec::with_capacity(findings.len());
    for mut finding in findings {
        if let Some(raw) = finding.file.take() {
            let normalized = if known.contains(&raw) {
                Ok(raw.clone())
            } else {
                normalize_finding_path(&raw)
            };
            match normalized {
                Ok(path) => {
                    if path != raw {
                        stage.changed.push(Changed {
                            id: finding.id.clone(),
                            note: format!("path {raw:?} normalized to {path:?}"),
                        });
                    }
                    finding.file = Some(path);
                }
                Err(error) => {
                    finding.file = Some(raw.clone());
                    stage.dropped.push(Dropped::new(
                        &finding,
                        format!("unsafe path {raw:?}: {error}"),
                    ));
                    continue;
                }
            }
        }
        if let (Some(line), Some(end)) = (finding.line, finding.end_line)
            && end < line
        {
            finding.end_line = None;
        }
        if finding.line == Some(0) {
            finding.line = None;
            finding.end_line = None;
        }
        kept.push(finding);
    }
    stage.output = kept.len();
    stages.push(stage);
    kept
}

pub fn ignore_globs(
    findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    let ignored = |file: &str| settings.ignore.matched(file);
    dropping(Stage::IgnoreGlobs, findings, stages, |finding| {
        let pattern = ignored(finding.file.as_deref()?)?;
        Some(format!("file is ignored (ignore pattern #{})", pattern + 1))
    })
}

/// A stage that only drops: each finding `why` gives a reason for is dropped with it, the
/// others pass in their order.
fn dropping(
    name: Stage,
    findings: Vec<Finding>,
    stages: &mut Vec<StageReport>,
    why: impl Fn(&Finding) -> Option<String>,
) -> Vec<Finding> {
    let mut stage = report(name, findings.len(), 0);
    let mut kept = Vec::with_capacity(findings.len());
    for finding in findings {
        match why(&finding) {
            Some(reason) => stage.dropped.push(Dropped::new(&finding, reason)),
            None => kept.push(finding),
        }
    }
    stage.output = kept.len();
    stages.push(stage);
    kept
}

pub fn security_promotion(
    mut findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    let mut stage = report(Stage::SecurityPromotion, findings.len(), findings.len());
    if settings.sensitive_data && settings.security_promotion > 0 {
        for finding in &mut findings {
            if finding.category == Category::Security {
                let before = finding.score;
                finding.score = before.promoted(settings.security_promotion);
                if finding.score != before {
                    stage.changed.push(Changed {
                        id: finding.id.clone(),
                        note: format!(
                            "security finding in a repository with sensitive data: score {before} -> {}",
                            finding.score
                        ),
                    });
                }
            }
        }
    }
    stages.push(stage);
    findings
}

pub fn threshold(
    findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    dropping(Stage::Threshold, findings, stages, |finding| {
        if finding.score < settings.threshold {
            Some(format!(
                "score {} below threshold {}",
                finding.score, settings.threshold
            ))
        } else if finding.severity() < settings.severity_floor {
            Some(format!(
                "severity {} below floor {}",
                finding.severity(),
                settings.severity_floor
            ))
        } else {
            None
        }
    })
}

fn text_of(title: &str, description: &str) -> String {
    format!("{title}\n{description}")
}

fn place_of(finding: &Finding) -> Place<'_> {
    Place {
        file: finding.file.as_deref(),
        line: finding.line,
        end_line: finding.end_line,
    }
}

fn candidate<'a>(finding: &'a Finding, text: &'a str) -> Candidate<'a> {
    Candidate {
        place: place_of(finding),
        text,
        evidence: finding.evidence.as_deref(),
        tool_rule: analyzer_rule(finding),
    }
}

/// The analyzer and rule a finding stands on; `None` for the model's own.
fn analyzer_rule(finding: &Finding) -> Option<(&str, &str)> {
    finding
        .source
        .as_ref()
        .filter(|source| !source.model)
        .map(|source| (source.tool.as_str(), source.rule.as_str()))
}

/// `id` itself when free, else the first `id-N` (N from 2) that is.
fn fresh_id(id: &FindingId, taken: impl Fn(&FindingId) -> bool) -> FindingId {
    if !taken(id) {
        return id.clone();
    }
    // `with_suffix` keeps the suffix even on the longest ids, so this always ends.
    (2usize..)
        .map(|n| id.with_suffix(n))
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| id.clone())
}

/// Findings of this run that are the same problem (see [`crate::dedup`]) become one: the highest
/// score is kept. A reused id on a different problem is renamed so markers stay unique.
pub fn dedup_run(
    mut findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    let mut stage = report(Stage::DedupRun, findings.len(), 0);
    // Highest score first, so the strongest wording of a duplicate is the one kept.
    findings.sort_by_key(|f| std::cmp::Reverse(f.score));
    let mut index = DedupIndex::new();
    let mut kept: Vec<Finding> = Vec::with_capacity(findings.len());
    let mut ids: BTreeSet<FindingId> = BTreeSet::new();
    for mut finding in findings {
        let text = text_of(&finding.title, &finding.description);
        // A tool's hit is never another's duplicate: two rules at one line are two problems
        // (a committed key beside an SQL injection), and one rule's hits were made one per
        // place where they were read.
        let duplicate = match finding.source {
            Some(_) => None,
            None => index.find(settings.dedup, candidate(&finding, &text)),
        };
        if let Some(found) = duplicate {
            let original = kept
                .get(found.entry)
                .map(|f| f.id.to_string())
                .unwrap_or_default();
            stage.dropped.push(Dropped::new(
                &finding,
                format!("duplicate of {original} in this run ({})", found.reason),
            ));
            continue;
        }
        let id = fresh_id(&finding.id, |id| ids.contains(id));
        if id != finding.id {
            stage.changed.push(Changed {
                id: id.clone(),
                note: format!("id {} was already used in this run", finding.id),
            });
            finding.id = id;
        }
        ids.insert(finding.id.clone());
        index.insert(candidate(&finding, &text));
        kept.push(finding);
    }
    stage.output = kept.len();
    stages.push(stage);
    kept
}

/// Findings that are an existing one reported again update it (PENDING, ESCALATED) or are dropped
/// (RESOLVED, DISPUTED: never raised again). An id the model repeats is that finding only when the
/// place agrees (same file, and the same lines or the same quoted evidence); otherwise the finding
/// is new and gets a fresh id, since the model reuses ids for other problems.
pub fn dedup_existing(
    findings: Vec<Finding>,
    existing: &[ExistingFinding],
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> (Vec<Finding>, Vec<Rediscovered>) {
    let mut stage = report(Stage::DedupExisting, findings.len(), 0);
    let mut published = Published::new(existing);
    let mut taken: BTreeSet<FindingId> = findings.iter().map(|f| f.id.clone()).collect();
    let mut kept = Vec::new();
    let mut rediscovered = Vec::new();
    for mut finding in findings {
        let text = text_of(&finding.title, &finding.description);
        let same_id = published.under_same_id(&finding, settings.dedup);
        let matched = published.matched(&finding, &text, same_id, settings.dedup);
        if matched.is_none()
            && let Some((old, false)) = same_id
        {
            let fresh = fresh_id(&finding.id, |id| {
                published.by_id.contains_key(id) || taken.contains(id)
            });
            stage.changed.push(Changed {
                id: fresh.clone(),
                note: format!(
                    "id {} is the existing finding at {}; this one at {} is another problem, \
                     renamed {fresh}",
                    finding.id,
                    location_of(old),
                    finding.location()
                ),
            });
            taken.insert(fresh.clone());
            finding.id = fresh;
        }
        let Some((old, why)) = matched else {
            kept.push(finding);
            continue;
        };
        if let Some(again) = reported_again(old, &why, finding, &mut stage) {
            rediscovered.push(again);
        }
    }
    stage.output = kept.len() + rediscovered.len();
    stages.push(stage);
    (kept, rediscovered)
}

/// The published findings new ones are matched against: by place and text, and by id.
struct Published<'e> {
    existing: &'e [ExistingFinding],
    index: DedupIndex,
    by_id: BTreeMap<&'e FindingId, usize>,
    /// Existing findings whose code moved that a report already follows.
    followed: BTreeSet<FindingId>,
}

impl<'e> Published<'e> {
    fn new(existing: &'e [ExistingFinding]) -> Self {
        let mut index = DedupIndex::new();
        let mut by_id: BTreeMap<&FindingId, usize> = BTreeMap::new();
        let texts: Vec<String> = existing
            .iter()
            .map(|old| text_of(&old.title, &old.description))
            .collect();
        for (old, text) in existing.iter().zip(&texts) {
            let position = index.insert(Candidate {
                place: old.place(),
                text,
                evidence: old.evidence.as_deref(),
                tool_rule: old
                    .tool_rule
                    .as_ref()
                    .map(|(tool, rule)| (tool.as_str(), rule.as_str())),
            });
            by_id.insert(&old.id, position);
        }
        Published {
            existing,
            index,
            by_id,
            followed: BTreeSet::new(),
        }
    }

    /// The existing finding with the id the model gave `finding`, and whether it is about the
    /// same place.
    fn under_same_id(
        &self,
        finding: &Finding,
        rule: DedupRule,
    ) -> Option<(&'e ExistingFinding, bool)> {
        self.by_id
            .get(&finding.id)
            .and_then(|&i| self.existing.get(i))
            .map(|old| (old, same_place(old, finding, rule)))
    }

    /// The existing finding `finding` (whose title and description are `text`) reports again,
    /// and why: its id at the same place, its id where the code moved, else the same problem by
    /// place and text or the same moved code.
    fn matched(
        &mut self,
        finding: &Finding,
        text: &str,
        same_id: Option<(&'e ExistingFinding, bool)>,
        rule: DedupRule,
    ) -> Option<(&'e ExistingFinding, String)> {
        let matched = match same_id {
            Some((old, true)) => Some((old, SAME_ID_SAME_PLACE.to_owned())),
            Some((old, false)) if old.moved && !self.followed.contains(&old.id) => {
                Some((old, "same id; its code moved since".to_owned()))
            }
            _ => self
                .index
                .find(rule, candidate(finding, text))
                .and_then(|m| {
                    self.existing
                        .get(m.entry)
                        .map(|old| (old, m.reason.to_string()))
                })
                .or_else(|| moved_code(self.existing, finding, &self.followed)),
        };
        // A finding whose code moved, or came back, follows one report, not every one that
        // resembles it.
        if let Some((old, _)) = &matched
            && (old.moved || old.status == ThreadStatus::Resolved)
        {
            self.followed.insert(old.id.clone());
        }
        matched
    }
}

/// Why a report is an existing finding when the model gave its id at its place.
const SAME_ID_SAME_PLACE: &str = "same id at the same place";

/// What a finding reported again (`why`) as `old` does: a pending or escalated finding is
/// updated, one resolved when its code changed is raised again, and any other (resolved or
/// disputed) is never raised again, so the report is dropped.
fn reported_again(
    old: &ExistingFinding,
    why: &str,
    finding: Finding,
    stage: &mut StageReport,
) -> Option<Rediscovered> {
    match old.status {
        ThreadStatus::Pending | ThreadStatus::Escalated => {
            // The same finding at its place again changes nothing worth a line (every finding
            // of a `--full` review would have one).
            if why != SAME_ID_SAME_PLACE {
                stage.changed.push(Changed {
                    id: old.id.clone(),
                    note: format!(
                        "reported again as {} ({why}): updates the existing comment",
                        finding.id
                    ),
                });
            }
            Some(Rediscovered {
                existing: old.id.clone(),
                finding,
                reopens: false,
            })
        }
        ThreadStatus::Resolved if old.reopenable => {
            stage.changed.push(Changed {
                id: old.id.clone(),
                note: format!(
                    "reported again as {} ({why}): it was resolved when its code changed, \
                     and is raised again in its thread",
                    finding.id
                ),
            });
            Some(Rediscovered {
                existing: old.id.clone(),
                finding,
                reopens: true,
            })
        }
        status => {
            stage.dropped.push(Dropped::new(
                &finding,
                format!(
                    "already raised as {} and {} ({why})",
                    old.id,
                    status.as_str().to_lowercase()
                ),
            ));
            None
        }
    }
}

/// Whether a finding under an existing finding's id is about the same place: same file, and
/// line ranges within the window or the same quoted evidence (the code moved since).
fn same_place(old: &ExistingFinding, new: &Finding, rule: DedupRule) -> bool {
    if old.place().same_as(&place_of(new), rule) {
        return true;
    }
    old.file == new.file
        && match (
            crate::dedup::evidence_key(old.evidence.as_deref()),
            crate::dedup::evidence_key(new.evidence.as_deref()),
        ) {
            (Some(a), Some(b)) => crate::dedup::same_evidence(&a, &b),
            _ => false,
        }
}

/// An existing finding that `new` quotes exactly (whitespace aside) and that no other report
/// followed yet: one whose code moved, wherever `new` is, or one resolved when its code changed
/// whose code is back at another line of its file (a revert after the lines around it moved).
fn moved_code<'e>(
    existing: &'e [ExistingFinding],
    new: &Finding,
    followed: &BTreeSet<FindingId>,
) -> Option<(&'e ExistingFinding, String)> {
    let quoted = crate::dedup::evidence_key(new.evidence.as_deref())?;
    existing
        .iter()
        .filter(|old| !followed.contains(&old.id))
        .filter(|old| old.moved || back_in_its_file(old, new))
        .find(|old| crate::dedup::evidence_key(old.evidence.as_deref()).as_ref() == Some(&quoted))
        .map(|old| {
            let why = if old.moved {
                "the same code, moved since"
            } else {
                "the same code as it quoted when it was resolved, at another line of its file"
            };
            (old, why.to_owned())
        })
}

/// Whether `new` may be `old` back after its fix was undone: `old` resolved when its code
/// changed, in the same file, and found by the same analyzer's rule (or both the model's).
fn back_in_its_file(old: &ExistingFinding, new: &Finding) -> bool {
    let old_rule = old
        .tool_rule
        .as_ref()
        .map(|(tool, rule)| (tool.as_str(), rule.as_str()));
    old.status == ThreadStatus::Resolved
        && old.reopenable
        && old.file == new.file
        && old_rule == analyzer_rule(new)
}

fn location_of(old: &ExistingFinding) -> String {
    match (&old.file, old.line) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.clone(),
        _ => "(no file)".to_owned(),
    }
}

pub fn comment_limit(
    mut findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> (Vec<Finding>, Overflow) {
    let mut stage = report(Stage::CommentLimit, findings.len(), 0);
    findings.sort_by_key(|f| std::cmp::Reverse(f.score));
    let rest = if findings.len() > settings.comment_limit {
        findings.split_off(settings.comment_limit)
    } else {
        Vec::new()
    };
    let overflow = Overflow {
        count: rest.len(),
        titles: rest.iter().map(|f| f.title.clone()).collect(),
    };
    for finding in &rest {
        stage.dropped.push(Dropped::new(
            finding,
            format!(
                "over the comment limit of {}: listed in the overflow comment",
                settings.comment_limit
            ),
        ));
    }
    stage.output = findings.len();
    stages.push(stage);
    (findings, overflow)
}
