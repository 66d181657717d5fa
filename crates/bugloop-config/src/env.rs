//! `BUGLOOP_<SECTION>__<KEY>` overrides: each variable's value read as YAML and put at its key,
//! a mapping merged into its section key by key, each checked on its own so an error names the
//! variable that caused it.

use crate::{
    Config, ConfigError, Origin, check_shape, classify, clean_path, closest, dotted, layered,
    unsupported,
};

/// Prefix of environment overrides; `__` separates levels: `BUGLOOP_REVIEW__THRESHOLD=7`.
pub const ENV_PREFIX: &str = "BUGLOOP_";
/// Whether a `BUGLOOP_*` variable is one of bugloop's own settings rather than a configuration
/// override (the server reads its settings from the same environment its jobs' configuration
/// is loaded from).
pub fn is_reserved_variable(name: &str) -> bool {
    ENV_RESERVED.contains(&name)
}

/// `BUGLOOP_*` variables that are not overrides.
const ENV_RESERVED: &[&str] = &[
    "BUGLOOP_CONFIG",
    "BUGLOOP_LOG",
    "BUGLOOP_MODEL_DIR",
    "BUGLOOP_ANALYZERS_DIR",
    "BUGLOOP_RECORD",
    // The GitHub front ends' own settings (secrets among them, never configuration).
    "BUGLOOP_STATE_KEY",
    "BUGLOOP_BOT_LOGIN",
    "BUGLOOP_GITHUB_WRITE_SPACING_MS",
    "BUGLOOP_WEBHOOK_SECRET",
    "BUGLOOP_APP_ID",
    "BUGLOOP_APP_PRIVATE_KEY",
    "BUGLOOP_STORE_URL",
    "BUGLOOP_WORKERS",
    "BUGLOOP_GIT_BASE",
    "BUGLOOP_SERVER_CONFIG",
    "BUGLOOP_SERVER_MODEL",
    "BUGLOOP_ADMIN_TOKEN",
    "BUGLOOP_REPORT_TOKEN",
    "BUGLOOP_REPORT_REPOSITORIES",
    "BUGLOOP_SENTRY_CLIENT_SECRET",
    "BUGLOOP_SENTRY_PROJECTS",
    "BUGLOOP_AUTOFIX_LABEL",
    "BUGLOOP_SOLVE_BRANCH_PREFIX",
    // The sandbox probe's and the Action's scripts' (a job may set them for every step).
    "BUGLOOP_USERNS_SYSCTL",
    "BUGLOOP_APPARMOR_DIR",
    "BUGLOOP_APPARMOR_EXTRA",
    "BUGLOOP_RELEASES_URL",
];

