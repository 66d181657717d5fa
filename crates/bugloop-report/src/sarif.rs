//! The SARIF 2.1.0 renderer of the review report, for code scanning (the GitHub Action uploads
//! it). What GitHub Advanced Security requires is checked with Microsoft's SARIF Multitool in the
//! tests (rule kinds `Sarif` and `Gh`, no error and no warning): every rule has a name, a full
//! description and help; every result has a location; security findings carry
//! `security-severity`. A finding's fingerprint is its id, which bugloop keeps for the same
//! problem across runs and line moves, so an edit above it never closes and reopens its alert.

use bugloop_domain::finding::FindingSource;
use serde_json::{Value, json};

use crate::review::{FindingProof, ProofStatus, PublishedFinding, ReviewReport, TrackedFinding};

fn level(score: u8) -> &'static str {
    match score {
        7..=10 => "error",
        5..=6 => "warning",
        _ => "note",
    }
}

/// A rule: one per category, and one for findings still open from earlier runs.
struct Rule {
    id: &'static str,
    /// A Pascal-case name, as SARIF's conventions ask.
    name: &'static str,
    short: &'static str,
    full: &'static str,
}

const RULES: [Rule; 11] = [
    Rule {
        id: "logic",
        name: "LogicError",
        short: "Wrong result, missing edge case, off-by-one",
        full: "The code computes a wrong result or fails on inputs it should handle: a wrong condition, an off-by-one, a missing edge case (empty, null, zero, overflow).",
    },
    Rule {
        id: "security",
        name: "SecurityVulnerability",
        short: "Access control, injection, secrets, cryptography, data exposure",
        full: "The change lets someone read, change or run what they should not: missing authorization, injection, secrets in code, weak cryptography, data exposure.",
    },
    Rule {
        id: "reliability",
        name: "ReliabilityRisk",
        short: "Error handling, resource leaks, crashes",
        full: "The code fails badly when something goes wrong: errors ignored or swallowed, resources not released, crashes on unexpected input.",
    },
    Rule {
        id: "concurrency",
        name: "ConcurrencyHazard",
        short: "Races, deadlocks, ordering",
        full: "Concurrent use breaks the code: data races, deadlocks, lost updates, order assumed where none is guaranteed.",
    },
    Rule {
        id: "data_integrity",
        name: "DataIntegrityRisk",
        short: "Corruption or loss of stored data",
        full: "Stored data can be corrupted or lost: partial writes, unsafe migrations, missing constraints or transactions.",
    },
    Rule {
        id: "performance",
        name: "PerformanceProblem",
        short: "Unnecessary work or complexity",
        full: "The code does much more work than it needs to: repeated passes, nested loops over large inputs, needless allocation or I/O.",
    },
    Rule {
        id: "compatibility",
        name: "CompatibilityBreak",
        short: "Breaking public interfaces or contracts",
        full: "The change breaks what callers rely on: a public interface, a wire or file format, documented behaviour.",
    },
    Rule {
        id: "rules",
        name: "RepositoryRuleViolation",
        short: "Violation of the repository's own rules or architecture",
        full: "The change goes against the repository's own rules (AGENTS.md and the like) or its architecture.",
    },
    Rule {
        id: "testing",
        name: "TestingGap",
        short: "Missing or wrong tests",
        full: "A behaviour the change adds or alters is not tested, or a test does not check what it claims to.",
    },
    Rule {
        id: "maintainability",
        name: "MaintainabilityIssue",
        short: "Naming, redundancy, documentation",
        full: "The code is harder to read or change than it needs to be: misleading names, duplication, missing documentation of something complex.",
    },
    Rule {
        id: "tracked",
        name: "OpenEarlierFinding",
        short: "A finding raised by an earlier review that is still open",
        full: "A finding an earlier review of this change raised that is not resolved yet; its thread in the pull request has the discussion.",
    },
];

/// How every rule's help explains a finding's score.
const SCORE_HELP: &str = "Each finding has a score from 1 to 10 on bugloop's rubric: 1-2 nit-picks, 3-4 quality and maintenance, 5-6 best practices and efficiency, 7-8 logic, edge cases and rule violations, 9-10 critical failures (major bugs, security leaks, systemic catastrophes). Findings below the configured threshold are not published. The result's level follows the score: error from 7, warning at 5-6, note below.";

fn rule_of(id: &str) -> &'static Rule {
    RULES.iter().find(|rule| rule.id == id).unwrap_or(&RULES[0])
}

