//! The App server's settings: a YAML file (`bugloop serve --config FILE`, or
//! `BUGLOOP_SERVER_CONFIG`) and the environment, the environment winning, so a deployment can
//! keep its secrets out of the file. Every key is checked: an unknown one, a wrong type or a
//! value out of range is an error naming the key and where it was read.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bugloop_forge::signing::StateKey;
use bugloop_github::{AppCredentials, Endpoint, Policy};
use bugloop_queue::Limits;
use secrecy::SecretString;
use serde::Deserialize;

use crate::ServerError;
use crate::serve::{ReportAccess, ServeOptions};
use crate::store_location::StoreLocation;
use crate::worker::WorkerSettings;
use bugloop_app::{ConfigChoice, OperatorConfig};

/// The file's keys (every one optional; the environment may give it instead). Not `Debug`:
/// it holds the webhook secret and the tokens.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerFile {
    listen: Option<SocketAddr>,
    store_url: Option<String>,
    webhook_secret: Option<String>,
    /// Opens the status page and `/metrics` beyond loopback.
    admin_token: Option<String>,
    /// Opens `POST /report` (error reports filed as issues).
    report_token: Option<String>,
    /// The repositories the report token may file issues in (`owner/name`, `owner/*`).
    report_repositories: Option<Vec<String>>,
    /// Opens `POST /sentry`: the Sentry integration's client secret.
    sentry_client_secret: Option<String>,
    /// Where each Sentry project's errors are filed: its slug or id -> `owner/name`.
    sentry_projects: Option<std::collections::BTreeMap<String, String>>,
    /// The label whose issues are solved (`bug:autofix`).
    autofix_label: Option<String>,
    /// The prefix of the solve pipeline's branches (`bugloop/`).
    solve_branch_prefix: Option<String>,
    app_id: Option<u64>,
    /// A path to the App's PEM, relative to the file.
    private_key: Option<PathBuf>,
    workers: Option<usize>,
    bot_login: Option<String>,
    git_base: Option<String>,
    api_url: Option<String>,
    graphql_url: Option<String>,
    state_key: Option<String>,
    /// The model jobs run on (a repository's own configuration says the rest).
    model: Option<String>,
    /// Where clones and the default SQLite queue are kept.
    data_dir: Option<PathBuf>,
    lease_seconds: Option<u64>,
    shutdown_grace_seconds: Option<u64>,
    /// The longest one job may run, whatever a repository's budgets say (3,600).
    job_timeout_seconds: Option<u64>,
    /// The pause between content-creating requests GitHub asks for (1000 ms).
    write_spacing_ms: Option<u64>,
    limits: Option<LimitsFile>,
    /// Comments from people GitHub says are not the repository's, queued per repository in any
    /// hour by one server process (20); past it they are recorded, not queued.
    outsider_comments_per_hour: Option<u32>,
    /// The operator's bugloop configuration for every repository (model, providers, sandbox,
    /// budgets, web access, ...): a repository's own file sets only review settings, its
    /// sandboxed commands, labels and paths, and what `repository_may_set` adds.
    config: Option<serde_yaml_ng::Value>,
    /// Keys beyond those a repository may set in its own configuration (`model.default`,
    /// `budgets`, ...); never a provider, a host path, a variable to pass in or the identity.
    repository_may_set: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    running: Option<u32>,
    per_installation: Option<u32>,
}

/// Where settings are read from.
#[allow(missing_debug_implementations)] // holds a lookup function
pub struct ServerSources<'a> {
    /// The settings file, if any.
    pub file: Option<&'a Path>,
    /// Looks a variable up (the process environment, or a test's).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Where the server keeps its data when neither says (`$XDG_DATA_HOME/bugloop/server`).
    pub default_data_dir: PathBuf,
}

