//! Tests of the solve record's format: records stored in today's JSON shape read into the typed
//! step details and write back byte for byte, the pipeline's constructors write those shapes,
//! and details that do not read as written read as reading them key by key did.

#![allow(clippy::unwrap_used)]

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{SolveTransition, TrackedIssue};
use bugloop_report::solve::{Attempt, Round};
use serde_json::{Value, json};

use super::detail::{
    AttemptStep, BuiltRound, DraftOpened, Empty, ReviewedHead, RoundStep, Solution, SolvingStarted,
    Taken, VerifyResult, read, to_json,
};
use super::record::Record;

/// A record as the local store gave it back (each step as `SolveTransition` serializes it), the
/// record of `an_issue_is_solved_reviewed_addressed_and_marked_ready` (tests/loops/solve.rs)
/// as the pipeline wrote it before its details were typed: two attempts, a draft, a review
/// round built and done, the gate, the merge.
const SOLVED: &str = r##"{"from":null,"to":"OPEN","reason":"filed","detail":{},"at":"2026-11-28T12:19:32.8281899Z"}
{"from":"OPEN","to":"ASSIGNED","reason":"taken by bugloop","detail":{"body":"Traceback (most recent call last):\n  File \"app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n","title":"IndexError: list index out of range in last (app/models.py)"},"at":"2026-11-28T12:19:32.831370634Z"}
{"from":"ASSIGNED","to":"SOLVING","reason":"solving on bugloop/1-indexerror-list-index-out-of-range-in, from main at dd05a33a1ce8","detail":{"base":"main","branch":"bugloop/1-indexerror-list-index-out-of-range-in","start":"dd05a33a1ce8c357f62b9ea1e953dcb9c149f86c"},"at":"2026-11-28T12:19:32.853838023Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 1: `grep -qF 'items[-1]' app/models.py` failed [Exited(1)]","detail":{"attempt":1,"left_out":[],"outcome":"`grep -qF 'items[-1]' app/models.py` failed [Exited(1)]","output":"\n[Exited(1)]","passed":false,"summary":"Off by one: read the element before the end.","tree":"55be17c7597c04eb04ae3eea8062c4d95f911265"},"at":"2026-11-28T12:19:33.296004214Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 2: the tests pass (2 files, +6 -1)","detail":{"attempt":2,"commit":"23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768","files":["app/models.py","tests/test_models.py"],"left_out":[],"outcome":"the tests pass (2 files, +6 -1)","passed":true,"summary":"`last` indexed one past the end; it reads items[-1] now. Test: test_last.","verify":[{"command":"grep -qF 'items[-1]' app/models.py","passed":true}]},"at":"2026-11-28T12:19:33.712457138Z"}
{"from":"SOLVING","to":"PR_DRAFT","reason":"draft #2 opened from bugloop/1-indexerror-list-index-out-of-range-in","detail":{"change_request":2,"commit":"23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768"},"at":"2026-11-28T12:19:33.75337264Z"}
{"from":"PR_DRAFT","to":"REVIEWING","reason":"draft #2 reviewed: 2 findings open","detail":{"head":"23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768"},"at":"2026-11-28T12:19:34.026267303Z"}
{"from":"REVIEWING","to":"REVIEWING","reason":"round 1: built 36a4f0c","detail":{"commit":"36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0","phase":"built","previous":"23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768","round":1,"summary":"Both threads addressed.","threads":["last-still-raises-indexerror-on-an-f34d02","the-test-misses-the-empty-list-c249a3"]},"at":"2026-11-28T12:19:34.530006471Z"}
{"from":"REVIEWING","to":"REVIEWING","reason":"round 1: 2 threads addressed in 36a4f0c, tests pass; 0 findings open after its review","detail":{"commit":"36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0","outcome":"2 threads addressed in 36a4f0c, tests pass; 0 findings open after its review","phase":"done","round":1,"threads":["last-still-raises-indexerror-on-an-f34d02","the-test-misses-the-empty-list-c249a3"]},"at":"2026-11-28T12:19:34.812036404Z"}
{"from":"REVIEWING","to":"READY","reason":"the gate passed on 36a4f0c: no open threads, tests and checks green, 8 lines changed; #2 is ready for review","detail":{"head":"36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0"},"at":"2026-11-28T12:19:34.859656889Z"}
{"from":"READY","to":"MERGED","reason":"#2 was merged","detail":{},"at":"2026-11-28T12:19:35.203884021Z"}"##;

