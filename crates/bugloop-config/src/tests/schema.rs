//! The published schema against the binary's own parser: the same names accepted, every
//! documented example read alike, the seeds example the seeds.

use super::*;

/// Every name of a key the binary accepts is one the schema accepts, at the same place: each
/// alias is loaded by the binary's parser and validated by a JSON Schema validator, and a key
/// neither knows is refused by both.
#[test]
fn the_schema_accepts_exactly_the_spec_names_the_binary_reads() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let nested = |definition: &str, text: &str| -> String {
        let section = match definition {
            "" => return text.to_owned(),
            "ReviewConfig" => "review",
            "FixConfig" => "fix",
            "SolveConfig" => "solve",
            "Labels" => "labels",
            other => panic!("no section for {other}"),
        };
        format!("{section}:\n  {}", text.replace('\n', "\n  "))
    };
    let value = |key: &str| match key {
        "solve" => "\n  max_iterations: 3",
        "severity_floor" => " medium",
        "ignore_files" | "verify_commands" => " [\"make test\"]",
        "in_progress" | "needs_human" => " some-label",
        _ => " 7",
    };
    for (definition, alias, key) in SCHEMA_ALIASES {
        let text = nested(definition, &format!("{alias}:{}", value(key)));
        let config = from_yaml(&text, Path::new("c.yml"))
            .unwrap_or_else(|e| panic!("the binary refuses {alias}: {e}\n{text}"));
        let canonical = nested(definition, &format!("{key}:{}", value(key)));
        assert_eq!(
            config,
            from_yaml(&canonical, Path::new("c.yml")).unwrap(),
            "{alias}"
        );
        let json: serde_json::Value = serde_yaml_ng::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "the schema refuses {alias}: {errors:?}\n{text}"
        );
    }
    let unknown: serde_json::Value = serde_yaml_ng::from_str("labels:\n  in-progres: x\n").unwrap();
    assert!(!validator.is_valid(&unknown));
    assert!(from_yaml("labels:\n  in-progres: x\n", Path::new("c.yml")).is_err());
}

/// The configuration examples of the README and of `docs/` (their `yaml` blocks whose first
/// key is a section of the configuration): the binary's parser and the schema an editor uses
/// read each alike. Both accept the example; both refuse it with an unknown key, a misspelt
/// section or a value of the wrong type added.
#[test]
fn every_documented_example_is_read_alike_by_the_binary_and_the_schema() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut documents = vec![root.join("README.md")];
    documents.extend(bugloop_testkit::docs_markdown());
    let validator = jsonschema::validator_for(&schema()).unwrap();
    let sections: Vec<String> = match serde_yaml_ng::to_value(Config::default()).unwrap() {
        serde_yaml_ng::Value::Mapping(map) => map
            .keys()
            .filter_map(|k| k.as_str().map(str::to_owned))
            .collect(),
        _ => panic!("not a mapping"),
    };
    let binary = |text: &str| from_yaml(text, Path::new("example.yml")).map(|_| ());
    let schema_errors = |text: &str| -> Vec<String> {
        let json: serde_json::Value = serde_yaml_ng::from_str(text).unwrap();
        validator
            .iter_errors(&json)
            .map(|e| e.to_string())
            .collect()
    };
    let mut checked = Vec::new();
    for document in &documents {
        let markdown = std::fs::read_to_string(document).unwrap();
        for block in markdown.split("```yaml\n").skip(1) {
            let text = block.split("\n```").next().unwrap();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .unwrap_or("");
            let Some((key, _)) = first.split_once(':') else {
                continue;
            };
            if !sections.iter().any(|s| s == key) {
                continue;
            }
            let place = document.file_name().unwrap().to_string_lossy().into_owned();
            binary(text).unwrap_or_else(|e| panic!("{place}: the binary refuses: {e}\n{text}"));
            let errors = schema_errors(text);
            assert!(
                errors.is_empty(),
                "{place}: the schema refuses: {errors:?}\n{text}"
            );
            // Broken on the tree, so both read the same keys (a key written twice is
            // refused by the binary and read as its last value by a JSON reader).
            let tree: serde_yaml_ng::Mapping = serde_yaml_ng::from_str(text).unwrap();
            let with = |name: &str, value: serde_yaml_ng::Value| {
                let mut broken = tree.clone();
                broken.insert(name.into(), value);
                serde_yaml_ng::to_string(&broken).unwrap()
            };
            let wrong = match &tree[key] {
                serde_yaml_ng::Value::Mapping(_) | serde_yaml_ng::Value::Sequence(_) => 5.into(),
                _ => serde_yaml_ng::Value::Sequence(vec![5.into()]),
            };
            for broken in [
                with("no_such_key", 1.into()),
                with(&format!("{key}s"), serde_yaml_ng::Mapping::new().into()),
                with(key, wrong),
            ] {
                assert!(
                    binary(&broken).is_err(),
                    "{place}: the binary accepts\n{broken}"
                );
                assert!(
                    !schema_errors(&broken).is_empty(),
                    "{place}: the schema accepts\n{broken}"
                );
            }
            checked.push(place);
        }
    }
    for place in ["README.md", "configuration.md"] {
        assert!(checked.iter().any(|c| c == place), "{checked:?}");
    }
    assert!(checked.len() >= 3, "{checked:?}");
}

