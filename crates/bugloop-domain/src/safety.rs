//! Helpers that keep untrusted text in its place (bugbot technical reference, section 6):
//! user comments embedded in prompts, finding bodies cut to size, and verify commands that can
//! never become a shell.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Longest user comment embedded in a prompt, in characters.
pub const MAX_USER_COMMENT_CHARS: usize = 4000;
/// Longest finding body embedded in a prompt, in characters.
pub const MAX_FINDING_BODY_CHARS: usize = 12_000;
/// The suffix a truncated finding body ends with.
pub const TRUNCATION_SUFFIX: &str = "[... truncated for length ...]";
/// At most this many verify commands.
pub const MAX_VERIFY_COMMANDS: usize = 20;

/// Makes a user's comment safe to embed in a prompt between triple quotes: trimmed, backslashes
/// escaped, `"""` neutralized, cut at 4000 characters without leaving a lone trailing backslash.
pub fn sanitize_user_comment(raw: &str) -> String {
    let escaped = raw
        .trim()
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"");
    let mut cut: String = escaped.chars().take(MAX_USER_COMMENT_CHARS).collect();
    // An odd run of trailing backslashes would escape whatever the prompt puts next.
    let trailing = cut.chars().rev().take_while(|c| *c == '\\').count();
    if trailing % 2 == 1 {
        cut.pop();
    }
    cut
}

/// Cuts a finding body to `max` characters, ending it with [`TRUNCATION_SUFFIX`].
pub fn truncate_finding_body(body: &str, max: usize) -> String {
    if body.chars().count() <= max {
        return body.to_owned();
    }
    let kept: String = body.chars().take(max).collect();
    format!("{}\n\n{TRUNCATION_SUFFIX}", kept.trim_end())
}

/// A configured command (verify, gate, test): a program with arguments, split like a POSIX shell
/// would split them and run without one, or, written `{shell: "..."}`, a script that runs as
/// `sh -c <script>` on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum CommandEntry {
    /// `cargo test --workspace`: no shell operators, no shell scripts.
    Plain(String),
    /// `{shell: "make lint && make test"}`: runs as `sh -c <script>` in the sandbox.
    Shell {
        /// The script given to `sh -c`.
        shell: String,
    },
}

impl CommandEntry {
    /// An explicit shell script (`{shell: script}`).
    pub fn shell(script: impl Into<String>) -> Self {
        CommandEntry::Shell {
            shell: script.into(),
        }
    }
}

impl fmt::Display for CommandEntry {
    /// As it runs: the command itself, or `sh -c '<script>'`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandEntry::Plain(command) => f.write_str(command),
            CommandEntry::Shell { shell } => write!(f, "sh -c {}", shell_words::quote(shell)),
        }
    }
}

impl From<String> for CommandEntry {
    fn from(command: String) -> Self {
        CommandEntry::Plain(command)
    }
}

impl From<&str> for CommandEntry {
    fn from(command: &str) -> Self {
        CommandEntry::Plain(command.to_owned())
    }
}

impl<'de> Deserialize<'de> for CommandEntry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CommandEntryVisitor)
    }
}

struct CommandEntryVisitor;