impl ServerSources<'_> {
    fn var(&self, name: &str) -> Option<String> {
        (self.env)(name).filter(|value| !value.trim().is_empty())
    }

    fn read_file(&self) -> Result<(ServerFile, PathBuf), ServerError> {
        let Some(path) = self.file else {
            return Ok((ServerFile::default(), PathBuf::from(".")));
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Invalid(format!(
                "cannot read the server settings {}: {e}",
                path.display()
            ))
        })?;
        let file = if text.trim().is_empty() {
            ServerFile::default()
        } else {
            serde_yaml_ng::from_str(&text).map_err(|e| {
                ServerError::Invalid(format!("the server settings {}: {e}", path.display()))
            })?
        };
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        Ok((file, dir))
    }
}

/// A number from the environment, its variable named when it is not one.
fn number<T: std::str::FromStr>(
    name: &str,
    value: Option<String>,
) -> Result<Option<T>, ServerError> {
    value
        .map(|text| {
            text.trim().parse().map_err(|_| {
                ServerError::Invalid(format!("{name} is {text:?}, not a number it can be"))
            })
        })
        .transpose()
}

/// Where the queue is: `BUGLOOP_STORE_URL`, the file's `store_url`, or `queue.db` under the data
/// directory. `bugloop jobs` reads the same.
pub fn store_location(sources: &ServerSources<'_>) -> Result<StoreLocation, ServerError> {
    let (file, base) = sources.read_file()?;
    let data_dir = data_dir(sources, &file, &base);
    StoreLocation::parse(
        sources
            .var("BUGLOOP_STORE_URL")
            .or(file.store_url)
            .as_deref(),
        &data_dir,
    )
}

/// The data directory (the clones and their tokens) and a SQLite queue are refused under a
/// directory every sandboxed command is shown (`/opt`, ...): one repository's code would read
/// the others' code, tokens and jobs.
fn hidden_from_commands(data_dir: &Path, store: &StoreLocation) -> Result<(), ServerError> {
    let queue = match store {
        StoreLocation::Sqlite(path) => Some(path.as_path()),
        StoreLocation::Postgres(_) => None,
    };
    for (what, path) in [("data directory", Some(data_dir)), ("queue", queue)] {
        if let Some(system) = path.and_then(bugloop_app::shown_to_every_command) {
            return Err(ServerError::Invalid(format!(
                "the server's {what} {} is under {system}, which every command the sandbox runs \
                 is shown: one repository's code would read the others' clones, tokens and \
                 jobs; put it elsewhere (data_dir, XDG_DATA_HOME or BUGLOOP_STORE_URL), such \
                 as /var/lib/bugloop",
                path.map_or_else(String::new, |p| p.display().to_string())
            )));
        }
    }
    Ok(())
}

fn data_dir(sources: &ServerSources<'_>, file: &ServerFile, base: &Path) -> PathBuf {
    file.data_dir
        .as_ref()
        .map(|dir| base.join(dir))
        .unwrap_or_else(|| sources.default_data_dir.clone())
}

/// Everything `bugloop serve` needs; `listen` (the command line's) wins over the file.
pub fn serve_options(
    sources: &ServerSources<'_>,
    listen: Option<SocketAddr>,
) -> Result<ServeOptions, ServerError> {
    let (file, base) = sources.read_file()?;
    let data_dir = data_dir(sources, &file, &base);
    let store = StoreLocation::parse(
        sources
            .var("BUGLOOP_STORE_URL")
            .or(file.store_url.clone())
            .as_deref(),
        &data_dir,
    )?;
    hidden_from_commands(&data_dir, &store)?;
    let limits = file
        .limits
        .as_ref()
        .map_or(Limits::default(), |limits| Limits {
            running: limits.running.map(i64::from),
            per_installation: limits.per_installation.map(i64::from),
        });
    if limits.running == Some(0) || limits.per_installation == Some(0) {
        return Err(ServerError::Invalid(
            "the server settings' limits: a limit of 0 would run nothing; leave it out for none"
                .to_owned(),
        ));
    }
    // Left out, the label and prefix are the configuration's defaults.
    let defaults = bugloop_config::Config::default();
    let autofix_label = sources
        .var("BUGLOOP_AUTOFIX_LABEL")
        .or(file.autofix_label.clone())
        .unwrap_or(defaults.labels.trigger);
    let solve_branch_prefix = sources
        .var("BUGLOOP_SOLVE_BRANCH_PREFIX")
        .or(file.solve_branch_prefix.clone())
        .unwrap_or(defaults.branch_prefix);
    let (operator, config) = operator_config(sources, &file, &autofix_label, &solve_branch_prefix)?;
    let bot_logins = sources
        .var("BUGLOOP_BOT_LOGIN")
        .or(file.bot_login.clone())
        .into_iter()
        .collect();
    Ok(ServeOptions {
        listen: listen
            .or(file.listen)
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
        secret: sources
            .var("BUGLOOP_WEBHOOK_SECRET")
            .or(file.webhook_secret.clone())
            .unwrap_or_default()
            .into_bytes()
            .into(),
        store,
        trigger: bugloop_app::trigger_settings(&config, bot_logins),
        workers: workers(sources, &file, &base, &data_dir, operator)?,
        limits,
        admin_token: sources
            .var("BUGLOOP_ADMIN_TOKEN")
            .or(file.admin_token.clone())
            .map(SecretString::from),
        report_token: report_access(sources, &file)?,
        sentry: sentry_access(sources, &file)?,
        outsider_comments_per_hour: file
            .outsider_comments_per_hour
            .unwrap_or(crate::outsider_intake::DEFAULT_PER_HOUR),
    })
}

