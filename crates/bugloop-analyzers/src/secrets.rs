//! Committed keys: the `secrets` analyzer reads the lines a change adds for credentials in the
//! documented formats of the services that issue them (an AWS access key id, a GitHub or GitLab
//! token, a Slack, Stripe, Google, OpenAI, Anthropic, npm or PyPI key, a private key block). Each
//! is a candidate naming the kind of key, never repeating it: the finding shows the key masked,
//! and its evidence is the text before the key on its line.
//!
//! Written here rather than run as a tool: the scanners the package registries offer need a
//! Python or Node.js runtime and their dependencies inside the sandbox (detect-secrets, secretlint)
//! or are not there at all (gitleaks, trufflehog), while the formats are data: one pattern each.

use std::sync::OnceLock;

use bugloop_diff::{ChangeKind, Diff, LineKind};
use bugloop_domain::finding::Category;
use bugloop_domain::score::Score;
use regex::Regex;

use crate::builtin::Weight;
use crate::hit::{Candidate, Hit, Level};

/// A kind of key: its rule id, what it is, and its format.
struct KeyFormat {
    rule: &'static str,
    what: &'static str,
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

fn compiled() -> &'static Vec<(&'static KeyFormat, Regex)> {
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
fn placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    lower.contains("example") || lower.contains("xxxxxxxx") || lower.contains("dummy")
}

/// The key with all but its first four and last two characters hidden.
fn masked(value: &str) -> String {
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

/// Every key in a documented format on a line the change adds, as a candidate of the tool
/// `secrets`.
pub fn secrets_added(diff: &Diff) -> Vec<Candidate> {
    let mut found = Vec::new();
    for file in diff
        .files
        .iter()
        .filter(|f| f.change != ChangeKind::Deleted && !f.binary)
    {
        let added = file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Added);
        for line in added {
            let Some(number) = line.new_line else {
                continue;
            };
            for (format, pattern) in compiled() {
                let Some(at) = pattern.find(&line.text) else {
                    continue;
                };
                if format.rule != "private-key" && placeholder(at.as_str()) {
                    continue;
                }
                found.push(candidate(file.path(), number, &line.text, format, at));
                break;
            }
        }
    }
    found
}

fn candidate(
    file: &str,
    line: u32,
    text: &str,
    format: &KeyFormat,
    at: regex::Match<'_>,
) -> Candidate {
    let shown = if format.rule == "private-key" {
        at.as_str().to_owned()
    } else {
        masked(at.as_str())
    };
    // The text before the first key grounds the finding without repeating any key.
    let _ = at.start();
    let evidence = safe_evidence(text);
    Candidate {
        tool: "secrets".to_owned(),
        hit: Hit {
            rule: format.rule.to_owned(),
            level: Level::Error,
            message: format!(
                "This change commits {} ({shown}): anyone who can read the repository can use it. Revoke it, and load it from the environment or a secret store",
                format.what
            ),
            file: file.to_owned(),
            line,
            end_line: None,
            url: None,
            security: true,
        },
        // A test's throwaway key (a certificate fixture) is said below the threshold.
        score: Score::saturating(i64::from(if crate::builtin::is_test_file(file) {
            Weight::Minor.score()
        } else {
            Weight::Critical.score()
        })),
        category: Category::Security,
        evidence: if format.rule == "private-key" {
            shown
        } else {
            evidence
        },
        note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::scope::adding as added;

    #[test]
    fn every_format_compiles() {
        assert_eq!(compiled().len(), FORMATS.len());
    }

    #[test]
    fn committed_keys_are_found_and_never_repeated() {
        let github = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
        let aws = "AKIA2OGYBAH6TQXLMN7Z";
        let diff = added(
            "settings.py",
            &[
                &format!("GITHUB_TOKEN = \"{github}\""),
                "AWS_EXAMPLE = \"AKIAIOSFODNN7EXAMPLE\"",
                &format!("aws_key = '{aws}'"),
                "-----BEGIN OPENSSH PRIVATE KEY-----",
                "name = \"not a key\"",
            ],
        );
        let found = secrets_added(&diff);
        let rules: Vec<(&str, u32)> = found
            .iter()
            .map(|c| (c.hit.rule.as_str(), c.hit.line))
            .collect();
        assert_eq!(
            rules,
            [
                ("github-token", 1),
                ("aws-access-key-id", 3),
                ("private-key", 4)
            ]
        );
        for candidate in &found {
            let finding = candidate.to_finding();
            for text in [
                &finding.title,
                &finding.description,
                finding.evidence.as_ref().unwrap(),
            ] {
                assert!(!text.contains(&github) && !text.contains(aws), "{text}");
            }
            assert_eq!(finding.category, Category::Security);
        }
        assert_eq!(found[0].evidence, "GITHUB_TOKEN = \"");
        // A second key before the one matched first is not quoted either.
        let two = format!("x = [\"{github}\", \"{aws}\"]");
        let both = secrets_added(&added("k.py", &[&two]));
        assert_eq!(both[0].evidence, "x = [\"");
        assert!(!mask_keys(&two).contains(&github) && !mask_keys(&two).contains(aws));
        assert!(
            found[1].hit.message.contains("AKIA…7Z"),
            "{}",
            found[1].hit.message
        );
    }
}