impl<'de> serde::de::Visitor<'de> for CommandEntryVisitor {
    type Value = CommandEntry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a command (a string) or `{shell: \"script\"}`")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<CommandEntry, E> {
        Ok(CommandEntry::Plain(value.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<CommandEntry, E> {
        Ok(CommandEntry::Plain(value))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CommandEntry, A::Error> {
        let mut script: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "shell" {
                return Err(serde::de::Error::unknown_field(&key, &["shell"]));
            }
            if script.is_some() {
                return Err(serde::de::Error::duplicate_field("shell"));
            }
            script = Some(map.next_value()?);
        }
        script
            .map(CommandEntry::shell)
            .ok_or_else(|| serde::de::Error::missing_field("shell"))
    }
}

/// The configured commands of one key (`fix.verify_commands`, `gate.commands`,
/// `solve.test_commands`), in order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct CommandList(pub Vec<CommandEntry>);

impl std::ops::Deref for CommandList {
    type Target = [CommandEntry];

    fn deref(&self) -> &[CommandEntry] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a CommandList {
    type Item = &'a CommandEntry;
    type IntoIter = std::slice::Iter<'a, CommandEntry>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T: Into<CommandEntry>> FromIterator<T> for CommandList {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        CommandList(iter.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<CommandEntry>> From<Vec<T>> for CommandList {
    fn from(entries: Vec<T>) -> Self {
        entries.into_iter().collect()
    }
}

/// Anything [`parse_verify_commands`] takes: a command string, or a [`CommandEntry`].
pub trait ConfiguredCommand {
    /// The text, and whether it is an explicit shell script (`{shell: ...}`).
    fn command_text(&self) -> (&str, bool);
}

impl ConfiguredCommand for str {
    fn command_text(&self) -> (&str, bool) {
        (self, false)
    }
}

impl ConfiguredCommand for String {
    fn command_text(&self) -> (&str, bool) {
        (self, false)
    }
}

impl ConfiguredCommand for CommandEntry {
    fn command_text(&self) -> (&str, bool) {
        match self {
            CommandEntry::Plain(command) => (command, false),
            CommandEntry::Shell { shell } => (shell, true),
        }
    }
}

impl<T: ConfiguredCommand + ?Sized> ConfiguredCommand for &T {
    fn command_text(&self) -> (&str, bool) {
        (**self).command_text()
    }
}

/// A verify command split into a program and its arguments; run without a shell (an explicit
/// shell script is `sh -c <script>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyCommand {
    /// The command as configured; a shell script as it runs, `sh -c '<script>'`.
    pub raw: String,
    pub program: String,
    pub args: Vec<String>,
    /// Configured as `{shell: ...}`.
    pub shell: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyCommandError {
    #[error(
        "verify command {index} ({command:?}) uses the shell operator `{operator}`: commands run without a shell, so split it into separate commands"
    )]
    ShellOperator {
        index: usize,
        command: String,
        operator: String,
    },
    #[error(
        "verify command {index} ({command:?}) runs a shell script with {shell}: commands run without a shell unless configured as `{{shell: \"...\"}}`"
    )]
    ShellScript {
        index: usize,
        command: String,
        /// The shell program, as named in the command.
        shell: String,
        /// The script when the command is `<shell> -c <script>` and nothing else.
        script: Option<String>,
    },
    #[error("verify command {index} ({command:?}) cannot be split: {message}")]
    Unparsable {
        index: usize,
        command: String,
        message: String,
    },
    #[error("verify command {index} is empty")]
    Empty { index: usize },
    #[error("{count} verify commands configured; at most {MAX_VERIFY_COMMANDS} are allowed")]
    TooMany { count: usize },
}

impl VerifyCommandError {
    /// The 1-based number of the command at fault (none for too many commands).
    pub fn index(&self) -> Option<usize> {
        match self {
            VerifyCommandError::ShellOperator { index, .. }
            | VerifyCommandError::ShellScript { index, .. }
            | VerifyCommandError::Unparsable { index, .. }
            | VerifyCommandError::Empty { index } => Some(*index),
            VerifyCommandError::TooMany { .. } => None,
        }
    }

    /// What is wrong with the command and how to write it, without its number (for messages
    /// that name it by position already, like `fix.verify_commands[1]`).
    pub fn reason(&self) -> String {
        let as_shell = |script: &str| {
            format!(
                "{{shell: {}}}",
                serde_json::to_string(script).unwrap_or_default()
            )
        };
        match self {
            VerifyCommandError::ShellOperator {
                command, operator, ..
            } => format!(
                "`{command}` uses the shell operator `{operator}`: commands run without a shell; \
                 split it into separate commands, or write `{}` to run it with sh -c on purpose",
                as_shell(command)
            ),
            VerifyCommandError::ShellScript {
                command,
                shell,
                script,
                ..
            } => format!(
                "`{command}` runs a shell script ({shell}): commands run without a shell unless \
                 marked; write `{}` to run it with sh -c on purpose, or call the program directly",
                script
                    .as_deref()
                    .map_or_else(|| "{shell: \"...\"}".to_owned(), as_shell)
            ),
            VerifyCommandError::Unparsable {
                command, message, ..
            } => format!("`{command}` cannot be split: {message}"),
            VerifyCommandError::Empty { .. } => "the command is empty".to_owned(),
            VerifyCommandError::TooMany { count } => {
                format!("{count} commands configured; at most {MAX_VERIFY_COMMANDS} are allowed")
            }
        }
    }
}

