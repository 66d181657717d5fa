//! `review.analyzers` and what becomes of their hits (`review.analyzer_findings`): the static
//! analyzers a review stands on (docs/analyzers.md). Trusted only: a branch never chooses them
//! (it could switch off the rule that catches its own bug), and under an operator they are the
//! operator's unless handed over.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ConfigError, Origin};

/// The built-in analyzers' names (`bugloop-analyzers`' table; a test holds the two together).
pub const BUILT_IN_ANALYZERS: &[&str] = &[
    "ruff",
    "ty",
    "shellcheck",
    "actionlint",
    "zizmor",
    "hadolint",
    "biome",
    "tsc",
    "clippy",
    "go-vet",
    "bugloop-python",
];

/// `auto`, or a list of analyzers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "expected `auto`, or a list of analyzers: names (`ruff`, `auto`) or `{name, command}` mappings"
)]
pub enum AnalyzerList {
    /// `auto`: every built-in analyzer whose tool is installed and whose files the change
    /// touches.
    Auto(AutoKeyword),
    /// These analyzers (`[]`: none). `auto` in the list stands for every built-in.
    List(Vec<AnalyzerEntry>),
}

impl Default for AnalyzerList {
    fn default() -> Self {
        AnalyzerList::Auto(AutoKeyword::Auto)
    }
}

/// The word `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AutoKeyword {
    Auto,
}

/// A built-in analyzer's name (or `auto`), or a tool that writes SARIF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    untagged,
    expecting = "expected an analyzer's name (`ruff`, `auto`) or a `{name, command}` mapping"
)]
pub enum AnalyzerEntry {
    Name(String),
    Sarif(SarifAnalyzer),
}

/// A tool that writes SARIF, run in the sandbox like a verify command, or a SARIF file another
/// step wrote (CodeQL's results).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SarifAnalyzer {
    /// Its name in reports and on findings.
    pub name: String,
    /// The command, split like a shell would and run without one, that prints SARIF (unless
    /// `sarif` names its file); `{files}` becomes the changed files it reads, `{base}` the
    /// directory holding the base commit's `config` paths.
    #[serde(default)]
    pub command: Option<String>,
    /// A SARIF file to read (after the command, or alone).
    #[serde(default)]
    pub sarif: Option<String>,
    /// Globs of the files it reads (default: all); it runs only when the change touches one.
    #[serde(default)]
    pub files: Vec<String>,
    /// The repository's paths its command reads rules from, given from the base commit under
    /// `{base}` (never the change's).
    #[serde(default)]
    pub config: Vec<String>,
}

/// What becomes of the analyzers' hits on the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum AnalyzerFindings {
    /// `triage` with a model that uses tools, `publish` with one that does not (the embedded
    /// model).
    #[default]
    Auto,
    /// The model confirms each (its explanation and score) or dismisses it with a reason.
    Triage,
    /// Published as the tools say, at the score of each rule's class.
    Publish,
}

/// Checks `review.analyzers`: known names, SARIF tools with a command that runs without a shell
/// or a file, names used once.
pub(crate) fn validate(list: &AnalyzerList) -> Result<(), ConfigError> {
    let AnalyzerList::List(entries) = list else {
        return Ok(());
    };
    let invalid = |index: usize, message: String| ConfigError::Invalid {
        origin: Origin::Value,
        path: format!("review.analyzers[{index}]"),
        message,
    };
    let mut names: Vec<&str> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let name = match entry {
            AnalyzerEntry::Name(name) if name == "auto" => continue,
            AnalyzerEntry::Name(name) => {
                if !BUILT_IN_ANALYZERS.contains(&name.as_str()) {
                    return Err(invalid(
                        index,
                        format!(
                            "`{name}` is no built-in analyzer (those are auto, {}); a tool of your own is `{{name, command}}` printing SARIF",
                            BUILT_IN_ANALYZERS.join(", ")
                        ),
                    ));
                }
                name.as_str()
            }
            AnalyzerEntry::Sarif(tool) => {
                sarif_tool(tool).map_err(|message| invalid(index, message))?;
                tool.name.as_str()
            }
        };
        if names.contains(&name) {
            return Err(invalid(index, format!("`{name}` is listed twice")));
        }
        names.push(name);
    }
    Ok(())
}

fn sarif_tool(tool: &SarifAnalyzer) -> Result<(), String> {
    let name = &tool.name;
    let simple = !name.is_empty()
        && name.len() <= 40
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !simple {
        return Err(format!(
            "the name {name:?} must be 1-40 letters, digits, `-`, `_` or `.`"
        ));
    }
    if BUILT_IN_ANALYZERS.contains(&name.as_str()) || name == "bugloop" || name == "auto" {
        return Err(format!("the name `{name}` is taken: choose another"));
    }
    if tool.command.is_none() && tool.sarif.is_none() {
        return Err(format!(
            "`{name}` needs a `command` that prints SARIF or a `sarif` file to read"
        ));
    }
    if let Some(command) = &tool.command {
        bugloop_domain::safety::parse_verify_commands(&[command.as_str()])
            .map_err(|e| format!("`{name}`'s command: {e}"))?;
    }
    for glob in &tool.files {
        globset::Glob::new(glob).map_err(|e| format!("`{name}`'s files: {e}"))?;
    }
    for path in &tool.config {
        let safe = !path.is_empty()
            && !path.starts_with('/')
            && std::path::Path::new(path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !safe {
            return Err(format!(
                "`{name}`'s config path {path:?} must be relative to the repository, without `..`"
            ));
        }
    }
    Ok(())
}