/// Steps of the other shapes, from the same tests' records: a protected path and a binary
/// file refused, an agent that did not finish, an escalation, a ready draft's review reopened.
const FROM_TESTS: &str = r##"{"from":"SOLVING","to":"SOLVING","reason":"attempt 1: refused: the change touches protected paths: .github/workflows/ci.yml","detail":{"attempt":1,"guardrail":"protected_paths","outcome":"refused: the change touches protected paths: .github/workflows/ci.yml","passed":false},"at":"2026-11-28T12:19:28.944906069Z"}
{"from":"SOLVING","to":"ESCALATED","reason":"the solution was refused: the change touches protected paths: .github/workflows/ci.yml","detail":{},"at":"2026-11-28T12:19:28.966220477Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 1: the tests pass, but the change has binary files, whose size in lines cannot be judged: app/blob.bin","detail":{"attempt":1,"guardrail":"binary","outcome":"the tests pass, but the change has binary files, whose size in lines cannot be judged: app/blob.bin","passed":false},"at":"2026-11-28T12:19:30.139227049Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 1: the agent did not finish: the provider's answer could not be read (run 20261128-121932-solve-1-1-8746)","detail":{"attempt":1,"left_out":[],"outcome":"the agent did not finish: the provider's answer could not be read (run 20261128-121932-solve-1-1-8746)","output":"","passed":false,"summary":"","tree":"24ee69d844d4ed0f62a47ac0305e67e52830fb30"},"at":"2026-11-28T12:19:32.410682228Z"}
{"from":"READY","to":"REVIEWING","reason":"1 new review thread on #2","detail":{},"at":"2026-11-28T12:19:26.911229066Z"}"##;

/// Steps of the shapes no test above records, written as the pipeline's `json!` literals wrote
/// them (keys in serde_json's order): a run out of budget, an attempt at the time limit, a failed
/// attempt whose edits could not be kept (`tree` null), one over `solve.max_diff_lines`, a
/// failed attempt of a bugloop that kept no edits (no `tree`), a failed round.
const WRITTEN: &str = r##"{"from":"SOLVING","to":"SOLVING","reason":"stopped: the budget ran out during attempt 2 (budgets.*); `bugloop solve 1` resumes","detail":{"outcome":"stopped: the budget ran out during attempt 2 (budgets.*); `bugloop solve 1` resumes","stopped":"budget"},"at":"2026-11-28T12:20:00Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 3: stopped at the time limit","detail":{"attempt":3,"outcome":"stopped at the time limit","passed":false},"at":"2026-11-28T12:20:01Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 4: `python3 -m unittest` failed [Exited(1)]: FAILED (failures=1)","detail":{"attempt":4,"left_out":["`__pycache__/a.pyc`: produced by `python3 -m unittest`"],"outcome":"`python3 -m unittest` failed [Exited(1)]: FAILED (failures=1)","output":"FAILED (failures=1)\n[Exited(1)]","passed":false,"summary":"tried","tree":null},"at":"2026-11-28T12:20:02Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 5: the tests pass, but the change is 900 lines, over solve.max_diff_lines (500)","detail":{"attempt":5,"guardrail":"max_diff_lines","outcome":"the tests pass, but the change is 900 lines, over solve.max_diff_lines (500)","passed":false},"at":"2026-11-28T12:20:03Z"}
{"from":"SOLVING","to":"SOLVING","reason":"attempt 1: the agent changed nothing","detail":{"attempt":1,"left_out":[],"outcome":"the agent changed nothing","output":"","passed":false,"summary":""},"at":"2026-11-28T12:20:04Z"}
{"from":"REVIEWING","to":"REVIEWING","reason":"round 2: the agent changed nothing","detail":{"outcome":"the agent changed nothing","phase":"failed","round":2,"threads":["a-thread"]},"at":"2026-11-28T12:20:05Z"}
{"from":"REVIEWING","to":"REVIEWING","reason":"the review of draft #2 at 36a4f0c was not complete (the budget ran out)","detail":{"commit":"36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0","outcome":"the budget ran out","phase":"unreviewed","round":1,"threads":[]},"at":"2026-12-06T08:30:00Z"}
{"from":"REVIEWING","to":"REVIEWING","reason":"draft #2 reviewed at 23ef5bb: 0 findings open","detail":{"commit":"23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768","outcome":"draft #2 reviewed at 23ef5bb: 0 findings open","phase":"reviewed","round":0,"threads":[]},"at":"2026-12-06T08:31:00Z"}"##;

