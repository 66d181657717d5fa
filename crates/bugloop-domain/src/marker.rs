//! Hidden markers that tie a comment to a finding:
//! `<!-- bugloop finding_id:"<id>" resolved:true|false -->`.
//!
//! The prefix is configurable; legacy prefixes (by default `copilot-bugbot`) are read too, so a
//! repository that used that tool keeps its findings, and are rewritten to the current prefix
//! whenever bugloop updates a marker.

use serde::{Deserialize, Serialize};

use crate::finding::FindingId;
use crate::markdown::{LineRole, line_roles};
use crate::status::ThreadStatus;

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

    /// Reads a tag's opening, `<!-- <prefix> `, with a prefix this syntax accepts: the prefix.
    fn open<'t>(&self, cursor: &mut Cursor<'t>) -> Option<&'t str> {
        cursor.eat("<!--")?;
        cursor.skip_spaces(1)?;
        let prefix =
            cursor.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !self.accepts(prefix) {
            return None;
        }
        cursor.skip_spaces(1)?;
        Some(prefix)
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

    /// Every well-formed marker in `body` outside fenced code with an accepted prefix, in order.
    /// Malformed candidates are skipped: a marker is data from a comment and anyone can type one.
    /// This finds markers anywhere (to count what others typed); a comment's own marker is
    /// [`MarkerSyntax::own`].
    pub fn parse_all(&self, body: &str) -> Vec<Marker> {
        let mut found = Vec::new();
        let mut offset = 0;
        let lines: Vec<&str> = body.split('\n').collect();
        for (line, role) in lines.iter().zip(line_roles(&lines)) {
            if role == LineRole::Text {
                let mut from = 0;
                while let Some(rel) = line.get(from..).and_then(|rest| rest.find("<!--")) {
                    let start = from + rel;
                    match self.parse_at(line, start) {
                        Some(mut marker) => {
                            from = marker.span.1;
                            marker.span = (offset + marker.span.0, offset + marker.span.1);
                            found.push(marker);
                        }
                        None => from = start + 4,
                    }
                }
            }
            offset += line.len() + 1;
        }
        found
    }

    /// The marker bugloop put in a comment it wrote: alone on the last non-blank line of the
    /// human text (just before the `---` and `rmcoc` block that end the comment), outside code.
    /// Markers anywhere else are quoted text, never the comment's identity.
    pub fn own(&self, body: &str) -> Option<Marker> {
        let human = crate::rmcoc::parse_comment(body).human;
        let lines: Vec<&str> = human.split('\n').collect();
        let last = lines.iter().rposition(|line| !line.trim().is_empty())?;
        if line_roles(&lines).get(last) != Some(&LineRole::Text) {
            return None;
        }
        let line = lines[last];
        let start = line.find("<!--")?;
        if !line[..start].trim().is_empty() {
            return None;
        }
        let marker = self.parse_at(line, start)?;
        if !line[marker.span.1..].trim().is_empty() {
            return None;
        }
        // `human` is a prefix of `body`, so the offsets carry over.
        let offset: usize = lines[..last].iter().map(|l| l.len() + 1).sum();
        Some(Marker {
            span: (offset + marker.span.0, offset + marker.span.1),
            ..marker
        })
    }

    /// Rewrites the comment's own marker (see [`MarkerSyntax::own`]) to `resolved` and to the
    /// current prefix. `None` when the body has no own marker for `id`.
    pub fn replace(&self, body: &str, id: &FindingId, resolved: bool) -> Option<String> {
        let marker = self.own(body).filter(|m| &m.finding_id == id)?;
        Some(format!(
            "{}{}{}",
            body.get(..marker.span.0)?,
            self.build(id, resolved),
            body.get(marker.span.1..)?
        ))
    }

    /// The tag that ends every reply bugloop writes in a finding's thread: what the reply is.
    pub fn reply_tag(&self, kind: ReplyKind) -> String {
        match kind {
            ReplyKind::Info => format!("<!-- {} reply:info -->", self.prefix),
            ReplyKind::Status(status) => {
                format!("<!-- {} reply:status={} -->", self.prefix, status.as_str())
            }
            ReplyKind::Fixed => format!("<!-- {} reply:status=RESOLVED:code -->", self.prefix),
        }
    }

    /// The reply tag on the last non-blank line of `body`, outside code: the only place bugloop
    /// writes it. `None` for replies written before replies were tagged (and for anything else).
    pub fn read_reply_tag(&self, body: &str) -> Option<ReplyKind> {
        let lines: Vec<&str> = body.split('\n').collect();
        let last = lines.iter().rposition(|line| !line.trim().is_empty())?;
        if line_roles(&lines).get(last) != Some(&LineRole::Text) {
            return None;
        }
        let mut cursor = Cursor {
            text: lines[last].trim(),
            pos: 0,
        };
        self.open(&mut cursor)?;
        cursor.eat("reply:")?;
        let kind = if cursor.eat("info").is_some() {
            ReplyKind::Info
        } else {
            cursor.eat("status=")?;
            let word = cursor.take_while(|c| c.is_ascii_uppercase());
            match word {
                "RESOLVED" if cursor.eat(":code").is_some() => ReplyKind::Fixed,
                "PENDING" => ReplyKind::Status(ThreadStatus::Pending),
                "RESOLVED" => ReplyKind::Status(ThreadStatus::Resolved),
                "DISPUTED" => ReplyKind::Status(ThreadStatus::Disputed),
                "ESCALATED" => ReplyKind::Status(ThreadStatus::Escalated),
                _ => return None,
            }
        };
        cursor.skip_spaces(1)?;
        cursor.eat("-->")?;
        cursor.rest().is_empty().then_some(kind)
    }

    fn parse_at(&self, body: &str, start: usize) -> Option<Marker> {
        let mut cursor = Cursor {
            text: body,
            pos: start,
        };
        let prefix = self.open(&mut cursor)?.to_owned();
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

/// What a reply of bugloop's in a finding's thread is: a change of the finding's status, or
/// information (an answer, a fix that could not be made, a branch to merge) that changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplyKind {
    Info,
    Status(ThreadStatus),
    /// RESOLVED because the code the finding was about changed (a review found it fixed or
    /// gone, a fix was committed), not because anyone argued it away: a later review that finds
    /// the same problem again raises it again in the same thread.
    Fixed,
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
    fn replace_rewrites_the_own_marker_only_and_migrates_its_prefix() {
        let syntax = MarkerSyntax::default();
        let body = "quoted <!-- bugloop finding_id:\"x\" resolved:false -->\n\
                    ```\n<!-- bugloop finding_id:\"x\" resolved:false -->\n```\n\
                    <!-- copilot-bugbot finding_id:\"x\" resolved:false -->\n\n---\n\n\
                    ```rmcoc\n{}\n```\n";
        let out = syntax.replace(body, &FindingId::new("x"), true).unwrap();
        assert_eq!(
            out,
            body.replace(
                "<!-- copilot-bugbot finding_id:\"x\" resolved:false -->",
                "<!-- bugloop finding_id:\"x\" resolved:true -->"
            )
        );
        assert!(syntax.replace(body, &FindingId::new("z"), true).is_none());
        // The marker inside code is not a marker at all; the one in the text is counted.
        assert_eq!(syntax.parse_all(body).len(), 2);
    }

    #[test]
    fn a_marker_that_is_not_alone_on_the_last_line_is_not_the_comments_own() {
        let syntax = MarkerSyntax::default();
        for body in [
            "text <!-- bugloop finding_id:\"x\" resolved:false -->",
            "<!-- bugloop finding_id:\"x\" resolved:false -->\nmore text",
            "```\n<!-- bugloop finding_id:\"x\" resolved:false -->",
        ] {
            assert_eq!(syntax.own(body), None, "{body:?}");
        }
        let own = syntax.own("t\n\n<!-- bugloop finding_id:\"x\" resolved:true -->\n");
        assert!(own.is_some_and(|m| m.resolved));
    }

    #[test]
    fn reply_tags_round_trip_and_are_read_only_at_the_end() {
        let syntax = MarkerSyntax::default();
        for kind in [
            ReplyKind::Info,
            ReplyKind::Status(ThreadStatus::Pending),
            ReplyKind::Status(ThreadStatus::Resolved),
            ReplyKind::Status(ThreadStatus::Disputed),
            ReplyKind::Status(ThreadStatus::Escalated),
            ReplyKind::Fixed,
        ] {
            let body = format!("text\n\n{}\n", syntax.reply_tag(kind));
            assert_eq!(syntax.read_reply_tag(&body), Some(kind));
            assert_eq!(syntax.read_reply_tag(&format!("{body}\nmore")), None);
            assert_eq!(syntax.read_reply_tag(&format!("```\n{body}")), None);
        }
        let legacy = "x\n<!-- copilot-bugbot reply:status=RESOLVED -->";
        assert!(syntax.read_reply_tag(legacy).is_some());
        assert_eq!(syntax.read_reply_tag("<!-- other reply:info -->"), None);
        assert_eq!(
            syntax.read_reply_tag("<!-- bugloop reply:status=DONE -->"),
            None
        );
    }

    #[test]
    fn an_unclosed_state_fence_cannot_promote_the_line_before_it() {
        let syntax = MarkerSyntax::default();
        let body =
            "summary\n\n<!-- bugloop finding_id:\"forged\" resolved:true -->\n\n```rmcoc x\n";
        assert_eq!(syntax.own(body), None);
    }
}
