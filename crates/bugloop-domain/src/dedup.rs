//! Duplicate detection between findings (pr-reviewer-design.md 4.2, "Deduplication").
//!
//! Two findings are the same problem when they are at the same place, whatever their words:
//! - same file, line ranges at most `line_window` apart (or either without a line), and the same
//!   quoted evidence (equal, or one containing the other, whitespace ignored); or
//! - same file, same place, and at least half of the significant words of the smaller text shared.
//!
//! Evidence is the stronger signal: a model re-reporting a bug paraphrases its title and
//! description freely, but it quotes the same code, which grounding has already checked against
//! head. Words alone still catch re-reports whose quote changed with the code.
//!
//! Candidates come from indexes keyed by (file, word) and (file, line), so comparing 5,000 new
//! findings with 5,000 existing ones never compares all pairs.

use std::collections::{BTreeMap, HashMap, HashSet};

/// Words that carry no meaning for matching findings.
const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few",
    "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him",
    "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "may", "me",
    "might", "more", "most", "must", "my", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so", "some",
    "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your",
];

/// Quoted evidence shorter than this (whitespace removed) identifies no problem: `}` or `else {`
/// are on too many lines to say two findings are about the same code.
pub const MIN_EVIDENCE_CHARS: usize = 6;

/// How findings are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupRule {
    /// Line ranges at most this far apart count as the same place.
    pub line_window: u32,
    /// Minimum share of significant words in common, relative to the smaller word set.
    pub min_overlap: f64,
}

impl Default for DedupRule {
    fn default() -> Self {
        DedupRule {
            line_window: 3,
            min_overlap: 0.5,
        }
    }
}

/// Where a finding is: a file and an optional line range (an end line before the start line is
/// no end line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place<'a> {
    pub file: Option<&'a str>,
    pub line: Option<u32>,
    pub end_line: Option<u32>,
}

impl Place<'_> {
    fn range(&self) -> Option<(u32, u32)> {
        let start = self.line?;
        let end = self.end_line.filter(|end| *end >= start).unwrap_or(start);
        Some((start, end))
    }

    /// Lines between the two ranges (0 when they overlap or either has no line); `None` when the
    /// files differ.
    pub fn distance(&self, other: &Place<'_>) -> Option<u32> {
        if self.file != other.file {
            return None;
        }
        Some(match (self.range(), other.range()) {
            (Some((a_start, a_end)), Some((b_start, b_end))) => {
                if a_end < b_start {
                    b_start - a_end
                } else {
                    a_start.saturating_sub(b_end)
                }
            }
            _ => 0,
        })
    }

    /// Same file and line ranges at most `rule.line_window` apart.
    pub fn same_as(&self, other: &Place<'_>, rule: DedupRule) -> bool {
        self.distance(other)
            .is_some_and(|distance| distance <= rule.line_window)
    }
}

/// Evidence as compared: every whitespace character removed, so re-indented or re-wrapped quotes
/// of the same code are equal. `None` when too short to identify anything.
pub fn evidence_key(evidence: Option<&str>) -> Option<String> {
    let key: String = evidence?.chars().filter(|c| !c.is_whitespace()).collect();
    (key.chars().count() >= MIN_EVIDENCE_CHARS).then_some(key)
}

/// Whether two evidence keys quote the same code: equal, or one contains the other (a finding
/// quoting one line of another's multi-line quote).
pub fn same_evidence(a: &str, b: &str) -> bool {
    a.contains(b) || b.contains(a)
}

/// The lower-cased significant words of a text: alphanumeric runs (with `_`) of two or more
/// characters that are not stop words.
pub fn significant_words(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut words = Vec::new();
    for raw in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if raw.chars().count() < 2 {
            continue;
        }
        let word = raw.to_lowercase();
        if STOP_WORDS.binary_search(&word.as_str()).is_ok() {
            continue;
        }
        if seen.insert(word.clone()) {
            words.push(word);
        }
    }
    words
}

/// Share of words in common relative to the smaller set (0 when either is empty).
pub fn word_overlap(a: &[String], b: &[String]) -> f64 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let large: HashSet<&str> = large.iter().map(String::as_str).collect();
    let common = small.iter().filter(|w| large.contains(w.as_str())).count();
    common as f64 / small.len() as f64
}

