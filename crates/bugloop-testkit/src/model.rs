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
