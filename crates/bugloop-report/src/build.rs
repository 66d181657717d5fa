//! What a Build run (fix, do, a converge fix) produced: its status, verify runs and usage, and
//! where its commit landed. Pure data, filled in by the build loop and shown by the act and
//! converge reports.

use std::path::PathBuf;

use bugloop_llm::Usage;
use serde::{Deserialize, Serialize};

/// One verify command's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifyRun {
    pub command: String,
    pub passed: bool,
    /// The end of its output (standard output, then standard error).
    pub output: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum BuildStatus {
    /// Verified and committed in the worktree.
    Committed {
        commit: String,
        files: Vec<String>,
        /// No verify command is configured: committed without verification.
        unverified: bool,
    },
    /// The agent changed nothing.
    NoChanges { summary: String },
    /// A verify command failed: nothing was committed.
    VerifyFailed { command: String, output: String },
    /// The change cannot be committed as it is: nothing was committed. A guardrail (protected
    /// paths) is a decision for a person; any other refusal (a verify command that rewrote the
    /// agent's files, a symlink out of the tree) is the agent's to mend.
    Refused { reason: String, guardrail: bool },
    /// The agent did not finish (model error, budget, turn limit).
    AgentFailed { error: String },
}

#[derive(Debug, Clone, Serialize)]
pub struct BuildResult {
    pub status: BuildStatus,
    pub summary: String,
    pub verify: Vec<VerifyRun>,
    /// What the verify commands left in the tree that the agent did not write, never
    /// committed: "`__pycache__/a.pyc`: produced by `python3 -m unittest`".
    pub left_out: Vec<String>,
    /// The agent stopped because the run's budget (turns, tokens, money) ran out: not a failed
    /// attempt of its own, a run to resume with more budget.
    pub out_of_budget: bool,
    /// The agent stopped because the model could not be used (unreachable, failing, refusing
    /// the key) after its retries: no attempt of its own either, a run to resume.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub model_unavailable: bool,
    pub usage: Usage,
    pub transcript: PathBuf,
}

impl BuildResult {
    /// Committed without verification: no verify command is configured.
    pub fn unverified(&self) -> bool {
        matches!(
            self.status,
            BuildStatus::Committed {
                unverified: true,
                ..
            }
        )
    }
}

/// Where a finished change went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "landed")]
pub enum Landing {
    /// The user's branch was fast-forwarded to the commit.
    FastForwarded { branch: String, commit: String },
    /// The commit waits on a branch of its own.
    Branch {
        name: String,
        commit: String,
        reason: String,
    },
}

impl BuildStatus {
    pub fn is_committed(&self) -> bool {
        matches!(self, BuildStatus::Committed { .. })
    }
}
