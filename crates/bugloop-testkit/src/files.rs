//! Files a test writes into a directory it made: each with the directories it needs.

use std::path::Path;

/// Writes `text` to `path`, relative to `root`, making its directories.
pub fn write(root: &Path, path: &str, text: &str) {
    let full = root.join(path);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(full, text).unwrap();
}