/// Splits each configured command as a POSIX shell would (quotes and escapes), refusing shell
/// operators (`;` `|` `&` `>` `<`, backticks, `$(`, `${`), shell scripts (`sh -c ...`,
/// `bash script.sh`, also behind `env`, `timeout`, `xargs` and the like) and more than 20
/// commands. A `{shell: script}` entry is `sh -c <script>`. Errors name the command (1-based).
pub fn parse_verify_commands<S: ConfiguredCommand>(
    commands: &[S],
) -> Result<Vec<VerifyCommand>, VerifyCommandError> {
    if commands.len() > MAX_VERIFY_COMMANDS {
        return Err(VerifyCommandError::TooMany {
            count: commands.len(),
        });
    }
    commands
        .iter()
        .enumerate()
        .map(|(i, command)| {
            let (text, shell) = command.command_text();
            if shell {
                parse_shell_script(i + 1, text)
            } else {
                parse_verify_command(i + 1, text)
            }
        })
        .collect()
}

/// Splits a comma-separated list (the Action input form) into commands, then parses them. Commas
/// inside quotes do not split.
pub fn parse_verify_command_list(list: &str) -> Result<Vec<VerifyCommand>, VerifyCommandError> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in list.chars() {
        if escaped {
            current.push(ch);
            escaped = false;
            continue;
        }
        match (ch, quote) {
            ('\\', q) if q != Some('\'') => {
                escaped = true;
                current.push(ch);
            }
            ('\'' | '"', None) => {
                quote = Some(ch);
                current.push(ch);
            }
            (c, Some(q)) if c == q => {
                quote = None;
                current.push(ch);
            }
            (',', None) => parts.push(std::mem::take(&mut current)),
            _ => current.push(ch),
        }
    }
    parts.push(current);
    let parts: Vec<String> = parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    parse_verify_commands(&parts)
}

fn parse_verify_command(index: usize, raw: &str) -> Result<VerifyCommand, VerifyCommandError> {
    if raw.trim().is_empty() {
        return Err(VerifyCommandError::Empty { index });
    }
    if let Some(operator) = find_shell_operator(raw) {
        return Err(VerifyCommandError::ShellOperator {
            index,
            command: raw.to_owned(),
            operator,
        });
    }
    let words = shell_words::split(raw).map_err(|error| VerifyCommandError::Unparsable {
        index,
        command: raw.to_owned(),
        message: error.to_string(),
    })?;
    if let Some(shell) = runs_shell_script(&words) {
        let script = match words.as_slice() {
            [_, flag, script] if flag == "-c" => Some(script.clone()),
            _ => None,
        };
        return Err(VerifyCommandError::ShellScript {
            index,
            command: raw.to_owned(),
            shell,
            script,
        });
    }
    let mut words = words.into_iter();
    let program = words.next().ok_or(VerifyCommandError::Empty { index })?;
    Ok(VerifyCommand {
        raw: raw.to_owned(),
        program,
        args: words.collect(),
        shell: false,
    })
}

fn parse_shell_script(index: usize, script: &str) -> Result<VerifyCommand, VerifyCommandError> {
    if script.trim().is_empty() {
        return Err(VerifyCommandError::Empty { index });
    }
    Ok(VerifyCommand {
        raw: CommandEntry::shell(script).to_string(),
        program: "sh".to_owned(),
        args: vec!["-c".to_owned(), script.to_owned()],
        shell: true,
    })
}

/// Programs that run shell scripts.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "rbash",
    "pdksh", "oksh", "loksh", "posh",
];

