//! An analyzer's finding follows its code through later pushes, through the binary with ruff and
//! a scripted model: a line rewritten while ruff still reports it stays open, a rewrapped line
//! moves the finding, and a new hit at a moved finding's old line is a finding of its own.

use bugloop_testkit::{TestRepo, assert_contains};
use serde_json::{Value, json};

use super::analyzers::{PUBLISH, finding, review_json};
use super::{bugloop, script, stdout};

/// `db.py` evaluating its first argument, and then its second.
const EVAL_A: &str = "def run(a, b):\n    x = eval(a)\n    return x\n";
const EVAL_B: &str = "def run(a, b):\n    x = eval(b)\n    return x\n";

/// A repository reviewed once, and the model that reviews its pushes.
struct Tracked {
    repo: TestRepo,
    model: String,
    _scripts: tempfile::TempDir,
}

impl Tracked {
    /// Pushes `db.py` as `text`, reviews it again: the report, and `bugloop findings`' list.
    fn push(&self, text: &str, message: &str) -> (Value, String) {
        self.repo.write("db.py", text);
        self.repo.commit(message);
        let report = review_json(self.repo.path(), &self.model, &[]);
        (report, stdout(&bugloop(self.repo.path(), &["findings"])))
    }
}

/// A repository on `change` whose `db.py` is `first`, reviewed once with an eval found there:
/// the repository with its model, and the finding's id.
fn reviewed(first: &str) -> (Tracked, Value) {
    let repo = TestRepo::with_files(&[
        (".bugloop/config.yml", PUBLISH),
        ("db.py", "def run(text):\n    return text\n"),
    ]);
    repo.branch("change");
    repo.write("db.py", first);
    repo.commit("evaluate");
    let scripts = tempfile::tempdir().unwrap();
    let model = script(scripts.path(), &[]);
    let report = review_json(repo.path(), &model, &[]);
    let id = finding(&report, "S307").unwrap_or_else(|| panic!("{report:#}"))["id"].clone();
    let tracked = Tracked {
        repo,
        model,
        _scripts: scripts,
    };
    (tracked, id)
}

/// The S307 findings of a report: (id, line).
fn evals(report: &Value) -> Vec<(Value, Value)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["source"]["rule"] == "S307")
        .map(|f| (f["id"].clone(), f["line"].clone()))
        .collect()
}

/// The list of `bugloop findings` has the finding open, and none resolved.
#[track_caller]
fn assert_still_open(list: &str) {
    assert!(
        list.contains("PENDING") && !list.contains("RESOLVED"),
        "{list}"
    );
}

/// A push that rewrites the finding's own line while ruff still reports it there (`eval(a)`
/// becomes `eval(b)`) keeps the finding open: the tool's report is what it stands on, and
/// touching the line is no fix.
#[test]
fn a_rewritten_line_ruff_still_reports_keeps_its_finding_open() {
    let (tracked, id) = reviewed(EVAL_A);
    let (again, list) = tracked.push(EVAL_B, "evaluate the other");
    assert_eq!(evals(&again), [(id, json!(2))], "{again:#}");
    assert_eq!(again["resolved"], json!([]), "{again:#}");
    assert_still_open(&list);
}

/// A push that rewraps an analyzer finding's line (the hit now on the line after where the
/// finding's code was) moves the finding there: one finding, its id and thread kept, never
/// resolved beside a new one for the same `eval`.
#[test]
fn a_rewrapped_hit_is_the_finding_it_was() {
    let (tracked, id) = reviewed("def run(text):\n    value = eval(text)\n    return value\n");
    let (again, list) = tracked.push(
        "# moved down\n\n\ndef run(text):\n    value = (\n        eval(text)\n    )\n    return value\n",
        "wrap",
    );
    assert_eq!(evals(&again), [(id, json!(6))], "{again:#}");
    assert_eq!(again["resolved"], json!([]), "{again:#}");
    assert_eq!(list.matches("ruff-S307").count(), 1, "{list}");
    assert_contains(&list, "db.py:6");
}

/// The finding's code moves up (rewrapped) and a second eval lands at the line it had, which
/// an analyzer's id names (`ruff-S307-db.py-21`): two findings, neither lost as the other.
#[test]
fn a_new_hit_at_a_moved_findings_old_line_is_its_own_finding() {
    let filler = |name: &str| -> String { (1..=20).map(|i| format!("# {name}{i}\n")).collect() };
    let first = format!("{}value = eval(input())\n{}", filler("f"), filler("g"));
    let (tracked, id) = reviewed(&first);
    assert_eq!(id, "ruff-S307-db.py-21");
    let g: Vec<String> = (1..=20).map(|i| format!("# g{i}\n")).collect();
    let second = format!(
        "# f19\n# f20\nvalue = (\n    eval(input())\n)\n{}other = eval(open(\"/tmp/x\").read())\n{}",
        g[..15].concat(),
        g[15..].concat()
    );
    let (again, list) = tracked.push(&second, "wrap, and evaluate a file");
    let mut lines: Vec<Value> = evals(&again).into_iter().map(|(_, line)| line).collect();
    lines.sort_by_key(|l| l.as_u64());
    assert_eq!(lines, [json!(4), json!(21)], "{again:#}");
    assert_eq!(list.matches("ruff-S307").count(), 2, "{list}");
}

/// A finding resolved when its line was fixed, and an eval pushed back onto that line: ruff's
/// hit there is weighed (the finding raised again), never taken for the resolved finding and
/// dropped.
#[test]
fn an_eval_put_back_on_a_resolved_findings_line_raises_it_again() {
    let (tracked, id) = reviewed(EVAL_A);
    let (fixed, _) = tracked.push("def run(a, b):\n    x = int(a)\n    return x\n", "fix");
    assert_eq!(fixed["resolved"][0]["id"], id, "{fixed:#}");
    let (again, list) = tracked.push(EVAL_B, "evaluate again");
    assert_eq!(evals(&again), [(id, json!(2))], "{again:#}");
    assert_still_open(&list);
}

/// A finding followed its code down in an earlier push; a new eval at the line its id names
/// is a finding of its own, not the old one jumping back.
#[test]
fn a_new_eval_at_the_line_a_followed_findings_id_names_is_its_own() {
    let (tracked, id) = reviewed(EVAL_A);
    let followed_down = format!("# c1\n# c2\n# c3\n{EVAL_A}");
    let (followed, _) = tracked.push(&followed_down, "comments");
    assert_eq!(evals(&followed), [], "{followed:#}");
    let evaluated = format!("# c1\ny = eval(input())\n# c3\n{EVAL_A}");
    let (again, list) = tracked.push(&evaluated, "evaluate the input");
    let found = evals(&again);
    assert_eq!(found.len(), 1, "{again:#}");
    assert_ne!(found[0].0, id, "{again:#}");
    assert_eq!(found[0].1, json!(2), "{again:#}");
    assert_eq!(list.matches("ruff-S307").count(), 2, "{list}");
    assert_contains(&list, "db.py:5");
    assert_contains(&list, "db.py:2");
}
