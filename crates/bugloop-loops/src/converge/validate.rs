//! The validator of parallel audits: the code checks that ground and merge the auditors'
//! findings (what they reject is quarantined with the reason), and the findings as a fix prompt.

use std::collections::BTreeMap;

use bugloop_domain::finding::{Finding, FindingId};
use bugloop_domain::grounding::{Head, ground};
use bugloop_domain::safety::{MAX_FINDING_BODY_CHARS, truncate_finding_body};
use bugloop_report::converge::Quarantined;

/// One auditor's findings.
#[derive(Debug, Clone)]
pub(crate) struct AuditFindings {
    /// `auditor 2 (security)`.
    pub auditor: String,
    pub findings: Vec<Finding>,
}

/// The code validator of parallel audits: quarantines findings that are not grounded at head
/// (file, line, quoted text) with the reason, merges the rest by (file, line, category) keeping
/// the highest score and the longest description, and re-ids them `loop<L>-<K>`. Categories and
/// scores are typed, so an invalid one never gets this far.
pub(crate) fn validate_and_merge(
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

pub(super) fn findings_prompt(findings: &[Finding]) -> String {
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
