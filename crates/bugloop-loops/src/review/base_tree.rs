//! The base commit's files the analyzers read: the configured tools' `config` paths, and the
//! change's files as the base has them for a type checker's check of their importers.

use std::path::PathBuf;

use bugloop_analyzers::Choice;

use super::ReviewRequest;
use crate::env::LoopEnv;

/// The base commit, read file by file for a type checker's check of the change's importers.
#[derive(Debug)]
pub(super) struct BaseCommit<'a> {
    pub git: &'a bugloop_git::Git,
    pub commit: &'a str,
}

impl bugloop_analyzers::BaseTree for BaseCommit<'_> {
    fn file(&self, path: &str, max: u64) -> bugloop_analyzers::BaseFile {
        match self.git.show_at_most(self.commit, path, max) {
            Ok(Some(content)) => bugloop_analyzers::BaseFile::Content(content),
            Ok(None) => bugloop_analyzers::BaseFile::Unreadable,
            Err(_) => bugloop_analyzers::BaseFile::Larger,
        }
    }
}

/// The base commit's versions of the configured tools' `config` paths, in a directory of their
/// own (`{base}`): a branch cannot change the rules its change is checked by.
pub(super) fn base_files(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    choices: &[Choice],
) -> Option<bugloop_sandbox::owner::OwnedDir> {
    let paths: Vec<&String> = choices
        .iter()
        .filter_map(|c| match c {
            Choice::Custom(custom) => Some(&custom.config),
            Choice::BuiltIn(_) => None,
        })
        .flatten()
        .collect();
    if paths.is_empty() {
        return None;
    }
    let dir = bugloop_sandbox::owner::temp_dir("base").ok()?;
    for path in paths {
        let Some(content) = env.git.show(&request.base, path) else {
            continue;
        };
        let target: PathBuf = dir.path().join(path);
        if let Some(parent) = target.parent()
            && std::fs::create_dir_all(parent).is_ok()
        {
            // A file that cannot be written is missing under `{base}`; the tool says so.
            let _ = std::fs::write(&target, content);
        }
    }
    Some(dir)
}
