//! The GitHub Action's `action.yml` and the example workflows: they parse, every input the
//! action reads is declared, no `${{ }}` expression is pasted into a shell script (where a
//! branch name or a comment could inject commands: values reach scripts as variables), and every
//! example sets the permissions it needs, one job per pull request at a time, and the state key.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use bugloop_testkit::workspace as root;
use serde_yaml_ng::Value;

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fails the test if a `run:` script of `job` (in the workflow `name`) holds a `${{ }}`
/// expression: the value is pasted into the script, so whoever writes it writes code.
#[track_caller]
fn assert_no_expression_in_a_script(name: &str, job: &Value) {
    for script in scripts(&job["steps"]) {
        assert!(
            !script.contains("${{"),
            "{name}: an expression in a script:\n{script}"
        );
    }
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
        // A run cancelled while it publishes, or two publishing at once, can leave a finding
        // twice: bugloop's runs wait their turn instead.
        assert_ne!(
            workflow["concurrency"]["cancel-in-progress"].as_bool(),
            Some(true),
            "{name}: a bugloop run is never cancelled half way"
        );
        for (_, job) in workflow["jobs"].as_mapping().unwrap() {
            assert_no_expression_in_a_script(&name.to_string(), job);
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

/// actionlint (`scripts/test-assets` installs it) on the project's own workflows, the examples,
/// and a workflow made of `action.yml`'s `uses:` steps (actionlint reads workflows, and the
/// composite action's actions must be on a current runtime too): not one finding.
#[test]
fn actionlint_finds_nothing_in_any_workflow() {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    let actionlint = cache.join("bugloop/test-assets/actionlint/actionlint");
    assert!(
        actionlint.exists(),
        "{} is missing; `scripts/setup --test` installs it",
        actionlint.display()
    );
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [".github/workflows", "examples/github"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) == Some("yml") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 6, "{files:?}");
    // The composite action's steps that use other actions, as a job of their own.
    let action = load(&root().join("action.yml"));
    let mut steps = Vec::new();
    for step in action["runs"]["steps"].as_sequence().unwrap() {
        let Some(uses) = step["uses"].as_str() else {
            continue;
        };
        let mut with = serde_yaml_ng::Mapping::new();
        for (key, _) in step["with"].as_mapping().into_iter().flatten() {
            with.insert(key.clone(), Value::from("x"));
        }
        let mut synthetic = serde_yaml_ng::Mapping::new();
        synthetic.insert("uses".into(), uses.into());
        synthetic.insert("with".into(), Value::Mapping(with));
        steps.push(Value::Mapping(synthetic));
    }
    assert!(!steps.is_empty());
    let workflow = serde_yaml_ng::to_string(&serde_json::json!({
        "name": "the actions action.yml uses",
        "on": "push",
        "permissions": {},
        "jobs": {"steps": {"runs-on": "ubuntu-latest", "steps": steps}},
    }))
    .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let synthetic = temp.path().join("action-uses.yml");
    std::fs::write(&synthetic, workflow).unwrap();
    files.push(synthetic);
    let output = std::process::Command::new(&actionlint)
        .arg("-no-color")
        .args(&files)
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        output.status.success() && output.stdout.is_empty(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The project's own workflows follow the rules the examples do: least permissions declared at
/// the top, no expression pasted into a script, and bugloop's review runs the action of the
/// base commit, never the pull request's.
#[test]
fn the_projects_own_workflows_are_safe() {
    let dir = root().join(".github/workflows");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let workflow = load(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            workflow["permissions"].is_mapping(),
            "{name}: no permissions"
        );
        for (_, job) in workflow["jobs"].as_mapping().unwrap() {
            assert_no_expression_in_a_script(&name, job);
        }
        names.push(name);
    }
    names.sort();
    assert_eq!(names, ["bugloop.yml", "ci.yml", "release.yml"]);
    let review = load(&dir.join("bugloop.yml"));
    let steps = review["jobs"]["review"]["steps"].as_sequence().unwrap();
    let action = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("bugloop"))
        .unwrap();
    let path = action["uses"].as_str().unwrap().trim_start_matches("./");
    let checkout = steps
        .iter()
        .find(|s| s["with"]["path"].as_str() == Some(path))
        .expect("the action's own checkout");
    assert_eq!(
        checkout["with"]["ref"].as_str(),
        Some("${{ github.event.pull_request.base.sha }}")
    );
    let ci = std::fs::read_to_string(dir.join("ci.yml")).unwrap();
    assert!(ci.contains("run: bash .ci/run"), "CI runs the test command");
}
