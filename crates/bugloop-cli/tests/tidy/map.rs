//! ARCHITECTURE.md's code map cannot drift from the code: its table of each crate's bugloop
//! dependencies is `cargo metadata`'s, and the invariant each crate's root file states
//! (`//! **Invariant:**`, `**Invariants:**` or `**Never:**`) is in that crate's section of the map.

use std::collections::{BTreeMap, BTreeSet};

use super::{crates, workspace, workspace_packages};

fn architecture() -> String {
    std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap()
}

/// The names in backticks in `text`.
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The dependency table: crate -> its bugloop dependencies, both without the `bugloop-` prefix.
fn table(map: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut rows = BTreeMap::new();
    let start = map
        .find("| crate | depends on |")
        .expect("the dependency table");
    for line in map[start..].lines().skip(2) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, crates, depends, _] = cells.as_slice() else {
            break;
        };
        for name in quoted(crates) {
            let previous = rows.insert(name.clone(), quoted(depends).into_iter().collect());
            assert!(previous.is_none(), "{name} has two rows");
        }
    }
    rows
}

#[test]
fn the_dependency_table_is_cargos() {
    let actual: BTreeMap<String, BTreeSet<String>> = workspace_packages()
        .into_iter()
        .filter_map(|(name, dependencies)| {
            let short = name.strip_prefix("bugloop-")?.to_owned();
            let ours = dependencies
                .iter()
                .filter_map(|d| d.strip_prefix("bugloop-"))
                .map(str::to_owned)
                .collect();
            Some((short, ours))
        })
        .collect();
    assert_eq!(
        table(&architecture()),
        actual,
        "ARCHITECTURE.md's dependency table"
    );
}

/// The invariant a crate's root file states, whitespace made single spaces.
fn stated_invariant(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| l.trim_start_matches("//!").trim())
        .collect();
    let start = lines.iter().position(|l| {
        ["**Invariant:**", "**Invariants:**", "**Never:**"]
            .iter()
            .any(|m| l.starts_with(m))
    })?;
    let paragraph: Vec<&str> = lines[start..]
        .iter()
        .take_while(|l| !l.is_empty())
        .copied()
        .collect();
    Some(paragraph.join(" "))
}

fn single_spaced(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_crates_invariant_is_in_its_section_of_the_map() {
    let map = architecture();
    let mut problems = Vec::new();
    for krate in crates() {
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        let root = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|r| krate.join(r))
            .find(|p| p.is_file())
            .unwrap();
        let Some(invariant) = stated_invariant(&std::fs::read_to_string(&root).unwrap()) else {
            problems.push(format!("{name}: its root file states no invariant"));
            continue;
        };
        let heading = format!("### `crates/{name}`");
        let Some(start) = map.find(&heading) else {
            problems.push(format!("{name}: no section in the map"));
            continue;
        };
        let rest = &map[start + heading.len()..];
        let section = &rest[..rest.find("\n### ").unwrap_or(rest.len())];
        if !single_spaced(section).contains(&invariant) {
            problems.push(format!("{name}: {invariant:?} is not in its section"));
        }
    }
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn a_drifted_table_or_invariant_is_seen() {
    let map = "| crate | depends on |\n|---|---|\n| `a`, `b` | `c` (only with a feature) |\n| `c` | none |\n\nafter\n";
    let rows = table(map);
    assert_eq!(rows["a"], BTreeSet::from(["c".to_owned()]));
    assert!(rows["c"].is_empty());
    let text = "//! A crate.\n//!\n//! **Never:** print\n//! anything.\n\nuse x;\n";
    assert_eq!(
        stated_invariant(text).as_deref(),
        Some("**Never:** print anything.")
    );
    assert_eq!(stated_invariant("//! Nothing said.\n"), None);
}