/// A finding as the index sees it.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub place: Place<'a>,
    /// Title and description.
    pub text: &'a str,
    pub evidence: Option<&'a str>,
    /// The analyzer and its rule, for an analyzer's finding: one tool's two rules are two
    /// problems, however alike their words and places (another tool's rule may be the same one).
    pub tool_rule: Option<(&'a str, &'a str)>,
}

struct Entry {
    line: Option<(u32, u32)>,
    words: usize,
    evidence: Option<String>,
    tool_rule: Option<(String, String)>,
}

impl Entry {
    /// Whether `finding`, `distance` lines away, is another place of this entry's analyzer: another
    /// of its rules, or its rule at another line (the tool reports each place a rule is broken:
    /// two lines are two problems). Never the same problem.
    fn elsewhere_for_its_tool(&self, finding: Option<(&str, &str)>, distance: u32) -> bool {
        matches!(
            (&self.tool_rule, finding),
            (Some((tool, rule)), Some((their_tool, their_rule)))
                if tool == their_tool && (rule != their_rule || distance > 0)
        )
    }
}

/// An index of findings to match new ones against.
#[derive(Default)]
pub struct DedupIndex {
    files: HashMap<String, u32>,
    vocabulary: HashMap<String, u32>,
    entries: Vec<Entry>,
    postings: HashMap<(u32, u32), Vec<u32>>,
    /// Entries with evidence, by file and start line.
    by_line: BTreeMap<(u32, u32), Vec<u32>>,
    /// Entries with evidence but no line, by file.
    unplaced: HashMap<u32, Vec<u32>>,
    /// The longest range span among entries, so a line lookup knows how far back to start.
    longest_span: u32,
}

impl std::fmt::Debug for DedupIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DedupIndex")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// Why two findings are the same.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MatchReason {
    /// The same quoted evidence at the same place.
    Evidence,
    /// This share of significant words in common at the same place.
    Words(f64),
}

impl std::fmt::Display for MatchReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MatchReason::Evidence => f.write_str("same quoted evidence at the same place"),
            MatchReason::Words(overlap) => write!(f, "{:.0}% word overlap", overlap * 100.0),
        }
    }
}

/// A match: the index of the entry (in insertion order) and why it matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupMatch {
    pub entry: usize,
    pub reason: MatchReason,
}

