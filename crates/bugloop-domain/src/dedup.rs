//! Duplicate detection between findings: same file, nearby line, and at least half of the
//! significant words shared (pr-reviewer-design.md 4.2, "Deduplication").
//!
//! Candidates come from an inverted index keyed by (file, word), so comparing 5,000 new findings
//! with 5,000 existing ones never compares all pairs: only findings in the same file that share a
//! significant word are ever scored.

use std::collections::{HashMap, HashSet};

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

/// How findings are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupRule {
    /// Lines at most this far apart count as the same place.
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

struct Entry {
    line: Option<u32>,
    words: usize,
}

/// An index of findings to match new ones against.
#[derive(Default)]
pub struct DedupIndex {
    files: HashMap<String, u32>,
    vocabulary: HashMap<String, u32>,
    entries: Vec<Entry>,
    postings: HashMap<(u32, u32), Vec<u32>>,
}

impl std::fmt::Debug for DedupIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DedupIndex")
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// A match: the index of the entry (in insertion order) and its word overlap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DedupMatch {
    pub entry: usize,
    pub overlap: f64,
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
    pub fn insert(&mut self, file: Option<&str>, line: Option<u32>, text: &str) -> usize {
        let file = self.file_key(file);
        let words = significant_words(text);
        let entry = self.entries.len() as u32;
        for word in &words {
            let next = self.vocabulary.len() as u32;
            let token = *self.vocabulary.entry(word.clone()).or_insert(next);
            self.postings.entry((file, token)).or_default().push(entry);
        }
        self.entries.push(Entry {
            line,
            words: words.len(),
        });
        entry as usize
    }

    /// The best duplicate of a finding among the entries, if any.
    pub fn find(
        &self,
        rule: DedupRule,
        file: Option<&str>,
        line: Option<u32>,
        text: &str,
    ) -> Option<DedupMatch> {
        let file = *self.files.get(file.unwrap_or(""))?;
        let words = significant_words(text);
        let mut shared: HashMap<u32, u32> = HashMap::new();
        for word in &words {
            let Some(token) = self.vocabulary.get(word) else {
                continue;
            };
            for &entry in self.postings.get(&(file, *token)).into_iter().flatten() {
                *shared.entry(entry).or_default() += 1;
            }
        }
        let mut best: Option<(DedupMatch, u32)> = None;
        for (entry, common) in shared {
            let Some(candidate) = self.entries.get(entry as usize) else {
                continue;
            };
            let distance = match (line, candidate.line) {
                (Some(a), Some(b)) => a.abs_diff(b),
                _ => 0,
            };
            if distance > rule.line_window {
                continue;
            }
            let smaller = words.len().min(candidate.words).max(1);
            let overlap = f64::from(common) / smaller as f64;
            if overlap + f64::EPSILON < rule.min_overlap {
                continue;
            }
            let found = DedupMatch {
                entry: entry as usize,
                overlap,
            };
            let better = match best {
                None => true,
                Some((current, current_distance)) => {
                    overlap > current.overlap
                        || (overlap == current.overlap && distance < current_distance)
                        || (overlap == current.overlap
                            && distance == current_distance
                            && found.entry < current.entry)
                }
            };
            if better {
                best = Some((found, distance));
            }
        }
        best.map(|(found, _)| found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        index.insert(
            Some("a.rs"),
            Some(10),
            "Null pointer dereference in config loader",
        );
        let rule = DedupRule::default();
        let text = "config loader dereferences a null pointer";
        assert!(index.find(rule, Some("a.rs"), Some(12), text).is_some());
        assert!(index.find(rule, Some("a.rs"), Some(20), text).is_none());
        assert!(index.find(rule, Some("b.rs"), Some(10), text).is_none());
        assert!(index.find(rule, Some("a.rs"), None, text).is_some());
        assert!(
            index
                .find(rule, Some("a.rs"), Some(10), "unrelated words entirely")
                .is_none()
        );
    }
}
