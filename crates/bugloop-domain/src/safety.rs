//! Helpers that keep untrusted text in its place (bugbot technical reference, section 6):
//! user comments embedded in prompts, finding bodies cut to size, and verify commands that can
//! never become a shell.

use serde::Serialize;

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

/// A verify command split into a program and its arguments; run without a shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyCommand {
    /// The command as configured.
    pub raw: String,
    pub program: String,
    pub args: Vec<String>,
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

/// Splits each configured command as a POSIX shell would (quotes and escapes), refusing shell
/// operators (`;` `|` `&` `>` `<`, backticks, `$(`, `${`) and more than 20 commands. Errors name
/// the command (1-based).
pub fn parse_verify_commands<S: AsRef<str>>(
    commands: &[S],
) -> Result<Vec<VerifyCommand>, VerifyCommandError> {
    let commands: Vec<&str> = commands.iter().map(AsRef::as_ref).collect();
    if commands.len() > MAX_VERIFY_COMMANDS {
        return Err(VerifyCommandError::TooMany {
            count: commands.len(),
        });
    }
    commands
        .iter()
        .enumerate()
        .map(|(i, raw)| parse_verify_command(i + 1, raw))
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
    let mut words = words.into_iter();
    let program = words.next().ok_or(VerifyCommandError::Empty { index })?;
    Ok(VerifyCommand {
        raw: raw.to_owned(),
        program,
        args: words.collect(),
    })
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
}
