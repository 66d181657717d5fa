//! A copy of the tree under review for a checker to run in: regular files reached through no
//! link, outside `node_modules` and hidden directories, within limits. What a change breaks
//! elsewhere is checked in one ([`crate::breakage`]), and biome lints in one with bugloop's
//! configuration at its root ([`crate::biome`]).

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::importers::Language;
use crate::tree::regular_file;

/// Most files, and bytes, of the tree copied.
pub(crate) const MAX_COPIED_FILES: usize = 20_000;
const MAX_COPIED_BYTES: u64 = 256 << 20;
/// A larger file is left out of a checker's copy (at head and at the base alike).
const MAX_COPIED_FILE: u64 = 2 << 20;
/// The largest script biome is given (its own default, 1 MiB, skips a larger one with only a
/// warning of its own: a bundle or a long module would go unchecked without a word).
pub(crate) const MAX_SCRIPT_BYTES: u64 = 16 << 20;

/// What a copy of the tree holds.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Copied {
    /// The files a type checker reads.
    Read(Language),
    /// Every file of a project a compiler builds, in hidden directories too (a module a
    /// `#[path]` names, a file Go embeds), outside `.git` and directories named `skipped`
    /// (cargo's output).
    Project { skipped: &'static [&'static str] },
    /// The JavaScript and TypeScript biome lints, with the manifests it reads, but no
    /// configuration of biome's own (bugloop writes its own at the copy's root), each up to
    /// biome's size limit as bugloop sets it.
    Scripts,
}

impl Copied {
    pub(crate) fn holds(self, path: &str) -> bool {
        match self {
            Copied::Read(language) => language.reads(path),
            Copied::Project { .. } => true,
            // bugloop links the workspace's packages itself: pnpm's file, which biome parses
            // too (a document nested deep overflowed its stack), is not copied.
            Copied::Scripts => {
                let name = path.rsplit('/').next().unwrap_or(path);
                Language::TypeScript.reads(path)
                    && !name.starts_with("biome.json")
                    && path != "pnpm-workspace.yaml"
            }
        }
    }

    /// The largest file copied: a larger one is left out (at head and at the base alike).
    pub(crate) fn max_file(self) -> u64 {
        match self {
            Copied::Scripts => MAX_SCRIPT_BYTES,
            Copied::Read(_) | Copied::Project { .. } => MAX_COPIED_FILE,
        }
    }

    fn skipped(self) -> &'static [&'static str] {
        match self {
            Copied::Project { skipped } => skipped,
            Copied::Read(_) | Copied::Scripts => &[],
        }
    }
}

/// Copies what the checker reads (`copied`) from the tree at `workspace` into `view`: regular
/// files reached through no link, outside `node_modules` and hidden directories. The files left
/// out for their size are returned: none is in the copy at the base either.
pub(crate) fn copy_tree(
    workspace: &Path,
    view: &Path,
    copied: Copied,
) -> Result<BTreeSet<String>, String> {
    let mut too_large = BTreeSet::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let hidden_too = matches!(copied, Copied::Project { .. });
    for (entry, name) in crate::tree::source_files_but(workspace, copied.skipped(), hidden_too) {
        let size = entry.metadata().map_or(u64::MAX, |m| m.len());
        if !copied.holds(&name) {
            continue;
        }
        if size > copied.max_file() {
            too_large.insert(name);
            continue;
        }
        files += 1;
        bytes += size;
        if files > MAX_COPIED_FILES || bytes > MAX_COPIED_BYTES {
            return Err(format!(
                "the tree is larger than is copied for it ({MAX_COPIED_FILES} files, {} MiB)",
                MAX_COPIED_BYTES >> 20
            ));
        }
        // Read where it is a regular file still (the walk does not hold it).
        let Some(content) = regular_file(workspace, &name).and_then(|p| std::fs::read(p).ok())
        else {
            continue;
        };
        write_file(view, &name, &content)?;
    }
    Ok(too_large)
}

/// `relative` under `root` when it is a plain relative path (no `..`, not absolute).
pub(crate) fn inside(root: &Path, relative: &str) -> Option<PathBuf> {
    let name = bugloop_domain::paths::text_name(relative)?;
    let mut path = root.to_path_buf();
    for part in Path::new(&name).components() {
        let std::path::Component::Normal(part) = part else {
            return None;
        };
        path.push(part);
    }
    Some(path)
}

/// Writes `content` as `relative` under `root`, readable by the sandbox whatever the umask.
pub(crate) fn write_file(root: &Path, relative: &str, content: &[u8]) -> Result<(), String> {
    let path = inside(root, relative)
        .ok_or_else(|| format!("cannot name {relative} in a copy of the tree"))?;
    let failed = |e: std::io::Error| format!("cannot copy the tree: {e}");
    if let Some(parent) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(parent)
            .map_err(failed)?;
    }
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&path)
        .map_err(failed)?;
    out.write_all(content).map_err(failed)
}