/// The JSON a detail is recorded as.
fn json(detail: &impl serde::Serialize) -> Value {
    to_json(detail).unwrap()
}

fn steps(lines: &str) -> Vec<SolveTransition> {
    lines.lines().map(step).collect()
}

fn step(line: &str) -> SolveTransition {
    let value: Value = serde_json::from_str(line).unwrap();
    SolveTransition {
        from: serde_json::from_value(value["from"].clone()).unwrap(),
        to: serde_json::from_value(value["to"].clone()).unwrap(),
        reason: value["reason"].as_str().unwrap().to_owned(),
        detail: value["detail"].clone(),
        at: value["at"].as_str().unwrap().parse().unwrap(),
    }
}

/// The step's detail read into the struct of its kind and written back.
fn typed_and_back(step: &SolveTransition) -> Value {
    use SolveState::*;
    match (step.from, step.to) {
        (_, Assigned) => to_json(&read::<Taken>(step)),
        (Some(Assigned), Solving) => to_json(&read::<SolvingStarted>(step)),
        (Some(Solving), Solving) => to_json(&read::<AttemptStep>(step)),
        (Some(Solving), PrDraft) => to_json(&read::<DraftOpened>(step)),
        (Some(PrDraft), Reviewing) | (Some(Reviewing), Ready) => {
            to_json(&read::<ReviewedHead>(step))
        }
        (Some(Reviewing), Reviewing) => to_json(&read::<RoundStep>(step)),
        _ => to_json(&read::<Empty>(step)),
    }
    .unwrap()
}

#[test]
fn every_stored_shape_reads_into_its_struct_and_writes_the_same_json() {
    for lines in [SOLVED, FROM_TESTS, WRITTEN] {
        for (line, stored) in lines.lines().zip(steps(lines)) {
            let rewritten = SolveTransition {
                detail: typed_and_back(&stored),
                ..stored.clone()
            };
            // What the local store keeps (the detail's text) and what the GitHub record comment
            // keeps (the step as JSON) are both the same bytes.
            assert_eq!(rewritten.detail.to_string(), stored.detail.to_string());
            assert_eq!(serde_json::to_string(&rewritten).unwrap(), line);
        }
    }
}

