//! Proven findings (`review.prove`), through the binary with a scripted model on a Python
//! repository without bugloop's conventions: a real off-by-one whose test fails at head with
//! IndexError (proven, and the comment says so in its first line), a false finding whose test
//! passes (not reproduced, dropped as configured), a test that fails for another reason or does
//! not finish (not proven, whatever the model claims: bugloop's own run and the confirmation
//! decide), and a review whose budget runs out during its proofs.

use std::path::Path;

use bugloop_testkit::json::entry_where;
use bugloop_testkit::{TestRepo, assert_contains, assert_contains_none, assert_starts_with};
use serde_json::{Value, json};

use super::review_report as review;
use super::{bugloop, json_output, script_then, stderr, stdout};

pub(super) const BASE: &str = "def mean(xs):\n    total = 0\n    for i in range(len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";

/// `stats.py` with `config` as the base's configuration, and the branch `feature` bringing the
/// off-by-one.
pub(super) fn repository(config: &str) -> TestRepo {
    off_by_one_branch(&[(".bugloop/config.yml", config)], &[])
}

/// `stats.py` and `on_main` committed on `main`; the branch `feature`, checked out, brings the
/// off-by-one in `mean` and `on_feature`.
fn off_by_one_branch(on_main: &[(&str, &str)], on_feature: &[(&str, &str)]) -> TestRepo {
    let repo = TestRepo::init("main");
    repo.write("stats.py", BASE);
    for (path, text) in on_main {
        repo.write(path, text);
    }
    repo.commit("mean");
    repo.branch("feature");
    repo.write(
        "stats.py",
        &BASE.replace("range(len(xs))", "range(len(xs) + 1)"),
    );
    for (path, text) in on_feature {
        repo.write(path, text);
    }
    repo.commit("off by one");
    repo
}

pub(super) fn finding(title: &str, description: &str) -> Value {
    json!({"file": "stats.py", "line": 3, "evidence": "for i in range(len(xs) + 1):",
           "title": title, "description": description, "score": 8, "category": "logic"})
}

/// The off-by-one of the branch, as the review reports it.
pub(super) fn past_the_end() -> Value {
    finding(
        "Loop reads one past the end",
        "`xs[len(xs)]` raises IndexError.",
    )
}

/// The review's four passes reporting `reported`, then the proof agent's `agent` answers, as a
/// `script:` model in `dir`.
pub(super) fn script_of(dir: &Path, reported: &Value, agent: Vec<Value>) -> String {
    script_then(dir, std::slice::from_ref(reported), agent)
}

/// The proof agent's two answers: it writes `content` to `path`, then says `says` (which names
/// its test).
pub(super) fn writes_test(path: &str, content: &str, says: &str) -> Vec<Value> {
    vec![
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}),
        json!({"text": says}),
    ]
}

/// The review reporting `reported`, the proof's agent writing `test` (and answering), then
/// `confirmation` (when the test fails).
pub(super) fn script(
    dir: &Path,
    reported: &Value,
    test: &str,
    confirmation: Option<Value>,
) -> String {
    let mut agent = writes_test(
        "test_mean_proof.py",
        test,
        "test_mean_proof.py: the test fails, showing the problem.",
    );
    agent.extend(confirmation.map(|c| json!({"text": c.to_string()})));
    script_of(dir, reported, agent)
}

/// [`review`] of `repo` with the model that `model` scripts into a directory of its own.
fn review_scripted(repo: &TestRepo, model: impl FnOnce(&Path) -> String) -> Value {
    let scripts = tempfile::tempdir().unwrap();
    review(repo.path(), &model(scripts.path()))
}

/// The comment of the report's first finding, as `bugloop findings show` prints it.
fn first_comment(dir: &Path, report: &Value) -> String {
    let id = report["findings"][0]["id"].as_str().unwrap();
    stdout(&bugloop(dir, &["findings", "show", id]))
}

/// Proofs of the model's finding alone: bugloop's own rule finds this off-by-one too, and its
/// hit would take a triage call these scripts do not answer.
pub(super) const CONFIG: &str =
    "review:\n  analyzers: []\n  prove:\n    test_command: python3 -m unittest -q {test}\n";

pub(super) const FAILING_TEST: &str = "import unittest\n\nfrom stats import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n";

/// The model of a review that reports the off-by-one in `mean` and proves it with
/// [`FAILING_TEST`], confirming the proof with `confirm`.
fn off_by_one_proved(scripts: &Path, confirm: Option<Value>) -> String {
    script(scripts, &past_the_end(), FAILING_TEST, confirm)
}

