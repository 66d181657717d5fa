//! Running the chosen analyzers, all at once, each in the sandbox on the code at head (read-only,
//! no network, a private `/tmp`, a time limit and an output cap), and reading their hits into
//! candidates on the change's lines. A tool that is missing, crashes, times out or writes what
//! cannot be read is reported as not run; it never fails the review.

use std::path::{Path, PathBuf};
use std::time::Instant;

use bugloop_diff::Diff;
use bugloop_domain::finding::Category;
use bugloop_sandbox::{CommandSpec, ExitState, Output, SandboxSettings};
use serde::Serialize;

use crate::Choice;
use crate::builtin::{BuiltIn, config_files};
use crate::candidate::candidate;
use crate::custom::CustomAnalyzer;
use crate::formats::Format;
use crate::hit::{Candidate, Hit, Level};
use crate::importers::{BaseTree, ImportersChecked};
use crate::input::regular_file;
use crate::invocation::Invocation;
use crate::locate::Toolbox;
use crate::scope::ChangedLines;
use crate::weight::Weight;

/// What to analyze and how.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The code at head.
    pub workspace: &'a Path,
    /// The change (its ignored files already left out).
    pub diff: &'a Diff,
    pub choices: Vec<Choice>,
    /// The sandbox every analyzer runs in: its policy, time limit and output cap are the
    /// caller's (read-only, the analyzer's limits).
    pub sandbox: SandboxSettings,
    pub toolbox: Toolbox,
    /// A directory holding the base commit's versions of the configured analyzers' `config`
    /// paths (`{base}`), shown read-only.
    pub base_dir: Option<PathBuf>,
    /// Run each built-in alone, as a user would with its defaults, every hit on the change's
    /// lines kept and no suppression said: `bench detect`'s yardstick, never a review.
    pub alone: bool,
    /// The code at the base commit, file by file: with it, a type checker is also run on the
    /// files that import the change ([`crate::breakage`]). `None`: only the change's files.
    pub base: Option<&'a dyn BaseTree>,
}

/// What the analyzers found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Analysis {
    /// Hits on the change's lines that count as bugs, and the suppressions the change adds.
    pub candidates: Vec<Candidate>,
    /// Every analyzer that applied to the change: what it did, or why it did not run.
    pub runs: Vec<AnalyzerRun>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalyzerRun {
    pub name: String,
    #[serde(flatten)]
    pub status: RunStatus,
    pub seconds: f64,
    /// Files it was run on and could not check because of what they hold: it timed out,
    /// crashed, or said more than is read. After output over the cap each file of a batch is
    /// tried alone (within [`MAX_RUN_ALONE`]), so one file cannot take the others with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unanalyzed: Vec<Unchecked>,
    /// A type checker's check of the files that import the change, where it made one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importers: Option<ImportersChecked>,
}

impl AnalyzerRun {
    /// A run that did not happen, for `reason`: each of `files` not checked, which makes the
    /// review incomplete.
    pub(crate) fn none_checked(name: &str, files: &[String], reason: &str) -> AnalyzerRun {
        AnalyzerRun {
            name: name.to_owned(),
            status: RunStatus::NotRun {
                reason: reason.to_owned(),
            },
            seconds: 0.0,
            unanalyzed: files.iter().map(|file| unchecked(file, reason)).collect(),
            importers: None,
        }
    }
}

/// A file an analyzer could not check, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unchecked {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum RunStatus {
    Ran {
        /// Files it was given.
        files: usize,
        /// Hits it reported anywhere in those files.
        hits: usize,
        /// Of those, on the change's lines and counting as bugs.
        candidates: usize,
    },
    NotRun {
        reason: String,
    },
}

/// bugloop's configuration files for the tools, in a directory of their own.
pub(crate) fn write_config_dir() -> Result<bugloop_sandbox::owner::OwnedDir, String> {
    let dir = bugloop_sandbox::owner::temp_dir("analyzers")
        .map_err(|e| format!("cannot write the analyzers' configuration: {e}"))?;
    for (name, content) in config_files() {
        std::fs::write(dir.path().join(name), content)
            .map_err(|e| format!("cannot write the analyzers' configuration: {e}"))?;
    }
    Ok(dir)
}