impl DedupIndex {
    pub fn new() -> Self {
        DedupIndex::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn file_key(&mut self, file: Option<&str>) -> u32 {
        let key = file.unwrap_or("");
        let next = self.files.len() as u32;
        *self.files.entry(key.to_owned()).or_insert(next)
    }

    /// Adds a finding; returns its entry number.
    pub fn insert(&mut self, finding: Candidate<'_>) -> usize {
        let file = self.file_key(finding.place.file);
        let words = significant_words(finding.text);
        let entry = self.entries.len() as u32;
        for word in &words {
            let next = self.vocabulary.len() as u32;
            let token = *self.vocabulary.entry(word.clone()).or_insert(next);
            self.postings.entry((file, token)).or_default().push(entry);
        }
        let range = finding.place.range();
        let evidence = evidence_key(finding.evidence);
        if evidence.is_some() {
            match range {
                Some((start, end)) => {
                    self.longest_span = self.longest_span.max(end - start);
                    self.by_line.entry((file, start)).or_default().push(entry);
                }
                None => self.unplaced.entry(file).or_default().push(entry),
            }
        }
        self.entries.push(Entry {
            line: range,
            words: words.len(),
            evidence,
            tool_rule: finding
                .tool_rule
                .map(|(tool, rule)| (tool.to_owned(), rule.to_owned())),
        });
        entry as usize
    }

    /// Lines between a range and an entry's (0 when either has no line).
    fn distance(range: Option<(u32, u32)>, entry: &Entry) -> u32 {
        let file = Some("");
        Place {
            file,
            line: range.map(|r| r.0),
            end_line: range.map(|r| r.1),
        }
        .distance(&Place {
            file,
            line: entry.line.map(|r| r.0),
            end_line: entry.line.map(|r| r.1),
        })
        .unwrap_or(0)
    }

    /// The best duplicate of a finding among the entries, if any: the same evidence at the same
    /// place first (nearest, then earliest), else the highest word overlap at the same place.
    pub fn find(&self, rule: DedupRule, finding: Candidate<'_>) -> Option<DedupMatch> {
        let file = *self.files.get(finding.place.file.unwrap_or(""))?;
        let range = finding.place.range();
        if let Some(found) = self.find_by_evidence(rule, file, range, &finding) {
            return Some(found);
        }
        let words = significant_words(finding.text);
        let mut shared: HashMap<u32, u32> = HashMap::new();
        for word in &words {
            let Some(token) = self.vocabulary.get(word) else {
                continue;
            };
            for &entry in self.postings.get(&(file, *token)).into_iter().flatten() {
                *shared.entry(entry).or_default() += 1;
            }
        }
        let mut best: Option<(usize, f64, u32)> = None;
        for (entry, common) in shared {
            let Some(candidate) = self.entries.get(entry as usize) else {
                continue;
            };
            let distance = Self::distance(range, candidate);
            if distance > rule.line_window
                || candidate.elsewhere_for_its_tool(finding.tool_rule, distance)
            {
                continue;
            }
            let smaller = words.len().min(candidate.words).max(1);
            let overlap = f64::from(common) / smaller as f64;
            if overlap + f64::EPSILON < rule.min_overlap {
                continue;
            }
            let entry = entry as usize;
            let better = match best {
                None => true,
                Some((current, current_overlap, current_distance)) => {
                    overlap > current_overlap
                        || (overlap == current_overlap && distance < current_distance)
                        || (overlap == current_overlap
                            && distance == current_distance
                            && entry < current)
                }
            };
            if better {
                best = Some((entry, overlap, distance));
            }
        }
        best.map(|(entry, overlap, _)| DedupMatch {
            entry,
            reason: MatchReason::Words(overlap),
        })
    }

    fn find_by_evidence(
        &self,
        rule: DedupRule,
        file: u32,
        range: Option<(u32, u32)>,
        finding: &Candidate<'_>,
    ) -> Option<DedupMatch> {
        let key = evidence_key(finding.evidence)?;
        let nearby: Vec<u32> = match range {
            Some((start, end)) => {
                let from = start.saturating_sub(rule.line_window.saturating_add(self.longest_span));
                let to = end.saturating_add(rule.line_window);
                self.by_line
                    .range((file, from)..=(file, to))
                    .flat_map(|(_, entries)| entries.iter().copied())
                    .chain(self.unplaced.get(&file).into_iter().flatten().copied())
                    .collect()
            }
            // No line: anywhere in the file is the same place.
            None => self
                .by_line
                .range((file, 0)..=(file, u32::MAX))
                .flat_map(|(_, entries)| entries.iter().copied())
                .chain(self.unplaced.get(&file).into_iter().flatten().copied())
                .collect(),
        };
        nearby
            .into_iter()
            .filter_map(|entry| {
                let candidate = self.entries.get(entry as usize)?;
                let distance = Self::distance(range, candidate);
                let same = distance <= rule.line_window
                    && !candidate.elsewhere_for_its_tool(finding.tool_rule, distance)
                    && candidate
                        .evidence
                        .as_deref()
                        .is_some_and(|theirs| same_evidence(theirs, &key));
                same.then_some((distance, entry as usize))
            })
            .min()
            .map(|(_, entry)| DedupMatch {
                entry,
                reason: MatchReason::Evidence,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'a>(file: &'a str, line: u32, text: &'a str, evidence: &'a str) -> Candidate<'a> {
        Candidate {
            place: Place {
                file: Some(file),
                line: Some(line),
                end_line: None,
            },
            text,
            evidence: (!evidence.is_empty()).then_some(evidence),
            tool_rule: None,
        }
    }

    /// The place from `line` to `end_line` in a.rs.
    fn in_a_rs(line: u32, end_line: Option<u32>) -> Place<'static> {
        Place {
            file: Some("a.rs"),
            line: Some(line),
            end_line,
        }
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn words_and_overlap() {
        let a = significant_words("The index is off by one in the parse loop");
        assert_eq!(a, vec!["index", "one", "parse", "loop"]);
        let b = significant_words("parse loop reads one past the index end");
        assert!(word_overlap(&a, &b) >= 0.5);
        assert_eq!(word_overlap(&a, &[]), 0.0);
    }

    #[test]
    fn index_respects_file_and_line_window() {
        let mut index = DedupIndex::new();
        index.insert(at(
            "a.rs",
            10,
            "Null pointer dereference in config loader",
            "",
        ));
        let rule = DedupRule::default();
        let text = "config loader dereferences a null pointer";
        assert!(index.find(rule, at("a.rs", 12, text, "")).is_some());
        assert!(index.find(rule, at("a.rs", 20, text, "")).is_none());
        assert!(index.find(rule, at("b.rs", 10, text, "")).is_none());
        let unplaced = Candidate {
            place: Place {
                file: Some("a.rs"),
                line: None,
                end_line: None,
            },
            text,
            evidence: None,
            tool_rule: None,
        };
        assert!(index.find(rule, unplaced).is_some());
        assert!(
            index
                .find(rule, at("a.rs", 10, "unrelated words entirely", ""))
                .is_none()
        );
    }

    #[test]
    fn same_evidence_at_the_same_place_matches_whatever_the_words() {
        let mut index = DedupIndex::new();
        index.insert(at(
            "src/sum.py",
            4,
            "Off-by-one in loop bound\nThe last element is never added.",
            "for i in range(len(xs) - 1):",
        ));
        let rule = DedupRule::default();
        let paraphrase = "Final item skipped\nSumming stops early and drops data.";
        assert_eq!(
            significant_words("Off-by-one in loop bound\nThe last element is never added.")
                .iter()
                .filter(|w| significant_words(paraphrase).contains(w))
                .count(),
            0,
            "the texts share no word, so only the evidence can match them"
        );
        let found = index.find(
            rule,
            at("src/sum.py", 5, paraphrase, "for i in  range(len(xs)-1):"),
        );
        assert_eq!(
            found,
            Some(DedupMatch {
                entry: 0,
                reason: MatchReason::Evidence
            })
        );
        // One line of a multi-line quote is the same evidence.
        assert!(
            index
                .find(rule, at("src/sum.py", 4, paraphrase, "range(len(xs) - 1)"))
                .is_some()
        );
        // Same evidence elsewhere in the file, or in another file, is another problem.
        assert!(
            index
                .find(
                    rule,
                    at("src/sum.py", 40, paraphrase, "for i in range(len(xs) - 1):")
                )
                .is_none()
        );
        assert!(
            index
                .find(
                    rule,
                    at("src/avg.py", 4, paraphrase, "for i in range(len(xs) - 1):")
                )
                .is_none()
        );
        // Other code at the same place is another problem.
        assert!(
            index
                .find(
                    rule,
                    at("src/sum.py", 4, paraphrase, "total += xs[i] * weight")
                )
                .is_none()
        );
    }

    #[test]
    fn trivial_evidence_identifies_nothing() {
        assert_eq!(evidence_key(Some("  }  ")), None);
        assert_eq!(evidence_key(Some("else {")), None);
        assert_eq!(evidence_key(Some("return x;")).as_deref(), Some("returnx;"));
        let mut index = DedupIndex::new();
        index.insert(at("a.rs", 3, "Missing null check", "}"));
        assert!(
            index
                .find(DedupRule::default(), at("a.rs", 3, "Leaked lock", "}"))
                .is_none()
        );
    }

    #[test]
    fn ranges_that_overlap_are_the_same_place() {
        let rule = DedupRule::default();
        let long = in_a_rs(10, Some(40));
        let inside = in_a_rs(30, None);
        let after = in_a_rs(44, Some(50));
        let far = in_a_rs(45, None);
        assert_eq!(long.distance(&inside), Some(0));
        assert!(long.same_as(&inside, rule));
        assert_eq!(long.distance(&after), Some(4));
        assert_eq!(after.distance(&long), Some(4));
        assert!(!long.same_as(&far, rule));
        assert_eq!(
            long.distance(&Place {
                file: Some("b.rs"),
                ..long
            }),
            None
        );
        // An end line before the start line is no end line.
        let reversed = in_a_rs(30, Some(0));
        assert_eq!(reversed.distance(&far), Some(15));

        // A long range found through the line index from a line near its end.
        let mut index = DedupIndex::new();
        index.insert(Candidate {
            place: long,
            text: "Lock held across await",
            evidence: Some("let guard = state.lock().await;"),
            tool_rule: None,
        });
        let near_end = at(
            "a.rs",
            42,
            "Deadlock risk",
            "let guard = state.lock().await;",
        );
        assert!(index.find(rule, near_end).is_some());
    }
}
