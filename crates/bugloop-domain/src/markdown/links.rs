//! Links, images and HTML in text bugloop did not write, made inert where it is shown as
//! markdown: a `[Approve](https://…)` or an `<img src=…>` in a tool's message (a string type of
//! the branch's, quoted by tsc) or in a model's words would otherwise be a link or an image in a
//! comment bugloop signs. A bare address stays as it is: its target is what it shows.

/// Shown the same, nothing of `line` outside code spans opens a link, an image, a reference's
/// definition or an HTML tag: a word joiner after each `]` before `(` or `[` (or `:` where the
/// label opens the line), and after
/// each `<` before a tag's first character. Code spans are left as they are (nothing renders
/// in them, and a name copied from one must stay the name).
pub(super) fn inert_links(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    let mut line_start = true;
    while let Some(start) = rest.find('`') {
        let (text, from_tick) = rest.split_at(start);
        out.push_str(&inert_text(text, line_start));
        line_start = false;
        let run = from_tick.len() - from_tick.trim_start_matches('`').len();
        match closing_run(&from_tick[run..], run) {
            Some(end) => {
                let span = run + end + run;
                out.push_str(&from_tick[..span]);
                rest = &from_tick[span..];
            }
            // An unmatched run of backticks is literal text.
            None => {
                out.push_str(&from_tick[..run]);
                rest = &from_tick[run..];
            }
        }
    }
    out.push_str(&inert_text(rest, line_start));
    out
}

/// Where in `after` a run of exactly `run` backticks starts, closing a code span.
fn closing_run(after: &str, run: usize) -> Option<usize> {
    let bytes = after.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'`' {
            at += 1;
            continue;
        }
        let length = bytes[at..].iter().take_while(|b| **b == b'`').count();
        if length == run {
            return Some(at);
        }
        at += length;
    }
    None
}

/// Tags that neither link nor load anything, written bare (`<details>`, `</summary>`): left
/// as they are, as bugloop's own summary folds its sections with them.
const HARMLESS_TAGS: &[&str] = &[
    "details", "summary", "br", "b", "i", "em", "strong", "code", "kbd", "sub", "sup", "p", "ul",
    "ol", "li",
];

fn harmless_tag(from: &str) -> bool {
    let Some(end) = from.find('>') else {
        return false;
    };
    let name = from[1..end].strip_prefix('/').unwrap_or(&from[1..end]);
    HARMLESS_TAGS
        .iter()
        .any(|tag| name.eq_ignore_ascii_case(tag))
}

/// Whether the `]` at `at` closes a label that opens its line (after indentation, a quote's
/// `>` or a list item's marker): `[label]: url` there defines a link a bare `[label]` elsewhere
/// in the comment would follow. Elsewhere `]:` is text (`failed [Exited(1)]: ./a.py:3`).
fn defines_a_link(text: &str, at: usize, line_start: bool) -> bool {
    line_start
        && text[..at].rfind('[').is_some_and(|open| {
            text[..open]
                .chars()
                .all(|c| c.is_whitespace() || c.is_ascii_digit() || ">-*+.)".contains(c))
        })
}

fn inert_text(text: &str, line_start: bool) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for (at, c) in text.char_indices() {
        out.push(c);
        let Some(next) = text[at + c.len_utf8()..].chars().next() else {
            continue;
        };
        let opens = match c {
            ']' if next == ':' => defines_a_link(text, at, line_start),
            ']' => matches!(next, '(' | '['),
            '<' => {
                (next.is_ascii_alphabetic() || matches!(next, '/' | '!' | '?'))
                    && !harmless_tag(&text[at..])
            }
            _ => false,
        };
        if opens {
            out.push('\u{2060}');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_images_definitions_and_tags_are_inert_outside_code() {
        let wj = '\u{2060}';
        for (text, inert) in [
            (
                "Type '\"[Approve](https://evil.example)\"' is not assignable",
                format!("Type '\"[Approve]{wj}(https://evil.example)\"' is not assignable"),
            ),
            (
                "![ok](https://t.example/p.png)",
                format!("![ok]{wj}(https://t.example/p.png)"),
            ),
            (
                "[x][ref] and [ref]: https://e",
                format!("[x]{wj}[ref] and [ref]: https://e"),
            ),
            ("[ref]: https://e", format!("[ref]{wj}: https://e")),
            (
                "  > - [ref]: https://e",
                format!("  > - [ref]{wj}: https://e"),
            ),
            (
                "failed [Exited(1)]: ./stats.py:3",
                "failed [Exited(1)]: ./stats.py:3".to_owned(),
            ),
            (
                "<img src=x> <a href=y>z</a> <!-- c --> <https://e>",
                format!("<{wj}img src=x> <{wj}a href=y>z<{wj}/a> <{wj}!-- c --> <{wj}https://e>"),
            ),
            // Code spans keep their text; an unmatched backtick is text.
            (
                "`Vec<String>` and `a[0](x)` but <a>",
                format!("`Vec<String>` and `a[0](x)` but <{wj}a>"),
            ),
            (
                "``a ` [b](c)`` [d](e)",
                format!("``a ` [b](c)`` [d]{wj}(e)"),
            ),
            ("` [d](e)", format!("` [d]{wj}(e)")),
            (
                "a < b, x[1] (y), https://plain.example",
                "a < b, x[1] (y), https://plain.example".to_owned(),
            ),
        ] {
            assert_eq!(inert_links(text), inert, "{text}");
            // Idempotent: text made inert twice is the same.
            assert_eq!(inert_links(&inert), inert, "{text}");
        }
    }
}
