//! What a tool reported (a [`Hit`]) and what bugloop makes of a hit on the change's lines (a
//! [`Candidate`], which becomes a finding).

use bugloop_domain::finding::{Category, Finding, FindingId, FindingSource};
use bugloop_domain::markdown::{plain_https, quiet};
use bugloop_domain::score::Score;
use serde::Serialize;

use crate::weight::Weight;

/// How serious the tool says a hit is (SARIF's levels; other formats are mapped onto them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Note,
    Warning,
    Error,
}

impl Level {
    /// SARIF's `level` (absent means `warning`, as SARIF says).
    pub fn from_sarif(level: Option<&str>) -> Level {
        match level {
            Some("error") => Level::Error,
            Some("note" | "none") => Level::Note,
            _ => Level::Warning,
        }
    }
}

/// One diagnostic as a tool reported it, its path relative to the repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub rule: String,
    pub level: Level,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub end_line: Option<u32>,
    /// The tool's page for the rule.
    pub url: Option<String>,
    /// The tool tags the rule as a security rule.
    pub security: bool,
    /// Why the rule's tool says what it finds is wrong, from its own documentation of the rule
    /// (ruff's "Why is this bad?"), for a reader of a finding no model explained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Hit {
    /// A hit of `rule` at `level` saying `message`, on the first line of a file `a`: what a rule
    /// set weighs (its judges read the rule, level and message alone).
    pub(crate) fn of_rule(rule: &str, level: Level, message: &str) -> Hit {
        Hit::at(rule, level, ("a", 1), message.to_owned())
    }

    /// A hit of `rule` at `level` on `file`'s `line`, saying `message` (bugloop's own checks).
    pub(crate) fn at(rule: &str, level: Level, (file, line): (&str, u32), message: String) -> Hit {
        Hit {
            rule: rule.to_owned(),
            level,
            message,
            file: file.to_owned(),
            line,
            end_line: None,
            url: None,
            security: false,
            why: None,
        }
    }
}

/// Keeps each diagnostic a tool said twice once (clippy checks a library twice, as a library and
/// as its tests, and says the same warning of each): the same rule, place and message.
pub(crate) fn said_once(hits: &mut Vec<Hit>) {
    let mut seen = std::collections::HashSet::new();
    hits.retain(|hit| {
        seen.insert((
            hit.rule.clone(),
            hit.file.clone(),
            hit.line,
            hit.end_line,
            hit.message.clone(),
        ))
    });
}

/// A hit on the change's lines that bugloop's rule set counts as a bug: a finding to triage or
/// publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    pub tool: String,
    pub hit: Hit,
    pub score: Score,
    pub category: Category,
    /// The line at head the hit is on (the finding's grounded evidence).
    pub evidence: String,
    /// What else bugloop knows of this place: the change also silenced the check here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// On a line the change does not edit, of a file that imports the change: the tool did not
    /// report it at the base, so the change broke it ([`crate::breakage`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unedited: bool,
    /// The other places the tool reports the same at (files and lines), said in the note: one
    /// cause broke them all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_at: Vec<(String, u32)>,
}

/// Longest tool message kept in a title.
const MAX_TITLE_CHARS: usize = 160;

impl Candidate {
    /// A candidate of `tool` (an analyzer, or one of bugloop's own checks): `hit` at `weight`,
    /// quoting `evidence`.
    pub(crate) fn said(
        tool: &str,
        hit: Hit,
        (weight, category): (Weight, Category),
        evidence: String,
    ) -> Candidate {
        Candidate {
            tool: tool.to_owned(),
            hit,
            score: Score::saturating(i64::from(weight.score())),
            category,
            evidence,
            note: None,
            unedited: false,
            also_at: Vec::new(),
        }
    }

    /// A stable id: the tool, the rule and the place (`ruff-S608-app-db.py-12`).
    pub fn id(&self) -> FindingId {
        // clippy names its lints `clippy::name`: the tool is said once.
        let rule = self
            .hit
            .rule
            .strip_prefix(&format!("{}::", self.tool))
            .unwrap_or(&self.hit.rule);
        FindingId::new(format!(
            "{}-{rule}-{}-{}",
            self.tool, self.hit.file, self.hit.line
        ))
    }

    /// The finding this candidate is published as when no model explains it: the tool's
    /// message (quoted as data, neutralised); its source names the rule and its page, which
    /// every rendering shows once ("found by").
    pub fn to_finding(&self) -> Finding {
        // One line, no live mention, no comment opener, no fence: a tool's message is data.
        let message = quiet(&crate::keys::mask_keys(&self.hit.message)).replace("``", "''");
        let mut title: String = message.chars().take(MAX_TITLE_CHARS).collect();
        // The title is the message; the description repeats it only when the title had to cut it.
        let said = if title.len() < message.len() {
            title.push('…');
            format!(": {message}")
        } else {
            ".".to_owned()
        };
        // The tool's word on why its rule matters, as data like its message.
        let why = self
            .hit
            .why
            .as_deref()
            .map(|why| format!(" Why: {}", quiet(why).replace("``", "''")))
            .unwrap_or_default();
        Finding {
            id: self.id(),
            title,
            description: format!(
                "{} reports this {}{said}{why}{}",
                self.tool,
                if self.unedited {
                    "on a line this change does not edit, and did not before the change: the \
                     change breaks this file, which uses what it edits"
                } else {
                    "on a line this change adds"
                },
                self.note
                    .as_deref()
                    .map(|note| format!("\n\n{}", quiet(note)))
                    .unwrap_or_default()
            ),
            file: Some(self.hit.file.clone()),
            line: Some(self.hit.line),
            end_line: self.hit.end_line.filter(|end| *end > self.hit.line),
            score: self.score,
            category: self.category,
            evidence: Some(self.evidence.clone()),
            suggestion: None,
            source: Some(self.source()),
        }
    }

