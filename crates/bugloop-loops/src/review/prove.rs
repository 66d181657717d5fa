//! Proven findings (`review.prove`): before a serious finding is published, a Build agent in a
//! task tree of the head writes the smallest test that shows it, and bugloop runs that test in
//! the sandbox itself. A finding is proven only when bugloop's own run of the test fails and the
//! model, shown the output as quoted data, confirms that it fails for the reason the finding
//! states. A test that passes does not reproduce the finding; one that changes the code under
//! test, does not finish or fails for another reason proves nothing. Nothing the test prints is
//! trusted, and its command comes from trusted configuration only.

use std::time::Duration;

use bugloop_config::Unreproduced;
use bugloop_domain::Score;
use bugloop_domain::finding::{Category, Finding};
use bugloop_domain::safety::{CommandEntry, VerifyCommand, parse_verify_commands};
use bugloop_report::review::{FindingProof, ProofStatus};
use bugloop_sandbox::ChangeKind;

use super::ReviewRequest;
use crate::build::{Workbench, run_commands};
use crate::env::LoopEnv;
use crate::prompt::fill;
use crate::{Question, structured_answer};

const PROVE_PROMPT: &str = include_str!("../../prompts/prove-finding.md");
const CONFIRM_SYSTEM: &str = include_str!("../../prompts/prove-confirm.md");
/// The most of a test's source a report and a comment carry.
const MAX_TEST_CHARS: usize = 8_000;

/// Tries to prove the findings about to be published that score at least
/// `review.prove.min_score`, most severe first, up to `review.prove.max_findings`; applies
/// `review.prove.unreproduced` to those whose test passes. Returns what came of each.
pub(super) async fn prove(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    findings: &mut Vec<Finding>,
) -> Vec<FindingProof> {
    let settings = &env.config().review.prove;
    // Without a command that runs one test nothing can be proven, and saying so on every review
    // of every repository that did not ask for proofs would be noise: proving is off.
    if settings.min_score == 0 || request.clean_room || settings.test_command.is_none() {
        return Vec::new();
    }
    let mut candidates: Vec<usize> = (0..findings.len())
        .filter(|&i| findings[i].score.get() >= settings.min_score)
        .collect();
    candidates.sort_by_key(|&i| std::cmp::Reverse(findings[i].score.get()));
    let mut proofs = Vec::new();
    let cannot = cannot_prove(env, request);
    for (rank, &index) in candidates.iter().enumerate() {
        let finding = &findings[index];
        let proof = if let Some(reason) = &cannot {
            not_tried(finding, reason.clone())
        } else if rank >= settings.max_findings {
            not_tried(
                finding,
                format!(
                    "over review.prove.max_findings ({}): the most severe were proven first",
                    settings.max_findings
                ),
            )
        } else {
            let limit = Duration::from_secs(settings.timeout_seconds.max(1));
            match tokio::time::timeout(limit, prove_one(env, request, finding)).await {
                Ok(proof) => proof,
                Err(_) => proof(
                    finding,
                    ProofStatus::NotProven,
                    format!(
                        "the proof did not finish within review.prove.timeout_seconds ({}s)",
                        limit.as_secs()
                    ),
                ),
            }
        };
        proofs.push((index, proof));
    }
    let mut dropped = Vec::new();
    for (index, proof) in &mut proofs {
        if proof.status != ProofStatus::NotReproduced {
            continue;
        }
        // A passing test is weak evidence against a hostile change (its code controls how its
        // tests run): a security or critical finding is never lowered or dropped for one.
        let finding = &findings[*index];
        if settings.unreproduced != Unreproduced::Keep
            && (finding.category == Category::Security || finding.score.get() >= 9)
        {
            proof.outcome = "kept: a security or critical finding is never lowered or dropped \
                             for a passing test"
                .to_owned();
            continue;
        }
        match settings.unreproduced {
            Unreproduced::Keep => {}
            Unreproduced::Lower => {
                let finding = &mut findings[*index];
                let lowered = Score::saturating(i64::from(finding.score.get()) - 2);
                proof.outcome = format!("lowered from {} to {lowered}", finding.score);
                finding.score = lowered;
            }
            Unreproduced::Drop => {
                proof.outcome = "dropped".to_owned();
                dropped.push(*index);
            }
        }
    }
    dropped.sort_unstable();
    for index in dropped.into_iter().rev() {
        findings.remove(index);
    }
    proofs.into_iter().map(|(_, proof)| proof).collect()
}

