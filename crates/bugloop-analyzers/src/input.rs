//! Which of the change's files an analyzer is given: those its globs match, regular files at
//! head reached through no symlink, and, for a built-in tool, none too big for a linter. A
//! bundle or generated file (a megabyte of minified JavaScript) costs a tool gigabytes of memory
//! and minutes, and says nothing a person wrote; it is left out by name, so the review lists it
//! as not analyzed, and the model's review still reads it.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::Choice;
use crate::builtin::BuiltIn;
use crate::run::Unchecked;
use crate::scope::ChangedLines;

/// The largest file a built-in analyzer is given.
pub(crate) const MAX_GIVEN_BYTES: u64 = 512 * 1024;
/// The longest line of a file a built-in analyzer is given: longer is minified or generated.
pub(crate) const MAX_GIVEN_LINE: usize = 10_000;

/// What an analyzer is given of the change.
#[derive(Debug, Default)]
pub(crate) struct Given {
    pub files: Vec<String>,
    /// Files it reads that are too big for it, and why.
    pub left_out: Vec<Unchecked>,
}

/// The changed files an analyzer reads: those matching its globs, regular files at head; none
/// when it checks a project and there is none (clippy without a `Cargo.toml` at the root).
pub(crate) fn files_for(choice: &Choice, changed: &ChangedLines, workspace: &Path) -> Given {
    if let Choice::BuiltIn(BuiltIn {
        project: Some(project),
        ..
    }) = choice
        && regular_file(workspace, project).is_none()
    {
        return Given::default();
    }
    let globs: Vec<String> = match choice {
        Choice::BuiltIn(tool) => tool.files.iter().map(|g| (*g).to_owned()).collect(),
        Choice::Custom(custom) if custom.files.is_empty() => vec!["**".to_owned()],
        Choice::Custom(custom) => custom.files.clone(),
    };
    let Some(set) = glob_set(&globs) else {
        return Given::default();
    };
    let mut given = Given::default();
    // A tool is given names as text: the name itself, not its quoted form (a tab in a name).
    for file in changed.files().filter_map(bugloop_domain::paths::text_name) {
        let Some(path) = set
            .is_match(&file)
            .then(|| regular_file(workspace, &file))
            .flatten()
        else {
            continue;
        };
        // A tool the user configured is given what its globs say: they chose it for these files.
        match too_big(&path).filter(|_| matches!(choice, Choice::BuiltIn(_))) {
            Some(reason) => given.left_out.push(Unchecked { path: file, reason }),
            None => given.files.push(file),
        }
    }
    given
}

/// Why the file at `path` is too big for a linter, if it is.
fn too_big(path: &Path) -> Option<String> {
    let size = std::fs::metadata(path).ok()?.len();
    if size > MAX_GIVEN_BYTES {
        return Some(format!(
            "it is {} KiB, over the {} KiB an analyzer is given (a bundle or generated file?)",
            size / 1024,
            MAX_GIVEN_BYTES / 1024
        ));
    }
    let text = std::fs::read(path).ok()?;
    let longest = text.split(|b| *b == b'\n').map(<[u8]>::len).max()?;
    (longest > MAX_GIVEN_LINE).then(|| {
        format!(
            "a line of it is {longest} bytes long, over the {MAX_GIVEN_LINE} an analyzer is \
             given (minified or generated?)"
        )
    })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::built_in;

    #[test]
    fn a_linter_is_not_given_a_bundle_or_a_minified_file_a_configured_tool_is() {
        let root = tempfile::tempdir().unwrap();
        let write =
            |name: &str, text: String| std::fs::write(root.path().join(name), text).unwrap();
        write("small.js", "let x = 1;\n".to_owned());
        write("bundle.js", "var a = 1;\n".repeat(60_000));
        write("app.min.js", format!("{}\n", "a+".repeat(6_000)));
        let added = |name: &str| crate::scope::adding(name, &["x"]).files;
        let mut diff = crate::scope::adding("small.js", &["let x = 1;"]);
        diff.files.extend(added("bundle.js"));
        diff.files.extend(added("app.min.js"));
        let changed = ChangedLines::of(&diff);
        let biome = Choice::BuiltIn(built_in("biome").unwrap());
        let given = files_for(&biome, &changed, root.path());
        assert_eq!(given.files, ["small.js"]);
        let left: Vec<(&str, &str)> = given
            .left_out
            .iter()
            .map(|u| (u.path.as_str(), u.reason.as_str()))
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(
            left[0].0 == "app.min.js" && left[0].1.contains("12000 bytes"),
            "{left:?}"
        );
        assert!(
            left[1].0 == "bundle.js" && left[1].1.contains("644 KiB"),
            "{left:?}"
        );
        let custom = Choice::Custom(
            crate::CustomAnalyzer::new(
                "mine".to_owned(),
                Some("mine {files}"),
                None,
                vec!["**/*.js".to_owned()],
                Vec::new(),
            )
            .unwrap(),
        );
        assert_eq!(files_for(&custom, &changed, root.path()).files.len(), 3);
    }
}
