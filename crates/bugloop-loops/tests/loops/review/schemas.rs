//! Every tool an agent is given, its JSON Schema against its own argument check. The cases are
//! derived from each schema: for every property (nested ones too), the values at its edges that
//! the schema speaks about (0, -1, the minimum and maximum and one past each, empty strings and
//! lists, every enum value, null, the property left out). A value the schema admits must be
//! accepted by the tool; a value it refuses may be refused. So a schema that promises more than
//! the check keeps (or a check stricter than its schema) fails here, whichever of the two changes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bugloop_loops::Silent;
use bugloop_loops::review::tools::{Collected, ReportFinding, ResolveFinding, SubmitPass};
use bugloop_sandbox::{Policy, SandboxSettings, ShadowGit};
use bugloop_testkit::TestRepo;
use bugloop_tools::{Registry, ToolContext, Toolset, Workspace, typed};
use serde_json::{Value, json};

const OPEN_ID: &str = "off-by-one-1a2b3c";

/// A valid call of every tool, on the repository `repository()` builds.
fn valid_calls() -> BTreeMap<&'static str, Value> {
    BTreeMap::from([
        (
            "read_file",
            json!({"path": "src/lib.rs", "start_line": 1, "end_line": 2}),
        ),
        ("list_dir", json!({"path": "src"})),
        ("glob", json!({"pattern": "*.rs", "path": "src"})),
        (
            "grep",
            json!({"pattern": "fn", "path": "src", "glob": "*.rs", "case_insensitive": false}),
        ),
        ("git", json!({"command": "status", "args": []})),
        (
            "todo_write",
            json!({"items": [{"content": "read lib.rs", "status": "pending"}]}),
        ),
        ("todo_read", json!({})),
        (
            "write_file",
            json!({"path": "src/new.rs", "content": "pub fn new() {}\n"}),
        ),
        (
            "edit_file",
            json!({"path": "src/lib.rs", "old_text": "a + b", "new_text": "a.wrapping_add(b)"}),
        ),
        (
            "apply_patch",
            json!({"patch": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn add(a: i32, b: i32) -> i32 {\n-    a + b\n+    a.wrapping_add(b)\n }\n"}),
        ),
        (
            "run",
            json!({"program": "true", "args": [], "cwd": "src", "timeout_seconds": 10}),
        ),
        (
            "report_finding",
            json!({"id": "overflow", "file": "src/lib.rs", "line": 2, "end_line": 2,
                   "evidence": "a + b", "title": "Overflow", "description": "It wraps in release builds.",
                   "score": 6, "category": "logic", "suggestion": "Use `checked_add`."}),
        ),
        (
            "resolve_finding",
            json!({"id": OPEN_ID, "reason": "The new code checks the bound."}),
        ),
        (
            "submit_pass_results",
            json!({"pass_number": 1, "summary": "diff read", "has_blocking_issues": false}),
        ),
    ])
}

/// A repository with `src/lib.rs` committed, and the context a Build run gets on it.
fn repository() -> (TestRepo, ShadowGit, ToolContext) {
    let repo = TestRepo::with_files(&[(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )]);
    let root = repo.path();
    let shadow = ShadowGit::for_repository(root, &repo.head()).unwrap();
    let mut sandbox = SandboxSettings::new(root, Policy::ReadOnly);
    sandbox.timeout = std::time::Duration::from_secs(20);
    sandbox.git = Some(shadow.mount());
    let context = ToolContext::new(Workspace::new(root).unwrap(), sandbox);
    (repo, shadow, context)
}

/// Every tool a review or a Build run is given.
fn registry() -> Registry {
    let mut registry = Registry::new(Toolset::Build);
    let collected = Arc::new(Mutex::new(Collected::default()));
    registry.add(typed(ReportFinding {
        collected: collected.clone(),
        progress: Arc::new(Silent),
        batch: 0,
    }));
    registry.add(typed(ResolveFinding {
        collected: collected.clone(),
        open_ids: vec![OPEN_ID.to_owned()],
    }));
    registry.add(typed(SubmitPass {
        collected,
        progress: Arc::new(Silent),
        batch: 0,
        passes: 4,
    }));
    registry
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => resolve(
            root,
            root.pointer(reference.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("unresolved {reference}")),
        ),
        None => schema,
    }
}

