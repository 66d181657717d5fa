//! What a review run produced: the machine-readable report behind `--format json` (its schema is
//! `docs/review-report.schema.json`, generated from these types) and the base of every other
//! output format and of the summary comment. Status, stage, severity and priority fields are
//! enums serialized to the strings the schema has always had (a plain string there, so the
//! published schema does not change).

use bugloop_domain::filter::Stage;
use bugloop_domain::finding::{Category, Finding, FindingSource};
use bugloop_domain::score::{Priority, Severity};
use bugloop_domain::status::ThreadStatus;
use schemars::JsonSchema;
use serde::Serialize;

use crate::dispute::DisputeSummary;

/// Version of the report's shape; bumped on incompatible changes.
pub const REPORT_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ReviewReport {
    pub version: u32,
    pub change: ChangeInfo,
    pub model: String,
    /// Findings published or updated by this run, highest score first.
    pub findings: Vec<PublishedFinding>,
    /// Previous findings this run marked resolved.
    pub resolved: Vec<ResolvedFinding>,
    /// Open findings whose code changed since they were raised (changed, moved or gone), and
    /// what this run did with each: none is resolved or kept open without a reason here.
    pub rechecked: Vec<RecheckedFinding>,
    /// Every finding of the change after this run, with its status.
    pub tracked: Vec<TrackedFinding>,
    /// Findings the model reported that were not published, with the stage and reason.
    pub dropped: Vec<DroppedFinding>,
    /// What the stages changed in findings they kept (a renamed id, a corrected line, a
    /// normalized path, a security promotion, an elevation merge, a rediscovery), so no stage
    /// changes a finding behind the user's back.
    pub changes: Vec<StageChange>,
    /// How many findings entered and left each stage.
    pub stages: Vec<StageCount>,
    pub overflow: OverflowInfo,
    /// Parts of the change the model did not see in full.
    pub unreviewed: Vec<Unreviewed>,
    /// Files shown only as a one-line summary (lockfiles, generated files).
    pub summarized: Vec<Unreviewed>,
    /// Files excluded by `review.ignore_files`.
    pub ignored: Vec<String>,
    /// The reviewer's summary of each pass (or of the one structured answer).
    pub passes: Vec<PassSummary>,
    pub usage: UsageInfo,
    /// Model calls that failed; their files are listed in `unreviewed`.
    pub errors: Vec<String>,
    pub sensitive_data: SensitivityInfo,
    /// What could not be read in the conversation (a broken `rmcoc` block, a reply to a missing
    /// comment), and look-alike markers written by others that were ignored.
    pub conversation_problems: Vec<String>,
    /// Developer replies answered before the review (concede, maintain, escalate).
    pub disputes: Vec<DisputeSummary>,
    /// Files read for context (rule files, README, manifests) that were refused and not shown to
    /// the model: they lead outside the repository, into `.git`, or are not regular files.
    pub refused_context: Vec<RefusedFile>,
    /// Whether every part of the change was reviewed without error.
    pub complete: bool,
    /// How much of the change the model was shown: all of it, or what changed since an earlier
    /// review.
    pub scope: ReviewedScope,
    /// The findings this review tried to prove with a failing test (`review.prove`), and what
    /// came of each.
    pub proofs: Vec<FindingProof>,
    /// The static analyzers this review ran (`review.analyzers`), or why each did not run, and
    /// how their hits on the change were weighed.
    pub analysis: AnalysisInfo,
    /// What the model was asked about the change.
    pub asked: ModelAsked,
}

/// What the model was asked: the review of every file, or a small model's short questions.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub struct ModelAsked {
    /// `review`: every file shown, in sessions of the review's passes (or one structured answer
    /// each); `questions`: a small model asked short questions about the change's code, each
    /// answered with at most one finding on a line it was shown as added.
    pub kind: String,
    /// Sessions or questions planned.
    pub calls: usize,
    /// Files the model was shown.
    pub files_shown: usize,
    /// Files not shown to a small model (prose, keys and certificates, deleted files): the
    /// analyzers read them.
    pub left_to_analyzers: Vec<String>,
}