fn rule_json(rule: &Rule, security_severity: Option<u8>) -> Value {
    let mut value = json!({
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": format!("{}.", rule.short)},
        "fullDescription": {"text": rule.full},
        "help": {
            "text": format!("{} {SCORE_HELP}", rule.full),
            "markdown": format!("**{}**\n\n{}\n\n{SCORE_HELP}", rule.short, rule.full),
        },
    });
    if let Some(score) = security_severity {
        value["properties"] = json!({
            "tags": ["security"],
            "security-severity": severity_text(score),
        });
    }
    value
}

/// Where people learn about bugloop: the project's own metadata (the workspace's `homepage`, else
/// its `repository`), never a URL written here.
fn information_uri() -> Option<&'static str> {
    [
        option_env!("CARGO_PKG_HOMEPAGE"),
        option_env!("CARGO_PKG_REPOSITORY"),
    ]
    .into_iter()
    .flatten()
    .find(|uri| !uri.is_empty())
}

/// GitHub ranks security alerts by `security-severity`, a number from 0.0 to 10.0 in a string.
fn severity_text(score: u8) -> String {
    format!("{score}.0")
}

/// What a path keeps unencoded in a URI: RFC 3986's unreserved characters and `/`.
const PATH_URI: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// A repository path as a relative URI: its bytes on disk (a name that is not UTF-8 is shown in
/// git's quoted form) percent-encoded, so `with space.py` is `with%20space.py` and `bad\377.py`
/// is `bad%FF.py`.
fn uri(path: &str) -> String {
    let bytes = bugloop_domain::paths::path_bytes(path).unwrap_or_else(|| path.as_bytes().to_vec());
    percent_encoding::percent_encode(&bytes, PATH_URI).to_string()
}

/// A result's place in the code; `None` for a finding about no file (GitHub requires one).
fn location(file: &str, line: Option<u32>, end_line: Option<u32>, code: Option<&str>) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": uri(file), "uriBaseId": "%SRCROOT%"}});
    if let Some(line) = line {
        let mut region = json!({"startLine": line});
        if let Some(end) = end_line.filter(|end| *end >= line) {
            region["endLine"] = json!(end);
        }
        if let Some(code) = code {
            region["snippet"] = json!({"text": code});
        }
        physical["region"] = region;
    }
    json!([{"physicalLocation": physical}])
}

/// SARIF 2.1.0: one run, a rule per category used, a result per open finding with a place in the
/// code. Findings about no file cannot be code scanning alerts; they are reported as the run's
/// notifications instead, so nothing is left out.
pub fn review(report: &ReviewReport) -> Value {
    let mut collected = Collected::default();
    for f in &report.findings {
        collected.add_finding(report, f);
    }
    // Findings still open from earlier runs are part of the change's state too.
    for t in report.open_from_earlier() {
        collected.add_earlier(t);
    }
    sarif_log(report, &collected)
}

/// What the findings come to, gathered in the report's order: the rules used (in order of first
/// use, since a result names its rule by index, each with the highest security score seen), the
/// results, and the findings about no file, which become notifications.
#[derive(Default)]
struct Collected {
    used: Vec<(UsedRule, Option<u8>)>,
    results: Vec<Value>,
    unplaced: Vec<String>,
}

/// A rule a result names: one of bugloop's categories, or a static analyzer's rule (`ruff/S608`)
/// with the tool's page for it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UsedRule {
    Category(&'static str),
    Tool {
        id: String,
        tool: String,
        rule: String,
        url: Option<String>,
        category: &'static str,
    },
}

impl UsedRule {
    /// The rule a finding of `category` is filed under: a finding on a tool's hit under the
    /// tool's rule, with its page.
    fn of(category: &'static Rule, source: Option<&FindingSource>) -> UsedRule {
        match source {
            Some(source) => UsedRule::Tool {
                // zizmor names its rules `zizmor/template-injection`: the tool is said once.
                id: if source.rule.starts_with(&format!("{}/", source.tool)) {
                    source.rule.clone()
                } else {
                    format!("{}/{}", source.tool, source.rule)
                },
                tool: source.tool.clone(),
                rule: source.rule.clone(),
                url: source.url.clone(),
                category: category.id,
            },
            None => UsedRule::Category(category.id),
        }
    }

    fn id(&self) -> &str {
        match self {
            UsedRule::Category(id) => id,
            UsedRule::Tool { id, .. } => id,
        }
    }

    fn to_json(&self, security: Option<u8>) -> Value {
        match self {
            UsedRule::Category(id) => rule_json(rule_of(id), security),
            UsedRule::Tool {
                id,
                tool,
                rule,
                url,
                category,
            } => tool_rule_json(id, tool, rule, url.as_deref(), rule_of(category), security),
        }
    }
}

