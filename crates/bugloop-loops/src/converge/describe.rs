//! The change's description after converge (bugteam-audit-fix-loop.md, step 4.5): a section
//! between two markers says what each loop found and fixed and where the loop stopped; the
//! author's text above it (and anything below it) is kept, and a later run replaces only the
//! section. On GitHub the pull request's body; locally the change request's body, or the
//! description kept for the branch.

use bugloop_domain::markdown::quiet;
use bugloop_forge::{ChangeKey, Forge, ForgeError};
use bugloop_report::build::Landing;
use bugloop_report::converge::{ConvergeReport, Exit};

pub(crate) const SECTION_START: &str = "<!-- bugloop:converge-description -->";
pub(crate) const SECTION_END: &str = "<!-- /bugloop:converge-description -->";
/// The line that follows the start marker in every section bugloop writes.
const SECTION_HEADING: &str = "## What bugloop's audit-fix loop did";

/// The most loop lines the section lists (the loop reviews in the conversation have them all).
const MAX_LINES: usize = 60;
/// The most characters of one loop line, and of the stop's detail.
const MAX_LINE_CHARS: usize = 300;
const MAX_DETAIL_CHARS: usize = 1_000;

/// Text quoted into a description: one inert line (no `@name` pages anyone), and no `#12` or
/// `owner/repo#12` for GitHub to link, or to close on merge after "fixes" (a word joiner after
/// each `#` before a digit), at most `max` characters.
fn inert(text: &str, max: usize) -> String {
    let quiet = quiet(text);
    let mut out = String::with_capacity(quiet.len());
    let mut chars = quiet.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '#' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('\u{2060}');
        }
    }
    match out.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &out[..at]),
        None => out,
    }
}

/// The section for `report`, markers included, listing at most `lines` loop lines.
fn section_of(report: &ConvergeReport, lines: usize) -> String {
    let state = match report.exit {
        Exit::Converged => "converged: the last audit found nothing".to_owned(),
        Exit::CapReached => "stopped at converge.max_loops with findings left".to_owned(),
        Exit::Stuck => "stuck: the last fix did not land".to_owned(),
        Exit::Error => "stopped by an error".to_owned(),
    };
    let mut text = format!(
        "{SECTION_START}\n{SECTION_HEADING}\n\n**Final state:** {state} after {} loop{} · {} file{} changed, +{} -{} · `{}` → `{}`\n",
        report.loops,
        if report.loops == 1 { "" } else { "s" },
        report.files_changed,
        if report.files_changed == 1 { "" } else { "s" },
        report.additions,
        report.deletions,
        short(&report.start_commit),
        short(&report.final_commit),
    );
    if !report.detail.is_empty() {
        text.push_str(&format!("\n{}\n", inert(&report.detail, MAX_DETAIL_CHARS)));
    }
    if let Some(Landing::Branch { name, reason, .. }) = &report.landing {
        text.push_str(&format!(
            "\nThe loop's commits are not on this change: they wait on the branch `{}` ({}).\n",
            inert(name, 200).replace('`', "'"),
            inert(reason, 200)
        ));
    }
    if !report.log.is_empty() {
        text.push_str("\n| Loop | Step | What came of it |\n|---|---|---|\n");
        for line in report.log.iter().take(lines) {
            text.push_str(&format!(
                "| {} | {} | {} |\n",
                line.number,
                line.kind,
                inert(&line.text, MAX_LINE_CHARS).replace('|', "\\|")
            ));
        }
        if report.log.len() > lines {
            text.push_str(&format!(
                "\n{} more steps are in the loop reviews.\n",
                report.log.len() - lines
            ));
        }
    }
    if !report.quarantined.is_empty() {
        text.push_str(&format!(
            "\n{} reported finding{} did not hold (quarantined with the reason in the loop reviews).\n",
            report.quarantined.len(),
            if report.quarantined.len() == 1 { "" } else { "s" }
        ));
    }
    text.push_str(&format!("{SECTION_END}\n"));
    text
}

