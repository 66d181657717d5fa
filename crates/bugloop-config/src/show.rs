//! Showing a loaded configuration with the source of each value, and reporting the branch's
//! ignored settings as a finding.

use std::collections::BTreeMap;

use bugloop_domain::finding::{Category, Finding, FindingId};
use bugloop_domain::score::Score;
use serde::Serialize;
use serde_yaml_ng::{Mapping, Value};

use crate::{BranchConfig, CONFIG_PATH, Config, IgnoredBranchSetting, KeyPath, Loaded};

/// The id of the finding about ignored branch settings: one per change, updated on re-runs.
pub const IGNORED_SETTINGS_FINDING_ID: &str = "branch-changes-trusted-bugloop-configuration";

/// The effective configuration as YAML, each value followed by a comment naming its source
/// (`# default`, `# from main@1a2b3c4:.bugloop/config.yml`, `# from BUGLOOP_REVIEW__THRESHOLD`),
/// after a header listing the sources read. It loads back as the same configuration.
pub fn to_yaml_with_sources(loaded: &Loaded) -> String {
    let mut out = String::new();
    out.push_str("# The effective configuration; beside each value, where it came from.\n");
    let none = || "none".to_owned();
    out.push_str(&format!(
        "# base commit: {}\n",
        loaded.base.clone().unwrap_or_else(none)
    ));
    let branch_role = match loaded.branch_config {
        _ if loaded.branch_unreadable.is_some() => "does not read: ignored",
        BranchConfig::ReviewSettings => "its review settings",
        BranchConfig::Ignore => "ignored",
        BranchConfig::Trust => "trusted for this run",
    };
    let branch = match &loaded.branch {
        None => none(),
        Some(label) if !loaded.branch_differs => format!("{label} (the same as the base's)"),
        Some(label) => format!("{label} ({branch_role})"),
    };
    out.push_str(&format!("# this branch: {branch}\n"));
    out.push_str(&format!(
        "# your file: {}\n",
        loaded.user.clone().unwrap_or_else(none)
    ));
    if !loaded.overrides.is_empty() {
        out.push_str(&format!("# environment: {}\n", loaded.overrides.join(", ")));
    }
    if let Ok(Value::Mapping(map)) = serde_yaml_ng::to_value(&loaded.config) {
        render(&map, &mut Vec::new(), 0, loaded, &mut out);
    }
    out
}

fn scalar(value: &Value) -> String {
    serde_yaml_ng::to_string(value)
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_default()
}

fn render(map: &Mapping, path: &mut Vec<String>, indent: usize, loaded: &Loaded, out: &mut String) {
    let pad = " ".repeat(indent);
    for (key, value) in map {
        let name = match key {
            Value::String(s) => s.clone(),
            other => scalar(other),
        };
        let key_text = scalar(&Value::String(name.clone()));
        path.push(name);
        let section = matches!(value, Value::Mapping(m) if !m.is_empty())
            && !(path.len() == 3 && path[0] == "model" && path[1] == "prices");
        if let (true, Value::Mapping(inner)) = (section, value) {
            out.push_str(&format!("{pad}{key_text}:\n"));
            render(inner, path, indent + 2, loaded, out);
            path.pop();
            continue;
        }
        let comment = match loaded.sources.get(&KeyPath(path.clone())) {
            None | Some(crate::ValueSource::Default) => "  # default".to_owned(),
            Some(source) => format!("  # from {source}"),
        };
        match value {
            Value::Sequence(items) if items.is_empty() => {
                out.push_str(&format!("{pad}{key_text}: []{comment}\n"));
            }
            Value::Mapping(inner) if inner.is_empty() => {
                out.push_str(&format!("{pad}{key_text}: {{}}{comment}\n"));
            }
            Value::Sequence(_) | Value::Mapping(_) => {
                out.push_str(&format!("{pad}{key_text}:{comment}\n"));
                for line in scalar(value).lines() {
                    out.push_str(&format!("{pad}  {line}\n"));
                }
            }
            _ => {
                let text = scalar(value);
                let mut lines = text.lines();
                let first = lines.next().unwrap_or("");
                out.push_str(&format!("{pad}{key_text}: {first}{comment}\n"));
                for line in lines {
                    out.push_str(&format!("{pad}{line}\n"));
                }
            }
        }
        path.pop();
    }
}

/// The effective configuration for JSON output (see [`to_json_with_sources`]).
#[derive(Debug, Serialize)]
pub struct ShownConfig<'a> {
    pub config: &'a Config,
    /// Each leaf's dotted key -> where its value came from.
    pub sources: BTreeMap<String, String>,
    /// The branch's ignored settings.
    pub ignored: &'a [IgnoredBranchSetting],
    pub files: ShownFiles<'a>,
    pub branch_config: BranchConfig,
    /// The repository's prompts read from the trusted base (see [`crate::RepositoryPrompts`]).
    pub repository_prompts: &'a [crate::RepositoryPrompt],
}