/// The report's first proof, which must not have proven its finding, for a reason that starts
/// with `reason`.
#[track_caller]
fn unproven<'a>(report: &'a Value, reason: &str) -> &'a Value {
    let proof = &report["proofs"][0];
    assert_eq!(proof["status"], "not_proven", "{report:#}");
    let said = proof["reason"].as_str().unwrap();
    assert!(said.starts_with(reason), "{proof:#}");
    proof
}

/// The review of `repo` whose model reports the off-by-one, proves it and confirms the proof.
fn review_proving_the_off_by_one(repo: &TestRepo) -> Value {
    review_scripted(repo, |scripts| {
        off_by_one_proved(
            scripts,
            Some(
                json!({"shows_the_problem": true, "why": "IndexError: list index out of range in mean, at xs[i]"}),
            ),
        )
    })
}

#[test]
fn a_real_off_by_one_is_proven_by_a_test_that_fails_at_head() {
    let repo = repository(CONFIG);
    let report = review_proving_the_off_by_one(&repo);
    let proof = &report["proofs"][0];
    assert_eq!(proof["status"], "proven", "{report:#}");
    assert_eq!(proof["test_path"], "test_mean_proof.py");
    assert_eq!(
        proof["command"],
        "python3 -m unittest -q test_mean_proof.py"
    );
    assert!(
        proof["output"].as_str().unwrap().contains("IndexError"),
        "bugloop's own run of the test: {proof:#}"
    );
    assert_eq!(report["findings"].as_array().unwrap().len(), 1);
    // The comment says so in its first line, and carries the test and its output.
    let text = first_comment(repo.path(), &report);
    assert_contains(&text, "**Proven:** a test fails at head");
    assert_contains(&text, "class MeanTest");
    // Listed by its title, not by the line its proof puts first.
    let listed = stdout(&bugloop(repo.path(), &["findings", "--format", "json"]));
    assert_contains(&listed, "\"Loop reads one past the end\"");
    assert!(!listed.contains("\"title\": \"Proven:"), "{listed}");
    // Nothing of the proof is left in the repository.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn a_false_finding_whose_test_passes_is_not_reproduced_and_dropped_as_configured() {
    let repo = repository(&format!("{CONFIG}    unreproduced: drop\n"));
    let scripts = tempfile::tempdir().unwrap();
    let passing = "import unittest\n\nfrom stats import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_empty_is_fine(self):\n        self.assertTrue(callable(mean))\n";
    // The agent claims the test fails; bugloop's own run says it passes.
    let model = script(
        scripts.path(),
        &finding(
            "mean mishandles negative numbers",
            "Negative values are summed wrongly.",
        ),
        passing,
        None,
    );
    // As a person reads it in the terminal: the proof, and the finding not published.
    let output = bugloop(repo.path(), &["review", "--model", &model]);
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}{}", stderr(&output));
    assert_contains(&text, "No new findings.");
    assert_contains(&text, "Proofs (a test run at head)");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("not reproduced"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(
            "a test written for it passed at head (`python3 -m unittest -q test_mean_proof.py`)"
        ),
        "{line}"
    );
    assert!(line.ends_with("[dropped]"), "{line}");
}

#[test]
fn a_test_that_fails_for_another_reason_proves_nothing() {
    let repo = repository(CONFIG);
    let broken = "import unittest\n\nfrom stats import average\n";
    let report = review_scripted(&repo, |scripts| {
        script(
            scripts,
            &past_the_end(),
            broken,
            // A model that would call it proven is not asked: the runner's output decides.
            Some(json!({"shows_the_problem": true, "why": "it fails"})),
        )
    });
    let proof = unproven(
        &report,
        "the test failed before its own assertion (an import failed)",
    );
    assert!(proof["output"].as_str().unwrap().contains("ImportError"));
    // Still published, marked.
    let shown = first_comment(repo.path(), &report);
    assert_contains(&shown, "**Not proven:**");
}

/// The test command is trusted-only: a branch's own configuration that sets it is ignored, so
/// proving stays off (it is on only with a trusted test command) and nothing of the branch's
/// runs.
#[test]
fn a_branch_cannot_choose_the_proofs_test_command() {
    let repo = off_by_one_branch(
        &[],
        &[(
            ".bugloop/config.yml",
            "review:\n  prove:\n    test_command: touch pwned {test}\n",
        )],
    );
    let report = review_scripted(&repo, |scripts| off_by_one_proved(scripts, None));
    assert_eq!(report["proofs"], json!([]), "{report:#}");
    // What the branch tried to change is reported as a finding of its own.
    let findings = report["findings"].to_string();
    assert!(findings.contains("review.prove.test_command"), "{report:#}");
    assert!(!repo.path().join("pwned").exists());
}