#[test]
fn the_pipeline_writes_the_stored_shapes() {
    let solved = steps(SOLVED);
    let from_tests = steps(FROM_TESTS);
    let written = steps(WRITTEN);
    assert_eq!(json(&Empty {}), solved[0].detail);
    let issue_title = "IndexError: list index out of range in last (app/models.py)";
    let issue_body = "Traceback (most recent call last):\n  File \"app/models.py\", line 2, in last\n    return items[len(items)]\nIndexError: list index out of range\n";
    let taken = Taken {
        title: Some(issue_title.to_owned()),
        body: Some(issue_body.to_owned()),
    };
    assert_eq!(json(&taken), solved[1].detail);
    let started = SolvingStarted {
        branch: "bugloop/1-indexerror-list-index-out-of-range-in".to_owned(),
        base: "main".to_owned(),
        start: "dd05a33a1ce8c357f62b9ea1e953dcb9c149f86c".to_owned(),
    };
    assert_eq!(json(&started), solved[2].detail);
    let failed = AttemptStep::failed(
        1,
        "`grep -qF 'items[-1]' app/models.py` failed [Exited(1)]".to_owned(),
        "Off by one: read the element before the end.".to_owned(),
        "\n[Exited(1)]".to_owned(),
        &[],
        Some("55be17c7597c04eb04ae3eea8062c4d95f911265".to_owned()),
    );
    assert_eq!(json(&failed), solved[3].detail);
    let solution = Solution {
        commit: "23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768".to_owned(),
        summary: "`last` indexed one past the end; it reads items[-1] now. Test: test_last."
            .to_owned(),
        verify: vec![VerifyResult {
            command: "grep -qF 'items[-1]' app/models.py".to_owned(),
            passed: true,
            counts: None,
            junit_reports: None,
        }],
        files: vec![
            "app/models.py".to_owned(),
            "tests/test_models.py".to_owned(),
        ],
    };
    let passed = AttemptStep::passed(
        2,
        "the tests pass (2 files, +6 -1)".to_owned(),
        &solution,
        &[],
    );
    assert_eq!(json(&passed), solved[4].detail);
    let draft = DraftOpened {
        change_request: Some(2),
        commit: solution.commit.clone(),
    };
    assert_eq!(json(&draft), solved[5].detail);
    let head = ReviewedHead {
        head: solution.commit.clone(),
    };
    assert_eq!(json(&head), solved[6].detail);
    let built = BuiltRound {
        number: 1,
        commit: "36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0".to_owned(),
        previous: solution.commit,
        threads: vec![
            "last-still-raises-indexerror-on-an-f34d02".to_owned(),
            "the-test-misses-the-empty-list-c249a3".to_owned(),
        ],
        summary: "Both threads addressed.".to_owned(),
    };
    assert_eq!(json(&RoundStep::built(&built)), solved[7].detail);
    let done = RoundStep::done(
        &built,
        "2 threads addressed in 36a4f0c, tests pass; 0 findings open after its review".to_owned(),
    );
    assert_eq!(json(&done), solved[8].detail);
    let gate = ReviewedHead { head: built.commit };
    assert_eq!(json(&gate), solved[9].detail);
    assert_eq!(json(&Empty {}), solved[10].detail);
    let refused = AttemptStep::breach(
        1,
        "protected_paths",
        "refused: the change touches protected paths: .github/workflows/ci.yml".to_owned(),
    );
    assert_eq!(json(&refused), from_tests[0].detail);
    let binary = AttemptStep::breach(
        1,
        "binary",
        "the tests pass, but the change has binary files, whose size in lines cannot be judged: \
         app/blob.bin"
            .to_owned(),
    );
    assert_eq!(json(&binary), from_tests[2].detail);
    let stop = AttemptStep::stopped("budget", written[0].reason.clone());
    assert_eq!(json(&stop), written[0].detail);
    assert_eq!(
        json(&AttemptStep::stopped_at_the_time_limit(3)),
        written[1].detail
    );
    let not_kept = AttemptStep::failed(
        4,
        "`python3 -m unittest` failed [Exited(1)]: FAILED (failures=1)".to_owned(),
        "tried".to_owned(),
        "FAILED (failures=1)\n[Exited(1)]".to_owned(),
        &["`__pycache__/a.pyc`: produced by `python3 -m unittest`".to_owned()],
        None,
    );
    assert_eq!(json(&not_kept), written[2].detail);
    let too_large = AttemptStep::breach(
        5,
        "max_diff_lines",
        "the tests pass, but the change is 900 lines, over solve.max_diff_lines (500)".to_owned(),
    );
    assert_eq!(json(&too_large), written[3].detail);
    let failed_round = RoundStep::failed(
        2,
        vec!["a-thread".to_owned()],
        "the agent changed nothing".to_owned(),
    );
    assert_eq!(json(&failed_round), written[5].detail);
    let unreviewed = RoundStep::unreviewed(
        1,
        "36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0",
        "the budget ran out".to_owned(),
    );
    assert_eq!(json(&unreviewed), written[6].detail);
    let reviewed = RoundStep::reviewed(
        0,
        "23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768",
        written[7].reason.clone(),
    );
    assert_eq!(json(&reviewed), written[7].detail);
}

