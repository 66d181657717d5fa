//! An analyzer's hit as a candidate finding: on a line the change added, counted as a bug by
//! the tool's judge, with the line it stands on as evidence.

use std::path::Path;

use bugloop_domain::finding::Category;

use crate::hit::{Candidate, Hit};
use crate::input::regular_file;
use crate::scope::ChangedLines;
use crate::weight::Weight;

/// A hit on the change's added lines that bugloop's rule set counts as a bug, with the line it
/// stands on as evidence.
pub(crate) fn candidate(
    tool: &str,
    mut hit: Hit,
    judge: fn(&Hit) -> Option<(Weight, Category)>,
    changed: &ChangedLines,
    workspace: &Path,
) -> Option<Candidate> {
    if tool == "actionlint" {
        crate::overlap::to_the_expression(&mut hit, |file| {
            let path = regular_file(workspace, &bugloop_domain::paths::text_name(file)?)?;
            std::fs::read_to_string(path).ok()
        });
    }
    let end = hit.end_line.unwrap_or(hit.line);
    let line = changed.first_added(&hit.file, hit.line, end)?;
    let (weight, category) = judge(&hit)?;
    let evidence = evidence_at(workspace, &hit.file, line)?;
    hit.line = line;
    hit.end_line = Some(end.max(line));
    if hit.url.is_none() {
        hit.url = rule_page(tool, &hit.rule);
    }
    Some(Candidate::said(tool, hit, (weight, category), evidence))
}

/// The text of `file`'s `line` at head as a finding's evidence (keys masked), where the file
/// is a regular file of the tree and the line has any.
pub(crate) fn evidence_at(workspace: &Path, file: &str, line: u32) -> Option<String> {
    let path = regular_file(workspace, &bugloop_domain::paths::text_name(file)?)?;
    let text = std::fs::read(path).ok()?;
    let evidence = crate::keys::safe_evidence(
        String::from_utf8_lossy(&text)
            .lines()
            .nth(usize::try_from(line).ok()?.checked_sub(1)?)?,
    );
    (!evidence.is_empty()).then_some(evidence)
}

/// A rule's page where the tool's own output names none (hadolint's SARIF has no `helpUri`),
/// for a rule id of the tool's own form only.
fn rule_page(tool: &str, rule: &str) -> Option<String> {
    let plain = rule.len() <= 8 && rule.chars().all(|c| c.is_ascii_alphanumeric());
    match tool {
        "hadolint" if plain && rule.starts_with("DL") => {
            Some(format!("https://github.com/hadolint/hadolint/wiki/{rule}"))
        }
        "hadolint" if plain && rule.starts_with("SC") => {
            Some(format!("https://www.shellcheck.net/wiki/{rule}"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hadolints_rules_link_to_their_pages() {
        assert_eq!(
            rule_page("hadolint", "DL3014").as_deref(),
            Some("https://github.com/hadolint/hadolint/wiki/DL3014")
        );
        assert_eq!(
            rule_page("hadolint", "SC2086").as_deref(),
            Some("https://www.shellcheck.net/wiki/SC2086")
        );
        assert_eq!(rule_page("hadolint", "DL30/../x"), None);
        assert_eq!(rule_page("ruff", "S608"), None);
    }
}
