//! The GitHub Action's `action.yml` and the example workflows: they parse, every input the
//! action reads is declared, no `${{ }}` expression is pasted into a shell script (where a
//! branch name or a comment could inject commands: values reach scripts as variables), and every
//! example sets the permissions it needs, one job per pull request at a time, and the state key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `run:` script in a list of steps.
fn scripts(steps: &Value) -> Vec<String> {
    steps
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|step| step.get("run").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

#[test]
fn the_action_declares_what_it_reads_and_pastes_nothing_into_scripts() {
    let path = root().join("action.yml");
    let action = load(&path);
    let text = std::fs::read_to_string(&path).unwrap();
    let declared: Vec<String> = action["inputs"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    for used in text.split("inputs.").skip(1) {
        let name: String = used
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        assert!(declared.contains(&name), "inputs.{name} is not declared");
    }
    assert_eq!(action["runs"]["using"].as_str(), Some("composite"));
    let steps = &action["runs"]["steps"];
    for script in scripts(steps) {
        assert!(
            !script.contains("${{"),
            "an expression in a script:\n{script}"
        );
    }
    assert!(action["outputs"]["sarif"].is_mapping());
}

#[test]
fn every_example_workflow_is_safe_to_copy() {
    let dir = root().join("examples/github");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yml") {
            continue;
        }
        seen += 1;
        let workflow = load(&path);
        let name = path.display();
        assert!(
            workflow["permissions"].is_mapping(),
            "{name}: no permissions"
        );
        assert!(
            workflow["concurrency"]["group"].is_string(),
            "{name}: no concurrency group"
        );
        for (_, job) in workflow["jobs"].as_mapping().unwrap() {
            for script in scripts(&job["steps"]) {
                assert!(
                    !script.contains("${{"),
                    "{name}: an expression in a script:\n{script}"
                );
            }
            let bugloop = job["steps"]
                .as_sequence()
                .unwrap()
                .iter()
                .find(|s| {
                    s["uses"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("bugloop/bugloop@"))
                })
                .unwrap_or_else(|| panic!("{name}: no bugloop step"));
            assert!(
                bugloop["with"]["state-key"].is_string(),
                "{name}: no state key"
            );
        }
    }
    assert_eq!(seen, 3);
}
