//! bugloop's configuration: `.bugloop/config.yml` with the spec's defaults, layered from trusted
//! and untrusted sources (the base commit's file, the branch's, the user's own, `BUGLOOP_*`
//! environment overrides; see [`load_layered`]), validation into domain types, and the JSON Schema
//! for editors.
//!
//! Every error says where: the file, line and column (or the environment variable), the key path,
//! and for an unknown key the closest valid one.
//!
//! **Invariants:** what runs things comes from trusted sources only (`BRANCH_SETTABLE` is an
//! allowlist; under an operator `REPOSITORY_SETTABLE`, never `NEVER_REPOSITORY_SETTABLE`); every
//! error names its file, line and column (or variable) and key path; bad input is refused before it
//! costs anything.

// Configuration errors happen once, at start-up; their size does not matter and their fields are
// what the user needs to see.
#![allow(clippy::result_large_err)]

mod analyzers;
mod check;
mod env;
mod layered;
mod model;
mod prompts;
mod show;
mod validation;

use std::fmt;
use std::path::{Path, PathBuf};

pub use analyzers::{
    AnalyzerEntry, AnalyzerFindings, AnalyzerList, AutoKeyword, BUILT_IN_ANALYZERS, SarifAnalyzer,
};
pub use bugloop_domain::safety::{CommandEntry, CommandList};
pub use check::{check_bytes, check_text};
pub(crate) use env::apply_env_tree;
pub use env::{ENV_PREFIX, apply_env, is_reserved_variable};
pub use layered::*;
pub use model::*;
pub use prompts::*;
pub use show::*;
pub use validation::{SYSTEM_PATH_ROOTS, validate};

use bugloop_domain::MarkerSyntax;
use bugloop_domain::dedup::DedupRule;
use bugloop_domain::filter::FilterSettings;
use bugloop_domain::paths::IgnoreMatcher;
use bugloop_domain::safety::{VerifyCommand, parse_verify_commands};

/// Where the configuration lives, relative to the repository root.
pub const CONFIG_PATH: &str = ".bugloop/config.yml";

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    Env {
        var: String,
    },
    Value,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, column } => write!(f, "{}:{line}:{column}", path.display()),
            Origin::Env { var } => write!(f, "environment variable {var}"),
            Origin::Value => f.write_str("configuration"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{origin}: unknown key `{key}`{}{}", at_path(.path), hint(.suggestion, .valid))]
    UnknownKey {
        origin: Origin,
        path: String,
        key: String,
        suggestion: Option<String>,
        valid: Vec<String>,
    },
    #[error("{origin}: {}{message}", at_path_prefix(.path))]
    Invalid {
        origin: Origin,
        path: String,
        message: String,
    },
}

fn at_path(path: &str) -> String {
    if path.is_empty() {
        " at the top level".to_owned()
    } else {
        format!(" in `{path}`")
    }
}

fn at_path_prefix(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!("`{path}`: ")
    }
}

fn hint(suggestion: &Option<String>, valid: &[String]) -> String {
    match suggestion {
        Some(best) => format!("; did you mean `{best}`?"),
        None if !valid.is_empty() => format!("; valid keys: {}", valid.join(", ")),
        None => String::new(),
    }
}

