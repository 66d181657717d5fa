//! Configuration from several sources, and which of them may choose what.
//!
//! Code under review is untrusted, and so is its `.bugloop/config.yml`. Everything that runs a
//! program, sends data somewhere, or decides identity and spend comes from trusted sources only:
//! the repository's file at the change's base commit, the user's own file outside the repository,
//! and `BUGLOOP_*` variables. The branch's own file may change review settings (see
//! [`BRANCH_SETTABLE`]); what else it changes is ignored and listed ([`IgnoredBranchSetting`]).
//!
//! [`load_layered`] is a pure function of texts; [`load`] reads them from disk.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

use crate::{Config, ConfigError, Origin, apply_env_tree, validate};

mod files;
mod locate;
mod looser;

pub(crate) use self::files::utf8;
pub use self::files::{
    BranchFile, LocalFiles, branch_file_problem, default_user_file, environment, load,
};
use self::locate::{line_of, locate_error};

/// The keys a branch's own file may set (when [`BranchConfig::ReviewSettings`]): how findings are
/// judged and shown, where that makes the review of the branch at least as strict as trusted
/// configuration has it (a higher threshold, more ignored files, less weight on security are
/// ignored and listed as trusted-only changes are: `looser.rs`). Every other key is trusted-only: commands (`fix`, `gate`, `solve`), the
/// sandbox, models and providers (where tokens go, what they cost), budgets, identity and marker
/// prefixes, labels, the converge loop's size, protected paths, the branch prefix,
/// `review.max_tokens_per_call` (the model's share of the change per call: a branch raised it
/// past what the maintainer's model takes, or lowered it to 1 so that the review ran out of
/// turns in 169 parts), and `review.enable_web` and `review.web` (where the reviewer may send
/// requests). New keys are trusted-only until they are listed here.
pub const BRANCH_SETTABLE: &[&str] = &[
    "review.threshold",
    "review.elevation_threshold",
    "review.elevation_min_score",
    "review.severity_floor",
    "review.comment_limit",
    "review.sensitive_data",
    "review.security_promotion",
    "review.ignore_files",
    "review.dedup_line_window",
    "review.dedup_min_overlap",
];

/// The keys a repository's own configuration (its base commit's file) may set when an operator
/// runs bugloop for it (the App server), beside the review settings a branch may set
/// ([`BRANCH_SETTABLE`]): the commands that run in the sandbox (verify, gate, solve tests, proof
/// tests), the labels that show progress and the protected paths. Everything else (models,
/// providers and keys, the sandbox, budgets, web access, identity, the converge loop's size) is
/// the operator's; an operator may hand more of it over with `repository_may_set`, except
/// [`NEVER_REPOSITORY_SETTABLE`].
pub const REPOSITORY_SETTABLE: &[&str] = &[
    "review.prove",
    "fix.verify_commands",
    "gate.commands",
    "gate.max_fix_rounds",
    "solve.test_commands",
    "solve.coverage_command",
    "solve.max_diff_lines",
    "solve.on_regression",
    "solve.regression_grace_minutes",
    "solve.approval",
    "solve.skip_after_escalations",
    "converge.validator",
    "labels.in_progress",
    "labels.needs_human",
    "labels.revert",
    "protected_paths",
    "agents.bugsolver.assignee",
    "agents.reviewer.external",
    "agents.reviewer.wait_minutes",
];

/// What no repository may ever set under an operator, whatever the operator allows: the model
/// (where requests and keys go, which files of the server it reads, what it costs), the
/// converge loop's auditors, web search and private web hosts, host paths and variables the
/// sandbox passes in, and the identity bugloop's own state is read by.
pub const NEVER_REPOSITORY_SETTABLE: &[&str] = &[
    // A model's name may be a path on the server (`script:`, `replay:`, `local:`), and its
    // prices turn the cost limit off; several auditors at once overshoot the run's budget.
    "model",
    "converge.auditors",
    "converge.parallel_auditors",
    "sandbox.env_allowlist",
    "sandbox.system_paths",
    "sandbox.home_dirs",
    "sandbox.when_unconfined",
    "review.web.allow_private",
    "review.web.search_url",
    "identity",
];

