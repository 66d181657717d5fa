//! Stage 5b of a review, beside the model sessions: the static analyzers
//! (`bugloop-analyzers`) run on the code at head, and their candidates on the change become
//! findings on evidence. With a model that uses tools they are triaged (the model confirms each
//! with its own explanation and score, or dismisses it with a reason) in one structured question
//! asked while the sessions go on; with the embedded model, or `review.analyzer_findings:
//! publish`, they are published as the tools say. A model finding at the same place as a hit is
//! one finding, both sources named ([`merge`]).

use std::collections::BTreeMap;
use std::time::Duration;

use bugloop_analyzers::{AnalyzerRun, Candidate, Choice, CustomAnalyzer, Toolbox, built_in};
use bugloop_config::{AnalyzerEntry, AnalyzerFindings, AnalyzerList, Config};
use bugloop_domain::filter::ExistingFinding;
use bugloop_domain::finding::Finding;
use bugloop_domain::score::Score;
use bugloop_report::review::{AnalysisInfo, DroppedFinding, ReportStage, Unreviewed};
use bugloop_sandbox::Policy;
use serde::Deserialize;

use super::ReviewRequest;
use super::analyzer_runs::{analyzers_done, failed_files, not_run, run_info, unnamed_files};
use super::brief::Brief;
use crate::env::LoopEnv;
use crate::prompt::quoted;
use crate::{ProgressEvent, Question, sandbox_settings, structured_answer};

pub(crate) const TRIAGE_SYSTEM: &str = include_str!("../../prompts/analyzer-triage.md");

/// Most candidates one triage question weighs; the rest are published as the tools say.
const MAX_TRIAGED: usize = 40;

/// Largest output an analyzer may write (clippy's JSON on a large crate is megabytes).
const MAX_OUTPUT_BYTES: usize = 32 << 20;

/// What the analyzers add to a review.
#[derive(Debug, Default)]
pub(super) struct Analyzed {
    /// Findings on evidence: confirmed by the model, or published as the tools say.
    pub findings: Vec<Finding>,
    /// Candidates the model dismissed, with its reason.
    pub dismissed: Vec<DroppedFinding>,
    pub info: AnalysisInfo,
    /// Files of the change no analyzer could be given (a name that is not UTF-8), or that an
    /// analyzer failed on.
    pub unanalyzed: Vec<Unreviewed>,
    /// Each analyzer that could not check files of the change (it timed out, crashed, or said
    /// more than is read on them), said once: the review is not complete (a branch could
    /// otherwise add a file that takes a tool down to go unchecked).
    pub failures: Vec<String>,
    /// Tracked findings of a type checker in files the change does not edit that it no longer
    /// breaks, with why ([`super::unbroken`]).
    pub no_longer_broken: BTreeMap<String, String>,
}

/// Whether hit `c` is the tracked `finding`, whose code is as it was: the same tool, rule and
/// file, at the line where the finding is now (an analyzer's finding is named by its tool, rule,
/// file and the line it was raised at, `ruff-S608-db.py-9`, and may have followed its code to
/// line 21 since; the same name at line 9 now is other code).
fn is_tracked(c: &Candidate, finding: &ExistingFinding) -> bool {
    let without_line = |id: &str| -> Option<String> {
        let (rest, line) = id.rsplit_once('-')?;
        (!line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())).then(|| rest.to_owned())
    };
    let same_rule = match &finding.tool_rule {
        Some((tool, rule)) => *tool == c.tool && *rule == c.hit.rule,
        None => without_line(finding.id.as_str())
            .is_some_and(|named| without_line(c.id().as_str()) == Some(named)),
    };
    // A cause a type checker reports in several files the change breaks is one finding at its
    // first place, naming the others: a tracked finding at one of those is that cause still.
    let grouped = c.unedited
        && finding
            .file
            .as_ref()
            .zip(finding.line)
            .is_some_and(|(file, line)| c.also_at.iter().any(|(f, l)| f == file && *l == line));
    same_rule
        && (grouped
            || (finding.file.as_deref() == Some(c.hit.file.as_str())
                && finding.line == Some(c.hit.line)))
}

