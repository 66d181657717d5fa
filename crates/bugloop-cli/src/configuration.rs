//! Loading configuration for a command: the base commit's `.bugloop/config.yml` (read from git),
//! the branch's own file, the user's file and `BUGLOOP_*` variables, and the warnings about the
//! branch's settings that were ignored.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use bugloop_config::{BranchConfig, CONFIG_PATH, Loaded, LocalFiles};
use bugloop_forge::git::Git;

/// Which configuration the user asked for on the command line.
#[derive(Debug, Clone, Default)]
pub struct ConfigChoice {
    /// `--config FILE` / `BUGLOOP_CONFIG`.
    pub file: Option<PathBuf>,
    /// `--trust-branch-config`.
    pub trust_branch: bool,
}

/// Loads the configuration of the repository at `cwd` (or of `cwd` itself outside one) and
/// warns on standard error about each of the branch's settings that was ignored.
pub fn load(cwd: &Path, choice: &ConfigChoice) -> Result<(Option<Git>, Loaded)> {
    let git = Git::open(cwd).ok();
    let repo_root = git
        .as_ref()
        .map_or_else(|| crate::repository_root(cwd), |g| g.root().to_path_buf());
    let base = git.as_ref().and_then(|git| {
        let (label, commit) = git.trusted_base()?;
        let bytes = git.show(&commit, CONFIG_PATH)?;
        Some((format!("{label}:{CONFIG_PATH}"), bytes))
    });
    let files = LocalFiles {
        repo_root,
        user_file: choice.file.clone(),
        base,
        branch_config: if choice.trust_branch {
            BranchConfig::Trust
        } else {
            BranchConfig::ReviewSettings
        },
    };
    let env = bugloop_config::environment(std::env::vars_os())?;
    let loaded = bugloop_config::load(&files, env)?;
    warn_ignored(&loaded)?;
    Ok((git, loaded))
}

fn warn_ignored(loaded: &Loaded) -> Result<()> {
    let mut stderr = std::io::stderr().lock();
    for ignored in &loaded.ignored {
        let (verb, at) = match ignored.line {
            Some(line) => ("sets", format!(" (line {line})")),
            None => ("removes", String::new()),
        };
        writeln!(
            stderr,
            "warning: {CONFIG_PATH} on this branch {verb} {}{at}; ignored: commands and sandbox \
             settings come from trusted configuration (the base commit, your own config). Run \
             with --trust-branch-config to accept them for this run.",
            ignored.key
        )?;
    }
    Ok(())
}
