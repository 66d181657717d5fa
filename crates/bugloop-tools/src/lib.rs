//! The tools bugloop's agents use. A Plan run gets only the read-only tools; a Build run also gets
//! the editing tools and `run`. Every path goes through [`Workspace::resolve`]; every process goes
//! through the sandbox.
//!
//! A tool's parameters are a Rust type whose JSON Schema is derived with `schemars`. A tool error
//! is either told to the model ([`ToolError::Model`], it can try again) or ends the task
//! ([`ToolError::Abort`]); tools never panic.
//!
//! **Invariants:** a value a tool's schema admits is accepted by the tool; `Workspace::resolve` is
//! the only way from a model's path to a file and nothing outside the workspace, in `.git` or not a
//! regular file is read; `git` and `run` start processes only through `bugloop-sandbox`;
//! `ToolError::Model` goes back to the model, `ToolError::Abort` ends the task; no tool panics.

mod edit;
mod git;
mod read;
mod run;
mod todo;
mod workspace;

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use bugloop_domain::paths::IgnoreMatcher;
use bugloop_sandbox::SandboxSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

pub use read::{GrepMatch, grep};
pub use todo::{Todo, TodoStatus};
pub use workspace::Workspace;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// Told to the model as the tool's result; the task goes on.
    #[error("{0}")]
    Model(String),
    /// Ends the task.
    #[error("{0}")]
    Abort(String),
}

/// Caps that keep tool results small enough for a model's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_read_lines: usize,
    pub max_read_bytes: usize,
    /// The most of one file `read_file` loads (a sparse file could be any size).
    pub max_file_bytes: usize,
    pub max_list_entries: usize,
    pub max_glob_results: usize,
    pub max_grep_matches: usize,
    pub max_line_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_read_lines: 2_000,
            max_read_bytes: 256 * 1024,
            max_file_bytes: 64 * 1024 * 1024,
            max_list_entries: 1_000,
            max_glob_results: 500,
            max_grep_matches: 200,
            max_line_chars: 400,
        }
    }
}

/// What every tool call can see.
#[derive(Debug)]
pub struct ToolContext {
    pub workspace: Workspace,
    pub limits: Limits,
    /// Paths the editing tools refuse (configuration's `protected_paths`).
    pub protected: IgnoreMatcher,
    /// Settings for processes (`run`, read-only git); the workspace in them is this workspace.
    pub sandbox: SandboxSettings,
    pub todos: Mutex<Vec<Todo>>,
}

impl ToolContext {
    pub fn new(workspace: Workspace, sandbox: SandboxSettings) -> Self {
        ToolContext {
            workspace,
            limits: Limits::default(),
            protected: IgnoreMatcher::empty(),
            sandbox,
            todos: Mutex::new(Vec::new()),
        }
    }
}

/// A tool as the registry holds it.
#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> serde_json::Value;
    async fn call(
        &self,
        context: &ToolContext,
        arguments: serde_json::Value,
    ) -> Result<String, ToolError>;
}

/// A tool's name, and what the model is told of it: `prompts/tools/<name>.md` of the crate that
/// defines the tool (the text is a prompt, kept with the prompts), read at compile time. Said
/// once, so the name and the file cannot drift apart.
#[macro_export]
macro_rules! tool_named {
    ($name:literal) => {
        const NAME: &'static str = $name;
        const DESCRIPTION: &'static str = include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/prompts/tools/",
            $name,
            ".md"
        ))
        .trim_ascii_end();
    };
}

/// A tool with typed parameters; implement this and register it with [`typed`].
#[async_trait]
pub trait TypedTool: Send + Sync {
    type Params: JsonSchema + DeserializeOwned + Send;
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    async fn run(&self, context: &ToolContext, params: Self::Params) -> Result<String, ToolError>;

    /// The parameters' schema as this instance offers it. A tool whose valid values depend on the
    /// run (the open findings a resolve may name) narrows the derived schema here, so the model is
    /// shown exactly what the tool's own check accepts.
    fn narrow_schema(&self, schema: serde_json::Value) -> serde_json::Value {
        schema
    }
}

struct Typed<T>(T);

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }

    fn description(&self) -> &'static str {
        T::DESCRIPTION
    }

    fn parameters(&self) -> serde_json::Value {
        let mut schema = schemars::schema_for!(T::Params).to_value();
        bound_integer_formats(&mut schema);
        for_the_model(&mut schema);
        self.0.narrow_schema(schema)
    }

    async fn call(
        &self,
        context: &ToolContext,
        arguments: serde_json::Value,
    ) -> Result<String, ToolError> {
        // What the schema shown to the model says (an empty program, a path of no characters)
        // is held here too, not only where serde would notice.
        let schema = self.parameters();
        if let Ok(validator) = jsonschema::validator_for(&schema) {
            let said: Vec<String> = validator
                .iter_errors(&arguments)
                .take(3)
                .map(|e| match e.instance_path().to_string() {
                    at if at.is_empty() => e.to_string(),
                    at => format!("{at}: {e}"),
                })
                .collect();
            if !said.is_empty() {
                return Err(ToolError::Model(format!(
                    "invalid arguments for {}: {}",
                    T::NAME,
                    said.join("; ")
                )));
            }
        }
        let params: T::Params = serde_json::from_value(arguments)
            .map_err(|e| ToolError::Model(format!("invalid arguments for {}: {e}", T::NAME)))?;
        self.0.run(context, params).await
    }
}

