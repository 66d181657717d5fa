//! The lines above the findings: what a review was shown and asked, said so that a reader knows
//! why.

use super::*;

/// A small model's questions say what they are about: the code of the files shown, or, on a
/// re-review whose push put code back as the base has it, the findings whose code changed.
#[test]
fn a_small_models_questions_say_what_they_are_about() {
    let mut report = review_report();
    report.asked = ModelAsked {
        kind: "questions".to_owned(),
        calls: 2,
        files_shown: 1,
        left_to_analyzers: Vec::new(),
    };
    let text = text::review(&report, Style::new(false));
    assert!(
        text.contains("2 short question(s) for the model about the code of 1 file(s)"),
        "{text}"
    );
    report.asked.files_shown = 0;
    let text = text::review(&report, Style::new(false));
    assert!(
        text.contains("2 short question(s) for the model about findings whose code changed"),
        "{text}"
    );
}

/// A first review is not announced, unless the change has findings already: an earlier review
/// stopped before its summary, and the full review is said with its reason.
#[test]
fn a_full_review_of_a_change_with_findings_says_why() {
    let mut report = review_report();
    report.scope = ReviewedScope::Full {
        reason: FIRST_REVIEW.to_owned(),
    };
    for published in &mut report.findings {
        published.action = CommentAction::Added;
    }
    report.tracked.truncate(report.findings.len());
    let said = format!("reviewed the whole change ({FIRST_REVIEW})");
    for render in [
        text::review(&report, Style::new(false)),
        markdown::review(&report),
    ] {
        assert!(!render.to_lowercase().contains(&said), "{render}");
    }
    report.findings[0].action = CommentAction::Unchanged;
    for render in [
        text::review(&report, Style::new(false)),
        markdown::review(&report),
    ] {
        assert!(render.to_lowercase().contains(&said), "{render}");
    }
}
