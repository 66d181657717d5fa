//! Public faces kept deliberate. The loops crate: a module or item it makes `pub` is one another crate
//! (or its own integration tests, which use it as another crate would) names; the rest is
//! `pub(crate)` or private, so what the crate offers is what is used. And no forge overrides
//! the words for a write, so every write passes `Forge::write`.

use std::collections::BTreeSet;
use std::path::Path;

use super::{rust_files, workspace};

const KINDS: [&str; 9] = [
    "fn ",
    "async fn ",
    "struct ",
    "enum ",
    "trait ",
    "const ",
    "static ",
    "type ",
    "mod ",
];

/// The name a top-level `pub` declaration line declares, if it declares one.
fn declared(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("pub ")?;
    let rest = KINDS.iter().find_map(|kind| rest.strip_prefix(kind))?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let outside = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        outside(before) && outside(after)
    })
}

/// What the rest of the workspace says where it names `crate_name`.
fn users_text(krate: &str, crate_name: &str) -> String {
    let own_src = workspace().join("crates").join(krate).join("src");
    let mut files = Vec::new();
    rust_files(&workspace().join("crates"), &mut files);
    files
        .into_iter()
        // The crate's own sources, and this test's (which names what it checks), are not users.
        .filter(|path| {
            !path.starts_with(&own_src)
                && !path.to_string_lossy().contains("tests/tidy")
                && !path.components().any(|c| c.as_os_str() == "target")
        })
        .map(|path| std::fs::read_to_string(path).unwrap())
        .filter(|text| text.contains(crate_name))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The crate's `pub` declarations nobody outside it names: `module: name`.
fn unused_public(krate: &str, crate_name: &str) -> Vec<String> {
    let src = workspace().join("crates").join(krate).join("src");
    let users = users_text(krate, crate_name);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut unused = BTreeSet::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = text
            .split("\n#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        for line in text.lines() {
            if let Some(name) = declared(line)
                && !contains_word(&users, name)
            {
                unused.insert(format!("{}: {name}", relative(&src, &path)));
            }
        }
    }
    unused.into_iter().collect()
}

fn relative(src: &Path, path: &Path) -> String {
    path.strip_prefix(src).unwrap().display().to_string()
}

/// Types no other crate names but reaches through a public item (a field of a type it builds,
/// a tool's arguments, an error's source), which the compiler requires to be `pub`.
const REACHED_THROUGH_PUBLIC_ITEMS: [&str; 6] = [
    "build/proofs.rs: ProvenTest",
    "build/tool_fixes.rs: ToolFix",
    "review/tools.rs: PassResults",
    "review/tools.rs: ReportedFinding",
    "review/tools.rs: Resolution",
    "review/web.rs: WebError",
];

#[test]
fn the_loops_make_public_only_what_others_use() {
    let unused = unused_public("bugloop-loops", "bugloop_loops");
    let reached: Vec<String> = REACHED_THROUGH_PUBLIC_ITEMS
        .iter()
        .map(|item| (*item).to_owned())
        .collect();
    let unexplained: Vec<&String> = unused
        .iter()
        .filter(|item| !reached.contains(item))
        .collect();
    assert!(
        unexplained.is_empty(),
        "pub, but named by no other crate: make it pub(crate) or private: {unexplained:#?}"
    );
    // The list names only what is still public and still unnamed outside.
    for item in &reached {
        assert!(
            unused.contains(item),
            "{item} is no longer reached only through others"
        );
    }
}

#[test]
fn a_declaration_is_read_from_its_line() {
    assert_eq!(declared("pub fn review(request: &R) {"), Some("review"));
    assert_eq!(declared("pub async fn solve("), Some("solve"));
    assert_eq!(declared("pub struct LoopEnv<'a> {"), Some("LoopEnv"));
    assert_eq!(declared("pub mod act;"), Some("act"));
    assert_eq!(declared("pub(crate) fn inner() {"), None);
    assert_eq!(declared("    pub fn method(&self) {"), None);
    assert_eq!(declared("pub use self::env::LoopEnv;"), None);
    assert!(contains_word("use bugloop_loops::act::open;", "act"));
    assert!(!contains_word("use bugloop_loops::acting;", "act"));
}

/// The words for a write (`add_comment`, ...) are `Forge::write` in words; a forge or layer that
/// overrode one would make a write that passes by the layers' `write` (a fence, a signature, a
/// dry run's record).
#[test]
fn no_forge_overrides_the_words_for_a_write() {
    let words = [
        "add_comment",
        "update_comment",
        "reply",
        "delete_comment",
        "set_thread_resolved",
        "set_description",
        "upsert_by_marker",
    ];
    let mut files = Vec::new();
    rust_files(&workspace().join("crates"), &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (at, _) in text.match_indices("impl") {
            let line_end = text[at..].find('\n').map_or(text.len(), |n| at + n);
            let header = &text[at..line_end];
            let is_forge = header.contains("Forge for ") || header.contains("ForgeLayer for ");
            if !is_forge || header.contains("Forge for L ") {
                continue;
            }
            // The impl block: up to the first line that closes it at its indent.
            let indent = text[..at].len() - text[..at].trim_end_matches(' ').len();
            let close = format!("\n{}}}", " ".repeat(indent));
            let end = text[line_end..]
                .find(&close)
                .map_or(text.len(), |n| line_end + n);
            for word in words {
                if text[line_end..end].contains(&format!("fn {word}(")) {
                    found.push(format!("{}: {word}", path.display()));
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}
