//! biome runs in a copy of the tree's scripts and manifests with bugloop's `biome.json` at its
//! root: its rules on promises infer types across the files a module imports, which biome does
//! only within the project its configuration roots, and a configuration of the branch's
//! (nested ones too) must decide nothing.

use std::path::Path;

use crate::Choice;
use crate::copy::{Copied, MAX_SCRIPT_BYTES, copy_tree, write_file};
use crate::hit::Candidate;
use crate::run::{AnalyzerRun, Request, Unchecked, run_one};
use crate::scope::ChangedLines;

/// biome on `files` in a copy of the tree's scripts ([`Copied::Scripts`]: no configuration of
/// the branch's, nested ones included) with bugloop's `biome.json` at its root. A file it was to
/// check that is not in the copy (over the size it is given, or not a regular file) is said
/// not checked.
pub(crate) async fn run_in_copy(
    request: &Request<'_>,
    choice: &Choice,
    files: Vec<String>,
    config_dir: &Path,
    changed: &ChangedLines,
) -> (AnalyzerRun, Vec<Candidate>, Vec<String>) {
    let copy = match bugloop_sandbox::owner::temp_dir("biome") {
        Ok(copy) => copy,
        Err(e) => return not_checked(choice, &files, &format!("cannot copy the tree: {e}")),
    };
    let view = copy.path().join("tree");
    let (workspace, into, given) = (request.workspace.to_path_buf(), view.clone(), files.clone());
    let copied = tokio::task::spawn_blocking(move || scripts_copy(&workspace, &into, &given))
        .await
        .map_err(|e| format!("cannot copy the tree: {e}"))
        .and_then(|copied| copied);
    let left_out = match copied {
        Ok(left_out) => left_out,
        Err(reason) => return not_checked(choice, &files, &reason),
    };
    let present: Vec<String> = files
        .iter()
        .filter(|file| !left_out.iter().any(|(name, _)| name == *file))
        .cloned()
        .collect();
    let left_out: Vec<Unchecked> = left_out
        .into_iter()
        .map(|(_, unchecked)| unchecked)
        .collect();
    let mut sandbox = request.sandbox.clone();
    sandbox.workspace = view.clone();
    sandbox.workspace_baseline = std::sync::Arc::default();
    let in_view = Request {
        workspace: &view,
        sandbox,
        ..request.clone()
    };
    let (mut run, candidates, broken) = if present.is_empty() {
        let reason = left_out
            .first()
            .map(|u| u.reason.clone())
            .unwrap_or_default();
        return not_checked(choice, &files, &reason);
    } else {
        run_one(&in_view, choice, present, config_dir, changed).await
    };
    run.unanalyzed.extend(left_out);
    (run, candidates, broken)
}

/// Copies the tree's scripts into `view`, and each of `given` (a file in a hidden directory
/// too) that is a regular file within the size biome is given; writes bugloop's configuration
/// at the root. Returns the given files left out (by the name given), with why.
fn scripts_copy(
    workspace: &Path,
    view: &Path,
    given: &[String],
) -> Result<Vec<(String, Unchecked)>, String> {
    copy_tree(workspace, view, Copied::Scripts)?;
    // biome finds a workspace package's types only where an install would link it.
    for (path, content) in crate::workspaces::package_links(workspace) {
        write_file(view, &path, &content)?;
    }
    let mut left_out = Vec::new();
    for file in given {
        // biome reads a `\\` in a name as a separator and names the file otherwise in its
        // output: its hits there could not be told from another file's.
        if file.contains('\\') {
            let reason = "biome reads the backslash in its name as a directory separator";
            left_out.push((file.clone(), unchecked(file, reason.to_owned())));
            continue;
        }
        let target = crate::copy::inside(view, file);
        if target.as_ref().is_some_and(|t| t.is_file()) {
            continue;
        }
        match crate::tree::read_at_most(workspace, file, MAX_SCRIPT_BYTES) {
            Some(content) => write_file(view, file, &content)?,
            None => {
                let reason = format!(
                    "not a regular file of at most {} MiB, which biome is given",
                    MAX_SCRIPT_BYTES >> 20
                );
                left_out.push((file.clone(), unchecked(file, reason)));
            }
        }
    }
    let configuration = crate::builtin::config_files()
        .into_iter()
        .find(|(name, _)| *name == "biome.json")
        .map(|(_, content)| content)
        .unwrap_or_default();
    write_file(view, "biome.json", configuration.as_bytes())?;
    Ok(left_out)
}

fn unchecked(file: &str, reason: String) -> Unchecked {
    Unchecked {
        path: bugloop_domain::paths::display_path(file.as_bytes()),
        reason,
    }
}

/// biome's run when its files could not be put in a copy: each said not checked.
fn not_checked(
    choice: &Choice,
    files: &[String],
    reason: &str,
) -> (AnalyzerRun, Vec<Candidate>, Vec<String>) {
    let run = AnalyzerRun::none_checked(choice.name(), files, reason);
    (run, Vec::new(), Vec::new())
}
