//! Reading the tree under review on the host: a file of the branch's is read only where it is
//! what it says, a regular file inside the tree reached through no link.

use std::path::{Path, PathBuf};

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
