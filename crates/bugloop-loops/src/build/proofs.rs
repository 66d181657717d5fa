//! A proven finding's test in a fix (`review.prove`): bugloop places it in the tree before the
//! agent works, puts it back as it was when the agent is done (the agent cannot weaken it), and
//! runs it in the sandbox with the trusted `review.prove.test_command`: the fix is committed only
//! when every such test passes. With `review.prove.commit_tests` the tests are committed with the
//! fix as regression tests; otherwise they are taken out before the verify commands run.

use std::path::Path;

use bugloop_config::Config;
use bugloop_domain::proof::ProofTest;
use bugloop_domain::safety::{CommandEntry, VerifyCommand, parse_verify_commands};
use bugloop_report::build::BuildStatus;
use bugloop_sandbox::{Change, Changes};

use super::{BuildError, BuildResult, Workbench, run_commands};
use crate::env::LoopEnv;
use crate::prompt::fill;

const PROMPT: &str = include_str!("../../prompts/fix-proofs.md");

/// A proven finding's test a fix must make pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenTest {
    /// The finding's id.
    pub finding: String,
    pub test: ProofTest,
}

/// A test placed in the tree, with the command that runs it.
#[derive(Debug, Clone)]
pub(super) struct Placed {
    proven: ProvenTest,
    command: VerifyCommand,
}

/// Places the tests in the tree and returns those placed. None when proving is off (no trusted
/// test command: nothing could run them); a test whose path the tree already holds, or that
/// cannot be written, is left out and said so as progress (the fix is still verified).
pub(super) fn place(env: &LoopEnv<'_>, bench: &Workbench, proofs: &[ProvenTest]) -> Vec<Placed> {
    let mut placed = Vec::new();
    for proven in proofs {
        let skip = |why: String| {
            env.progress.event(crate::ProgressEvent::Step(format!(
                "the test proving {} is not used: {why}",
                proven.finding
            )));
        };
        let command = match proof_command(env.config(), &proven.test.path) {
            Ok(command) => command,
            Err(why) => {
                skip(why);
                continue;
            }
        };
        if placed
            .iter()
            .any(|p: &Placed| p.proven.test.path == proven.test.path)
        {
            continue;
        }
        if std::fs::symlink_metadata(bench.path().join(&proven.test.path)).is_ok() {
            skip(format!("the tree already holds {}", proven.test.path));
            continue;
        }
        if let Err(why) = bench.write_regular_file(&proven.test.path, &proven.test.source) {
            skip(why);
            continue;
        }
        placed.push(Placed {
            proven: proven.clone(),
            command,
        });
    }
    placed
}

/// What the agent is told about the placed tests (nothing when none were placed).
pub(super) fn prompt(placed: &[Placed]) -> String {
    if placed.is_empty() {
        return String::new();
    }
    let tests = placed
        .iter()
        .map(|p| {
            format!(
                "- `{}` proves finding `{}`; bugloop runs it with `{}`.",
                p.proven.test.path, p.proven.finding, p.command.raw
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    format!("\n\n{}", fill(PROMPT, &[("tests", &tests)]))
}

/// Puts each test back exactly as it was placed, whatever the agent did to it.
pub(super) fn put_back(bench: &Workbench, placed: &[Placed]) -> Result<(), String> {
    for p in placed {
        bench
            .write_regular_file(&p.proven.test.path, &p.proven.test.source)
            .map_err(|why| {
                format!(
                    "the test proving {} cannot be put back: {why}",
                    p.proven.finding
                )
            })?;
    }
    Ok(())
}

/// `changes` without the placed tests: what the agent changed itself.
pub(super) fn without_tests(changes: &Changes, placed: &[Placed]) -> Changes {
    let tests: Vec<Change> = changes
        .changes
        .iter()
        .filter(|c| placed.iter().any(|p| p.proven.test.path == c.path))
        .cloned()
        .collect();
    changes.without(&tests)
}

/// Runs each placed test (what it leaves in the tree is a byproduct, never committed); the
/// status that refuses the fix when one fails.
pub(super) async fn run(
    env: &LoopEnv<'_>,
    bench: &Workbench,
    placed: &[Placed],
    agent: &Changes,
    result: &mut BuildResult,
) -> Result<Option<BuildStatus>, BuildError> {
    for p in placed {
        let before = bench.changes()?;
        let mut runs = run_commands(
            env.config(),
            bench.path(),
            Some(bench.git_mount()),
            std::slice::from_ref(&p.command),
        )
        .await?;
        let after = bench.changes()?;
        bench.record_byproducts(&before, &after, agent, &p.command.raw);
        for run in &mut runs {
            run.command = format!("{} (the test proving {})", run.command, p.proven.finding);
            run.output = bench.relative(&run.output);
        }
        let failed = runs
            .iter()
            .find(|r| !r.passed)
            .map(|r| BuildStatus::VerifyFailed {
                command: r.command.clone(),
                output: r.output.clone(),
            });
        result.verify.append(&mut runs);
        if failed.is_some() {
            return Ok(failed);
        }
    }
    Ok(None)
}

/// Takes the tests out of the tree (they are not committed).
pub(super) fn take_out(bench: &Workbench, placed: &[Placed]) -> Result<(), String> {
    for p in placed {
        bench.remove_file(&p.proven.test.path)?;
    }
    Ok(())
}

/// The command that runs one test: `review.prove.test_command` with `{test}` put in each
/// argument it appears in (the path is one argument whatever it holds) and `{test_name}` the
/// file's name without extension.
pub(crate) fn proof_command(config: &Config, test_path: &str) -> Result<VerifyCommand, String> {
    let Some(template) = &config.review.prove.test_command else {
        return Err("review.prove.test_command is not set".to_owned());
    };
    let mut parsed = parse_verify_commands(&[CommandEntry::Plain(template.clone())])
        .map_err(|e| format!("review.prove.test_command: {e}"))?;
    let Some(mut command) = parsed.pop() else {
        return Err("review.prove.test_command is empty".to_owned());
    };
    let name = Path::new(test_path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fill_in = |arg: &str| placeholders(arg, test_path, &name);
    command.args = command.args.iter().map(|a| fill_in(a)).collect();
    command.raw = placeholders(&command.raw, &shown(test_path), &shown(&name));
    Ok(command)
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