/// A review of the draft that was not complete is no round: a built round is still there to
/// finish after it, and the record says which head to review again and how many runs in a row
/// found their review not complete.
#[test]
fn an_incomplete_review_is_reviewed_again_and_counted() {
    let solved = steps(SOLVED);
    let written = steps(WRITTEN);
    let unreviewed_round = &written[6];
    let built = Record::new([&solved[..8], std::slice::from_ref(unreviewed_round)].concat());
    assert!(built.unfinished_round().is_some());
    assert_eq!(
        built.unreviewed(),
        Some((1, "36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0".to_owned()))
    );
    assert_eq!(built.unreviewed_in_a_row(), 1);
    assert!(built.rounds().is_empty());
    let twice = Record::new(
        [
            &solved[..8],
            &[unreviewed_round.clone(), unreviewed_round.clone()],
        ]
        .concat(),
    );
    assert_eq!(twice.unreviewed_in_a_row(), 2);
    // The round finished: nothing is unreviewed, and one round counts.
    let done = Record::new([&solved[..8], &[unreviewed_round.clone(), solved[8].clone()]].concat());
    assert_eq!(done.unfinished_round(), None);
    assert_eq!(done.unreviewed(), None);
    assert_eq!(done.unreviewed_in_a_row(), 0);
    assert_eq!(done.rounds().len(), 1);
    // The draft as opened, reviewed again after an incomplete review: no round, nothing left.
    let opened = {
        let mut first = unreviewed_round.clone();
        first.detail["round"] = json!(0);
        first.detail["commit"] = json!("23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768");
        Record::new([&solved[..7], &[first]].concat())
    };
    assert_eq!(opened.unfinished_round(), None);
    assert_eq!(
        opened.unreviewed(),
        Some((0, "23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768".to_owned()))
    );
    let reviewed = Record::new([&solved[..7], &written[6..8]].concat());
    assert_eq!(reviewed.unreviewed(), None);
    assert_eq!(reviewed.unreviewed_in_a_row(), 0);
    assert!(reviewed.rounds().is_empty());
}

fn issue() -> TrackedIssue {
    TrackedIssue {
        number: 1,
        title: "now edited".to_owned(),
        body: String::new(),
        labels: Vec::new(),
        assignees: Vec::new(),
        open: true,
        opened_at: None,
        conversation: bugloop_forge::ChangeKey("issue:1".to_owned()),
        pattern: None,
    }
}

#[test]
fn a_stored_record_reads_as_it_did() {
    let solved = steps(SOLVED);
    let record = Record::new(solved.clone());
    let (title, body) = record.taken_text().unwrap();
    assert_eq!(title, solved[1].detail["title"]);
    assert_eq!(body, solved[1].detail["body"]);
    let solving = record.solving().unwrap();
    assert_eq!(
        (
            solving.branch.as_str(),
            solving.base.as_str(),
            solving.start.as_str()
        ),
        (
            "bugloop/1-indexerror-list-index-out-of-range-in",
            "main",
            "dd05a33a1ce8c357f62b9ea1e953dcb9c149f86c"
        )
    );
    assert_eq!(solving.started_at, solved[2].at);
    assert_eq!(
        record.attempts(),
        [
            Attempt {
                number: 1,
                passed: false,
                outcome: "`grep -qF 'items[-1]' app/models.py` failed [Exited(1)]".to_owned(),
            },
            Attempt {
                number: 2,
                passed: true,
                outcome: "the tests pass (2 files, +6 -1)".to_owned(),
            }
        ]
    );
    // The last attempt passed: it kept no output.
    assert_eq!(record.last_output(), None);
    assert_eq!(
        record.last_snapshot(),
        Some((1, "55be17c7597c04eb04ae3eea8062c4d95f911265".to_owned()))
    );
    let solution = record.solution().unwrap();
    assert_eq!(solution.commit, "23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768");
    assert_eq!(
        solution.verify,
        [VerifyResult {
            command: "grep -qF 'items[-1]' app/models.py".to_owned(),
            passed: true,
            counts: None,
            junit_reports: None,
        }]
    );
    assert_eq!(solution.files, ["app/models.py", "tests/test_models.py"]);
    assert_eq!(record.change_request(), Some(2));
    let threads = vec![
        "last-still-raises-indexerror-on-an-f34d02".to_owned(),
        "the-test-misses-the-empty-list-c249a3".to_owned(),
    ];
    assert_eq!(
        record.rounds(),
        [Round {
            number: 1,
            threads: threads.clone(),
            commit: Some("36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0".to_owned()),
            outcome: "2 threads addressed in 36a4f0c, tests pass; 0 findings open after its \
                      review"
                .to_owned(),
        }]
    );
    assert_eq!(record.unfinished_round(), None);
    assert_eq!(
        record.verified_head().as_deref(),
        Some("36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0")
    );
    assert_eq!(record.report(&issue(), String::new()).stopped, None);
    // Cut after the round was built: the round is there to finish.
    let built = Record::new(solved[..8].to_vec());
    assert_eq!(
        built.unfinished_round(),
        Some(BuiltRound {
            number: 1,
            commit: "36a4f0c9ccb6e2894bf86d37fa2771cdf69892d0".to_owned(),
            previous: "23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768".to_owned(),
            threads,
            summary: "Both threads addressed.".to_owned(),
        })
    );
    assert!(built.rounds().is_empty());
    assert_eq!(
        built.verified_head().as_deref(),
        Some("23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768")
    );
    // Stopped out of budget after a failed attempt whose edits were not kept: the stop is no
    // attempt, and the failed attempt's output is the last.
    let written = steps(WRITTEN);
    let stopped = Record::new([&solved[..3], &written[2..3], &written[..1]].concat());
    let report = stopped.report(&issue(), String::new());
    assert_eq!(report.stopped.as_deref(), Some("budget"));
    assert_eq!(report.attempts.len(), 1);
    assert_eq!(
        stopped.last_output().as_deref(),
        Some("FAILED (failures=1)\n[Exited(1)]")
    );
    assert_eq!(stopped.last_snapshot(), None);
}