/// Programs that run another program given in their arguments, with their options that take a
/// value (short letters, long names) and how many plain arguments come before the program.
const WRAPPERS: &[(&str, &str, &[&str], usize)] = &[
    ("env", "uC", &["unset", "chdir"], 0),
    ("nice", "n", &["adjustment"], 0),
    ("nohup", "", &[], 0),
    ("timeout", "sk", &["signal", "kill-after"], 1),
    (
        "xargs",
        "adEILnPs",
        &[
            "arg-file",
            "delimiter",
            "max-lines",
            "max-args",
            "max-procs",
            "max-chars",
            "process-slot-var",
        ],
        0,
    ),
    ("setsid", "", &[], 0),
    ("stdbuf", "ioe", &["input", "output", "error"], 0),
    (
        "ionice",
        "cnpPu",
        &["class", "classdata", "pid", "pgid", "uid"],
        0,
    ),
    ("time", "fo", &["format", "output"], 0),
    ("command", "", &[], 0),
    ("exec", "a", &[], 0),
    (
        "sudo",
        "ugCDhpRrtTU",
        &["user", "group", "chdir", "host", "prompt"],
        0,
    ),
    ("doas", "uC", &[], 0),
    ("chronic", "", &[], 0),
    ("unbuffer", "", &[], 0),
    ("busybox", "", &[], 0),
];

/// The shell, when the words run a shell script: a shell with `-c` (in any option cluster) or a
/// script argument, directly or behind a wrapper such as `env`, `timeout` or `xargs`.
fn runs_shell_script(words: &[String]) -> Option<String> {
    let (first, rest) = words.split_first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    if SHELLS.contains(&name) {
        return shell_gets_script(name, rest).then(|| first.clone());
    }
    let (_, short, long, positionals) = WRAPPERS.iter().find(|(w, ..)| *w == name)?;
    let mut positionals = *positionals;
    let mut i = 0;
    while i < rest.len() {
        let arg = rest[i].as_str();
        if arg == "--" {
            return runs_shell_script(&rest[i + 1..]);
        }
        if name == "env" {
            // `env -S 'sh -c ...'` splits its argument into the command line.
            let split = if arg == "-S" || arg == "--split-string" {
                rest.get(i + 1).map(|v| (v.as_str(), i + 2))
            } else {
                arg.strip_prefix("--split-string=")
                    .or_else(|| arg.strip_prefix("-S").filter(|v| !v.is_empty()))
                    .map(|v| (v, i + 1))
            };
            if let Some((value, next)) = split {
                let Ok(mut inner) = shell_words::split(value) else {
                    return Some(format!("{first} -S"));
                };
                inner.extend(rest[next.min(rest.len())..].iter().cloned());
                return runs_shell_script(&inner);
            }
            if !arg.starts_with('-') && arg.contains('=') {
                i += 1;
                continue;
            }
        }
        if arg == "-" && name == "env" {
            // `env -` is `env -i`.
        } else if let Some(option) = arg.strip_prefix("--") {
            if !option.contains('=') && long.contains(&option) {
                i += 1;
            }
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            let takes_value = cluster
                .chars()
                .next()
                .is_some_and(|c| short.contains(c) && !c.is_ascii_digit());
            if takes_value && cluster.chars().count() == 1 {
                i += 1;
            }
        } else if positionals > 0 {
            positionals -= 1;
        } else {
            return runs_shell_script(&rest[i..]);
        }
        i += 1;
    }
    None
}

/// Whether a shell's arguments give it a script: `-c` (also in a cluster like `-ec`), fish's
/// `--command`/`-C`, or a plain argument (a script file).
fn shell_gets_script(shell: &str, args: &[String]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "--" {
            return i + 1 < args.len();
        }
        if let Some(option) = arg.strip_prefix("--") {
            let option = option.split('=').next().unwrap_or(option);
            match option {
                "command" | "init-command" => return true,
                "rcfile" | "init-file" if !arg.contains('=') => i += 1,
                _ => {}
            }
        } else if let Some(cluster) = arg
            .strip_prefix('-')
            .or_else(|| arg.strip_prefix('+'))
            .filter(|c| !c.is_empty())
        {
            if (arg.starts_with('-') && cluster.contains('c'))
                || (shell == "fish" && cluster.contains('C'))
            {
                return true;
            }
            if cluster.contains('o') || cluster.contains('O') {
                i += 1;
            }
        } else if arg != "-" {
            return true;
        }
        i += 1;
    }
    false
}

