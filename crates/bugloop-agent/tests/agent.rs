//! The turn loop driven by a scripted model: tool calls and results, several calls in one turn,
//! the submit tool, tool errors told to the model, the turn limit and each budget, the tool-less
//! structured path; every run leaves a transcript.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use bugloop_agent::transcript::{self, Event};
use bugloop_agent::{Agent, AgentError, Outcome, Stages, Task};
use bugloop_llm::budget::{Limit, Meter, Metered};
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_llm::{
    BudgetLimits, Capabilities, ChatRequest, ChatResponse, JsonSchemaFormat, LlmError, Message,
    Role, Usage,
};
use bugloop_sandbox::{Policy, SandboxSettings};
use bugloop_testkit::git;
use bugloop_tools::{ToolContext, Toolset, Workspace};
use serde_json::json;

fn usage() -> Usage {
    Usage {
        input_tokens: 100,
        output_tokens: 10,
        cached_input_tokens: 0,
    }
}

struct Setup {
    _repo: tempfile::TempDir,
    runs: tempfile::TempDir,
    agent: Agent,
    scripted: Arc<ScriptedProvider>,
}

fn setup(scripted: ScriptedProvider, limits: BudgetLimits) -> Setup {
    setup_priced(scripted, limits, None)
}

fn setup_priced(
    scripted: ScriptedProvider,
    limits: BudgetLimits,
    price: Option<bugloop_llm::Price>,
) -> Setup {
    let repo = tempfile::tempdir().unwrap();
    bugloop_testkit::files::write(
        repo.path(),
        "src/lib.rs",
        "fn average(v: &[f64]) -> f64 {\n    v.iter().sum::<f64>() / v.len() as f64\n}\n",
    );
    let runs = tempfile::tempdir().unwrap();
    let scripted = Arc::new(scripted);
    let meter = Arc::new(Meter::new("scripted", limits, price));
    let provider = Arc::new(Metered::new(scripted.clone(), meter));
    let context = ToolContext::new(
        Workspace::new(repo.path()).unwrap(),
        SandboxSettings::new(repo.path(), Policy::ReadOnly),
    );
    let agent = Agent::new(provider, context, runs.path());
    Setup {
        _repo: repo,
        runs,
        agent,
        scripted,
    }
}

fn task(toolset: Option<Toolset>) -> Task {
    Task {
        toolset,
        max_turns: 10,
        ..Task::new(
            "review",
            "You review code.",
            Message::user("Find the bug in src/lib.rs"),
        )
    }
}

/// A Plan task that ends by calling `submit`, with `follow_ups` asked as `stages` says.
fn submitting(follow_ups: &[&str], stages: Stages) -> Task {
    let mut t = task(Some(Toolset::Plan));
    t.extra_tools.push(Box::new(Submit));
    t.submit_tool = Some("submit".into());
    t.follow_ups = follow_ups.iter().map(|f| (*f).to_owned()).collect();
    t.stages = stages;
    t
}

#[tokio::test]
async fn tool_call_result_next_call_answer() {
    let s = setup(
        ScriptedProvider::new([
            tool_reply(&[("read_file", json!({"path": "src/lib.rs"}))], usage()),
            tool_reply(
                &[
                    ("grep", json!({"pattern": "len\\(\\)"})),
                    ("list_dir", json!({"path": "src"})),
                ],
                usage(),
            ),
            text_reply("Division by zero when the slice is empty.", usage()),
        ]),
        BudgetLimits::default(),
    );
    let run = s.agent.run(task(Some(Toolset::Plan))).await;
    assert_eq!(
        run.outcome.unwrap(),
        Outcome::Answer("Division by zero when the slice is empty.".into())
    );
    assert_eq!(run.turns, 3);
    assert_eq!(run.usage.input_tokens, 300);

    // The model saw each tool's result, in order, answering its call ids.
    let requests = s.scripted.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].tools.iter().any(|t| t.name == "read_file"));
    assert!(
        requests[0].tools.iter().all(|t| t.name != "write_file"),
        "Plan runs have no editing tools"
    );
    let second = &requests[1].messages;
    assert_eq!(second[2].role, Role::Tool);
    assert_eq!(second[2].tool_call_id.as_deref(), Some("call_1"));
    assert!(second[2].content.contains("v.len() as f64"));
    let third = &requests[2].messages;
    assert_eq!(third.len(), 6);
    assert!(
        third[4].content.starts_with("src/lib.rs:2:"),
        "{}",
        third[4].content
    );
    assert_eq!(third[5].content, "lib.rs");

    // The transcript has every step, and `runs list` reads it back.
    let events = transcript::read(&run.transcript).unwrap();
    assert!(matches!(events.first(), Some(Event::Start { .. })));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::Tool { ok: true, .. }))
            .count(),
        3
    );
    assert!(matches!(events.last(), Some(Event::End { outcome, .. }) if outcome == "answered"));
    let listed = transcript::list(s.runs.path());
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].turns,
            listed[0].tool_calls,
            listed[0].input_tokens
        ),
        (3, 3, 300)
    );
}