/// What the static analyzers did (docs/analyzers.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct AnalysisInfo {
    /// Each analyzer that applied to the change.
    pub runs: Vec<AnalyzerRunInfo>,
    /// Hits on the change's added lines that count as bugs, and suppressions the change adds.
    pub candidates: usize,
    /// How the candidates were weighed: `triage` (the model confirmed or dismissed each) or
    /// `publish` (as the tools say, at each rule's score).
    pub weighed: String,
    /// Candidates the model confirmed.
    pub confirmed: usize,
    /// Candidates the model dismissed (listed in `dropped`, stage `triage`, with its reason).
    pub dismissed: usize,
    /// Why the model's triage could not be used, when it could not (the candidates were then
    /// published as the tools say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triage_error: Option<String>,
}

/// One analyzer's run.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AnalyzerRunInfo {
    pub name: String,
    /// It ran and its output was read.
    pub ran: bool,
    /// Why it did not run (missing, crashed, timed out, output over the cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Files it was given.
    pub files: usize,
    /// Hits it reported in those files.
    pub hits: usize,
    /// Of those, on the change's added lines and counting as bugs.
    pub candidates: usize,
    pub seconds: f64,
    /// What a type checker found in the files that import the change (a sentence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importers: Option<String>,
}

/// What proving a finding came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum ProofStatus {
    /// Its test fails at head, for the reason the finding states.
    Proven,
    /// Its test passes at head.
    #[strum(serialize = "not reproduced")]
    NotReproduced,
    /// A test was written but proves nothing (it fails for another reason, does not finish,
    /// changed the code under test).
    #[strum(serialize = "not proven")]
    NotProven,
    /// No proof was tried, and why (over the limit, no test command, no sandbox).
    #[strum(serialize = "not tried")]
    NotTried,
}

impl ProofStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A finding's proof: the test bugloop ran in the sandbox at head, and its result.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct FindingProof {
    pub id: String,
    pub title: String,
    pub status: ProofStatus,
    /// Why: what the failure showed, or why it proves nothing.
    pub reason: String,
    /// The test's path in the repository, when one was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_path: Option<String>,
    /// The test's source (a proof's test is at most 8,000 bytes, shown whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The command that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The end of what it printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// How long bugloop's run of the test took, in seconds (the rest of a proof is bugloop's
    /// own time and the model's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_seconds: Option<f64>,
    /// What became of the finding: `published`, `lowered` (review.prove.unreproduced: lower) or
    /// `dropped` (drop).
    pub outcome: String,
}

/// How much of the change a review showed the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReviewedScope {
    /// The whole change, and why (the first review, `--full`, a rewritten branch, ...).
    Full { reason: String },
    /// Only what changed since an earlier head that was reviewed in full or in steps (the
    /// interdiff, on head lines). Open findings elsewhere were kept as they were, not asked
    /// about again.
    Incremental {
        /// The earlier head.
        since: String,
        /// The files of the change that changed since then, and those of open findings whose
        /// code changed (one put back as the base has it is no longer the change's).
        files: Vec<String>,
        /// Open findings in code that did not change, kept without asking the model.
        kept_findings: usize,
    },
}

/// An open finding whose code changed since it was raised, and what the review did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RecheckedFinding {
    pub id: String,
    pub title: String,
    /// What became of its code ("the code it quoted was removed since 1a2b3c4").
    pub change: String,
    pub outcome: RecheckOutcome,
    /// Why it has that outcome.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum RecheckOutcome {
    /// Resolved: its code is gone and the model did not report it again, or the model said
    /// the change fixed it.
    Resolved,
    /// The model reported it again (where it was, or where its code went).
    #[strum(serialize = "reported again")]
    ReportedAgain,
    /// Its code is still there (perhaps elsewhere, where the finding now points): open.
    #[strum(serialize = "kept open")]
    KeptOpen,
}

impl RecheckOutcome {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why the first review of a change is a full one.
pub const FIRST_REVIEW: &str = "no earlier review of a commit of this change";

impl ReviewedScope {
    /// Whether people should be told: an incremental review, or a full one for another reason
    /// than being the first.
    pub fn worth_saying(&self) -> bool {
        !matches!(self, ReviewedScope::Full { reason } if reason == FIRST_REVIEW)
    }