/// What one analyzer is: its command, how its output is read, how its hits weigh.
pub(crate) struct Plan {
    spec: CommandSpec,
    mounts: Vec<PathBuf>,
    format: Format,
    judge: fn(&Hit) -> Option<(Weight, Category)>,
    /// A SARIF file on the host to read instead of the output.
    sarif_file: Option<PathBuf>,
    /// The files it was given.
    files: Vec<String>,
    /// The directory of the project it compiles, from the root (`""`: the root), where it
    /// runs and from which it names files.
    project_dir: String,
}

/// One analyzer's run on the change: what it did, its candidates on the change's lines, and
/// where a compiler's checker reported a compile error off them (the change may break code it
/// does not edit: [`crate::breakage::check_project`]).
pub(crate) async fn run_one(
    request: &Request<'_>,
    choice: &Choice,
    files: Vec<String>,
    config_dir: &Path,
    changed: &ChangedLines,
) -> (AnalyzerRun, Vec<Candidate>, Vec<String>) {
    let started = Instant::now();
    let name = choice.name().to_owned();
    let mut hits = Vec::new();
    // How hits weigh: the tool's own judge, from a run that succeeded.
    let mut judge: Option<Judge> = None;
    let mut unanalyzed = Vec::new();
    let mut not_run = None;
    let mut alone_left = MAX_RUN_ALONE;
    for batch in crate::input::batches(choice, &files, request.workspace) {
        match run_batch(request, choice, &batch, config_dir, &mut alone_left).await {
            Ran::Checked(more, judged, failed) => {
                hits.extend(more);
                judge = judge.or(judged);
                unanalyzed.extend(failed);
            }
            Ran::Not(reason) => {
                not_run = Some(reason);
                break;
            }
        }
    }
    let seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let (skipped, mut hits): (Vec<Hit>, Vec<Hit>) = hits
        .into_iter()
        .partition(|hit| says_not_checked(&name, hit));
    // The tool names the file where the run's tree happened to be: said by its name alone.
    let tree = format!("{}/", request.workspace.display());
    unanalyzed.extend(skipped.into_iter().map(|hit| Unchecked {
        path: hit.file,
        reason: hit.message.replace(&tree, ""),
    }));
    // Nothing it was given could be checked: it did not run, for the first file's reason.
    if not_run.is_none() && !unanalyzed.is_empty() && unanalyzed.len() == files.len() {
        not_run = unanalyzed.first().map(|u: &Unchecked| u.reason.clone());
    }
    let run = |status| AnalyzerRun {
        name: name.clone(),
        status,
        seconds,
        unanalyzed: unanalyzed.clone(),
        importers: None,
    };
    if let Some(reason) = not_run {
        return (run(RunStatus::NotRun { reason }), Vec::new(), Vec::new());
    }
    crate::hit::said_once(&mut hits);
    let total = hits.len();
    let judge = judge.unwrap_or(every_hit);
    let compiles_a_project = matches!(choice, Choice::BuiltIn(tool) if tool.project.is_some());
    let mut broken_elsewhere: Vec<String> = hits
        .iter()
        .filter(|hit| {
            compiles_a_project
                && judge(hit).is_some_and(|(weight, _)| weight == Weight::Critical)
                && changed.first_added(&hit.file, hit.line, hit.line).is_none()
        })
        .map(|hit| hit.file.clone())
        .collect();
    broken_elsewhere.sort_unstable();
    broken_elsewhere.dedup();
    let mut candidates: Vec<Candidate> = hits
        .into_iter()
        .filter_map(|hit| candidate(&name, hit, judge, changed, request.workspace))
        .collect();
    crate::parse_errors::first_syntax_error_only(&mut candidates);
    let status = RunStatus::Ran {
        files: files.len(),
        hits: total,
        candidates: candidates.len(),
    };
    (run(status), candidates, broken_elsewhere)
}

/// How an analyzer's hits weigh.
type Judge = fn(&Hit) -> Option<(Weight, Category)>;

