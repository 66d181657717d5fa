//! One finding a place. A tool may report one line several times: zizmor each expression of a
//! line under one rule, biome `noAssignInExpressions` and `noConstantCondition` both on
//! `if (sum = 0)`; and two tools may report one defect (biome's `useValidTypeof` and tsc's
//! TS2367 on `typeof x === "strnig"`). A reader meets one defect there, so the line is one
//! finding: the hit weighed most, its note naming what else is said of the line, and by whom.

use std::collections::{BTreeMap, BTreeSet};

use bugloop_domain::finding::Category;

use crate::hit::Candidate;

/// One candidate per tool, rule and line: the one the tool weighs most (zizmor reports each
/// expression of a line, an attacker's title as an error beside a step's output as a note).
pub(crate) fn keep_the_strongest_of_each_place(candidates: &mut Vec<Candidate>) {
    let _dropped = keep_the_strongest(candidates, |c| {
        format!("{}\0{}\0{}\0{}", c.tool, c.hit.rule, c.hit.file, c.hit.line)
    });
}

/// One candidate per line, across rules and tools: the strongest (a security hit before another
/// of the same score, the first of equals: the tools' order, so a finding already published
/// keeps its id when a tool is added), its note saying each other tool, rule and message, and
/// keeping their notes.
pub(crate) fn one_per_line(candidates: &mut Vec<Candidate>) {
    let place = |c: &Candidate| format!("{}\0{}", c.hit.file, c.hit.line);
    let mut said: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for folded in keep_the_strongest(candidates, place) {
        let also = folded.folded_as(format!(
            "{} also reports {} here: {}",
            folded.tool,
            folded.hit.rule,
            crate::keys::mask_keys(&folded.hit.message)
        ));
        said.entry(place(&folded)).or_default().push(also);
    }
    for c in candidates.iter_mut() {
        if let Some(also) = said.remove(&place(c)) {
            c.add_note(also.join("\n\n"));
        }
    }
}

/// Keeps, of the candidates at each place, the strongest (the first of equals), in their order;
/// returns the others.
fn keep_the_strongest(
    candidates: &mut Vec<Candidate>,
    place: impl Fn(&Candidate) -> String,
) -> Vec<Candidate> {
    let weight = |c: &Candidate| (c.score, c.category == Category::Security);
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (index, c) in candidates.iter().enumerate() {
        let stronger = best
            .get(&place(c))
            .and_then(|&kept| candidates.get(kept))
            .is_none_or(|kept| weight(c) > weight(kept));
        if stronger {
            best.insert(place(c), index);
        }
    }
    let kept: BTreeSet<usize> = best.into_values().collect();
    let (stay, folded): (Vec<_>, Vec<_>) = std::mem::take(candidates)
        .into_iter()
        .enumerate()
        .partition(|(index, _)| kept.contains(index));
    *candidates = stay.into_iter().map(|(_, c)| c).collect();
    folded.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use bugloop_domain::score::Score;

    use super::*;
    use crate::hit::{Hit, Level};

    fn hit(tool: &str, rule: &str, line: u32, score: u8, category: Category) -> Candidate {
        Candidate {
            tool: tool.to_owned(),
            hit: Hit {
                rule: rule.to_owned(),
                level: Level::Warning,
                message: format!("{rule} says so"),
                file: "src/app.js".to_owned(),
                line,
                end_line: None,
                url: None,
                security: category == Category::Security,
                why: None,
            },
            score: Score::new(score).unwrap(),
            category,
            evidence: "if (sum = 0) {".to_owned(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        }
    }

    fn rules(found: &[Candidate]) -> Vec<(&str, &str, u32)> {
        found
            .iter()
            .map(|c| (c.tool.as_str(), c.hit.rule.as_str(), c.hit.line))
            .collect()
    }

    #[test]
    fn a_line_reported_twice_is_one_finding_that_says_both() {
        let mut found = vec![
            hit("biome", "noAssignInExpressions", 6, 7, Category::Logic),
            hit("biome", "noConstantCondition", 6, 7, Category::Logic),
            hit("biome", "noInnerDeclarations", 3, 6, Category::Logic),
            hit("shellcheck", "SC2086", 6, 6, Category::Logic),
        ];
        found[1].note = Some("the change also silenced it".to_owned());
        one_per_line(&mut found);
        assert_eq!(
            rules(&found),
            [
                ("biome", "noAssignInExpressions", 6),
                ("biome", "noInnerDeclarations", 3),
            ]
        );
        assert_eq!(
            found[0].note.as_deref(),
            Some(
                "the change also silenced it\n\nbiome also reports noConstantCondition here: \
                 noConstantCondition says so\n\nshellcheck also reports SC2086 here: SC2086 says so"
            )
        );
        assert_eq!(found[1].note, None);
    }

    #[test]
    fn the_line_keeps_the_hit_weighed_most_and_security_of_equals() {
        let mut found = vec![
            hit("ruff", "B006", 4, 6, Category::Logic),
            hit("ruff", "S608", 4, 6, Category::Security),
            hit("ruff", "F821", 4, 5, Category::Logic),
        ];
        one_per_line(&mut found);
        assert_eq!(rules(&found), [("ruff", "S608", 4)]);
        let note = found[0].note.as_deref().unwrap();
        assert!(note.contains("also reports B006") && note.contains("also reports F821"));
        let mut stronger = vec![
            hit("ruff", "S608", 4, 6, Category::Security),
            hit("ruff", "F821", 4, 8, Category::Logic),
        ];
        one_per_line(&mut stronger);
        assert_eq!(rules(&stronger), [("ruff", "F821", 4)]);
    }

    #[test]
    fn one_rule_on_one_line_keeps_its_strongest_and_says_nothing_of_the_rest() {
        let mut found = vec![
            hit("zizmor", "template-injection", 9, 5, Category::Security),
            hit("zizmor", "template-injection", 9, 8, Category::Security),
        ];
        keep_the_strongest_of_each_place(&mut found);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].score.get(), 8);
        assert_eq!(found[0].note, None);
    }
}
