//! The renderers on one report of each kind that fills every section: the terminal text,
//! Markdown, SARIF (checked against the official 2.1.0 schema), JSON (the enums' strings) and the
//! summary comment, the act, converge and dispute reports, and the exit outcome of an act.

use std::path::PathBuf;

use bugloop_domain::filter::Stage;
use bugloop_domain::finding::{Category, Finding, FindingId, FindingSource};
use bugloop_domain::score::Score;
use bugloop_domain::status::ThreadStatus;
use bugloop_llm::Usage;
use bugloop_report::act::{ActReport, ChosenBy, Intent};
use bugloop_report::build::{BuildResult, BuildStatus, Landing, VerifyRun};
use bugloop_report::converge::{ConvergeReport, Exit, LoopKind, LoopLine, Quarantined};
use bugloop_report::dispute::{Decision, DisputeOutcome, DisputeResult, DisputeSummary};
use bugloop_report::review::{
    AnalysisInfo, ChangeInfo, CommentAction, DroppedFinding, FIRST_REVIEW, ModelAsked,
    OverflowInfo, PassSummary, Placement, PublishedFinding, REPORT_VERSION, RecheckOutcome,
    RecheckedFinding, RefusedFile, ReportStage, ResolvedFinding, ReviewReport, ReviewedScope,
    SensitivityInfo, StageChange, StageCount, TrackedFinding, Unreviewed, UsageInfo,
};
use bugloop_report::style::Style;
use bugloop_report::{json, markdown, sarif, summary, text};
use serde_json::Value;

#[path = "report/header.rs"]
mod header;

fn finding(id: &str, file: Option<&str>, line: Option<u32>, score: i64) -> Finding {
    Finding {
        id: FindingId::new(id),
        title: format!("Title of {id} | with a pipe"),
        description: format!("Why {id} matters.\nSecond line."),
        file: file.map(str::to_owned),
        line,
        end_line: line.map(|l| l + 1),
        score: Score::saturating(score),
        category: Category::Logic,
        evidence: Some("let x = v[i];".to_owned()),
        suggestion: Some("Check the bounds first.".to_owned()),
        source: None,
    }
}

fn published(finding: Finding, action: CommentAction, code: Option<&str>) -> PublishedFinding {
    PublishedFinding {
        severity: finding.severity(),
        priority: finding.priority(),
        placement: if finding.line.is_some() {
            Placement::Line
        } else {
            Placement::Summary
        },
        action,
        rediscovered_as: None,
        code: code.map(str::to_owned),
        note: None,
        finding,
    }
}