/// Whether `dotted` is `key` or lies under it.
fn within(dotted: &str, key: &str) -> bool {
    dotted == key
        || dotted
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Checks an operator's `repository_may_set`: each entry a key bugloop has (a section or a leaf),
/// none of [`NEVER_REPOSITORY_SETTABLE`] nor a section holding one of them.
pub fn check_repository_may_set(keys: &[String]) -> Result<(), ConfigError> {
    let defaults = to_tree(&Config::default())?;
    let known = leaves(&defaults);
    for key in keys {
        let invalid = |message: String| ConfigError::Invalid {
            origin: Origin::Value,
            path: format!("repository_may_set: {key}"),
            message,
        };
        if !known.iter().any(|leaf| within(&leaf.to_string(), key)) {
            return Err(invalid("is not a bugloop configuration key".to_owned()));
        }
        if let Some(never) = NEVER_REPOSITORY_SETTABLE
            .iter()
            .find(|never| within(key, never) || within(never, key))
        {
            return Err(invalid(format!(
                "no repository may set {never} (the model, where requests and keys go, host \
                 paths, variables passed in, bugloop's identity)"
            )));
        }
    }
    Ok(())
}

/// Which of the base commit's file applies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BaseScope {
    /// All of it: the repository is its own operator (the CLI, the Action).
    #[default]
    Full,
    /// Under an operator (the App server): only [`REPOSITORY_SETTABLE`] and the keys the
    /// operator adds; the rest is listed in [`Loaded::operator_owned`] and not applied.
    Repository { may_set: Vec<String> },
}

impl BaseScope {
    fn allows(&self, key: &KeyPath) -> bool {
        let dotted = key.to_string();
        match self {
            BaseScope::Full => true,
            BaseScope::Repository { may_set } => {
                !NEVER_REPOSITORY_SETTABLE
                    .iter()
                    .any(|never| within(&dotted, never))
                    && BRANCH_SETTABLE
                        .iter()
                        .chain(REPOSITORY_SETTABLE)
                        .copied()
                        .chain(may_set.iter().map(String::as_str))
                        .any(|k| within(&dotted, k))
            }
        }
    }
}

/// The spec's names of keys, accepted as aliases (see `model.rs`).
pub(crate) const ALIASES: &[(&str, &str)] = &[
    ("limits", "solve"),
    ("max_ralph_iterations", "max_iterations"),
    ("problem_score_threshold", "threshold"),
    ("score_elevation_threshold", "elevation_threshold"),
    ("bugbot-severity", "severity_floor"),
    ("bugbot-comment-limit", "comment_limit"),
    ("ai-ignore-files", "ignore_files"),
    ("bugbot-fix-verify-commands", "verify_commands"),
    ("in-progress", "in_progress"),
    ("needs-human", "needs_human"),
];

/// Which of the branch's own `.bugloop/config.yml` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchConfig {
    /// Its review settings ([`BRANCH_SETTABLE`]); trusted-only keys come from trusted sources and
    /// the branch's changes to them are listed. The local default.
    #[default]
    ReviewSettings,
    /// Nothing: a pull request's head chooses no setting at all (GitHub). Its changes to
    /// trusted-only keys are still listed, so they can be reported.
    Ignore,
    /// All of it, trusted-only keys included (`--trust-branch-config`, local only).
    Trust,
}

/// One configuration file: its text and what messages call it (a path, or a label like
/// `main@1a2b3c4:.bugloop/config.yml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceText {
    pub label: String,
    pub text: String,
}

impl SourceText {
    pub fn new(label: impl Into<String>, text: impl Into<String>) -> Self {
        SourceText {
            label: label.into(),
            text: text.into(),
        }
    }
}

/// Everything a configuration is made of. They apply in this order: defaults, `operator`, `base`
/// (as [`BaseScope`] allows), `branch` (as [`BranchConfig`] allows), `user`, `env`.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The repository's file at the change's base commit (trusted).
    pub base: Option<SourceText>,
    /// The branch's own file, in the working tree or at head (untrusted).
    pub branch: Option<SourceText>,
    /// The user's own file outside the repository (trusted).
    pub user: Option<SourceText>,
    /// The operator's configuration (the App server's `config` section): what the repository
    /// may not set comes from here, and what it may set defaults to it.
    pub operator: Option<SourceText>,
    /// `BUGLOOP_*` overrides (trusted); other variables are ignored.
    pub env: Vec<(String, String)>,
    pub branch_config: BranchConfig,
    pub base_scope: BaseScope,
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "from", rename_all = "snake_case")]
pub enum ValueSource {
    Default,
    /// The base commit's file (its label).
    Base(String),
    /// The branch's own file (its path).
    Branch(String),
    /// The user's file (its path).
    User(String),
    /// The operator's configuration (its label).
    Operator(String),
    /// An environment variable.
    Env(String),
}