/// Accounts the binary refuses the schema refuses too, and the other way round.
#[test]
fn agents_accounts_are_checked_alike_by_the_binary_and_the_schema() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for (text, valid) in [
        ("agents:\n  bugsolver:\n    assignee: bugsolver-bot\n", true),
        ("agents:\n  bugsolver:\n    assignee: alice_acme\n", true),
        ("agents:\n  bugsolver:\n    assignee: \"-bad\"\n", false),
        ("agents:\n  bugsolver:\n    assignee: \"a--b\"\n", false),
        ("agents:\n  bugsolver:\n    assignee: \"a b\"\n", false),
        (
            &format!("agents:\n  bugsolver:\n    assignee: {}\n", "a".repeat(40)),
            false,
        ),
        (
            "agents:\n  reviewer:\n    logins: [\"coderabbitai[bot]\", octo-cat]\n",
            true,
        ),
        ("agents:\n  reviewer:\n    logins: [\"[bot]\"]\n", false),
        (
            "agents:\n  reviewer:\n    logins: [\"x[bot][bot]\"]\n",
            false,
        ),
        ("agents:\n  reviewer:\n    wait_minutes: 0\n", false),
        ("agents:\n  reviewer:\n    wait_minutes: 1\n", true),
    ] {
        let binary = parse(text).and_then(|c| validate(&c)).is_ok();
        let json: serde_json::Value = serde_yaml_ng::from_str(text).unwrap();
        assert_eq!(binary, valid, "the binary on {text}");
        assert_eq!(validator.is_valid(&json), valid, "the schema on {text}");
    }
    // What only the binary knows (GitHub assigns no App; every workflow is github-actions[bot]).
    for text in [
        "agents:\n  bugsolver:\n    assignee: \"solver[bot]\"\n",
        "agents:\n  reviewer:\n    logins: [\"github-actions[bot]\"]\n",
    ] {
        let error = validate(&parse(text).unwrap()).unwrap_err().to_string();
        assert!(error.contains("agents."), "{error}");
    }
}

/// The seed's example in docs/configuration.md is the seed's, word for word (where the seed's
/// documents are beside the project, as in CI).
#[test]
fn the_seeds_example_in_the_docs_is_the_seeds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = std::fs::read_to_string(root.join("docs/configuration.md")).unwrap();
    let ours = docs
        .split("```yaml\n# .bugloop/config.yml\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("docs/configuration.md shows the seed's example");
    let config = parse(ours).unwrap();
    validate(&config).unwrap();
    assert!(config.agents.reviewer.external);
    let spec = root.join("../shared/spec/bugloop-architecture.md");
    let Ok(spec) = std::fs::read_to_string(&spec) else {
        return;
    };
    let theirs = spec
        .split("# .bugloop/config.yml\n")
        .nth(1)
        .and_then(|rest| rest.split("\nGuardrails").next())
        .expect("the seed's architecture has its example");
    assert_eq!(ours.trim_end(), theirs.trim_end());
}

#[test]
fn schema_lists_every_section() {
    let schema = schema();
    let properties = schema["properties"].as_object().unwrap();
    for key in [
        "model",
        "budgets",
        "review",
        "identity",
        "fix",
        "gate",
        "converge",
        "solve",
        "labels",
        "branch_prefix",
        "protected_paths",
        "sandbox",
    ] {
        assert!(properties.contains_key(key), "{key}");
    }
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false)
    );
}

/// The schema says each least value the validation takes (an editor then says what `config
/// check` would): every key of the validation's table has its `minimum`, and a value under it
/// is refused by the schema as by the validation.
#[test]
fn the_schema_states_the_least_values() {
    let schema = schema();
    let minimums = validation::minimums(&Config::default());
    for (key, _, least) in minimums {
        let (section, field) = key.split_once('.').unwrap();
        let reference = schema["properties"][section]["$ref"].as_str().unwrap();
        let definition = reference.strip_prefix("#/$defs/").unwrap();
        assert_eq!(
            schema["$defs"][definition]["properties"][field]["minimum"],
            serde_json::json!(least),
            "{key}"
        );
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(!validator.is_valid(&serde_json::json!({"budgets": {"max_turns": 0}})));
    assert!(validator.is_valid(&serde_json::json!({"budgets": {"max_turns": 1}})));
}
