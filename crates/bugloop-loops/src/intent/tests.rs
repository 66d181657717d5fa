//! Unit tests of intent classification.

use std::sync::Arc;

use bugloop_llm::Provider;

use super::*;

fn open() -> Vec<OpenFinding> {
    vec![
        OpenFinding {
            id: "null-check-missing-1a2b3c".into(),
            title: "Missing null check on the user".into(),
            description: "`user` can be null when the session expired.".into(),
        },
        OpenFinding {
            id: "off-by-one-4d5e6f".into(),
            title: "Loop runs one past the end".into(),
            description: "The range includes len().".into(),
        },
    ]
}

#[test]
fn the_table_of_comments() {
    let open = open();
    let parent = Some("off-by-one-4d5e6f");
    let both = Intent::Fix(vec![
        "null-check-missing-1a2b3c".into(),
        "off-by-one-4d5e6f".into(),
    ]);
    let cases: &[(&str, Option<&str>, Option<Intent>)] = &[
        (
            "fix it",
            parent,
            Some(Intent::Fix(vec!["off-by-one-4d5e6f".into()])),
        ),
        (
            "Fix it please.",
            parent,
            Some(Intent::Fix(vec!["off-by-one-4d5e6f".into()])),
        ),
        ("fix all", None, Some(both.clone())),
        ("@bugloop fix them all!", None, Some(both)),
        (
            "please fix the null check",
            None,
            Some(Intent::Fix(vec!["null-check-missing-1a2b3c".into()])),
        ),
        ("add a test for parse_date", None, Some(Intent::Do)),
        (
            "Can you rename the helper to parse_iso?",
            None,
            Some(Intent::Do),
        ),
        ("why is this wrong?", parent, Some(Intent::Think)),
        ("How does the retry work", None, Some(Intent::Think)),
        ("lgtm", None, Some(Intent::Acknowledge)),
        ("Thanks!", parent, Some(Intent::Acknowledge)),
        ("@bugloop thanks", None, Some(Intent::Acknowledge)),
        ("@bugloop LGTM!", None, Some(Intent::Acknowledge)),
        // Which finding "fix it" means without a thread: the model decides.
        ("fix it", None, None),
        // Not a clear command: the model decides.
        (
            "this is intended, the caller checks the length first",
            parent,
            None,
        ),
    ];
    for (comment, parent, expected) in cases {
        assert_eq!(&by_rules(comment, *parent, &open), expected, "{comment:?}");
    }
}

fn scripted(answer: &serde_json::Value) -> Arc<dyn Provider> {
    Arc::new(
        bugloop_llm::scripted::ScriptedProvider::new([bugloop_llm::scripted::text_reply(
            answer.to_string(),
            bugloop_llm::Usage::default(),
        )])
        .with_capabilities(bugloop_llm::Capabilities {
            tools: true,
            json_schema: true,
            streaming: false,
            context_tokens: None,
            cache_at_breakpoints: false,
        }),
    )
}

/// Classifies `comment` in a throwaway repository whose model answers `answer`.
async fn classify_with(
    answer: &serde_json::Value,
    comment: &str,
    parent: Option<(&str, &str)>,
    open: &[OpenFinding],
) -> Classified {
    let repo = bugloop_testkit::TestRepo::init("main");
    let git = bugloop_git::Git::open(repo.path()).unwrap();
    let forge = bugloop_forge::local::LocalForge::open(git.clone(), "bugloop")
        .await
        .unwrap();
    let settings = crate::LoopSettings::resolve(bugloop_config::Config::default()).unwrap();
    let runs = tempfile::tempdir().unwrap();
    let env = LoopEnv {
        forge: &forge,
        git: &git,
        settings: &settings,
        provider: scripted(answer),
        meter: Arc::new(bugloop_llm::budget::Meter::new(
            "scripted",
            bugloop_llm::budget::BudgetLimits::default(),
            None,
        )),
        runs_dir: runs.path().to_path_buf(),
        progress: Arc::new(crate::Silent),
        work: crate::build::WorkTarget::LocalBranch,
    };
    classify(&env, comment, parent, open).await.unwrap()
}

#[tokio::test]
async fn the_model_decides_the_rest_and_only_open_ids_survive() {
    let open = open();
    let answer = serde_json::json!({
        "is_fix_request": true,
        "target_finding_ids": ["off-by-one-4d5e6f", "made-up"],
        "is_do_request": false
    });
    let got = classify_with(
        &answer,
        "deal with the loop bound and the session problem",
        None,
        &open,
    )
    .await;
    assert_eq!(
        got,
        Classified {
            intent: Intent::Fix(vec!["off-by-one-4d5e6f".into()]),
            by: ChosenBy::Model
        }
    );

    let answer = serde_json::json!({"is_fix_request": true, "target_finding_ids": ["nope"], "is_do_request": false});
    let got = classify_with(&answer, "fix it", None, &open).await;
    assert_eq!(
        got.intent,
        Intent::Think,
        "a fix of nothing known is answered, not guessed"
    );

    let answer = serde_json::json!({"is_fix_request": false, "target_finding_ids": [], "is_do_request": false});
    let got = classify_with(
        &answer,
        "this is intended, the caller checks",
        Some(("off-by-one-4d5e6f", "Loop runs one past the end")),
        &open,
    )
    .await;
    assert_eq!(got.intent, Intent::Think);
}