/// The operator's configuration for every job: the file's `config` section with the label and
/// branch prefix the server answers to, checked now (a mistake stops the server at start, not
/// each job), and what a repository may set beyond the default; and the configuration it
/// loads to, whose labels and prefix are what deliveries are decided with.
fn operator_config(
    sources: &ServerSources<'_>,
    file: &ServerFile,
    autofix_label: &str,
    solve_branch_prefix: &str,
) -> Result<(OperatorConfig, bugloop_config::Config), ServerError> {
    let label = match sources.file {
        Some(path) => format!("{} (its config section)", path.display()),
        None => "the server's configuration".to_owned(),
    };
    let mut tree = config_tree(file, &label)?;
    pin_server_settings(&mut tree, &label, autofix_label, solve_branch_prefix)?;
    let text = serde_yaml_ng::to_string(&tree)
        .map_err(|e| ServerError::Invalid(format!("{label}: {e}")))?;
    let config = bugloop_config::SourceText::new(label, text);
    let loaded = bugloop_config::load_layered(&bugloop_config::Sources {
        operator: Some(config.clone()),
        ..Default::default()
    })
    .map_err(|e| ServerError::Invalid(format!("the server settings: {e}")))?;
    let repository_may_set = file.repository_may_set.clone().unwrap_or_default();
    bugloop_config::check_repository_may_set(&repository_may_set)
        .map_err(|e| ServerError::Invalid(format!("the server settings: {e}")))?;
    Ok((
        OperatorConfig {
            config: Some(config),
            repository_may_set,
        },
        loaded.config,
    ))
}

/// The file's `config` section as a tree to add to: an empty mapping when it is left out.
fn config_tree(file: &ServerFile, label: &str) -> Result<serde_yaml_ng::Value, ServerError> {
    match &file.config {
        None | Some(serde_yaml_ng::Value::Null) => {
            Ok(serde_yaml_ng::Value::Mapping(serde_yaml_ng::Mapping::new()))
        }
        Some(tree @ serde_yaml_ng::Value::Mapping(_)) => Ok(tree.clone()),
        Some(_) => Err(ServerError::Invalid(format!(
            "{label}: is not a mapping of bugloop settings"
        ))),
    }
}

/// The server answers to its own label and prefix; a `config` that says otherwise would make
/// the solve pipeline disagree with what the server queued, so it is refused, and one that says
/// nothing is given the server's.
fn pin_server_settings(
    tree: &mut serde_yaml_ng::Value,
    label: &str,
    autofix_label: &str,
    solve_branch_prefix: &str,
) -> Result<(), ServerError> {
    for (keys, value, setting) in [
        (&["labels", "trigger"][..], autofix_label, "autofix_label"),
        (
            &["branch_prefix"][..],
            solve_branch_prefix,
            "solve_branch_prefix",
        ),
    ] {
        let dotted = keys.join(".");
        let found = keys
            .iter()
            .try_fold(&*tree, |node, key| node.get(*key))
            .cloned();
        match found {
            Some(serde_yaml_ng::Value::String(given)) if given != value => {
                return Err(ServerError::Invalid(format!(
                    "{label}: {dotted} is {given:?} but {setting} is {value:?}; set {setting} only"
                )));
            }
            Some(_) => {}
            None => insert_setting(tree, keys, value, label)?,
        }
    }
    Ok(())
}

