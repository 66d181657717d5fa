//! What a scripted model says in the suites, as data: a finding as a model reports it, and the
//! tool calls of a review's four passes. Each suite turns these into its scripted provider's
//! replies (the provider is `bugloop-llm`'s, which this crate does not depend on).

use serde_json::{Value, json};

/// A finding as the model reports it.
pub fn finding(
    file: &str,
    line: u32,
    evidence: &str,
    title: &str,
    description: &str,
    score: u8,
    category: &str,
) -> Value {
    json!({
        "file": file, "line": line, "evidence": evidence, "title": title,
        "description": description, "score": score, "category": category
    })
}

/// The tool calls of a review's four passes with tools, one list per turn: `findings` reported
/// in pass 1, `resolved` (finding id, reason) in pass 2, passes 3 and 4 with nothing to say.
pub fn review_turns(
    findings: Vec<Value>,
    resolved: Vec<(String, String)>,
) -> Vec<Vec<(&'static str, Value)>> {
    let mut first: Vec<(&'static str, Value)> = findings
        .into_iter()
        .map(|f| ("report_finding", f))
        .collect();
    first.push((
        "submit_pass_results",
        json!({"pass_number": 1, "summary": "diff reviewed", "has_blocking_issues": false}),
    ));
    let mut second: Vec<(&'static str, Value)> = resolved
        .into_iter()
        .map(|(id, reason)| ("resolve_finding", json!({"id": id, "reason": reason})))
        .collect();
    second.push((
        "submit_pass_results",
        json!({"pass_number": 2, "summary": "structure reviewed"}),
    ));
    let mut turns = vec![first, second];
    for pass in 3..=4 {
        turns.push(vec![(
            "submit_pass_results",
            json!({"pass_number": pass, "summary": format!("pass {pass} done")}),
        )]);
    }
    turns
}

/// The suites' Python file with a loop that reads one past the end: `stats.py` as the base has
/// it ([`STATS_BASE`]) and as a branch changes it ([`stats_feature`]), and the finding a model
/// reports on it ([`stats_off_by_one`]).
pub const STATS_BASE: &str = "def mean(xs):\n    total = 0\n    for i in range(len(xs)):\n        total += xs[i]\n    return total / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n";

/// [`STATS_BASE`] with the off-by-one on line 3, and `spread` changed too.
pub fn stats_feature() -> String {
    STATS_BASE
        .replace("range(len(xs))", "range(len(xs) + 1)")
        .replace("max(xs) - min(xs)", "max(xs) - min(xs) if xs else 0")
}

/// The off-by-one of [`stats_feature`], as the model reports it.
pub fn stats_off_by_one() -> Value {
    finding(
        "stats.py",
        3,
        "for i in range(len(xs) + 1):",
        "Loop reads one past the end",
        "`xs[len(xs)]` raises IndexError.",
        8,
        "logic",
    )
}
