//! A finding a type checker raised in a file the change does not edit (a caller of a function
//! the change renamed) stands on the checker's word that the change breaks that file. Its code
//! does not change when the developer mends the cause elsewhere (the old name put back): it is
//! resolved when the checker, run again on the files that import the change, no longer reports
//! it, or when the change no longer touches anything that file imports.

use std::collections::BTreeMap;

use bugloop_analyzers::{Analysis, Candidate};
use bugloop_diff::Diff;
use bugloop_domain::filter::ExistingFinding;

/// The type checkers whose findings can stand on files the change does not edit.
const CHECKERS: &[&str] = &["tsc", "ty"];

/// The tracked findings (open, their code as it was) that `analysis` shows the change no longer
/// breaks, with why: by id. `chosen`: the analyzers the review ran. A checker that could not
/// compare its importers with the base, or did not reach the finding's file, resolves nothing.
pub(super) fn no_longer_broken(
    diff: &Diff,
    tracked: &[ExistingFinding],
    analysis: &Analysis,
    chosen: &[&str],
    is_tracked: impl Fn(&Candidate, &ExistingFinding) -> bool,
) -> BTreeMap<String, String> {
    // A finding on a line the change adds is the tool's own run's, tracked as any other.
    let added = bugloop_analyzers::ChangedLines::of(diff);
    let on_added_line = |file: &str, line: Option<u32>| {
        line.is_some_and(|l| added.first_added(file, l, l).is_some())
    };
    let mut resolved = BTreeMap::new();
    for finding in tracked {
        let (Some((tool, _)), Some(file)) = (&finding.tool_rule, &finding.file) else {
            continue;
        };
        if !CHECKERS.contains(&tool.as_str())
            || !chosen.contains(&tool.as_str())
            || on_added_line(file, finding.line)
        {
            continue;
        }
        let check = analysis
            .runs
            .iter()
            .find(|run| run.name == *tool)
            .and_then(|run| run.importers.as_ref());
        let why = match check {
            // Nothing the change touches is imported by any file: it breaks none.
            None => format!(
                "{tool} no longer has anything to report here: the change no longer edits a \
                 module this file imports"
            ),
            Some(check) if check.not_checked.is_some() || !check.files.contains(file) => continue,
            Some(_) if analysis.candidates.iter().any(|c| is_tracked(c, finding)) => continue,
            // Silenced, not mended: the change adds a suppression to that file (`@ts-nocheck`).
            Some(_) if silenced(analysis, file) => continue,
            Some(_) => format!(
                "{tool} no longer reports it: checked again with the change as it is now, this \
                 file is not broken"
            ),
        };
        resolved.insert(finding.id.as_str().to_owned(), why);
    }
    resolved
}

/// Whether the change adds a suppression of the checkers to `file` (bugloop says each).
fn silenced(analysis: &Analysis, file: &str) -> bool {
    analysis
        .candidates
        .iter()
        .any(|c| c.tool == "bugloop" && c.hit.rule == "suppression" && c.hit.file == file)
}

#[cfg(test)]
mod tests {
    use bugloop_analyzers::{AnalyzerRun, ImportersChecked, RunStatus};
    use bugloop_domain::finding::FindingId;

    use super::*;

    fn tracked(tool: &str, file: &str) -> ExistingFinding {
        ExistingFinding {
            id: FindingId::new(format!("{tool}-TS2305-{file}-1")),
            title: String::new(),
            description: String::new(),
            file: Some(file.to_owned()),
            line: Some(1),
            end_line: None,
            evidence: None,
            status: bugloop_domain::status::ThreadStatus::Pending,
            reopenable: false,
            moved: false,
            tool_rule: Some((tool.to_owned(), "TS2305".to_owned())),
        }
    }

    fn checked(files: &[&str], not_checked: Option<&str>) -> Analysis {
        Analysis {
            candidates: Vec::new(),
            runs: vec![AnalyzerRun {
                name: "tsc".to_owned(),
                status: RunStatus::Ran {
                    files: 1,
                    hits: 0,
                    candidates: 0,
                },
                seconds: 0.0,
                unanalyzed: Vec::new(),
                importers: Some(ImportersChecked {
                    files: files.iter().map(|f| (*f).to_owned()).collect(),
                    left_out: 0,
                    broken: 0,
                    not_checked: not_checked.map(str::to_owned),
                }),
            }],
        }
    }

    fn resolved(diff: &str, finding: &ExistingFinding, analysis: &Analysis) -> Vec<String> {
        let diff = bugloop_diff::parse(diff);
        no_longer_broken(
            &diff,
            std::slice::from_ref(finding),
            analysis,
            &["tsc"],
            |_, _| false,
        )
        .into_keys()
        .collect()
    }

    const EDITS_USER: &str =
        "diff --git a/user.ts b/user.ts\n--- a/user.ts\n+++ b/user.ts\n@@ -1 +1 @@\n-a\n+b\n";

    #[test]
    fn only_a_checker_that_checked_the_file_against_the_base_resolves_its_finding() {
        let app = tracked("tsc", "app.ts");
        assert_eq!(
            resolved(EDITS_USER, &app, &checked(&["app.ts"], None)).len(),
            1
        );
        // Silenced by a suppression the change adds to the file: it stays open.
        let mut silencing = checked(&["app.ts"], None);
        let hit = bugloop_analyzers::Hit {
            rule: "suppression".to_owned(),
            level: bugloop_analyzers::Level::Warning,
            message: "@ts-nocheck".to_owned(),
            file: "app.ts".to_owned(),
            line: 1,
            end_line: None,
            url: None,
            security: false,
            why: None,
        };
        silencing.candidates.push(Candidate {
            tool: "bugloop".to_owned(),
            hit,
            score: bugloop_domain::score::Score::saturating(6),
            category: bugloop_domain::finding::Category::Maintainability,
            evidence: "// @ts-nocheck".to_owned(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        });
        assert!(resolved(EDITS_USER, &app, &silencing).is_empty());
        // Compared with nothing, or the file not reached: it stays open.
        assert!(resolved(EDITS_USER, &app, &checked(&["app.ts"], Some("too large"))).is_empty());
        assert!(resolved(EDITS_USER, &app, &checked(&["other.ts"], None)).is_empty());
        // Nothing the change edits is imported any more: it breaks nothing.
        let none = Analysis::default();
        assert_eq!(resolved(EDITS_USER, &app, &none).len(), 1);
        // Another tool's finding, or one on a line the change adds, is not this check's; one on
        // a line it does not add, in a file it edits, is.
        assert!(resolved(EDITS_USER, &tracked("ruff", "app.ts"), &none).is_empty());
        assert!(resolved(EDITS_USER, &tracked("tsc", "user.ts"), &none).is_empty());
        let mut below = tracked("tsc", "user.ts");
        below.line = Some(2);
        assert_eq!(resolved(EDITS_USER, &below, &none).len(), 1);
    }
}