/// Sets the key at the end of `keys` to `value`, adding the sections before it that are missing;
/// a section that is there but not a mapping is an error.
fn insert_setting(
    tree: &mut serde_yaml_ng::Value,
    keys: &[&str],
    value: &str,
    label: &str,
) -> Result<(), ServerError> {
    let mut node = tree;
    for key in &keys[..keys.len() - 1] {
        let serde_yaml_ng::Value::Mapping(map) = node else {
            return Err(ServerError::Invalid(format!(
                "{label}: {key} is not a section"
            )));
        };
        node = map
            .entry(serde_yaml_ng::Value::String((*key).to_owned()))
            .or_insert_with(|| serde_yaml_ng::Value::Mapping(serde_yaml_ng::Mapping::new()));
    }
    if let (serde_yaml_ng::Value::Mapping(map), Some(last)) = (node, keys.last()) {
        map.insert(
            serde_yaml_ng::Value::String((*last).to_owned()),
            serde_yaml_ng::Value::String(value.to_owned()),
        );
    }
    Ok(())
}

/// The Sentry integration's client secret and its projects' repositories
/// (`BUGLOOP_SENTRY_PROJECTS="slug=owner/name,..."` or the file's `sentry_projects`); a secret
/// without a project, or a project without a valid repository, is refused.
fn sentry_access(
    sources: &ServerSources<'_>,
    file: &ServerFile,
) -> Result<Option<crate::sentry_endpoint::SentryAccess>, ServerError> {
    let Some(client_secret) = sources
        .var("BUGLOOP_SENTRY_CLIENT_SECRET")
        .or(file.sentry_client_secret.clone())
    else {
        return Ok(None);
    };
    if client_secret.len() < 16 {
        return Err(ServerError::Invalid(
            "sentry_client_secret (BUGLOOP_SENTRY_CLIENT_SECRET) is shorter than 16 characters: \
             copy the integration's Client Secret from Sentry"
                .to_owned(),
        ));
    }
    let projects = match sources.var("BUGLOOP_SENTRY_PROJECTS") {
        Some(list) => {
            let mut projects = std::collections::BTreeMap::new();
            for entry in list
                .split([',', ' ', '\n'])
                .filter(|s| !s.trim().is_empty())
            {
                let Some((project, repository)) = entry.split_once('=') else {
                    return Err(ServerError::Invalid(format!(
                        "BUGLOOP_SENTRY_PROJECTS: {entry:?} is not project=owner/name"
                    )));
                };
                projects.insert(project.trim().to_owned(), repository.trim().to_owned());
            }
            projects
        }
        None => file.sentry_projects.clone().unwrap_or_default(),
    };
    if projects.is_empty() {
        return Err(ServerError::Invalid(
            "sentry_client_secret is set but sentry_projects (BUGLOOP_SENTRY_PROJECTS) maps no \
             Sentry project to a repository: list each project's slug or id with owner/name"
                .to_owned(),
        ));
    }
    for (project, repository) in &projects {
        if project.is_empty() || bugloop_github::Repo::parse(repository).is_none() {
            return Err(ServerError::Invalid(format!(
                "sentry_projects: {project:?} -> {repository:?} is not a project and owner/name"
            )));
        }
    }
    Ok(Some(crate::sentry_endpoint::SentryAccess {
        client_secret: client_secret.into(),
        projects,
    }))
}

