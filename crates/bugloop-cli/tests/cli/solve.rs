//! The solve pipeline as a user runs it: `bugloop report` files a crash (and counts it when it
//! comes again), `bugloop solve` takes it through two attempts, a draft, a review with two
//! findings and a round to a draft marked ready with a scripted model (`script:` file), and
//! `bugloop status` shows where it stands and how it got there. The modules below run what a
//! real repository and a real day bring: test byproducts, runs that stop, other users.

/// A scenario's two tests: as the test's own user, and as an unprivileged one (uid 65534 when
/// the tests run as root; otherwise the first test already is that run). Doc comments apply to
/// both.
macro_rules! as_each_user {
    ($(#[$doc:meta])* $scenario:ident => $me:ident, $unprivileged:ident) => {
        $(#[$doc])*
        #[test]
        fn $me() {
            $scenario(&Runner::me());
        }

        $(#[$doc])*
        #[test]
        fn $unprivileged() {
            if let Some(runner) = Runner::unprivileged() {
                $scenario(&runner);
            }
        }
    };
}

#[path = "solve/byproducts.rs"]
mod byproducts;
#[path = "solve/coverage.rs"]
mod coverage;
#[path = "solve/learning.rs"]
mod learning;
#[path = "solve/parallel.rs"]
mod parallel;
#[path = "solve/prompts.rs"]
mod prompts;
#[path = "solve/regression.rs"]
mod regression;
#[path = "solve/resume.rs"]
mod resume;
#[path = "solve/reviewers.rs"]
mod reviewers;
#[path = "solve/runner.rs"]
mod runner;
#[path = "solve/seed.rs"]
mod seed;
#[path = "solve/watch.rs"]
mod watch;

use std::path::Path;
use std::process::Output;

use bugloop_github_sim::fixture::review_lines;
use bugloop_testkit::{TestRepo, assert_contains, assert_starts_with, git};
use serde_json::{Value, json};

use self::runner::{Runner, script_of, text, write};

const BUGGY: &str = "def last(items):\n    return items[len(items)]\n";
const SOLVED: &str = "def last(items):\n    return items[-1]\n";
const TEST: &str =
    "from app.models import last\n\n\ndef test_last():\n    assert last([1, 2, 3]) == 3\n";
const TRACE: &str = "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n";

/// `bugloop args...` in `dir`, as the test's user.
pub(crate) fn bugloop(dir: &Path, args: &[&str], stdin: &str) -> Output {
    Runner::me().run(dir, args, stdin)
}

#[test]
fn a_reported_crash_is_solved_to_a_ready_draft() {
    let repo = TestRepo::with_files(&[
        ("app/models.py", BUGGY),
        (
            ".bugloop/config.yml",
            "solve:\n  test_commands:\n    - grep -qF 'items[-1]' app/models.py\n",
        ),
    ]);
    let reported = bugloop(repo.path(), &["report", "--format", "json"], TRACE);
    assert_eq!(reported.status.code(), Some(0), "{}", text(&reported));
    let issue: Value = serde_json::from_slice(&reported.stdout).unwrap();
    assert_eq!(issue["issue"], 1);
    // The same crash from another deployment: counted, not filed again.
    let again = bugloop(
        repo.path(),
        &["report", "--format", "json"],
        &TRACE.replace("/srv/app/", "/home/deploy/current/"),
    );
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (again["issue"].clone(), again["count"].clone()),
        (json!(1), json!(2))
    );
    // Filed, not taken yet: said alike in the list, for the one issue, and in JSON (null).
    let listed = bugloop(repo.path(), &["status"], "");
    assert_starts_with(&text(&listed), "#1     not taken ");
    let one = bugloop(repo.path(), &["status", "1"], "");
    assert_contains(&text(&one), ": not taken by bugloop");

    // Solved in two attempts; the draft's review finds two things; one round addresses both.
    let mut lines = vec![
        json!({"tool_calls": [write("app/models.py", "def last(items):\n    return items[len(items) - 2]\n")]}),
        json!({"text": "Read the element before the end."}),
        json!({"tool_calls": [write("app/models.py", SOLVED), write("tests/test_models.py", TEST)]}),
        json!({"text": "`last` read one past the end; it reads items[-1] now."}),
    ];
    lines.extend(review_lines(&[
        json!({
            "file": "app/models.py", "line": 2, "evidence": "return items[-1]",
            "title": "An empty list still raises", "description": "items[-1] raises IndexError on [].",
            "score": 7, "category": "logic"
        }),
        json!({
            "file": "tests/test_models.py", "line": 5, "evidence": "assert last([1, 2, 3]) == 3",
            "title": "The test misses the empty list", "description": "The crash needs a test for [].",
            "score": 6, "category": "logic"
        }),
    ]));
    lines.push(json!({"tool_calls": [
        write("app/models.py", "def last(items):\n    return items[-1] if items else None\n"),
        write("tests/test_models.py", &format!("{TEST}    assert last([]) is None\n")),
    ]}));
    lines.push(json!({"text": "Guarded the empty list and tested it."}));
    lines.extend(review_lines(&[]));
    let scripts = tempfile::tempdir().unwrap();
    let model = script_of(scripts.path(), "solve.jsonl", &lines);

    let solved = bugloop(
        repo.path(),
        &["solve", "1", "--model", &model, "--format", "json"],
        "",
    );
    assert_eq!(solved.status.code(), Some(0), "{}", text(&solved));
    let report: Value = serde_json::from_slice(&solved.stdout).unwrap();
    assert_eq!(report["state"], "READY", "{report:#}");
    assert_eq!(report["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(report["rounds"][0]["threads"].as_array().unwrap().len(), 2);
    assert_eq!(report["rounds"].as_array().unwrap().len(), 1);
    let branch = report["branch"].as_str().unwrap();
    assert_starts_with(branch, "bugloop/1-");
    assert_eq!(
        git(repo.path(), &["show", &format!("{branch}:app/models.py")]),
        "def last(items):\n    return items[-1] if items else None"
    );

    let all = bugloop(repo.path(), &["status"], "");
    assert_eq!(all.status.code(), Some(0), "{}", text(&all));
    assert_starts_with(&text(&all), "#1     READY");
    let one = bugloop(repo.path(), &["status", "1"], "");
    let shown = text(&one);
    for step in [
        "(new) -> OPEN: filed (opened 2",
        "OPEN -> ASSIGNED: taken by bugloop",
        "ASSIGNED -> SOLVING: solving on bugloop/1-",
        "SOLVING -> SOLVING: attempt 1: `grep -qF 'items[-1]' app/models.py` failed",
        "SOLVING -> SOLVING: attempt 2: the tests pass (2 files,",
        "SOLVING -> PR_DRAFT: draft #2 opened from bugloop/1-",
        "PR_DRAFT -> REVIEWING: draft #2 reviewed: 2 findings open",
        "REVIEWING -> REVIEWING: round 1: built",
        "REVIEWING -> REVIEWING: round 1: 2 threads addressed in",
        "REVIEWING -> READY: the gate passed on",
    ] {
        assert!(shown.contains(step), "{step}\n{shown}");
    }

    // A number that is no issue is an error that says so.
    Runner::me().exits_saying(
        repo.path(),
        &["solve", "7", "--model", &model],
        2,
        "no issue or change request #7",
    );
}

const MEAN: &str = "def mean(xs):\n    total = 0\n    for i in range(len(xs) + 1):\n        total += xs[i]\n    return total / len(xs)\n";
const MEAN_TRACE: &str = "Traceback (most recent call last):\n  File \"/srv/app/stats.py\", line 4, in mean\n    total += xs[i]\nIndexError: list index out of range\n";
/// `mean` guarded against the empty list too (what its reviewers ask for).
const GUARDED: &str = "def mean(xs):\n    if not xs:\n        return 0\n    total = 0\n    for i in range(len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";
/// The solve configuration that runs the repository's Python tests.
const PYTHON_TESTS: &str = "solve:\n  test_commands:\n    - python3 -m unittest -q\n";

/// The model's solution of `mean`'s crash in one turn (a test and the fix), and its summary.
fn tested_fix() -> [Value; 2] {
    [
        json!({"tool_calls": [write("test_stats.py", MEAN_TEST), write("stats.py", &MEAN.replace(" + 1", ""))]}),
        json!({"text": "The loop stops at the last element; tested."}),
    ]
}

/// `reviewer`'s line comment on the draft (#2) at `stats.py:line`, which must be taken: `mean([])`
/// divides by zero.
fn comment_divides_by_zero(runner: &Runner, dir: &Path, line: &str, reviewer: &str) -> Output {
    let comment = "mean([]) divides by zero: return 0 for an empty list, and test it.";
    let args = [
        "comment", "--change", "2", "--file", "stats.py", "--line", line, "--as", reviewer, comment,
    ];
    runner.ok(dir, &args, "")
}

/// A review round's answer to a reviewer who asks for the empty list: `mean` guarded
/// ([`GUARDED`]) and a test of it.
fn guarded_round() -> [Value; 2] {
    [
        json!({"tool_calls": [
            write("stats.py", GUARDED),
            write("test_stats.py", &format!("{MEAN_TEST}\n    def test_empty(self):\n        self.assertEqual(mean([]), 0)\n")),
        ]}),
        json!({"text": "An empty list has mean 0 now; tested."}),
    ]
}

const MEAN_TEST: &str = "import unittest\n\nfrom stats import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";

/// A chained traceback is titled by the exception raised last (the one that went uncaught),
/// and a JSON log line at ERROR with a crash's trace is as severe as the bare trace.
#[test]
fn a_chained_traceback_is_the_last_error_and_a_logged_crash_is_high() {
    let repo = TestRepo::with_files(&[("app/models.py", BUGGY)]);
    let chained = format!(
        "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n\nDuring handling of the above exception, another exception occurred:\n\n{}",
        "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 1, in last\n    def last(items):\nRuntimeError: no last item\n"
    );
    let filed = bugloop(repo.path(), &["report", "--format", "json"], &chained);
    assert_eq!(filed.status.code(), Some(0), "{}", text(&filed));
    let filed: Value = serde_json::from_slice(&filed.stdout).unwrap();
    assert!(
        filed["title"]
            .as_str()
            .unwrap()
            .starts_with("RuntimeError: no last item"),
        "{filed:#}"
    );
    let logged = serde_json::json!({"level": "error", "message": "worker crashed", "exc_info": TRACE.trim_end()});
    let filed = bugloop(
        repo.path(),
        &["report", "--format", "json"],
        &format!("{logged}\n"),
    );
    let filed: Value = serde_json::from_slice(&filed.stdout).unwrap();
    assert_eq!(filed["severity"], "high", "{filed:#}");
    let bare = bugloop(repo.path(), &["report", "--format", "json"], TRACE);
    let bare: Value = serde_json::from_slice(&bare.stdout).unwrap();
    assert_eq!(bare["severity"], "high", "{bare:#}");
}
