//! Links, images and HTML in text bugloop did not write, made inert where it is shown as
//! markdown: a `[Approve](https://…)` or an `<img src=…>` in a tool's message (a string type of
//! the branch's, quoted by tsc) or in a model's words would otherwise be a link or an image in a
//! comment bugloop signs. A bare address stays as it is: its target is what it shows.

/// Shown the same, nothing of `line` opens a link, an image, a reference's definition or an
/// HTML tag. Whatever reads as a code span: a word joiner after each `]` before `(` or `[`
/// (or `:` where the label may define a link), and after the `<` of a tag that links or loads
/// (`<a`, `<img`, ...), as what this reader takes for a code span a forge may not (a backtick
/// it pairs across lines). Outside code spans, after the `<` of any other tag too, but a bare
/// harmless one (`<details>`); inside them other text is left as it is (`Vec<String>` copied
/// from one must stay the name).
pub(super) fn inert_links(line: &str) -> String {
    let line = inert_everywhere(line);
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line.as_str();
    while let Some(start) = opening_tick(rest) {
        let (text, from_tick) = rest.split_at(start);
        out.push_str(&inert_tags(text));
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
    out.push_str(&inert_tags(rest));
    out
}

/// Where the first backtick that may open a code span is: one after a backslash is literal
/// (and what follows it is text to CommonMark, which a forge renders).
fn opening_tick(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            // An escaped character, a backtick among them, opens nothing.
            b'\\' => at += 2,
            b'`' => return Some(at),
            _ => at += 1,
        }
    }
    None
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

/// Tags that link or load something: made inert wherever they stand.
const LINKING_TAGS: &[&str] = &[
    "a", "img", "image", "picture", "source", "video", "audio", "iframe", "embed", "object", "svg",
    "form", "input", "button", "link", "area", "base", "meta", "style", "script",
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

/// Whether `from` (at a `<`) opens or closes a tag that links or loads.
fn linking_tag(from: &str) -> bool {
    let name = from[1..].strip_prefix('/').unwrap_or(&from[1..]);
    let end = name
        .find(|c: char| !c.is_ascii_alphanumeric())
        .unwrap_or(name.len());
    let ends_the_name = name[end..]
        .chars()
        .next()
        .is_none_or(|c| c.is_whitespace() || matches!(c, '>' | '/'));
    ends_the_name
        && LINKING_TAGS
            .iter()
            .any(|tag| name[..end].eq_ignore_ascii_case(tag))
}

/// Whether the `]` at `at` may close a label that defines a link (`[label]: url` where the
/// label opens its line, after indentation, a quote's `>` or a list item's marker, or began on
/// a line before): a bare `[label]` elsewhere in the comment would follow it. Elsewhere `]:`
/// is text (`failed [Exited(1)]: ./a.py:3`).
fn defines_a_link(line: &str, at: usize) -> bool {
    let start = line
        .find(|c: char| !(c.is_whitespace() || c.is_ascii_digit() || ">-*+.)".contains(c)))
        .unwrap_or(line.len());
    line[start..].starts_with('[') || !line[..at].contains('[')
}

/// The links, images, definitions and linking tags of `line` made inert, code spans or not.
fn inert_everywhere(line: &str) -> String {
    joined_after(line, |at, c, next| match c {
        ']' if next == ':' => defines_a_link(line, at),
        ']' => matches!(next, '(' | '['),
        '<' => linking_tag(&line[at..]),
        _ => false,
    })
}

/// Every other HTML tag of `text` (outside code spans) made inert, but bare harmless ones.
fn inert_tags(text: &str) -> String {
    joined_after(text, |at, c, next| {
        c == '<'
            && (next.is_ascii_alphabetic() || matches!(next, '/' | '!' | '?'))
            && !harmless_tag(&text[at..])
    })
}

/// `text` with a word joiner after each character `opens` says opens something, given its
/// place, itself and the character after it.
fn joined_after(text: &str, opens: impl Fn(usize, char, char) -> bool) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for (at, c) in text.char_indices() {
        out.push(c);
        let Some(next) = text[at + c.len_utf8()..].chars().next() else {
            continue;
        };
        if opens(at, c, next) {
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
                // A line that opens with a label: each `]:` of it, to be sure.
                format!("[x]{wj}[ref] and [ref]{wj}: https://e"),
            ),
            ("[ref]: https://e", format!("[ref]{wj}: https://e")),
            (
                "  > - [ref]: https://e",
                format!("  > - [ref]{wj}: https://e"),
            ),
            // A label with a code span or an escaped bracket, or begun on the line before.
            ("[`x`]: https://e", format!("[`x`]{wj}: https://e")),
            ("[x\\[y]: https://e", format!("[x\\[y]{wj}: https://e")),
            ("y]: https://e", format!("y]{wj}: https://e")),
            (
                "failed [Exited(1)]: ./stats.py:3",
                "failed [Exited(1)]: ./stats.py:3".to_owned(),
            ),
            (
                "<img src=x> <a href=y>z</a> <!-- c --> <https://e>",
                format!("<{wj}img src=x> <{wj}a href=y>z<{wj}/a> <{wj}!-- c --> <{wj}https://e>"),
            ),
            // Code spans keep their text but links and linking tags, which a forge may read
            // outside one; an unmatched backtick is text.
            (
                "`Vec<String>` and `a[0](x)` but <a>",
                format!("`Vec<String>` and `a[0]{wj}(x)` but <{wj}a>"),
            ),
            (
                "``a ` [b](c)`` [d](e)",
                format!("``a ` [b]{wj}(c)`` [d]{wj}(e)"),
            ),
            ("` [d](e)", format!("` [d]{wj}(e)")),
            (
                "`<img src=x>` `<a href=y>`",
                format!("`<{wj}img src=x>` `<{wj}a href=y>`"),
            ),
            // An escaped backtick opens no code span: what follows is text.
            (
                "\\`<b onclick=x>` \\`[Approve](https://e)`",
                format!("\\`<{wj}b onclick=x>` \\`[Approve]{wj}(https://e)`"),
            ),
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
