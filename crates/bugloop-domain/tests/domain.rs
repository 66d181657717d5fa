//! bugloop-domain's integration tests. Data-driven: each fixture under `tests/fixtures/<kind>/` is
//! read, run through the code, and the result compared with its snapshot under `tests/snapshots/`.
//! Property tests check the round trips that must hold for any input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bugloop_domain::filter::{ExistingFinding, FilterSettings, run_pipeline};
use bugloop_domain::markdown::neutralise;
use bugloop_domain::paths::IgnoreMatcher;
use bugloop_domain::rmcoc::{RmcocBlock, build_comment, parse_comment};
use bugloop_domain::thread::{RESOLVED_PHRASE, reconstruct};
use bugloop_domain::{
    BotIdentity, Comment, Finding, FindingId, MarkerSyntax, ReplyKind, Score, Severity,
    ThreadStatus,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[test]
fn markers() {
    insta::glob!("fixtures/markers/*.txt", |path| {
        let body = std::fs::read_to_string(path).unwrap();
        let syntax = MarkerSyntax::default();
        let markers = syntax.parse_all(&body);
        // Only the comment's own marker (alone on its last line) is ever rewritten.
        let own = syntax.own(&body);
        let flipped: Vec<(String, Option<String>)> = markers
            .iter()
            .map(|m| {
                (
                    m.finding_id.to_string(),
                    syntax.replace(&body, &m.finding_id, !m.resolved),
                )
            })
            .collect();
        insta::assert_yaml_snapshot!((markers, own, flipped));
    });
}

#[test]
fn rmcoc() {
    insta::glob!("fixtures/rmcoc/*.md", |path| {
        let body = std::fs::read_to_string(path).unwrap();
        insta::assert_yaml_snapshot!(parse_comment(&body));
    });
}

/// A conversation as a forge would report it. `bot` plays the forge's part of knowing which
/// account is bugloop's: a comment by one of those logins is bugloop's unless the fixture says
/// `by_bugloop` itself (a person who named themself like the bot).
#[derive(Deserialize)]
struct ThreadCase {
    bot: Vec<String>,
    comments: Vec<serde_yaml_ng::Mapping>,
}

#[test]
fn threads() {
    insta::glob!("fixtures/threads/*.yaml", |path| {
        let case: ThreadCase =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let bot = BotIdentity::new(&case.bot);
        let comments: Vec<Comment> = case
            .comments
            .into_iter()
            .map(|mut raw| {
                if !raw.contains_key("by_bugloop") {
                    let author = raw.get("author").and_then(|a| a.as_str()).unwrap_or("");
                    let ours = bot.is_bot(author);
                    raw.insert("by_bugloop".into(), ours.into());
                }
                serde_yaml_ng::from_value(serde_yaml_ng::Value::Mapping(raw)).unwrap()
            })
            .collect();
        let state = reconstruct(&comments, &MarkerSyntax::default());
        insta::assert_yaml_snapshot!(state);
    });
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SettingsCase {
    ignore: Vec<String>,
    threshold: Option<u8>,
    severity_floor: Option<Severity>,
    sensitive_data: bool,
    elevation_threshold: Option<usize>,
    comment_limit: Option<usize>,
}

#[derive(Deserialize)]
struct FilterCase {
    #[serde(default)]
    settings: SettingsCase,
    findings: Vec<Finding>,
    #[serde(default)]
    existing: Vec<ExistingCase>,
}

#[derive(Deserialize, Serialize)]
struct ExistingCase {
    id: String,
    title: String,
    #[serde(default)]
    description: String,
    file: Option<String>,
    line: Option<u32>,
    #[serde(default)]
    end_line: Option<u32>,
    #[serde(default)]
    evidence: Option<String>,
    status: ThreadStatus,
    #[serde(default)]
    reopenable: bool,
    #[serde(default)]
    moved: bool,
    #[serde(default)]
    tool_rule: Option<(String, String)>,
}

#[test]
fn filter() {
    insta::glob!("fixtures/filter/*.yaml", |path| {
        let case: FilterCase =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut settings = FilterSettings {
            ignore: IgnoreMatcher::new(&case.settings.ignore).unwrap(),
            sensitive_data: case.settings.sensitive_data,
            ..FilterSettings::default()
        };
        if let Some(t) = case.settings.threshold {
            settings.threshold = Score::new(t).unwrap();
        }
        if let Some(floor) = case.settings.severity_floor {
            settings.severity_floor = floor;
        }
        if let Some(n) = case.settings.elevation_threshold {
            settings.elevation_threshold = n;
        }
        if let Some(n) = case.settings.comment_limit {
            settings.comment_limit = n;
        }
        let existing: Vec<ExistingFinding> = case
            .existing
            .into_iter()
            .map(|e| ExistingFinding {
                id: FindingId::new(e.id),
                title: e.title,
                description: e.description,
                file: e.file,
                line: e.line,
                end_line: e.end_line,
                evidence: e.evidence,
                status: e.status,
                reopenable: e.reopenable,
                moved: e.moved,
                tool_rule: e.tool_rule,
            })
            .collect();
        insta::assert_yaml_snapshot!(run_pipeline(case.findings, &existing, &settings));
    });
}

#[derive(Deserialize)]
struct GroundingCase {
    /// Files at head.
    files: std::collections::BTreeMap<String, String>,
    /// New-side lines shown in the diff, per changed file.
    #[serde(default)]
    diff_lines: std::collections::BTreeMap<String, Vec<u32>>,
    findings: Vec<Finding>,
}

impl bugloop_domain::grounding::Head for GroundingCase {
    fn text(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(String::as_str)
    }
    fn in_diff(&self, path: &str, line: u32) -> Option<bool> {
        self.diff_lines.get(path).map(|lines| lines.contains(&line))
    }
}

#[test]
fn grounding() {
    insta::glob!("fixtures/grounding/*.yaml", |path| {
        let mut case: GroundingCase =
            serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let findings = std::mem::take(&mut case.findings);
        insta::assert_yaml_snapshot!(bugloop_domain::grounding::ground(findings, &case));
    });
}

fn status_strategy() -> impl Strategy<Value = Option<ThreadStatus>> {
    prop::option::of(prop::sample::select(vec![
        ThreadStatus::Pending,
        ThreadStatus::Resolved,
        ThreadStatus::Disputed,
        ThreadStatus::Escalated,
    ]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn marker_round_trip(raw in any::<String>(), resolved in any::<bool>(), before in any::<String>(), after in any::<String>()) {
        let syntax = MarkerSyntax::default();
        let id = FindingId::new(&raw);
        // The sanitized id is stable and round-trips through a marker placed where bugloop
        // places it, after any text it quotes.
        prop_assert_eq!(&FindingId::new(id.as_str()), &id);
        let marker = syntax.build(&id, resolved);
        let quoted = neutralise(&before);
        let body = format!("{quoted}\n\n{marker}\n");
        let own = syntax.own(&body).unwrap();
        prop_assert!(own.finding_id == id && own.resolved == resolved);
        let flipped = syntax.replace(&body, &id, !resolved).unwrap();
        let own = syntax.own(&flipped).unwrap();
        prop_assert!(own.finding_id == id && own.resolved != resolved);
        prop_assert!(flipped.starts_with(&quoted));
        // Anything after the marker means it is not the comment's own.
        if !after.trim().is_empty() {
            let longer = format!("{body}{}", neutralise(&after));
            prop_assert!(syntax.own(&longer).is_none());
        }
    }

    /// Status changes come only from bugloop's comments that carry a status; whatever anyone
    /// else writes, and whatever bugloop writes as information, leaves every status as it was.
    #[test]
    fn only_bugloops_status_replies_change_a_status(
        steps in prop::collection::vec((0u8..6, any::<String>()), 0..24)
    ) {
        let syntax = MarkerSyntax::default();
        let root_body = build_comment(
            &format!("### A finding\n\n{}", syntax.build(&FindingId::new("f"), false)),
            &RmcocBlock::new("A finding", "Why.", Score::saturating(6)),
        );
        let at = |i: usize| jiff::Timestamp::from_second(1_700_000_000 + i as i64).unwrap();
        let mut comments = vec![comment("0", root_body, at(0), true, None)];
        let mut expected = ThreadStatus::Pending;
        for (i, (kind, text)) in steps.iter().enumerate() {
            let id = (i + 1).to_string();
            let (body, by_bugloop) = match kind {
                // A developer typing anything, including our phrases, markers and tags.
                0 => (text.clone(), false),
                1 => (format!("{}\n\n{}", RESOLVED_PHRASE, syntax.reply_tag(ReplyKind::Status(ThreadStatus::Resolved))), false),
                // bugloop informing: any text, neutralised, tagged as information.
                2 | 3 => (format!("{}\n\n{}", neutralise(text), syntax.reply_tag(ReplyKind::Info)), true),
                // bugloop changing the status.
                _ => {
                    let status = [ThreadStatus::Resolved, ThreadStatus::Disputed, ThreadStatus::Escalated, ThreadStatus::Pending][text.len() % 4];
                    expected = status;
                    (format!("{}\n\n{}", neutralise(text), syntax.reply_tag(ReplyKind::Status(status))), true)
                }
            };
            comments.push(comment(&id, body, at(i + 1), by_bugloop, Some("0")));
        }
        let state = reconstruct(&comments, &syntax);
        prop_assert_eq!(state.threads.len(), 1);
        prop_assert_eq!(state.threads[0].status, expected);
    }

    #[test]
    fn rmcoc_round_trip(
        human in "[a-zA-Z0-9 .,:#*\n]{0,200}",
        finding in any::<String>(),
        assessment in any::<String>(),
        score in 1u8..=10,
        status in status_strategy(),
    ) {
        let mut block = RmcocBlock::new(finding, assessment, Score::new(score).unwrap());
        block.status = status;
        let body = build_comment(&human, &block);
        let parsed = parse_comment(&body);
        prop_assert!(parsed.problems.is_empty(), "{:?}", parsed.problems);
        prop_assert_eq!(parsed.block, Some(block));
        prop_assert_eq!(parsed.human, human.trim_end());
    }

    #[test]
    fn grounding_never_panics_and_keeps_or_drops_everything(
        text in "[a-c \n]{0,200}",
        line in prop::option::of(0u32..40),
        end_line in prop::option::of(0u32..40),
        evidence in prop::option::of("[a-c \n]{0,30}"),
        in_diff in any::<bool>(),
    ) {
        let case = GroundingCase {
            files: std::collections::BTreeMap::from([("f.rs".to_owned(), text)]),
            diff_lines: if in_diff { std::collections::BTreeMap::from([("f.rs".to_owned(), (1..40).collect())]) } else { Default::default() },
            findings: Vec::new(),
        };
        let finding = Finding {
            id: FindingId::new("p"),
            title: "t".into(),
            description: "d".into(),
            file: Some("f.rs".into()),
            line,
            end_line,
            score: Score::new(5).unwrap(),
            category: bugloop_domain::Category::Logic,
            evidence,
            suggestion: None,
            source: None,
        };
        let report = bugloop_domain::grounding::ground(vec![finding], &case);
        prop_assert_eq!(report.kept.len() + report.dropped.len(), 1);
        for kept in &report.kept {
            if let Some(at) = kept.finding.line {
                prop_assert!(at >= 1 && at as usize <= case.files["f.rs"].lines().count());
            }
        }
    }

    #[test]
    fn thread_state_never_panics(bodies in prop::collection::vec(any::<String>(), 0..20), links in prop::collection::vec(any::<u8>(), 0..20)) {
        let comments: Vec<Comment> = bodies.iter().enumerate().map(|(i, body)| Comment {
            id: i.to_string(),
            author: if i % 2 == 0 { "bugloop".into() } else { "dev".into() },
            body: body.clone(),
            created_at: jiff::Timestamp::from_second(1_700_000_000 + i as i64).unwrap(),
            kind: Default::default(),
            in_reply_to: links.get(i).map(|l| (usize::from(*l) % bodies.len().max(1)).to_string()),
            thread_id: None,
            path: None,
            line: None,
            thread_resolved: false,
            by_bugloop: i % 2 == 0,
        }).collect();
        let _ = reconstruct(&comments, &MarkerSyntax::default());
    }
}

fn comment(
    id: &str,
    body: String,
    created_at: jiff::Timestamp,
    by_bugloop: bool,
    in_reply_to: Option<&str>,
) -> Comment {
    Comment {
        id: id.into(),
        author: "bugloop".into(),
        body,
        created_at,
        kind: Default::default(),
        in_reply_to: in_reply_to.map(Into::into),
        thread_id: None,
        path: None,
        line: None,
        thread_resolved: false,
        by_bugloop,
    }
}