/// The first operator a shell would act on: outside quotes any of `; | & < >` or a newline;
/// outside single quotes a backtick, `$(` or `${` (double quotes still expand those).
fn find_shell_operator(raw: &str) -> Option<String> {
    let chars: Vec<char> = raw.chars().collect();
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        let next = chars.get(i + 1).copied();
        match quote {
            Some('\'') => {
                if ch == '\'' {
                    quote = None;
                }
            }
            Some(_) => match ch {
                '\\' => i += 1,
                '"' => quote = None,
                '`' => return Some("`".to_owned()),
                '$' if matches!(next, Some('(' | '{')) => {
                    return Some(format!("${}", next.unwrap_or('(')));
                }
                _ => {}
            },
            None => match ch {
                '\\' => i += 1,
                '\'' | '"' => quote = Some(ch),
                '`' => return Some("`".to_owned()),
                '$' if matches!(next, Some('(' | '{')) => {
                    return Some(format!("${}", next.unwrap_or('(')));
                }
                ';' | '|' | '&' | '<' | '>' | '\n' | '\r' => {
                    let mut operator = ch.to_string();
                    if let Some(n) = next.filter(|n| matches!(n, '|' | '&' | '>' | '<')) {
                        operator.push(n);
                    }
                    return Some(operator.replace('\n', "\\n").replace('\r', "\\r"));
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_comments() {
        assert_eq!(sanitize_user_comment("  fix it  "), "fix it");
        assert_eq!(sanitize_user_comment("a\\b"), "a\\\\b");
        assert_eq!(sanitize_user_comment("x\"\"\"y"), "x\\\"\\\"\\\"y");
        let long = format!("{}\\", "a".repeat(3999));
        let out = sanitize_user_comment(&long);
        assert_eq!(out.chars().count(), 3999);
        assert!(!out.ends_with('\\'));
        let even = format!("{}\\", "a".repeat(3998));
        assert_eq!(sanitize_user_comment(&even).chars().count(), 4000);
        assert!(sanitize_user_comment(&even).ends_with("\\\\"));
    }

    #[test]
    fn truncates_bodies() {
        assert_eq!(truncate_finding_body("short", 10), "short");
        let out = truncate_finding_body(&"é".repeat(20), 10);
        assert!(out.starts_with(&"é".repeat(10)));
        assert!(out.ends_with(TRUNCATION_SUFFIX));
    }

    #[test]
    fn verify_commands() {
        let ok = parse_verify_commands(&[
            "cargo test --workspace",
            "npm run 'lint:ci'",
            "echo \"a;b\"",
        ])
        .unwrap();
        assert_eq!(ok[0].program, "cargo");
        assert_eq!(ok[1].args, vec!["run", "lint:ci"]);
        assert_eq!(ok[2].args, vec!["a;b"]);
        for (bad, op) in [
            ("make; rm -rf /", ";"),
            ("a | b", "|"),
            ("a && b", "&&"),
            ("a > out", ">"),
            ("echo `id`", "`"),
            ("echo $(id)", "$("),
            ("echo \"$(id)\"", "$("),
            ("a &", "&"),
        ] {
            match parse_verify_commands(&[bad]) {
                Err(VerifyCommandError::ShellOperator {
                    operator,
                    command,
                    index,
                }) => {
                    assert_eq!(operator, op, "{bad}");
                    assert_eq!(command, bad);
                    assert_eq!(index, 1);
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(parse_verify_commands(&["echo '$(literal)'"]).is_ok());
        assert!(matches!(
            parse_verify_commands(&["echo 'open"]),
            Err(VerifyCommandError::Unparsable { .. })
        ));
        assert!(matches!(
            parse_verify_commands(&[" "]),
            Err(VerifyCommandError::Empty { index: 1 })
        ));
        let many: Vec<String> = (0..21).map(|i| format!("true {i}")).collect();
        assert!(matches!(
            parse_verify_commands(&many),
            Err(VerifyCommandError::TooMany { count: 21 })
        ));
        let listed =
            parse_verify_command_list("cargo fmt --check, cargo test, echo 'a,b'").unwrap();
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[2].args, vec!["a,b"]);
    }

    /// Shells with a script are refused unless written `{shell: ...}`; shells without one, and
    /// programs that merely mention a shell, are not.
    #[test]
    fn shell_scripts() {
        let cases = [
            "sh -c 'make lint'",
            "sh -c \"env; exit 1\"",
            "/bin/bash -c true",
            "bash -ec 'make test'",
            "bash -o pipefail -c 'a | b'",
            "bash scripts/test",
            "bash +x scripts/test",
            "dash -- script.sh",
            "zsh -c x",
            "ksh x.ksh",
            "mksh -c x",
            "ash -c x",
            "fish --command 'make'",
            "fish -C 'make'",
            "busybox sh -c x",
            "busybox ash script",
            "env sh -c x",
            "env FOO=1 BAR=2 bash -c x",
            "env -i PATH=/bin sh script.sh",
            "env - sh -c x",
            "env -u HOME sh -c x",
            "env -S 'sh -c x'",
            "/usr/bin/env --split-string='bash x.sh'",
            "nice -n 10 sh -c x",
            "nice -5 bash x.sh",
            "timeout 10 sh -c x",
            "timeout -s KILL 30s bash -c x",
            "timeout --kill-after=5 10 zsh x",
            "xargs -n1 sh -c 'echo $0'",
            "xargs -I {} bash -c x",
            "nohup sh x.sh",
            "stdbuf -o L sh -c x",
            "setsid timeout 5 env sh -c x",
            "sudo -u nobody sh -c x",
            // Allowed: no script, or no shell.
            "sh",
            "bash --version",
            "bash -ex",
            "sh -",
            "timeout 10 grep sh file",
            "env FOO=sh cargo test",
            "xargs -n1 echo sh",
            "nice -n 5 cargo test -- sh -c",
            "cargo run --bin sh",
            "shellcheck scripts/test",
            "make SHELL=bash test",
        ];
        let mut report = String::new();
        for case in cases {
            let line = match parse_verify_commands(&[case]) {
                Ok(parsed) => format!("ok: {} {:?}", parsed[0].program, parsed[0].args),
                Err(error) => format!("refused: {}", error.reason()),
            };
            report.push_str(&format!("{case}\n  => {line}\n"));
        }
        insta::assert_snapshot!(report);
    }

    #[test]
    fn explicit_shell_commands() {
        let entries: Vec<CommandEntry> = serde_yaml_ng::from_str(
            "- cargo test\n- shell: make lint && make test\n- {shell: 'sh -c \"x\"'}\n",
        )
        .unwrap();
        assert_eq!(
            entries,
            vec![
                CommandEntry::Plain("cargo test".to_owned()),
                CommandEntry::shell("make lint && make test"),
                CommandEntry::shell("sh -c \"x\""),
            ]
        );
        let parsed = parse_verify_commands(&entries).unwrap();
        assert_eq!(parsed[1].program, "sh");
        assert_eq!(parsed[1].args, vec!["-c", "make lint && make test"]);
        assert!(parsed[1].shell && !parsed[0].shell);
        assert_eq!(parsed[1].raw, "sh -c 'make lint && make test'");
        assert_eq!(entries[1].to_string(), "sh -c 'make lint && make test'");
        // Written back as read.
        assert_eq!(
            serde_yaml_ng::to_string(&entries).unwrap(),
            "- cargo test\n- shell: make lint && make test\n- shell: sh -c \"x\"\n"
        );
        assert!(matches!(
            parse_verify_commands(&[CommandEntry::shell("  ")]),
            Err(VerifyCommandError::Empty { index: 1 })
        ));
        let list: CommandList = ["a", "b"].into_iter().collect();
        assert_eq!(list.len(), 2);
        let mut errors = String::new();
        for bad in ["- {shel: x}", "- {}", "- 3", "- {shell: x, also: y}"] {
            let error = serde_yaml_ng::from_str::<Vec<CommandEntry>>(bad).unwrap_err();
            errors.push_str(&format!("{bad}\n  => {error}\n"));
        }
        insta::assert_snapshot!(errors);
    }
}