/// The record with `solved`'s step `index` given `detail`.
fn with_detail(index: usize, detail: Value) -> Record {
    let mut solved = steps(SOLVED);
    solved[index].detail = detail;
    Record::new(solved)
}

#[test]
fn details_that_do_not_read_as_written_read_as_before() {
    // Not an object (an array is not read as the fields in order): every field is missing.
    let solved = steps(SOLVED);
    for detail in [json!(null), json!(["a", "b", "c"]), json!("text"), json!(7)] {
        let record = with_detail(1, detail.clone());
        assert_eq!(record.taken_text(), None, "{detail}");
        let record = with_detail(3, detail.clone());
        let first = Attempt {
            number: 0,
            passed: false,
            outcome: solved[3].reason.clone(),
        };
        assert_eq!(record.attempts()[0], first, "{detail}");
        assert_eq!(record.last_snapshot(), None, "{detail}");
    }
    // A field of another type reads as missing: the number 0, not passed, no text, the reason
    // for the outcome.
    let record = with_detail(
        3,
        json!({"attempt": "1", "passed": "true", "outcome": 5, "tree": 7, "output": []}),
    );
    assert_eq!(
        record.attempts()[0],
        Attempt {
            number: 0,
            passed: false,
            outcome: solved[3].reason.clone(),
        }
    );
    assert_eq!(record.last_snapshot(), None);
    // The passing attempt with odd lists: texts only in `files`; every item of `verify` listed,
    // what is not a run as a command-less run that did not pass.
    let mut passing = solved[4].detail.clone();
    passing["files"] = json!(["a.py", 1, null, "b.py"]);
    passing["verify"] = json!([{"command": "make", "passed": true}, "x", {"command": 5}]);
    let solution = with_detail(4, passing).solution().unwrap();
    assert_eq!(solution.files, ["a.py", "b.py"]);
    assert_eq!(
        solution.verify,
        [
            VerifyResult {
                command: "make".to_owned(),
                passed: true,
                counts: None,
                junit_reports: None,
            },
            VerifyResult::default(),
            VerifyResult::default(),
        ]
    );
    // A round of an unknown phase has ended, and its threads are the texts among them.
    let mut round = solved[8].detail.clone();
    round["phase"] = json!("later");
    round["threads"] = json!(["t", 2]);
    let record = with_detail(8, round);
    assert_eq!(record.rounds()[0].threads, ["t"]);
    // The done round's commit is not verified any more: the solution's is.
    assert_eq!(
        record.verified_head().as_deref(),
        Some("23ef5bbdebe4a1e3f85bf478aa85ab0242b6c768")
    );
    // `stopped` with no text still makes the step no attempt, and says no reason.
    let mut stop = solved[3].detail.clone();
    stop["stopped"] = Value::Null;
    let record = with_detail(3, stop);
    assert_eq!(record.attempts().len(), 1, "only attempt 2 is an attempt");
    assert_eq!(record.attempts()[0].number, 2);
}
