//! A file that does not parse. Its first parse error is the finding: what a tool says of the
//! same file from that line on comes from its parser's recovery (biome calls the parameter of a
//! broken signature "redeclared" and "unused") and is left out. What it says of the lines before
//! stands: a shell runs a script's commands up to the one it cannot parse, so an error further
//! down hides nothing above it. And bugloop's own Python rule, which
//! cannot read such a file, has nothing left to check once ruff's syntax error is published.

use std::collections::{BTreeMap, BTreeSet};

use crate::hit::{Candidate, Hit, Level};

/// Whether `hit` is `tool`'s word that its file does not parse, or cannot be read as source:
/// ruff's `invalid-syntax` (`E999` before 0.8) and `E902` (not UTF-8, unreadable), biome's
/// `parse`, shellcheck's parser errors (`SC1xxx` at error level; its parser's warnings, such as
/// a `source` it does not follow, are not).
pub(crate) fn is_parse_error(tool: &str, hit: &Hit) -> bool {
    match tool {
        "ruff" => matches!(hit.rule.as_str(), "invalid-syntax" | "E999" | "E902"),
        "biome" => hit.rule == "parse",
        "shellcheck" => hit.rule.starts_with("SC1") && hit.level == Level::Error,
        _ => false,
    }
}

/// Of each file `tool` could not parse, keeps its first parse error (by line) and what it says
/// of the lines before that one.
pub(crate) fn first_parse_error_only(tool: &str, hits: &mut Vec<Hit>) {
    let mut first: BTreeMap<&str, (u32, usize)> = BTreeMap::new();
    for (index, hit) in hits.iter().enumerate() {
        if is_parse_error(tool, hit) {
            let kept = first.entry(&hit.file).or_insert((hit.line, index));
            if hit.line < kept.0 {
                *kept = (hit.line, index);
            }
        }
    }
    let broken: BTreeMap<String, (u32, usize)> = first
        .into_iter()
        .map(|(file, first)| (file.to_owned(), first))
        .collect();
    let mut index = 0;
    hits.retain(|hit| {
        index += 1;
        broken
            .get(&hit.file)
            .is_none_or(|&(line, first)| hit.line < line || first == index - 1)
    });
}

/// The files ruff found do not parse, on a line the change adds: that syntax error is published,
/// and a file Python cannot parse has no read past an end that could run, so bugloop-python has
/// nothing left to check there. A file only Python 3.11 cannot parse (newer syntax) is not one.
pub(crate) fn unparseable_by_ruff(candidates: &[Candidate]) -> BTreeSet<&str> {
    candidates
        .iter()
        .filter(|c| c.tool == "ruff" && is_parse_error(&c.tool, &c.hit))
        .map(|c| c.hit.file.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(rule: &str, file: &str, line: u32) -> Hit {
        Hit {
            rule: rule.to_owned(),
            level: Level::Error,
            message: String::new(),
            file: file.to_owned(),
            line,
            end_line: None,
            url: None,
            security: false,
        }
    }

    /// biome's answer on `function f(a {`: four parse errors and the recovery's lint.
    #[test]
    fn a_broken_file_is_its_first_parse_error_alone() {
        let mut hits = vec![
            hit("lint/correctness/noUnusedVariables", "bad.js", 1),
            hit("parse", "bad.js", 2),
            hit("parse", "bad.js", 1),
            hit("lint/suspicious/noDuplicateParameters", "bad.js", 2),
            hit("lint/security/noGlobalEval", "good.js", 4),
        ];
        first_parse_error_only("biome", &mut hits);
        assert_eq!(
            hits,
            vec![
                hit("parse", "bad.js", 1),
                hit("lint/security/noGlobalEval", "good.js", 4)
            ]
        );
        // shellcheck's `if` without `fi`: two parser errors on one line, what it says above them
        // stays (a shell runs those lines); a `source` it does not follow is a parser warning,
        // and that file's other hits stay.
        let mut script = vec![
            hit("SC2115", "a.sh", 1),
            hit("SC1046", "a.sh", 2),
            hit("SC1073", "a.sh", 2),
            hit("SC2086", "a.sh", 5),
            Hit {
                level: Level::Warning,
                ..hit("SC1091", "b.sh", 1)
            },
            hit("SC2115", "b.sh", 3),
        ];
        first_parse_error_only("shellcheck", &mut script);
        let kept: Vec<&str> = script.iter().map(|h| h.rule.as_str()).collect();
        assert_eq!(kept, ["SC2115", "SC1046", "SC1091", "SC2115"]);
        // Another tool's rule named `parse` is not a parse error.
        let mut other = vec![hit("parse", "a.py", 1), hit("S608", "a.py", 3)];
        first_parse_error_only("ruff", &mut other);
        assert_eq!(other.len(), 2);
    }
}
