//! Hidden markers that tie a comment to a finding:
//! `<!-- bugloop finding_id:"<id>" resolved:true|false -->`.
//!
//! The prefix is configurable; legacy prefixes (by default `copilot-bugbot`) are read too, so a
//! repository that used that tool keeps its findings, and are rewritten to the current prefix
//! whenever bugloop updates a marker.

use serde::{Deserialize, Serialize};

use crate::finding::FindingId;

/// The default marker prefix.
pub const DEFAULT_MARKER_PREFIX: &str = "bugloop";
/// The prefix of the tool bugloop's markers descend from; read, never written.
pub const LEGACY_MARKER_PREFIX: &str = "copilot-bugbot";

/// Which marker prefixes to write and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerSyntax {
    prefix: String,
    legacy: Vec<String>,
}

impl Default for MarkerSyntax {
    fn default() -> Self {
        MarkerSyntax {
            prefix: DEFAULT_MARKER_PREFIX.to_owned(),
            legacy: vec![LEGACY_MARKER_PREFIX.to_owned()],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "marker prefix {0:?} is not allowed: use 1-64 characters from letters, digits, '-', '_' and '.'"
)]
pub struct InvalidMarkerPrefix(pub String);

impl MarkerSyntax {
    pub fn new(prefix: &str, legacy: &[String]) -> Result<Self, InvalidMarkerPrefix> {
        for candidate in std::iter::once(prefix).chain(legacy.iter().map(String::as_str)) {
            let valid = !candidate.is_empty()
                && candidate.len() <= 64
                && candidate
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !candidate.contains("--");
            if !valid {
                return Err(InvalidMarkerPrefix(candidate.to_owned()));
            }
        }
        Ok(MarkerSyntax {
            prefix: prefix.to_owned(),
            legacy: legacy.iter().filter(|p| *p != prefix).cloned().collect(),
        })
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn accepts(&self, prefix: &str) -> bool {
        prefix == self.prefix || self.legacy.iter().any(|p| p == prefix)
    }

    /// `<!-- <prefix> finding_id:"<id>" resolved:<bool> -->`.
    pub fn build(&self, id: &FindingId, resolved: bool) -> String {
        format!(
            "<!-- {} finding_id:\"{}\" resolved:{} -->",
            self.prefix,
            id.as_str(),
            resolved
        )
    }

    /// Every well-formed marker in `body` with an accepted prefix, in order. Malformed candidates
    /// are skipped: a marker is data from a comment and anyone can type one.
    pub fn parse_all(&self, body: &str) -> Vec<Marker> {
        let mut found = Vec::new();
        let mut from = 0;
        while let Some(rel) = body.get(from..).and_then(|rest| rest.find("<!--")) {
            let start = from + rel;
            match self.parse_at(body, start) {
                Some(marker) => {
                    from = marker.span.1;
                    found.push(marker);
                }
                None => from = start + 4,
            }
        }
        found
    }

    /// Rewrites every marker for `id` to `resolved` (and to the current prefix). `None` when the
    /// body has no marker for `id`.
    pub fn replace(&self, body: &str, id: &FindingId, resolved: bool) -> Option<String> {
        let markers = self.parse_all(body);
        let mut out = String::with_capacity(body.len());
        let mut last = 0;
        let mut replaced = false;
        for marker in markers.iter().filter(|m| &m.finding_id == id) {
            out.push_str(body.get(last..marker.span.0)?);
            out.push_str(&self.build(id, resolved));
            last = marker.span.1;
            replaced = true;
        }
        if !replaced {
            return None;
        }
        out.push_str(body.get(last..)?);
        Some(out)
    }

    fn parse_at(&self, body: &str, start: usize) -> Option<Marker> {
        let mut cursor = Cursor {
            text: body,
            pos: start,
        };
        cursor.eat("<!--")?;
        cursor.skip_spaces(1)?;
        let prefix =
            cursor.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !self.accepts(prefix) {
            return None;
        }
        let prefix = prefix.to_owned();
        cursor.skip_spaces(1)?;
        cursor.eat("finding_id:\"")?;
        let raw_id = cursor.take_while(|c| c != '"' && c != '\n' && c != '<' && c != '>');
        if raw_id.is_empty() {
            return None;
        }
        let finding_id = FindingId::new(raw_id);
        // An id that changes under sanitizing was not written by us: refuse it rather than guess.
        if finding_id.as_str() != raw_id {
            return None;
        }
        cursor.eat("\"")?;
        cursor.skip_spaces(1)?;
        cursor.eat("resolved:")?;
        let resolved = if cursor.eat("true").is_some() {
            true
        } else {
            cursor.eat("false")?;
            false
        };
        cursor.skip_spaces(0)?;
        cursor.eat("-->")?;
        Some(Marker {
            prefix,
            finding_id,
            resolved,
            span: (start, cursor.pos),
        })
    }
}

/// A parsed marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    pub prefix: String,
    pub finding_id: FindingId,
    pub resolved: bool,
    /// Byte range of the marker in the body.
    pub span: (usize, usize),
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        self.text.get(self.pos..).unwrap_or("")
    }

    fn eat(&mut self, literal: &str) -> Option<()> {
        if self.rest().starts_with(literal) {
            self.pos += literal.len();
            Some(())
        } else {
            None
        }
    }

    /// Skips spaces and tabs; `None` when fewer than `min` were there.
    fn skip_spaces(&mut self, min: usize) -> Option<()> {
        let skipped = self.take_while(|c| c == ' ' || c == '\t').len();
        (skipped >= min).then_some(())
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest.find(|c: char| !keep(c)).unwrap_or(rest.len());
        self.pos += len;
        rest.get(..len).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_parses() {
        let syntax = MarkerSyntax::default();
        let id = FindingId::new("null-deref-parse");
        let marker = syntax.build(&id, false);
        assert_eq!(
            marker,
            "<!-- bugloop finding_id:\"null-deref-parse\" resolved:false -->"
        );
        let body = format!("## Title\n\n{marker}\ntext");
        let parsed = syntax.parse_all(&body);
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].finding_id, id);
        assert!(!parsed[0].resolved);
    }

    #[test]
    fn rejects_bad_prefixes() {
        assert!(MarkerSyntax::new("", &[]).is_err());
        assert!(MarkerSyntax::new("a b", &[]).is_err());
        assert!(MarkerSyntax::new("a-->", &[]).is_err());
        assert!(MarkerSyntax::new("ok", &["x\"".to_owned()]).is_err());
        assert!(MarkerSyntax::new("acme-bot", &["copilot-bugbot".to_owned()]).is_ok());
    }

    #[test]
    fn replace_rewrites_legacy_prefix_and_only_that_id() {
        let syntax = MarkerSyntax::default();
        let body = "a <!-- copilot-bugbot finding_id:\"x\" resolved:false --> b \
                    <!-- bugloop finding_id:\"y\" resolved:false -->";
        let out = syntax.replace(body, &FindingId::new("x"), true).unwrap();
        assert_eq!(
            out,
            "a <!-- bugloop finding_id:\"x\" resolved:true --> b \
             <!-- bugloop finding_id:\"y\" resolved:false -->"
        );
        assert!(syntax.replace(body, &FindingId::new("z"), true).is_none());
    }
}
