//! Loading configuration for a job: the base commit's `.bugloop/config.yml` (read from git),
//! the branch's own file, the user's file and `BUGLOOP_*` variables. The branch's settings that
//! were ignored come back as warnings for the front end to show.

use std::path::{Path, PathBuf};

use bugloop_config::{
    BaseScope, BranchConfig, BranchFile, CONFIG_PATH, Loaded, LocalFiles, RepositoryPrompts,
    SourceText,
};
use bugloop_git::Git;

use crate::AppError;

/// Which configuration the user asked for.
#[derive(Debug, Clone, Default)]
pub struct ConfigChoice {
    /// `--config FILE` / `BUGLOOP_CONFIG`.
    pub file: Option<PathBuf>,
    /// `--trust-branch-config`: accept the branch's own file in full.
    pub trust_branch: bool,
    /// An operator runs bugloop for the repository (the App server): its configuration is above
    /// the repository's, which sets only what the operator allows.
    pub operator: Option<OperatorConfig>,
}

/// What an operator keeps for itself.
#[derive(Debug, Clone, Default)]
pub struct OperatorConfig {
    /// The operator's configuration (the server settings' `config` section).
    pub config: Option<SourceText>,
    /// Keys beyond `bugloop_config::REPOSITORY_SETTABLE` a repository may set.
    pub repository_may_set: Vec<String>,
}

/// The configuration of a directory, with where each value came from.
#[derive(Debug)]
pub struct Configuration {
    pub loaded: Loaded,
    /// One line per branch setting that was ignored (and per repository prompt left out).
    pub warnings: Vec<String>,
    /// The repository's prompts, from the same trusted commit as its file.
    pub prompts: RepositoryPrompts,
}

/// The trusted commit's committed file and prompts, with the commit's label.
#[derive(Default)]
struct Base {
    config: Option<(String, Vec<u8>)>,
    prompts: RepositoryPrompts,
    warnings: Vec<String>,
    /// A trusted base commit was found (its file may still be absent).
    found: bool,
}

impl Base {
    fn at(git: &Git, label: &str, commit: &str) -> Base {
        let config = git
            .show(commit, CONFIG_PATH)
            .map(|bytes| (format!("{label}:{CONFIG_PATH}"), bytes));
        let (prompts, warnings) =
            RepositoryPrompts::read(label, |path, max| git.show_at_most(commit, path, max));
        Base {
            config,
            prompts,
            warnings,
            found: true,
        }
    }
}

/// Loads the configuration of the repository at `cwd` (or of `cwd` itself outside one).
pub fn load_configuration(cwd: &Path, choice: &ConfigChoice) -> Result<Configuration, AppError> {
    let (repo_root, base) = root_and_base(cwd);
    let branch_config = if choice.trust_branch {
        BranchConfig::Trust
    } else {
        BranchConfig::ReviewSettings
    };
    load(repo_root, base, choice, branch_config)
}

/// The trusted configuration of the repository at `cwd` alone: its default branch's committed
/// file, the user's and `BUGLOOP_*`; the working tree's file (a pull request's checkout, on a
/// runner) is listed but never applied, and one that is a link or does not parse stops nothing.
pub fn load_trusted_configuration(
    cwd: &Path,
    choice: &ConfigChoice,
) -> Result<Configuration, AppError> {
    let (repo_root, base) = root_and_base(cwd);
    load(repo_root, base, choice, BranchConfig::Ignore)
}

/// The repository's root (or `cwd` outside one) and its trusted base's committed file and
/// prompts.
fn root_and_base(cwd: &Path) -> (PathBuf, Base) {
    let git = Git::open(cwd).ok();
    let repo_root = git
        .as_ref()
        .map_or_else(|| repository_root(cwd), |g| g.root().to_path_buf());
    let base = git
        .as_ref()
        .and_then(|git| {
            let (label, commit) = git.trusted_base()?;
            Some(Base::at(git, &label, &commit))
        })
        .unwrap_or_default();
    (repo_root, base)
}