pub fn typed<T: TypedTool + 'static>(tool: T) -> Box<dyn Tool> {
    Box::new(Typed(tool))
}

/// Which tools a run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toolset {
    /// Read-only code tools: read, list, glob, grep, git (read-only). A review's passes give its
    /// work a structure, so it has no todo list to pay for in every request.
    Read,
    /// Read's tools and the todo list.
    Plan,
    /// Plan's tools plus write, edit, apply_patch and run.
    Build,
}

/// The tools of one run, by name.
pub struct Registry {
    tools: BTreeMap<&'static str, Box<dyn Tool>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl Registry {
    pub fn empty() -> Self {
        Registry {
            tools: BTreeMap::new(),
        }
    }

    pub fn new(toolset: Toolset) -> Self {
        let mut registry = Registry::empty();
        registry.add(typed(read::ReadFile));
        registry.add(typed(read::ListDir));
        registry.add(typed(read::GlobFiles));
        registry.add(typed(read::Grep));
        registry.add(typed(git::Git));
        if toolset == Toolset::Read {
            return registry;
        }
        registry.add(typed(todo::TodoWrite));
        registry.add(typed(todo::TodoRead));
        if toolset == Toolset::Build {
            registry.add(typed(edit::WriteFile));
            registry.add(typed(edit::EditFile));
            registry.add(typed(edit::ApplyPatch));
            registry.add(typed(run::Run));
        }
        registry
    }

    /// Adds (or replaces) a tool, e.g. a task's own submit tool.
    pub fn add(&mut self, tool: Box<dyn Tool>) {
        self.tools.insert(tool.name(), tool);
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.tools.keys().copied().collect()
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.get(name).map(AsRef::as_ref)
    }

    /// `(name, description, parameters schema)` of every tool, for the model.
    pub fn definitions(&self) -> Vec<(&'static str, &'static str, serde_json::Value)> {
        self.tools
            .values()
            .map(|t| (t.name(), t.description(), t.parameters()))
            .collect()
    }

    /// Calls a tool with the JSON text the model wrote.
    pub async fn call(
        &self,
        context: &ToolContext,
        name: &str,
        arguments: &str,
    ) -> Result<String, ToolError> {
        let Some(tool) = self.get(name) else {
            return Err(ToolError::Model(format!(
                "there is no tool named {name:?}; available: {}",
                self.names().join(", ")
            )));
        };
        let arguments: serde_json::Value = if arguments.trim().is_empty() {
            serde_json::Value::Object(Default::default())
        } else {
            serde_json::from_str(arguments).map_err(|e| {
                ToolError::Model(format!("arguments for {name} are not valid JSON: {e}"))
            })?
        };
        tool.call(context, arguments).await
    }
}

/// Makes the range an integer `format` implies explicit. `schemars` writes `"format": "uint32"`
/// for a `u32`, but a format is only an annotation to validators and models: without `maximum`,
/// the schema admits 2^32, which the argument check then refuses.
fn bound_integer_formats(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(object) => {
            let range = match object.get("format").and_then(serde_json::Value::as_str) {
                Some("uint8") => Some((0, u64::from(u8::MAX))),
                Some("uint16") => Some((0, u64::from(u16::MAX))),
                Some("uint32") => Some((0, u64::from(u32::MAX))),
                Some("uint64") => Some((0, u64::MAX)),
                Some("uint") => Some((0, u64::try_from(usize::MAX).unwrap_or(u64::MAX))),
                _ => None,
            };
            if let Some((min, max)) = range {
                object.entry("minimum").or_insert(min.into());
                object.entry("maximum").or_insert(max.into());
            }
            object.values_mut().for_each(bound_integer_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(bound_integer_formats),
        _ => {}
    }
}

/// Leaves out of a derived schema what the model does not need and every request would pay
/// for: the type-level doc comments (written for bugloop's developers; the tool's description
/// says what the model needs), `format` annotations (their range is explicit), `"default": null`
/// and the schema's own metadata. Field descriptions stay.
fn for_the_model(schema: &mut serde_json::Value) {
    /// `value` is a schema (or a list of them); maps of named schemas (`properties`, `$defs`)
    /// are walked by name, so a property called `format` or `default` is kept.
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(object) => {
                object.remove("format");
                if object.get("default") == Some(&serde_json::Value::Null) {
                    object.remove("default");
                }
                for (key, child) in object.iter_mut() {
                    match (key.as_str(), child) {
                        ("properties" | "$defs", serde_json::Value::Object(named)) => {
                            named.values_mut().for_each(strip);
                        }
                        (_, child) => strip(child),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(object) = schema.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            object.remove(key);
        }
        if let Some(definitions) = object
            .get_mut("$defs")
            .and_then(serde_json::Value::as_object_mut)
        {
            for definition in definitions.values_mut() {
                if let Some(definition) = definition.as_object_mut() {
                    definition.remove("description");
                }
            }
        }
    }
    strip(schema);
}

/// Cuts a line to `max` characters, marking the cut.
pub(crate) fn clip(line: &str, max: usize) -> String {
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let kept: String = line.chars().take(max).collect();
        format!("{kept} [... line cut ...]")
    }
}
