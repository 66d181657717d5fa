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
/// mention and the command (spacing and case aside), outside code blocks, quotes and HTML
/// comments. "Please don't @bugloop approve this yet", `` `@bugloop approve` `` or
/// "@bugloop approve?" are not the command.
pub fn is_command_line(body: &str, name: &str, command: &str) -> bool {
    let wanted = [
        format!("@{}", name.trim_start_matches('@')).to_lowercase(),
        command.to_lowercase(),
    ];
    let mut fence: Option<&str> = None;
    without_html_comments(body).lines().any(|line| {
        let trimmed = line.trim();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            return false;
        }
        if let Some(marker) = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m)) {
            fence = Some(marker);
            return false;
        }
        let words: Vec<String> = trimmed.split_whitespace().map(str::to_lowercase).collect();
        words == wanted
    })
}

/// Whether `body` mentions `@name` and the word `command` anywhere, not necessarily as the
/// command (a near miss, to be told how to give it).
pub fn mentions_loosely(body: &str, name: &str, command: &str) -> bool {
    let lower = body.to_lowercase();
    lower.contains(&format!("@{}", name.trim_start_matches('@')).to_lowercase())
        && lower.contains(&command.to_lowercase())
}

/// `body` with its `<!-- -->` comments taken out (an unclosed one runs to the end).
fn without_html_comments(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start + 4..].find("-->") {
            Some(end) => rest = &rest[start + 4 + end + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
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