/// The report token and the repositories it may file in; a token without any is refused (it
/// would file issues, and solve them, in any repository the App is installed on).
fn report_access(
    sources: &ServerSources<'_>,
    file: &ServerFile,
) -> Result<Option<ReportAccess>, ServerError> {
    let Some(token) = sources
        .var("BUGLOOP_REPORT_TOKEN")
        .or(file.report_token.clone())
    else {
        return Ok(None);
    };
    let repositories: Vec<String> = match sources.var("BUGLOOP_REPORT_REPOSITORIES") {
        Some(list) => list
            .split([',', ' ', '\n'])
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().to_owned())
            .collect(),
        None => file.report_repositories.clone().unwrap_or_default(),
    };
    if repositories.is_empty() {
        return Err(ServerError::Invalid(
            "report_token (BUGLOOP_REPORT_TOKEN) is set but report_repositories \
             (BUGLOOP_REPORT_REPOSITORIES) names no repository: list the repositories the token \
             may file issues in (owner/name, or owner/* for all of an owner's)"
                .to_owned(),
        ));
    }
    for scope in &repositories {
        let valid = match scope.strip_suffix("/*") {
            Some(owner) => !owner.is_empty() && !owner.contains('/'),
            None => bugloop_github::Repo::parse(scope).is_some(),
        };
        if !valid {
            return Err(ServerError::Invalid(format!(
                "report_repositories: {scope:?} is not owner/name or owner/*"
            )));
        }
    }
    Ok(Some(ReportAccess {
        token: token.into(),
        repositories,
    }))
}

/// The App's id and private key; `None` when neither is set (a server that only queues). The
/// key is a path to its PEM, or (in `BUGLOOP_APP_PRIVATE_KEY`, as a platform's secret store
/// gives it) the PEM itself; no error shows a key's text.
fn app_credentials(
    sources: &ServerSources<'_>,
    file: &ServerFile,
    base: &Path,
) -> Result<Option<AppCredentials>, ServerError> {
    let id = number::<u64>("BUGLOOP_APP_ID", sources.var("BUGLOOP_APP_ID"))?.or(file.app_id);
    let key = sources.var("BUGLOOP_APP_PRIVATE_KEY").or_else(|| {
        file.private_key
            .as_ref()
            .map(|key| base.join(key).display().to_string())
    });
    let (id, key) = match (id, key) {
        (Some(id), Some(key)) => (id, key),
        (None, None) => return Ok(None),
        (Some(_), None) => {
            return Err(ServerError::Invalid(
                "the App's id is set but not its private key (BUGLOOP_APP_PRIVATE_KEY, a path \
                 to the PEM GitHub gave, or the PEM itself)"
                    .to_owned(),
            ));
        }
        (None, Some(_)) => {
            return Err(ServerError::Invalid(
                "the App's private key is set but not its id (BUGLOOP_APP_ID)".to_owned(),
            ));
        }
    };
    let (pem, from) = if key.trim_start().starts_with("-----BEGIN") {
        (key, "the PEM given".to_owned())
    } else {
        let path = PathBuf::from(&key);
        // A value that is not a plausible path may be a key pasted without its header.
        let from = if key.contains('\n') || key.len() > 512 {
            "the path given (not shown: it may be a key)".to_owned()
        } else {
            path.display().to_string()
        };
        if let Some(mode) = readable_by_others(&path) {
            tracing::warn!(
                "the App's private key {from} can be read by other users (mode {mode:o}): \
                 `chmod 600` it"
            );
        }
        let pem = std::fs::read_to_string(&path).map_err(|e| {
            ServerError::Invalid(format!("BUGLOOP_APP_PRIVATE_KEY: cannot read {from}: {e}"))
        })?;
        (pem, from)
    };
    let credentials = AppCredentials::from_pem(id, &pem)
        .map_err(|e| ServerError::Invalid(format!("BUGLOOP_APP_PRIVATE_KEY: {from}: {e}")))?;
    Ok(Some(credentials))
}

/// The mode of `path` when its group or others may read it (a key anyone on the machine can
/// copy signs as the App).
fn readable_by_others(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then_some(mode)
}

