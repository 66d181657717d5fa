//! The repository's own prompts (bugloop-architecture.md keeps them in the repository):
//! `.bugloop/prompts/solve-issue.md` for solving an issue and `.bugloop/prompts/resolve-comments.md`
//! for answering a solution's review. They are read from the trusted base commit only, like
//! `.bugloop/config.yml`, never from a branch, and are added to the built-in prompts as the
//! repository's instructions: they cannot replace them, and they choose no command.

use serde::Serialize;

/// Where the repository keeps its prompts.
pub const PROMPTS_DIR: &str = ".bugloop/prompts";

/// The most of a prompt that is read: instructions, not a second codebase.
pub const MAX_PROMPT_BYTES: usize = 16 * 1024;

/// Which task a repository prompt is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptKind {
    /// Solving an issue (`solve-issue.md`).
    SolveIssue,
    /// Answering the review of a solution (`resolve-comments.md`).
    ResolveComments,
}

impl PromptKind {
    pub const ALL: [PromptKind; 2] = [PromptKind::SolveIssue, PromptKind::ResolveComments];

    /// The file's path in the repository.
    pub fn path(self) -> &'static str {
        match self {
            PromptKind::SolveIssue => ".bugloop/prompts/solve-issue.md",
            PromptKind::ResolveComments => ".bugloop/prompts/resolve-comments.md",
        }
    }
}

/// One prompt of the repository's, as read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepositoryPrompt {
    pub kind: PromptKind,
    /// Where it was read: `main@1a2b3c4:.bugloop/prompts/solve-issue.md`.
    pub source: String,
    pub text: String,
}

/// The repository's prompts, each when its file is there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RepositoryPrompts {
    pub prompts: Vec<RepositoryPrompt>,
}

impl RepositoryPrompts {
    /// Reads each prompt with `read` (the file's bytes at the trusted commit if it has at most
    /// [`MAX_PROMPT_BYTES`], else `Err` with its size, which is then never read; `Ok(None)` when
    /// it is not there), labelled `label:path`. A file that is not UTF-8 text, is empty or is
    /// too large is left out, with a warning that names it and says why.
    pub fn read(
        label: &str,
        read: impl Fn(&str, u64) -> Result<Option<Vec<u8>>, u64>,
    ) -> (RepositoryPrompts, Vec<String>) {
        let mut prompts = Vec::new();
        let mut warnings = Vec::new();
        for kind in PromptKind::ALL {
            let source = format!("{label}:{}", kind.path());
            let bytes = match read(kind.path(), MAX_PROMPT_BYTES as u64) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => continue,
                Err(size) => {
                    warnings.push(format!(
                        "{source}: ignored: it is {size} bytes; at most {MAX_PROMPT_BYTES} are read"
                    ));
                    continue;
                }
            };
            let problem = if bytes.len() > MAX_PROMPT_BYTES {
                Some(format!(
                    "it is {} bytes; at most {MAX_PROMPT_BYTES} are read",
                    bytes.len()
                ))
            } else if bytes.contains(&0) {
                Some("it is not text (a NUL byte)".to_owned())
            } else {
                match String::from_utf8(bytes) {
                    Err(error) => Some(format!(
                        "it is not UTF-8 text (invalid bytes at offset {})",
                        error.utf8_error().valid_up_to()
                    )),
                    Ok(text) if text.trim().is_empty() => Some("it is empty".to_owned()),
                    Ok(text) => {
                        prompts.push(RepositoryPrompt { kind, source, text });
                        continue;
                    }
                }
            };
            if let Some(problem) = problem {
                warnings.push(format!("{source}: ignored: {problem}"));
            }
        }
        (RepositoryPrompts { prompts }, warnings)
    }

    /// The prompt for `kind`, if the repository has one.
    pub fn get(&self, kind: PromptKind) -> Option<&RepositoryPrompt> {
        self.prompts.iter().find(|p| p.kind == kind)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn prompts_are_read_when_there_and_bad_ones_are_named() {
        let files = |path: &str, _max: u64| -> Result<Option<Vec<u8>>, u64> {
            Ok(match path {
                ".bugloop/prompts/solve-issue.md" => Some(b"Run `make check` first.\n".to_vec()),
                ".bugloop/prompts/resolve-comments.md" => Some(vec![0xff, 0xfe, b'a']),
                _ => None,
            })
        };
        let (prompts, warnings) = RepositoryPrompts::read("main@1a2b3c4", files);
        let solve = prompts.get(PromptKind::SolveIssue).unwrap();
        assert_eq!(solve.source, "main@1a2b3c4:.bugloop/prompts/solve-issue.md");
        assert_eq!(solve.text, "Run `make check` first.\n");
        assert!(prompts.get(PromptKind::ResolveComments).is_none());
        assert_eq!(
            warnings,
            [
                "main@1a2b3c4:.bugloop/prompts/resolve-comments.md: ignored: it is not UTF-8 text \
              (invalid bytes at offset 0)"
            ]
        );
        // Too large: refused by its size, before it is read.
        let big = |_: &str, max: u64| -> Result<Option<Vec<u8>>, u64> { Err(max + 1) };
        let (prompts, warnings) = RepositoryPrompts::read("x", big);
        assert!(prompts.prompts.is_empty());
        assert_eq!(warnings.len(), 2);
        assert!(
            warnings[0].contains("at most 16384 are read"),
            "{warnings:?}"
        );
        let (prompts, warnings) = RepositoryPrompts::read("x", |_, _| Ok(None));
        assert!(prompts.prompts.is_empty() && warnings.is_empty());
    }
}
