//! A finding a type checker raised in a file the change does not edit (a caller of a function
//! the change renamed) stands on the checker's word that the change breaks that file. Its code
//! does not change when the developer mends the cause elsewhere (the old name put back): it is
//! resolved when the checker, run again on the files that import the change, no longer reports
//! it, or when the change no longer touches anything that file imports. A compiler's checker
//! (clippy, go vet) compiles the whole project: its finding off the change's lines is resolved
//! when the project compiles again without that error.

use std::collections::BTreeMap;

use bugloop_analyzers::{Analysis, Candidate};
use bugloop_diff::Diff;
use bugloop_domain::filter::ExistingFinding;

/// The type checkers whose findings can stand on files the change does not edit.
const CHECKERS: &[&str] = &["tsc", "ty"];
/// The compilers' checkers whose compile errors can stand there.
const COMPILERS: &[&str] = &["clippy", "go-vet"];

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
        if !(CHECKERS.contains(&tool.as_str()) || COMPILERS.contains(&tool.as_str()))
            || !chosen.contains(&tool.as_str())
            || on_added_line(file, finding.line)
        {
            continue;
        }
        if COMPILERS.contains(&tool.as_str()) {
            if let Some(why) = compiles_again(analysis, tool, file, finding, &is_tracked) {
                resolved.insert(finding.id.as_str().to_owned(), why);
            }
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

/// Why a compiler's finding off the change's lines is no longer broken, if it is not: the
/// compiler's run this time reported no compile error off them, or compiled the project again
/// and this error was not among the new ones. Held while the run did not run, could not compare
/// with the base, or reported a compile error on the change's own lines (a build that stops
/// there may not reach the finding's code).
fn compiles_again(
    analysis: &Analysis,
    tool: &str,
    file: &str,
    finding: &ExistingFinding,
    is_tracked: &impl Fn(&Candidate, &ExistingFinding) -> bool,
) -> Option<String> {
    let Some(run) = analysis.runs.iter().find(|run| run.name == tool) else {
        return Some(format!(
            "{tool} has nothing to report here: the change no longer edits a file it checks"
        ));
    };
    let stops_early = analysis
        .candidates
        .iter()
        .any(|c| c.tool == tool && !c.unedited && c.score.get() >= 8);
    if !matches!(run.status, bugloop_analyzers::RunStatus::Ran { .. })
        || stops_early
        || silenced(analysis, file)
    {
        return None;
    }
    match &run.importers {
        None => Some(format!(
            "{tool} no longer reports a compile error outside the change's lines: this file \
             is not broken"
        )),
        Some(check) if check.not_checked.is_some() => None,
        Some(_) if analysis.candidates.iter().any(|c| is_tracked(c, finding)) => None,
        Some(_) => Some(format!(
            "{tool} no longer reports it: the project compiled again with the change as it is \
             now, this file is not broken"
        )),
    }
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
                    whole_project: false,
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

    #[test]
    fn a_compilers_finding_is_resolved_only_once_the_project_compiles_past_it() {
        let orders = tracked("go-vet", "orders.go");
        let run = |status: RunStatus, importers: Option<ImportersChecked>| Analysis {
            candidates: Vec::new(),
            runs: vec![AnalyzerRun {
                name: "go-vet".to_owned(),
                status,
                seconds: 0.0,
                unanalyzed: Vec::new(),
                importers,
            }],
        };
        let ran = || RunStatus::Ran {
            files: 1,
            hits: 0,
            candidates: 0,
        };
        let go = |analysis: &Analysis| {
            let diff = bugloop_diff::parse(
                "diff --git a/pricing.go b/pricing.go\n--- a/pricing.go\n+++ b/pricing.go\n@@ -1 +1 @@\n-a\n+b\n",
            );
            no_longer_broken(
                &diff,
                std::slice::from_ref(&orders),
                analysis,
                &["go-vet"],
                |_, _| false,
            )
            .into_values()
            .collect::<Vec<_>>()
        };
        // No compile error outside the change's lines this time.
        assert_eq!(go(&run(ran(), None)).len(), 1);
        // Compiled again and not among the new errors; or not compared with the base.
        let compared = |not_checked: Option<&str>| ImportersChecked {
            whole_project: true,
            not_checked: not_checked.map(str::to_owned),
            ..ImportersChecked::default()
        };
        assert_eq!(go(&run(ran(), Some(compared(None)))).len(), 1);
        assert!(go(&run(ran(), Some(compared(Some("too large"))))).is_empty());
        // The tool did not run, or the change's own code does not compile: held.
        let not_run = RunStatus::NotRun {
            reason: "go is not installed".to_owned(),
        };
        assert!(go(&run(not_run, None)).is_empty());
        let mut stopped = run(ran(), None);
        stopped.candidates.push(Candidate {
            tool: "go-vet".to_owned(),
            hit: bugloop_analyzers::Hit {
                rule: "compile".to_owned(),
                level: bugloop_analyzers::Level::Error,
                message: "undefined: x".to_owned(),
                file: "pricing.go".to_owned(),
                line: 1,
                end_line: None,
                url: None,
                security: false,
                why: None,
            },
            score: bugloop_domain::score::Score::saturating(8),
            category: bugloop_domain::finding::Category::Logic,
            evidence: "b".to_owned(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        });
        assert!(go(&stopped).is_empty());
        // The change no longer edits a file go vet checks.
        assert_eq!(go(&Analysis::default()).len(), 1);
    }
}
