//! What the suites assert of the labels bugloop keeps on an issue it solves.

/// Fails the test unless the issue's `labels` are those of a solve that ended: never
/// `bugloop:solving`, and `bugloop:escalated` exactly when it was `escalated` to a person.
#[track_caller]
pub fn assert_solve_ended(labels: &[String], escalated: bool) {
    let has = |label: &str| labels.iter().any(|l| l == label);
    assert!(!has("bugloop:solving"), "{labels:?}");
    assert_eq!(has("bugloop:escalated"), escalated, "{labels:?}");
}