/// The proof's "test" made a symlink to a secret of the host (bugloop's own environment, the
/// repository's git config), or a FIFO that would block the read: nothing of them is read on the
/// host, run, or published.
#[test]
fn a_test_that_is_a_link_to_a_host_secret_is_never_read_or_published() {
    for (target, what) in [
        ("/proc/self/environ", "a symlink out of the tree"),
        (
            "../../../../config",
            "a symlink to the repository's git config",
        ),
    ] {
        let repo = repository(CONFIG);
        let scripts = tempfile::tempdir().unwrap();
        let model = script_of(
            scripts.path(),
            &finding("Loop reads one past the end", "IndexError."),
            vec![
                json!({"tool_calls": [{"name": "run", "arguments": {"program": "ln", "args": ["-s", target, "test_secret.py"]}}]}),
                json!({"text": "test_secret.py shows it."}),
            ],
        );
        let output = bugloop(
            repo.path(),
            &["review", "--model", &model, "--format", "json"],
        );
        let text = stdout(&output);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{what}: {text}{}",
            stderr(&output)
        );
        let report: Value = serde_json::from_str(&text).unwrap();
        let proof = unproven(
            &report,
            "the tree holds what a proof may not: test_secret.py is a symlink",
        );
        assert!(proof.get("test").is_none(), "{what}: {proof:#}");
        assert!(
            proof.get("command").is_none(),
            "{what}: nothing ran: {proof:#}"
        );
        assert_contains_none(
            &text,
            &["PATH=", "HOME=", "[core]", "repositoryformatversion"],
        );
        let shown = first_comment(repo.path(), &report);
        assert_contains_none(&shown, &["PATH=", "[core]"]);
    }
}

/// Several files added and none named as the test (a helper the code under review planted, say):
/// nothing is chosen for the agent, nothing runs.
#[test]
fn a_proof_that_adds_several_files_and_names_none_proves_nothing() {
    let repo = repository(CONFIG);
    let report = review_scripted(&repo, |scripts| {
        script_of(
            scripts,
            &finding("Loop reads one past the end", "IndexError."),
            vec![
                json!({"tool_calls": [
                    {"name": "write_file", "arguments": {"path": "conftest.py", "content": "import sys\n"}},
                    {"name": "write_file", "arguments": {"path": "test_one.py", "content": FAILING_TEST}},
                ]}),
                json!({"text": "Done."}),
            ],
        )
    });
    let proof = unproven(&report, "the agent added 2 files");
    assert_eq!(
        proof["reason"],
        "the agent added 2 files and named none of them as its test"
    );
    assert!(proof.get("command").is_none());
}

/// In SARIF, for code scanning: a proven finding is marked, ranked, and carries its test as a
/// related location.
#[test]
fn a_proven_finding_in_sarif_is_marked_ranked_and_points_at_its_test() {
    let repo = repository(CONFIG);
    let scripts = tempfile::tempdir().unwrap();
    let model = off_by_one_proved(
        scripts.path(),
        Some(json!({"shows_the_problem": true, "why": "IndexError in mean"})),
    );
    let sarif = json_output(
        repo.path(),
        &["review", "--model", &model, "--format", "sarif"],
        0,
    );
    bugloop_testkit::sarif::assert_official(&sarif);
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["properties"]["proven"], true, "{result:#}");
    assert_eq!(result["properties"]["proof"], "proven");
    assert_eq!(result["rank"], 85.0);
    assert_eq!(
        result["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "test_mean_proof.py"
    );
}