/// A tool's word that it did not check a file it was given, which is that file not checked,
/// never a clean run: biome's on a file over its size limit (`lint`, with no rule) and on one
/// it will not read (`internalError/fs`: a file under `node_modules`), bugloop-python's on a
/// file Python cannot read or parse. An attacker's review hid an `eval` in both of biome's, and
/// a read past the end behind a byte-order mark and a megabyte of padding from the rule.
fn says_not_checked(tool: &str, hit: &Hit) -> bool {
    match tool {
        "biome" => hit.rule == "lint" || hit.rule.starts_with("internalError/"),
        "bugloop-python" => hit.rule == crate::own::NOT_CHECKED_RULE,
        // ty's word on a file it could not read (not UTF-8, which Python may still run as
        // Latin-1): an attacker's review hid a wrong call that way, the review complete.
        "ty" => hit.rule == "io",
        _ => false,
    }
}

/// What running an analyzer on one batch of files came to.
enum Ran {
    /// Its hits (with its judge when a run succeeded), and the files it could not check.
    Checked(Vec<Hit>, Option<Judge>, Vec<Unchecked>),
    /// It could not run here (not installed, no confinement): nothing the change did.
    Not(String),
}

/// Why an analyzer's run on some files came to no hits to read.
pub(crate) enum Failure {
    /// It cannot run on this machine (see [`Ran::Not`]).
    NotRun(String),
    /// It was to check the files and did not: its configuration edited by the change, or it
    /// ran and timed out, crashed, said more than is read, exited with an error or wrote what
    /// cannot be read. The change may have caused any of these, so its files were not checked,
    /// which the review must say.
    Unchecked(String),
}

impl Failure {
    pub(crate) fn reason(self) -> String {
        match self {
            Failure::NotRun(reason) | Failure::Unchecked(reason) => reason,
        }
    }
}

/// Runs the analyzer on `batch`. When its output was more than is read, and it checks the files
/// it is given (not a whole project), each file is run alone, within `alone_left` for the whole
/// analyzer, so that one file (a generated one with thousands of hits) leaves the others
/// checked.
async fn run_batch(
    request: &Request<'_>,
    choice: &Choice,
    batch: &[String],
    config_dir: &Path,
    alone_left: &mut usize,
) -> Ran {
    let plan_for = |files: &[String]| plan(request, choice, files, config_dir);
    let whole = match plan_for(batch) {
        Err(Failure::NotRun(reason)) => return Ran::Not(reason),
        Err(Failure::Unchecked(reason)) => return unchecked_all(batch, &reason),
        Ok(plan) => plan,
    };
    // A tool that checks the whole project (clippy, go vet) runs the same with one file.
    let per_file =
        batch.len() > 1 && plan_for(&batch[..1]).is_ok_and(|one| one.spec.args != whole.spec.args);
    let failure = match execute(request, whole).await {
        Ok((hits, judge)) => return Ran::Checked(hits, Some(judge), Vec::new()),
        Err(Failure::NotRun(reason)) => return Ran::Not(reason),
        Err(Failure::Unchecked(reason)) => reason,
    };
    if !failure.starts_with(OVER_THE_CAP) || !per_file {
        return unchecked_all(batch, &failure);
    }
    let (mut hits, mut judge, mut failed) = (Vec::new(), None, Vec::new());
    for file in batch {
        if *alone_left == 0 {
            failed.push(unchecked(file, &failure));
            continue;
        }
        *alone_left -= 1;
        let outcome = match plan_for(std::slice::from_ref(file)) {
            Ok(plan) => execute(request, plan).await,
            Err(failure) => Err(failure),
        };
        match outcome {
            Ok((more, judged)) => {
                hits.extend(more);
                judge = Some(judged);
            }
            Err(Failure::NotRun(reason) | Failure::Unchecked(reason)) => {
                failed.push(unchecked(file, &reason));
            }
        }
    }
    Ran::Checked(hits, judge, failed)
}

fn unchecked(file: &str, reason: &str) -> Unchecked {
    Unchecked {
        path: bugloop_domain::paths::display_path(file.as_bytes()),
        reason: reason.to_owned(),
    }
}

/// Every file of `batch` not checked, for `reason`.
fn unchecked_all(batch: &[String], reason: &str) -> Ran {
    Ran::Checked(
        Vec::new(),
        None,
        batch.iter().map(|f| unchecked(f, reason)).collect(),
    )
}

pub(crate) fn plan(
    request: &Request<'_>,
    choice: &Choice,
    files: &[String],
    config_dir: &Path,
) -> Result<Plan, Failure> {
    match choice {
        Choice::BuiltIn(tool) => plan_built_in(request, tool, files, config_dir),
        Choice::Custom(custom) => plan_custom(request, custom, files),
    }
}