impl fmt::Display for ValueSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSource::Default => f.write_str("default"),
            ValueSource::Base(label)
            | ValueSource::User(label)
            | ValueSource::Operator(label)
            | ValueSource::Env(label) => f.write_str(label),
            ValueSource::Branch(path) => write!(f, "{path} (this branch)"),
        }
    }
}

/// A key's path, one element per level; map keys may themselves hold dots
/// (`model.prices.openai:gpt-4.1`), so this is not a dotted string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyPath(pub Vec<String>);

impl KeyPath {
    fn starts_with(&self, prefix: &[String]) -> bool {
        self.0.starts_with(prefix)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

/// Whether a key may only come from trusted configuration (see [`BRANCH_SETTABLE`]).
pub fn is_trusted_only(key: &KeyPath) -> bool {
    let dotted = key.to_string();
    !BRANCH_SETTABLE
        .iter()
        .any(|settable| within(&dotted, settable))
}

/// A trusted-only setting the branch's file changes, which was not applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IgnoredBranchSetting {
    /// `fix.verify_commands`, `model.providers.openai.base_url`.
    pub key: String,
    /// The 1-based line in the branch's file (of the key, else of the nearest enclosing key that
    /// is there; `None` when the file does not mention it: the branch removed it).
    pub line: Option<usize>,
    /// That line's text.
    pub line_text: Option<String>,
    /// What the branch's file gives the key, as YAML on one line (shortened).
    pub branch_value: String,
    /// What applies instead, from trusted configuration.
    pub trusted_value: String,
}

/// The effective configuration and where each value came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// Every leaf key's source (a leaf is a value that is not a section: a scalar, a list, one
    /// price).
    pub sources: BTreeMap<KeyPath, ValueSource>,
    /// The branch's changes to trusted-only keys that were not applied (empty with
    /// [`BranchConfig::Trust`], and when the branch's file is the base's).
    pub ignored: Vec<IgnoredBranchSetting>,
    /// The base commit's settings an operator keeps for itself ([`BaseScope::Repository`]),
    /// not applied (`branch_value` is what the repository's file gives).
    pub operator_owned: Vec<IgnoredBranchSetting>,
    /// Environment overrides applied, in order.
    pub overrides: Vec<String>,
    /// Labels of the files read.
    pub base: Option<String>,
    pub branch: Option<String>,
    pub user: Option<String>,
    /// Whether the branch's file differs from the base's (when it does not, it is the base's).
    pub branch_differs: bool,
    pub branch_config: BranchConfig,
    /// Why the branch's file was not read ([`BranchConfig::ReviewSettings`]: it does not parse,
    /// is not a plain file, or sets what does not validate): the trusted layers applied alone.
    pub branch_unreadable: Option<String>,
}

impl Loaded {
    /// Where a key's value came from (a section: its first leaf's source).
    pub fn source_of(&self, key: &[&str]) -> Option<&ValueSource> {
        let key: Vec<String> = key.iter().map(|k| (*k).to_owned()).collect();
        self.sources
            .iter()
            .find(|(path, _)| path.0 == key || path.starts_with(&key) || key.starts_with(&path.0))
            .map(|(_, source)| source)
    }
}

/// One file, read.
struct Layer<'a> {
    source: &'a SourceText,
    /// Defaults plus the file.
    tree: Value,
    /// The leaves the file itself sets.
    present: BTreeSet<KeyPath>,
}

impl<'a> Layer<'a> {
    fn read(source: &'a SourceText) -> Result<Self, ConfigError> {
        let (config, raw) = crate::from_yaml_with_tree(&source.text, Path::new(&source.label))?;
        let parsed = to_tree(&config)?;
        let mut present = BTreeSet::new();
        present_leaves(&raw, &parsed, &mut Vec::new(), &mut present);
        // The defaults with what the file sets: entries of maps (providers, prices) are added to
        // the default ones rather than replacing them all.
        let mut tree = to_tree(&Config::default())?;
        for leaf in &present {
            put(&mut tree, &leaf.0, get(&parsed, &leaf.0).cloned());
        }
        Ok(Layer {
            source,
            tree,
            present,
        })
    }
}

