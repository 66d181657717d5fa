//! The SARIF 2.1.0 renderer of the review report, for code scanning (the GitHub Action uploads it).

use serde_json::{Value, json};

use crate::review::ReviewReport;

fn level(score: u8) -> &'static str {
    match score {
        7..=10 => "error",
        5..=6 => "warning",
        _ => "note",
    }
}

/// SARIF 2.1.0: one run, rules per category, a result per open finding.
pub fn review(report: &ReviewReport) -> Value {
    let mut rules: Vec<String> = Vec::new();
    let mut rule_index = |rule: &str| -> usize {
        match rules.iter().position(|r| r == rule) {
            Some(i) => i,
            None => {
                rules.push(rule.to_owned());
                rules.len() - 1
            }
        }
    };
    let mut results = Vec::new();
    for f in &report.findings {
        let finding = &f.finding;
        let rule = finding.category.as_str();
        let index = rule_index(rule);
        let mut result = json!({
            "ruleId": rule,
            "ruleIndex": index,
            "level": level(finding.score.get()),
            "message": {"text": format!("{}\n\n{}", finding.title, finding.description)},
            "partialFingerprints": {"bugloopFindingId/v1": finding.id.as_str()},
            "properties": {
                "bugloopId": finding.id.as_str(),
                "score": finding.score.get(),
                "severity": f.severity,
                "priority": f.priority,
            }
        });
        if let Some(file) = &finding.file {
            let mut region = json!({});
            if let Some(line) = finding.line {
                region["startLine"] = json!(line);
                if let Some(end) = finding.end_line {
                    region["endLine"] = json!(end);
                }
                if let Some(code) = &f.code {
                    region["snippet"] = json!({"text": code});
                }
            }
            let mut location = json!({
                "artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}
            });
            if finding.line.is_some() {
                location["region"] = region;
            }
            result["locations"] = json!([{"physicalLocation": location}]);
        }
        results.push(result);
    }
    // Findings still open from earlier runs are part of the change's state too.
    for t in report.open_from_earlier() {
        let index = rule_index("tracked");
        let score = t.score.unwrap_or(5);
        let mut result = json!({
            "ruleId": "tracked",
            "ruleIndex": index,
            "level": level(score),
            "message": {"text": format!("{} ({})", t.title, t.status)},
            "partialFingerprints": {"bugloopFindingId/v1": t.id},
            "properties": {"bugloopId": t.id, "score": score, "status": t.status}
        });
        if let Some(file) = &t.file {
            let mut location = json!({"artifactLocation": {"uri": file, "uriBaseId": "%SRCROOT%"}});
            if let Some(line) = t.line {
                location["region"] = json!({"startLine": line});
            }
            result["locations"] = json!([{"physicalLocation": location}]);
        }
        results.push(result);
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule,
                "name": rule,
                "shortDescription": {"text": rule_description(rule)},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "bugloop",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/bugloop/bugloop",
                "rules": rules,
            }},
            "automationDetails": {"id": format!("bugloop/{}", report.change.key)},
            "results": results,
        }]
    })
}

fn rule_description(rule: &str) -> &'static str {
    match rule {
        "logic" => "Wrong result, missing edge case, off-by-one",
        "security" => "Access control, injection, secrets, cryptography, data exposure",
        "reliability" => "Error handling, resource leaks, crashes",
        "concurrency" => "Races, deadlocks, ordering",
        "data_integrity" => "Corruption or loss of stored data",
        "performance" => "Unnecessary work or complexity",
        "compatibility" => "Breaking public interfaces or contracts",
        "rules" => "Violation of the repository's own rules or architecture",
        "testing" => "Missing or wrong tests",
        "maintainability" => "Naming, redundancy, documentation",
        "tracked" => "A finding raised by an earlier review that is still open",
        _ => "bugloop finding",
    }
}