/// Why nothing can be proven in this review, when nothing can.
fn cannot_prove(env: &LoopEnv<'_>, request: &ReviewRequest) -> Option<String> {
    if env
        .git
        .resolve(&format!("{}^{{commit}}", request.head))
        .is_none()
    {
        return Some(format!(
            "the change's head ({}) is not a commit: proofs run on a commit's files",
            request.head
        ));
    }
    if !env.provider.capabilities().tools {
        return Some(format!(
            "{} cannot call tools, and writing a test needs a model that can",
            env.provider.name()
        ));
    }
    let sandbox = bugloop_sandbox::probe();
    if !sandbox.can_confine() {
        return Some(format!(
            "the sandbox cannot confine commands here ({}); a proof's test runs only confined",
            sandbox.problem.as_deref().unwrap_or("unknown")
        ));
    }
    None
}

fn proof(finding: &Finding, status: ProofStatus, reason: String) -> FindingProof {
    FindingProof {
        id: finding.id.as_str().to_owned(),
        title: finding.title.clone(),
        status,
        reason,
        test_path: None,
        test: None,
        command: None,
        output: None,
        outcome: "published".to_owned(),
    }
}

fn not_tried(finding: &Finding, reason: String) -> FindingProof {
    proof(finding, ProofStatus::NotTried, reason)
}

async fn prove_one(env: &LoopEnv<'_>, request: &ReviewRequest, finding: &Finding) -> FindingProof {
    let bench = match Workbench::at(env.git, &request.head, "prove") {
        Ok(bench) => bench,
        Err(error) => return not_tried(finding, format!("no task tree of the head: {error}")),
    };
    let answer = match write_test(env, &bench, finding).await {
        Ok(answer) => answer,
        Err(error) => {
            return proof(
                finding,
                ProofStatus::NotProven,
                format!("the agent did not finish: {error}"),
            );
        }
    };
    let test_path = match chosen_test(&bench, &answer) {
        Ok(path) => path,
        Err(reason) => return proof(finding, ProofStatus::NotProven, reason),
    };
    let mut result = proof(finding, ProofStatus::NotProven, String::new());
    // Read as data: never through a symlink, never a FIFO or a device, never large.
    let source = match bench.read_regular_file(&test_path, (MAX_TEST_CHARS * 4) as u64) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(reason) => {
            result.reason = format!("the test cannot be read as a file of the tree: {reason}");
            return result;
        }
    };
    result.test = Some(crate::context::cut(&source, MAX_TEST_CHARS).0);
    result.test_path = Some(test_path.clone());
    let commands = match test_commands(env, &test_path) {
        Ok(commands) => commands,
        Err(reason) => {
            result.reason = reason;
            return result;
        }
    };
    result.command = Some(
        commands
            .iter()
            .map(|c| c.raw.clone())
            .collect::<Vec<_>>()
            .join(" && "),
    );
    let runs = match run_commands(
        env.config(),
        bench.path(),
        Some(bench.git_mount()),
        &commands,
    )
    .await
    {
        Ok(runs) => runs,
        Err(error) => {
            result.status = ProofStatus::NotTried;
            result.reason = format!("the test could not run: {error}");
            return result;
        }
    };
    let Some(failing) = runs.iter().find(|r| !r.passed) else {
        result.status = ProofStatus::NotReproduced;
        result.reason = format!(
            "a test written for it passed at head (`{}`); the code under review controls how \
             its tests run, so this is no evidence that it is right",
            result.command.as_deref().unwrap_or_default()
        );
        return result;
    };
    let output = crate::context::last_lines(&bench.relative(&failing.output), 30);
    result.output = Some(output.clone());
    match confirm(env, &bench, finding, &source, &output).await {
        Ok(Confirmation {
            shows_the_problem: true,
            why,
        }) => {
            result.status = ProofStatus::Proven;
            result.reason = why;
        }
        Ok(Confirmation { why, .. }) => {
            result.reason = format!("the test fails, but not because of this problem: {why}");
        }
        Err(error) => {
            result.reason =
                format!("whether the failure shows the problem could not be asked: {error}");
        }
    }
    result
}

