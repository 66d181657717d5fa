//! What a built-in analyzer is run with: the arguments of each tool are made from it (its own
//! module, so the tools' modules and the table of built-ins do not import each other).

use std::path::Path;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Invocation<'a> {
    /// The changed files it reads, relative to the workspace.
    pub files: &'a [String],
    /// The directory of bugloop's configuration files for the tools (read-only in the sandbox).
    pub config_dir: &'a str,
    /// The tree under review on the host (tsc is given its declaration files).
    pub workspace: &'a Path,
    /// Every path the change touches (tsc reads no configuration file the change edits).
    pub edited: &'a [String],
}

/// Owned arguments.
pub(crate) fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// `args`, then `--` and the files (a name starting with `-` is not taken for an option).
pub(crate) fn with_files(mut args: Vec<String>, files: &[String]) -> Vec<String> {
    args.push("--".to_owned());
    args.extend(files.iter().cloned());
    args
}
