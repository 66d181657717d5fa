//! Running every chosen analyzer at once on a change: the tools on the change's files, the
//! type checkers on the files that import it ([`crate::breakage`]), and bugloop's own checks of
//! the added lines; then one finding a place.

use crate::breakage::{check_importers, check_project};
use crate::importers::ImportersChecked;
use crate::input::{files_for, regular_file};
use crate::run::{Analysis, AnalyzerRun, Request, RunStatus, Unchecked, run_one, write_config_dir};
use crate::scope::ChangedLines;
use crate::{Choice, suppressions_added};

/// Runs every applicable analyzer at once and collects the candidates.
pub async fn analyze(request: Request<'_>) -> Analysis {
    let changed = ChangedLines::of(request.diff);
    let mut analysis = Analysis {
        candidates: if request.alone {
            Vec::new()
        } else {
            let mut own = suppressions_added(request.diff);
            own.extend(crate::shadow::shadows_added(
                request.diff,
                request.workspace,
            ));
            own.extend(crate::secrets::secrets_added(request.diff));
            own.extend(crate::file_wide::under_a_kept_wide_suppression(
                request.diff,
                request.workspace,
            ));
            own
        },
        runs: Vec::new(),
    };
    // A change that only takes lines away may still break the files that import it.
    if changed.is_empty() && request.base.is_none() {
        return analysis;
    }
    let config_dir = match write_config_dir() {
        Ok(dir) => dir,
        Err(reason) => {
            analysis
                .runs
                .extend(none_checked(&request, &changed, &reason));
            return analysis;
        }
    };
    let jobs = request.choices.iter().filter_map(|choice| {
        let files = tool_files(&request, choice, &changed);
        (!files.is_empty()).then(|| run_tool(&request, choice, files, config_dir.path(), &changed))
    });
    let checks = request.choices.iter().filter_map(|choice| match choice {
        Choice::BuiltIn(tool) => Some(check_importers(&request, tool, choice, config_dir.path())),
        Choice::Custom(_) => None,
    });
    let (runs, checks) = futures_util::future::join(
        futures_util::future::join_all(jobs),
        futures_util::future::join_all(checks),
    )
    .await;
    let mut projects = Vec::new();
    for (run, candidates, broken_elsewhere) in runs {
        if !broken_elsewhere.is_empty() {
            projects.push((run.name.clone(), broken_elsewhere));
        }
        analysis.runs.push(run);
        analysis.candidates.extend(candidates);
    }
    let mut checks: Vec<_> = checks.into_iter().flatten().collect();
    checks.extend(compile_again(&request, &mut analysis, &projects, config_dir.path()).await);
    for (name, (checked, candidates)) in checks {
        with_importers(&mut analysis.runs, name, checked);
        analysis.candidates.extend(candidates);
    }
    one_finding_a_place(&mut analysis, request.workspace);
    analysis
}

/// Each compiler's checker whose run reported a compile error off the change's lines (`broken`:
/// their files), the project compiled again at head and at the base, to say which the change
/// caused (rare, so one after the other). An error that could not be compared with the base may
/// be the change's: its file is said not checked, which makes the review incomplete.
async fn compile_again<'r>(
    request: &'r Request<'_>,
    analysis: &mut Analysis,
    broken: &[(String, Vec<String>)],
    config_dir: &std::path::Path,
) -> Vec<(&'r str, (ImportersChecked, Vec<crate::hit::Candidate>))> {
    let changed = ChangedLines::of(request.diff);
    let mut checks = Vec::new();
    for choice in &request.choices {
        let Choice::BuiltIn(tool) = choice else {
            continue;
        };
        let Some((_, files_broken)) = broken.iter().find(|(name, _)| name == tool.name) else {
            continue;
        };
        let files = tool_files(request, choice, &changed);
        let Some((name, (checked, candidates))) =
            check_project(request, tool, choice, &files, config_dir).await
        else {
            continue;
        };
        if let Some(reason) = &checked.not_checked
            && let Some(run) = analysis.runs.iter_mut().find(|run| run.name == tool.name)
        {
            run.unanalyzed
                .extend(files_broken.iter().map(|file| Unchecked {
                    path: file.clone(),
                    reason: format!(
                        "a compile error here, outside the change's lines, could not be compared \
                     with the base: {reason}"
                    ),
                }));
        }
        checks.push((name, (checked, candidates)));
    }
    checks
}