/// The files read, by their labels.
#[derive(Debug, Serialize)]
pub struct ShownFiles<'a> {
    pub base: Option<&'a str>,
    pub branch: Option<&'a str>,
    pub branch_differs: bool,
    pub user: Option<&'a str>,
    pub environment: &'a [String],
}

/// The effective configuration as JSON: `config` (in the file's order), `sources` (each leaf's
/// dotted key -> where its value came from), `ignored` (the branch's ignored settings), `files`
/// and `branch_config`; then the repository's prompts, when the caller read them.
pub fn to_json_with_sources(loaded: &Loaded) -> ShownConfig<'_> {
    ShownConfig {
        config: &loaded.config,
        sources: loaded
            .sources
            .iter()
            .map(|(key, source)| (key.to_string(), source.to_string()))
            .collect(),
        ignored: &loaded.ignored,
        files: ShownFiles {
            base: loaded.base.as_deref(),
            branch: loaded.branch.as_deref(),
            branch_differs: loaded.branch_differs,
            user: loaded.user.as_deref(),
            environment: &loaded.overrides,
        },
        branch_config: loaded.branch_config,
        repository_prompts: &[],
    }
}

/// The finding about the branch's configuration file: its ignored settings
/// ([`ignored_settings_finding`]), or that it does not read (`unreadable`: why), which hides
/// what it changes from the review as surely as a change that is ignored; `None` when neither.
pub fn branch_config_finding(
    ignored: &[IgnoredBranchSetting],
    unreadable: Option<&str>,
) -> Option<Finding> {
    let Some(why) = unreadable else {
        return ignored_settings_finding(ignored);
    };
    Some(Finding {
        id: FindingId::new(IGNORED_SETTINGS_FINDING_ID),
        title: format!("This branch's {CONFIG_PATH} does not read: none of it was applied"),
        description: format!(
            "This branch's `{CONFIG_PATH}` could not be read as bugloop reads it, so this run \
             used the trusted configuration alone (the base commit's file, the user's own file, \
             `BUGLOOP_*` variables) and cannot say which settings the branch changes. What it \
             sets takes effect once merged, if it reads then: review it as you would a change \
             to CI. Why it does not read: {}",
            bugloop_domain::markdown::quiet(why)
        ),
        file: Some(CONFIG_PATH.to_owned()),
        line: None,
        end_line: None,
        score: Score::new(7).ok()?,
        category: Category::Security,
        evidence: None,
        suggestion: None,
        source: None,
    })
}

/// One security finding about the branch's changes to trusted-only settings (and to review
/// settings it may only make stricter), on
/// `.bugloop/config.yml` at the line of the first one (the line's text as evidence, so
/// grounding finds it); `None` when there are none.
pub fn ignored_settings_finding(ignored: &[IgnoredBranchSetting]) -> Option<Finding> {
    let first = ignored.first()?;
    let anchor = ignored.iter().find(|i| i.line.is_some()).unwrap_or(first);
    let mut keys: Vec<&str> = ignored.iter().map(|i| i.key.as_str()).collect();
    keys.dedup();
    let shown = if keys.len() > 4 {
        format!("{} and {} more", keys[..4].join(", "), keys.len() - 4)
    } else {
        keys.join(", ")
    };
    let mut description = format!(
        "This branch's `{CONFIG_PATH}` changes settings that decide which commands run and how \
         they are sandboxed, which model and provider receive the code and what a run may spend, \
         or who bugloop is. Those come only from trusted configuration (the base commit's file, \
         the user's own file, `BUGLOOP_*` variables), so these changes were ignored for this \
         run; once merged they take effect. So were review settings that would make the review \
         of this branch less strict (a higher threshold or severity floor, fewer comments, more \
         ignored files, less weight on security): a branch may only make its own review \
         stricter. Review them as you would a change to CI:\n"
    );
    for i in ignored {
        let at = i.line.map_or(String::new(), |l| format!(" (line {l})"));
        description.push_str(&format!(
            "\n- `{}`{at}: the branch sets `{}`; in effect: `{}`",
            i.key, i.branch_value, i.trusted_value
        ));
    }
    let score = Score::new(7).ok()?;
    Some(Finding {
        id: FindingId::new(IGNORED_SETTINGS_FINDING_ID),
        title: format!("This branch changes trusted bugloop configuration: {shown}"),
        description,
        file: Some(CONFIG_PATH.to_owned()),
        line: anchor.line.and_then(|l| u32::try_from(l).ok()),
        end_line: None,
        score,
        category: Category::Security,
        evidence: anchor.line_text.clone().filter(|t| !t.trim().is_empty()),
        suggestion: None,
        source: None,
    })
}