/// `existing` with its section replaced by `section` (added below the author's text when it
/// has none). A section is the start marker at a line's start followed by bugloop's heading:
/// the marker quoted in the author's text is theirs. A section without its end marker drops
/// what follows it: it was ours, cut short.
pub(crate) fn with_section(existing: Option<&str>, section: &str) -> String {
    let existing = existing.unwrap_or_default();
    let ours = existing.match_indices(SECTION_START).find(|(start, _)| {
        (*start == 0 || existing[..*start].ends_with('\n'))
            && existing[start + SECTION_START.len()..]
                .trim_start_matches('\r')
                .strip_prefix('\n')
                .is_some_and(|rest| rest.starts_with(SECTION_HEADING))
    });
    let (above, below) = match ours.map(|(start, _)| start) {
        Some(start) => {
            let rest = &existing[start..];
            let below = rest
                .find(SECTION_END)
                .map_or("", |end| &rest[end + SECTION_END.len()..]);
            (&existing[..start], below)
        }
        None => (existing, ""),
    };
    let above = above.trim_end();
    let below = below.trim_start_matches(['\r', '\n']);
    let mut body = String::new();
    if !above.is_empty() {
        body.push_str(above);
        body.push_str("\n\n");
    }
    body.push_str(section);
    if !below.is_empty() {
        body.push('\n');
        body.push_str(below);
    }
    body
}

/// Writes the section for `report` into `change`'s description; the section written. Within
/// the forge's size for a body, the section lists fewer loop lines; the author's text is never
/// cut (too long for any section, the description is left as it is, and the error says so).
pub(crate) async fn rewrite(
    forge: &dyn Forge,
    change: &ChangeKey,
    report: &ConvergeReport,
) -> Result<String, ForgeError> {
    let existing = forge.description(change).await?;
    let limit = forge.max_body_chars().unwrap_or(usize::MAX);
    let mut lines = MAX_LINES;
    let (section, body) = loop {
        let section = section_of(report, lines);
        let body = with_section(existing.as_deref(), &section);
        if body.chars().count() <= limit {
            break (section, body);
        }
        if lines == 0 {
            return Err(ForgeError::TooLarge(format!(
                "the description is too long for the forge to take the loop's section (at most \
                 {limit} characters in all)"
            )));
        }
        lines /= 2;
    };
    if existing.as_deref() != Some(body.as_str()) {
        forge.set_description(change, &body).await?;
    }
    Ok(section)
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_authors_text_is_kept_and_only_the_section_replaced() {
        let first = with_section(Some("Fixes the parser.\n\nSee #3.\n"), "S1\n");
        assert_eq!(first, "Fixes the parser.\n\nSee #3.\n\nS1\n");
        let section =
            |n: u32| format!("{SECTION_START}\n{SECTION_HEADING}\nrun {n}\n{SECTION_END}\n");
        let once = with_section(Some("Fixes the parser."), &section(1));
        let edited = format!("{once}\nA note the author added below.\n");
        let twice = with_section(Some(&edited), &section(2));
        assert_eq!(
            twice,
            format!(
                "Fixes the parser.\n\n{}\nA note the author added below.\n",
                section(2)
            )
        );
        assert!(!twice.contains("run 1"));
        // Ours, cut short: dropped.
        let cut = format!("Text.\n\n{SECTION_START}\n{SECTION_HEADING}\nrun 1\n");
        assert_eq!(
            with_section(Some(&cut), &section(3)),
            format!("Text.\n\n{}", section(3))
        );
        assert_eq!(with_section(None, &section(4)), section(4));
        // The marker quoted in the author's own text (no end, not a section of ours): kept.
        let quoted = format!("Intro.\n\nbugloop writes after `{SECTION_START}`.\n\nMy notes.\n");
        let kept = with_section(Some(&quoted), &section(5));
        assert!(kept.starts_with(&quoted.trim_end().to_owned()), "{kept}");
        assert!(kept.ends_with(&section(5)), "{kept}");
        let alone = format!("Intro.\n{SECTION_START}\nMy notes.\n");
        assert!(with_section(Some(&alone), &section(6)).contains("My notes."));
    }

    #[test]
    fn quoted_text_pages_nobody_and_links_no_issue() {
        let text = inert("Fixes #12, closes acme/app#3 @alice <!-- x -->", 100);
        assert!(!text.contains("#1"), "{text}");
        assert!(!text.contains("#3"), "{text}");
        assert!(!text.contains("@alice"), "{text}");
        assert!(!text.contains("<!--"), "{text}");
        assert_eq!(inert(&"x".repeat(500), 10), format!("{}…", "x".repeat(10)));
        // A `#` before a word is left for markdown headings and the like.
        assert_eq!(inert("C# code", 100), "C# code");
    }
}