/// The most of a pull request's own configuration file read to list what it tries (a larger
/// one is not a configuration bugloop would read).
const MAX_BRANCH_CONFIG_BYTES: u64 = 1 << 20;

/// The configuration for a pull request: the base commit's file and the user's, never the
/// head's (a pull request chooses no setting; what it changes is listed to be reported). The
/// head's file is read from the pinned `head_sha`, not the working tree, which a runner may
/// have checked out at the base; an issue (no head) has no branch file.
pub(crate) fn load_for_pull_request(
    git: &Git,
    base_sha: &str,
    head_sha: Option<&str>,
    choice: &ConfigChoice,
) -> Result<Configuration, AppError> {
    let base = Base::at(git, bugloop_git::short(base_sha), base_sha);
    // Read within the size a configuration may have: the head's blob is the author's to make.
    let branch_file = BranchFile::Commit(head_sha.and_then(|head| {
        let bytes = git
            .show_at_most(head, CONFIG_PATH, MAX_BRANCH_CONFIG_BYTES)
            .ok()??;
        Some((format!("{}:{CONFIG_PATH}", bugloop_git::short(head)), bytes))
    }));
    let root = git.root().to_path_buf();
    load_with(root, base, choice, (BranchConfig::Ignore, branch_file))
}

fn load(
    repo_root: PathBuf,
    base: Base,
    choice: &ConfigChoice,
    branch_config: BranchConfig,
) -> Result<Configuration, AppError> {
    let branch = (branch_config, BranchFile::WorkingTree);
    load_with(repo_root, base, choice, branch)
}

/// [`load`] with the branch's file read from where `branch_file` says.
fn load_with(
    repo_root: PathBuf,
    base: Base,
    choice: &ConfigChoice,
    (branch_config, branch_file): (BranchConfig, BranchFile),
) -> Result<Configuration, AppError> {
    let files = LocalFiles {
        repo_root,
        user_file: choice.file.clone(),
        base: base.config,
        branch_config,
        branch_file,
        operator: choice
            .operator
            .as_ref()
            .and_then(|operator| operator.config.clone()),
        base_scope: match &choice.operator {
            Some(operator) => BaseScope::Repository {
                may_set: operator.repository_may_set.clone(),
            },
            None => BaseScope::Full,
        },
    };
    let env = bugloop_config::environment(std::env::vars_os())?;
    let loaded = bugloop_config::load(&files, env)?;
    let mut warnings = operator_warnings(&loaded);
    if let Some(error) = &loaded.branch_unreadable {
        warnings.push(format!(
            "this branch's {CONFIG_PATH} does not read, so this run ignores it and reads the \
             trusted configuration alone (the base commit's file, your own): {error}"
        ));
    }
    warnings.extend(ignored_warnings(&loaded, branch_config, base.found));
    warnings.extend(base.warnings);
    Ok(Configuration {
        loaded,
        warnings,
        prompts: base.prompts,
    })
}

/// One line per setting of the repository's file that the operator keeps for itself.
fn operator_warnings(loaded: &Loaded) -> Vec<String> {
    let file = loaded.base.as_deref().unwrap_or(CONFIG_PATH);
    loaded
        .operator_owned
        .iter()
        .map(|owned| {
            let at = owned
                .line
                .map(|line| format!(" (line {line})"))
                .unwrap_or_default();
            format!(
                "{file} sets {}{at}; ignored: the server's operator chooses it (a repository \
                 sets review settings, its sandboxed commands, labels and paths)",
                owned.key
            )
        })
        .collect()
}