#[tokio::test]
async fn tool_errors_go_back_to_the_model() {
    let s = setup(
        ScriptedProvider::new([
            tool_reply(
                &[
                    ("read_file", json!({"path": "../../etc/passwd"})),
                    ("write_file", json!({"path": "x", "content": "y"})),
                ],
                usage(),
            ),
            text_reply("done", usage()),
        ]),
        BudgetLimits::default(),
    );
    let run = s.agent.run(task(Some(Toolset::Plan))).await;
    assert_eq!(run.outcome.unwrap(), Outcome::Answer("done".into()));
    let messages = &s.scripted.requests()[1].messages;
    assert!(
        messages[2]
            .content
            .starts_with("error: path \"../../etc/passwd\" uses `..`"),
        "{}",
        messages[2].content
    );
    assert!(
        messages[3]
            .content
            .starts_with("error: there is no tool named \"write_file\""),
        "{}",
        messages[3].content
    );
}

struct Submit;

#[async_trait::async_trait]
impl bugloop_tools::Tool for Submit {
    fn name(&self) -> &'static str {
        "submit"
    }
    fn description(&self) -> &'static str {
        "Submit the findings"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _: &ToolContext,
        _: serde_json::Value,
    ) -> Result<String, bugloop_tools::ToolError> {
        Ok("unused".into())
    }
}

#[tokio::test]
async fn submit_tool_ends_the_task_and_a_text_answer_is_reminded_once() {
    let s = setup(
        ScriptedProvider::new([
            text_reply("I think there is a bug.", usage()),
            tool_reply(
                &[(
                    "submit",
                    json!({"findings": [{"title": "division by zero"}]}),
                )],
                usage(),
            ),
        ]),
        BudgetLimits::default(),
    );
    let t = submitting(&[], Stages::OneByOne);
    let run = s.agent.run(t).await;
    assert_eq!(
        run.outcome.unwrap(),
        Outcome::Submitted(json!({"findings": [{"title": "division by zero"}]}))
    );
    let reminder = s.scripted.requests()[1]
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(reminder.contains("`submit`"), "{reminder}");
}

/// A last submission in the turn of a refused call is held back: the model sees the error and
/// may make the call again before it submits again (a finding refused for its line would
/// otherwise be lost without a trace). Answering without a call keeps the held submission.
#[tokio::test]
async fn a_refused_call_beside_the_last_submission_goes_back_to_the_model() {
    let refused_then_submitted = || {
        tool_reply(
            &[
                ("read_file", json!({"path": "../../etc/passwd"})),
                ("submit", json!({"pass": 1})),
            ],
            usage(),
        )
    };
    let s = setup(
        ScriptedProvider::new([
            refused_then_submitted(),
            tool_reply(
                &[
                    ("read_file", json!({"path": "src/lib.rs"})),
                    ("submit", json!({"pass": 2})),
                ],
                usage(),
            ),
            refused_then_submitted(),
            text_reply("nothing more", usage()),
        ]),
        BudgetLimits::default(),
    );
    let run = s.agent.run(submitting(&[], Stages::OneByOne)).await;
    assert_eq!(run.outcome.unwrap(), Outcome::Submitted(json!({"pass": 2})));
    let told = &s.scripted.requests()[1].messages;
    assert!(told[2].content.starts_with("error: path"), "{told:?}");
    assert!(
        told[3].content.starts_with("not final yet: 1 call(s)"),
        "{told:?}"
    );
    // The model answers without a call: the held submission stands.
    let run = s.agent.run(submitting(&[], Stages::OneByOne)).await;
    assert_eq!(run.outcome.unwrap(), Outcome::Submitted(json!({"pass": 1})));
    assert_eq!(s.scripted.requests().len(), 4);
}

