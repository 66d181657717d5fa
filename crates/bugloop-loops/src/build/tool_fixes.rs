//! Fixing with the tool first: a finding that stands on an analyzer's hit is fixed by the tool's
//! own fix where it has one (`ruff check --fix --select RULE`, biome's safe fixes, `cargo clippy
//! --fix`), in the sandbox on the task tree, before any model writes code. What the tools change
//! is then verified and committed like an agent's change (the verify commands and proof tests
//! decide); the model is asked only for the findings no tool fixed.

use std::time::Duration;

use bugloop_analyzers::{FixRequest, Toolbox, apply_fix, has_fix, still_reports};
use bugloop_sandbox::Policy;

use super::Workbench;
use crate::env::LoopEnv;
use crate::sandbox_settings;

/// A finding a tool may fix: its id, the tool (a built-in analyzer), its rule and file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFix {
    pub finding: String,
    pub tool: String,
    pub rule: String,
    pub file: String,
    pub line: Option<u32>,
}

impl ToolFix {
    /// The fix for a finding that stands on `source`'s hit in `file`, when its tool fixes.
    pub fn of(
        finding: &str,
        source: &bugloop_domain::finding::FindingSource,
        (file, line): (Option<&str>, Option<u32>),
    ) -> Option<ToolFix> {
        let file = file?;
        has_fix(&source.tool).then(|| ToolFix {
            finding: finding.to_owned(),
            tool: source.tool.clone(),
            rule: source.rule.clone(),
            file: file.to_owned(),
            line,
        })
    }
}

/// What the tools did.
#[derive(Debug, Default)]
pub(super) struct ToolFixed {
    /// Findings whose tool changed the code.
    pub fixed: Vec<String>,
    /// One line per fix, for the build's summary.
    pub notes: Vec<String>,
}

/// Applies each tool fix in the bench; a fix that cannot run, changes nothing or leaves the hit
/// is noted and left to the model. A tool that changes any other file than the one it was given
/// is not trusted at all: everything the tools did is set aside.
pub(super) async fn apply(env: &LoopEnv<'_>, bench: &Workbench, fixes: &[ToolFix]) -> ToolFixed {
    let mut done = ToolFixed::default();
    for fix in fixes {
        let before = edited_paths(bench);
        let content_before = std::fs::read(bench.path().join(&fix.file)).ok();
        let request = || FixRequest {
            workspace: bench.path(),
            tool: &fix.tool,
            rule: &fix.rule,
            files: vec![fix.file.clone()],
            sandbox: sandbox(env, bench),
            toolbox: Toolbox::from_env(),
        };
        let outcome = apply_fix(request()).await;
        let after = edited_paths(bench);
        let (Some(before), Some(after)) = (before, after) else {
            done.notes.push(format!(
                "{}'s fix: the task tree could not be read",
                fix.tool
            ));
            continue;
        };
        let strays: Vec<&String> = after
            .iter()
            .filter(|p| !before.contains(p) && **p != fix.file)
            .collect();
        if !strays.is_empty() {
            let _ = bench.discard();
            return ToolFixed {
                fixed: Vec::new(),
                notes: vec![format!(
                    "{}'s fix changed other files than {} ({}): no tool fix was used",
                    fix.tool,
                    fix.file,
                    strays
                        .iter()
                        .map(|p| p.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )],
            };
        }
        let changed = std::fs::read(bench.path().join(&fix.file)).ok() != content_before;
        match outcome {
            Err(reason) => done.notes.push(reason),
            Ok(()) if !changed => done.notes.push(format!(
                "{} has no fix for {} in {}",
                fix.tool, fix.rule, fix.file
            )),
            Ok(()) => {
                let line = fix.line.unwrap_or(1);
                match still_reports(request(), line).await {
                    Ok(false) => {
                        done.notes.push(format!(
                            "{} fixed {} in {} with its own fix",
                            fix.tool, fix.rule, fix.file
                        ));
                        done.fixed.push(fix.finding.clone());
                    }
                    Ok(true) => done.notes.push(format!(
                        "{}'s fix left {} in {}",
                        fix.tool, fix.rule, fix.file
                    )),
                    Err(reason) => done
                        .notes
                        .push(format!("{}'s fix could not be checked: {reason}", fix.tool)),
                }
            }
        }
    }
    done
}

/// The paths the task tree holds changed, read as data.
fn edited_paths(bench: &Workbench) -> Option<Vec<String>> {
    let changes = bench.edits().ok()?;
    let mut paths: Vec<String> = changes.changes.iter().map(|c| c.path.clone()).collect();
    paths.sort();
    Some(paths)
}

fn sandbox(env: &LoopEnv<'_>, bench: &Workbench) -> bugloop_sandbox::SandboxSettings {
    let mut sandbox = sandbox_settings(env.config(), bench.path(), Policy::WorkspaceWrite);
    sandbox.git = Some(bench.git_mount());
    sandbox.timeout = Duration::from_secs(env.config().review.analyzer_timeout_seconds);
    sandbox
}