/// A review report with something in every section.
fn review_report() -> ReviewReport {
    let mut rediscovered = published(
        finding("seen-again", Some("src/b.rs"), Some(3), 5),
        CommentAction::Updated,
        Some("    b();"),
    );
    rediscovered.rediscovered_as = Some("b-problem".to_owned());
    rediscovered.note = Some("line corrected from 5 to 3".to_owned());
    ReviewReport {
        version: REPORT_VERSION,
        change: ChangeInfo {
            key: "branch:feature".to_owned(),
            description: "branch feature against main".to_owned(),
            base: "0123456789abcdef".to_owned(),
            head: "fedcba9876543210".to_owned(),
            files: 3,
            additions: 12,
            deletions: 4,
        },
        model: "script:test".to_owned(),
        findings: vec![
            published(
                finding("off-by-one", Some("src/a.rs"), Some(7), 9),
                CommentAction::Added,
                Some("    v[v.len()]"),
            ),
            rediscovered,
            published(
                finding("whole-change", None, None, 3),
                CommentAction::NotPublished,
                None,
            ),
        ],
        resolved: vec![ResolvedFinding {
            id: "old-bug".to_owned(),
            title: "An old bug".to_owned(),
            reason: "fixed by the change".to_owned(),
        }],
        rechecked: vec![RecheckedFinding {
            id: "moved-bug".to_owned(),
            title: "A bug whose code moved".to_owned(),
            change: "its code moved since 0123456: it is now at src/c.rs:4".to_owned(),
            outcome: RecheckOutcome::KeptOpen,
            reason: "its code is still at src/c.rs:4, and the model did not resolve it".to_owned(),
        }],
        tracked: vec![
            TrackedFinding {
                id: "off-by-one".to_owned(),
                title: "Title of off-by-one".to_owned(),
                status: ThreadStatus::Pending,
                score: Some(9),
                file: Some("src/a.rs".to_owned()),
                line: Some(7),
                category: None,
                source: None,
                description: None,
                comment: "1".to_owned(),
            },
            TrackedFinding {
                id: "earlier".to_owned(),
                title: "Raised by an earlier review".to_owned(),
                status: ThreadStatus::Disputed,
                score: Some(6),
                file: Some("src/c.rs".to_owned()),
                line: Some(2),
                category: Some(Category::Security),
                source: Some(FindingSource {
                    tool: "ruff".to_owned(),
                    rule: "S608".to_owned(),
                    url: Some(
                        "https://docs.astral.sh/ruff/rules/hardcoded-sql-expression/".to_owned(),
                    ),
                    model: false,
                }),
                description: Some("The query is built from the request's text.".to_owned()),
                comment: "2".to_owned(),
            },
            TrackedFinding {
                id: "old-bug".to_owned(),
                title: "An old bug".to_owned(),
                status: ThreadStatus::Resolved,
                score: Some(8),
                file: None,
                line: None,
                category: None,
                source: None,
                description: None,
                comment: "3".to_owned(),
            },
        ],
        dropped: vec![
            DroppedFinding {
                stage: ReportStage::Grounding,
                id: "made-up".to_owned(),
                title: "A made-up problem".to_owned(),
                location: "src/a.rs:99".to_owned(),
                reason: "line 99 is outside the file".to_owned(),
            },
            DroppedFinding {
                stage: Stage::Threshold.into(),
                id: "nit".to_owned(),
                title: "A nit".to_owned(),
                location: "src/b.rs:1".to_owned(),
                reason: "score 2 is below the threshold 5".to_owned(),
            },
        ],
        changes: vec![StageChange {
            stage: ReportStage::DedupExisting,
            id: "seen-again".to_owned(),
            note: "the same problem as b-problem".to_owned(),
        }],
        stages: vec![
            StageCount {
                stage: ReportStage::Reported,
                input: 5,
                output: 5,
            },
            StageCount {
                stage: Stage::PathSafety.into(),
                input: 5,
                output: 5,
            },
            StageCount {
                stage: ReportStage::Grounding,
                input: 5,
                output: 4,
            },
            StageCount {
                stage: Stage::Threshold.into(),
                input: 4,
                output: 3,
            },
        ],
        overflow: OverflowInfo {
            count: 1,
            titles: vec!["One too many".to_owned()],
        },
        unreviewed: vec![Unreviewed {
            path: "src/huge.rs".to_owned(),
            reason: "cut at the token budget".to_owned(),
        }],
        summarized: vec![Unreviewed {
            path: "Cargo.lock".to_owned(),
            reason: "lockfile".to_owned(),
        }],
        ignored: vec!["vendor/x.rs".to_owned()],
        passes: vec![
            PassSummary {
                call: 1,
                pass: 1,
                summary: "Logic looked at.\nOne bug.".to_owned(),
                blocking: true,
            },
            PassSummary {
                call: 2,
                pass: 0,
                summary: "A structured answer.".to_owned(),
                blocking: false,
            },
        ],
        usage: UsageInfo {
            input_tokens: 1200,
            cached_input_tokens: 200,
            output_tokens: 300,
            cost_usd: Some(0.0123),
            model_calls: 4,
            sessions: 2,
            seconds: 3.25,
        },
        errors: vec!["part 2 of 2: the model timed out".to_owned()],
        sensitive_data: SensitivityInfo {
            sensitive: false,
            reason: "no sensitive keywords".to_owned(),
        },
        conversation_problems: vec!["comment 9: a broken rmcoc block".to_owned()],
        disputes: vec![DisputeSummary::from(DisputeOutcome {
            finding: "earlier".to_owned(),
            result: DisputeResult::Maintained,
            decision: Some(Decision::Maintain),
            reasoning: "The bound is still off.".to_owned(),
            status: ThreadStatus::Disputed,
        })],
        refused_context: vec![RefusedFile {
            path: "AGENTS.md".to_owned(),
            reason: "a symlink out of the repository".to_owned(),
        }],
        complete: false,
        scope: ReviewedScope::Incremental {
            since: "0123456789abcdef0123456789abcdef01234567".to_owned(),
            files: vec!["src/lib.rs".to_owned()],
            kept_findings: 1,
        },
        proofs: Vec::new(),
        analysis: AnalysisInfo::default(),
        asked: ModelAsked::default(),
    }
}

