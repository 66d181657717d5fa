//! Reading the tree under review on the host: a file of the branch's is read only where it is
//! what it says, a regular file inside the tree reached through no link.

use std::path::{Path, PathBuf};

/// `name` in the directory `dir` of the tree (`""` for its root), as a path from the root.
pub(crate) fn in_dir(dir: &str, name: &str) -> String {
    match dir {
        "" => name.to_owned(),
        dir => format!("{dir}/{name}"),
    }
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

/// The bytes of `relative` under `root` where it is a regular file reached through no link and
/// at most `max` bytes long.
pub(crate) fn read_at_most(root: &Path, relative: &str, max: u64) -> Option<Vec<u8>> {
    regular_file(root, relative)
        .filter(|path| std::fs::metadata(path).is_ok_and(|m| m.len() <= max))
        .and_then(|path| std::fs::read(path).ok())
}

/// The tree's regular files (reached through no link), outside hidden directories and
/// `node_modules`, each with its name relative to `root` (a name that is not UTF-8 is passed
/// over): what bugloop reads of the tree for the type checkers.
pub(crate) fn source_files(root: &Path) -> impl Iterator<Item = (ignore::DirEntry, String)> + '_ {
    source_files_but(root, &[], false)
}

/// [`source_files`] outside directories named `skipped` too (cargo's `target`), and with
/// `hidden_too`, in hidden directories (but `.git`) too.
pub(crate) fn source_files_but<'a>(
    root: &'a Path,
    skipped: &'static [&'static str],
    hidden_too: bool,
) -> impl Iterator<Item = (ignore::DirEntry, String)> + 'a {
    ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(!hidden_too)
        .follow_links(false)
        .filter_entry(move |entry| {
            let name = entry.file_name();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            name != "node_modules"
                && name != ".git"
                && !(is_dir && skipped.iter().any(|s| name == *s))
        })
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(move |entry| {
            let name = entry.path().strip_prefix(root).ok()?.to_str()?.to_owned();
            Some((entry, name))
        })
}

/// The directory holding `manifest` as a regular file of the tree above `file` (the outermost
/// for `Cargo.toml`, else the nearest).
pub(crate) fn manifest_dir(workspace: &Path, manifest: &str, file: &str) -> Option<String> {
    let mut dirs: Vec<&str> = file.match_indices('/').map(|(at, _)| &file[..at]).collect();
    // Outermost first; the root first of all.
    dirs.insert(0, "");
    let has_manifest = |dir: &&&str| {
        let path = in_dir(dir, manifest);
        regular_file(workspace, &path).is_some()
    };
    let found = match manifest {
        "Cargo.toml" => dirs.iter().find(has_manifest),
        _ => dirs.iter().rev().find(has_manifest),
    };
    found.map(|dir| (*dir).to_owned())
}

/// A temporary tree holding `files` (path, text), for tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn test_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}
