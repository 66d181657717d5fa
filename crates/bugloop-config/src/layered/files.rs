//! Reading the layers from disk and the environment: the user's file, the repository's, the
//! `BUGLOOP_*` variables, each read as plain UTF-8 text or refused with where and why.

use std::path::{Path, PathBuf};

use crate::{
    BaseScope, BranchConfig, CONFIG_PATH, ConfigError, Loaded, Origin, SourceText, Sources,
    load_layered,
};

/// What [`load`] reads.
#[derive(Debug, Clone, Default)]
pub struct LocalFiles {
    /// The repository's root: its `.bugloop/config.yml` is the branch's file.
    pub repo_root: PathBuf,
    /// `--config FILE` / `BUGLOOP_CONFIG`: the user's file, which must exist. Without it,
    /// `$XDG_CONFIG_HOME/bugloop/config.yml` (default `~/.config/bugloop/config.yml`) if it exists.
    pub user_file: Option<PathBuf>,
    /// The base commit's file: its label (`main@1a2b3c4:.bugloop/config.yml`) and bytes
    /// (`None` when there is no base or no file there).
    pub base: Option<(String, Vec<u8>)>,
    pub branch_config: BranchConfig,
    /// Where the branch's file is read.
    pub branch_file: BranchFile,
    /// The operator's configuration, when an operator runs bugloop for the repository.
    pub operator: Option<SourceText>,
    pub base_scope: BaseScope,
}

/// Where the branch's `.bugloop/config.yml` is read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BranchFile {
    /// In the working tree under [`LocalFiles::repo_root`] (a local run).
    #[default]
    WorkingTree,
    /// As a commit holds it, with its label (a pull request's pinned head: a runner's checkout
    /// may be the base's, whose file says nothing of what the pull request tries); `None` when
    /// the commit has no such file.
    Commit(Option<(String, Vec<u8>)>),
}

/// The user's default configuration file, from `XDG_CONFIG_HOME` or `HOME` in `env`.
pub fn default_user_file(env: &[(String, String)]) -> Option<PathBuf> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let dir = match var("XDG_CONFIG_HOME").filter(|d| Path::new(d).is_absolute()) {
        Some(dir) => PathBuf::from(dir),
        None => Some(PathBuf::from(var("HOME")?))
            .filter(|home| home.is_absolute())?
            .join(".config"),
    };
    Some(dir.join("bugloop/config.yml"))
}

/// The process environment as configuration reads it: a `BUGLOOP_*` variable whose name or value
/// is not UTF-8 is an error naming it; other such variables are not configuration and are left
/// out. (`std::env::vars` would panic on them.)
pub fn environment(
    vars: impl IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Result<Vec<(String, String)>, ConfigError> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for (name, value) in vars {
        match (name.to_str(), value.to_str()) {
            (Some(name), Some(value)) => out.push((name.to_owned(), value.to_owned())),
            _ if name.as_bytes().starts_with(crate::ENV_PREFIX.as_bytes()) => {
                let (what, bytes) = match name.to_str() {
                    Some(_) => ("value", value.as_bytes()),
                    None => ("name", name.as_bytes()),
                };
                return Err(ConfigError::Invalid {
                    origin: Origin::Env {
                        var: name.to_string_lossy().into_owned(),
                    },
                    path: String::new(),
                    message: format!("its {what} is not UTF-8 text ({})", first_bad_byte(bytes)),
                });
            }
            _ => {}
        }
    }
    Ok(out)
}

/// `byte 0xff at offset 4`: the first byte that is not UTF-8.
pub(super) fn first_bad_byte(bytes: &[u8]) -> String {
    let offset = match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) => error.valid_up_to(),
    };
    match bytes.get(offset) {
        Some(byte) => format!("byte {byte:#04x} at offset {offset}"),
        None => format!("offset {offset}"),
    }
}

