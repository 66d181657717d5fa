//! Which of the change's files an analyzer is given: those its globs match, regular files at
//! head reached through no symlink, whatever their size. A bundle that costs a tool more than
//! the sandbox gives it (its time limit, its memory) stops it, and the review names the file it
//! could not check and is incomplete: a size limit here would be a way past the analyzers (a
//! file padded over it, unread by the model where it is build output).

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::Choice;
use crate::builtin::BuiltIn;
use crate::scope::ChangedLines;

/// The changed files an analyzer reads: those matching its globs, regular files at head; none
/// when it checks a project and there is none (clippy without a `Cargo.toml` at the root).
pub(crate) fn files_for(choice: &Choice, changed: &ChangedLines, workspace: &Path) -> Vec<String> {
    if let Choice::BuiltIn(BuiltIn {
        project: Some(project),
        ..
    }) = choice
        && regular_file(workspace, project).is_none()
    {
        return Vec::new();
    }
    let globs: Vec<String> = match choice {
        Choice::BuiltIn(tool) => tool.files.iter().map(|g| (*g).to_owned()).collect(),
        Choice::Custom(custom) if custom.files.is_empty() => vec!["**".to_owned()],
        Choice::Custom(custom) => custom.files.clone(),
    };
    let Some(set) = glob_set(&globs) else {
        return Vec::new();
    };
    // A tool is given names as text: the name itself, not its quoted form (a tab in a name).
    changed
        .files()
        .filter_map(bugloop_domain::paths::text_name)
        .filter(|f| set.is_match(f))
        .filter(|f| regular_file(workspace, f).is_some())
        .collect()
}

pub(crate) fn glob_set(globs: &[String]) -> Option<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        // `**/x` also matches `x` at the root; a glob that does not parse matches nothing.
        builder.add(Glob::new(glob).ok()?);
        if let Some(rest) = glob.strip_prefix("**/") {
            builder.add(Glob::new(rest).ok()?);
        }
    }
    builder.build().ok()
}

/// `relative` under `root` when it is a regular file reached through no symlink: a tool's
/// report never makes bugloop read a file outside the tree on the host.
pub(crate) fn regular_file(root: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = root.to_path_buf();
    for part in Path::new(relative).components() {
        let std::path::Component::Normal(part) = part else {
            return None;
        };
        path.push(part);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
    }
    std::fs::symlink_metadata(&path)
        .ok()
        .filter(|m| m.is_file())
        .map(|_| path)
}
