//! Read-only git: diff, show, log, blame, ls-files, ls-tree, rev-parse and status, run in the
//! sandbox with the read-only policy.
//!
//! Options are allowed by name, per subcommand, spelled in full: git accepts unambiguous
//! abbreviations (`--out` for `--output`), so a deny-list can never be complete, and an exact
//! name on the list is a real option of that subcommand, never an abbreviation of a dangerous one.
//! Positional arguments (revisions or paths) go through the workspace's path rules, because git
//! reads a path outside the repository if given one (`git diff a b` turns into `--no-index`).

use async_trait::async_trait;
use bugloop_sandbox::{CommandSpec, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::{ToolContext, ToolError, TypedTool, Workspace};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GitCommand {
    Diff,
    Show,
    Log,
    Blame,
    LsFiles,
    LsTree,
    RevParse,
    Status,
}

/// `blame` needs a file and `ls-tree` a tree, so the schema asks for an argument there.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(extend(
    "if" = {"required": ["command"], "properties": {"command": {"enum": ["blame", "ls-tree"]}}},
    "then" = {"required": ["args"], "properties": {"args": {"minItems": 1}}}
))]
pub struct GitParams {
    pub command: GitCommand,
    /// Arguments, e.g. `["HEAD~1", "--", "src/lib.rs"]` or `["--oneline", "-n", "20"]`; a
    /// refused option's error lists the allowed ones.
    #[serde(default)]
    pub args: Vec<String>,
}

pub struct Git;

/// How an allowed option takes a value, as git parses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    /// Attached (`--author=x`, `-n5`) or as the next argument (`--author x`, `-n 5`).
    Value,
    /// Attached only (`--format=%s`): git does not take it from the next argument.
    Attached,
    /// Optionally, attached only (`--stat`, `--stat=100`, `-U`, `-U5`).
    Optional,
}

use Takes::{Attached, Nothing, Optional, Value};

type Options = &'static [(&'static str, Takes)];

/// How a diff is shown (diff, show, log).
const DIFF_OUTPUT: Options = &[
    ("-p", Nothing),
    ("--patch", Nothing),
    ("-s", Nothing),
    ("--no-patch", Nothing),
    ("--raw", Nothing),
    ("--stat", Optional),
    ("--numstat", Nothing),
    ("--shortstat", Nothing),
    ("--summary", Nothing),
    ("--name-only", Nothing),
    ("--name-status", Nothing),
    ("--patch-with-stat", Nothing),
    ("-U", Optional),
    ("--unified", Optional),
    ("-W", Nothing),
    ("--function-context", Nothing),
    ("-w", Nothing),
    ("--ignore-all-space", Nothing),
    ("-b", Nothing),
    ("--ignore-space-change", Nothing),
    ("--ignore-blank-lines", Nothing),
    ("-M", Optional),
    ("--find-renames", Optional),
    ("--no-renames", Nothing),
    ("-R", Nothing),
    ("--diff-filter", Value),
    ("--word-diff", Optional),
    ("--minimal", Nothing),
    ("--patience", Nothing),
    ("--histogram", Nothing),
    ("--diff-algorithm", Value),
    ("--full-index", Nothing),
    ("--abbrev", Optional),
];

const DIFF: Options = &[
    ("--cached", Nothing),
    ("--staged", Nothing),
    ("--merge-base", Nothing),
];

/// How a commit is shown (show, log).
const COMMIT_FORMAT: Options = &[
    ("--oneline", Nothing),
    ("--format", Attached),
    ("--pretty", Optional),
    ("--abbrev-commit", Nothing),
    ("--date", Value),
    ("--first-parent", Nothing),
];

/// Which commits (log).
const LOG: Options = &[
    ("-n", Value),
    ("--max-count", Value),
    ("--skip", Value),
    ("--since", Value),
    ("--after", Value),
    ("--until", Value),
    ("--before", Value),
    ("--author", Value),
    ("--committer", Value),
    ("--grep", Value),
    ("-i", Nothing),
    ("--regexp-ignore-case", Nothing),
    ("-S", Value),
    ("-G", Value),
    ("-L", Value),
    ("--follow", Nothing),
    ("--no-merges", Nothing),
    ("--merges", Nothing),
    ("--reverse", Nothing),
    ("--graph", Nothing),
    ("--all", Nothing),
    ("--topo-order", Nothing),
    ("--date-order", Nothing),
];

const BLAME: Options = &[
    ("-L", Value),
    ("-w", Nothing),
    ("-s", Nothing),
    ("-e", Nothing),
    ("--show-email", Nothing),
    ("-l", Nothing),
    ("-t", Nothing),
    ("-n", Nothing),
    ("--show-number", Nothing),
    ("-f", Nothing),
    ("--show-name", Nothing),
    ("-M", Optional),
    ("-C", Optional),
    ("--porcelain", Nothing),
    ("--line-porcelain", Nothing),
    ("--root", Nothing),
    ("-b", Nothing),
    ("--date", Value),
    ("--abbrev", Optional),
    ("--ignore-rev", Value),
];

