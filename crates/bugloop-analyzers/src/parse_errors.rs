//! A file that does not parse. ruff's syntax error (`invalid-syntax`, which has no code, or
//! `E999`) on a line the change adds is a finding, one a file: the first, since what a parser
//! says after its first error is its recovery's guess. Nothing else a tool says is dropped for a
//! parse error: a tool's word that it cannot parse a file is no proof the file cannot run (biome
//! parses every `.js` file as a strict module and refuses some TypeScript decorators; shellcheck
//! calls a space before `#!` a parse error), and an attacker's review hid an `rm -rf` and an
//! `eval` behind such lines when it was. Only bugloop's own Python rule, which cannot read a
//! file Python cannot parse, has nothing left to check once ruff's syntax error there is
//! published.

use std::collections::{BTreeMap, BTreeSet};

use crate::hit::Candidate;

/// Whether `candidate` is ruff's word that its file is not valid Python.
fn is_syntax_error(candidate: &Candidate) -> bool {
    candidate.tool == "ruff" && matches!(candidate.hit.rule.as_str(), "invalid-syntax" | "E999")
}

/// Of each file's syntax errors on the change's lines, keeps the first (by line), once.
pub(crate) fn first_syntax_error_only(candidates: &mut Vec<Candidate>) {
    let mut first: BTreeMap<String, u32> = BTreeMap::new();
    for candidate in candidates.iter().filter(|c| is_syntax_error(c)) {
        let line = first
            .entry(candidate.hit.file.clone())
            .or_insert(candidate.hit.line);
        *line = (*line).min(candidate.hit.line);
    }
    let mut kept: BTreeSet<String> = BTreeSet::new();
    candidates.retain(|c| {
        !is_syntax_error(c)
            || (first.get(&c.hit.file) == Some(&c.hit.line) && kept.insert(c.hit.file.clone()))
    });
}

/// The files ruff found are not valid Python, on a line the change adds: that syntax error is
/// published, and code Python cannot parse has no read past an end that could run. Not a file
/// ruff cannot read (`E902`: an encoding it does not read, which Python may), nor one only an
/// older Python cannot parse (ruff reads newer syntax): those stay not checked.
pub(crate) fn unparseable_by_ruff(candidates: &[Candidate]) -> BTreeSet<&str> {
    candidates
        .iter()
        .filter(|c| is_syntax_error(c))
        .map(|c| c.hit.file.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::Category;

    use super::*;
    use crate::hit::{Hit, Level};
    use crate::weight::Weight;

    fn candidate(tool: &str, rule: &str, file: &str, line: u32) -> Candidate {
        let hit = Hit::at(rule, Level::Error, (file, line), String::new());
        Candidate::said(tool, hit, (Weight::Error, Category::Logic), String::new())
    }

    /// ruff's two messages for `def broken(:`, and what else is said of the file: one syntax
    /// error a file, and nothing else dropped for it.
    #[test]
    fn a_file_is_its_first_syntax_error_and_everything_else_it_had() {
        let mut candidates = vec![
            candidate("ruff", "invalid-syntax", "a.py", 2),
            candidate("ruff", "S307", "a.py", 5),
            candidate("ruff", "invalid-syntax", "a.py", 1),
            candidate("ruff", "E902", "b.py", 1),
            candidate("biome", "parse", "c.js", 1),
            candidate("biome", "lint/security/noGlobalEval", "c.js", 3),
        ];
        first_syntax_error_only(&mut candidates);
        let kept: Vec<(&str, u32)> = candidates
            .iter()
            .map(|c| (c.hit.rule.as_str(), c.hit.line))
            .collect();
        assert_eq!(
            kept,
            [
                ("S307", 5),
                ("invalid-syntax", 1),
                ("E902", 1),
                ("parse", 1),
                ("lint/security/noGlobalEval", 3)
            ]
        );
        assert_eq!(unparseable_by_ruff(&candidates), BTreeSet::from(["a.py"]));
    }
}