/// Parses a configuration file's text (an empty file is the defaults). Does not validate.
/// The largest configuration file read.
const MAX_CONFIG_BYTES: usize = 1 << 20;
/// A configuration file's bytes, at most one more than a file may have: a larger one (or
/// `/dev/zero`) is refused by its size without being read whole.
pub fn read_config_bytes(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The deepest nesting a configuration file may have; bugloop's own keys go 4 deep. (The YAML
/// parser's time grows with the square of the depth: a 300 KB file of nested lists took minutes.)
const MAX_CONFIG_DEPTH: usize = 32;

/// Refuses a file too large or nested too deep before the parser sees it: block nesting by
/// indentation and `- ` entries, flow nesting by brackets outside quotes (across lines).
/// `origin` says where a line and column are (a file's, or an environment variable's value).
fn check_shape(text: &str, origin: impl Fn(usize, usize) -> Origin) -> Result<(), ConfigError> {
    let refuse = |line: usize, column: usize, message: String| ConfigError::Invalid {
        origin: origin(line, column),
        path: String::new(),
        message,
    };
    if text.len() > MAX_CONFIG_BYTES {
        return Err(refuse(
            1,
            1,
            format!(
                "more than {} KiB of text, which is what a configuration file or value may have \
                 at most",
                MAX_CONFIG_BYTES >> 10
            ),
        ));
    }
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if flow == 0 {
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - trimmed.len();
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut depth = indents.len();
        let mut rest = trimmed;
        while let Some(after) = rest.strip_prefix("- ") {
            depth += 1;
            rest = after.trim_start();
        }
        let too_deep = |column: usize| {
            refuse(
                index + 1,
                column + 1,
                format!("nested more than {MAX_CONFIG_DEPTH} levels deep"),
            )
        };
        if !line.is_empty() && depth + flow > MAX_CONFIG_DEPTH {
            return Err(too_deep(0));
        }
        // Bytes, not characters: every byte looked for is ASCII, which UTF-8 never uses inside a
        // multi-byte character (and bytes are what makes this fast enough for a 1 MiB file).
        let mut quote: Option<u8> = None;
        let mut previous = b' ';
        for (column, byte) in line.bytes().enumerate() {
            match (quote, byte) {
                (Some(q), b) if b == q => quote = None,
                (Some(_), _) => {}
                (None, b'\'' | b'"') => quote = Some(byte),
                (None, b'#') if previous == b' ' => break,
                (None, b'[' | b'{') => {
                    flow += 1;
                    if depth + flow > MAX_CONFIG_DEPTH {
                        return Err(too_deep(column));
                    }
                }
                (None, b']' | b'}') => flow = flow.saturating_sub(1),
                _ => {}
            }
            previous = byte;
        }
    }
    Ok(())
}

pub fn from_yaml(text: &str, path: &Path) -> Result<Config, ConfigError> {
    if shaped_and_blank(text, path)? {
        return Ok(Config::default());
    }
    deserialize_located(text, path)
}

/// Checks the file's shape (the error names its place); whether it sets nothing at all.
fn shaped_and_blank(text: &str, path: &Path) -> Result<bool, ConfigError> {
    check_shape(text, |line, column| Origin::File {
        path: path.to_path_buf(),
        line,
        column,
    })?;
    Ok(text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')))
}

/// The configuration and the file's YAML tree (which says what the file itself sets), parsed
/// once; a file that does not read is parsed again from its text for an error with its place.
pub(crate) fn from_yaml_with_tree(
    text: &str,
    path: &Path,
) -> Result<(Config, serde_yaml_ng::Value), ConfigError> {
    if shaped_and_blank(text, path)? {
        return Ok((Config::default(), serde_yaml_ng::Value::Null));
    }
    let tree = match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Ok(tree) => tree,
        Err(error) => {
            // The text's own error first, where it has one (it names the key). A text that reads
            // as a configuration but has no tree (a key twice in a map, a tag its value does not
            // fit) is refused: its tree is what says which keys the file sets, and without it the
            // whole file was dropped without a word.
            deserialize_located(text, path)?;
            return Err(tree_error(&error, path));
        }
    };
    if let Ok(config) = serde_path_to_error::deserialize::<_, Config>(&tree) {
        return Ok((config, tree));
    }
    // Read from the text where its tree did not read (a plain `5` is text to a key that takes
    // text, not to the tree): the tree still says which keys the file sets.
    let config = deserialize_located(text, path)?;
    Ok((config, tree))
}

/// Why a file has no YAML tree, at its place.
fn tree_error(error: &serde_yaml_ng::Error, path: &Path) -> ConfigError {
    let (line, column) = error
        .location()
        .map_or((1, 1), |at| (at.line(), at.column()));
    let origin = Origin::File {
        path: path.to_path_buf(),
        line,
        column,
    };
    // serde_yaml_ng starts with the node's path (`model.prices: ...`): ours says it in backticks.
    let message = error.to_string();
    match message.split_once(": ") {
        Some((node, rest)) if !node.contains(' ') => classify(origin, node.to_owned(), rest),
        _ => classify(origin, String::new(), &message),
    }
}

/// Reads the configuration straight from the text, so an error has its line and column.
fn deserialize_located(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let deserializer = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let path_text = clean_path(&error.path().to_string());
        let inner = error.into_inner();
        let origin = match inner.location() {
            Some(location) => Origin::File {
                path: path.to_path_buf(),
                line: location.line(),
                column: location.column(),
            },
            None => Origin::File {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
            },
        };
        classify(origin, path_text, &inner.to_string())
    })
}

