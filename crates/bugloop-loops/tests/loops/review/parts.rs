//! A large change reviewed in parts: what does not fit is listed, the budget is shared and stops
//! every part, a model that runs a pass per turn is asked the rest at once on its cached prefix,
//! and parts are reviewed at once.

use super::*;

#[tokio::test]
async fn large_changes_are_split_and_what_does_not_fit_is_listed() {
    let (repo, config) = split_change();
    // Every session ends at once; how many there were is what matters.
    let scripted = ScriptedProvider::new([]);
    for _ in 0..40 {
        for pass in 1..=4 {
            scripted.push(tool_reply(
                &[(
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                )],
                support::usage(),
            ));
        }
    }
    let (report, _) = run(&repo, config, scripted).await;
    assert!(report.usage.sessions > 3, "{}", report.usage.sessions);
    assert!(report.complete);
    let mut reviewed: Vec<_> = report.passes.iter().map(|p| p.call).collect();
    reviewed.dedup();
    assert_eq!(reviewed.len(), report.usage.sessions);
}

#[tokio::test]
async fn a_budget_stop_lists_the_rest_as_unreviewed() {
    let repo = Repo::with_feature();
    let mut config = support::config();
    config.budgets.max_input_tokens = 1;
    let (report, _) = run(&repo, config, session(vec![], vec![])).await;
    assert!(!report.complete);
    assert!(report.errors[0].contains("budget"), "{:?}", report.errors);
    assert!(!report.unreviewed.is_empty());
}

/// The feature branch plus six generated files, so that at 700 tokens a call the change is
/// reviewed in several sessions.
pub(super) fn split_change() -> (Repo, bugloop_config::Config) {
    let repo = Repo::with_feature();
    for i in 0..6 {
        let body: String = (0..40)
            .map(|l| format!("pub const C{i}_{l}: u32 = {l};\n"))
            .collect();
        repo.write(&format!("src/gen{i}.rs"), &body);
    }
    repo.commit("many files");
    let mut config = support::config();
    config.review.max_tokens_per_call = 700;
    (repo, config)
}

/// A model that finishes every pass at once, except in the session shown `stubborn` (a file
/// name), where it only ever reads its todo list; it answers up to `calls` requests.
/// The pass a follow-up asks for ("Go on with pass N"), if the last user message is one, or
/// the only pass a conversation of its own gives.
fn pass_asked(request: &bugloop_llm::ChatRequest) -> Option<usize> {
    let users = user_messages(request);
    let follow_up = users
        .last()
        .and_then(|text| text.split("Go on with pass ").nth(1))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok());
    let given: Vec<&str> = users
        .first()
        .map(|text| text.split("# Pass ").skip(1).collect())
        .unwrap_or_default();
    let alone = match given.as_slice() {
        [only] => only.split_whitespace().next()?.parse().ok(),
        _ => None,
    };
    follow_up.or(alone)
}

/// What `request`'s user messages say, in order.
fn user_messages(request: &bugloop_llm::ChatRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.as_str())
        .collect()
}

/// The pass a one-pass-per-reply model answers: the one asked ([`pass_asked`]), else the one
/// after those it submitted in the conversation.
fn pass_of(request: &bugloop_llm::ChatRequest) -> usize {
    pass_asked(request).unwrap_or_else(|| passes_submitted(request) + 1)
}

fn passes_except(stubborn: Option<&'static str>, calls: usize) -> ScriptedProvider {
    let provider = ScriptedProvider::new([]);
    for _ in 0..calls {
        provider.push_fn(move |request| {
            let users = user_messages(request);
            let change = users.first().copied().unwrap_or_default();
            if stubborn.is_some_and(|file| change.contains(file)) {
                return Ok(tool_reply(&[("todo_read", json!({}))], support::usage()));
            }
            let pass = pass_asked(request).unwrap_or(users.len());
            Ok(tool_reply(
                &[(
                    "submit_pass_results",
                    json!({"pass_number": pass, "summary": "ok"}),
                )],
                support::usage(),
            ))
        });
    }
    provider
}

