//! One clean-room audit of the worktree's change: the auditors (one, or several at the same
//! time each with its focus, model or temperature), their reviews, and what is quarantined.

use std::sync::Arc;

use async_trait::async_trait;
use bugloop_config::{AuditFocus, Validator};

use bugloop_domain::finding::Finding;
use bugloop_domain::grounding::Head;
use bugloop_forge::ChangeKey;
use bugloop_git::{Git, short};
use bugloop_llm::{ChatRequest, ChatResult, Provider, ProviderLayer, Sink};
use bugloop_report::converge::Quarantined;

use crate::act::ActError;
use crate::build::Workbench;
use crate::env::LoopEnv;
use crate::review::{ProofContext, ReviewError, ReviewRequest, prove_findings, review};
use bugloop_forge::recording::RecordingForge;
use bugloop_report::review::{FindingProof, ProofStatus, ReviewReport};

use super::Connect;
use super::judge::judge;
use super::validate::{AuditFindings, validate_and_merge};

/// What one loop's audit counts, and what it set aside.
pub(super) struct Audit {
    pub(super) findings: Vec<Finding>,
    pub(super) quarantined: Vec<Quarantined>,
    /// What proving the findings came to (`review.prove`).
    pub(super) proofs: Vec<FindingProof>,
}

/// One reviewer of an audit.
pub(super) struct Auditor {
    label: String,
    focus: Option<AuditFocus>,
    provider: Arc<dyn Provider>,
}

/// The focus prompt of `focus`.
pub(crate) fn focus_prompt(focus: AuditFocus) -> &'static str {
    match focus {
        AuditFocus::Correctness => include_str!("../../prompts/audit-focus-correctness.md"),
        AuditFocus::Security => include_str!("../../prompts/audit-focus-security.md"),
        AuditFocus::ConcurrencyAndResources => {
            include_str!("../../prompts/audit-focus-concurrency_and_resources.md")
        }
        AuditFocus::ErrorHandling => include_str!("../../prompts/audit-focus-error_handling.md"),
    }
}