#[test]
fn the_review_as_terminal_text() {
    insta::assert_snapshot!(text::review(&review_report(), Style::new(false)));
}

/// Names and titles the change or the model chose cannot start a line of the terminal report
/// of their own: a line break in them is shown escaped.
#[test]
fn chosen_text_stays_on_its_line_in_the_terminal() {
    let mut report = review_report();
    report.unreviewed.push(Unreviewed {
        path: "evil\nAll checks passed.py".to_owned(),
        reason: "the model failed".to_owned(),
    });
    report.dropped[0].title = "a title\nNo findings.".to_owned();
    report.ignored.push("x\nClean.lock".to_owned());
    let text = text::review(&report, Style::new(false));
    for forged in ["All checks passed.py", "No findings.", "Clean.lock"] {
        assert!(
            !text
                .lines()
                .any(|line| line.trim_start().starts_with(forged)),
            "{text}"
        );
        assert!(text.contains(&format!("\\n{forged}")), "{text}");
    }
}

#[test]
fn terminal_colour_is_only_on_when_asked() {
    let plain = text::review(&review_report(), Style::new(false));
    let coloured = text::review(&review_report(), Style::new(true));
    assert!(!plain.contains('\x1b'));
    // The highest score (9) is bold red.
    assert!(
        coloured.contains("\x1b[1;31mhigh 9/10\x1b[0m"),
        "{coloured}"
    );
}

#[test]
fn the_review_as_markdown_and_job_summary() {
    insta::assert_snapshot!(markdown::review(&review_report()));
}

/// A file name, title or reason the change or a model chose cannot break the findings table or
/// bring HTML of its own into the Markdown (the Action's job summary renders it): one code span
/// a name, `|` escaped, `<` an entity.
#[test]
fn chosen_text_stays_in_its_markdown_cell() {
    let mut report = review_report();
    let chosen = "a`<img src=https:x.example>`|b.py";
    report.findings[0].finding.file = Some(chosen.to_owned());
    report.findings[0].finding.title = "<img src=https:x.example> | title".to_owned();
    report.resolved[0].reason = "fixed <img src=https:x.example/resolved>".to_owned();
    let markdown = markdown::review(&report);
    let row = markdown.lines().find(|line| line.contains("b.py")).unwrap();
    // Five cells: six pipes that are not escaped.
    let unescaped = row
        .match_indices('|')
        .filter(|(at, _)| !row[..*at].ends_with('\\'));
    assert_eq!(unescaped.count(), 6, "{row}");
    // Outside code spans (inert), no tag of the change's.
    let lines: Vec<&str> = markdown
        .lines()
        .filter(|line| line.contains("x.example"))
        .collect();
    assert!(
        lines.iter().any(|line| line.contains("x.example/resolved")),
        "{markdown}"
    );
    for line in lines {
        let outside = line.split('`').step_by(2).collect::<String>();
        assert!(!outside.contains("<img"), "{line}");
    }
}

#[test]
fn the_review_as_summary_comment() {
    let body = summary::comment_body(&review_report());
    assert!(body.starts_with(summary::SUMMARY_TAG));
    insta::assert_snapshot!(body);
}

#[test]
fn the_review_as_sarif_follows_the_official_schema() {
    let mut sarif = sarif::review(&review_report());
    bugloop_testkit::sarif::assert_official(&sarif);
    // The tool's version changes with every release, the rest must not.
    sarif["runs"][0]["tool"]["driver"]["version"] = "[version]".into();
    insta::assert_json_snapshot!(sarif);
}

