//! The elevation stage: findings below the threshold on one area combine into one elevated
//! finding, so many small signs of one problem are not each dropped as noise.

use std::collections::BTreeMap;

use super::{Changed, Dropped, FilterSettings, Stage, StageReport, report};
use crate::finding::{Category, Finding, FindingId};
use crate::score::Score;

pub fn elevation(
    findings: Vec<Finding>,
    settings: &FilterSettings,
    stages: &mut Vec<StageReport>,
) -> Vec<Finding> {
    let mut stage = report(Stage::Elevation, findings.len(), 0);
    if settings.elevation_threshold == 0 {
        stage.output = findings.len();
        stages.push(stage);
        return findings;
    }
    let eligible =
        |f: &Finding| f.score < settings.threshold && f.score >= settings.elevation_min_score;
    // Group below-threshold findings by file (or, without a file, by category).
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, finding) in findings.iter().enumerate() {
        if eligible(finding) {
            let area = match &finding.file {
                Some(file) => format!("file {file}"),
                None => format!("category {}", finding.category),
            };
            groups.entry(area).or_default().push(index);
        }
    }
    let mut combined_into: BTreeMap<usize, FindingId> = BTreeMap::new();
    let mut elevated = Vec::new();
    for (area, members) in groups {
        if members.len() < settings.elevation_threshold {
            continue;
        }
        let parts: Vec<&Finding> = members.iter().filter_map(|&i| findings.get(i)).collect();
        let finding = combine(&area, &parts, settings.threshold);
        for &member in &members {
            combined_into.insert(member, finding.id.clone());
        }
        let mut member_ids: Vec<&str> = parts.iter().map(|f| f.id.as_str()).collect();
        member_ids.sort_unstable();
        stage.changed.push(Changed {
            id: finding.id.clone(),
            note: format!(
                "{} findings below the threshold combined ({}), score {}",
                parts.len(),
                member_ids.join(", "),
                finding.score
            ),
        });
        elevated.push(finding);
    }
    let mut kept = Vec::with_capacity(findings.len());
    for (index, finding) in findings.into_iter().enumerate() {
        match combined_into.get(&index) {
            Some(into) => {
                stage.dropped.push(Dropped::new(
                    &finding,
                    format!("combined into elevated finding {into}"),
                ));
            }
            None => kept.push(finding),
        }
    }
    kept.extend(elevated);
    stage.output = kept.len();
    stages.push(stage);
    kept
}

fn combine(area: &str, parts: &[&Finding], threshold: Score) -> Finding {
    let mut ids: Vec<&str> = parts.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    // Stable id from the members, so a re-run with the same findings updates the same comment.
    let hash = fnv1a(ids.join("\n").as_bytes());
    let file = parts.first().and_then(|f| f.file.clone());
    let label = file.clone().unwrap_or_else(|| area.to_owned());
    let max = parts.iter().map(|f| f.score).max().unwrap_or(threshold);
    let score = threshold.max(max.promoted(1));
    let mut counts: BTreeMap<Category, usize> = BTreeMap::new();
    for part in parts {
        *counts.entry(part.category).or_default() += 1;
    }
    let category = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(c, _)| *c)
        .unwrap_or(Category::Maintainability);
    let mut description = format!(
        "{} smaller issues in {label} add up to a problem worth fixing together:\n",
        parts.len()
    );
    let mut sorted: Vec<&&Finding> = parts.iter().collect();
    sorted.sort_by_key(|f| (f.line, f.id.clone()));
    for part in sorted {
        description.push_str(&format!(
            "- {} (score {}{})\n",
            part.title,
            part.score,
            part.line.map(|l| format!(", line {l}")).unwrap_or_default()
        ));
    }
    Finding {
        id: FindingId::new(format!("elevated-{hash:016x}")),
        title: format!("{} related issues in {label}", parts.len()),
        description,
        file,
        line: parts.iter().filter_map(|f| f.line).min(),
        end_line: None,
        score,
        category,
        evidence: None,
        suggestion: None,
        source: None,
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