/// A static analyzer's rule: named after the tool and the rule, described by the category bugloop
/// files it under, with the tool's page as its help.
fn tool_rule_json(
    id: &str,
    tool: &str,
    rule: &str,
    url: Option<&str>,
    category: &Rule,
    security_severity: Option<u8>,
) -> Value {
    let name: String = id
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    let page = url
        .map(|u| format!(" Its documentation: {u}"))
        .unwrap_or_default();
    let full = format!(
        "{tool}'s rule {rule}, which bugloop counts as {}: {}{page}",
        category.short.to_lowercase(),
        category.full
    );
    let mut value = json!({
        "id": id,
        "name": name,
        "shortDescription": {"text": format!("{tool} {rule}.")},
        "fullDescription": {"text": full},
        "help": {
            "text": format!("{full} {SCORE_HELP}"),
            "markdown": format!("**{tool} {rule}**\n\n{full}\n\n{SCORE_HELP}"),
        },
    });
    if let Some(url) = url {
        value["helpUri"] = json!(url);
    }
    if let Some(score) = security_severity {
        value["properties"] = json!({
            "tags": ["security"],
            "security-severity": severity_text(score),
        });
    }
    value
}

impl Collected {
    /// The index of rule `id` in the run's rules, adding it on first use; a security finding
    /// raises the rule's `security-severity` to its score when that is higher.
    fn use_rule(&mut self, used: UsedRule, security_score: Option<u8>) -> usize {
        match self
            .used
            .iter()
            .position(|(rule, _)| rule.id() == used.id())
        {
            Some(index) => {
                let highest = self.used[index].1.max(security_score);
                self.used[index].1 = highest;
                index
            }
            None => {
                self.used.push((used, security_score));
                self.used.len() - 1
            }
        }
    }

    /// A finding of this review: a result when it is about a file, else a notification's text.
    fn add_finding(&mut self, report: &ReviewReport, f: &PublishedFinding) {
        let finding = &f.finding;
        let rule = rule_of(finding.category.as_str());
        let score = finding.score.get();
        let Some(file) = &finding.file else {
            self.unplaced.push(format!(
                "{} ({}, score {score}): {}",
                finding.title, rule.id, finding.description
            ));
            return;
        };
        let security = (rule.id == "security").then_some(score);
        let used = UsedRule::of(rule, finding.source.as_ref());
        let rule_id = used.id().to_owned();
        let index = self.use_rule(used, security);
        self.results
            .push(finding_result(report, f, &rule_id, file, index, security));
    }

    /// A finding an earlier run raised that is still open: a result about a file under the rule
    /// it was first filed under (its category's, or its tool's), so code scanning keeps one
    /// alert for it from review to review; under the `tracked` rule where its comment does not
    /// record its category (written by an older version); else a notification's text.
    fn add_earlier(&mut self, t: &TrackedFinding) {
        let score = t.score.unwrap_or(5);
        let Some(file) = &t.file else {
            self.unplaced.push(format!(
                "{} (still open, {}, score {score})",
                t.title, t.status
            ));
            return;
        };
        let (used, security) = match t.category {
            Some(category) => {
                let rule = rule_of(category.as_str());
                let security = (rule.id == "security").then_some(score);
                (UsedRule::of(rule, t.source.as_ref()), security)
            }
            None => (UsedRule::Category("tracked"), None),
        };
        let rule_id = used.id().to_owned();
        let index = self.use_rule(used, security);
        self.results.push(json!({
            "ruleId": rule_id,
            "ruleIndex": index,
            "level": level(score),
            // As the first review filed it: code scanning shows the alert's latest message.
            "message": {"text": match &t.description {
                Some(description) => format!("{} ({})\n\n{description}", t.title, t.status),
                None => format!("{} ({}).", t.title, t.status),
            }},
            "locations": location(file, t.line, None, None),
            "partialFingerprints": {"bugloopFindingId/v1": t.id},
            "properties": {"bugloopId": t.id, "score": score, "status": t.status},
        }));
    }
}