#[test]
fn the_review_as_json_keeps_the_strings_of_its_enums() {
    let value: Value = serde_json::from_str(&json::to_json(&review_report()).unwrap()).unwrap();
    let findings = &value["findings"];
    assert_eq!(findings[0]["severity"], "high");
    assert_eq!(findings[0]["priority"], "P0");
    assert_eq!(findings[1]["severity"], "medium");
    assert_eq!(findings[1]["priority"], "P2");
    assert_eq!(value["tracked"][1]["status"], "DISPUTED");
    assert_eq!(value["dropped"][0]["stage"], "grounding");
    assert_eq!(value["dropped"][1]["stage"], "threshold");
    assert_eq!(value["changes"][0]["stage"], "dedup_existing");
    let stages: Vec<&str> = value["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        ["reported", "path_safety", "grounding", "threshold"]
    );
    assert_eq!(value["disputes"][0]["decision"], "maintained");
    assert_eq!(value["disputes"][0]["status"], "DISPUTED");
    let developer = DisputeSummary::from(DisputeOutcome {
        finding: "x".to_owned(),
        result: DisputeResult::DeveloperPrevails,
        decision: None,
        reasoning: String::new(),
        status: ThreadStatus::Resolved,
    });
    assert_eq!(
        serde_json::to_value(&developer).unwrap()["decision"],
        "the developer's decision stands"
    );
    // A reply to a finding resolved before it was weighed (a fix): nothing was decided.
    let resolved = DisputeOutcome {
        finding: "x".to_owned(),
        result: DisputeResult::NothingToWeigh,
        decision: None,
        reasoning: "already resolved".to_owned(),
        status: ThreadStatus::Resolved,
    };
    assert_eq!(resolved.decision_label(), "nothing to weigh");
}

#[test]
fn every_report_stage_serializes_as_its_name() {
    for stage in [
        ReportStage::Validation,
        ReportStage::Reported,
        ReportStage::Grounding,
        ReportStage::PathSafety,
        ReportStage::IgnoreGlobs,
        ReportStage::SecurityPromotion,
        ReportStage::Elevation,
        ReportStage::Threshold,
        ReportStage::DedupRun,
        ReportStage::DedupExisting,
        ReportStage::CommentLimit,
    ] {
        assert_eq!(serde_json::to_value(stage).unwrap(), stage.as_str());
    }
    // The filter's own names are the report's.
    for stage in [Stage::PathSafety, Stage::DedupRun, Stage::CommentLimit] {
        assert_eq!(
            serde_json::to_value(stage).unwrap(),
            serde_json::to_value(ReportStage::from(stage)).unwrap()
        );
    }
}

#[test]
fn open_findings_of_earlier_reviews_are_the_unresolved_unpublished_ones() {
    let report = review_report();
    let earlier: Vec<&str> = report.open_from_earlier().map(|t| t.id.as_str()).collect();
    assert_eq!(earlier, ["earlier"]);
    assert_eq!(report.open_count(), 2);
    assert_eq!(report.max_open_score(), Some(9));
}

fn build(status: BuildStatus) -> BuildResult {
    BuildResult {
        status,
        summary: "Bounds checked.".to_owned(),
        verify: vec![
            VerifyRun {
                command: "cargo build".to_owned(),
                passed: true,
                output: String::new(),
            },
            VerifyRun {
                command: "cargo test".to_owned(),
                passed: false,
                output: "1 failed".to_owned(),
            },
        ],
        left_out: vec!["target/debug/app: produced by `cargo build`".to_owned()],
        out_of_budget: false,
        model_unavailable: false,
        usage: Usage::default(),
        transcript: PathBuf::from("runs/fix.jsonl"),
    }
}

fn act_report(status: BuildStatus, landing: Option<Landing>) -> ActReport {
    ActReport {
        action: Intent::Fix(vec!["off-by-one".to_owned()]),
        chosen_by: ChosenBy::Command,
        message: text::build_outcome(&status, landing.as_ref()),
        build: Some(build(status)),
        landing,
        answer: Some("Bounds checked.".to_owned()),
        resolved: vec!["off-by-one".to_owned()],
    }
}

fn committed() -> BuildStatus {
    BuildStatus::Committed {
        commit: "abcdef0123456789".to_owned(),
        files: vec!["src/a.rs".to_owned()],
        unverified: false,
    }
}

