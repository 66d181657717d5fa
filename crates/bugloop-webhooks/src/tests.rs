//! Every example GitHub publishes of the events bugloop handles (`@octokit/webhooks-examples`,
//! installed by the test command) parses; triggers are decided from real payloads, edited.

use bugloop_testkit::github::webhook_examples as examples;
use serde_json::{Value, json};

use super::*;
use crate::trigger::TriggerSettings;

const HANDLED: [&str; 7] = [
    "pull_request",
    "issue_comment",
    "pull_request_review_comment",
    "pull_request_review",
    "issues",
    "check_suite",
    "workflow_dispatch",
];

/// `decide(event, payload)` matches the pattern (guard and all); the decision is shown when not.
macro_rules! assert_decides {
    ($event:expr, $payload:expr, $($pattern:tt)+) => {{
        let decided = decide($event, $payload);
        assert!(matches!(decided, $($pattern)+), "{decided:?}");
    }};
}

#[test]
fn an_app_subscribes_to_every_handled_event_actions_do_not_own() {
    let mut expected: Vec<&str> = HANDLED
        .into_iter()
        .filter(|event| *event != "workflow_dispatch")
        .collect();
    let mut app = APP_EVENTS.to_vec();
    expected.sort_unstable();
    app.sort_unstable();
    assert_eq!(app, expected);
}

fn example(event: &str, action: &str) -> Value {
    examples(event)
        .into_iter()
        .find(|e| e["action"] == action)
        .unwrap_or_else(|| panic!("no {event} {action} example"))
}

fn settings() -> TriggerSettings {
    TriggerSettings {
        bot_logins: vec!["bugloop-app[bot]".to_owned()],
        mention: "bugloop".to_owned(),
        autofix_label: "bug:autofix".to_owned(),
        approve_label: "bugloop:approved".to_owned(),
        solve_branch_prefix: "bugloop/".to_owned(),
    }
}

fn decide(event: &str, payload: &Value) -> Result<Trigger, Skip> {
    let parsed = parse(event, payload.to_string().as_bytes()).unwrap();
    trigger(&parsed, &settings())
}

#[test]
fn every_example_of_a_handled_event_parses() {
    let mut count = 0;
    for event in HANDLED {
        let examples = examples(event);
        assert!(!examples.is_empty(), "no examples of {event}");
        for payload in examples {
            let parsed = parse(event, payload.to_string().as_bytes());
            assert!(parsed.is_ok(), "{event} {}: {parsed:?}", payload["action"]);
            count += 1;
        }
    }
    // 29 pull_request, 9 issue_comment, 5 review comments, 4 reviews, 29 issues in 7.6.1.
    assert!(count >= 70, "{count}");
    assert_eq!(
        parse("star", b"{}").unwrap(),
        Event::Unhandled("star".to_owned())
    );
}

#[test]
fn a_payload_that_does_not_parse_names_the_field() {
    let mut payload = example("pull_request", "opened");
    payload["pull_request"]["number"] = json!("seven");
    let error = parse("pull_request", payload.to_string().as_bytes()).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("pull_request.number"), "{text}");
    assert!(parse("issue_comment", b"not json").is_err());
}

#[test]
fn pushes_to_a_pull_request_ask_for_a_review() {
    let opened = example("pull_request", "opened");
    match decide("pull_request", &opened).unwrap() {
        Trigger::Review {
            number, head, fork, ..
        } => {
            assert_eq!(number, opened["pull_request"]["number"].as_u64().unwrap());
            assert_eq!(
                head,
                opened["pull_request"]["head"]["sha"].as_str().unwrap()
            );
            assert!(!fork);
        }
        other => panic!("{other:?}"),
    }
    let synchronize = example("pull_request", "synchronize");
    assert_decides!("pull_request", &synchronize, Ok(Trigger::Review { .. }));
    // A fork's pull request is reviewed, and marked a fork.
    let mut forked = opened.clone();
    forked["pull_request"]["head"]["repo"]["full_name"] = json!("stranger/Hello-World");
    assert_decides!(
        "pull_request",
        &forked,
        Ok(Trigger::Review { fork: true, .. })
    );
    // Drafts wait for ready_for_review; closing asks for nothing.
    let mut draft = opened;
    draft["pull_request"]["draft"] = json!(true);
    assert_eq!(decide("pull_request", &draft), Err(Skip::Draft));
    let closed = example("pull_request", "closed");
    assert_decides!("pull_request", &closed, Err(Skip::Action { .. }));
}

#[test]
fn events_sent_by_bots_are_dropped_before_any_work() {
    let mut own = example("pull_request", "opened");
    own["sender"] = json!({"login": "bugloop-app[bot]", "type": "Bot"});
    assert_eq!(
        decide("pull_request", &own),
        Err(Skip::FromBot("bugloop-app[bot]".to_owned()))
    );
    let mut other_bot = example("issue_comment", "created");
    other_bot["sender"] = json!({"login": "dependabot[bot]", "type": "Bot"});
    other_bot["comment"]["body"] = json!("@bugloop fix all");
    assert_decides!("issue_comment", &other_bot, Err(Skip::FromBot(_)));
}

