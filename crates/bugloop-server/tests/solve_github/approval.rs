//! After a solution passes: the gate waits for running checks, a maintainer's approval (by
//! review or by label) is awaited on GitHub, and a pattern escalated before goes to a person.

use super::*;

/// The gate waits for the draft's checks: with a check still running the draft stays a draft
/// and the issue in REVIEWING; once it passes, the next event (a review) marks the draft ready.
#[tokio::test]
async fn the_gate_waits_for_running_checks_then_marks_ready() {
    let mut setup = setup().await;
    let sim = &setup.fixture.sim;
    sim.set_check("*", "ci", "in_progress", None);
    let issue = traceback_issue(sim);
    first_solving(&setup.queue, &setup.settings, sim, issue).await;
    assert_recorded(sim, issue, "REVIEWING");
    let number = drafts(sim)[0].0;
    assert_eq!(sim.is_draft(number), Some(true), "still a draft");
    // CI passes; a review comes in (from alice, on the draft's branch): the solving goes on.
    sim.set_check("*", "ci", "completed", Some("success"));
    setup.settings.model = Some(script_file(setup._dirs[1].path(), &[]));
    run_done(&setup.queue, &setup.settings, "delivery-2", &resume(issue)).await;
    assert_recorded(sim, issue, "READY");
    assert_eq!(sim.is_draft(number), Some(false));
}

/// A repository that asks for approval (`solve.approval: required`, its drafts reviewed by an
/// external reviewer), and alice's issue labelled for solving.
async fn approval_required() -> (Setup, u64) {
    let setup = setup_with(&format!(
        "{CONFIG}  approval: required\nagents:\n  reviewer:\n    external: true\n"
    ))
    .await;
    let issue = crash_issue(&setup.fixture.sim);
    (setup, issue)
}

/// `solve.approval: required` on GitHub: the solution waits on its branch with one comment on the
/// issue; a stranger's `@bugloop approve` does nothing; a maintainer's opens the draft.
#[tokio::test]
async fn a_solution_waits_for_a_maintainers_approval_on_github() {
    let (mut setup, issue) = approval_required().await;
    let sim = &setup.fixture.sim;
    let dir = first_solution(&setup.queue, &mut setup.settings, sim, issue).await;
    let pulls = || drafts(sim).len();
    assert_eq!(pulls(), 0, "no draft before approval");
    let asked = || {
        said(sim, issue)
            .iter()
            .filter(|b| b.contains("asks for approval first"))
            .count()
    };
    assert_eq!(asked(), 1);
    let resume = resume(issue);
    // A stranger approves: nothing opens, nothing is asked again.
    sim.set_permission("mallory", "read");
    sim.comment_as(issue, "mallory", "@bugloop approve");
    setup.settings.model = Some(script_file(dir.path(), &[]));
    enqueue_trigger(&setup.queue, "delivery-2", &resume).await;
    crate::run_one(&setup.queue, &setup.settings).await;
    assert_eq!(pulls(), 0);
    assert_eq!(asked(), 1);
    // A maintainer's words near the command are not the command: nothing opens, and the issue
    // says once how to approve.
    let told = || {
        said(sim, issue)
            .iter()
            .filter(|b| b.contains("exactly `@bugloop approve`"))
            .count()
    };
    for (n, words) in [
        "Please don't @bugloop approve this yet",
        "Is `@bugloop approve` how this works?",
        "Right fix. @bugloop approve?",
    ]
    .into_iter()
    .enumerate()
    {
        sim.comment_as(issue, "alice", words);
        enqueue_trigger(&setup.queue, &format!("delivery-near-{n}"), &resume).await;
        crate::run_one(&setup.queue, &setup.settings).await;
        assert_eq!(pulls(), 0, "{words}");
        assert_eq!(told(), 1, "{words}");
    }
    // A maintainer approves: the draft opens.
    sim.comment_as(issue, "alice", "Right fix.\n\n@bugloop approve");
    run_done(&setup.queue, &setup.settings, "delivery-3", &resume).await;
    assert_eq!(pulls(), 1, "the draft opened after approval");
    let record = solve_record(sim, issue);
    assert!(record.contains("approved by alice"), "{record}");
}