    /// Adds `said` to what is noted on this hit, after what was noted before.
    pub(crate) fn add_note(&mut self, said: String) {
        self.note = Some(match self.note.take() {
            Some(earlier) => format!("{earlier}\n\n{said}"),
            None => said,
        });
    }

    /// What folding this hit into another says there: `also`, after what was noted on this one
    /// (the change also silenced a check here), which stays said.
    pub(crate) fn folded_as(&self, also: String) -> String {
        match &self.note {
            Some(note) => format!("{note}\n\n{also}"),
            None => also,
        }
    }

    pub fn source(&self) -> FindingSource {
        FindingSource {
            tool: self.tool.clone(),
            rule: self.hit.rule.clone(),
            url: self.hit.url.clone().filter(|u| plain_https(u)),
            model: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(message: &str) -> Candidate {
        Candidate {
            tool: "ruff".into(),
            hit: Hit {
                rule: "S608".into(),
                level: Level::Error,
                message: message.into(),
                file: "app/db.py".into(),
                line: 3,
                end_line: Some(3),
                url: Some("https://docs.astral.sh/ruff/rules/hardcoded-sql-expression".into()),
                security: true,
                why: None,
            },
            score: Score::saturating(8),
            category: Category::Security,
            evidence: "conn.execute(\"SELECT \" + name)".into(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        }
    }

    #[test]
    fn a_diagnostic_said_twice_is_one_hit() {
        let hit = candidate("NaN cannot be compared").hit;
        let mut elsewhere = hit.clone();
        elsewhere.line += 1;
        let mut other_rule = hit.clone();
        other_rule.rule = "S609".into();
        let mut hits = vec![
            hit.clone(),
            hit.clone(),
            elsewhere.clone(),
            other_rule.clone(),
            hit.clone(),
        ];
        said_once(&mut hits);
        assert_eq!(hits, vec![hit, elsewhere, other_rule]);
    }

    #[test]
    fn a_finding_names_its_tool_rule_and_page() {
        let finding =
            candidate("Possible SQL injection vector through string-based query construction")
                .to_finding();
        assert_eq!(finding.id.as_str(), "ruff-S608-app/db.py-3");
        assert_eq!(finding.line, Some(3));
        assert_eq!(finding.end_line, None);
        assert!(finding.description.starts_with("ruff reports this"));
        let source = finding.source.unwrap();
        assert_eq!(
            (source.tool.as_str(), source.rule.as_str()),
            ("ruff", "S608")
        );
        assert_eq!(
            source.url.as_deref(),
            Some("https://docs.astral.sh/ruff/rules/hardcoded-sql-expression")
        );
    }

    #[test]
    fn the_message_is_said_once_unless_the_title_cut_it() {
        let short = candidate("Possible SQL injection").to_finding();
        assert_eq!(short.title, "Possible SQL injection");
        assert!(!short.description.contains("Possible SQL injection"));
        assert!(
            short.description.ends_with("on a line this change adds."),
            "{}",
            short.description
        );
        let message = "x".repeat(MAX_TITLE_CHARS + 40);
        let long = candidate(&message).to_finding();
        assert!(long.title.ends_with('…'));
        assert!(
            long.description.ends_with(&format!("adds: {message}")),
            "{}",
            long.description
        );
        // The tool's own word on why its rule matters follows, as data.
        let mut explained = candidate("Possible SQL injection");
        explained.hit.why = Some("Building SQL from strings @octocat lets input run.".into());
        let finding = explained.to_finding();
        assert!(
            finding
                .description
                .ends_with("on a line this change adds. Why: Building SQL from strings @\u{2060}octocat lets input run."),
            "{}",
            finding.description
        );
    }

    #[test]
    fn a_tools_rule_and_page_are_data_too() {
        let mut hostile = candidate("m");
        hostile.hit.rule =
            "x` @octocat [pwn](https://evil.example)\n```suggestion\nevil()\n```".into();
        hostile.hit.url = Some("https://x/\n```suggestion".into());
        let finding = hostile.to_finding();
        for forbidden in ["\n", "```", "@octocat", "[pwn]"] {
            assert!(
                !finding.description.contains(forbidden),
                "{}",
                finding.description
            );
        }
        assert_eq!(finding.source.unwrap().url, None);
    }

    #[test]
    fn a_tools_message_is_data() {
        let finding =
            candidate("@admin please <!-- bugloop:finding_id:\"x\" --> ```rmcoc\n{}\n```")
                .to_finding();
        for text in [&finding.title, &finding.description] {
            assert!(!text.contains("@admin"), "{text}");
            assert!(!text.contains('\n'), "{text}");
            assert!(!text.contains("<!--"), "{text}");
            assert!(!text.contains("```rmcoc"), "{text}");
        }
        assert!(!finding.title.contains('\n'));
    }
}