/// The change's files `choice` is given: a compiler's checker's are every source and manifest
/// the change touches ([`crate::input::project_files`]), any other's those with added lines.
fn tool_files(request: &Request<'_>, choice: &Choice, changed: &ChangedLines) -> Vec<String> {
    match choice {
        Choice::BuiltIn(tool) if tool.project.is_some() => {
            crate::input::project_files(tool, request.diff, request.workspace)
        }
        _ => files_for(choice, changed, request.workspace),
    }
}

/// One tool's run on the change's files: biome's in a copy of the tree
/// ([`crate::scripts::run_in_copy`]), any other's in the tree.
async fn run_tool(
    request: &Request<'_>,
    choice: &Choice,
    files: Vec<String>,
    config_dir: &std::path::Path,
    changed: &ChangedLines,
) -> (AnalyzerRun, Vec<crate::hit::Candidate>, Vec<String>) {
    match choice {
        Choice::BuiltIn(tool) if tool.name == "biome" && !request.alone => {
            crate::scripts::run_in_copy(request, choice, files, config_dir, changed).await
        }
        _ => run_one(request, choice, files, config_dir, changed).await,
    }
}

/// Folds what the tools said of one place into one finding: the strongest hit of a place, a
/// suppression into the hit it silences, a defect two tools check, one finding a line; and a
/// file ruff could not parse is its syntax error, not bugloop-python's file not checked.
fn one_finding_a_place(analysis: &mut Analysis, workspace: &std::path::Path) {
    crate::place::keep_the_strongest_of_each_place(&mut analysis.candidates);
    let unparseable = crate::parse_errors::unparseable_by_ruff(&analysis.candidates);
    for run in analysis
        .runs
        .iter_mut()
        .filter(|r| r.name == "bugloop-python")
    {
        run.unanalyzed
            .retain(|unchecked| !unparseable.contains(unchecked.path.as_str()));
    }
    crate::suppression::fold_into_hits(&mut analysis.candidates);
    crate::overlap::fold_overlaps(&mut analysis.candidates, |file| {
        let path = regular_file(workspace, file)?;
        std::fs::read_to_string(path).ok()
    });
    crate::place::one_per_line(&mut analysis.candidates);
}

/// bugloop's own failure (a full or unwritable temporary directory): every file an analyzer
/// reads is one it could not check, which makes the review incomplete.
fn none_checked(request: &Request<'_>, changed: &ChangedLines, reason: &str) -> Vec<AnalyzerRun> {
    request
        .choices
        .iter()
        .filter_map(|choice| {
            let files = tool_files(request, choice, changed);
            (!files.is_empty()).then(|| AnalyzerRun::none_checked(choice.name(), &files, reason))
        })
        .collect()
}

/// Records a check of the importers on `name`'s run; a tool the change's own files did not
/// call for (a change that only takes lines away) gets a run of its own.
fn with_importers(runs: &mut Vec<AnalyzerRun>, name: &str, checked: ImportersChecked) {
    if let Some(run) = runs.iter_mut().find(|run| run.name == name) {
        run.importers = Some(checked);
        return;
    }
    runs.push(AnalyzerRun {
        name: name.to_owned(),
        status: RunStatus::Ran {
            files: 0,
            hits: 0,
            candidates: checked.broken,
        },
        seconds: 0.0,
        unanalyzed: Vec::new(),
        importers: Some(checked),
    });
}