/// Runs the configured analyzers and weighs their candidates.
/// `tracked`: unless a full review was asked for, the findings tracked on the change whose code
/// is as it was, where it is now (one whose code the changes since rewrote is weighed again:
/// the tool's hit on the new code is what keeps it open). A hit that is one of them (the same tool, rule, file and
/// line, by its id or where its code moved since) was weighed and kept then, and is not weighed
/// again; every other hit is, even on lines that did not change since (an analyzer that did not
/// run then, a hit dismissed then whose surroundings changed).
pub(super) async fn analyze(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    brief: &Brief,
    tracked: Option<&[ExistingFinding]>,
) -> Analyzed {
    let config = env.config();
    let (choices, mut refused) = choices(config);
    if choices.is_empty() && refused.is_empty() {
        return Analyzed::default();
    }
    env.progress.event(ProgressEvent::Step(
        "analyzers: running the static analyzers on the change".to_owned(),
    ));
    let mut diff = request.diff.clone();
    diff.files
        .retain(|f| !brief.plan.ignored.iter().any(|ignored| ignored == f.path()));
    let mut unanalyzed = unnamed_files(&diff);
    let chosen: Vec<String> = choices.iter().map(|c| c.name().to_owned()).collect();
    let analysis = run_analyzers(env, request, &diff, choices).await;
    let chosen: Vec<&str> = chosen.iter().map(String::as_str).collect();
    let no_longer_broken = tracked
        .map(|tracked| {
            super::unbroken::no_longer_broken(&diff, tracked, &analysis, &chosen, is_tracked)
        })
        .unwrap_or_default();
    refused.extend(analysis.runs);
    env.progress
        .event(ProgressEvent::Step(analyzers_done(&refused)));
    let (failed, failures) = failed_files(&refused);
    unanalyzed.extend(failed);
    let mut info = AnalysisInfo {
        runs: refused.iter().map(run_info).collect(),
        candidates: analysis.candidates.len(),
        ..AnalysisInfo::default()
    };
    let triage = match config.review.analyzer_findings {
        AnalyzerFindings::Triage => true,
        AnalyzerFindings::Publish => false,
        AnalyzerFindings::Auto => env.provider.capabilities().tools,
    };
    let mut candidates = analysis.candidates;
    if let Some(tracked) = tracked {
        candidates.retain(|c| !tracked.iter().any(|finding| is_tracked(c, finding)));
        info.candidates = candidates.len();
    }
    if !triage || candidates.is_empty() {
        info.weighed = "publish".to_owned();
        let findings = candidates.iter().map(Candidate::to_finding).collect();
        return Analyzed {
            findings,
            dismissed: Vec::new(),
            info,
            unanalyzed,
            failures,
            no_longer_broken,
        };
    }
    info.weighed = "triage".to_owned();
    let mut analyzed = weigh(env, request, candidates).await;
    analyzed.info = AnalysisInfo {
        confirmed: analyzed.info.confirmed,
        dismissed: analyzed.info.dismissed,
        triage_error: analyzed.info.triage_error.take(),
        ..info
    };
    analyzed.unanalyzed = unanalyzed;
    analyzed.failures = failures;
    analyzed.no_longer_broken = no_longer_broken;
    analyzed
}