#[test]
fn comments_must_address_bugloop_or_answer_a_review_thread() {
    let mut comment = example("issue_comment", "created");
    comment["issue"]["pull_request"] = json!({"url": "https://api.github.com/repos/o/r/pulls/1"});
    comment["comment"]["body"] = json!("@bugloop fix all");
    match decide("issue_comment", &comment).unwrap() {
        Trigger::Comment { kind, body, id, .. } => {
            assert_eq!(kind, CommentKind::Issue);
            assert_eq!(body, "@bugloop fix all");
            assert_eq!(id, comment["comment"]["id"].as_u64().unwrap());
        }
        other => panic!("{other:?}"),
    }
    comment["comment"]["body"] = json!("see https://example.com/@bugloop");
    assert_eq!(
        decide("issue_comment", &comment),
        Err(Skip::NoMention("bugloop".to_owned()))
    );
    // On an issue that is not a pull request.
    let mut on_issue = comment.clone();
    on_issue["issue"]
        .as_object_mut()
        .unwrap()
        .remove("pull_request");
    on_issue["comment"]["body"] = json!("@bugloop fix");
    assert_decides!("issue_comment", &on_issue, Err(Skip::NotAPullRequest(_)));
    // `@bugloop approve` on an issue lets a solution waiting for approval go on.
    on_issue["comment"]["body"] = json!("Looks right. @bugloop approve");
    assert_decides!(
        "issue_comment",
        &on_issue,
        Ok(Trigger::Solve { label: None, .. })
    );

    // A reply in a review thread goes to the job (it may answer a finding), mention or not.
    let mut reply = example("pull_request_review_comment", "created");
    reply["comment"]["in_reply_to_id"] = json!(3_000_000_001_u64);
    reply["comment"]["body"] = json!("this is intended");
    assert_decides!(
        "pull_request_review_comment",
        &reply,
        Ok(Trigger::Comment {
            kind: CommentKind::Review,
            in_reply_to: Some(3_000_000_001),
            ..
        })
    );
    let mut fresh = example("pull_request_review_comment", "created");
    fresh["comment"]["body"] = json!("nice");
    assert_decides!(
        "pull_request_review_comment",
        &fresh,
        Err(Skip::NoMention(_))
    );

    // A review's body.
    let mut review = example("pull_request_review", "submitted");
    review["review"]["body"] = json!("@bugloop think: is the lock needed?");
    assert_decides!(
        "pull_request_review",
        &review,
        Ok(Trigger::Comment {
            kind: CommentKind::ReviewBody,
            ..
        })
    );
}

#[test]
fn an_issue_labelled_for_autofix_asks_for_a_fix() {
    let mut labelled = example("issues", "labeled");
    labelled["label"]["name"] = json!("bug:autofix");
    assert_decides!("issues", &labelled, Ok(Trigger::Solve { .. }));
    labelled["label"]["name"] = json!("bug");
    assert_eq!(
        decide("issues", &labelled),
        Err(Skip::Label("bug".to_owned()))
    );
}

#[test]
fn the_approval_label_lets_a_waiting_solution_go_on() {
    let mut labelled = example("issues", "labeled");
    labelled["label"]["name"] = json!("bugloop:approved");
    labelled["sender"]["type"] = json!("User");
    let number = labelled["issue"]["number"].as_u64().unwrap();
    assert_decides!(
        "issues",
        &labelled,
        Ok(Trigger::Solve { issue, label: None, labelled_by: None, .. }) if issue == number
    );
    // bugloop's own labelling asks for nothing.
    labelled["sender"]["login"] = json!("bugloop-app[bot]");
    assert!(decide("issues", &labelled).is_err());
}

#[test]
fn a_labelled_issue_is_solved_in_the_order_of_its_severity() {
    let mut labelled = example("issues", "labeled");
    labelled["label"]["name"] = json!("bug:autofix");
    let priority = |payload: &Value| decide("issues", payload).unwrap().priority();
    labelled["issue"]["labels"] = json!([]);
    labelled["issue"]["body"] = json!("**Severity:** high");
    // Anyone may write that line; only bugloop's own issue is believed.
    assert_eq!(priority(&labelled), 2);
    labelled["issue"]["user"]["login"] = json!("bugloop-app[bot]");
    assert_eq!(priority(&labelled), 3);
    labelled["issue"]["labels"] = json!([{"name": "severity:critical"}]);
    assert_eq!(priority(&labelled), 4);
    // What a person waits on goes before any solving.
    let review = Trigger::Review {
        repository: "acme/widgets".to_owned(),
        number: 1,
        head: "a".to_owned(),
        base: "b".to_owned(),
        fork: false,
        installation: None,
    };
    assert!(review.priority() > 4);
}