const LS_FILES: Options = &[
    ("-c", Nothing),
    ("--cached", Nothing),
    ("-d", Nothing),
    ("--deleted", Nothing),
    ("-m", Nothing),
    ("--modified", Nothing),
    ("-o", Nothing),
    ("--others", Nothing),
    ("--exclude-standard", Nothing),
    ("-s", Nothing),
    ("--stage", Nothing),
    ("--full-name", Nothing),
];

const LS_TREE: Options = &[
    ("-r", Nothing),
    ("-t", Nothing),
    ("-d", Nothing),
    ("-l", Nothing),
    ("--long", Nothing),
    ("--name-only", Nothing),
    ("--name-status", Nothing),
    ("--object-only", Nothing),
    ("--full-name", Nothing),
    ("--full-tree", Nothing),
    ("--abbrev", Optional),
];

const REV_PARSE: Options = &[
    ("--verify", Nothing),
    ("-q", Nothing),
    ("--quiet", Nothing),
    ("--short", Optional),
    ("--abbrev-ref", Optional),
    ("--symbolic-full-name", Nothing),
];

const STATUS: Options = &[
    ("-s", Nothing),
    ("--short", Nothing),
    ("-b", Nothing),
    ("--branch", Nothing),
    ("--long", Nothing),
    ("--porcelain", Optional),
    ("-u", Optional),
    ("--untracked-files", Optional),
];

/// Options whose value must be a number.
const NUMERIC: &[&str] = &[
    "-n",
    "--max-count",
    "--skip",
    "-U",
    "--unified",
    "--abbrev",
    "--short",
];

/// Settings that keep git from running programs or pagers, whatever the repository's config says.
const CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "color.ui=never",
    "diff.external=",
    "log.showSignature=false",
];

const ENVIRONMENT: &[(&str, &str)] = &[
    // Only the repository's own config: no system or user settings (helpers, pagers, aliases).
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ("GIT_TERMINAL_PROMPT", "0"),
    // No index refresh written behind a read.
    ("GIT_OPTIONAL_LOCKS", "0"),
    // A partial clone must not fetch missing objects.
    ("GIT_NO_LAZY_FETCH", "1"),
    // A second line behind the full-spelling rule: git itself refuses abbreviated options.
    ("GIT_TEST_DISALLOW_ABBREVIATED_OPTIONS", "1"),
];

impl GitCommand {
    fn name(self) -> &'static str {
        match self {
            GitCommand::Diff => "diff",
            GitCommand::Show => "show",
            GitCommand::Log => "log",
            GitCommand::Blame => "blame",
            GitCommand::LsFiles => "ls-files",
            GitCommand::LsTree => "ls-tree",
            GitCommand::RevParse => "rev-parse",
            GitCommand::Status => "status",
        }
    }

    fn options(self) -> &'static [Options] {
        match self {
            GitCommand::Diff => &[DIFF_OUTPUT, DIFF],
            GitCommand::Show => &[DIFF_OUTPUT, COMMIT_FORMAT],
            GitCommand::Log => &[DIFF_OUTPUT, COMMIT_FORMAT, LOG],
            GitCommand::Blame => &[BLAME],
            GitCommand::LsFiles => &[LS_FILES],
            GitCommand::LsTree => &[LS_TREE],
            GitCommand::RevParse => &[REV_PARSE],
            GitCommand::Status => &[STATUS],
        }
    }

    /// Whether the subcommand takes `--no-ext-diff --no-textconv` (it may run diff programs).
    fn diffs(self) -> bool {
        matches!(
            self,
            GitCommand::Diff | GitCommand::Show | GitCommand::Log | GitCommand::Blame
        )
    }

    fn takes(self, name: &str) -> Option<Takes> {
        self.options()
            .iter()
            .flat_map(|options| options.iter())
            .find(|(allowed, _)| *allowed == name)
            .map(|(_, takes)| *takes)
    }

    fn allowed_list(self) -> String {
        let mut shown: Vec<String> = self
            .options()
            .iter()
            .flat_map(|options| options.iter())
            .map(|(name, takes)| {
                let long = name.starts_with("--");
                match (takes, long) {
                    (Nothing, _) => (*name).to_owned(),
                    (Value, true) | (Attached, _) => format!("{name}=<value>"),
                    (Value, false) => format!("{name} <value>"),
                    (Optional, true) => format!("{name}[=<value>]"),
                    (Optional, false) => format!("{name}[<value>]"),
                }
            })
            .collect();
        if self == GitCommand::Log {
            shown.push("-<number>".into());
        }
        shown.join(", ")
    }
}

