//! Whether a comment addresses bugloop: `@name` as a word of its own, in the comment's own text.
//! Not a longer name (`@bugloop-dev`), an e-mail address (`ci@bugloop.dev`), part of a URL
//! (`https://example.com/@bugloop`), inline code, a code block or a quoted line (`> @bugloop fix`
//! quotes someone else's request; answering it again would repeat a fix). A command that acts
//! without a person's further word (approval) must be the whole line: [`is_command_line`].

/// Whether `body` mentions `@name` (case-insensitive, as GitHub's mentions are).
pub fn mentions(body: &str, name: &str) -> bool {
    let wanted = format!("@{}", name.trim_start_matches('@')).to_lowercase();
    let mut fence: Option<&str> = None;
    for line in body.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            fence = Some(marker);
            continue;
        }
        if trimmed.starts_with('>') {
            continue;
        }
        if without_code_spans(line)
            .split(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '(')
            .any(|word| is_mention(word, &wanted))
        {
            return true;
        }
    }
    false
}

/// A word that is the mention, give or take punctuation after it (`@bugloop,` `@bugloop:`).
fn is_mention(word: &str, wanted: &str) -> bool {
    let word = word.trim_end_matches([',', '.', ':', ';', '!', '?', ')']);
    word.to_lowercase() == wanted
}

/// The line with its `inline code` spans blanked.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `body` gives the command `@name <command>` unmistakably: a line that is exactly the
/// mention and the command (spacing and case aside), outside code (fenced, indented four spaces
/// or more, `<pre>`), quotes and HTML comments. "Please don't @bugloop approve this yet",
/// `` `@bugloop approve` `` or "@bugloop approve?" are not the command.
pub fn is_command_line(body: &str, name: &str, command: &str) -> bool {
    let wanted = [
        format!("@{}", name.trim_start_matches('@')).to_lowercase(),
        command.to_lowercase(),
    ];
    let mut block = Block::Text;
    body.lines().any(|line| {
        let text = match block.step(line) {
            Some(text) => text,
            None => return false,
        };
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        words == wanted
    })
}

/// Where a line of markdown is, for [`is_command_line`]: what a forge would render as text.
enum Block {
    Text,
    /// In a fence opened by this many of this character (closed by as many or more).
    Fence(char, usize),
    Html,
    Pre,
}

impl Block {
    /// Takes one line; its text when it is text (HTML comments taken out).
    fn step(&mut self, line: &str) -> Option<String> {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match *self {
            Block::Fence(ch, len) => {
                let run = trimmed.chars().take_while(|c| *c == ch).count();
                if indent < 4 && run >= len && trimmed[run * ch.len_utf8()..].trim().is_empty() {
                    *self = Block::Text;
                }
                return None;
            }
            Block::Pre => {
                if trimmed.to_lowercase().contains("</pre>") {
                    *self = Block::Text;
                }
                return None;
            }
            Block::Html | Block::Text => {}
        }
        if matches!(self, Block::Text) {
            if indent >= 4 || line.starts_with('\t') {
                return None;
            }
            for ch in ['`', '~'] {
                let run = trimmed.chars().take_while(|c| *c == ch).count();
                if run >= 3 {
                    *self = Block::Fence(ch, run);
                    return None;
                }
            }
            if trimmed.to_lowercase().starts_with("<pre") {
                if !trimmed.to_lowercase().contains("</pre>") {
                    *self = Block::Pre;
                }
                return None;
            }
            if trimmed.starts_with('>') {
                return None;
            }
        }
        // HTML comments, which may span lines; not inside a code span (blanked first).
        let blanked = without_code_spans(line);
        let mut out = String::new();
        let mut rest = blanked.as_str();
        loop {
            if matches!(self, Block::Html) {
                match rest.find("-->") {
                    Some(end) => {
                        rest = &rest[end + 3..];
                        *self = Block::Text;
                    }
                    None => return (!out.trim().is_empty()).then_some(out),
                }
            }
            match rest.find("<!--") {
                Some(start) => {
                    out.push_str(&rest[..start]);
                    rest = &rest[start + 4..];
                    *self = Block::Html;
                }
                None => {
                    out.push_str(rest);
                    return Some(out);
                }
            }
        }
    }
}

/// Whether `body` mentions `@name` and the word `command` anywhere, not necessarily as the
/// command (a near miss, to be told how to give it).
pub fn mentions_loosely(body: &str, name: &str, command: &str) -> bool {
    let lower = body.to_lowercase();
    lower.contains(&format!("@{}", name.trim_start_matches('@')).to_lowercase())
        && lower.contains(&command.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_command_is_a_line_of_its_own_and_nothing_near_it_is() {
        for body in [
            "@bugloop approve",
            "Looks right.\n\n@BugLoop   Approve  \n",
            "<!-- a note -->\n@bugloop approve",
        ] {
            assert!(is_command_line(body, "bugloop", "approve"), "{body:?}");
        }
        for body in [
            "Please don't @bugloop approve this yet",
            "@bugloop approve?",
            "`@bugloop approve`",
            "```\n@bugloop approve\n```",
            "> @bugloop approve",
            "<!--\n@bugloop approve\n-->",
            "<!-- unclosed\n@bugloop approve",
            "Not yet. When CI is green, a maintainer writes:\n\n    @bugloop approve\n",
            "````\n```\n@bugloop approve\n````",
            "```\n```text\n@bugloop approve\n```",
            "<pre>\n@bugloop approve\n</pre>",
            "`<!--`\n```\n-->\n@bugloop approve\n```",
            "@bugloop do not approve",
            "@bugloop approve, once the tests run",
            "Looks right. @bugloop approve!",
        ] {
            assert!(!is_command_line(body, "bugloop", "approve"), "{body:?}");
            assert!(mentions_loosely(body, "bugloop", "approve"), "{body:?}");
        }
    }

    #[test]
    fn a_mention_is_a_word_of_the_comments_own_text() {
        for body in [
            "@bugloop fix",
            "@bugloop, fix all please",
            "Hey @BugLoop: why is this wrong?",
            "please (@bugloop) do add a test",
            "[@bugloop] think about it",
            "first line\n  @bugloop fix it",
        ] {
            assert!(mentions(body, "bugloop"), "{body:?}");
        }
        for body in [
            "see https://example.com/@bugloop for details",
            "mail ci@bugloop.dev",
            "@bugloop-dev fix",
            "@bugloops fix",
            "`@bugloop fix` is how you ask",
            "```\n@bugloop fix\n```",
            "~~~text\n@bugloop fix\n~~~\nthanks",
            "> @bugloop fix all\nI disagree with this",
            "bugloop fix",
        ] {
            assert!(!mentions(body, "bugloop"), "{body:?}");
        }
        // The App's name may be given with its @.
        assert!(mentions("@my-app fix", "@my-app"));
    }

    proptest! {
        /// Inside a URL or an e-mail address the name never counts, whatever surrounds it.
        #[test]
        fn never_inside_a_url_or_an_address(prefix in "[a-z0-9./:-]{1,20}", suffix in "[a-z0-9/.-]{0,10}") {
            let in_url = format!("see https://{prefix}/@bugloop{suffix} now");
            prop_assert!(!mentions(&in_url, "bugloop"));
            let address = format!("{prefix}x@bugloop{suffix}");
            prop_assert!(!mentions(&address, "bugloop"));
        }
    }
}