#[test]
fn a_review_of_a_solve_draft_asks_its_solving_to_go_on() {
    let mut comment = example("pull_request_review_comment", "created");
    comment["comment"]["body"] = json!("Please handle the empty list.");
    comment["comment"]["in_reply_to_id"] = Value::Null;
    comment["sender"]["type"] = json!("User");
    let own = comment["repository"].clone();
    comment["pull_request"]["head"]["repo"] = own.clone();
    comment["pull_request"]["base"]["repo"] = own;
    comment["pull_request"]["head"]["ref"] = json!("bugloop/12-indexerror-in-last");
    assert!(
        matches!(
            decide("pull_request_review_comment", &comment),
            Ok(Trigger::Solve { issue: 12, .. })
        ),
        "{:?}",
        decide("pull_request_review_comment", &comment)
    );
    // Another branch, or a fork's branch of the same name: a comment like any other.
    comment["pull_request"]["head"]["ref"] = json!("feature/12-x");
    assert!(decide("pull_request_review_comment", &comment).is_err());
    comment["pull_request"]["head"]["ref"] = json!("bugloop/12-indexerror-in-last");
    comment["pull_request"]["head"]["repo"]["full_name"] = json!("mallory/fork");
    assert!(decide("pull_request_review_comment", &comment).is_err());
    let mut review = example("pull_request_review", "submitted");
    review["review"]["body"] = json!("Changes requested.");
    review["sender"]["type"] = json!("User");
    let own = review["repository"].clone();
    review["pull_request"]["head"]["repo"] = own.clone();
    review["pull_request"]["base"]["repo"] = own;
    review["pull_request"]["head"]["ref"] = json!("bugloop/3-crash");
    assert_decides!(
        "pull_request_review",
        &review,
        Ok(Trigger::Solve { issue: 3, .. })
    );
    // An external reviewer (another App) reviewing the draft: the review it may wait for.
    review["sender"]["type"] = json!("Bot");
    review["sender"]["login"] = json!("coderabbitai[bot]");
    assert_decides!(
        "pull_request_review",
        &review,
        Ok(Trigger::Solve { issue: 3, .. })
    );
    // bugloop's own review asks for nothing; nor does a bot's review of another branch.
    review["sender"]["login"] = json!("bugloop-app[bot]");
    assert_decides!("pull_request_review", &review, Err(Skip::FromBot(_)));
    // A server that does not know its own login takes no App's review: it could be its own.
    review["sender"]["login"] = json!("coderabbitai[bot]");
    let parsed = parse("pull_request_review", review.to_string().as_bytes()).unwrap();
    let unknown_self = TriggerSettings {
        bot_logins: Vec::new(),
        ..settings()
    };
    assert!(matches!(
        trigger(&parsed, &unknown_self),
        Err(Skip::FromBot(_))
    ));
    review["pull_request"]["head"]["ref"] = json!("feature/3-crash");
    assert_decides!("pull_request_review", &review, Err(Skip::FromBot(_)));
}

#[test]
fn finished_checks_on_a_solve_branch_let_its_solving_go_on() {
    let mut done = example("check_suite", "completed");
    done["check_suite"]["head_branch"] = json!("bugloop/7-crash-in-last");
    assert_decides!(
        "check_suite",
        &done,
        Ok(Trigger::Solve {
            issue: 7,
            label: None,
            ..
        })
    );
    done["check_suite"]["head_branch"] = json!("main");
    assert_decides!("check_suite", &done, Err(Skip::NotSolving(_)));
    let requested = example("check_suite", "requested");
    assert_decides!("check_suite", &requested, Err(Skip::Action { .. }));
}

/// GitHub's own example ("Validating webhook deliveries").
#[test]
fn the_webhook_signature_is_checked() {
    let secret = b"It's a Secret to Everybody";
    let body = b"Hello, World!";
    let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    assert!(signature_is_valid(secret, body, header));
    assert!(!signature_is_valid(secret, b"Hello, World?", header));
    assert!(!signature_is_valid(b"another secret", body, header));
    assert!(!signature_is_valid(secret, body, "sha1=757107ea"));
    assert!(!signature_is_valid(secret, body, "sha256=not-hex"));
}

#[test]
fn a_workflow_started_by_hand_asks_to_converge_a_pull_request() {
    let payload = |inputs: Value| {
        json!({"inputs": inputs, "ref": "refs/heads/main",
               "repository": {"full_name": "acme/widgets"}, "sender": {"login": "alice", "type": "User"},
               "workflow": ".github/workflows/bugloop-converge.yml"})
    };
    let event = parse(
        "workflow_dispatch",
        payload(json!({"pull-request": "#12"}))
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(
        trigger(&event, &settings()),
        Ok(Trigger::Converge {
            repository: "acme/widgets".to_owned(),
            number: 12,
            requested_by: "alice".to_owned(),
        })
    );
    for inputs in [json!({}), json!({"pull-request": "main"}), Value::Null] {
        let event = parse("workflow_dispatch", payload(inputs).to_string().as_bytes()).unwrap();
        assert_eq!(
            trigger(&event, &settings()),
            Err(Skip::Input("pull-request".to_owned()))
        );
    }
}