/// Checks the model's arguments for `git <command>`: every option on the subcommand's list and
/// spelled in full, values checked, every revision or path inside the workspace.
fn check_args(
    command: GitCommand,
    args: &[String],
    workspace: &Workspace,
) -> Result<(), ToolError> {
    let sub = command.name();
    if args.iter().any(|arg| arg.contains('\0')) {
        return Err(ToolError::Model(
            "git arguments may not contain NUL bytes".into(),
        ));
    }
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            for path in args.by_ref() {
                if path.starts_with(':') {
                    return Err(ToolError::Model(format!(
                        "git {sub}: path {path:?} uses pathspec magic (a leading `:`), which is not allowed; give plain paths after `--`"
                    )));
                }
                workspace.resolve(path)?;
            }
            break;
        }
        if !arg.starts_with('-') {
            // A revision or a path: as a path it must stay inside the workspace.
            workspace.resolve(arg)?;
            continue;
        }
        // `git log -5`
        if command == GitCommand::Log
            && arg.len() > 1
            && arg[1..].bytes().all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if let Some(name) = option(command, arg)? {
            let Some(value) = args.next() else {
                return Err(ToolError::Model(format!("git {sub}: {name} needs a value")));
            };
            if value.starts_with('-') {
                return Err(ToolError::Model(format!(
                    "git {sub}: the value of {name} may not begin with `-` ({value:?}); attach it instead: {}",
                    attached(name, value)
                )));
            }
            check_value(sub, name, value)?;
        }
    }
    Ok(())
}

/// Checks one option; `Some(name)` when its value is the next argument.
fn option(command: GitCommand, arg: &str) -> Result<Option<&str>, ToolError> {
    let sub = command.name();
    let (name, value) = if arg.starts_with("--") {
        match arg.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (arg, None),
        }
    } else {
        // A short option is one letter; what follows it is its value.
        let end = 1 + arg[1..].chars().next().map_or(0, char::len_utf8);
        let (name, rest) = arg.split_at(end);
        (name, Some(rest).filter(|rest| !rest.is_empty()))
    };
    let Some(takes) = command.takes(name) else {
        return Err(refusal(command, arg, name));
    };
    match (takes, value) {
        (Nothing, Some(_)) if name.starts_with("--") => Err(ToolError::Model(format!(
            "git {sub}: option {name} takes no value ({arg:?})"
        ))),
        (Nothing, Some(_)) => Err(ToolError::Model(format!(
            "git {sub}: option {arg:?} is not allowed; give short options one per argument ({name} takes no value)"
        ))),
        (Nothing | Optional, None) => Ok(None),
        (Value, None) => Ok(Some(name)),
        (Attached, None) => Err(ToolError::Model(format!(
            "git {sub}: {name} needs its value attached: {name}=<value>"
        ))),
        (_, Some(value)) => check_value(sub, name, value).map(|()| None),
    }
}

fn refusal(command: GitCommand, arg: &str, name: &str) -> ToolError {
    let sub = command.name();
    let completions: Vec<&str> = command
        .options()
        .iter()
        .flat_map(|options| options.iter())
        .map(|(allowed, _)| *allowed)
        .filter(|allowed| name.len() > 2 && allowed.starts_with(name))
        .collect();
    if completions.is_empty() {
        ToolError::Model(format!(
            "git {sub}: option {arg:?} is not allowed (only options that read are, spelled in full); allowed: {}",
            command.allowed_list()
        ))
    } else {
        ToolError::Model(format!(
            "git {sub}: option {arg:?} is not allowed: abbreviations are refused; write it in full: {}",
            completions.join(", ")
        ))
    }
}

fn attached(name: &str, value: &str) -> String {
    if name.starts_with("--") {
        format!("{name}={value}")
    } else {
        format!("{name}{value}")
    }
}

fn check_value(sub: &str, name: &str, value: &str) -> Result<(), ToolError> {
    if NUMERIC.contains(&name) && !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::Model(format!(
            "git {sub}: {name} takes a number, not {value:?}"
        )));
    }
    // Signature placeholders make git run gpg on the (attacker's) signature.
    if matches!(name, "--format" | "--pretty") && value.contains("%G") {
        return Err(ToolError::Model(format!(
            "git {sub}: signature placeholders (%G...) are not allowed in {name}"
        )));
    }
    Ok(())
}

#[async_trait]
impl TypedTool for Git {
    type Params = GitParams;
    crate::tool_named!("git");

    async fn run(&self, context: &ToolContext, params: GitParams) -> Result<String, ToolError> {
        check_args(params.command, &params.args, &context.workspace)?;
        let sub = params.command.name();
        let mut args: Vec<String> = vec!["--no-pager".into()];
        for setting in CONFIG {
            args.extend(["-c".to_owned(), (*setting).to_owned()]);
        }
        args.push(sub.into());
        if params.command.diffs() {
            args.extend(["--no-ext-diff".to_owned(), "--no-textconv".to_owned()]);
        }
        args.extend(params.args);
        let mut spec = CommandSpec::new("git", args);
        spec.env = ENVIRONMENT
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let mut settings = context.sandbox.clone();
        settings.policy = Policy::ReadOnly;
        let output = bugloop_sandbox::run(&settings, &spec)
            .await
            .map_err(|e| ToolError::Abort(format!("cannot run git: {e}")))?;
        if !output.success() {
            return Err(ToolError::Model(format!(
                "git {sub} failed: {}",
                output.stderr_text().trim()
            )));
        }
        let mut text = output.stdout_text();
        if text.len() > context.limits.max_read_bytes {
            let mut cut = context.limits.max_read_bytes;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[... output cut; narrow the command ...]");
        }
        if text.trim().is_empty() {
            text = format!("(git {sub} printed nothing)");
        }
        Ok(text)
    }
}