/// Proofs spend from the review's budget: when it runs out during the first proof, that one and
/// the rest are published unproven, and each says why.
#[test]
fn a_review_out_of_budget_publishes_the_rest_unproven_and_says_so() {
    // Four turns for the review's passes, one for the proof agent's first step.
    let repo = repository(&format!("{CONFIG}budgets:\n  max_turns: 5\n"));
    let scripts = tempfile::tempdir().unwrap();
    let second = json!({"file": "stats.py", "line": 5, "evidence": "return total / len(xs)",
        "title": "Division by zero on an empty list", "score": 7, "category": "logic",
        "description": "`mean([])` raises ZeroDivisionError."});
    let model = script_then(
        scripts.path(),
        &[
            finding("Loop reads one past the end", "IndexError."),
            second,
        ],
        writes_test("test_mean_proof.py", FAILING_TEST, "test_mean_proof.py"),
    );
    // A budget that ran out makes the review incomplete: exit 3, as the README says.
    let report = json_output(
        repo.path(),
        &["review", "--model", &model, "--format", "json"],
        3,
    );
    assert_eq!(report["complete"], false, "{report:#}");
    let proofs = report["proofs"].as_array().unwrap();
    assert_eq!(proofs.len(), 2, "{report:#}");
    for proof in proofs {
        assert_eq!(proof["status"], "not_tried", "{report:#}");
        let reason = proof["reason"].as_str().unwrap();
        assert_starts_with(reason, "the run's budget ran out (");
        assert!(reason.ends_with("): published unproven"), "{proof:#}");
    }
    // Both published, unproven, and their comments say so.
    assert_eq!(
        report["findings"].as_array().unwrap().len(),
        2,
        "{report:#}"
    );
    let shown = first_comment(repo.path(), &report);
    assert_contains(&shown, "**Not tried:** the run's budget ran out");
}

/// A test that does not finish proves nothing: the proof stops at review.prove.timeout_seconds,
/// the finding is published marked, and nothing the test started is left running.
#[test]
fn a_test_that_does_not_finish_proves_nothing_and_is_stopped() {
    let repo = repository(&format!("{CONFIG}    timeout_seconds: 3\n"));
    let hanging = "import time\nimport unittest\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        time.sleep(86400 + 451)\n";
    let agent = writes_test("test_hang_proof.py", hanging, "test_hang_proof.py fails.");
    let started = std::time::Instant::now();
    let report = review_scripted(&repo, |scripts| script_of(scripts, &past_the_end(), agent));
    unproven(&report, "the proof did not finish within 3s");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "the review waited for the test"
    );
    let shown = first_comment(repo.path(), &report);
    assert_contains(&shown, "**Not proven:**");
    // The sandboxed test was killed with the proof.
    let processes = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&processes.stdout).contains("test_hang_proof.py"),
        "the test still runs"
    );
}

/// A branch that adds a package named `unittest` makes the base's own proof command run the
/// branch's code: the real off-by-one's test "passes". That is "not tried", with the reason,
/// and the finding is published, never dropped; the same for a `conftest.py` the branch adds.
#[test]
fn a_change_that_touches_the_test_setup_cannot_make_a_finding_go_away() {
    for (path, content, named) in [
        (
            "unittest/__main__.py",
            "import sys\nsys.exit(0)\n",
            "shadows the module `unittest`",
        ),
        (
            "conftest.py",
            "collect_ignore = ['test_mean_proof.py']\n",
            "`conftest.py` configures or runs code in every test run",
        ),
    ] {
        let repo = repository(&format!("{CONFIG}    unreproduced: drop\n"));
        if path.starts_with("unittest/") {
            repo.write("unittest/__init__.py", "");
        }
        repo.write(path, content);
        repo.commit("test setup");
        // With the shadow, the failing test passes; with conftest.py, a test that passes.
        let test = if path.starts_with("unittest") {
            FAILING_TEST
        } else {
            "import unittest\n\n\nclass MeanTest(unittest.TestCase):\n    def test_fine(self):\n        pass\n"
        };
        let report = review_scripted(&repo, |scripts| {
            script(scripts, &past_the_end(), test, None)
        });
        let proof = &report["proofs"][0];
        assert_eq!(proof["status"], "not_tried", "{path}: {report:#}");
        let reason = proof["reason"].as_str().unwrap();
        assert_starts_with(reason, "a passing test proves nothing about this change:");
        assert!(reason.contains(named), "{path}: {reason}");
        assert_eq!(
            report["findings"].as_array().unwrap().len(),
            1,
            "published: {report:#}"
        );
    }
}