/// A model's answers submitting passes 1 to `passes`, one a turn.
fn submissions(passes: u32) -> Vec<ChatResponse> {
    (1..=passes)
        .map(|pass| tool_reply(&[("submit", json!({"pass": pass}))], usage()))
        .collect()
}

/// Runs a task of three passes (`Pass 2 of 3` and `Pass 3 of 3` follow the first) staged as
/// `stages` on a model answering `replies`; the run must end with pass 3 submitted. Returns
/// what the model was sent.
async fn three_passes_submitted(replies: Vec<ChatResponse>, stages: Stages) -> Vec<ChatRequest> {
    let s = setup(ScriptedProvider::new(replies), BudgetLimits::default());
    let t = submitting(&["Pass 2 of 3", "Pass 3 of 3"], stages);
    let run = s.agent.run(t).await;
    assert_eq!(run.outcome.unwrap(), Outcome::Submitted(json!({"pass": 3})));
    s.scripted.requests()
}

#[tokio::test]
async fn follow_ups_continue_the_same_session_after_each_submission() {
    let replies = vec![
        tool_reply(&[("submit", json!({"pass": 1}))], usage()),
        tool_reply(
            &[
                ("read_file", json!({"path": "src/lib.rs"})),
                ("submit", json!({"pass": 2})),
                ("read_file", json!({"path": "src/lib.rs"})),
            ],
            usage(),
        ),
        tool_reply(&[("submit", json!({"pass": 3}))], usage()),
    ];
    let requests = three_passes_submitted(replies, Stages::OneByOne).await;
    assert_eq!(requests.len(), 3);
    // The second request carries the whole first pass and then the next pass's prompt.
    let second = &requests[1].messages;
    assert_eq!(second[0].content, "Find the bug in src/lib.rs");
    assert_eq!(second.last().unwrap().content, "Pass 2 of 3");
    // Every call of a turn gets its result, including the one after the submission.
    let third = &requests[2].messages;
    let results: Vec<_> = third.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 4, "{third:#?}");
    assert!(results[3].content.contains("already submitted"));
    assert_eq!(third.last().unwrap().content, "Pass 3 of 3");
}

/// With every stage's instructions up front, the model may finish several stages in one turn;
/// a follow-up goes out only when a turn ends with stages left, for the next of them.
#[tokio::test]
async fn stages_up_front_may_be_submitted_together() {
    let replies = vec![
        tool_reply(
            &[
                ("submit", json!({"pass": 1})),
                ("read_file", json!({"path": "src/lib.rs"})),
                ("submit", json!({"pass": 2})),
            ],
            usage(),
        ),
        tool_reply(&[("submit", json!({"pass": 3}))], usage()),
    ];
    let requests = three_passes_submitted(replies, Stages::UpFront).await;
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    // Every call was carried out (none "already submitted"), and only pass 3 was asked for.
    let results: Vec<_> = second.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 3, "{second:#?}");
    assert!(
        results
            .iter()
            .all(|r| !r.content.contains("already submitted"))
    );
    assert_eq!(second.last().unwrap().content, "Pass 3 of 3");
    assert!(!second.iter().any(|m| m.content == "Pass 2 of 3"));

    // All three in one turn: one request.
    let replies = vec![tool_reply(
        &[
            ("submit", json!({"pass": 1})),
            ("submit", json!({"pass": 2})),
            ("submit", json!({"pass": 3})),
        ],
        usage(),
    )];
    assert_eq!(
        three_passes_submitted(replies, Stages::UpFront).await.len(),
        1
    );
}