fn ignored_warnings(loaded: &Loaded, branch_config: BranchConfig, base_found: bool) -> Vec<String> {
    loaded
        .ignored
        .iter()
        .map(|ignored| {
            let (verb, at) = match ignored.line {
                Some(line) => ("sets", format!(" (line {line})")),
                None => ("removes", String::new()),
            };
            if branch_config == BranchConfig::Ignore {
                return format!(
                    "{CONFIG_PATH} in the pull request {verb} {}{at}; ignored: a pull request's \
                     configuration comes from its base commit",
                    ignored.key
                );
            }
            // Without a default branch there is no base to trust: say how to name one.
            let no_base = if !base_found {
                " No default branch was found (origin/HEAD, init.defaultBranch, main, master): \
                 if this branch is it, `git config init.defaultBranch <branch>` makes its file \
                 trusted."
            } else {
                ""
            };
            // A review setting the branch may set, but not to make its own review looser.
            let why = if !bugloop_config::BRANCH_SETTABLE.contains(&ignored.key.as_str()) {
                "what runs and where data and money go (commands, the sandbox, models, \
                 budgets, labels) come from trusted configuration (the base commit, your own \
                 config)"
            } else {
                "a branch may make its own review stricter, not looser (a higher threshold, \
                 fewer comments, more ignored files)"
            };
            format!(
                "{CONFIG_PATH} on this branch {verb} {}{at}; ignored: {why}. Run with \
                 --trust-branch-config to accept them for this run.{no_base}",
                ignored.key
            )
        })
        .collect()
}

/// The nearest enclosing directory with a `.git`, else `start` itself.
fn repository_root(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(start)
        .to_path_buf()
}

/// What `bugloop config check` found.
#[derive(Debug, Default)]
pub struct ConfigCheck {
    /// Each error with its file, line and column; empty when all of it reads.
    pub errors: Vec<String>,
    /// What reads but does not apply, as a run would warn of it: a branch's setting that is
    /// ignored, a repository prompt left out.
    pub warnings: Vec<String>,
}

/// `bugloop config check`: the errors of `file` alone, or else of every configuration file the
/// repository at `cwd` is run with (its base commit's, the branch's, the user's) and of the
/// configuration they make together with `BUGLOOP_*`, with the warnings a run would give.
pub fn check_configuration(
    cwd: &Path,
    choice: &ConfigChoice,
    file: Option<&Path>,
) -> Result<ConfigCheck, AppError> {
    let read = |path: &Path| {
        bugloop_config::read_config_bytes(path).map_err(|source| {
            AppError::Invalid(format!("cannot read {}: {source}", path.display()))
        })
    };
    if let Some(file) = file {
        let bytes = read(file)?;
        let label = file.display().to_string();
        return Ok(ConfigCheck {
            errors: errors_of(&bugloop_config::check_bytes(&label, bytes)),
            warnings: Vec::new(),
        });
    }
    let (repo_root, base) = root_and_base(cwd);
    let mut texts: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some((label, bytes)) = &base.config {
        texts.push((label.clone(), bytes.clone()));
    }
    let branch = repo_root.join(CONFIG_PATH);
    let mut errors: Vec<String> = Vec::new();
    // Never through a link (its target's text would be quoted in the errors) nor from a FIFO.
    if let Some(problem) = bugloop_config::branch_file_problem(&repo_root) {
        errors.push(format!(
            "{}:1:1: {problem}; bugloop reads only a regular file there",
            branch.display()
        ));
    } else if branch.is_file() {
        let bytes = read(&branch)?;
        // The branch's file as committed at the base is checked once.
        if texts.iter().all(|(_, base)| *base != bytes) {
            texts.push((branch.display().to_string(), bytes));
        }
    }
    // A variable that cannot be read is an error of the check, like a file's.
    let env = bugloop_config::environment(std::env::vars_os()).unwrap_or_else(|error| {
        errors.push(error.to_string());
        Vec::new()
    });
    let user = choice
        .file
        .clone()
        .or_else(|| bugloop_config::default_user_file(&env).filter(|p| p.is_file()));
    if let Some(user) = user {
        texts.push((user.display().to_string(), read(&user)?));
    }
    for (label, bytes) in texts {
        errors.extend(errors_of(&bugloop_config::check_bytes(&label, bytes)));
    }
    // Together (and with the variables), only when each file reads alone.
    let mut warnings = Vec::new();
    if errors.is_empty() {
        match load_configuration(cwd, choice) {
            Ok(configuration) => warnings = configuration.warnings,
            Err(error) => errors.push(error.to_string()),
        }
    }
    Ok(ConfigCheck { errors, warnings })
}

fn errors_of(errors: &[bugloop_config::ConfigError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}