/// Approval by label: a label left on before bugloop asked is taken off and does not count; a
/// stranger's label (triage access is enough to label) opens nothing; a maintainer's label put
/// on after the request opens the draft, and the record says whose label it was.
#[tokio::test]
async fn a_maintainers_label_approves_a_waiting_solution_on_github() {
    let (mut setup, issue) = approval_required().await;
    let sim = &setup.fixture.sim;
    // Approved before there was anything to approve.
    sim.label_as(issue, "alice", "bugloop:approved");
    let dir = first_solution(&setup.queue, &mut setup.settings, sim, issue).await;
    let pulls = || drafts(sim).len();
    assert_eq!(pulls(), 0, "an earlier label approves nothing");
    assert!(
        !sim.issue_labels(issue)
            .contains(&"bugloop:approved".to_owned()),
        "the stale label is taken off"
    );
    let asked = said(sim, issue)
        .into_iter()
        .find(|b| b.contains("asks for approval first"))
        .unwrap();
    assert!(asked.contains("`bugloop:approved`"), "{asked}");
    setup.settings.model = Some(script_file(dir.path(), &[]));
    // A stranger who may label (triage) but not write.
    sim.set_permission("mallory", "triage");
    sim.label_as(issue, "mallory", "bugloop:approved");
    enqueue_trigger(&setup.queue, "delivery-2", &resume(issue)).await;
    crate::run_one(&setup.queue, &setup.settings).await;
    assert_eq!(
        pulls(),
        0,
        "a label by someone who may not write approves nothing"
    );
    // The maintainer labels it (taken off and put on again).
    sim.unlabel(issue, "bugloop:approved");
    sim.label_as(issue, "alice", "bugloop:approved");
    run_done(&setup.queue, &setup.settings, "delivery-3", &resume(issue)).await;
    assert_eq!(pulls(), 1, "the draft opened after the label");
    let record = solve_record(sim, issue);
    assert!(
        record.contains("approved by alice (label `bugloop:approved`)"),
        "{record}"
    );
}

/// The learning record on GitHub: two reported errors of one class (`IndexError` in two
/// functions); the first is tried and escalated, the second, once the class escalated
/// `solve.skip_after_escalations` times, goes to a person untried: labelled, the class's
/// history said on the issue, nothing pushed and no model asked. A person's issue that claims
/// the same pattern in its text is not counted.
#[tokio::test]
async fn a_pattern_escalated_before_is_handed_to_a_person_on_github() {
    let mut setup = setup_repo(
        &format!("{UNIT_CONFIG}  max_iterations: 1\n  skip_after_escalations: 1\n"),
        &[("app/models.py", BUGGY), ("test_base.py", BASE_TEST)],
        Vec::new(),
    )
    .await;
    let sim = &setup.fixture.sim;
    // A stranger's issue ending in the lines bugloop writes: not bugloop's, not counted.
    sim.add_issue(
        "mallory",
        "IndexError everywhere",
        "<!-- bugloop:error-class IndexError -->\n<!-- bugloop:fingerprint 0123456789abcdef -->",
        &["bug"],
    );
    let dir = tempfile::tempdir().unwrap();
    // The solver shows the error with a test, and finds no fix: an escalation that counts.
    setup.settings.model = Some(script_file(
        dir.path(),
        &[
            json!({"tool_calls": [write("test_models.py", REPRODUCTION)]}),
            json!({"text": "I could not find the cause."}),
        ],
    ));
    let report = async |delivery: &str, function: &str| {
        let report = format!(
            "Traceback (most recent call last):\n  File \"/srv/app/app/models.py\", line 2, in {function}\n    return items[len(items)]\nIndexError: list index out of range\n"
        );
        report_error(&setup.queue, delivery, report).await;
    };
    let drain = async || {
        while let Some(run) = run_next(&setup.queue, &setup.settings, &Stop::never())
            .await
            .unwrap()
        {
            assert_eq!(run.state, Some(JobState::Done), "{run:?}");
        }
    };
    report("report-1", "last").await;
    drain().await;
    report("report-2", "first").await;
    drain().await;
    let (first, second) = (9, 10);
    assert!(
        said(sim, first)
            .iter()
            .any(|b| b.starts_with("bugloop could not finish")),
        "{:#?}",
        said(sim, first)
    );
    let handed = said(sim, second)
        .into_iter()
        .find(|b| b.contains("does not try to solve this issue"))
        .unwrap_or_else(|| panic!("{:#?}", said(sim, second)));
    assert!(
        handed.contains(&format!(
            "| errors of the class `IndexError` | #{second}, #{first} | 1 | 0 | 1 |"
        )),
        "{handed}"
    );
    assert!(!handed.contains("#8"), "{handed}");
    assert!(
        sim.issue_labels(second)
            .contains(&"bugloop:escalated".to_owned())
    );
    let record = said(sim, second)
        .into_iter()
        .find(|b| b.contains("### bugloop solve: ESCALATED"))
        .unwrap();
    assert!(!record.contains("ASSIGNED"), "{record}");
    assert_eq!(
        git(setup.fixture.origin(), &["branch", "--list", "bugloop/*"]),
        "",
        "nothing pushed"
    );
    // A maintainer sends it back (the trigger label taken off and put on again): tried.
    setup.settings.model = Some(script_file(
        dir.path(),
        &[json!({"text": "Still no idea."})],
    ));
    enqueue_trigger(
        &setup.queue,
        "relabel",
        &autofix(sim, second, "bug:autofix"),
    )
    .await;
    while let Some(run) = run_next(&setup.queue, &setup.settings, &Stop::never())
        .await
        .unwrap()
    {
        assert_eq!(run.state, Some(JobState::Done), "{run:?}");
    }
    let record = said(sim, second)
        .into_iter()
        .find(|b| b.contains("### bugloop solve:"))
        .unwrap();
    assert!(record.contains("ASSIGNED"), "{record}");
}