/// A finding of this review about `file` as a result under rule `index`. A proven finding ranks
/// higher and points at the test that proves it, so code scanning shows the proven ones first.
fn finding_result(
    report: &ReviewReport,
    f: &PublishedFinding,
    rule_id: &str,
    file: &str,
    index: usize,
    security: Option<u8>,
) -> Value {
    let finding = &f.finding;
    let score = finding.score.get();
    let proof = report.proofs.iter().find(|p| p.id == finding.id.as_str());
    let proven = proof.is_some_and(|p| p.status == ProofStatus::Proven);
    let mut result = json!({
        "ruleId": rule_id,
        "ruleIndex": index,
        "level": level(score),
        "message": {"text": format!("{}\n\n{}", finding.title, finding.description)},
        "locations": location(file, finding.line, finding.end_line, f.code.as_deref()),
        "partialFingerprints": {"bugloopFindingId/v1": finding.id.as_str()},
        "properties": finding_properties(f, proof, proven, security),
    });
    if proven {
        result["rank"] = json!((f64::from(score) * 10.0 + 5.0).min(100.0));
        if let Some(test) = proof.and_then(|p| p.test_path.as_deref()) {
            result["relatedLocations"] = json!([{
                "id": 1,
                "physicalLocation": {"artifactLocation": {"uri": uri(test)}},
                "message": {"text": "The test that fails at head because of this problem (written by bugloop, not in the repository)"},
            }]);
        }
    }
    result
}

/// A result's properties: bugloop's id, score, severity and priority, the security severity
/// GitHub ranks security alerts by, and what the proof came to when there was one.
fn finding_properties(
    f: &PublishedFinding,
    proof: Option<&FindingProof>,
    proven: bool,
    security: Option<u8>,
) -> Value {
    let finding = &f.finding;
    let mut properties = json!({
        "bugloopId": finding.id.as_str(),
        "score": finding.score.get(),
        "severity": f.severity,
        "priority": f.priority,
    });
    if let Some(score) = security {
        // A proven security finding ranks higher; nothing else changes its severity.
        let shown = if proven {
            score.saturating_add(1).min(10)
        } else {
            score
        };
        properties["security-severity"] = json!(severity_text(shown));
    }
    if let Some(source) = &finding.source {
        properties["source"] =
            json!({"tool": source.tool, "rule": source.rule, "model": source.model});
    }
    if let Some(proof) = proof {
        properties["proof"] = json!(proof.status);
        properties["proven"] = json!(proven);
    }
    properties
}

/// The SARIF log around what was collected: the tool with the rules used, the invocation with
/// the findings about no file as notifications, and the results.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// bugloop as SARIF's tool, with the rules its results name.
fn driver(rules: &[Value]) -> Value {
    let mut driver = json!({
        "name": "bugloop",
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rules,
    });
    if let Some(uri) = information_uri() {
        driver["informationUri"] = json!(uri);
    }
    driver
}

/// A valid log of a run that reviewed nothing (an empty change): no results, and why as a note,
/// so `--format sarif > file` always leaves a file an upload can read.
pub fn nothing_reviewed(reason: &str) -> Value {
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver(&[])},
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": [{"level": "note", "message": {"text": reason}}],
            }],
            "results": [],
        }]
    })
}

fn sarif_log(report: &ReviewReport, collected: &Collected) -> Value {
    let rules: Vec<Value> = collected
        .used
        .iter()
        .map(|(used, security)| used.to_json(*security))
        .collect();
    let notifications: Vec<Value> = collected
        .unplaced
        .iter()
        .map(|text| {
            json!({
                "level": "note",
                "message": {"text": format!("A finding about no file in particular: {text}")},
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver(&rules)},
            "invocations": [{
                "executionSuccessful": report.complete,
                "toolExecutionNotifications": notifications,
            }],
            "automationDetails": {"id": format!("bugloop/{}", report.change.key)},
            "results": collected.results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_uris() {
        assert_eq!(uri("src/app.py"), "src/app.py");
        assert_eq!(uri("docs/with space #1.md"), "docs/with%20space%20%231.md");
        assert_eq!(uri("caf\u{e9}.txt"), "caf%C3%A9.txt");
        // Not UTF-8, in git's quoted form: the bytes on disk.
        assert_eq!(uri(r#""bad\377.py""#), "bad%FF.py");
    }

    #[test]
    fn a_tools_rule_is_named_with_the_tool_once() {
        let source = |tool: &str, rule: &str| FindingSource {
            tool: tool.to_owned(),
            rule: rule.to_owned(),
            url: None,
            model: false,
        };
        let security = rule_of("security");
        let id = |tool, rule| {
            UsedRule::of(security, Some(&source(tool, rule)))
                .id()
                .to_owned()
        };
        assert_eq!(id("ruff", "S608"), "ruff/S608");
        assert_eq!(
            id("zizmor", "zizmor/template-injection"),
            "zizmor/template-injection"
        );
        assert_eq!(UsedRule::of(security, None).id(), "security");
    }
}