/// `serde_path_to_error` writes `review.threshold`; `?` for an unknown position.
fn clean_path(path: &str) -> String {
    if path == "." || path == "?" {
        String::new()
    } else {
        path.to_owned()
    }
}

/// Keys the spec names (or bugloop once read) that configure nothing bugloop has: refused with why
/// and what to do instead, rather than accepted and ignored. A key under a listed section is
/// refused with it.
pub const UNSUPPORTED_KEYS: &[(&str, &str)] = &[
    (
        "review.trigger_mention",
        "bugloop answers to `@bugloop` on a pull request (a mention as a word, not inside a URL), \
         which is not configurable; locally, `bugloop review` is the trigger; remove the key",
    ),
    (
        "review.review_drafts",
        "a draft pull request is reviewed when it is marked ready for review (and whenever a \
         review is asked for locally), which is not configurable; remove the key",
    ),
    (
        "identity.bot_logins",
        "bugloop no longer trusts a comment for its author's name: it knows its own comments by \
         the record it keeps when it writes them (locally) and by the account it authenticates as \
         (on GitHub); remove the key",
    ),
];

/// Why `key` (a dotted path) is refused, when it is an unsupported key or under one.
pub fn unsupported(key: &str) -> Option<&'static str> {
    UNSUPPORTED_KEYS.iter().find_map(|(known, why)| {
        (key == *known
            || key
                .strip_prefix(known)
                .is_some_and(|rest| rest.starts_with('.')))
        .then_some(*why)
    })
}

fn dotted(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// Turns a serde message into an error: unknown keys get the closest valid key.
fn classify(origin: Origin, path: String, message: &str) -> ConfigError {
    // serde's standard wording: "unknown field `x`, expected one of `a`, `b`" (or "expected `a`",
    // or "there are no fields"); YAML errors append " at line L column C".
    let message = message.split(" at line ").next().unwrap_or(message);
    // serde_yaml_ng starts with the YAML path of the node (`review.threshold: ...`): we print ours.
    let message = match message.split_once(": ") {
        Some((head, rest)) if !head.contains(' ') && (head == "." || path.starts_with(head)) => {
            rest
        }
        _ => message,
    }
    .to_owned();
    if let Some((key, valid)) = backticked(&message, "unknown field `") {
        // The failing key is the last element of the path; report its parent.
        let parent = match path.strip_suffix(key.as_str()) {
            Some("") => String::new(),
            Some(parent) if parent.ends_with('.') => parent.trim_end_matches('.').to_owned(),
            // The path ends before the key (a key inside a list item: `fix.verify_commands[0]`).
            _ => path.clone(),
        };
        let full = dotted(&parent, &key);
        if let Some(why) = unsupported(&full) {
            return ConfigError::Invalid {
                origin,
                path: full,
                message: format!("is not supported: {why}"),
            };
        }
        let suggestion = closest(&key, &valid);
        return ConfigError::UnknownKey {
            origin,
            path: parent,
            key,
            suggestion,
            valid,
        };
    }
    if let Some((value, valid)) = backticked(&message, "unknown variant `") {
        let hint = match closest(&value, &valid) {
            Some(best) => format!("; did you mean `{best}`?"),
            None => format!("; expected one of {}", valid.join(", ")),
        };
        let message = format!("unknown value `{value}`{hint}");
        return ConfigError::Invalid {
            origin,
            path,
            message,
        };
    }
    ConfigError::Invalid {
        origin,
        path,
        message: in_users_words(&message),
    }
}

/// serde's message said as a YAML file's writer knows it, where serde names a Rust type or uses
/// its own words (`struct ReviewConfig`, `u64`, `unit value`, `duplicate field`).
fn in_users_words(message: &str) -> String {
    let message = message
        .replace("invalid type: unit value", "invalid type: nothing (null)")
        .replace("invalid type: map,", "invalid type: mapping,")
        .replace("invalid type: sequence,", "invalid type: list,")
        .replace(" as u128,", ",")
        .replace(" as i128,", ",");
    if let Some(key) = message
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.strip_suffix('`'))
        .or_else(|| {
            message
                .strip_prefix("duplicate entry with key \"")
                .and_then(|rest| rest.strip_suffix('"'))
        })
    {
        return format!("the key `{key}` is given twice");
    }
    let Some((head, expected)) = message.rsplit_once(", expected ") else {
        return message;
    };
    let said = match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a sequence" => "a list",
        "a map" => "a mapping (`key: value` lines)",
        _ if expected.starts_with("struct ") => "a mapping (`key: value` lines)",
        _ => return message,
    };
    format!("{head}, expected {said}")
}