#[test]
fn act_reports_as_text() {
    let landed = act_report(
        committed(),
        Some(Landing::FastForwarded {
            branch: "feature".to_owned(),
            commit: "abcdef0123456789".to_owned(),
        }),
    );
    let failed = act_report(
        BuildStatus::VerifyFailed {
            command: "cargo test".to_owned(),
            output: "test a ... FAILED\n".to_owned(),
        },
        None,
    );
    let waiting = act_report(
        committed(),
        Some(Landing::Branch {
            name: "bugloop/fix-abcdef0".to_owned(),
            commit: "abcdef0123456789".to_owned(),
            reason: "the branch moved".to_owned(),
        }),
    );
    let answered = ActReport {
        answer: Some("It is fine.".to_owned()),
        ..ActReport::nothing_built(Intent::Think, ChosenBy::Model, "answered")
    };
    insta::assert_snapshot!(
        [&landed, &failed, &waiting, &answered]
            .map(text::act)
            .join("-----\n")
    );
    let value = serde_json::to_value(&answered).unwrap();
    assert_eq!(value["chosen_by"], "model");
    assert_eq!(value["action"]["action"], "think");
}

#[test]
fn a_converge_report_as_the_spec_prints_it() {
    let report = ConvergeReport {
        exit: Exit::CapReached,
        detail: "2 findings are left.".to_owned(),
        loops: 2,
        start_commit: "1111111aaaaaaa".to_owned(),
        final_commit: "2222222bbbbbbb".to_owned(),
        files_changed: 1,
        additions: 3,
        deletions: 1,
        log: vec![
            LoopLine {
                number: 1,
                kind: LoopKind::Gate,
                text: "passed".to_owned(),
            },
            LoopLine {
                number: 1,
                kind: LoopKind::Audit,
                text: "1P0 / 0P1 / 0P2".to_owned(),
            },
            LoopLine {
                number: 2,
                kind: LoopKind::Fix,
                text: "committed 2222222".to_owned(),
            },
        ],
        landing: Some(Landing::Branch {
            name: "bugloop/converge-2222222".to_owned(),
            commit: "2222222bbbbbbb".to_owned(),
            reason: "the tree is dirty".to_owned(),
        }),
        earlier_dirty_loops: 0,
        quarantined: vec![Quarantined {
            loop_number: 1,
            auditor: "auditor 2 (security)".to_owned(),
            title: "Not there".to_owned(),
            location: "src/a.rs:40".to_owned(),
            reason: "validator: line 40 is outside the file".to_owned(),
        }],
        description: None,
        description_error: None,
    };
    assert_eq!(report.text(), text::converge(&report));
    assert_eq!(
        serde_json::to_value(&report).unwrap()["log"][1]["kind"],
        "audit"
    );
    insta::assert_snapshot!(text::converge(&report));
}

#[test]
fn a_settled_dispute_as_text() {
    let outcome = DisputeOutcome {
        finding: "off-by-one".to_owned(),
        result: DisputeResult::Conceded,
        decision: Some(Decision::Concede),
        reasoning: "The caller checks the length.".to_owned(),
        status: ThreadStatus::Resolved,
    };
    assert_eq!(
        text::dispute(&outcome),
        "off-by-one: conceded (RESOLVED)\n\nThe caller checks the length.\n"
    );
    assert_eq!(
        serde_json::to_value(&outcome).unwrap()["decision"],
        "concede"
    );
}

/// The SARIF Multitool (`@microsoft/sarif-multitool-linux`, installed by the test command).
fn multitool() -> PathBuf {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
        });
    let tool = cache
        .join("bugloop/test-assets/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    assert!(
        tool.exists(),
        "{} is missing; `scripts/setup --test` installs the SARIF Multitool",
        tool.display()
    );
    tool
}

/// A report with a finding in every category (a security one at 9), one about no file, and one
/// still open from an earlier run.
fn every_category_report() -> ReviewReport {
    let mut report = review_report();
    report.findings = (10_u32..)
        .zip(Category::ALL.iter())
        .map(|(line, category)| {
            let mut f = finding(category.as_str(), Some("src/lib.rs"), Some(line), 6);
            f.category = *category;
            if *category == Category::Security {
                f.score = Score::saturating(9);
            }
            published(f, CommentAction::Added, Some("let x = v[i];"))
        })
        .chain(std::iter::once(published(
            finding("no-file", None, None, 7),
            CommentAction::Added,
            None,
        )))
        .collect();
    report
}