/// The auditors of loop `number`: one with the run's model, or from `parallel_from_loop` on
/// `parallel_auditors` of them, each with its focus (configured, else the next of
/// `AuditFocus::ALL`) and its own model or temperature when configured.
pub(super) fn auditors(
    env: &LoopEnv<'_>,
    connect: Connect<'_>,
    number: u32,
) -> Result<Vec<Auditor>, ActError> {
    let settings = &env.config().converge;
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
pub(super) struct Tempered {
    inner: Arc<dyn Provider>,
    temperature: f32,
}

#[async_trait]
impl ProviderLayer for Tempered {
    fn inner(&self) -> &dyn Provider {
        &*self.inner
    }

    async fn chat(&self, request: &ChatRequest, sink: Sink<'_>) -> ChatResult {
        let mut request = request.clone();
        request.temperature = Some(self.temperature);
        self.inner.chat(&request, sink).await
    }
}

/// Stages of an auditor's own review whose drops are rejections of what it claimed (not filter
/// decisions such as the threshold or dedup): they are quarantined.
pub(super) const REJECTING_STAGES: [&str; 3] = ["validation", "path_safety", "grounding"];

/// One clean-room audit of the worktree's change: the auditors at the same time, then the
/// validator (code checks, merging, and the model when `converge.validator` is `model`).
pub(super) async fn audit(
    env: &LoopEnv<'_>,
    connect: Connect<'_>,
    bench: &Workbench,
    tree: &Git,
    change: &ChangeKey,
    base: &str,
    number: u32,
) -> Result<Audit, ActError> {
    let request = audit_request(bench, tree, change, base, number)?;
    let head = request.head.clone();
    let auditors = auditors(env, connect, number)?;
    let reports = review_by_each(env, &auditors, &request).await;
    let (mut audits, mut quarantined) = take_reports(&auditors, reports, number)?;
    let files = crate::head::HeadTree::load(
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
    // A finding whose test fails at head (review.prove) is confirmed: the model validator
    // judges only the others. One whose test passes is handled as review.prove.unreproduced
    // says, a dropped one quarantined with its test's result.
    let mut findings = findings;
    // The branch converge audits is the developer's own.
    let context = ProofContext::of(env, base, &head, None).await;
    let proofs = prove_findings(env, &head, &mut findings, &context).await;
    quarantine_unreproduced(&proofs, number, &mut quarantined);
    let findings = validate(
        env,
        bench,
        number,
        findings,
        &proofs,
        &files,
        &mut quarantined,
    )
    .await?;
    let proofs = proofs
        .into_iter()
        .filter(|p| findings.iter().any(|f| f.id.as_str() == p.id))
        .collect();
    Ok(Audit {
        findings,
        quarantined,
        proofs,
    })
}

/// The review request of an audit: the worktree's whole change from `base` to its head, in a
/// clean room.
fn audit_request(
    bench: &Workbench,
    tree: &Git,
    change: &ChangeKey,
    base: &str,
    number: u32,
) -> Result<ReviewRequest, ActError> {
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
    Ok(ReviewRequest {
        change: change.clone(),
        description: format!("audit loop {number} of the change from {}", short(base)),
        base: base.to_owned(),
        head,
        diff: bugloop_diff::parse(&diff),
        workspace: bench.path().to_path_buf(),
        git_mount: Some(bench.git_mount()),
        clean_room: true,
        focus: None,
        full: false,
        summary_footer: None,
    })
}

/// Every auditor's review of `request`, at the same time, each on a forge of its own that only
/// records.
async fn review_by_each(
    env: &LoopEnv<'_>,
    auditors: &[Auditor],
    request: &ReviewRequest,
) -> Vec<Result<ReviewReport, ReviewError>> {
    // An audit publishes no finding comments, so the limit on them does not apply: every
    // finding counts toward the loop's P0/P1/P2 and goes to the fix.
    let mut settings = env.settings.clone();
    settings.config.review.comment_limit = usize::MAX;
    // Audits write nothing to the conversation: each reviews on a forge of its own that records.
    let forges: Vec<RecordingForge<'_>> = auditors
        .iter()
        .map(|_| RecordingForge::new(env.forge))
        .collect();
    let reviews = auditors.iter().zip(&forges).map(|(auditor, forge)| {
        let review_env = LoopEnv {
            forge,
            ..env
                .with_settings(&settings)
                .with_provider(auditor.provider.clone())
        };
        let mut request = request.clone();
        request.focus = auditor.focus.map(|f| focus_prompt(f).to_owned());
        async move { review(&review_env, request).await }
    });
    // At the same time: the auditors share the run's meter (one budget), not a turn each.
    futures_util::future::join_all(reviews).await
}

/// Each auditor's findings, and what its own review rejected (quarantined); an auditor whose
/// review failed fails the audit.
fn take_reports(
    auditors: &[Auditor],
    reports: Vec<Result<ReviewReport, ReviewError>>,
    number: u32,
) -> Result<(Vec<AuditFindings>, Vec<Quarantined>), ActError> {
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
    Ok((audits, quarantined))
}

/// Quarantines the findings that proving dropped, with their test's result.
fn quarantine_unreproduced(
    proofs: &[FindingProof],
    number: u32,
    quarantined: &mut Vec<Quarantined>,
) {
    for proof in proofs.iter().filter(|p| p.outcome == "dropped") {
        quarantined.push(Quarantined {
            loop_number: number,
            auditor: "validator".to_owned(),
            title: proof.title.clone(),
            location: proof.test_path.clone().unwrap_or_default(),
            reason: format!("validator: not reproduced: {}", proof.reason),
        });
    }
}

/// The findings the validator keeps: all of them with `converge.validator: code`; with `model`,
/// the proven ones and those the model judge confirms (the rest quarantined).
async fn validate(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    number: u32,
    findings: Vec<Finding>,
    proofs: &[FindingProof],
    files: &dyn Head,
    quarantined: &mut Vec<Quarantined>,
) -> Result<Vec<Finding>, ActError> {
    let proven: Vec<&str> = proofs
        .iter()
        .filter(|p| p.status == ProofStatus::Proven)
        .map(|p| p.id.as_str())
        .collect();
    Ok(match env.config().converge.validator {
        Validator::Code => findings,
        Validator::Model => {
            let (confirmed, unproven): (Vec<Finding>, Vec<Finding>) = findings
                .into_iter()
                .partition(|f| proven.contains(&f.id.as_str()));
            let (mut kept, rejected) = judge(env, bench, number, unproven, files).await?;
            quarantined.extend(rejected);
            kept.extend(confirmed);
            kept
        }
    })
}