pub(super) fn read_text(path: &Path, required: bool) -> Result<Option<SourceText>, ConfigError> {
    // A default file in a directory this user cannot enter (HOME still root's after `sudo -E`
    // or `setpriv`) is not there for them: absent, as if HOME had none. One that is there but
    // unreadable is an error.
    if !required
        && std::fs::symlink_metadata(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    {
        return Ok(None);
    }
    match crate::read_config_bytes(path) {
        Ok(bytes) => Ok(Some(SourceText::new(
            path.display().to_string(),
            utf8(bytes, &path.display().to_string())?,
        ))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !required => Ok(None),
        Err(source) => Err(ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The file's text; otherwise an error with the line, column (in bytes) and offset of the first
/// byte that is not UTF-8.
pub(crate) fn utf8(bytes: Vec<u8>, label: &str) -> Result<String, ConfigError> {
    String::from_utf8(bytes).map_err(|error| {
        let bytes = error.as_bytes();
        let valid = bytes
            .get(..error.utf8_error().valid_up_to())
            .unwrap_or(bytes);
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        let column = valid.iter().rev().take_while(|b| **b != b'\n').count() + 1;
        ConfigError::Invalid {
            origin: Origin::File {
                path: PathBuf::from(label),
                line,
                column,
            },
            path: String::new(),
            message: format!("is not UTF-8 text ({})", first_bad_byte(bytes)),
        }
    })
}

/// Why the branch's `.bugloop/config.yml` under `root` is not a plain file of the tree (a
/// `.bugloop` that is a link or not a directory, a file that is a link or not a regular file),
/// or `None` (also when it is absent).
pub fn branch_file_problem(root: &Path) -> Option<String> {
    let directory = root.join(".bugloop");
    match std::fs::symlink_metadata(&directory) {
        Err(_) => return None,
        Ok(m) if m.file_type().is_symlink() => {
            return Some(".bugloop is a symbolic link".to_owned());
        }
        Ok(m) if !m.is_dir() => return Some(".bugloop is not a directory".to_owned()),
        Ok(_) => {}
    }
    match std::fs::symlink_metadata(root.join(CONFIG_PATH)) {
        Err(_) => None,
        Ok(m) if m.file_type().is_symlink() => Some("is a symbolic link".to_owned()),
        Ok(m) if !m.is_file() => Some("is not a regular file".to_owned()),
        Ok(_) => None,
    }
}

/// Reads the user's file and the branch's `.bugloop/config.yml` from disk, takes the base
/// commit's file as given (the caller reads it from git), and builds the configuration with
/// [`load_layered`].
pub fn load(
    files: &LocalFiles,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Loaded, ConfigError> {
    let env: Vec<(String, String)> = env.into_iter().collect();
    let user = match &files.user_file {
        Some(path) => read_text(path, true)?,
        None => match default_user_file(&env) {
            Some(path) => read_text(&path, false)?,
            None => None,
        },
    };
    let branch_path = files.repo_root.join(CONFIG_PATH);
    let (branch_label, branch) = match &files.branch_file {
        BranchFile::WorkingTree => (
            branch_path.display().to_string(),
            branch_in_tree(files, &branch_path),
        ),
        BranchFile::Commit(None) => (String::new(), Ok(None)),
        BranchFile::Commit(Some((label, bytes))) => (
            label.clone(),
            match utf8(bytes.clone(), label) {
                Ok(text) => Ok(Some(SourceText::new(label, text))),
                // Read only to list what it would change; it cannot stop the run.
                Err(_) if files.branch_config == BranchConfig::Ignore => Ok(None),
                Err(error) => Err(error),
            },
        ),
    };
    let base = match &files.base {
        Some((label, bytes)) => Some(SourceText::new(label, utf8(bytes.clone(), label)?)),
        None => None,
    };
    let sources = |branch: Option<SourceText>| Sources {
        base: base.clone(),
        branch,
        user: user.clone(),
        operator: files.operator.clone(),
        env: env.clone(),
        branch_config: files.branch_config,
        base_scope: files.base_scope.clone(),
    };
    match branch.and_then(|branch| load_layered(&sources(branch))) {
        // A branch's file that does not read stops only a run that trusts the branch. One that
        // takes the branch's review settings alone reads the trusted configuration and says
        // why: a branch must not stop its own review by breaking its file. The branch is to
        // blame when the trusted layers read without it (an error the loader cannot place in
        // the file, such as a value of a flow mapping out of range, included); otherwise the
        // error is the trusted configuration's, and stops the run.
        Err(error)
            if files.branch_config == BranchConfig::ReviewSettings && !branch_label.is_empty() =>
        {
            let Ok(mut loaded) = load_layered(&sources(base.clone())) else {
                return Err(error);
            };
            loaded.branch = Some(branch_label);
            loaded.branch_differs = true;
            loaded.branch_unreadable = Some(error.to_string());
            Ok(loaded)
        }
        loaded => loaded,
    }
}

/// The branch's file in the working tree, at `branch_path`.
fn branch_in_tree(
    files: &LocalFiles,
    branch_path: &Path,
) -> Result<Option<SourceText>, ConfigError> {
    // The branch chooses what this path is: only a regular file in a real directory is read,
    // never through a link to a file or a directory elsewhere (whose values could end up in
    // messages and findings), never a FIFO that would block.
    Ok(
        if let Some(problem) = branch_file_problem(&files.repo_root) {
            if files.branch_config == BranchConfig::Ignore {
                None
            } else {
                return Err(ConfigError::Invalid {
                    origin: Origin::File {
                        path: branch_path.to_path_buf(),
                        line: 1,
                        column: 1,
                    },
                    path: String::new(),
                    message: format!("{problem}; bugloop reads only a regular file there"),
                });
            }
        } else if files.branch_config == BranchConfig::Ignore {
            // Read only to list what it would change; it cannot stop the run.
            read_text(branch_path, false).ok().flatten()
        } else {
            read_text(branch_path, false)?
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_with(branch_text: &str, base_text: &str, mode: BranchConfig) -> LocalFiles {
        let root = tempfile::tempdir().unwrap().keep();
        std::fs::create_dir_all(root.join(".bugloop")).unwrap();
        std::fs::write(root.join(CONFIG_PATH), branch_text).unwrap();
        LocalFiles {
            repo_root: root,
            base: Some((
                "main@1a2b3c4:.bugloop/config.yml".to_owned(),
                base_text.as_bytes().to_vec(),
            )),
            branch_config: mode,
            ..LocalFiles::default()
        }
    }

    #[test]
    fn a_branch_file_that_does_not_read_stops_only_a_run_that_trusts_it() {
        let base = "review:\n  threshold: 5\nfix:\n  verify_commands: [make test]\n";
        for broken in [
            "review:\n  threshold: [\n",
            "review:\n  threshold: 11\n",
            "bogus: 1\n",
        ] {
            let files = files_with(broken, base, BranchConfig::ReviewSettings);
            let loaded = load(&files, Vec::new()).unwrap();
            let why = loaded.branch_unreadable.as_deref().unwrap_or_default();
            assert!(why.contains(".bugloop/config.yml:"), "{broken:?}: {why}");
            assert_eq!(loaded.config.review.threshold.get(), 5, "the base's value");
            assert_eq!(loaded.config.fix.verify_commands.len(), 1);
            assert!(loaded.ignored.is_empty(), "nothing is said removed");
            let trusted = files_with(broken, base, BranchConfig::Trust);
            assert!(load(&trusted, Vec::new()).is_err(), "{broken:?}");
        }
        // An error the loader cannot place in the branch's file is still the branch's.
        let flow = files_with(
            "review: {dedup_min_overlap: 2.0}\n",
            base,
            BranchConfig::ReviewSettings,
        );
        assert!(load(&flow, Vec::new()).unwrap().branch_unreadable.is_some());
        // The trusted file's own error still stops the run.
        let files = files_with(
            base,
            "review:\n  threshold: 11\n",
            BranchConfig::ReviewSettings,
        );
        assert!(load(&files, Vec::new()).is_err());
        // A branch's file that reads is its review settings, as before.
        let files = files_with(
            "review:\n  threshold: 4\n",
            base,
            BranchConfig::ReviewSettings,
        );
        let loaded = load(&files, Vec::new()).unwrap();
        assert_eq!(
            (
                loaded.config.review.threshold.get(),
                loaded.branch_unreadable
            ),
            (4, None)
        );
    }
}
