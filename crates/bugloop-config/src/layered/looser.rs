//! Whether a branch's review setting would make the review of that branch less strict than
//! trusted configuration has it. A branch may ask for more scrutiny of itself, never less: a
//! higher threshold, more ignored files or less weight on security would let the code under
//! review hide its own findings.

use serde_yaml_ng::Value;

/// Whether `branch`, the value the branch's file gives the settable review key `key` (dotted),
/// shows or weighs fewer findings than `trusted`. A key that decides no such thing is never
/// looser.
pub(super) fn is_looser(key: &str, branch: Option<&Value>, trusted: Option<&Value>) -> bool {
    let (Some(branch), Some(trusted)) = (branch, trusted) else {
        return false;
    };
    let number = |value: &Value| value.as_f64();
    let more = |b: &Value, t: &Value| matches!((number(b), number(t)), (Some(b), Some(t)) if b > t);
    match key {
        // Fewer findings pass; fewer combine into an elevated one; more of them count as one.
        "review.threshold" | "review.elevation_min_score" | "review.dedup_line_window" => {
            more(branch, trusted)
        }
        "review.comment_limit" | "review.security_promotion" | "review.dedup_min_overlap" => {
            more(trusted, branch)
        }
        // 0 turns elevation off; otherwise fewer findings on a file elevate sooner.
        "review.elevation_threshold" => match (number(branch), number(trusted)) {
            (Some(b), Some(t)) => t != 0.0 && (b == 0.0 || b > t),
            _ => false,
        },
        "review.severity_floor" => rank(branch, SEVERITIES) > rank(trusted, SEVERITIES),
        "review.sensitive_data" => rank(branch, SENSITIVITIES) < rank(trusted, SENSITIVITIES),
        "review.ignore_files" => match (texts(branch), texts(trusted)) {
            (Some(branch), Some(trusted)) => !ignores_no_more(&branch, &trusted),
            _ => true,
        },
        _ => false,
    }
}

fn texts(value: &Value) -> Option<Vec<&str>> {
    value.as_sequence()?.iter().map(Value::as_str).collect()
}

/// Whether the ignore list `branch` ignores no file `trusted` does not. Patterns read as
/// `.gitignore`'s, where the last that matches decides and `!` brings a file back, so this is
/// said of the lists' shape, not their words: `branch` is `trusted` with some ignoring patterns
/// left out (order kept, every `!` kept), then perhaps more `!` patterns at its end. Anything
/// else (a new pattern, a `!` dropped, the order changed) may ignore more.
fn ignores_no_more(branch: &[&str], trusted: &[&str]) -> bool {
    let trailing = branch
        .iter()
        .rev()
        .take_while(|p| p.starts_with('!'))
        .count();
    (0..=trailing).any(|extra| drops_only_ignoring(&branch[..branch.len() - extra], trusted))
}

/// Whether `kept` is `trusted` with only ignoring (not `!`) patterns removed, in order.
fn drops_only_ignoring(kept: &[&str], trusted: &[&str]) -> bool {
    let mut rest = trusted.iter();
    for pattern in kept {
        loop {
            match rest.next() {
                Some(candidate) if candidate == pattern => break,
                Some(candidate) if !candidate.starts_with('!') => {}
                _ => return false,
            }
        }
    }
    rest.all(|left| !left.starts_with('!'))
}

/// Severities from the one that shows the most findings as a floor.
const SEVERITIES: &[&str] = &["info", "low", "medium", "high"];

/// How much sensitive data weighs security findings, from the least.
const SENSITIVITIES: &[&str] = &["normal", "auto", "sensitive"];

fn rank(value: &Value, order: &[&str]) -> Option<usize> {
    let name = value.as_str()?;
    order.iter().position(|known| *known == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Value {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn only_what_shows_or_weighs_fewer_findings_is_looser() {
        let looser = |key: &str, branch: &str, trusted: &str| {
            is_looser(key, Some(&yaml(branch)), Some(&yaml(trusted)))
        };
        assert!(looser("review.threshold", "10", "7"));
        assert!(!looser("review.threshold", "5", "7"));
        assert!(!looser("review.threshold", "7", "7"));
        assert!(looser("review.comment_limit", "1", "10"));
        assert!(!looser("review.comment_limit", "20", "10"));
        assert!(looser("review.security_promotion", "0", "2"));
        assert!(looser("review.severity_floor", "high", "low"));
        assert!(!looser("review.severity_floor", "info", "low"));
        assert!(looser("review.sensitive_data", "normal", "auto"));
        assert!(!looser("review.sensitive_data", "sensitive", "auto"));
        assert!(looser("review.elevation_threshold", "0", "3"));
        assert!(looser("review.elevation_threshold", "5", "3"));
        assert!(!looser("review.elevation_threshold", "2", "3"));
        assert!(!looser("review.elevation_threshold", "2", "0"));
        assert!(looser("review.elevation_min_score", "6", "4"));
        assert!(looser("review.dedup_line_window", "500", "3"));
        assert!(looser("review.dedup_min_overlap", "0.1", "0.5"));
        assert!(looser("review.ignore_files", "['**']", "[]"));
        assert!(looser(
            "review.ignore_files",
            "['gen/**', 'src/**']",
            "['gen/**']"
        ));
        assert!(!looser("review.ignore_files", "[]", "['gen/**']"));
        // `!` brings files back, and the last pattern that matches decides.
        let trusted = "['gen/**', '!gen/keep/**']";
        assert!(looser("review.ignore_files", "['gen/**']", trusted));
        assert!(looser(
            "review.ignore_files",
            "['!gen/keep/**', 'gen/**']",
            trusted
        ));
        assert!(!looser("review.ignore_files", trusted, trusted));
        assert!(!looser("review.ignore_files", "['!gen/keep/**']", trusted));
        assert!(!looser(
            "review.ignore_files",
            "['gen/**', '!gen/keep/**', '!gen/also/**']",
            trusted
        ));
        assert!(looser(
            "review.ignore_files",
            "['gen/**', '!gen/keep/**', 'gen/keep/x/**']",
            trusted
        ));
        assert!(!looser("review.not_a_strictness_key", "1000", "60000"));
    }
}