/// The run's turn budget (6) lets the first session finish its four passes and stops the second
/// after two calls: the first session's files are reviewed, the second's and every later one's
/// are listed as not reviewed, with the budget as the reason.
#[tokio::test]
async fn a_budget_stops_the_review_in_its_second_session() {
    let (repo, mut config) = split_change();
    config.budgets.max_turns = 6;
    let (report, _) = run(&repo, config, passes_except(None, 40)).await;
    assert!(report.usage.sessions > 2, "{}", report.usage.sessions);
    assert_eq!(report.usage.model_calls, 6);
    assert!(!report.complete);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].contains("limit of 6 model turns"),
        "{:?}",
        report.errors
    );
    assert_eq!(passes_of(&report, 1), [1, 2, 3, 4]);
    assert_eq!(passes_of(&report, 2), [1, 2]);
    assert!(report.passes.iter().all(|p| p.call <= 2));
    // Everything from the second session on is listed; nothing of the first.
    let unreviewed: Vec<&str> = report.unreviewed.iter().map(|u| u.path.as_str()).collect();
    assert!(!unreviewed.is_empty());
    let files = repo_files_changed(&repo);
    assert!(unreviewed.len() < files.len(), "{unreviewed:?}");
    for entry in &report.unreviewed {
        assert!(entry.reason.contains("budget"), "{entry:?}");
    }
}

/// The passes the session `call` submitted, in the report's order.
fn passes_of(report: &bugloop_report::review::ReviewReport, call: usize) -> Vec<u32> {
    report
        .passes
        .iter()
        .filter(|p| p.call == call)
        .map(|p| p.pass)
        .collect()
}

fn repo_files_changed(repo: &Repo) -> Vec<String> {
    support::git(repo.path(), &["diff", "--name-only", "main...HEAD"])
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Each session of a split change gets its share of the run's turns (60 over the sessions), so
/// a session that never finishes stops at its share and the others still run all four passes.
#[tokio::test]
async fn sessions_share_the_turn_budget() {
    let (repo, mut config) = split_change();
    config.budgets.max_turns = 60;
    let scripted = passes_except(Some("src/gen3.rs"), 200);
    let (report, _) = run(&repo, config, scripted).await;
    let sessions = u32::try_from(report.usage.sessions).unwrap();
    assert!(sessions > 2, "{sessions}");
    let share = (60 / sessions).max(6);
    assert!(share > 6, "the share should not be the floor here: {share}");
    assert!(!report.complete);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0].contains(&format!("{share}")),
        "{:?}",
        report.errors
    );
    // The stubborn session made exactly its share of calls; every other one its four passes.
    assert_eq!(report.usage.model_calls, share + 4 * (sessions - 1));
    let finished = report.passes.iter().filter(|p| p.pass == 4).count();
    assert_eq!(finished, report.usage.sessions - 1);
    assert!(
        report.unreviewed.iter().any(|u| u.path == "src/gen3.rs"),
        "{:?}",
        report.unreviewed
    );
}

