//! The documents a user reads: the README stays a newcomer's path (short, in the order a
//! newcomer needs it, pointing at every reference document), and no link in the README,
//! ARCHITECTURE.md, BENCHMARKS.md or `docs/` leads to a file or a heading that is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};

use super::workspace;

/// The README is read in one sitting; the reference lives in `docs/`.
const README_MAX_LINES: usize = 350;

/// The newcomer's path, in order: each entry is a word of one of the README's `##` headings.
const README_PATH: [&str; 10] = [
    "Try it",
    "Review",
    "Fix",
    "Solve",
    "On GitHub",
    "As a GitHub App",
    "Models",
    "Configuration",
    "Run every test",
    "Where the rest is",
];

struct Document {
    headings: Vec<(HeadingLevel, String)>,
    links: Vec<String>,
}

fn read_document(path: &Path) -> Document {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut headings = Vec::new();
    let mut links = Vec::new();
    let mut heading: Option<(HeadingLevel, String)> = None;
    for event in Parser::new(&text) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => heading = Some((level, String::new())),
            Event::End(TagEnd::Heading(_)) => headings.extend(heading.take()),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, words)) = heading.as_mut() {
                    words.push_str(&t);
                }
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push(dest_url.into_string());
            }
            _ => {}
        }
    }
    Document { headings, links }
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces
/// made hyphens, a repeated anchor numbered.
fn anchors(headings: &[(HeadingLevel, String)]) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, words) in headings {
        let slug: String = words
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let count = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *count == 0 {
            slug.clone()
        } else {
            format!("{slug}-{count}")
        });
        *count += 1;
    }
    out
}

fn user_documents() -> Vec<PathBuf> {
    let root = workspace();
    let mut documents = bugloop_testkit::docs_markdown();
    for top in ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"] {
        documents.push(root.join(top));
    }
    documents
}

/// Every problem with one link of `from`, or none.
fn broken_link(from: &Path, link: &str) -> Option<String> {
    if link.contains("://") || link.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = link.split_once('#').unwrap_or((link, ""));
    let target = if file.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(file)
    };
    if !target.exists() {
        return Some(format!("{link}: no file {}", target.display()));
    }
    let is_markdown = target.extension().is_some_and(|e| e == "md");
    if anchor.is_empty() || !is_markdown {
        return None;
    }
    let known = anchors(&read_document(&target).headings);
    (!known.contains(anchor)).then(|| format!("{link}: no heading #{anchor} in {file}"))
}

#[test]
fn no_document_links_to_what_is_not_there() {
    let mut broken = Vec::new();
    for document in user_documents() {
        for link in read_document(&document).links {
            if let Some(problem) = broken_link(&document, &link) {
                let name = document.strip_prefix(workspace()).unwrap().display();
                broken.push(format!("{name}: {problem}"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn a_broken_link_and_a_missing_heading_are_seen() {
    let dir = std::env::temp_dir().join(format!("bugloop-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("page.md");
    std::fs::write(
        &page,
        "# Title\n\n## The App server (`serve`)\n\n## Twice\n\n## Twice\n",
    )
    .unwrap();
    assert_eq!(broken_link(&page, "page.md#the-app-server-serve"), None);
    assert_eq!(broken_link(&page, "#twice-1"), None);
    assert!(broken_link(&page, "#twice-2").is_some());
    assert!(broken_link(&page, "gone.md").is_some());
    assert_eq!(broken_link(&page, "https://example.com/x#y"), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_readme_is_a_newcomers_path() {
    let root = workspace();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "the README has {lines} lines; at most {README_MAX_LINES}: move reference to docs/"
    );
    let sections: Vec<String> = read_document(&root.join("README.md"))
        .headings
        .into_iter()
        .filter(|(level, _)| *level == HeadingLevel::H2)
        .map(|(_, words)| words)
        .collect();
    let mut rest = sections.iter();
    for step in README_PATH {
        assert!(
            rest.any(|section| section.contains(step)),
            "the README's sections {sections:?} lack {step:?} in the newcomer's order {README_PATH:?}"
        );
    }
}

/// Every reference document is reachable from the README, so moving text out of it loses none.
#[test]
fn the_readme_points_at_every_document() {
    let root = workspace();
    let links: BTreeSet<String> = read_document(&root.join("README.md"))
        .links
        .into_iter()
        .map(|link| link.split('#').next().unwrap_or_default().to_owned())
        .collect();
    for document in user_documents() {
        let name = document.strip_prefix(&root).unwrap().display().to_string();
        if name != "README.md" {
            assert!(links.contains(&name), "the README does not link {name}");
        }
    }
}

/// Every command the binary has is described in `docs/commands.md`.
#[test]
fn every_command_is_documented() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_bugloop"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .lines()
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        // A command's line starts two spaces in; its description's later lines further.
        .filter(|line| !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    let reference = std::fs::read_to_string(workspace().join("docs/commands.md")).unwrap();
    for command in commands {
        assert!(
            reference.contains(&format!("`bugloop {command}")),
            "docs/commands.md does not describe `bugloop {command}`"
        );
    }
}
