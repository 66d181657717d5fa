//! The documented formats of the credentials services issue (an AWS access key id, GitHub and
//! GitLab tokens, Slack, Stripe, Google, OpenAI, Anthropic, npm and PyPI keys, private key
//! blocks), one pattern each, and what bugloop does with a text that may hold one: mask the keys,
//! or quote a line only up to its first key. The formats are data: see `secrets.rs` for why they
//! are read here rather than by a tool.

use std::sync::OnceLock;

use regex::Regex;

/// A kind of key: its rule id, what it is, and its format.
pub(crate) struct KeyFormat {
    pub(crate) rule: &'static str,
    pub(crate) what: &'static str,
    pattern: &'static str,
}

const FORMATS: &[KeyFormat] = &[
    KeyFormat {
        rule: "aws-access-key-id",
        what: "an AWS access key id",
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    },
    KeyFormat {
        rule: "github-token",
        what: "a GitHub token",
        pattern: r"\bgh[pousr]_[A-Za-z0-9]{36,255}\b",
    },
    KeyFormat {
        rule: "github-fine-grained-token",
        what: "a GitHub fine-grained token",
        pattern: r"\bgithub_pat_[A-Za-z0-9_]{82}\b",
    },
    KeyFormat {
        rule: "gitlab-token",
        what: "a GitLab personal access token",
        pattern: r"\bglpat-[A-Za-z0-9_\-]{20}\b",
    },
    KeyFormat {
        rule: "slack-token",
        what: "a Slack token",
        pattern: r"\bxox[abposr]-[0-9A-Za-z\-]{10,72}\b",
    },
    KeyFormat {
        rule: "stripe-secret-key",
        what: "a Stripe secret key",
        pattern: r"\b(?:sk|rk)_live_[0-9A-Za-z]{24,99}\b",
    },
    KeyFormat {
        rule: "google-api-key",
        what: "a Google API key",
        pattern: r"\bAIza[0-9A-Za-z_\-]{35}\b",
    },
    KeyFormat {
        rule: "openai-api-key",
        what: "an OpenAI API key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}\b",
    },
    KeyFormat {
        rule: "anthropic-api-key",
        what: "an Anthropic API key",
        pattern: r"\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_\-]{80,120}\b",
    },
    KeyFormat {
        rule: "npm-token",
        what: "an npm access token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
    },
    KeyFormat {
        rule: "pypi-token",
        what: "a PyPI upload token",
        pattern: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}",
    },
    KeyFormat {
        rule: "private-key",
        what: "a private key",
        pattern: r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----",
    },
];

pub(crate) fn compiled() -> &'static Vec<(&'static KeyFormat, Regex)> {
    static COMPILED: OnceLock<Vec<(&'static KeyFormat, Regex)>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        FORMATS
            .iter()
            .filter_map(|f| Regex::new(f.pattern).ok().map(|r| (f, r)))
            .collect()
    })
}

/// The formats' rule ids (for documentation and tests).
pub fn secret_rules() -> Vec<&'static str> {
    FORMATS.iter().map(|f| f.rule).collect()
}

/// Documented placeholders (`AKIAIOSFODNN7EXAMPLE`) and obvious fillers are not keys.
pub(crate) fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    lower.contains("example") || lower.contains("xxxxxxxx") || lower.contains("dummy")
}

/// The key with all but its first four and last two characters hidden.
pub(crate) fn masked(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() <= 8 {
        return "…".to_owned();
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 2..].iter().collect();
    format!("{head}…{tail}")
}

/// Where the first key of any format starts in `text`, if one does.
fn first_key(text: &str) -> Option<usize> {
    compiled()
        .iter()
        .filter_map(|(_, pattern)| pattern.find(text))
        .filter(|at| !placeholder(at.as_str()))
        .map(|at| at.start())
        .min()
}

/// `text` with every key in a documented format masked (`ghp_…X7`).
pub fn mask_keys(text: &str) -> String {
    let mut out = text.to_owned();
    for (format, pattern) in compiled() {
        if format.rule == "private-key" {
            continue;
        }
        out = pattern
            .replace_all(&out, |c: &regex::Captures<'_>| masked(&c[0]))
            .into_owned();
    }
    out
}

/// A line's text fit to quote as evidence: up to the first key on it (trimmed), or, when a key
/// starts it, as much of the key as its masked form shows; the whole line when it holds none.
pub fn safe_evidence(line: &str) -> String {
    let text = line.trim();
    match first_key(text) {
        None => text.to_owned(),
        Some(0) => text.chars().take(4).collect(),
        Some(at) => text[..at].trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_compiles() {
        assert_eq!(compiled().len(), FORMATS.len());
    }

    #[test]
    fn a_line_is_quoted_up_to_its_first_key() {
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        assert_eq!(safe_evidence(&format!("  t = \"{token}\"  ")), "t = \"");
        assert_eq!(safe_evidence(&token), "ghp_");
        assert_eq!(safe_evidence("x = 1"), "x = 1");
        assert_eq!(mask_keys(&format!("k {token}")), "k ghp_…e5");
    }
}
