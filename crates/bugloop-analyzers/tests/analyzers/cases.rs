//! What a change breaks, data-driven: each `breakage/*.yaml` is a repository (`base`), the
//! change written over it on a branch (`head`), the analyzer that reviews it with the base to
//! compare with, and where its findings are: in the files the change does not edit (`broken`,
//! one a cause, its other places `also`), in the files it edits (`own`), and how many errors
//! a compiler's checker found new when it compiled the project again
//! (`project_compiled_again`).

use std::collections::BTreeMap;

use bugloop_analyzers::Analysis;
use serde::Deserialize;

use super::importers::{changed_repo, review};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case is, said when it fails.
    description: String,
    tool: String,
    base: BTreeMap<String, String>,
    head: BTreeMap<String, String>,
    broken: Vec<(String, u32)>,
    #[serde(default)]
    also: Vec<(String, u32)>,
    #[serde(default)]
    own: Vec<(String, u32)>,
    #[serde(default)]
    project_compiled_again: Option<usize>,
}

/// Where the findings are, as a case says them.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    broken: Vec<(String, u32)>,
    also: Vec<(String, u32)>,
    own: Vec<(String, u32)>,
    project_compiled_again: Option<usize>,
}

fn found(analysis: &Analysis, tool: &str, case: &Case) -> Found {
    let places = |unedited: bool| {
        analysis
            .candidates
            .iter()
            .filter(|c| c.unedited == unedited)
            .map(|c| (c.hit.file.clone(), c.hit.line))
            .collect()
    };
    let also = analysis
        .candidates
        .iter()
        .filter(|c| c.unedited)
        .flat_map(|c| c.also_at.clone())
        .collect();
    let project_compiled_again = analysis
        .runs
        .iter()
        .find(|run| run.name == tool)
        .and_then(|run| run.importers.as_ref())
        .filter(|checked| checked.whole_project && case.project_compiled_again.is_some())
        .map(|checked| checked.broken);
    Found {
        broken: places(true),
        also,
        own: places(false),
        project_compiled_again,
    }
}

/// A case's files as the test repository takes them.
fn files(files: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect()
}

#[tokio::test]
async fn each_case_finds_what_its_change_breaks_and_nothing_else() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/analyzers/breakage");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    let mut wrong = Vec::new();
    for path in &names {
        let case: Case = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let repo = changed_repo(&files(&case.base), &files(&case.head));
        let analysis = review(&repo, &case.tool, true).await;
        let expected = Found {
            broken: case.broken.clone(),
            also: case.also.clone(),
            own: case.own.clone(),
            project_compiled_again: case.project_compiled_again,
        };
        let got = found(&analysis, &case.tool, &case);
        if got != expected {
            wrong.push(format!(
                "{} ({}):\n  expected {expected:?}\n  got      {got:?}\n{analysis:#?}",
                path.display(),
                case.description
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