/// The values at the edges of what `schema` describes.
fn edge_values(root: &Value, schema: &Value) -> Vec<Value> {
    let schema = resolve(root, schema);
    let mut values = Vec::new();
    for key in ["oneOf", "anyOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            values.extend(edge_values(root, branch));
        }
    }
    if let Some(constant) = schema.get("const") {
        values.push(constant.clone());
    }
    if let Some(variants) = schema.get("enum").and_then(Value::as_array) {
        values.extend(variants.iter().cloned());
        values.push(json!("not-one-of-them"));
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    for kind in types {
        match kind {
            "null" => values.push(Value::Null),
            "boolean" => values.extend([json!(true), json!(false)]),
            "integer" | "number" => {
                let mut numbers: Vec<f64> = vec![-1.0, 0.0, 1.0];
                for (bound, step) in [("minimum", -1.0), ("maximum", 1.0)] {
                    if let Some(edge) = schema.get(bound).and_then(Value::as_f64) {
                        numbers.extend([edge, edge + step]);
                    }
                }
                values.extend(numbers.into_iter().map(|n| {
                    if n.fract() == 0.0 && n >= 0.0 && n <= u64::MAX as f64 && n < 1.8e19 {
                        json!(n as u64)
                    } else if n.fract() == 0.0 && n.abs() < 9.0e18 {
                        json!(n as i64)
                    } else {
                        json!(n)
                    }
                }));
                // The largest bounds, exactly (an f64 cannot hold u64::MAX).
                if let Some(max) = schema.get("maximum").filter(|m| m.is_u64()) {
                    values.push(max.clone());
                }
            }
            "string" => {
                values.push(json!(""));
                if schema.get("pattern").is_some() {
                    values.push(json!(" "));
                }
                if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
                    let max = usize::try_from(max).unwrap();
                    values.extend([json!("x".repeat(max)), json!("x".repeat(max + 1))]);
                }
            }
            "array" => values.push(json!([])),
            _ => {}
        }
    }
    values
}

/// Every case of one tool: `(what was changed, arguments)`, each a variation of `valid`.
fn derive_cases(root: &Value, schema: &Value, valid: &Value, at: &str) -> Vec<(String, Value)> {
    let schema = resolve(root, schema);
    let mut cases = Vec::new();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return cases;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, property) in properties {
        let path = format!("{at}.{name}");
        if !required.contains(&name.as_str()) && valid.get(name).is_some() {
            let mut without = valid.clone();
            without.as_object_mut().unwrap().remove(name);
            cases.push((format!("{path} left out"), without));
        }
        for value in edge_values(root, property) {
            let mut changed = valid.clone();
            changed[name] = value.clone();
            cases.push((format!("{path} = {value}"), changed));
        }
        // Into objects and list items, on the valid call's own values.
        let property = resolve(root, property);
        match valid.get(name) {
            Some(object @ Value::Object(_)) => {
                for (what, inner) in derive_cases(root, property, object, &path) {
                    let mut changed = valid.clone();
                    changed[name] = inner;
                    cases.push((what, changed));
                }
            }
            Some(Value::Array(items)) if !items.is_empty() => {
                if let Some(item_schema) = property.get("items") {
                    for value in edge_values(root, item_schema) {
                        let mut changed = valid.clone();
                        changed[name][0] = value.clone();
                        cases.push((format!("{path}[0] = {value}"), changed));
                    }
                    for (what, inner) in
                        derive_cases(root, item_schema, &items[0], &format!("{path}[0]"))
                    {
                        let mut changed = valid.clone();
                        changed[name][0] = inner;
                        cases.push((what, changed));
                    }
                }
            }
            _ => {}
        }
    }
    cases
}

#[tokio::test]
async fn every_value_a_tool_schema_admits_is_accepted() {
    let calls = valid_calls();
    let definitions = registry().definitions();
    let names: Vec<&str> = definitions.iter().map(|(name, _, _)| *name).collect();
    assert_eq!(
        names,
        calls.keys().copied().collect::<Vec<_>>(),
        "every tool needs a valid call here"
    );
    let mut mismatches = Vec::new();
    let (mut admitted, mut refused) = (0, 0);
    for (name, _, schema) in &definitions {
        let validator = jsonschema::validator_for(schema).unwrap();
        let valid = &calls[name];
        assert!(validator.is_valid(valid), "{name}: the valid call {valid}");
        let mut cases = derive_cases(schema, schema, valid, name);
        cases.insert(0, ("the valid call".to_owned(), valid.clone()));
        for (what, arguments) in cases {
            if !validator.is_valid(&arguments) {
                refused += 1;
                continue;
            }
            admitted += 1;
            // A fresh repository and tool state for every call: the editing tools change both.
            let (_dir, _shadow, context) = repository();
            let result = registry()
                .call(&context, name, &arguments.to_string())
                .await;
            if let Err(error) = result {
                mismatches.push(format!("{what}: {arguments}\n    -> {error}"));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "admitted by the schema, refused by the tool:\n{}",
        mismatches.join("\n")
    );
    // The walk reached both sides of the schemas' edges.
    assert!(
        admitted > 100 && refused > 50,
        "{admitted} admitted, {refused} refused"
    );
}

/// What the model sees for the integers of a tool: the range its Rust type holds, not only a
/// `format` that validators ignore.
#[test]
fn integer_schemas_carry_their_range() {
    let schema = parameters_of("report_finding");
    assert_eq!(schema["properties"]["line"]["minimum"], 1);
    assert_eq!(schema["properties"]["line"]["maximum"], u32::MAX);
    assert_eq!(schema["properties"]["end_line"]["minimum"], 0);
    assert_eq!(schema["then"]["required"], json!(["file"]));
    let resolve = parameters_of("resolve_finding");
    assert_eq!(resolve["properties"]["id"]["enum"], json!([OPEN_ID]));
}

/// The parameters' schema of the review tool `tool`.
fn parameters_of(tool: &str) -> Value {
    registry()
        .definitions()
        .into_iter()
        .find(|(name, _, _)| *name == tool)
        .unwrap()
        .2
}
