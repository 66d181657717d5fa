//! Fixing with the tool first: a finding that stands on an analyzer's hit is fixed by the tool's
//! own fix where it has one (`ruff check --fix --select RULE`, biome's safe fixes, `cargo clippy
//! --fix`), in the sandbox on the task tree, before any model writes code. What the tools change
//! is then verified and committed like an agent's change (the verify commands and proof tests
//! decide); the model is asked only for the findings no tool fixed.

use std::time::Duration;

use bugloop_analyzers::{FixRequest, Toolbox, apply_fix, has_fix};
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
}

impl ToolFix {
    /// The fix for a finding that stands on `source`'s hit in `file`, when its tool fixes.
    pub fn of(
        finding: &str,
        source: &bugloop_domain::finding::FindingSource,
        file: Option<&str>,
    ) -> Option<ToolFix> {
        let file = file?;
        has_fix(&source.tool).then(|| ToolFix {
            finding: finding.to_owned(),
            tool: source.tool.clone(),
            rule: source.rule.clone(),
            file: file.to_owned(),
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

/// Applies each tool fix in the bench; a fix that cannot run, or changes nothing, is noted and
/// left to the model.
pub(super) async fn apply(env: &LoopEnv<'_>, bench: &Workbench, fixes: &[ToolFix]) -> ToolFixed {
    let mut done = ToolFixed::default();
    for fix in fixes {
        let before = bench.edits().ok().map(|c| c.changes);
        let mut sandbox = sandbox_settings(env.config(), bench.path(), Policy::WorkspaceWrite);
        sandbox.git = Some(bench.git_mount());
        sandbox.timeout = Duration::from_secs(env.config().review.analyzer_timeout_seconds);
        let outcome = apply_fix(FixRequest {
            workspace: bench.path(),
            tool: &fix.tool,
            rule: &fix.rule,
            files: vec![fix.file.clone()],
            sandbox,
            toolbox: Toolbox::from_env(),
        })
        .await;
        let after = bench.edits().ok().map(|c| c.changes);
        match outcome {
            Ok(()) if after.is_some() && after != before => {
                done.notes.push(format!(
                    "{} fixed {} in {} with its own fix",
                    fix.tool, fix.rule, fix.file
                ));
                done.fixed.push(fix.finding.clone());
            }
            Ok(()) => done.notes.push(format!(
                "{} has no fix for {} in {}",
                fix.tool, fix.rule, fix.file
            )),
            Err(reason) => done.notes.push(reason),
        }
    }
    done
}
