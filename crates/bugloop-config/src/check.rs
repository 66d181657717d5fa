//! `bugloop config check`: a configuration file read as bugloop reads it, every error at once
//! where it can (one per top-level section: a section is read with the others blanked out, so
//! each error keeps its file, line and column).

use crate::{BaseScope, BranchConfig, ConfigError, SourceText, Sources, load_layered};

/// [`check_text`] of a file's bytes: bytes that are not UTF-8 are the error, with the line and
/// column of the first bad one.
pub fn check_bytes(label: &str, bytes: Vec<u8>) -> Vec<ConfigError> {
    match crate::layered::utf8(bytes, label) {
        Ok(text) => check_text(label, &text),
        Err(error) => vec![error],
    }
}

/// The errors of configuration `text` (named `label` in them), read as a user's file is (every
/// key may be set); empty when it reads.
pub fn check_text(label: &str, text: &str) -> Vec<ConfigError> {
    let load = |text: String| {
        load_layered(&Sources {
            base: None,
            branch: None,
            user: Some(SourceText::new(label, text)),
            operator: None,
            env: Vec::new(),
            branch_config: BranchConfig::ReviewSettings,
            base_scope: BaseScope::Full,
        })
    };
    let Err(first) = load(text.to_owned()) else {
        return Vec::new();
    };
    let sections = top_level_sections(text);
    let mut errors: Vec<ConfigError> = Vec::new();
    if sections.len() > 1 {
        let lines: Vec<&str> = text.lines().collect();
        for (start, end) in &sections {
            let masked: String = lines
                .iter()
                .enumerate()
                .map(|(at, line)| {
                    if (*start..*end).contains(&at) {
                        *line
                    } else {
                        ""
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
            if let Err(error) = load(masked)
                && !errors.iter().any(|e| e.to_string() == error.to_string())
            {
                errors.push(error);
            }
        }
    }
    // Each section reads alone, but not together (or there is one section): the first error.
    if errors.is_empty() {
        errors.push(first);
    }
    errors
}

/// The line ranges (0-based, end exclusive) of the text's top-level keys: a line at column 0
/// that is neither a comment nor a list item, to the next.
fn top_level_sections(text: &str) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| {
            line.chars()
                .next()
                .is_some_and(|c| !c.is_whitespace() && c != '#' && c != '-')
                && line.contains(':')
        })
        .map(|(at, _)| at)
        .collect();
    let count = text.lines().count();
    starts
        .iter()
        .enumerate()
        .map(|(i, start)| (*start, starts.get(i + 1).copied().unwrap_or(count)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_s_error_is_said_with_its_place() {
        let text = "review:\n  threshold: 11\nsolve:\n  max_iterations: 0\nlabels:\n  trigger: x\nbogus: 1\n";
        let errors: Vec<String> = check_text("c.yml", text)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(errors[0].starts_with("c.yml:2:"), "{errors:#?}");
        assert!(errors[0].contains("review.threshold"), "{errors:#?}");
        assert!(errors[1].starts_with("c.yml:4:"), "{errors:#?}");
        assert!(errors[2].contains("unknown key `bogus`"), "{errors:#?}");
        assert!(check_text("c.yml", "review:\n  threshold: 6\n").is_empty());
        assert_eq!(check_text("c.yml", "review: [\n").len(), 1);
    }
}
