//! The official SARIF 2.1.0 schema, for the tests that check bugloop's SARIF against it.

use serde_json::Value;

/// The official SARIF 2.1.0 schema (kept in `bugloop-cli/tests/schemas`). It writes one pattern
/// with a stray `]` (a literal in ECMAScript regexes, an error in Rust's); escaping it keeps the
/// meaning and lets a Rust validator compile it.
pub fn official_schema() -> Value {
    let official = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bugloop-cli/tests/schemas/sarif-2.1.0-rtm.5.json"
    ))
    .unwrap_or_else(|e| panic!("the SARIF schema: {e}"));
    let typo = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert!(official.contains(typo), "the schema's pattern changed");
    let fixed = official.replace(typo, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#);
    serde_json::from_str(&fixed).unwrap_or_else(|e| panic!("the SARIF schema: {e}"))
}

/// Fails the test unless `sarif` follows the [`official_schema`], listing every error with its
/// place.
#[track_caller]
pub fn assert_official(sarif: &Value) {
    crate::schema::assert_valid(&official_schema(), sarif, "the SARIF");
}
