//! bugloop's reports and every way they are shown, in one place for every front end (the
//! command line, the GitHub Action, the server). The models: the review report ([`review`]), what
//! acting on a comment did ([`act`], with the Build run's data in [`build`]), the audit-fix loop
//! ([`converge`]) and settled disputes ([`dispute`]). Their status, stage and decision fields are
//! enums serialized to the same strings as ever. The renderers: terminal text ([`text`], with
//! [`style::Style`]), Markdown ([`markdown`], also the Action's job summary), SARIF 2.1.0
//! ([`sarif`]), JSON ([`json`]) and the summary comment ([`summary`]). Nothing here does IO.
//!
//! **Invariants:** pure: no IO, no loop logic; status and stage fields are enums that serialize to
//! the strings they always had, so the published schema (`docs/review-report.schema.json`, from
//! `report_schema()`) does not change by accident. **Start reading:** `review.rs`, then `text.rs`.

pub mod act;
pub mod build;
pub mod converge;
pub mod dispute;
pub mod json;
pub mod markdown;
pub mod review;
pub mod sarif;
pub mod solve;
pub mod style;
pub mod summary;
pub mod text;

/// A commit's short form for people: its first 7 characters (anything else as it is).
pub(crate) fn short_sha(sha: &str) -> &str {
    if sha.len() > 7 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        &sha[..7]
    } else {
        sha
    }
}