/// The workers, when the App's id and key are given. The settings are read in a fixed order, so
/// of several mistakes the same one is always reported first.
fn workers(
    sources: &ServerSources<'_>,
    file: &ServerFile,
    base: &Path,
    data_dir: &Path,
    operator: OperatorConfig,
) -> Result<Option<(WorkerSettings, usize)>, ServerError> {
    let Some(credentials) = app_credentials(sources, file, base)? else {
        return Ok(None);
    };
    let count = worker_count(sources, file)?;
    let state_key = sources
        .var("BUGLOOP_STATE_KEY")
        .or(file.state_key.clone())
        .map(|key| StateKey::new(key.into_bytes()))
        .transpose()
        .map_err(|e| ServerError::Invalid(format!("BUGLOOP_STATE_KEY: {e}")))?;
    let settings = WorkerSettings {
        id: worker_id(sources),
        lease: seconds(file.lease_seconds, 600, "lease_seconds")?,
        app: Arc::new(credentials),
        endpoint: github_endpoint(sources, file),
        git_base: sources
            .var("BUGLOOP_GIT_BASE")
            .or(file.git_base.clone())
            .unwrap_or_else(|| "https://github.com".to_owned()),
        workspaces: data_dir.join("clones"),
        config: ConfigChoice {
            operator: Some(operator),
            ..ConfigChoice::default()
        },
        model: sources.var("BUGLOOP_SERVER_MODEL").or(file.model.clone()),
        state_key,
        policy: github_policy(sources, file)?,
        shutdown_grace: seconds(file.shutdown_grace_seconds, 60, "shutdown_grace_seconds")?,
        git_token_refresh: Duration::from_secs(600),
        job_timeout: seconds(file.job_timeout_seconds, 3_600, "job_timeout_seconds")?,
        metrics: Arc::default(),
    };
    Ok(Some((settings, count)))
}

/// How many workers run (2 unless set): at least one, since a server with the App's id is meant
/// to work, and at most 256.
fn worker_count(sources: &ServerSources<'_>, file: &ServerFile) -> Result<usize, ServerError> {
    let count = number::<usize>("BUGLOOP_WORKERS", sources.var("BUGLOOP_WORKERS"))?
        .or(file.workers)
        .unwrap_or(2);
    if count == 0 || count > 256 {
        return Err(ServerError::Invalid(format!(
            "workers is {count}: between 1 and 256 (leave the App's id out for a server that \
             only queues)"
        )));
    }
    Ok(count)
}

/// A duration in whole seconds (`default` unless set); 0 is refused, as it would give a job or a
/// lease no time at all.
fn seconds(value: Option<u64>, default: u64, what: &str) -> Result<Duration, ServerError> {
    match value.unwrap_or(default) {
        0 => Err(ServerError::Invalid(format!(
            "{what} is 0: at least 1 second"
        ))),
        n => Ok(Duration::from_secs(n)),
    }
}

/// The workers' name in the queue's leases: the host and the process, so an operator can tell
/// whose a lease is.
fn worker_id(sources: &ServerSources<'_>) -> String {
    format!(
        "{}:{}",
        sources
            .var("HOSTNAME")
            .unwrap_or_else(|| "bugloop".to_owned()),
        std::process::id()
    )
}

/// Where GitHub's REST and GraphQL APIs are (GitHub Enterprise Server has its own).
fn github_endpoint(sources: &ServerSources<'_>, file: &ServerFile) -> Endpoint {
    Endpoint::from_values(
        sources
            .var("GITHUB_API_URL")
            .or(file.api_url.clone())
            .as_deref(),
        sources
            .var("GITHUB_GRAPHQL_URL")
            .or(file.graphql_url.clone())
            .as_deref(),
    )
}

/// How the workers write to GitHub: the spacing between writes (a second unless set), which
/// keeps them under GitHub's secondary rate limits.
fn github_policy(sources: &ServerSources<'_>, file: &ServerFile) -> Result<Policy, ServerError> {
    Ok(Policy {
        write_spacing: Duration::from_millis(
            number::<u64>(
                "BUGLOOP_GITHUB_WRITE_SPACING_MS",
                sources.var("BUGLOOP_GITHUB_WRITE_SPACING_MS"),
            )?
            .or(file.write_spacing_ms)
            .unwrap_or(1000),
        ),
        ..Policy::default()
    })
}

#[cfg(test)]
mod tests;