/// GitHub code scanning takes what the Multitool's `Gh` rules accept; `Sarif` is the format's
/// own guidance. Neither may report an error or a warning (notes are advice).
#[test]
fn the_sarif_passes_the_multitool_for_sarif_and_github() {
    let tool = multitool();
    let dir = tempfile::tempdir().unwrap();
    let sarif = sarif::review(&every_category_report());
    let problems = |sarif: &Value, kind: &str| -> Vec<String> {
        let input = dir.path().join(format!("review-{kind}.sarif"));
        std::fs::write(&input, serde_json::to_string_pretty(sarif).unwrap()).unwrap();
        let output = dir.path().join(format!("validation-{kind}.sarif"));
        let run = std::process::Command::new(&tool)
            .arg("validate")
            .arg(&input)
            .args([
                "--rule-kind",
                kind,
                "--level",
                "Error;Warning",
                "--log",
                "ForceOverwrite",
            ])
            .arg("--output")
            .arg(&output)
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1")
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{kind}: {}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        let log: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| matches!(r["level"].as_str(), Some("error" | "warning") | None))
            .map(|r| format!("{} {}", r["ruleId"], r["message"]))
            .collect()
    };
    for kind in ["Sarif", "Gh"] {
        let found = problems(&sarif, kind);
        assert!(found.is_empty(), "{kind}: {found:#?}");
    }
    // The check can fail: without help and a full description, GitHub's rules refuse a rule.
    let mut bare = sarif.clone();
    for rule in bare["runs"][0]["tool"]["driver"]["rules"]
        .as_array_mut()
        .unwrap()
    {
        let rule = rule.as_object_mut().unwrap();
        rule.remove("help");
        rule.remove("fullDescription");
    }
    assert!(!problems(&bare, "Gh").is_empty());
    // What GitHub ranks security alerts by, and what every rule must have.
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for category in Category::ALL {
        assert!(
            rules.iter().any(|r| r["id"] == category.as_str()),
            "{category:?}"
        );
    }
    let security = rules.iter().find(|r| r["id"] == "security").unwrap();
    assert_eq!(security["properties"]["security-severity"], "9.0");
    for rule in rules {
        assert_ne!(rule["name"], rule["id"]);
        assert!(
            rule["fullDescription"]["text"].is_string() && rule["help"]["markdown"].is_string()
        );
    }
    // The finding about no file is in the run, as a notification.
    let notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"].to_string();
    assert!(notes.contains("no-file"), "{notes}");
}

/// An alert follows its finding: re-running, or moving the code below an edit, keeps the
/// fingerprint; another finding has another.
#[test]
fn sarif_fingerprints_survive_re_runs_and_line_moves() {
    let fingerprint = |line: u32, id: &str| {
        let mut report = review_report();
        report.findings = vec![published(
            finding(id, Some("src/lib.rs"), Some(line), 7),
            CommentAction::Added,
            None,
        )];
        report.tracked.clear();
        sarif::review(&report)["runs"][0]["results"][0]["partialFingerprints"].clone()
    };
    let first = fingerprint(10, "index-out-of-bounds");
    assert_eq!(first, fingerprint(10, "index-out-of-bounds"));
    assert_eq!(first, fingerprint(14, "index-out-of-bounds"));
    assert_ne!(first, fingerprint(10, "sql-injection"));
}

/// The summary comment lists every proof with what it came to, as inert text.
#[test]
fn the_summary_lists_the_proofs() {
    use bugloop_report::review::{FindingProof, ProofStatus};
    let mut report = review_report();
    report.proofs = vec![FindingProof {
        id: "off-by-one".to_owned(),
        title: "Loop reads one past the end".to_owned(),
        status: ProofStatus::Proven,
        reason: "IndexError in mean, @alice <!-- bugloop:x -->".to_owned(),
        test_path: Some("test_mean.py".to_owned()),
        test: Some("assert mean([1]) == 1".to_owned()),
        command: Some("python3 -m unittest -q test_mean.py".to_owned()),
        output: Some("IndexError".to_owned()),
        test_seconds: Some(0.2),
        outcome: "published".to_owned(),
    }];
    let body = summary::comment_body(&report);
    let line = body
        .lines()
        .find(|l| l.starts_with("- `off-by-one` **proven**"))
        .unwrap_or_else(|| panic!("{body}"));
    assert!(line.contains("IndexError in mean"), "{line}");
    assert!(!line.contains("@alice"), "no mention: {line}");
    assert!(!line.contains("<!--"), "no marker: {line}");
}
