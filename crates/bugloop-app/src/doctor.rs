//! What bugloop can do on this machine: sandbox confinement and its protections, git, the
//! embedded model, the static analyzers. Each check says whether what the configuration relies
//! on is there.

use std::path::Path;

use bugloop_config::{Config, Unconfined};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckState {
    Ok,
    /// A protection that is not active (not a failure on its own).
    Off,
    Info,
    /// Works, unsafely (commands run unconfined because the configuration allows it).
    Warning,
    /// Something the configuration relies on is missing.
    Fail,
}

/// One line of the doctor's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub state: CheckState,
    pub subject: String,
    pub detail: String,
}

impl Check {
    fn new(state: CheckState, subject: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            state,
            subject: subject.into(),
            detail: detail.into(),
        }
    }
}

/// Whether a command can run confined where bugloop puts a review's task trees in the repository
/// at `dir` (`<git dir>/bugloop/tasks`), as the configuration sets the sandbox up: the machine's
/// sandbox can work in a temporary directory and still fail there (a repository under a masked
/// home directory). `None` outside a repository, or where the sandbox cannot confine at all (a
/// check of its own says so).
pub async fn repository_sandbox_check(config: &Config, dir: &Path) -> Option<Check> {
    if !bugloop_sandbox::probe().can_confine() {
        return None;
    }
    let tasks = bugloop_git::common_dir(dir).ok()?.join("bugloop/tasks");
    let workspace = tasks.join(format!("doctor-{}", std::process::id()));
    let made = std::fs::create_dir_all(&workspace);
    let mut settings =
        bugloop_sandbox::SandboxSettings::new(&workspace, bugloop_sandbox::Policy::WorkspaceWrite);
    settings.visible_home_dirs = config.sandbox.home_dirs.clone();
    let ran = match made {
        Ok(()) => bugloop_sandbox::run(
            &settings,
            &bugloop_sandbox::CommandSpec::new("true", [""; 0]),
        )
        .await
        .map_err(|error| error.to_string())
        .and_then(|out| match out.success() {
            true => Ok(()),
            false => Err(out.stderr_text().trim().to_owned()),
        }),
        Err(error) => Err(format!("{}: {error}", workspace.display())),
    };
    let _ = std::fs::remove_dir_all(&workspace);
    let where_ = tasks.display();
    Some(match ran {
        Ok(()) => Check::new(
            CheckState::Ok,
            "sandbox in this repository",
            format!("a command runs confined where reviews put their task trees ({where_})"),
        ),
        Err(error) => Check::new(
            CheckState::Fail,
            "sandbox in this repository",
            format!(
                "a command cannot run confined where reviews put their task trees ({where_}): \
                 {error}; no analyzer or verify command can run in this repository"
            ),
        ),
    })
}

/// Every check, in order. The machine is fit when none is [`CheckState::Fail`].
pub fn checks(config: &Config) -> Vec<Check> {
    let mut checks = Vec::new();
    let sandbox = bugloop_sandbox::probe();
    if sandbox.can_confine() {
        let bwrap = sandbox
            .bwrap
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        checks.push(Check::new(
            CheckState::Ok,
            "sandbox",
            format!("bubblewrap ({bwrap}): no network, writes only to the workspace"),
        ));
        for protection in bugloop_sandbox::protections() {
            let state = if protection.active {
                CheckState::Ok
            } else {
                CheckState::Off
            };
            checks.push(Check::new(
                state,
                format!("sandbox {}", protection.name),
                protection.detail,
            ));
        }
    } else {
        let problem = sandbox.problem.clone().unwrap_or_default();
        checks.push(match config.sandbox.when_unconfined {
            Unconfined::Refuse => Check::new(
                CheckState::Fail,
                "sandbox",
                format!("{problem}; commands will be refused (sandbox.when_unconfined: refuse)"),
            ),
            Unconfined::Warn => Check::new(
                CheckState::Warning,
                "sandbox",
                format!("{problem}; commands will run UNCONFINED (sandbox.when_unconfined: warn)"),
            ),
        });
    }
    checks.push(match bugloop_git::version() {
        Ok(version) => Check::new(CheckState::Ok, "git", version),
        Err(error) => Check::new(CheckState::Fail, "git", format!("not usable: {error}")),
    });
    let model = &config.model.default;
    checks.push(Check::new(CheckState::Info, "model", model.clone()));
    if let Some(name) = model.strip_prefix("local:") {
        let settings = crate::models::llm_settings(config);
        checks.push(
            match local_model_file(name, settings.model_dir.as_deref()) {
                Ok(path) => Check::new(CheckState::Ok, "embedded model", path),
                Err(problem) => Check::new(CheckState::Fail, "embedded model", problem),
            },
        );
    }
    checks.extend(analyzer_checks(config));
    checks
}

/// Each built-in analyzer with its version, or why it is missing: a missing one is said, not a
/// failure (a review says it did not run and goes on).
fn analyzer_checks(config: &Config) -> Vec<Check> {
    if config.review.analyzers == bugloop_config::AnalyzerList::List(Vec::new()) {
        return vec![Check::new(
            CheckState::Info,
            "analyzers",
            "turned off (review.analyzers: [])",
        )];
    }
    bugloop_analyzers::installed_versions(&bugloop_analyzers::Toolbox::from_env())
        .into_iter()
        .map(|(name, version)| match version {
            Ok(version) => Check::new(CheckState::Ok, format!("analyzer {name}"), version),
            Err(why) => Check::new(CheckState::Info, format!("analyzer {name}"), why),
        })
        .collect()
}

/// `sandbox.when_unconfined: warn` promises a warning when commands will run unconfined; the
/// sandbox's own log line reaches no one without a subscriber, so a job says it, once.
pub(crate) fn unconfined_warning(config: &Config) -> Option<String> {
    if config.sandbox.when_unconfined != Unconfined::Warn {
        return None;
    }
    let sandbox = bugloop_sandbox::probe();
    (!sandbox.can_confine()).then(|| {
        format!(
            "{}; commands will run UNCONFINED (sandbox.when_unconfined: warn)",
            sandbox
                .problem
                .as_deref()
                .unwrap_or("the sandbox cannot confine commands here")
        )
    })
}

#[cfg(feature = "local")]
fn local_model_file(name: &str, dir: Option<&Path>) -> Result<String, String> {
    bugloop_llm::local::resolve_model(name, dir)
        .map(|path| format!("{}; {}", path.display(), model_threads()))
        .map_err(|error| error.to_string())
}

/// How the embedded model's threads wait (the binary sets a short spin for itself: see
/// `bugloop-cli`'s `openmp.rs`).
#[cfg(feature = "local")]
fn model_threads() -> String {
    let threads = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let wait = match (var("OMP_WAIT_POLICY"), var("GOMP_SPINCOUNT")) {
        (Some(policy), _) => format!("waiting as OMP_WAIT_POLICY={policy} says"),
        (None, Some(count)) => format!("which spin {count} times before they sleep"),
        (None, None) => "which spin 300000 times before they sleep (libgomp's default: slow \
                         when other processes take the cores)"
            .to_owned(),
    };
    format!("{threads} thread(s), {wait}")
}

#[cfg(not(feature = "local"))]
fn local_model_file(_: &str, _: Option<&Path>) -> Result<String, String> {
    Err("this build has no embedded model (built without the `local` feature)".to_owned())
}
