//! Checks two tools both make. Where both ran and both report the same defect, the review
//! publishes it once: the more specific tool's hit, saying the other reports it too. Where only
//! one ran, its hit stands alone.

use crate::hit::Candidate;

/// A hit of `covered_tool`'s `covered_rule` whose message says `covered_says` is the same
/// defect as a hit of `kept_tool`'s `kept_rule` on the line that holds the expression the
/// covered message quotes.
struct Overlap {
    kept_tool: &'static str,
    kept_rule: &'static str,
    covered_tool: &'static str,
    covered_rule: &'static str,
    covered_says: &'static str,
}

const OVERLAPS: &[Overlap] = &[
    // actionlint's check of untrusted input in an inline script is zizmor's template-injection
    // audit; actionlint places it at the step's `run:` key, zizmor at the expression's line.
    Overlap {
        kept_tool: "zizmor",
        kept_rule: "zizmor/template-injection",
        covered_tool: "actionlint",
        covered_rule: "expression",
        covered_says: "is potentially untrusted",
    },
];

/// How far below a covered hit the kept one may be: an inline script's lines after its `run:`.
const MAX_LINES_BELOW: u32 = 200;

/// Drops each covered hit that a kept hit reports too, and says so on the kept one.
pub(crate) fn fold_overlaps(candidates: &mut Vec<Candidate>) {
    let mut folded = Vec::new();
    for (index, candidate) in candidates.iter().enumerate() {
        let Some(overlap) = OVERLAPS.iter().find(|o| {
            candidate.tool == o.covered_tool
                && candidate.hit.rule == o.covered_rule
                && candidate.hit.message.contains(o.covered_says)
        }) else {
            continue;
        };
        let Some(quoted) = first_quoted(&candidate.hit.message) else {
            continue;
        };
        let kept = candidates
            .iter()
            .enumerate()
            .filter(|(_, k)| {
                k.tool == overlap.kept_tool
                    && k.hit.rule == overlap.kept_rule
                    && k.hit.file == candidate.hit.file
                    && (candidate.hit.line..=candidate.hit.line.saturating_add(MAX_LINES_BELOW))
                        .contains(&k.hit.line)
                    && k.evidence.contains(quoted)
            })
            .min_by_key(|(_, k)| k.hit.line - candidate.hit.line);
        if let Some((kept, _)) = kept {
            folded.push((index, kept));
        }
    }
    for &(covered, kept) in &folded {
        let Some(covered) = candidates.get(covered) else {
            continue;
        };
        let also = format!(
            "{} reports it too ({}: {})",
            covered.tool,
            covered.hit.rule,
            crate::keys::mask_keys(&covered.hit.message)
        );
        if let Some(kept) = candidates.get_mut(kept) {
            kept.note = Some(match kept.note.take() {
                Some(earlier) => format!("{earlier}\n\n{also}"),
                None => also,
            });
        }
    }
    let mut index = 0;
    candidates.retain(|_| {
        index += 1;
        !folded.iter().any(|(covered, _)| *covered == index - 1)
    });
}

/// The text between the first two double quotes of a message.
fn first_quoted(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once('"')?;
    let (quoted, _) = rest.split_once('"')?;
    (!quoted.trim().is_empty()).then_some(quoted)
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::Category;
    use bugloop_domain::score::Score;

    use super::*;
    use crate::hit::{Hit, Level};

    fn hit(tool: &str, rule: &str, line: u32, message: &str, evidence: &str) -> Candidate {
        Candidate {
            tool: tool.to_owned(),
            hit: Hit {
                rule: rule.to_owned(),
                level: Level::Error,
                message: message.to_owned(),
                file: ".github/workflows/greet.yml".to_owned(),
                line,
                end_line: None,
                url: None,
                security: true,
            },
            score: Score::new(8).unwrap(),
            category: Category::Security,
            evidence: evidence.to_owned(),
            note: None,
        }
    }

    const UNTRUSTED: &str = "\"github.event.pull_request.title\" is potentially untrusted. avoid using it directly in inline scripts";
    const ECHO: &str = "          echo \"Thanks for ${{ github.event.pull_request.title }}\"";

    fn zizmor(line: u32, evidence: &str) -> Candidate {
        hit(
            "zizmor",
            "zizmor/template-injection",
            line,
            "code injection via template expansion",
            evidence,
        )
    }

    #[test]
    fn actionlints_untrusted_input_is_zizmors_template_injection_once() {
        let mut found = vec![
            zizmor(3, "  pull_request_target:"),
            hit("actionlint", "expression", 12, UNTRUSTED, "        run: |"),
            zizmor(13, ECHO),
        ];
        fold_overlaps(&mut found);
        let left: Vec<(&str, u32)> = found
            .iter()
            .map(|c| (c.tool.as_str(), c.hit.line))
            .collect();
        assert_eq!(left, [("zizmor", 3), ("zizmor", 13)]);
        let note = found[1].note.as_deref().unwrap();
        assert!(
            note.starts_with("actionlint reports it too (expression: "),
            "{note}"
        );
        assert_eq!(found[0].note, None);
    }

    #[test]
    fn alone_or_about_other_code_each_tool_keeps_its_hit() {
        // zizmor did not run: actionlint's hit stands.
        let mut alone = vec![hit("actionlint", "expression", 12, UNTRUSTED, "run: |")];
        fold_overlaps(&mut alone);
        assert_eq!(alone.len(), 1);
        // zizmor's hit is on another expression, or above actionlint's: two defects.
        let mut other = vec![
            hit("actionlint", "expression", 12, UNTRUSTED, "run: |"),
            zizmor(13, "echo \"${{ github.event.issue.body }}\""),
            zizmor(4, ECHO),
        ];
        fold_overlaps(&mut other);
        assert_eq!(other.len(), 3);
        // Another actionlint expression check (a type error) is not an injection.
        let mut typed = vec![
            hit(
                "actionlint",
                "expression",
                12,
                "property \"titel\" is not defined",
                "run: |",
            ),
            zizmor(13, "echo \"${{ github.event.pull_request.titel }}\""),
        ];
        fold_overlaps(&mut typed);
        assert_eq!(typed.len(), 2);
    }
}
