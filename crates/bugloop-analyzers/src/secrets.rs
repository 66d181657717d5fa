//! Committed keys: the `secrets` check reads the lines a change adds for credentials in the
//! documented formats of the services that issue them (`keys.rs`). Each is a candidate naming the
//! kind of key, never repeating it: the finding shows the key masked, and its evidence is the text
//! before the first key on its line.
//!
//! Written here rather than run as a tool: the scanners the package registries offer need a
//! Python or Node.js runtime and their dependencies inside the sandbox (detect-secrets, secretlint)
//! or are not there at all (gitleaks, trufflehog), while the formats are data: one pattern each.

use bugloop_diff::Diff;
use bugloop_domain::finding::Category;

use crate::hit::{Candidate, Hit, Level};
use crate::keys::{KeyFormat, compiled, masked, placeholder, safe_evidence};
use crate::scope::added_lines;
use crate::weight::{Weight, is_test_file};

/// Every key in a documented format on a line the change adds, as a candidate of the tool
/// `secrets`.
pub fn secrets_added(diff: &Diff) -> Vec<Candidate> {
    let mut found = Vec::new();
    for (file, number, text) in added_lines(diff) {
        for (format, pattern) in compiled() {
            let Some(at) = pattern.find(text) else {
                continue;
            };
            if format.rule != "private-key" && placeholder(at.as_str()) {
                continue;
            }
            found.push(candidate(file, number, text, format, at));
            break;
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
    let message = format!(
        "This change commits {} ({shown}): anyone who can read the repository can use it. Revoke it, and load it from the environment or a secret store",
        format.what
    );
    let mut hit = Hit::at(format.rule, Level::Error, (file, line), message);
    hit.security = true;
    // A test's throwaway key (a certificate fixture) is said below the threshold.
    let weight = if is_test_file(file) {
        Weight::Minor
    } else {
        Weight::Critical
    };
    let evidence = if format.rule == "private-key" {
        shown
    } else {
        evidence
    };
    Candidate::said("secrets", hit, (weight, Category::Security), evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::keys::mask_keys;
    use crate::scope::adding as added;

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