fn to_tree(config: &Config) -> Result<Value, ConfigError> {
    serde_yaml_ng::to_value(config).map_err(|error| ConfigError::Invalid {
        origin: Origin::Value,
        path: String::new(),
        message: error.to_string(),
    })
}

/// A price is one value: its fields only make sense together.
pub(crate) fn is_atomic(path: &[String]) -> bool {
    path.len() == 3 && path[0] == "model" && path[1] == "prices"
}

pub(crate) fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

/// The leaves of a full tree: values that are not sections (scalars, lists, empty maps, prices).
fn leaves(tree: &Value) -> Vec<KeyPath> {
    fn walk(node: &Value, path: &mut Vec<String>, out: &mut Vec<KeyPath>) {
        match node {
            Value::Mapping(map) if !map.is_empty() && !is_atomic(path) => {
                for (key, value) in map {
                    path.push(key_text(key));
                    walk(value, path, out);
                    path.pop();
                }
            }
            _ if path.is_empty() => {}
            _ => out.push(KeyPath(path.clone())),
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The leaves a file's own text sets, under their canonical names (aliases resolved), matched
/// against the file's full tree.
fn present_leaves(raw: &Value, full: &Value, path: &mut Vec<String>, out: &mut BTreeSet<KeyPath>) {
    match (raw, full) {
        (Value::Mapping(raw_map), Value::Mapping(full_map))
            if !is_atomic(path) && !full_map.is_empty() =>
        {
            for (key, value) in raw_map {
                let name = key_text(key);
                let name = ALIASES
                    .iter()
                    .find(|(alias, _)| *alias == name)
                    .map_or(name, |(_, canonical)| (*canonical).to_owned());
                match full_map.get(Value::String(name.clone())) {
                    Some(child) => {
                        path.push(name);
                        present_leaves(value, child, path, out);
                        path.pop();
                    }
                    // Not a key we know under this name: count the whole section as set.
                    None if !path.is_empty() => {
                        out.extend(
                            leaves(full)
                                .into_iter()
                                .map(|leaf| KeyPath([path.clone(), leaf.0].concat())),
                        );
                    }
                    None => {}
                }
            }
        }
        _ if path.is_empty() => {}
        _ => {
            out.insert(KeyPath(path.clone()));
        }
    }
}

fn get<'v>(tree: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter()
        .try_fold(tree, |node, key| node.get(Value::String(key.clone())))
}

/// Sets `path` to `value` (creating sections), or removes it for `None`.
fn put(tree: &mut Value, path: &[String], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = tree;
    for key in parents {
        let Value::Mapping(map) = node else {
            return;
        };
        let key = Value::String(key.clone());
        if !map.contains_key(&key) {
            if value.is_none() {
                return;
            }
            map.insert(key.clone(), Value::Mapping(Mapping::new()));
        }
        let Some(next) = map.get_mut(&key) else {
            return;
        };
        node = next;
    }
    let Value::Mapping(map) = node else {
        return;
    };
    let key = Value::String(last.clone());
    match value {
        Some(value) => {
            map.insert(key, value);
        }
        None => {
            map.remove(&key);
        }
    }
}

/// Missing and null are the same value (an unset optional).
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    a == b
}

/// A value as YAML on one line (JSON is YAML), cut at 200 characters.
pub(crate) fn one_line(value: Option<&Value>) -> String {
    let text = match value {
        None => "null".to_owned(),
        Some(value) => serde_json::to_value(value)
            .ok()
            .and_then(|json| serde_json::to_string(&json).ok())
            .unwrap_or_else(|| "?".to_owned()),
    };
    if text.chars().count() > 200 {
        format!("{}...", text.chars().take(200).collect::<String>())
    } else {
        text
    }
}

/// Builds the effective configuration from its sources: defaults, then the base commit's file,
/// then the branch's file as `branch_config` allows, then the user's file, then `BUGLOOP_*`
/// variables; then validates it. A missing file is no layer. Pure: no IO.
///
/// The branch's file replaces the base's where it applies (a key it drops falls back to its
/// default); the user's file and the variables change only the keys they set.
pub fn load_layered(sources: &Sources) -> Result<Loaded, ConfigError> {
    let defaults = to_tree(&Config::default())?;
    let mut layering = Layering {
        effective: defaults.clone(),
        sources_of: leaves(&defaults)
            .into_iter()
            .map(|leaf| (leaf, ValueSource::Default))
            .collect(),
        texts: Vec::new(),
    };
    // The operator's configuration: under the repository's file, which sets only what the
    // operator hands over (the operator's values are then its defaults).
    let operator = sources.operator.as_ref().map(Layer::read).transpose()?;
    if let Some(operator) = &operator {
        layering.apply(
            operator,
            ValueSource::Operator(operator.source.label.clone()),
        );
    }
    let base = sources.base.as_ref().map(Layer::read).transpose()?;
    let operator_owned = match &base {
        Some(base) => layering.apply_base(base, &sources.base_scope),
        None => Vec::new(),
    };
    let base_tree = layering.effective.clone();
    let (differs, candidates) = layering.apply_branch(sources, &defaults, &base_tree)?;
    let user = sources.user.as_ref().map(Layer::read).transpose()?;
    if let Some(user) = &user {
        layering.apply(user, ValueSource::User(user.source.label.clone()));
    }
    let (config, effective, overrides) = layering.apply_env(sources)?;
    if let Err(error) = validate(&config) {
        return Err(locate_error(error, &layering.sources_of, &layering.texts));
    }
    let ignored = ignored_settings(candidates, &layering.sources_of, &effective);
    Ok(Loaded {
        config,
        sources: layering.sources_of,
        ignored,
        operator_owned,
        overrides,
        base: sources.base.as_ref().map(|s| s.label.clone()),
        branch: sources.branch.as_ref().map(|s| s.label.clone()),
        user: sources.user.as_ref().map(|s| s.label.clone()),
        branch_differs: differs && sources.branch.is_some(),
        branch_config: sources.branch_config,
        branch_unreadable: None,
    })
}

/// A trusted-only key the branch's file changes, not applied: the key, its line and that
/// line's text in the branch's file, and the branch's value.
type BranchCandidate = (KeyPath, Option<usize>, Option<String>, String);

/// The configuration as its layers are applied, lowest first.
struct Layering<'a> {
    effective: Value,
    /// Where each leaf's value came from.
    sources_of: BTreeMap<KeyPath, ValueSource>,
    /// Each file with the source its values carry, to point errors at.
    texts: Vec<(&'a SourceText, ValueSource)>,
}

impl<'a> Layering<'a> {
    /// Every key `layer` sets, over what is there.
    fn apply(&mut self, layer: &Layer<'a>, source: ValueSource) {
        for leaf in &layer.present {
            put(
                &mut self.effective,
                &leaf.0,
                get(&layer.tree, &leaf.0).cloned(),
            );
            self.sources_of.insert(leaf.clone(), source.clone());
        }
        self.texts.push((layer.source, source));
    }

    /// The base commit's file, within `scope`; what it may not set (the operator's) comes back.
    fn apply_base(&mut self, base: &Layer<'a>, scope: &BaseScope) -> Vec<IgnoredBranchSetting> {
        let mut operator_owned = Vec::new();
        for leaf in &base.present {
            if scope.allows(leaf) {
                put(
                    &mut self.effective,
                    &leaf.0,
                    get(&base.tree, &leaf.0).cloned(),
                );
                self.sources_of
                    .insert(leaf.clone(), ValueSource::Base(base.source.label.clone()));
            } else {
                let (line, line_text) = line_of(&base.source.text, &leaf.0);
                // What applies instead is the operator's and is not repeated to the
                // repository (a private endpoint, a path).
                operator_owned.push(IgnoredBranchSetting {
                    key: leaf.to_string(),
                    line,
                    line_text,
                    branch_value: one_line(get(&base.tree, &leaf.0)),
                    trusted_value: "(the operator's)".to_owned(),
                });
            }
        }
        self.texts
            .push((base.source, ValueSource::Base(base.source.label.clone())));
        operator_owned
    }

    /// The branch's file, when it is not the base's, as `sources.branch_config` allows: whether
    /// it differs, and the trusted-only keys it changes that were not applied.
    fn apply_branch(
        &mut self,
        sources: &'a Sources,
        defaults: &Value,
        base_tree: &Value,
    ) -> Result<(bool, Vec<BranchCandidate>), ConfigError> {
        let differs = match (&sources.base, &sources.branch) {
            (Some(base), Some(branch)) => base.text != branch.text,
            (None, None) => false,
            // Not given at all: nothing to compare when the branch does not count anyway.
            (Some(_), None) => sources.branch_config != BranchConfig::Ignore,
            (None, Some(_)) => true,
        };
        let mut candidates = Vec::new();
        if !differs {
            return Ok((differs, candidates));
        }
        let branch = match (&sources.branch, sources.branch_config) {
            (Some(text), BranchConfig::Ignore) => Layer::read(text).ok(),
            (Some(text), _) => Some(Layer::read(text)?),
            (None, _) => None,
        };
        let branch_tree = branch.as_ref().map_or(defaults, |b| &b.tree);
        let mut all: BTreeSet<KeyPath> = leaves(branch_tree).into_iter().collect();
        all.extend(leaves(base_tree));
        for leaf in all {
            let new = get(branch_tree, &leaf.0);
            let applies = match sources.branch_config {
                BranchConfig::Trust => true,
                BranchConfig::ReviewSettings => !is_trusted_only(&leaf),
                BranchConfig::Ignore => false,
            };
            // A branch may make its own review stricter, never looser.
            let looser = sources.branch_config == BranchConfig::ReviewSettings
                && looser::is_looser(&leaf.to_string(), new, get(&self.effective, &leaf.0));
            if applies && !looser {
                put(&mut self.effective, &leaf.0, new.cloned());
                let set_here = branch.as_ref().is_some_and(|b| b.present.contains(&leaf));
                match (&branch, set_here) {
                    (Some(b), true) => {
                        self.sources_of
                            .insert(leaf, ValueSource::Branch(b.source.label.clone()));
                    }
                    _ if new.is_some() => {
                        self.sources_of.insert(leaf, ValueSource::Default);
                    }
                    _ => {
                        self.sources_of.remove(&leaf);
                    }
                }
            } else if looser || (is_trusted_only(&leaf) && !same(new, get(base_tree, &leaf.0))) {
                let (line, line_text) = match &branch {
                    Some(b) => line_of(&b.source.text, &leaf.0),
                    None => (None, None),
                };
                candidates.push((leaf, line, line_text, one_line(new)));
            }
        }
        if let Some(branch) = &branch
            && sources.branch_config != BranchConfig::Ignore
        {
            self.texts.push((
                branch.source,
                ValueSource::Branch(branch.source.label.clone()),
            ));
        }
        Ok((differs, candidates))
    }

    /// The `BUGLOOP_*` variables last; then the configuration, its tree as the configuration
    /// has it (a section an override replaced is filled with defaults), and the variables that
    /// applied. Every leaf ends with a source.
    fn apply_env(
        &mut self,
        sources: &Sources,
    ) -> Result<(Config, Value, Vec<String>), ConfigError> {
        let applied = apply_env_tree(&mut self.effective, sources.env.iter().cloned())?;
        let config = crate::env::config_of_tree(&self.effective, &Origin::Value)?;
        let effective = to_tree(&config)?;
        let final_leaves = leaves(&effective);
        let mut overrides = Vec::new();
        for (var, set) in applied {
            for leaf in &final_leaves {
                if set
                    .iter()
                    .any(|keys| leaf.starts_with(keys) || keys.starts_with(&leaf.0))
                {
                    self.sources_of
                        .insert(leaf.clone(), ValueSource::Env(var.clone()));
                }
            }
            overrides.push(var);
        }
        let present_now: BTreeSet<&KeyPath> = final_leaves.iter().collect();
        self.sources_of.retain(|leaf, _| present_now.contains(leaf));
        for leaf in final_leaves {
            self.sources_of.entry(leaf).or_insert(ValueSource::Default);
        }
        Ok((config, effective, overrides))
    }
}

/// The branch's changes to trusted-only keys that a trusted layer did not set anyway, in the
/// branch file's order (the first is the first a reader meets).
fn ignored_settings(
    mut candidates: Vec<BranchCandidate>,
    sources_of: &BTreeMap<KeyPath, ValueSource>,
    effective: &Value,
) -> Vec<IgnoredBranchSetting> {
    candidates.sort_by_key(|(leaf, line, ..)| (line.unwrap_or(usize::MAX), leaf.clone()));
    candidates
        .into_iter()
        .filter(|(leaf, ..)| {
            !matches!(
                sources_of.get(leaf),
                Some(ValueSource::User(_) | ValueSource::Operator(_) | ValueSource::Env(_))
            )
        })
        .map(
            |(leaf, line, line_text, branch_value)| IgnoredBranchSetting {
                key: leaf.to_string(),
                line,
                line_text,
                branch_value,
                trusted_value: one_line(get(effective, &leaf.0)),
            },
        )
        .collect()
}