/// A model that runs one pass per turn although all four are given with the change: each pass
/// is still asked for and submitted, in two round trips per session: the first request, then
/// the three passes it left, at once. Passes 2 and 3 are each the first request with its turn
/// and one pass's instructions added at its end (the system prompt, the tools and every earlier
/// message byte for byte), so a provider's prefix cache serves all but the new turn; the
/// consolidation is asked with the findings so far instead of the change. The same holds in
/// every part of a change reviewed in several sessions.
#[tokio::test]
async fn a_model_running_one_pass_per_turn_is_asked_the_rest_at_once_on_its_prefix() {
    for (repo, mut config) in [(Repo::with_feature(), support::config()), split_change()] {
        // One part at a time, so each part's requests come together.
        config.review.parallel_sessions = 1;
        let provider = ScriptedProvider::new([]).with_latency(std::time::Duration::from_millis(30));
        for _ in 0..64 {
            provider.push_fn(|request| {
                Ok(tool_reply(
                    &[(
                        "submit_pass_results",
                        json!({"pass_number": pass_of(request), "summary": "one at a time"}),
                    )],
                    support::usage(),
                ))
            });
        }
        let provider = std::sync::Arc::new(provider);
        let (report, _) = support::review_branch(&repo, config, provider.clone(), false).await;
        assert!(report.unreviewed.is_empty(), "{:?}", report.unreviewed);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        let requests = provider.requests();
        let spans = provider.spans();
        let sessions = report.usage.sessions;
        assert_eq!(requests.len(), 4 * sessions, "four requests per session");
        let mut passes: Vec<(usize, u32)> =
            report.passes.iter().map(|p| (p.call, p.pass)).collect();
        passes.sort_unstable();
        let asked: Vec<(usize, u32)> = (1..=sessions)
            .flat_map(|c| (1..=4).map(move |p| (c, p)))
            .collect();
        assert_eq!(passes, asked, "every pass of every part, once");
        for (session, times) in requests.chunks(4).zip(spans.chunks(4)) {
            let (first, rest) = session.split_first().unwrap();
            for pass in 1..=4 {
                assert!(
                    first.messages[0]
                        .content
                        .contains(&format!("# Pass {pass} of 4")),
                    "every pass is given with the change"
                );
            }
            let (consolidation, rest) = rest.split_last().unwrap();
            // The consolidation judges the findings so far, not the change: a conversation of
            // its own on the same tools and system prompt (their prefix still cached).
            assert_eq!(first.system, consolidation.system);
            assert_eq!(
                serde_json::to_string(&first.tools).unwrap(),
                serde_json::to_string(&consolidation.tools).unwrap()
            );
            assert_eq!(consolidation.messages.len(), 1);
            let alone = &consolidation.messages[0].content;
            assert!(alone.contains("# Pass 4 of 4") && !alone.contains("# Pass 1 of 4"));
            assert!(
                !alone.contains("@@"),
                "the change is not sent again: {alone}"
            );
            for (pass, after) in (2..=3).zip(rest) {
                assert_eq!(first.system, after.system);
                assert_eq!(
                    serde_json::to_string(&first.tools).unwrap(),
                    serde_json::to_string(&after.tools).unwrap()
                );
                assert_eq!(after.messages.len(), first.messages.len() + 3);
                for (a, b) in first.messages.iter().zip(&after.messages) {
                    assert_eq!(
                        serde_json::to_string(a).unwrap(),
                        serde_json::to_string(b).unwrap(),
                        "an earlier message changed"
                    );
                }
                let last = &after.messages.last().unwrap().content;
                assert!(last.contains(&format!("pass {pass} of 4")), "{last}");
            }
            // Two round trips: the three passes left overlap, all after the first came back.
            let (first, rest) = times.split_first().unwrap();
            assert!(rest.iter().all(|(start, _)| *start >= first.1));
            let last_start = rest.iter().map(|(start, _)| *start).max().unwrap();
            let first_end = rest.iter().map(|(_, end)| *end).min().unwrap();
            assert!(last_start < first_end, "{times:?}");
        }
    }
}

/// The parts of a large change are reviewed at once (`review.parallel_sessions`), every pass of
/// every part still asked: with a model that takes a moment to answer (all four passes in one
/// reply, so a part is one request), requests of different parts overlap in time (the scripted
/// model records when each came and went); with 1 none do.
#[tokio::test]
async fn the_parts_of_a_large_change_are_reviewed_at_once() {
    for (at_once, overlap) in [(4, true), (1, false)] {
        let (repo, mut config) = split_change();
        config.review.parallel_sessions = at_once;
        let provider = ScriptedProvider::new([]);
        for _ in 0..64 {
            provider.push_fn(|_| {
                let submit = |pass: u32| {
                    let summary = json!({"pass_number": pass, "summary": "ok"});
                    ("submit_pass_results", summary)
                };
                Ok(tool_reply(
                    &(1..=4).map(submit).collect::<Vec<_>>(),
                    support::usage(),
                ))
            });
        }
        let provider =
            std::sync::Arc::new(provider.with_latency(std::time::Duration::from_millis(20)));
        let (report, _) = support::review_branch(&repo, config, provider.clone(), false).await;
        assert!(report.complete, "{:?}", report.errors);
        let sessions = report.usage.sessions;
        assert!(sessions > 2, "{sessions}");
        for call in 1..=sessions {
            let mut passes = passes_of(&report, call);
            passes.sort_unstable();
            assert_eq!(passes, [1, 2, 3, 4], "part {call}: {:?}", report.passes);
        }
        let spans = provider.spans();
        let overlapping = spans
            .iter()
            .enumerate()
            .any(|(i, a)| spans[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1));
        assert_eq!(overlapping, overlap, "parallel_sessions {at_once}");
    }
}

