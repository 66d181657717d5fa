//! A branch's review settings make its own review stricter, never looser.

use super::*;

/// A branch may make its own review stricter, never looser: a higher threshold or floor, fewer
/// comments, more ignored files or less weight on security keep the trusted values and are
/// listed (and so become the finding) as trusted-only changes are.
#[test]
fn a_branch_cannot_make_its_own_review_looser() {
    let branch = "review:\n  threshold: 10\n  severity_floor: high\n  comment_limit: 1\n  ignore_files: ['**']\n  sensitive_data: normal\n  security_promotion: 0\n";
    let loaded = load_layered(&with_branch(branch, BranchConfig::ReviewSettings)).unwrap();
    let review = &loaded.config.review;
    let defaults = Config::default().review;
    assert_eq!(review.threshold, bugloop_domain::Score::new(6).unwrap());
    assert_eq!(review.severity_floor, defaults.severity_floor);
    assert_eq!(review.comment_limit, defaults.comment_limit);
    assert_eq!(review.ignore_files, defaults.ignore_files);
    assert_eq!(review.sensitive_data, defaults.sensitive_data);
    assert_eq!(review.security_promotion, defaults.security_promotion);
    // (The base's other keys, which this file leaves out, are listed as removed.)
    let keys: Vec<&str> = loaded
        .ignored
        .iter()
        .map(|i| i.key.as_str())
        .filter(|key| key.starts_with("review."))
        .collect();
    assert_eq!(
        keys,
        [
            "review.threshold",
            "review.severity_floor",
            "review.comment_limit",
            "review.ignore_files",
            "review.sensitive_data",
            "review.security_promotion",
        ]
    );
    let finding = ignored_settings_finding(&loaded.ignored).unwrap();
    assert_eq!(finding.line, Some(2));
    // Trusted for the branch (`--trust-branch-config`): its settings apply as written.
    let trusted = load_layered(&with_branch(branch, BranchConfig::Trust)).unwrap();
    assert_eq!(trusted.config.review.comment_limit, 1);
    assert!(trusted.ignored.is_empty());
}