/// Applies `BUGLOOP_SECTION__KEY=value` overrides (values are read as YAML: `7`, `true`,
/// `[a, b]`). Returns the new configuration and the variables applied.
pub fn apply_env(
    config: Config,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(Config, Vec<String>), ConfigError> {
    let mut tree = serde_yaml_ng::to_value(&config).map_err(|error| ConfigError::Invalid {
        origin: Origin::Value,
        path: String::new(),
        message: error.to_string(),
    })?;
    let applied = apply_env_tree(&mut tree, env)?;
    if applied.is_empty() {
        return Ok((config, Vec::new()));
    }
    let config = config_of_tree(&tree, &Origin::Value)?;
    Ok((config, applied.into_iter().map(|(var, _)| var).collect()))
}

/// The configuration `tree` holds, read as a file's text is: a plain `5` or `true` is text to a
/// key that takes text (`labels.trigger`), as it is in a file, rather than a number there.
pub(crate) fn config_of_tree(
    tree: &serde_yaml_ng::Value,
    origin: &Origin,
) -> Result<Config, ConfigError> {
    if let Ok(config) = serde_path_to_error::deserialize::<_, Config>(tree) {
        return Ok(config);
    }
    let text = serde_yaml_ng::to_string(tree).map_err(|error| ConfigError::Invalid {
        origin: origin.clone(),
        path: String::new(),
        message: error.to_string(),
    })?;
    serde_path_to_error::deserialize(serde_yaml_ng::Deserializer::from_str(&text)).map_err(
        |error| {
            let path = clean_path(&error.path().to_string());
            classify(origin.clone(), path, &error.into_inner().to_string())
        },
    )
}

/// A variable applied, and the key paths it set.
pub(crate) type Applied = (String, Vec<Vec<String>>);

/// Applies the overrides to a configuration's tree; returns each variable applied with the key
/// paths it set, in order.
pub(crate) fn apply_env_tree(
    tree: &mut serde_yaml_ng::Value,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<Applied>, ConfigError> {
    let mut vars: Vec<(String, String)> = env
        .into_iter()
        .filter(|(name, _)| name.starts_with(ENV_PREFIX) && !ENV_RESERVED.contains(&name.as_str()))
        .collect();
    vars.sort();
    let mut applied = Vec::new();
    for (name, raw) in vars {
        // Empty is the same as not set (as for `BUGLOOP_CONFIG`): a CI step that sets a
        // variable from one that is not defined must not reset a section to its defaults.
        if raw.trim().is_empty() {
            continue;
        }
        let origin = Origin::Env { var: name.clone() };
        let keys: Vec<String> = name[ENV_PREFIX.len()..]
            .split("__")
            .map(str::to_lowercase)
            .collect();
        // A value is YAML too, and as costly to parse when nested deep.
        check_shape(&raw, |_, _| origin.clone())?;
        let value: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&raw).unwrap_or(serde_yaml_ng::Value::String(raw.clone()));
        let scalar = !value.is_mapping() && !value.is_sequence();
        let mut with_value = tree.clone();
        let set = set_path(&mut with_value, &keys, value, &origin)?;
        let fits = serde_path_to_error::deserialize::<_, Config>(&with_value).is_ok();
        // A plain scalar that does not fit its key as YAML reads it (`~`, `0x10` for a label) is
        // its text, as a file's is.
        let as_text = (!fits && scalar)
            .then(|| {
                let mut with_text = tree.clone();
                let text = serde_yaml_ng::Value::String(raw.trim().to_owned());
                set_path(&mut with_text, &keys, text, &origin).ok()?;
                serde_path_to_error::deserialize::<_, Config>(&with_text)
                    .is_ok()
                    .then_some(with_text)
            })
            .flatten();
        *tree = match as_text {
            Some(with_text) => with_text,
            None => {
                // Check each override on its own, so an error names the variable that caused it.
                config_of_tree(&with_value, &origin)?;
                with_value
            }
        };
        applied.push((name, set));
    }
    Ok(applied)
}

/// Puts an override's `value` at `keys`; returns the key paths it set.
fn set_path(
    tree: &mut serde_yaml_ng::Value,
    keys: &[String],
    value: serde_yaml_ng::Value,
    origin: &Origin,
) -> Result<Vec<Vec<String>>, ConfigError> {
    let mut node = tree;
    let mut walked: Vec<&str> = Vec::new();
    let mut inside_new_entry = false;
    for (depth, key) in keys.iter().enumerate() {
        let serde_yaml_ng::Value::Mapping(map) = node else {
            return Err(ConfigError::Invalid {
                origin: origin.clone(),
                path: walked.join("."),
                message: "is not a section; it has no keys to override".to_owned(),
            });
        };
        let lookup = serde_yaml_ng::Value::String(key.clone());
        if !map.contains_key(&lookup) {
            let valid: Vec<String> = map
                .keys()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect();
            // Maps with free keys (providers, prices) accept new entries.
            let free = inside_new_entry || matches!(walked.last(), Some(&"providers" | &"prices"));
            if !free {
                let full = dotted(&walked.join("."), key);
                if let Some(why) = unsupported(&full) {
                    return Err(ConfigError::Invalid {
                        origin: origin.clone(),
                        path: full,
                        message: format!("is not supported: {why}"),
                    });
                }
                return Err(ConfigError::UnknownKey {
                    origin: origin.clone(),
                    path: walked.join("."),
                    key: key.clone(),
                    suggestion: closest(key, &valid),
                    valid,
                });
            }
            map.insert(
                lookup.clone(),
                serde_yaml_ng::Value::Mapping(Default::default()),
            );
            inside_new_entry = true;
        }
        let Some(next) = map.get_mut(&lookup) else {
            break;
        };
        if depth + 1 == keys.len() {
            walked.push(key);
            let mut path: Vec<String> = walked.iter().map(|k| (*k).to_owned()).collect();
            let mut set = Vec::new();
            merge_into(next, value, &mut path, &mut set).map_err(|section| {
                ConfigError::Invalid {
                    origin: origin.clone(),
                    path: section,
                    message: "is a section: give it a mapping of the keys to change \
                              (`{max_turns: 4}`), or leave the variable unset"
                        .to_owned(),
                }
            })?;
            return Ok(set);
        }
        walked.push(key);
        node = next;
    }
    Ok(Vec::new())
}

/// Puts `value` at `node`: a mapping into a section key by key, so a variable changes only the
/// keys it sets (`BUGLOOP_BUDGETS='{max_turns: 4}'` keeps every other budget where the files put
/// it); a list, a scalar or a price (one value) in place. Adds the key paths set to `set`. A
/// section given nothing (`~`, `null`) would be all defaults: refused, naming the section.
fn merge_into(
    node: &mut serde_yaml_ng::Value,
    value: serde_yaml_ng::Value,
    path: &mut Vec<String>,
    set: &mut Vec<Vec<String>>,
) -> Result<(), String> {
    use serde_yaml_ng::Value;
    match (node, value) {
        (Value::Mapping(_), Value::Null) if !layered::is_atomic(path) => {
            return Err(path.join("."));
        }
        (Value::Mapping(section), Value::Mapping(new)) if !layered::is_atomic(path) => {
            for (key, value) in new {
                let key = match key {
                    Value::String(name) => Value::String(
                        layered::ALIASES
                            .iter()
                            .find(|(alias, _)| *alias == name)
                            .map_or(name, |(_, canonical)| (*canonical).to_owned()),
                    ),
                    other => other,
                };
                path.push(layered::key_text(&key));
                match section.get_mut(&key) {
                    Some(slot) => merge_into(slot, value, path, set)?,
                    None => {
                        section.insert(key, value);
                        set.push(path.clone());
                    }
                }
                path.pop();
            }
        }
        (node, value) => {
            *node = value;
            set.push(path.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{SourceText, Sources, ValueSource, load_layered};

    fn loaded(file: &str, env: &[(&str, &str)]) -> crate::Loaded {
        load_layered(&Sources {
            base: Some(SourceText::new("main:.bugloop/config.yml", file)),
            branch: Some(SourceText::new("main:.bugloop/config.yml", file)),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Sources::default()
        })
        .unwrap()
    }

    #[test]
    fn a_section_given_as_a_mapping_changes_only_the_keys_it_sets() {
        let file =
            "budgets:\n  max_cost_usd: 1.5\n  max_turns: 30\nreview:\n  severity_floor: high\n";
        let loaded = loaded(
            file,
            &[
                ("BUGLOOP_BUDGETS", "{max_turns: 4}"),
                ("BUGLOOP_REVIEW", "{bugbot-comment-limit: 3}"),
            ],
        );
        let config = &loaded.config;
        assert_eq!(config.budgets.max_turns, 4);
        assert_eq!(config.budgets.max_cost_usd, 1.5, "the file's budget stays");
        assert_eq!(config.review.comment_limit, 3, "an alias names its key");
        assert_eq!(
            loaded.source_of(&["budgets", "max_turns"]),
            Some(&ValueSource::Env("BUGLOOP_BUDGETS".to_owned()))
        );
        assert!(matches!(
            loaded.source_of(&["budgets", "max_cost_usd"]),
            Some(ValueSource::Base(_))
        ));
        assert!(matches!(
            loaded.source_of(&["review", "severity_floor"]),
            Some(ValueSource::Base(_))
        ));
    }

    #[test]
    fn an_empty_variable_is_not_set_and_a_section_is_never_given_nothing() {
        let file = "budgets:\n  max_cost_usd: 1.5\nfix:\n  verify_commands: [make test]\n";
        let loaded = loaded(file, &[("BUGLOOP_BUDGETS", ""), ("BUGLOOP_FIX", " ")]);
        assert_eq!(loaded.config.budgets.max_cost_usd, 1.5);
        assert_eq!(loaded.config.fix.verify_commands.len(), 1);
        for (var, value) in [
            ("BUGLOOP_BUDGETS", "~"),
            ("BUGLOOP_FIX", "null"),
            ("BUGLOOP_REVIEW", "{web: ~}"),
        ] {
            let error = load_layered(&Sources {
                base: Some(SourceText::new("main:.bugloop/config.yml", file)),
                env: vec![(var.to_owned(), value.to_owned())],
                ..Sources::default()
            })
            .unwrap_err()
            .to_string();
            assert!(
                error.contains(var) && error.contains("is a section"),
                "{error}"
            );
        }
    }

    #[test]
    fn a_plain_scalar_reads_as_text_where_a_file_would_read_it_so() {
        let from_file = loaded("labels:\n  trigger: 5\n", &[]);
        assert_eq!(from_file.config.labels.trigger, "5");
        for (var, value, label) in [
            ("BUGLOOP_LABELS__TRIGGER", "5", "5"),
            ("BUGLOOP_LABELS", "{trigger: 5}", "5"),
            ("BUGLOOP_LABELS__TRIGGER", "0x10", "0x10"),
            ("BUGLOOP_LABELS__TRIGGER", "~", "~"),
        ] {
            let from_env = loaded("", &[(var, value)]);
            assert_eq!(from_env.config.labels.trigger, label, "{var}={value}");
        }
        // A number is still a number where a key takes one.
        let turns = loaded("", &[("BUGLOOP_BUDGETS__MAX_TURNS", "0x10")]);
        assert_eq!(turns.config.budgets.max_turns, 16);
        let error = load_layered(&Sources {
            env: vec![("BUGLOOP_BUDGETS__MAX_TURNS".to_owned(), "many".to_owned())],
            ..Sources::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("BUGLOOP_BUDGETS__MAX_TURNS") && error.contains("max_turns"),
            "{error}"
        );
    }

    #[test]
    fn a_price_and_a_list_are_one_value() {
        let file = "model:\n  prices:\n    \"openai:x\": {input_per_mtok: 1, cached_input_per_mtok: 0.5, output_per_mtok: 2}\nfix:\n  verify_commands: [make test, make lint]\n";
        let loaded = loaded(
            file,
            &[
                (
                    "BUGLOOP_MODEL__PRICES",
                    "{\"openai:x\": {input_per_mtok: 3, output_per_mtok: 4}}",
                ),
                ("BUGLOOP_FIX", "{verify_commands: [make check]}"),
            ],
        );
        let price = &loaded.config.model.prices["openai:x"];
        assert_eq!(
            (
                price.input_per_mtok,
                price.cached_input_per_mtok,
                price.output_per_mtok
            ),
            (3.0, None, 4.0)
        );
        assert_eq!(loaded.config.fix.verify_commands.len(), 1);
    }
}