/// With a part whose tests and prose are large, a model that runs one pass per turn is asked
/// pass 2 (impact) on the part's source and configuration and pass 3 (security and rules) on
/// those and the tests, each in a conversation of its own that starts as the first request does
/// (a prefix cache serves it), names the files it leaves out and lists the findings so far;
/// every pass is still asked and every file reviewed.
#[tokio::test]
async fn later_passes_alone_are_shown_what_they_judge_on_the_first_requests_prefix() {
    let repo = tests_and_guide_change();
    let provider = one_pass_per_reply(&repo);
    let provider = std::sync::Arc::new(provider);
    let (report, _) =
        support::review_branch(&repo, support::config(), provider.clone(), false).await;
    assert!(report.unreviewed.is_empty(), "{:?}", report.unreviewed);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let mut passes: Vec<u32> = report.passes.iter().map(|p| p.pass).collect();
    passes.sort_unstable();
    assert_eq!(passes, [1, 2, 3, 4], "every pass asked once");
    let requests = review_requests(&provider);
    assert_eq!(requests.len(), 4);
    let first = &requests[0].messages[0].content;
    for shown in ["sorted[index]", "Makefile", "fn case_7()", "Step 7: run"] {
        assert!(first.contains(shown), "the first pass is shown {shown}");
    }
    let alone = |pass: usize| {
        let heading = format!("# Pass {pass} of 4");
        let request = requests
            .iter()
            .find(|r| {
                let text = &r.messages[0].content;
                r.messages.len() == 1 && text.contains(&heading) && !text.contains("# Pass 1 of 4")
            })
            .unwrap_or_else(|| panic!("pass {pass} in a conversation of its own"));
        assert_eq!(request.system, requests[0].system);
        request.messages[0].content.clone()
    };
    let impact = alone(2);
    let security = alone(3);
    for (text, shown, left_out) in [
        (
            &impact,
            &["sorted[index]", "Makefile"][..],
            &["fn case_7()", "Step 7: run", "BEGIN PRIVATE KEY"][..],
        ),
        (
            &security,
            &[
                "sorted[index]",
                "Makefile",
                "fn case_7()",
                "BEGIN PRIVATE KEY",
            ],
            &["Step 7: run"],
        ),
    ] {
        for code in shown {
            assert!(text.contains(code), "{code} shown: {text}");
        }
        for code in left_out {
            assert!(!text.contains(code), "{code} left out: {text}");
        }
        // The part as this pass is shown it is where the first request starts too.
        let cut = text
            .find("These files of the change are not shown here")
            .unwrap();
        assert!(first.starts_with(text[..cut].trim_end()), "{text}");
        assert!(
            text.contains("Index out of bounds when p is 1.0"),
            "the findings so far"
        );
        assert!(!text.contains("# Pass 1 of 4"));
    }
    assert!(impact.contains("- docs/: GUIDE.md") && impact.contains("- tests/: stats_cases.rs"));
    assert!(impact.contains("- deploy/: server.key"), "{impact}");
    assert!(security.contains("- docs/: GUIDE.md") && !security.contains("- tests/:"));
}

