//! What the reviewer is told about the repository besides the change: its own rules and whether it
//! handles personal or financial data.

use std::path::Path;

use bugloop_config::Sensitivity;
use serde::Serialize;

/// The rule files read, in this order (`.cursor/rules/*` in name order in its place).
pub const RULE_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    ".cursor/rules",
    ".github/copilot-instructions.md",
    ".bugloop/rules.md",
];

/// Per rule file and in total, so rules cannot crowd out the change.
pub const MAX_RULE_CHARS: usize = 12_000;
pub const MAX_RULES_TOTAL_CHARS: usize = 24_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleFile {
    pub path: String,
    pub text: String,
    pub truncated: bool,
}

/// Reads the repository's rule files at head.
pub fn read_rules(root: &Path) -> Vec<RuleFile> {
    let mut paths = Vec::new();
    for entry in RULE_FILES {
        let full = root.join(entry);
        if full.is_dir() {
            let mut inside: Vec<String> = std::fs::read_dir(&full)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().is_file())
                .map(|e| format!("{entry}/{}", e.file_name().to_string_lossy()))
                .collect();
            inside.sort();
            paths.extend(inside);
        } else if full.is_file() {
            paths.push((*entry).to_owned());
        }
    }
    let mut total = 0;
    let mut rules = Vec::new();
    for path in paths {
        let Ok(bytes) = std::fs::read(root.join(&path)) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let budget = MAX_RULE_CHARS.min(MAX_RULES_TOTAL_CHARS.saturating_sub(total));
        if budget == 0 {
            break;
        }
        let (text, truncated) = cut(&text, budget);
        total += text.len();
        rules.push(RuleFile {
            path,
            text,
            truncated,
        });
    }
    rules
}

/// At most `max` bytes, cut at a character boundary.
pub fn cut(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

/// Whether the +2 security promotion applies, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SensitivityVerdict {
    pub sensitive: bool,
    pub reason: String,
}

/// Files that say what a repository is about.
const DESCRIBING_FILES: &[&str] = &[
    "README.md",
    "README",
    "README.rst",
    "README.txt",
    "package.json",
    "Cargo.toml",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "composer.json",
    "Gemfile",
];

/// Words that mark personal or financial data.
const SENSITIVE_PATTERN: &str = r"(?i)\b(pii|personally identifiable|personal data|gdpr|hipaa|patient data|health records|payments?|billing|invoices?|credit cards?|card numbers?|banking|bank accounts?|financial|fintech|stripe|paypal|plaid|iban|social security|ssn)\b";

/// Decides from configuration, or (on `auto`) from the repository's README and manifests.
pub fn sensitivity(root: &Path, configured: Sensitivity) -> SensitivityVerdict {
    match configured {
        Sensitivity::Sensitive => SensitivityVerdict {
            sensitive: true,
            reason: "review.sensitive_data is `sensitive`".to_owned(),
        },
        Sensitivity::Normal => SensitivityVerdict {
            sensitive: false,
            reason: "review.sensitive_data is `normal`".to_owned(),
        },
        Sensitivity::Auto => {
            let Ok(pattern) = regex::Regex::new(SENSITIVE_PATTERN) else {
                return SensitivityVerdict {
                    sensitive: false,
                    reason: "the sensitivity pattern did not compile".to_owned(),
                };
            };
            for file in DESCRIBING_FILES {
                let Ok(bytes) = std::fs::read(root.join(file)) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200_000)]);
                if let Some(found) = pattern.find(&text) {
                    return SensitivityVerdict {
                        sensitive: true,
                        reason: format!("{file} mentions {:?}", found.as_str()),
                    };
                }
            }
            SensitivityVerdict {
                sensitive: false,
                reason: "no README or manifest mentions personal or financial data".to_owned(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_read_in_order_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
        std::fs::create_dir_all(root.join(".bugloop")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use the service layer.").unwrap();
        std::fs::write(root.join(".cursor/rules/b.mdc"), "b").unwrap();
        std::fs::write(root.join(".cursor/rules/a.mdc"), "a").unwrap();
        std::fs::write(root.join(".bugloop/rules.md"), "é".repeat(MAX_RULE_CHARS)).unwrap();
        let rules = read_rules(root);
        let paths: Vec<_> = rules.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "AGENTS.md",
                ".cursor/rules/a.mdc",
                ".cursor/rules/b.mdc",
                ".bugloop/rules.md"
            ]
        );
        assert!(rules[3].truncated && rules[3].text.len() <= MAX_RULE_CHARS);
    }

    #[test]
    fn sensitivity_from_configuration_or_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!sensitivity(root, Sensitivity::Auto).sensitive);
        assert!(sensitivity(root, Sensitivity::Sensitive).sensitive);
        std::fs::write(
            root.join("README.md"),
            "# Shop\nWe take Payments with Stripe.",
        )
        .unwrap();
        let verdict = sensitivity(root, Sensitivity::Auto);
        assert!(verdict.sensitive, "{verdict:?}");
        assert!(verdict.reason.contains("README.md"));
        assert!(!sensitivity(root, Sensitivity::Normal).sensitive);
    }
}