/// Stages left after a turn that may be asked at once are: each in a copy of the conversation
/// so far, at the same time, ended by its own submission; a model that answers one stage per
/// turn costs two round trips, and the run adds up their turns and usage.
#[tokio::test]
async fn stages_left_are_asked_at_once_each_in_its_own_copy() {
    let s = setup(
        ScriptedProvider::new(submissions(4)).with_latency(Duration::from_millis(300)),
        BudgetLimits::default(),
    );
    let t = submitting(
        &["Pass 2 of 4", "Pass 3 of 4", "Pass 4 of 4"],
        Stages::UpFrontThenAtOnce,
    );
    let run = s.agent.run(t).await;
    assert_eq!(run.outcome.unwrap(), Outcome::Submitted(json!({"pass": 4})));
    assert_eq!(run.turns, 4);
    assert_eq!(run.usage.input_tokens, 400);
    let requests = s.scripted.requests();
    assert_eq!(requests.len(), 4);
    // Each copy is the first turn's conversation and one stage's instructions, no other's.
    let asked: Vec<&str> = requests[1..]
        .iter()
        .map(|r| r.messages.last().unwrap().content.as_str())
        .collect();
    assert_eq!(asked, ["Pass 2 of 4", "Pass 3 of 4", "Pass 4 of 4"]);
    for request in &requests[1..] {
        assert_eq!(request.messages.len(), requests[0].messages.len() + 3);
        let before = requests[0].messages.len();
        assert_eq!(request.messages[..before], requests[0].messages[..]);
    }
    // The three copies overlap in time: two round trips, not four.
    let spans = s.scripted.spans();
    let (first, copies) = spans.split_first().unwrap();
    assert!(copies.iter().all(|(start, _)| *start >= first.1));
    let last_start = copies.iter().map(|(start, _)| *start).max().unwrap();
    let first_end = copies.iter().map(|(_, end)| *end).min().unwrap();
    assert!(last_start < first_end, "{spans:?}");
    // The transcript holds every copy's events, one copy after another.
    let events = transcript::read(&run.transcript).unwrap();
    let notes: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Note { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert!(notes[0].contains("(1 of 3): Pass 2 of 4"), "{notes:?}");
    assert!(notes[2].contains("(3 of 3): Pass 4 of 4"), "{notes:?}");
}

/// A stage left that `open_stage` opens is asked in a conversation of its own (only the messages
/// it gave, on the same system prompt and tools), at the same time as the copies of the others,
/// and it is opened after the first turn, so it sees what that turn reported; the others are
/// still copies.
#[tokio::test]
async fn a_stage_left_may_be_asked_in_a_conversation_of_its_own() {
    let s = setup(
        ScriptedProvider::new(submissions(3)).with_latency(Duration::from_millis(100)),
        BudgetLimits::default(),
    );
    let mut t = submitting(&["Pass 2 of 3", "Pass 3 of 3"], Stages::UpFrontThenAtOnce);
    let opened = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = opened.clone();
    t.open_stage = Some(Arc::new(move |stage| {
        seen.lock().unwrap().push(stage);
        (stage == 3).then(|| vec![Message::user("Pass 3 of 3, on its own")])
    }));
    let run = s.agent.run(t).await;
    assert!(run.outcome.is_ok(), "{:?}", run.outcome);
    assert_eq!(*opened.lock().unwrap(), [2, 3]);
    let requests = s.scripted.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    let copy = &requests[1];
    assert_eq!(copy.messages[..first.messages.len()], first.messages[..]);
    assert_eq!(copy.messages.last().unwrap().content, "Pass 2 of 3");
    let alone = &requests[2];
    assert_eq!(alone.messages.len(), 1);
    assert_eq!(alone.messages[0].content, "Pass 3 of 3, on its own");
    assert_eq!((&alone.system, &alone.tools), (&first.system, &first.tools));
    // Asked at the same time as the copy, and said so in the transcript with what it was sent.
    let spans = s.scripted.spans();
    assert!(
        spans[2].0 < spans[1].1 && spans[1].0 < spans[2].1,
        "{spans:?}"
    );
    let events = transcript::read(&run.transcript).unwrap();
    assert!(events.iter().any(|e| matches!(e, Event::Note { text }
        if text.contains("in a conversation of its own: Pass 3 of 3, on its own"))));
}

/// A copy that answers without submitting, after its reminder, ends the task with that answer
/// (a stage left unsubmitted), and one whose model fails ends it with the error.
#[tokio::test]
async fn a_stage_asked_at_once_that_fails_or_is_left_unsubmitted_is_said() {
    let run = |replies: Vec<ChatResponse>| async move {
        // Latency, so each copy takes its answer in turn.
        let scripted = ScriptedProvider::new(replies).with_latency(Duration::from_millis(50));
        let s = setup(scripted, BudgetLimits::default());
        let t = submitting(&["Pass 2 of 3", "Pass 3 of 3"], Stages::UpFrontThenAtOnce);
        s.agent.run(t).await.outcome
    };
    let unsubmitted = run(vec![
        tool_reply(&[("submit", json!({"pass": 1}))], usage()),
        text_reply("pass 2 looks fine", usage()),
        tool_reply(&[("submit", json!({"pass": 3}))], usage()),
        text_reply("still fine", usage()),
    ])
    .await;
    assert_eq!(unsubmitted.unwrap(), Outcome::Answer("still fine".into()));
    let failed = run(vec![
        tool_reply(&[("submit", json!({"pass": 1}))], usage()),
        tool_reply(&[("submit", json!({"pass": 2}))], usage()),
    ])
    .await;
    assert!(matches!(failed, Err(AgentError::Model(_))), "{failed:?}");
}

#[tokio::test]
async fn turn_limit_stops_cleanly_with_a_transcript() {
    let s = setup(
        ScriptedProvider::new((0..10).map(|_| tool_reply(&[("list_dir", json!({}))], usage()))),
        BudgetLimits::default(),
    );
    let mut t = task(Some(Toolset::Plan));
    t.max_turns = 3;
    let run = s.agent.run(t).await;
    assert!(matches!(run.outcome, Err(AgentError::TurnLimit(3))));
    assert_eq!(s.scripted.requests().len(), 3);
    let events = transcript::read(&run.transcript).unwrap();
    assert!(matches!(events.last(), Some(Event::End { outcome, .. }) if outcome == "turn limit"));
}

/// No budget limit but the one `set` puts.
fn only_limit(set: impl FnOnce(&mut BudgetLimits)) -> BudgetLimits {
    let mut limits = BudgetLimits::default();
    set(&mut limits);
    limits
}

#[tokio::test]
async fn budgets_stop_cleanly_with_what_was_spent() {
    // $1 per million tokens in and out: each turn (100 in, 10 out) costs $0.00011.
    let price = bugloop_llm::Price {
        input_per_mtok: 1.0,
        cached_input_per_mtok: None,
        output_per_mtok: 1.0,
    };
    for (limits, expected) in [
        (
            only_limit(|l| l.max_cost_usd = Some(0.0003)),
            Limit::CostUsd(0.0003),
        ),
        (only_limit(|l| l.max_turns = Some(2)), Limit::Turns(2)),
        (
            only_limit(|l| l.max_input_tokens = Some(250)),
            Limit::InputTokens(250),
        ),
        (
            only_limit(|l| l.max_output_tokens = Some(25)),
            Limit::OutputTokens(25),
        ),
        (
            only_limit(|l| l.max_wall_time = Some(Duration::ZERO)),
            Limit::WallTime(Duration::ZERO),
        ),
    ] {
        let s = setup_priced(
            ScriptedProvider::new((0..10).map(|_| tool_reply(&[("list_dir", json!({}))], usage()))),
            limits,
            Some(price),
        );
        let run = s.agent.run(task(Some(Toolset::Plan))).await;
        match &run.outcome {
            Err(AgentError::Model(LlmError::Budget(exceeded))) => {
                assert_eq!(exceeded.limit, expected);
            }
            other => panic!("{expected:?}: {other:?}"),
        }
        let events = transcript::read(&run.transcript).unwrap();
        match events.last() {
            Some(Event::End {
                outcome,
                usage: Some(spent),
                ..
            }) => {
                assert_eq!(outcome, "budget exhausted");
                assert!(spent.get("turns").is_some(), "{spent}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn models_without_tools_give_one_structured_answer() {
    let s = setup(
        ScriptedProvider::new([text_reply("```json\n{\"findings\": []}\n```", usage())])
            .with_capabilities(Capabilities {
                tools: false,
                json_schema: false,
                streaming: false,
                context_tokens: None,
                cache_at_breakpoints: false,
            }),
        BudgetLimits::default(),
    );
    let mut t = task(Some(Toolset::Plan));
    t.answer_schema = Some(JsonSchemaFormat {
        name: "review".into(),
        schema: json!({"type": "object", "properties": {"findings": {"type": "array"}}, "required": ["findings"]}),
    });
    let run = s.agent.run(t).await;
    assert_eq!(
        run.outcome.unwrap(),
        Outcome::Structured(json!({"findings": []}))
    );
    let request = &s.scripted.requests()[0];
    assert!(request.tools.is_empty());
    assert!(request.system.as_deref().unwrap().contains("\"findings\""));

    // Without a schema such a task cannot run, and says why.
    let s = setup(
        ScriptedProvider::new([]).with_capabilities(Capabilities::default()),
        BudgetLimits::default(),
    );
    let run = s.agent.run(task(Some(Toolset::Plan))).await;
    assert!(matches!(run.outcome, Err(AgentError::Misconfigured(_))));
}

/// A Build run edits its worktree, never the user's tree; killed in the middle (its future
/// dropped while a command runs), the worktree and the command go away and the user's working
/// tree, index and branch are exactly as before.
#[tokio::test]
async fn a_build_run_killed_mid_way_leaves_the_users_tree_untouched() {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "-q", "-b", "feature"]);
    std::fs::write(root.join("lib.rs"), "fn a() {}\n").unwrap();
    git(root, &["add", "."]);
    git(
        root,
        &[
            "-c",
            "user.email=t@t",
            "-c",
            "user.name=t",
            "commit",
            "-q",
            "-m",
            "base",
        ],
    );
    std::fs::write(root.join("lib.rs"), "fn a() {} // user's unsaved edit\n").unwrap();
    std::fs::write(root.join("staged.rs"), "staged\n").unwrap();
    git(root, &["add", "staged.rs"]);
    let snapshot = |root: &std::path::Path| {
        (
            git(root, &["status", "--porcelain=v2", "--branch"]),
            git(root, &["diff"]),
            git(root, &["diff", "--cached"]),
            std::fs::read_to_string(root.join("lib.rs")).unwrap(),
        )
    };
    let before = snapshot(root);

    let worktree = bugloop_sandbox::TaskTree::create(root, "HEAD", "fix").unwrap();
    let worktree_path = worktree.path().to_path_buf();
    let scripted = Arc::new(ScriptedProvider::new([
        tool_reply(
            &[(
                "write_file",
                json!({"path": "lib.rs", "content": "fn a() { /* agent */ }\n"}),
            )],
            usage(),
        ),
        tool_reply(
            &[("run", json!({"program": "sleep", "args": ["4242.5"]}))],
            usage(),
        ),
        text_reply("never reached", usage()),
    ]));
    let mut sandbox = SandboxSettings::new(worktree.path(), Policy::WorkspaceWrite);
    sandbox.git = Some(worktree.git_mount());
    let context = ToolContext::new(Workspace::new(worktree.path()).unwrap(), sandbox);
    let runs = tempfile::tempdir().unwrap();
    let agent = Agent::new(scripted.clone(), context, runs.path());
    let mut t = task(Some(Toolset::Build));
    t.name = "fix".into();
    let killed = tokio::time::timeout(Duration::from_millis(1500), agent.run(t)).await;
    assert!(killed.is_err(), "the run should still have been busy");
    assert_eq!(
        std::fs::read_to_string(worktree_path.join("lib.rs")).unwrap(),
        "fn a() { /* agent */ }\n"
    );
    drop(agent);
    drop(worktree);

    assert!(!worktree_path.exists());
    assert_eq!(snapshot(root), before);
    assert_eq!(git(root, &["worktree", "list"]).lines().count(), 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let survivors = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains("4242.5"))
        .count();
    assert_eq!(
        survivors, 0,
        "the command of the killed run is still running"
    );
    // The transcript shows what happened until the kill.
    let listed = transcript::list(runs.path());
    assert_eq!(listed[0].outcome, "unfinished (killed or still running)");
}