/// The feature branch with 120 tests, a guide of 120 steps (over 1,000 tokens each), a
/// Makefile and a private key.
fn tests_and_guide_change() -> Repo {
    let repo = Repo::with_feature();
    let test_body: String = (0..120)
        .map(|n| {
            format!("#[test]\nfn case_{n}() {{ assert_eq!(percentile(&[1.0], 0.0), 1.0); }}\n")
        })
        .collect();
    repo.write("tests/stats_cases.rs", &test_body);
    let guide: String = (0..120)
        .map(|n| format!("Step {n}: run the percentile tool on the sample data set.\n"))
        .collect();
    repo.write("docs/GUIDE.md", &guide);
    repo.write("Makefile", "check:\n\tcargo test\n");
    let key: String = (0..6)
        .map(|n| format!("MIIEpAIBAAKCAQEA{n}x7Jq0vZ3c9KfR2mH8tLwQe5Yb1NsXo4Gd6Up8Vr2Ck\n"))
        .collect();
    let key = format!("-----BEGIN PRIVATE KEY-----\n{key}-----END PRIVATE KEY-----\n");
    repo.write("deploy/server.key", &key);
    repo.commit("tests, a guide and a key");
    repo
}

/// A model that answers one pass per reply, reporting the percentile's bug in pass 1.
fn one_pass_per_reply(repo: &Repo) -> ScriptedProvider {
    let stats_line = repo.line_of("src/stats.rs", "sorted[index]");
    let provider = ScriptedProvider::new([]);
    for _ in 0..8 {
        provider.push_fn(move |request| {
            let pass = pass_of(request);
            let mut calls = Vec::new();
            if pass == 1 {
                calls.push(("report_finding", index_past_end(stats_line, 8)));
            }
            calls.push((
                "submit_pass_results",
                json!({"pass_number": pass, "summary": "one at a time"}),
            ));
            Ok(tool_reply(&calls, support::usage()))
        });
    }
    provider
}

/// A provider whose cache serves only prefixes ending at its breakpoints (Anthropic's) would
/// serve a view nothing: passes 2 and 3 are asked in copies of the conversation, its first
/// message whole and cached.
#[tokio::test]
async fn a_cache_at_breakpoints_keeps_the_copies() {
    let repo = tests_and_guide_change();
    let provider = one_pass_per_reply(&repo).with_capabilities(bugloop_llm::Capabilities {
        tools: true,
        json_schema: false,
        streaming: true,
        context_tokens: None,
        cache_at_breakpoints: true,
    });
    let provider = std::sync::Arc::new(provider);
    let (report, _) =
        support::review_branch(&repo, support::config(), provider.clone(), false).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.passes.len(), 4);
    let requests = review_requests(&provider);
    let first = &requests[0].messages[0];
    let copies = requests.iter().filter(|r| r.messages.len() > 1).count();
    assert_eq!(copies, 2, "passes 2 and 3 in copies");
    for request in requests.iter().filter(|r| r.messages.len() > 1) {
        assert_eq!(
            serde_json::to_string(&request.messages[0]).unwrap(),
            serde_json::to_string(first).unwrap()
        );
    }
}

/// While open findings are asked about, whether one is resolved may show in any file: passes 2
/// and 3 are asked in copies of the conversation, shown the whole part.
#[tokio::test]
async fn open_findings_keep_the_copies() {
    let repo = tests_and_guide_change();
    let first = std::sync::Arc::new(one_pass_per_reply(&repo));
    let (report, _) = support::review_branch(&repo, support::config(), first, false).await;
    assert!(!report.findings.is_empty());
    let again = std::sync::Arc::new(one_pass_per_reply(&repo));
    let (report, _) = support::review_branch(&repo, support::config(), again.clone(), true).await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let requests = review_requests(&again);
    assert_eq!(requests.iter().filter(|r| r.messages.len() > 1).count(), 2);
    assert!(
        requests
            .iter()
            .filter(|r| r.messages.len() == 1)
            .all(|r| r.messages[0].content.contains("# Pass 1 of 4")
                || r.messages[0].content.contains("# Pass 4 of 4")),
        "only the first request and the consolidation are conversations of their own"
    );
}

/// The review's requests (those that may submit a pass), in the order they came: not the
/// analyzers' triage.
fn review_requests(provider: &ScriptedProvider) -> Vec<bugloop_llm::ChatRequest> {
    provider
        .requests()
        .into_iter()
        .filter(|r| r.tools.iter().any(|t| t.name == "submit_pass_results"))
        .collect()
}