fn plan_built_in(
    request: &Request<'_>,
    tool: &BuiltIn,
    files: &[String],
    config_dir: &Path,
) -> Result<Plan, Failure> {
    if let Some(edited) = request
        .diff
        .files
        .iter()
        .map(|f| f.path())
        // A project below the root reads its configuration there and above it.
        .find(|path| {
            tool.unsafe_config
                .iter()
                .any(|config| path == config || path.ends_with(&format!("/{config}")))
        })
    {
        return Err(Failure::Unchecked(format!(
            "the change edits {edited}, which decides how {} runs: bugloop does not run it under configuration the change wrote",
            tool.program
        )));
    }
    if tool.name == "go-vet"
        && let Some(place) = crate::compilers::go_line_directive(request.diff)
    {
        return Err(Failure::Unchecked(format!(
            "the change adds a //line directive ({place}), with which the compiler names places \
             of the change's choosing: go vet's word on the code is not read"
        )));
    }
    let installed = request
        .toolbox
        .find(tool.program)
        .ok_or_else(|| Failure::NotRun(request.toolbox.not_found(tool.program, tool.install)))?;
    let config = config_dir.display().to_string();
    let edited: Vec<String> = request
        .diff
        .files
        .iter()
        .flat_map(|file| [&file.old_path, &file.new_path])
        .flatten()
        .cloned()
        .collect();
    let invocation = Invocation {
        files,
        config_dir: &config,
        workspace: request.workspace,
        edited: &edited,
    };
    let args = if request.alone {
        (tool.alone)(invocation)
    } else {
        (tool.args)(invocation)
    };
    let mut spec = CommandSpec::new(installed.path.display().to_string(), args);
    spec.env = tool_env(tool.name);
    let project_dir = files
        .first()
        .and_then(|file| crate::input::project_dir(request.workspace, tool, file))
        .unwrap_or_default();
    if !project_dir.is_empty() {
        spec.cwd = Some(PathBuf::from(&project_dir));
    }
    // In a Go workspace (`go.work` at or above the module) go takes no `-mod=mod`.
    if tool.name == "go-vet" && crate::compilers::in_go_workspace(request.workspace, &project_dir) {
        spec.env.retain(|(name, _)| name != "GOFLAGS");
    }
    let mut mounts = vec![config_dir.to_path_buf()];
    mounts.extend(installed.mounts);
    Ok(Plan {
        spec,
        mounts,
        format: tool.format,
        judge: if request.alone { every_hit } else { tool.judge },
        sarif_file: None,
        files: files.to_vec(),
        project_dir,
    })
}