/// The chosen analyzers on `diff` (the change without its ignored files), in the sandbox on the
/// code at head, with the base commit's files at hand.
async fn run_analyzers(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    diff: &bugloop_diff::Diff,
    choices: Vec<Choice>,
) -> bugloop_analyzers::Analysis {
    let config = env.config();
    let base_dir = super::base_tree::base_files(env, request, &choices);
    let mut sandbox = sandbox_settings(config, &request.workspace, Policy::ReadOnly);
    sandbox.timeout = Duration::from_secs(config.review.analyzer_timeout_seconds);
    sandbox.max_output_bytes = MAX_OUTPUT_BYTES;
    bugloop_analyzers::analyze(bugloop_analyzers::Request {
        workspace: &request.workspace,
        diff,
        choices,
        sandbox,
        toolbox: Toolbox::from_env(),
        base_dir: base_dir.as_ref().map(|d| d.path().to_path_buf()),
        alone: false,
        base: Some(&super::base_tree::BaseCommit {
            git: env.git,
            commit: &request.base,
        }),
    })
    .await
}

/// The analyzers `review.analyzers` names, and entries that cannot run (reported as not run).
fn choices(config: &Config) -> (Vec<Choice>, Vec<AnalyzerRun>) {
    let entries = match &config.review.analyzers {
        AnalyzerList::Auto(_) => return (bugloop_analyzers::auto(), Vec::new()),
        AnalyzerList::List(entries) => entries,
    };
    let mut choices = Vec::new();
    let mut refused = Vec::new();
    for entry in entries {
        match entry {
            AnalyzerEntry::Name(name) if name == "auto" => {
                choices.extend(bugloop_analyzers::auto());
            }
            AnalyzerEntry::Name(name) => match built_in(name) {
                Some(tool) => choices.push(Choice::BuiltIn(tool)),
                None => refused.push(not_run(name, "no such built-in analyzer")),
            },
            AnalyzerEntry::Sarif(tool) => match CustomAnalyzer::new(
                tool.name.clone(),
                tool.command.as_deref(),
                tool.sarif.clone(),
                tool.files.clone(),
                tool.config.clone(),
            ) {
                Ok(custom) => choices.push(Choice::Custom(custom)),
                Err(error) => refused.push(not_run(&tool.name, &error.to_string())),
            },
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    choices.retain(|c| seen.insert(c.name().to_owned()));
    (choices, refused)
}

#[derive(Debug, Deserialize)]
struct TriageAnswer {
    verdicts: Vec<Verdict>,
}

#[derive(Debug, Deserialize)]
struct Verdict {
    id: String,
    verdict: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    explanation: Option<String>,
    #[serde(default)]
    score: Option<u8>,
    #[serde(default)]
    reason: Option<String>,
}

/// Asks the model to confirm or dismiss each candidate; what it does not answer (or a question
/// that fails) is published as the tool says.
async fn weigh(env: &LoopEnv<'_>, request: &ReviewRequest, candidates: Vec<Candidate>) -> Analyzed {
    let (asked, beyond) = candidates.split_at(candidates.len().min(MAX_TRIAGED));
    let mut analyzed = Analyzed::default();
    analyzed
        .findings
        .extend(beyond.iter().map(Candidate::to_finding));
    let answer = structured_answer::<TriageAnswer>(
        env,
        &request.workspace,
        Question {
            name: "analyzer-triage",
            system: TRIAGE_SYSTEM,
            prompt: triage_prompt(asked, |file, line| context(request, file, line)),
            schema: triage_schema(),
            max_tokens: 200 + 160 * u32::try_from(asked.len()).unwrap_or(u32::MAX / 200),
        },
    )
    .await;
    let verdicts = match answer {
        Ok(answer) => answer.verdicts,
        Err(error) => {
            analyzed.info.triage_error = Some(format!(
                "the model's triage could not be used ({error}): the hits are published as the tools say"
            ));
            Vec::new()
        }
    };
    for candidate in asked {
        let id = candidate.id();
        let verdict = verdicts.iter().find(|v| v.id == id.as_str());
        match verdict {
            Some(v) if v.verdict == "dismiss" => {
                analyzed.info.dismissed += 1;
                let finding = candidate.to_finding();
                analyzed.dismissed.push(DroppedFinding {
                    stage: ReportStage::Triage,
                    id: id.to_string(),
                    location: finding.location(),
                    title: finding.title,
                    reason: bugloop_domain::markdown::quiet(
                        v.reason.as_deref().unwrap_or("dismissed by the model"),
                    ),
                });
            }
            Some(v) if v.verdict == "confirm" => {
                analyzed.info.confirmed += 1;
                analyzed.findings.push(confirmed(candidate, v));
            }
            _ => analyzed.findings.push(candidate.to_finding()),
        }
    }
    analyzed
}

/// A confirmed candidate: the model's title, explanation and score, the tool's place,
/// evidence and rule.
fn confirmed(candidate: &Candidate, verdict: &Verdict) -> Finding {
    let mut finding = candidate.to_finding();
    let tool_says = finding.description.clone();
    if let Some(title) = verdict
        .title
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        finding.title = title.chars().take(200).collect();
    }
    if let Some(explanation) = verdict
        .explanation
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
    {
        finding.description = format!("{explanation}\n\n{tool_says}");
    }
    if let Some(score) = verdict.score {
        finding.score = Score::saturating(i64::from(score));
    }
    if let Some(source) = &mut finding.source {
        source.model = true;
    }
    finding
}

/// The hits as the triage is shown them; hits alike in all but their place (one tool's rule,
/// message and surrounding code, such as the same key committed in several files) are shown
/// once, with every id and place, each id still answered on its own.
fn triage_prompt(
    candidates: &[Candidate],
    code_around: impl Fn(&str, u32) -> Option<Around>,
) -> String {
    let mut groups: Vec<(Vec<&Candidate>, Option<Around>)> = Vec::new();
    for candidate in candidates {
        let around = code_around(&candidate.hit.file, candidate.hit.line);
        // Alike by the lines as they are, not as shown (two keys' bodies both show as "encoded
        // data"), and never when the code could not be read.
        let alike = groups.iter_mut().find(|(members, shown)| {
            let first = &members[0];
            let same_code = match (shown, &around) {
                (Some(shown), Some(around)) => shown.raw == around.raw,
                _ => false,
            };
            same_code
                && first.unedited == candidate.unedited
                && first.tool == candidate.tool
                && first.hit.rule == candidate.hit.rule
                && first.hit.level == candidate.hit.level
                && first.hit.message == candidate.hit.message
        });
        match alike {
            Some((members, _)) => members.push(candidate),
            None => groups.push((vec![candidate], around)),
        }
    }
    let mut prompt = String::from("## The analyzers' hits on lines this change adds\n");
    for (members, around) in groups {
        let hit = &members[0].hit;
        let ids: Vec<String> = members.iter().map(|c| c.id().to_string()).collect();
        let places: Vec<String> = members
            .iter()
            .map(|c| {
                format!(
                    "{}:{}",
                    bugloop_domain::paths::prompt_path(&c.hit.file),
                    c.hit.line
                )
            })
            .collect();
        let (heading, code) = if members.len() == 1 {
            (format!("id: {}", ids[0]), "The code around it")
        } else {
            (
                format!(
                    "ids: {} (the same hit in {} places)",
                    ids.join(", "),
                    ids.len()
                ),
                "The code around it, the same in each place",
            )
        };
        // A type checker's hit in a file the change does not edit: what the change broke there.
        let broken = if members[0].unedited {
            "\nThis file is not edited by the change; the tool did not report this before the \
             change, so the change breaks this code.\n"
        } else {
            ""
        };
        prompt.push_str(&format!(
            "\n### {heading}\n\n{} rule {} ({:?}) at {}\n{broken}\n\"\"\"\n{}\n\"\"\"\n\n{code}:\n\n\"\"\"\n{}\n\"\"\"\n",
            members[0].tool,
            quoted(&hit.rule, 80),
            hit.level,
            places.join(", "),
            quoted(&hit.message, 600),
            quoted(around.as_ref().map_or("", |a| a.shown.as_str()), 2_000),
        ));
    }
    prompt
}

/// Lines around `line` of `file` at head, numbered as the change is shown (unpadded), with runs
/// of encoded data collapsed as there (a private key's body is not sent to the model); the
/// hit's own line is always shown.
fn context(request: &ReviewRequest, file: &str, line: u32) -> Option<Around> {
    let text = std::fs::read(request.workspace.join(file)).ok()?;
    let text = String::from_utf8_lossy(&text);
    let raw: Vec<&str> = window(&text, line).into_iter().map(|(_, l)| l).collect();
    Some(Around {
        shown: lines_around(&text, line),
        raw: raw.join("\n"),
    })
}

/// The code around a hit: as the model is shown it, and the same lines as they are.
struct Around {
    shown: String,
    raw: String,
}

/// The eleven lines around `line` (five before, five after), with their numbers.
fn window(text: &str, line: u32) -> Vec<(usize, &str)> {
    let line = usize::try_from(line).unwrap_or(1);
    text.lines()
        .enumerate()
        .skip(line.saturating_sub(6))
        .take(11)
        .map(|(i, l)| (i + 1, l))
        .collect()
}

fn lines_around(text: &str, line: u32) -> String {
    let around = window(text, line);
    let line = usize::try_from(line).unwrap_or(1);
    let mut shown = Vec::new();
    let mut index = 0;
    while let Some(&(number, text)) = around.get(index) {
        // The hit's own line is always shown, whatever it looks like.
        let run = around[index..]
            .iter()
            .take_while(|(n, l)| *n != line && crate::plan::is_data_line(l))
            .count();
        if run >= crate::plan::DATA_RUN {
            let last = around[index + run - 1].0;
            shown.push(format!(
                "{number}-{last} [{run} lines of encoded data (base64 or hex), not shown]"
            ));
            index += run;
        } else {
            shown.push(format!("{number} {text}"));
            index += 1;
        }
    }
    shown.join("\n")
}

fn triage_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["confirm", "dismiss"]},
                        "title": {"type": "string"},
                        "explanation": {"type": "string"},
                        "score": {"type": "integer", "minimum": 1, "maximum": 10},
                        "reason": {"type": "string"}
                    },
                    "required": ["id", "verdict"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["verdicts"],
        "additionalProperties": false
    })
}

