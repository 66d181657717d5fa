//! The JSON renderer: every report is its own JSON (the review report's schema is
//! `docs/review-report.schema.json`), pretty-printed.

use serde::Serialize;

/// A report (review, act, converge, dispute outcome) as pretty-printed JSON.
pub fn to_json<R: Serialize>(report: &R) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(report)
}