/// What a tool needs set in the sandbox: writable caches in its private `/tmp`, and no network
/// to try.
pub(crate) fn tool_env(name: &str) -> Vec<(String, String)> {
    let pairs: &[(&str, &str)] = match name {
        "clippy" => &[
            ("CARGO_TARGET_DIR", "/tmp/bugloop-clippy"),
            ("CARGO_TERM_COLOR", "never"),
            ("CARGO_NET_OFFLINE", "true"),
        ],
        "go-vet" => &[
            ("GOCACHE", "/tmp/bugloop-go-cache"),
            ("GOPATH", "/tmp/bugloop-go"),
            ("GOPROXY", "off"),
            ("GOTOOLCHAIN", "local"),
            ("GOFLAGS", "-mod=mod"),
        ],
        "biome" => &[("BIOME_LOG_PATH", "/tmp/bugloop-biome-logs")],
        _ => &[],
    };
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn plan_custom(
    request: &Request<'_>,
    custom: &CustomAnalyzer,
    files: &[String],
) -> Result<Plan, Failure> {
    let base = request
        .base_dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let sarif_file = custom.sarif.as_ref().map(PathBuf::from);
    let Some(argv) = custom.expand(files, &base) else {
        return Ok(Plan {
            spec: CommandSpec::default(),
            mounts: Vec::new(),
            format: Format::Sarif,
            judge: custom_judge,
            sarif_file,
            files: files.to_vec(),
            project_dir: String::new(),
        });
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| Failure::NotRun("its command is empty".to_owned()))?;
    let installed = if program.contains('/') {
        None
    } else {
        Some(
            request
                .toolbox
                .find(program)
                .ok_or_else(|| Failure::NotRun(format!("{program} is not installed")))?,
        )
    };
    let program = installed
        .as_ref()
        .map_or_else(|| program.clone(), |i| i.path.display().to_string());
    let mut mounts: Vec<PathBuf> = installed.map(|i| i.mounts).unwrap_or_default();
    mounts.extend(request.base_dir.clone());
    Ok(Plan {
        spec: CommandSpec::new(program, args.to_vec()),
        mounts,
        format: Format::Sarif,
        judge: custom_judge,
        sarif_file,
        files: files.to_vec(),
        project_dir: String::new(),
    })
}

/// The yardstick's judge: every hit counts.
fn every_hit(_: &Hit) -> Option<(Weight, Category)> {
    Some((Weight::Warning, Category::Logic))
}

/// A configured SARIF tool's hits weigh by level: error 7, warning 6 (security-tagged rules
/// as security), notes below the default threshold.
fn custom_judge(hit: &Hit) -> Option<(Weight, Category)> {
    let category = if hit.security {
        Category::Security
    } else {
        Category::Logic
    };
    Some(match hit.level {
        Level::Error => (Weight::Error, category),
        Level::Warning => (Weight::Warning, category),
        Level::Note => (Weight::Minor, category),
    })
}

type Judged = (Vec<Hit>, fn(&Hit) -> Option<(Weight, Category)>);

pub(crate) async fn execute(request: &Request<'_>, mut plan: Plan) -> Result<Judged, Failure> {
    let root = request.workspace;
    if plan.spec.program.is_empty() {
        // A results file alone (CodeQL's, written by an earlier step: not there, that step
        // did not run).
        let path = plan.sarif_file.unwrap_or_default();
        let bytes = std::fs::read(&path).map_err(|e| {
            Failure::NotRun(format!(
                "cannot read its SARIF file {}: {e}",
                path.display()
            ))
        })?;
        let hits = crate::sarif::read(&bytes, root).map_err(Failure::Unchecked)?;
        return Ok((hits, plan.judge));
    }
    let mut settings = request.sandbox.clone();
    show_read_only(&mut settings, std::mem::take(&mut plan.mounts));
    settings.git = None;
    let output = bugloop_sandbox::run(&settings, &plan.spec)
        .await
        .map_err(|e| match e {
            bugloop_sandbox::SandboxError::Io(message) => {
                Failure::Unchecked(format!("{SANDBOX_FAILED}{message}"))
            }
            error @ (bugloop_sandbox::SandboxError::Unconfined(_)
            | bugloop_sandbox::SandboxError::Spawn { .. }) => Failure::NotRun(error.to_string()),
            other => Failure::Unchecked(other.to_string()),
        })?;
    check_exit(&output, &settings).map_err(Failure::Unchecked)?;
    read_hits(root, &plan, &output).map_err(|reason| {
        // A crate that had no Cargo.lock before the change either: nothing the change did (a
        // library often commits none), unlike one whose lock file the change took away.
        let lock_taken = request.diff.files.iter().any(|file| {
            [&file.old_path, &file.new_path]
                .into_iter()
                .flatten()
                .any(|path| path.rsplit('/').next() == Some("Cargo.lock"))
        });
        if reason.ends_with(NO_LOCK_FILE) && !lock_taken {
            Failure::NotRun(reason)
        } else {
            Failure::Unchecked(reason)
        }
    })
}

/// The hits a tool that ran wrote, or why they cannot be read.
fn read_hits(root: &Path, plan: &Plan, output: &Output) -> Result<Judged, String> {
    let hits = match &plan.sarif_file {
        // Written in the workspace by its command: read as any file of the tree is, never
        // through a symlink (the sandbox is read-only, so a file there may be the branch's).
        Some(path) => {
            let file = regular_file(root, &path.display().to_string()).ok_or_else(|| {
                format!(
                    "its SARIF file {} is not a regular file of the tree",
                    path.display()
                )
            })?;
            let bytes = std::fs::read(file)
                .map_err(|e| format!("cannot read its SARIF file {}: {e}", path.display()))?;
            crate::sarif::read(&bytes, root)
        }
        // Named from the project's directory, where it ran: named from the root again.
        None if !plan.project_dir.is_empty() => plan
            .format
            .read(
                &output.stdout,
                &output.stderr,
                &root.join(&plan.project_dir),
                &plan.files,
            )
            .map(|hits| {
                hits.into_iter()
                    .map(|hit| Hit {
                        file: format!("{}/{}", plan.project_dir, hit.file),
                        ..hit
                    })
                    .collect()
            }),
        None => plan
            .format
            .read(&output.stdout, &output.stderr, root, &plan.files),
    };
    hits.map(|hits| (hits, plan.judge)).map_err(|reason| {
        let stderr = tail(&output.stderr_text(), 600);
        // A limit the sandbox enforced is the cause, whatever the tool printed before it died.
        let limit = output
            .limits_hit
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        match output.exit {
            ExitState::Exited(0) => reason,
            ExitState::Exited(code) if !limit.is_empty() => format!("exited with {code}: {limit}"),
            // 128 + SIGKILL: killed, by the kernel out of memory or from outside.
            ExitState::Exited(137) => format!(
                "was killed (exit 137: out of memory, or stopped from outside); its last words: {stderr}"
            ),
            ExitState::Exited(code) => match known_cause(&stderr) {
                Some(cause) => format!("exited with {code}: {cause}"),
                None if stderr.is_empty() => {
                    format!("exited with {code}, and its output cannot be read: {reason}")
                }
                None => format!("exited with {code}: {stderr}"),
            },
            _ => reason,
        }
    })
}

/// A failure whose cause and remedy bugloop knows, said in those words rather than the tool's.
fn known_cause(stderr: &str) -> Option<&'static str> {
    let lockfile = stderr.contains("Cargo.lock")
        && (stderr.contains("Read-only file system") || stderr.contains("failed to write"));
    lockfile.then_some(NO_LOCK_FILE)
}