/// The test the agent wrote: an added regular file, the one its answer names (or the only one
/// it added). Nothing that is not plainly a new file of the tree is ever run or read.
fn chosen_test(bench: &Workbench, answer: &str) -> Result<String, String> {
    let edits = bench.edits().map_err(|e| e.to_string())?;
    if let Some(refused) = edits.refused.first() {
        return Err(format!("the tree holds what a proof may not: {refused}"));
    }
    let changed: Vec<String> = edits
        .changes
        .iter()
        .filter(|c| c.kind != ChangeKind::Added)
        .map(|c| c.path.clone())
        .collect();
    if !changed.is_empty() {
        return Err(format!(
            "the test changed existing files ({}): a proof only adds a test",
            changed.join(", ")
        ));
    }
    let added: Vec<&str> = edits
        .changes
        .iter()
        .filter(|c| c.is_regular_file())
        .map(|c| c.path.as_str())
        .collect();
    let named = added
        .iter()
        .filter(|path| answer.contains(**path))
        .max_by_key(|path| path.len());
    let path = match (named, added.as_slice()) {
        (Some(path), _) => (*path).to_owned(),
        (None, [only]) => (*only).to_owned(),
        (None, []) => {
            let said = answer.lines().next().unwrap_or_default().trim();
            return Err(format!(
                "no test was written: {}",
                crate::context::cut(said, 300).0
            ));
        }
        (None, _) => {
            return Err(format!(
                "the agent added {} files and named none of them as its test",
                added.len()
            ));
        }
    };
    let name = std::path::Path::new(&path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name.starts_with('-') {
        return Err(format!(
            "the test's name {name:?} starts with `-`, as an option would"
        ));
    }
    Ok(path)
}

/// The Build agent writes the test in the task tree; its final answer.
async fn write_test(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finding: &Finding,
) -> Result<String, String> {
    let how = format!(
        "The test is run with `{}`, where `{{test}}` is your test file's path.",
        env.config()
            .review
            .prove
            .test_command
            .as_deref()
            .unwrap_or_default()
    );
    let text = format!(
        "{}\n\n{}{}\n\n{}",
        finding.title,
        finding.location(),
        finding
            .evidence
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default(),
        finding.description
    );
    let prompt = fill(
        PROVE_PROMPT,
        &[
            ("how", &how),
            ("finding", &crate::prompt::quoted(&text, 6_000)),
        ],
    );
    crate::build::run_agent(
        env,
        bench,
        &format!("prove-{}", finding.id.as_str()),
        prompt,
    )
    .await
}

/// The command that runs the test: `review.prove.test_command` with `{test}` put in each
/// argument it appears in (the path is one argument whatever it holds).
fn test_commands(env: &LoopEnv<'_>, test_path: &str) -> Result<Vec<VerifyCommand>, String> {
    let Some(template) = &env.config().review.prove.test_command else {
        return Err("review.prove.test_command is not set".to_owned());
    };
    let mut parsed = parse_verify_commands(&[CommandEntry::Plain(template.clone())])
        .map_err(|e| format!("review.prove.test_command: {e}"))?;
    let Some(mut command) = parsed.pop() else {
        return Err("review.prove.test_command is empty".to_owned());
    };
    let name = std::path::Path::new(test_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fill_in = |arg: &str| placeholders(arg, test_path, &name);
    command.args = command.args.iter().map(|a| fill_in(a)).collect();
    command.raw = placeholders(&command.raw, &shown(test_path), &shown(&name));
    Ok(vec![command])
}

/// A word as a shell would need it to mean one argument: what the command line shows is what
/// ran.
fn shown(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-+=:,".contains(c))
    {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `text` with `{test}` and `{test_name}` replaced in one pass: a path holding a placeholder is
/// never expanded again.
fn placeholders(text: &str, test: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len() + test.len());
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        if let Some(tail) = after.strip_prefix("{test}") {
            out.push_str(test);
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("{test_name}") {
            out.push_str(name);
            rest = tail;
        } else {
            out.push('{');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    out
}

#[derive(Debug, serde::Deserialize)]
struct Confirmation {
    shows_the_problem: bool,
    why: String,
}

async fn confirm(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    finding: &Finding,
    test: &str,
    output: &str,
) -> Result<Confirmation, bugloop_agent::AgentError> {
    use crate::prompt::quoted;
    let prompt = format!(
        "## The reported problem\n\n\"\"\"\n{}\n\n{}\n\"\"\"\n\n## The test\n\n\"\"\"\n{}\n\"\"\"\n\n## The end of what it printed when bugloop ran it (it failed)\n\n\"\"\"\n{}\n\"\"\"\n",
        quoted(&finding.title, 300),
        quoted(&finding.description, 3_000),
        quoted(test, 6_000),
        quoted(output, 4_000),
    );
    structured_answer(
        env,
        bench.path(),
        Question {
            name: "prove-confirm",
            system: CONFIRM_SYSTEM,
            prompt,
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "shows_the_problem": {"type": "boolean"},
                    "why": {"type": "string"}
                },
                "required": ["shows_the_problem", "why"],
                "additionalProperties": false
            }),
            max_tokens: 400,
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_once() {
        assert_eq!(
            placeholders("pytest -q {test} -k {test_name}", "t/test_a.py", "test_a"),
            "pytest -q t/test_a.py -k test_a"
        );
        // A path holding a placeholder is not expanded again; other braces stay.
        assert_eq!(
            placeholders("{test} {x}", "{test_name}.py", "n"),
            "{test_name}.py {x}"
        );
    }

    #[test]
    fn a_shown_path_is_one_word() {
        assert_eq!(shown("tests/test_a.py"), "tests/test_a.py");
        assert_eq!(shown("a b.py"), "'a b.py'");
        assert_eq!(shown("it's.py"), "'it'\\''s.py'");
    }
}
