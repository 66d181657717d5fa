//! The GitHub event path tells a trigger's kinds apart in one place: the application layer's
//! event module matches a [`Trigger`] once (each kind named there exactly once), no front end
//! matches one, and the old name of solving (`autofix`) is spoken only where stored rows are
//! read and written.

use std::path::PathBuf;

use super::{relative, rust_files, workspace};

const KINDS: [&str; 5] = ["Review", "Comment", "Converge", "Solve", "ErrorReport"];

/// Production sources of a crate: its `src`, without test modules' files.
fn production_files(krate: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(
        &workspace().join("crates").join(krate).join("src"),
        &mut files,
    );
    files
        .into_iter()
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name != "tests.rs" && !name.ends_with("_tests.rs")
        })
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            // A file's own `#[cfg(test)] mod tests { .. }` is the last thing in it.
            let text = match text.find("#[cfg(test)]\nmod tests") {
                Some(at) => text[..at].to_owned(),
                None => text,
            };
            (path, text)
        })
        .collect()
}

/// Where `text` names `Trigger::<kind>` in a pattern (a match arm, an alternative, a `let`):
/// what follows the name and its fields is `=>`, `|`, `if` or a single `=`.
fn patterns(text: &str, kind: &str) -> usize {
    let needle = format!("Trigger::{kind}");
    text.match_indices(&needle)
        .filter(|(at, _)| {
            let mut rest = &text[at + needle.len()..];
            if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                return false;
            }
            rest = rest.trim_start();
            if rest.starts_with('{') {
                let mut depth = 0;
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        depth == 0
                    })
                    .map_or(rest.len(), |(i, _)| i + 1);
                rest = rest[end..].trim_start();
            }
            rest.starts_with("=>")
                || rest.starts_with('|')
                || rest.starts_with("if ")
                || (rest.starts_with('=') && !rest.starts_with("=="))
        })
        .count()
}

#[test]
fn the_event_path_matches_a_trigger_once() {
    let mut found = Vec::new();
    for krate in ["bugloop-app", "bugloop-server", "bugloop-cli"] {
        for (path, text) in production_files(krate) {
            for kind in KINDS {
                for _ in 0..patterns(&text, kind) {
                    found.push((relative(&path), kind));
                }
            }
        }
    }
    let expected: Vec<(String, &str)> = KINDS
        .iter()
        .map(|&kind| ("crates/bugloop-app/src/github_event.rs".to_owned(), kind))
        .collect();
    found.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(
        found, expected_sorted,
        "each kind of trigger is told apart once, in the event module's one match"
    );
}

#[test]
fn a_pattern_is_told_from_a_construction() {
    let text = "match t {\n    Trigger::Review { number, .. } => 1,\n    Trigger::Solve {\n        issue,\n        ..\n    }\n    | Trigger::Comment { .. } => 2,\n}\nlet Trigger::Converge { number, .. } = t else { return };\nlet made = Trigger::ErrorReport { report: x };\nf(Trigger::Solve { issue: 1 });\nlet same = kind == Trigger::ReviewX;\n";
    let counts: Vec<usize> = KINDS.iter().map(|kind| patterns(text, kind)).collect();
    assert_eq!(counts, [1, 1, 1, 1, 0]);
}

#[test]
fn the_old_name_of_solving_is_spoken_only_where_rows_are_stored() {
    let mut found = Vec::new();
    let mut crates: Vec<String> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    for krate in crates {
        for (path, text) in production_files(&krate) {
            if text.contains("\"autofix\"") {
                found.push(relative(&path));
            }
        }
    }
    assert_eq!(
        found,
        [
            // The queue's stored kind, and the stored trigger's serde name.
            "crates/bugloop-queue/src/lib.rs",
            "crates/bugloop-webhooks/src/trigger.rs",
        ]
    );
}