    /// One line for people: "the whole change (first review of this change)".
    pub fn describe(&self) -> String {
        match self {
            ReviewedScope::Full { reason } => format!("the whole change ({reason})"),
            ReviewedScope::Incremental {
                since,
                files,
                kept_findings,
            } => {
                let since = format!(
                    "what changed since {} ({} file(s))",
                    crate::short_sha(since),
                    files.len()
                );
                match kept_findings {
                    0 => since,
                    kept => format!("{since}; {kept} open finding(s) in unchanged code kept"),
                }
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ChangeInfo {
    /// The conversation the findings belong to (`branch:<name>`, `commit:<sha>`, a pull request).
    pub key: String,
    pub description: String,
    pub base: String,
    /// The head commit, or `index` / `working-tree`.
    pub head: String,
    pub files: usize,
    pub additions: usize,
    pub deletions: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommentAction {
    Added,
    Updated,
    Unchanged,
    /// A finding resolved when its code changed, found again: its comment is updated and its
    /// thread reopened.
    Reopened,
    /// Not published (a dry run).
    NotPublished,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// A line comment on a line of the diff.
    Line,
    /// In the conversation: its line is not in the diff, or it has none.
    Summary,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PublishedFinding {
    #[serde(flatten)]
    pub finding: Finding,
    /// info, low, medium or high.
    #[schemars(with = "String")]
    pub severity: Severity,
    /// P0, P1 or P2.
    #[schemars(with = "String")]
    pub priority: Priority,
    pub placement: Placement,
    pub action: CommentAction,
    /// Set when this re-reports an existing finding (which keeps its id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rediscovered_as: Option<String>,
    /// The code line at head, for reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What grounding corrected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ResolvedFinding {
    pub id: String,
    pub title: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TrackedFinding {
    pub id: String,
    pub title: String,
    /// PENDING, RESOLVED, DISPUTED or ESCALATED.
    #[schemars(with = "String")]
    pub status: ThreadStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Its category, as its comment records it (none in comments of older versions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// The analyzer's hit it stands on, as its comment records it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<FindingSource>,
    /// What its comment says of it (the assessment its state block records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The comment that holds it.
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DroppedFinding {
    /// `validation`, `grounding`, or a filter stage (`path_safety`, `ignore_globs`, `threshold`,
    /// `dedup_run`, `dedup_existing`, `comment_limit`, ...).
    #[schemars(with = "String")]
    pub stage: ReportStage,
    pub id: String,
    pub title: String,
    pub location: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StageChange {
    /// `reported` (an id another part of the review already used, renamed), `path_safety`,
    /// `grounding` (a corrected line), `security_promotion`, `elevation`, `dedup_run` (an id
    /// already used in the run, renamed) or `dedup_existing` (an existing finding reported again).
    #[schemars(with = "String")]
    pub stage: ReportStage,
    /// The finding's id after the change.
    pub id: String,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StageCount {
    #[schemars(with = "String")]
    pub stage: ReportStage,
    pub input: usize,
    pub output: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema, Default)]
pub struct OverflowInfo {
    pub count: usize,
    pub titles: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PassSummary {
    /// Which model call (part of the change), from 1.
    pub call: usize,
    /// The pass (1-4), or 0 for a structured answer.
    pub pass: u32,
    pub summary: String,
    pub blocking: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema, Default)]
pub struct UsageInfo {
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub output_tokens: u64,
    /// US dollars; absent for models without a price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub model_calls: u32,
    /// Sessions (one per part of the change).
    pub sessions: usize,
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SensitivityInfo {
    pub sensitive: bool,
    pub reason: String,
}

/// A part of a change that was not shown to the model in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Unreviewed {
    pub path: String,
    pub reason: String,
}

/// The parts not reviewed as a reader wants them: one line a reason, in the order first seen,
/// naming each file once (a file split into parts the budget stopped is one name, and a hundred
/// files stopped by it are one line). Parts that stopped for the same reason in runs of their
/// own are one line naming the runs.
pub fn unreviewed_by_reason(unreviewed: &[Unreviewed]) -> Vec<(String, Vec<&str>)> {
    let mut groups: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for part in unreviewed {
        let (reason, run) = match part
            .reason
            .strip_suffix(')')
            .and_then(|r| r.rsplit_once(" (run "))
        {
            Some((reason, run)) if !run.contains(' ') => (reason, Some(run)),
            _ => (part.reason.as_str(), None),
        };
        let at = match groups.iter().position(|(r, _, _)| *r == reason) {
            Some(at) => at,
            None => {
                groups.push((reason, Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        if let Some((_, paths, runs)) = groups.get_mut(at) {
            if !paths.contains(&part.path.as_str()) {
                paths.push(&part.path);
            }
            runs.extend(run.filter(|run| !runs.contains(run)));
        }
    }
    groups
        .into_iter()
        .map(|(reason, paths, runs)| {
            let reason = match runs.as_slice() {
                [] => reason.to_owned(),
                [run] => format!("{reason} (run {run})"),
                runs => format!("{reason} (runs {})", runs.join(", ")),
            };
            (reason, paths)
        })
        .collect()
}

/// Every name: a file not reviewed is never one of "3 more" (the one a change hid its bug in
/// would be).
pub fn all_names(names: &[&str], name: impl Fn(&str) -> String) -> String {
    names.iter().map(|n| name(n)).collect::<Vec<_>>().join(", ")
}

/// Up to ten names, then how many more: `a.py, b.py and 3 more`.
pub fn some_names(names: &[&str], name: impl Fn(&str) -> String) -> String {
    const SHOWN: usize = 10;
    let shown: Vec<String> = names.iter().take(SHOWN).map(|n| name(n)).collect();
    match names.len().saturating_sub(SHOWN) {
        0 => shown.join(", "),
        more => format!("{} and {more} more", shown.join(", ")),
    }
}

/// A file bugloop would have read for context but did not: it leads outside the repository
/// (a symlink), into `.git`, or is not a regular file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RefusedFile {
    pub path: String,
    pub reason: String,
}

/// Where a finding was counted, changed or dropped: the review's own steps around the filter
/// pipeline (`validation`, `reported`, `grounding`) and the pipeline's stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum ReportStage {
    /// The model's report could not be read as a finding.
    Validation,
    /// What the model reported (an id renamed when another part of the review used it).
    Reported,
    Grounding,
    PathSafety,
    IgnoreGlobs,
    SecurityPromotion,
    Elevation,
    Threshold,
    DedupRun,
    DedupExisting,
    CommentLimit,
    /// An analyzer's hit the model dismissed.
    Triage,
}

impl ReportStage {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl From<Stage> for ReportStage {
    fn from(stage: Stage) -> Self {
        match stage {
            Stage::PathSafety => ReportStage::PathSafety,
            Stage::IgnoreGlobs => ReportStage::IgnoreGlobs,
            Stage::SecurityPromotion => ReportStage::SecurityPromotion,
            Stage::Elevation => ReportStage::Elevation,
            Stage::Threshold => ReportStage::Threshold,
            Stage::DedupRun => ReportStage::DedupRun,
            Stage::DedupExisting => ReportStage::DedupExisting,
            Stage::CommentLimit => ReportStage::CommentLimit,
        }
    }
}

/// How an analyzer's failure on files of the change starts in a review's errors (the files are
/// listed as not reviewed, each with why).
const ANALYZER_FAILURE: &str = "the analyzer ";

/// The error a review records for analyzer `name` that could not check `files` file(s) of the
/// change, the first `first` for `reason`: what makes the review incomplete.
pub fn analyzer_failure(name: &str, files: usize, first: &str, reason: &str) -> String {
    format!(
        "{ANALYZER_FAILURE}{name} could not check {files} file(s) of the change ({first}: {reason})"
    )
}

impl ReviewReport {
    /// The errors a list of what was not reviewed must add: not an analyzer's failure, whose
    /// files the list names with the reason already.
    pub fn errors_beside_unreviewed(&self) -> impl Iterator<Item = &String> {
        self.errors
            .iter()
            .filter(|e| !e.starts_with(ANALYZER_FAILURE) || self.unreviewed.is_empty())
    }

    /// Whether people should be told what was reviewed: [`ReviewedScope::worth_saying`], or a
    /// first review of a change that has findings already (an earlier review stopped before its
    /// summary), whose full review would otherwise go unexplained.
    pub fn scope_worth_saying(&self) -> bool {
        self.scope.worth_saying()
            || self.tracked.len() > self.findings.len()
            || self.findings.iter().any(|f| {
                matches!(
                    f.action,
                    CommentAction::Updated | CommentAction::Unchanged | CommentAction::Reopened
                )
            })
    }

    /// The findings of the change still open after this run (any status but RESOLVED) that this
    /// run did not publish: what earlier reviews raised.
    pub fn open_from_earlier(&self) -> impl Iterator<Item = &TrackedFinding> {
        self.tracked.iter().filter(|t| {
            t.status != ThreadStatus::Resolved
                && !self.findings.iter().any(|f| f.finding.id.as_str() == t.id)
        })
    }

    /// Findings whose code changed that this run kept open, each with its reason.
    pub fn kept_open(&self) -> impl Iterator<Item = &RecheckedFinding> {
        self.rechecked
            .iter()
            .filter(|r| r.outcome == RecheckOutcome::KeptOpen)
    }

    /// How many findings of the change are open after this run.
    pub fn open_count(&self) -> usize {
        self.tracked
            .iter()
            .filter(|t| t.status != ThreadStatus::Resolved)
            .count()
    }

    /// The highest score among published findings and open tracked ones.
    pub fn max_open_score(&self) -> Option<u8> {
        self.tracked
            .iter()
            .filter(|t| t.status != ThreadStatus::Resolved)
            .filter_map(|t| t.score)
            .chain(self.findings.iter().map(|f| f.finding.score.get()))
            .max()
    }
}

/// The JSON Schema of [`ReviewReport`].
pub fn report_schema() -> serde_json::Value {
    schemars::schema_for!(ReviewReport).to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(path: &str, reason: &str) -> Unreviewed {
        Unreviewed {
            path: path.to_owned(),
            reason: reason.to_owned(),
        }
    }

    #[test]
    fn parts_not_reviewed_are_one_line_a_reason_each_file_named_once() {
        let budget = "not reviewed: the run's token budget is spent";
        let mut parts = vec![part("logo.png", "binary file")];
        // A bundle split into parts, and small files after it, all stopped by the budget.
        parts.extend((0..3).map(|_| part("bundle.js", budget)));
        parts.extend((0..12).map(|i| part(&format!("src/m{i}.py"), budget)));
        // Parts that stopped in parallel, each in its run.
        parts.extend(["a1", "b2"].map(|run| {
            part(
                "bundle.js",
                &format!("the review of this part stopped: no answer (run {run})"),
            )
        }));
        let groups = unreviewed_by_reason(&parts);
        assert_eq!(groups.len(), 3);
        assert_eq!(groups[0], ("binary file".to_owned(), vec!["logo.png"]));
        assert_eq!(
            groups[2],
            (
                "the review of this part stopped: no answer (runs a1, b2)".to_owned(),
                vec!["bundle.js"]
            )
        );
        assert_eq!(groups[1].0, budget);
        assert_eq!(groups[1].1.len(), 13);
        assert_eq!(
            some_names(&groups[1].1, str::to_owned),
            "bundle.js, src/m0.py, src/m1.py, src/m2.py, src/m3.py, src/m4.py, src/m5.py, \
             src/m6.py, src/m7.py, src/m8.py and 3 more"
        );
        assert!(all_names(&groups[1].1, str::to_owned).ends_with("src/m10.py, src/m11.py"));
    }

    #[test]
    fn an_incremental_review_says_what_it_kept_only_when_it_kept_something() {
        let scope = |kept_findings| ReviewedScope::Incremental {
            since: "0123456789".to_owned(),
            files: vec!["a.py".to_owned()],
            kept_findings,
        };
        assert_eq!(
            scope(0).describe(),
            "what changed since 0123456 (1 file(s))"
        );
        assert_eq!(
            scope(2).describe(),
            "what changed since 0123456 (1 file(s)); 2 open finding(s) in unchanged code kept"
        );
    }
}
