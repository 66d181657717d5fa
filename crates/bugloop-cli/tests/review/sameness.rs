//! What is the same finding, through the binary: the same problem at the same place whatever the
//! words, and an id the model repeats at another place is a new finding.

use std::path::Path;

use bugloop_testkit::assert_contains;
use bugloop_testkit::json::entries_where;
use serde_json::{Value, json};

use super::{bugloop, findings_json, json_output, reviewed, script, stdout};

/// A full review (these runs are all on the same code: an incremental one would not ask).
fn review_json(dir: &Path, model: &str) -> Value {
    json_output(
        dir,
        &["review", "--full", "--model", model, "--format", "json"],
        0,
    )
}

/// The finding comments in the store, by id, from `bugloop findings --format json`.
fn finding_ids(dir: &Path) -> Vec<String> {
    let listed = findings_json(dir);
    let mut ids: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["finding_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[test]
fn three_paraphrases_of_one_bug_at_one_place_are_one_finding() {
    let (dir, scripts, id) = reviewed();

    // Two more wordings, sharing almost no significant word with the first or each other, at the
    // same line (one a line off, as models do), quoting the same code: one in a later run is a
    // rediscovery of the first, and the two in one run merge.
    let paraphrases = [
        json!({"file": "lib.rs", "line": 6, "evidence": "v[v.len()]",
               "title": "Out-of-bounds read in last()",
               "description": "Accessing position len crashes for every input slice.",
               "score": 7, "category": "reliability"}),
        json!({"file": "lib.rs", "line": 5, "end_line": 6, "evidence": "    v[v.len()]",
               "title": "Function panics unconditionally",
               "description": "No element exists at that offset; callers always abort.",
               "score": 8, "category": "logic"}),
    ];
    let second = review_json(dir.path(), &script(scripts.path(), &paraphrases));
    assert_eq!(finding_ids(dir.path()), vec![id.clone()], "{second:#}");
    let published = second["findings"].as_array().unwrap();
    assert_eq!(published.len(), 1, "{second:#}");
    assert_eq!(published[0]["id"], id.as_str());
    assert_eq!(published[0]["action"], "updated", "{second:#}");
    let merged = entries_where(&second["dropped"], "stage", "dedup_run");
    assert_eq!(merged.len(), 1, "{second:#}");
    assert_contains(
        merged[0]["reason"].as_str().unwrap(),
        "same quoted evidence at the same place",
    );
}

#[test]
fn an_id_repeated_at_another_place_is_a_new_finding() {
    let (dir, scripts, id) = reviewed();

    // The model reuses the id of the previous finding for another problem, in `average`.
    let other = json!({"id": id, "file": "lib.rs", "line": 2,
        "evidence": "v.iter().sum::<f64>() / v.len() as f64",
        "title": "Average of an empty slice is NaN",
        "description": "Dividing by a zero length gives NaN, which callers do not expect.",
        "score": 6, "category": "logic"});
    let second = review_json(dir.path(), &script(scripts.path(), &[other]));
    let fresh = format!("{id}-2");
    assert_eq!(
        finding_ids(dir.path()),
        [id.clone(), fresh.clone()],
        "{second:#}"
    );
    let published = second["findings"].as_array().unwrap();
    assert_eq!(published.len(), 1, "{second:#}");
    assert_eq!(published[0]["id"], fresh.as_str());
    assert_eq!(published[0]["action"], "added");
    assert_eq!(published[0]["line"], 2);

    // The original comment still describes the original problem at its place.
    let show = bugloop(dir.path(), &["findings", "show", &id]);
    assert_contains(&stdout(&show), "Index one past the end");
    assert!(!stdout(&show).contains("NaN"), "{}", stdout(&show));
}
