//! Grounding: a finding is published only if it points at something real at head. The file must
//! exist; its line must be in range; the quoted evidence must really be on that line or next to it
//! (a line number off by a few is corrected when the evidence is found close by). Where a finding
//! may be published depends on the change: a line comment only on a line shown in the diff,
//! otherwise in the summary.

use serde::Serialize;

use crate::filter::Dropped;
use crate::finding::Finding;

/// How far from the reported line the evidence may be and still be corrected to where it is.
pub const EVIDENCE_WINDOW: u32 = 3;

/// What grounding needs to know about the code at head and the change.
pub trait Head {
    /// The file's text at head, or `None` when it does not exist there or was not read.
    fn text(&self, path: &str) -> Option<&str>;
    /// Why a file that is there at head was not read (a symbolic link, say); `None` when it
    /// was read or is not there.
    fn unread(&self, _path: &str) -> Option<&str> {
        None
    }
    /// Whether `line` (new side) is shown in the change's diff of `path`; `None` when the file is
    /// not part of the change.
    fn in_diff(&self, path: &str, line: u32) -> Option<bool>;
}

/// Where a grounded finding can be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "at")]
pub enum Placement {
    /// On its line in the diff (a review comment).
    DiffLine,
    /// In the summary: its line exists but is not in the diff, or it has no line, or its file is
    /// not part of the change.
    Summary,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grounded {
    pub finding: Finding,
    pub placement: Placement,
    /// What grounding changed (a corrected line, a line removed for lack of evidence).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct GroundingReport {
    pub kept: Vec<Grounded>,
    pub dropped: Vec<Dropped>,
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The line of `text` nearest `near` where the quoted `evidence` starts, or `None` when it is
/// nowhere in the text or quotes nothing. Whitespace is ignored altogether, line breaks too, so
/// a quote reformatted (`len(xs)+1` for `len(xs) + 1`, one line split in two) is still found:
/// only a change of the code itself makes it gone. How a later review finds a finding's code
/// again after lines moved, or learns that it is gone.
pub fn find_evidence(text: &str, evidence: &str, near: u32) -> Option<u32> {
    evidence_lines(text, evidence)
        .into_iter()
        .min_by_key(|line| line.abs_diff(near))
}

/// Every line where `evidence` starts in `text`, matched as [`find_evidence`] does.
pub fn evidence_lines(text: &str, evidence: &str) -> Vec<u32> {
    let wanted: String = evidence.chars().filter(|c| !c.is_whitespace()).collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    // The text without whitespace, and the line each of its bytes is on.
    let mut squeezed = String::with_capacity(text.len());
    let mut line_of = Vec::with_capacity(text.len());
    for (index, line) in text.lines().enumerate() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        for c in line.chars().filter(|c| !c.is_whitespace()) {
            squeezed.push(c);
            line_of.extend(std::iter::repeat_n(number, c.len_utf8()));
        }
    }
    // `match_indices` searches in linear time, whatever the text and the quote.
    let mut lines: Vec<u32> = squeezed
        .match_indices(wanted.as_str())
        .filter_map(|(at, _)| line_of.get(at).copied())
        .collect();
    lines.dedup();
    lines
}

/// Checks each finding against the code at head.
pub fn ground(findings: Vec<Finding>, head: &dyn Head) -> GroundingReport {
    let mut report = GroundingReport::default();
    for finding in findings {
        match ground_one(finding, head) {
            Ok(kept) => report.kept.push(kept),
            Err(dropped) => report.dropped.push(dropped),
        }
    }
    report
}

/// One finding checked against head: kept, with where it can be shown and what was corrected,
/// or dropped, with why.
fn ground_one(mut finding: Finding, head: &dyn Head) -> Result<Grounded, Dropped> {
    let Some(path) = finding.file.clone() else {
        // A finding about the change as a whole: nothing to check, shown in the summary.
        return Ok(Grounded {
            finding,
            placement: Placement::Summary,
            note: None,
        });
    };
    let Some(text) = head.text(&path) else {
        let reason = match head.unread(&path) {
            Some(why) => format!("{path} is not read at head: {why}"),
            None => format!("{path} does not exist at head"),
        };
        return Err(Dropped::new(&finding, reason));
    };
    let Some(line) = finding.line else {
        return Ok(Grounded {
            finding,
            placement: Placement::Summary,
            note: None,
        });
    };
    let lines: Vec<&str> = text.lines().collect();
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    if line == 0 || line > count {
        return Err(Dropped::new(
            &finding,
            format!("line {line} is outside {path} ({count} lines)"),
        ));
    }
    let raw_evidence = finding.evidence.clone().unwrap_or_default();
    let Some(evidence) = Some(normalize(&raw_evidence)).filter(|e| !e.is_empty()) else {
        // Nothing to verify the line with: keep the finding, but not on a line.
        finding.line = None;
        finding.end_line = None;
        let note = Some(format!(
            "no code quoted to verify line {line}: shown without a line"
        ));
        return Ok(Grounded {
            finding,
            placement: Placement::Summary,
            note,
        });
    };
    let note = locate_evidence(&mut finding, &path, line, &lines, &raw_evidence, &evidence)?;
    let at = finding.line.unwrap_or(line);
    let placement = match head.in_diff(&path, at) {
        Some(true) => Placement::DiffLine,
        _ => Placement::Summary,
    };
    Ok(Grounded {
        finding,
        placement,
        note,
    })
}

/// Checks that the quoted code (`evidence`, whitespace normalized, from `raw_evidence`) is at
/// the finding's `line` of `path`; a line off by up to [`EVIDENCE_WINDOW`] is corrected to the
/// nearest where it is, which the returned note says. Not found near its line, the finding
/// does not point at something real at head and is dropped.
fn locate_evidence(
    finding: &mut Finding,
    path: &str,
    line: u32,
    lines: &[&str],
    raw_evidence: &str,
    evidence: &str,
) -> Result<Option<String>, Dropped> {
    let count = u32::try_from(lines.len()).unwrap_or(u32::MAX);
    // The window is as many lines as the finding spans or the evidence has.
    let evidence_lines = u32::try_from(raw_evidence.trim().lines().count().max(1)).unwrap_or(1);
    let reported_span = finding
        .end_line
        .filter(|e| *e >= line)
        .map_or(0, |e| e - line);
    let span = reported_span.max(evidence_lines - 1);
    let found = |at: u32| -> bool {
        let first = at.saturating_sub(1) as usize;
        let last = at.saturating_add(span).min(count) as usize;
        lines
            .get(first..last)
            .is_some_and(|window| normalize(&window.join("\n")).contains(evidence))
    };
    if found(line) {
        return Ok(None);
    }
    // The nearest line within the window where the evidence is.
    let candidate = (1..=EVIDENCE_WINDOW)
        .flat_map(|d| [line.checked_sub(d), line.checked_add(d)])
        .flatten()
        .find(|&at| at >= 1 && at <= count && found(at));
    match candidate {
        Some(at) => {
            finding.line = Some(at);
            finding.end_line = finding.end_line.map(|_| at + reported_span);
            Ok(Some(format!(
                "line {line} corrected to {at}, where the quoted code is"
            )))
        }
        None => Err(Dropped::new(
            finding,
            format!(
                "the quoted evidence is not on {path}:{line} or within {EVIDENCE_WINDOW} lines of it"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::find_evidence;

    #[test]
    fn quoted_code_is_found_nearest_its_line_or_not_at_all() {
        let text = "a = 1\nfor i in range(len(xs) + 1):\n    x\nfor i in range(len(xs) + 1):\n";
        assert_eq!(find_evidence(text, "range(len(xs) + 1)", 1), Some(2));
        assert_eq!(find_evidence(text, "range(len(xs)  +  1)", 9), Some(4));
        // Reformatted: no spaces, or the quote split over two lines of the file.
        assert_eq!(find_evidence(text, "range(len(xs)+1)", 2), Some(2));
        assert_eq!(
            find_evidence(
                "for i in range(\n    len(xs) + 1\n):\n",
                "range(len(xs) + 1)",
                1
            ),
            Some(1)
        );
        // Several lines, whitespace ignored; the match starts where the quote's first line is.
        assert_eq!(find_evidence(text, "a = 1\n  for i in", 3), Some(1));
        assert_eq!(find_evidence(text, "range(len(xs))", 2), None);
        assert_eq!(find_evidence(text, "  \n", 2), None);
    }
}