/// Reads serde's "<prefix>x`, expected one of `a`, `b`" into `x` and `[a, b]`.
fn backticked(message: &str, prefix: &str) -> Option<(String, Vec<String>)> {
    let (name, expected) = message.strip_prefix(prefix)?.split_once('`')?;
    let valid = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    Some((name.to_owned(), valid))
}

/// The valid key nearest to a misspelt one, if it is near enough to be a likely typo.
fn closest(key: &str, valid: &[String]) -> Option<String> {
    let key_lower = key.to_lowercase().replace('-', "_");
    valid
        .iter()
        .map(|candidate| {
            (
                strsim::damerau_levenshtein(&key_lower, candidate),
                candidate,
            )
        })
        .filter(|(distance, candidate)| {
            *distance <= (candidate.len().max(key.len()) / 3).max(2)
                || candidate.contains(&key_lower)
                || key_lower.contains(candidate.as_str())
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.clone())
}

/// The filter pipeline's settings; `sensitive` is the resolved [`Sensitivity`].
pub fn filter_settings_for(
    config: &Config,
    sensitive: bool,
) -> Result<FilterSettings, ConfigError> {
    let review = &config.review;
    let ignore = ignore_matcher("review.ignore_files", &review.ignore_files)?;
    Ok(FilterSettings {
        ignore,
        threshold: review.threshold,
        severity_floor: review.severity_floor,
        sensitive_data: sensitive,
        security_promotion: review.security_promotion,
        elevation_threshold: review.elevation_threshold,
        elevation_min_score: review.elevation_min_score,
        dedup: DedupRule {
            line_window: review.dedup_line_window,
            min_overlap: review.dedup_min_overlap,
        },
        comment_limit: review.comment_limit,
        known_files: std::collections::BTreeSet::new(),
    })
}

/// A key's glob list as a matcher; an error names the entry (`review.ignore_files[3]`, 0-based
/// like every key path), so it is found in the file it came from.
fn ignore_matcher(key: &str, patterns: &[String]) -> Result<IgnoreMatcher, ConfigError> {
    IgnoreMatcher::new(patterns).map_err(|error| ConfigError::Invalid {
        origin: Origin::Value,
        path: match error.index() {
            Some(index) => format!("{key}[{index}]"),
            None => key.to_owned(),
        },
        message: error.reason(),
    })
}

fn filter_settings(config: &Config) -> Result<FilterSettings, ConfigError> {
    filter_settings_for(
        config,
        config.review.sensitive_data == Sensitivity::Sensitive,
    )
}

pub fn marker_syntax(config: &Config) -> Result<MarkerSyntax, ConfigError> {
    MarkerSyntax::new(
        &config.identity.marker_prefix,
        &config.identity.legacy_marker_prefixes,
    )
    .map_err(|e| ConfigError::Invalid {
        origin: Origin::Value,
        path: "identity.marker_prefix".to_owned(),
        message: e.to_string(),
    })
}

pub fn verify_commands(config: &Config) -> Result<Vec<VerifyCommand>, ConfigError> {
    commands("fix.verify_commands", &config.fix.verify_commands)
}

/// A key's commands, split; an error names the entry (`fix.verify_commands[1]`, 0-based like
/// every key path).
pub fn commands(key: &str, list: &CommandList) -> Result<Vec<VerifyCommand>, ConfigError> {
    parse_verify_commands(list).map_err(|error| ConfigError::Invalid {
        origin: Origin::Value,
        path: match error.index() {
            Some(index) => format!("{key}[{}]", index.saturating_sub(1)),
            None => key.to_owned(),
        },
        message: error.reason(),
    })
}

/// The keys the binary also accepts under the spec's names (`#[serde(alias)]` in `model.rs`):
/// the schema's definition they are in (`""` for the top level), the alias and the key.
/// schemars leaves aliases out, and with `additionalProperties: false` an editor would call a
/// file the binary reads wrong. A test checks each against serde and a JSON Schema validator.
const SCHEMA_ALIASES: &[(&str, &str, &str)] = &[
    ("", "limits", "solve"),
    ("ReviewConfig", "problem_score_threshold", "threshold"),
    (
        "ReviewConfig",
        "score_elevation_threshold",
        "elevation_threshold",
    ),
    ("ReviewConfig", "bugbot-severity", "severity_floor"),
    ("ReviewConfig", "bugbot-comment-limit", "comment_limit"),
    ("ReviewConfig", "ai-ignore-files", "ignore_files"),
    ("FixConfig", "bugbot-fix-verify-commands", "verify_commands"),
    ("SolveConfig", "max_ralph_iterations", "max_iterations"),
    ("Labels", "in-progress", "in_progress"),
    ("Labels", "needs-human", "needs_human"),
];

/// The JSON Schema of the configuration file, the spec's names of keys included.
pub fn schema() -> serde_json::Value {
    let mut schema = schemars::schema_for!(Config).to_value();
    // The least values the validation takes, from its own table, so an editor says what
    // `config check` would.
    for (key, _, least) in validation::minimums(&Config::default()) {
        if let Some(property) = schema_property(&mut schema, key) {
            property.insert("minimum".to_owned(), least.into());
        }
    }
    for (definition, alias, key) in SCHEMA_ALIASES {
        let properties = if definition.is_empty() {
            schema.get_mut("properties")
        } else {
            schema
                .get_mut("$defs")
                .and_then(|defs| defs.get_mut(*definition))
                .and_then(|def| def.get_mut("properties"))
        };
        if let Some(serde_json::Value::Object(properties)) = properties
            && let Some(mut property) = properties.get(*key).cloned()
        {
            if let Some(object) = property.as_object_mut() {
                object.insert(
                    "description".to_owned(),
                    format!("The spec's name of `{key}`.").into(),
                );
            }
            properties.insert((*alias).to_owned(), property);
        }
    }
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "title".to_owned(),
            "bugloop configuration (.bugloop/config.yml)".into(),
        );
    }
    schema
}

/// The schema of `section.field` (a section's properties are in its `$defs` entry).
fn schema_property<'a>(
    schema: &'a mut serde_json::Value,
    key: &str,
) -> Option<&'a mut serde_json::Map<String, serde_json::Value>> {
    let (section, field) = key.split_once('.')?;
    let reference = schema
        .pointer(&format!("/properties/{section}/$ref"))?
        .as_str()?
        .strip_prefix("#/$defs/")?
        .to_owned();
    schema
        .pointer_mut(&format!("/$defs/{reference}/properties/{field}"))?
        .as_object_mut()
}

#[cfg(test)]
mod tests;