/// A proven finding is resolved by its test, not by the model's word: after a push that changed
/// nothing of the bug (a comment line), a model that says it is resolved leaves it open, the
/// report saying its test still fails; once the code is fixed, the same word resolves it, its
/// test now passing. An attacker's review had such a finding resolved with the test failing.
#[test]
fn a_proven_finding_stays_open_while_its_test_fails() {
    let repo = repository(CONFIG);
    let first = review_proving_the_off_by_one(&repo);
    assert_eq!(first["proofs"][0]["status"], "proven", "{first:#}");
    let id = first["findings"][0]["id"].as_str().unwrap().to_owned();
    let resolving = |scripts: &Path| resolving_model(scripts, &id);
    // A line of code beside the bug that does not fix it: the model's word is weighed (a
    // comment there would not be a change of its code at all).
    let buggy = std::fs::read_to_string(repo.path().join("stats.py")).unwrap();
    repo.write("stats.py", &beside_the_bug(&buggy));
    repo.commit("count first");
    let again = review_scripted(&repo, resolving);
    assert_eq!(again["resolved"], json!([]), "{again:#}");
    let kept = entry_where(&again["rechecked"], "id", &id);
    assert_eq!(kept["outcome"], "kept_open");
    assert_contains(
        kept["reason"].as_str().unwrap(),
        "said to be resolved (fixed by the new code), but the test that proved it, \
         `test_mean_proof.py`, still fails at",
    );
    let listed = stdout(&bugloop(repo.path(), &["findings", "--format", "json"]));
    assert_contains(&listed, "\"status\": \"PENDING\"");
    // Fixed for real: the test passes at the new head, and the same word resolves it.
    repo.write("stats.py", &format!("# The mean of a list.\n{BASE}"));
    repo.commit("fix the loop");
    let fixed = review_scripted(&repo, resolving);
    assert_eq!(fixed["resolved"][0]["id"], id.as_str(), "{fixed:#}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// `buggy` with a line of code added beside its loop that changes nothing it computes.
fn beside_the_bug(buggy: &str) -> String {
    buggy.replace("    total = 0\n", "    total = 0\n    count = len(xs)\n")
}

/// A review's model whose first pass says that finding `id` is resolved.
fn resolving_model(scripts: &Path, id: &str) -> String {
    let mut lines = super::review_lines(&[]);
    let turn = lines[0]["tool_calls"].as_array_mut().unwrap();
    turn.insert(
        0,
        json!({"name": "resolve_finding", "arguments": {"id": id, "reason": "fixed by the new code"}}),
    );
    super::script_named(scripts, "resolving.jsonl", &lines)
}

/// What a change puts in the repository before it is committed.
type Plant = dyn Fn(&TestRepo);

/// What an attacker's review made the proof's test run pass with, the bug left in place: a
/// package named as the test (`python3 -m unittest test_mean_proof.py` imports it instead), a
/// `bz2.py` that `unittest` imports on its way (it exits 0), and bytecode of a passing test under
/// the test's name with an unchecked hash (Python loads it without reading the source). The
/// finding stays open.
#[test]
fn a_proven_findings_test_cannot_be_made_to_pass_by_what_it_loads() {
    let passing = "import unittest\n\n\nclass Fine(unittest.TestCase):\n    def test_fine(self):\n        pass\n";
    let package = |repo: &TestRepo| repo.write("test_mean_proof/__init__.py", passing);
    let bz2 = |repo: &TestRepo| {
        repo.write(
            "bz2.py",
            "import atexit\nimport os\n\natexit.register(lambda: os._exit(0))\n",
        );
    };
    let bytecode = |repo: &TestRepo| {
        repo.write("passing.py", passing);
        let compiled = std::process::Command::new("python3")
            .args([
                "-c",
                "import importlib.util, py_compile; py_compile.compile('passing.py', \
                 cfile=importlib.util.cache_from_source('test_mean_proof.py'), \
                 invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)",
            ])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(compiled.success());
        std::fs::remove_file(repo.path().join("passing.py")).unwrap();
        repo.git(&["add", "-f", "__pycache__"]);
    };
    let cases: [(&Plant, &str); 3] = [
        (
            &package,
            "could not run again: the head holds `test_mean_proof` beside it",
        ),
        (&bz2, "`bz2.py` shadows the module `bz2`"),
        (
            &bytecode,
            "is compiled Python, which a test run may load in place of its source",
        ),
    ];
    for (plant, said) in cases {
        let repo = repository(CONFIG);
        let first = review_proving_the_off_by_one(&repo);
        let id = first["findings"][0]["id"].as_str().unwrap().to_owned();
        // With a line of code beside the bug that does not fix it, so that the model's word
        // that it is resolved is weighed.
        let buggy = std::fs::read_to_string(repo.path().join("stats.py")).unwrap();
        repo.write("stats.py", &beside_the_bug(&buggy));
        plant(&repo);
        repo.commit("tidy");
        let again = review_scripted(&repo, |scripts| resolving_model(scripts, &id));
        assert_eq!(again["resolved"], json!([]), "{said}: {again:#}");
        let kept = entry_where(&again["rechecked"], "id", &id);
        assert_eq!(kept["outcome"], "kept_open");
        assert_contains(kept["reason"].as_str().unwrap(), said);
    }
}