/// The model's findings and the analyzers' as one list: a model finding on the same file whose
/// lines hold a hit's line is that hit (one finding: the model's words, the tool named, the
/// higher score); the rest are kept as they are.
pub(super) fn merge(mut model: Vec<Finding>, analyzers: Vec<Finding>) -> Vec<Finding> {
    let mut added = Vec::new();
    for hit in analyzers {
        // A suppression is about the silencing, not the bug a model may see on its line.
        let suppression = hit.source.as_ref().is_some_and(|s| s.tool == "bugloop");
        let same_place = model.iter_mut().filter(|_| !suppression).find(|m| {
            m.source.is_none()
                && m.file == hit.file
                && m.line.zip(hit.line).is_some_and(|(start, line)| {
                    let end = m.end_line.unwrap_or(start).max(start);
                    (start..=end).contains(&line)
                })
        });
        match same_place {
            Some(found) => {
                let mut source = hit.source.clone();
                if let Some(source) = &mut source {
                    source.model = true;
                }
                found.source = source;
                found.score = found.score.max(hit.score);
                found.id = hit.id;
            }
            None => added.push(hit),
        }
    }
    model.extend(added);
    model
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::review::test_findings::{finding, s608};
    use bugloop_domain::finding::FindingSource;

    #[test]
    fn a_hit_where_a_tracked_finding_of_its_rule_is_now_is_that_finding() {
        let hit = Candidate {
            tool: "ruff".into(),
            hit: bugloop_analyzers::Hit {
                rule: "S608".into(),
                level: bugloop_analyzers::Level::Error,
                message: "Possible SQL injection".into(),
                file: "db.py".into(),
                line: 21,
                end_line: None,
                url: None,
                security: true,
                why: None,
            },
            score: Score::saturating(8),
            category: bugloop_domain::finding::Category::Security,
            evidence: "query = f\"select {name}\"".into(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        };
        let tracked = |id: &str, line: u32| {
            let mut existing = crate::review::touched::tests::open("db.py", line, None);
            existing.id = bugloop_domain::finding::FindingId::new(id);
            existing
        };
        assert!(is_tracked(&hit, &tracked("ruff-S608-db.py-9", 21)));
        // Named at line 21 but followed to line 3: a hit at 21 now is other code, weighed.
        assert!(!is_tracked(&hit, &tracked("ruff-S608-db.py-21", 3)));
        // The rule its comment records, whatever its id says.
        let mut renamed = tracked("ruff-S608-db.py-9-2", 21);
        renamed.tool_rule = Some(("ruff".into(), "S608".into()));
        assert!(is_tracked(&hit, &renamed));
        assert!(!is_tracked(&hit, &tracked("ruff-S608-db.py-9", 20)));
        assert!(!is_tracked(&hit, &tracked("ruff-B006-db.py-9", 21)));
        assert!(!is_tracked(&hit, &tracked("sql-injection", 21)));
        // A cause that broke files the change does not edit, first seen at another of them now:
        // the finding at one of its other places is that cause still.
        let mut broken = hit;
        broken.unedited = true;
        broken.also_at = vec![("db.py".into(), 40)];
        assert!(is_tracked(&broken, &tracked("ruff-S608-db.py-40", 40)));
        broken.unedited = false;
        assert!(!is_tracked(&broken, &tracked("ruff-S608-db.py-40", 40)));
    }

    #[test]
    fn a_model_finding_and_a_hit_at_the_same_place_are_one() {
        let mut hit = finding("ruff-S608-app.py-9", 9, Some(s608("ruff")));
        hit.score = Score::saturating(8);
        let suppression = FindingSource {
            tool: "bugloop".into(),
            rule: "suppression".into(),
            url: None,
            model: false,
        };
        let merged = merge(
            vec![
                finding("sql-injection", 9, None),
                finding("other", 20, None),
            ],
            vec![
                finding("bugloop-suppression-app.py-9", 9, Some(suppression)),
                hit,
                finding("bugloop-suppression-app.py-30", 30, None),
            ],
        );
        assert_eq!(merged.len(), 4, "{merged:#?}");
        assert_eq!(merged[0].title, "sql-injection");
        assert_eq!(merged[0].id.as_str(), "ruff-S608-app.py-9");
        assert_eq!(merged[0].score.get(), 8);
        let source = merged[0].source.as_ref().unwrap();
        assert!(source.model && source.tool == "ruff");
        assert_eq!(merged[2].id.as_str(), "bugloop-suppression-app.py-9");
        assert_eq!(merged[3].id.as_str(), "bugloop-suppression-app.py-30");
    }

    #[test]
    fn hits_alike_but_for_their_place_are_shown_once_with_every_id() {
        let candidate = |tool: &str, file: &str, message: &str| Candidate {
            tool: tool.to_owned(),
            hit: bugloop_analyzers::Hit {
                rule: "private-key".to_owned(),
                level: bugloop_analyzers::Level::Error,
                message: message.to_owned(),
                file: file.to_owned(),
                line: 1,
                end_line: None,
                url: None,
                security: true,
                why: None,
            },
            score: Score::saturating(9),
            category: bugloop_domain::finding::Category::Security,
            evidence: "-----BEGIN PRIVATE KEY-----".to_owned(),
            note: None,
            unedited: false,
            also_at: Vec::new(),
        };
        let key = "a private key";
        let candidates = [
            candidate("secrets", "a.key", key),
            candidate("secrets", "b.key", key),
            candidate("secrets", "c.key", "another message"),
            candidate("other", "d.key", key),
            candidate("secrets", "e.key", key),
            candidate("secrets", "f.key", key),
        ];
        // f.key's code differs from the others' where both show alike (two keys' bodies both
        // show as encoded data); g.key and h.key could not be read.
        let candidates = [
            candidates.as_slice(),
            &[
                candidate("secrets", "g.key", key),
                candidate("secrets", "h.key", key),
            ],
        ]
        .concat();
        let prompt = triage_prompt(&candidates, |file, _| {
            let raw = if file == "f.key" {
                "BEGIN\nAAAA"
            } else {
                "BEGIN\nBBBB"
            };
            (!["g.key", "h.key"].contains(&file)).then(|| Around {
                shown: "1 -----BEGIN PRIVATE KEY-----\n2 [encoded data]".to_owned(),
                raw: raw.to_owned(),
            })
        });
        let ids: Vec<String> = candidates.iter().map(|c| c.id().to_string()).collect();
        assert_eq!(prompt.matches("\n### ").count(), 6, "{prompt}");
        assert!(prompt.contains(&format!(
            "### ids: {}, {}, {} (the same hit in 3 places)",
            ids[0], ids[1], ids[4]
        )));
        assert!(
            prompt.contains("at a.key:1, b.key:1, e.key:1\n"),
            "{prompt}"
        );
        for id in &ids[2..4] {
            assert!(prompt.contains(&format!("### id: {id}\n")), "{prompt}");
        }
        for id in &ids[5..] {
            assert!(prompt.contains(&format!("### id: {id}\n")), "{prompt}");
        }
        assert!(!prompt.contains("not edited by the change"), "{prompt}");
        // A hit in a file the change breaks without editing it says so, and is not one with a
        // hit alike on the change's own lines.
        let mut broken = candidate("secrets", "a.key", key);
        broken.unedited = true;
        let prompt = triage_prompt(&[candidates[1].clone(), broken], |_, _| {
            Some(Around {
                shown: "1 x".to_owned(),
                raw: "x".to_owned(),
            })
        });
        assert_eq!(prompt.matches("\n### ").count(), 2, "{prompt}");
        assert_eq!(
            prompt.matches("not edited by the change").count(),
            1,
            "{prompt}"
        );
    }

    #[test]
    fn a_hits_context_shows_no_key_material() {
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQDHlIhe7GLCeSk8";
        let key = format!(
            "x = 1\n-----BEGIN PRIVATE KEY-----\n{}-----END PRIVATE KEY-----\ny = 2\n",
            format!("{body}\n").repeat(8)
        );
        let shown = lines_around(&key, 2);
        assert_eq!(
            shown,
            "1 x = 1\n2 -----BEGIN PRIVATE KEY-----\n\
             3-10 [8 lines of encoded data (base64 or hex), not shown]\n\
             11 -----END PRIVATE KEY-----"
        );
        let short = lines_around("a\nb\nc\n", 3);
        assert_eq!(short, "1 a\n2 b\n3 c");
        // A hit on a line that looks like data is shown, and runs stop at it (three lines are
        // too few to collapse).
        let shown = lines_around(&key, 6);
        assert_eq!(
            shown,
            format!(
                "1 x = 1\n2 -----BEGIN PRIVATE KEY-----\n\
                 3 {body}\n4 {body}\n5 {body}\n6 {body}\n\
                 7-10 [4 lines of encoded data (base64 or hex), not shown]\n\
                 11 -----END PRIVATE KEY-----"
            )
        );
    }
}

#[cfg(test)]
mod names {
    #[test]
    fn the_configurations_names_are_the_built_ins() {
        let built_in: Vec<&str> = bugloop_analyzers::BUILT_IN.iter().map(|b| b.name).collect();
        assert_eq!(built_in, bugloop_config::BUILT_IN_ANALYZERS);
    }
}