const NO_LOCK_FILE: &str = "the crate has no Cargo.lock, which cargo would have to write, and the \
     tree under review is read-only; commit Cargo.lock (cargo's advice for libraries too) to have \
     clippy check the change";

/// Shows `mounts` read-only: under the (hidden) home directory as directories shown again (a
/// program's own directory), elsewhere as they are.
pub(crate) fn show_read_only(settings: &mut SandboxSettings, mounts: Vec<PathBuf>) {
    for mount in mounts {
        let under_home = settings
            .home_dir
            .as_ref()
            .and_then(|home| mount.strip_prefix(home).ok().map(Path::to_path_buf));
        match under_home {
            Some(relative) => {
                let dir = if mount.is_dir() {
                    relative
                } else {
                    relative.parent().map(Path::to_path_buf).unwrap_or_default()
                };
                if !dir.as_os_str().is_empty() {
                    settings.visible_home_dirs.push(dir.display().to_string());
                }
            }
            None => settings.read_only_paths.push(mount),
        }
    }
}

/// The most files of one analyzer's batches run one by one after a batch's output was over
/// the cap: a change of many such files does not multiply the tool's runs.
pub const MAX_RUN_ALONE: usize = 32;

/// How a run whose output was more than is read fails: what one file can do to the others.
const OVER_THE_CAP: &str = "its output was over the cap";
const TIMED_OUT: &str = "timed out after";
const CRASHED: &str = "crashed (signal";
/// bugloop's sandbox could not be set up for it (its stage or a claim could not be made: a
/// full temporary directory, say): its files were not checked.
const SANDBOX_FAILED: &str = "the sandbox could not be set up for it: ";

/// A run that timed out, died of a signal or wrote more than the cap cannot be read.
fn check_exit(output: &Output, settings: &SandboxSettings) -> Result<(), String> {
    match output.exit {
        ExitState::TimedOut => Err(format!("{TIMED_OUT} {} s", settings.timeout.as_secs())),
        ExitState::Signaled(signal) => Err(format!("{CRASHED} {signal})")),
        ExitState::Exited(_) if output.stdout_total > output.stdout.len() as u64 => Err(format!(
            "{OVER_THE_CAP} of {} bytes",
            settings.max_output_bytes
        )),
        ExitState::Exited(_) => Ok(()),
    }
}

/// The last `max` characters of a tool's message, on one line.
fn tail(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = line.chars().count();
    line.chars().skip(count.saturating_sub(max)).collect()
}
