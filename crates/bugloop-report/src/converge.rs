//! What the audit-fix loop (`converge`) did: why it stopped, the loop log, the net change, where
//! the commits landed, and what the auditors reported that was quarantined.

use serde::{Deserialize, Serialize};

use crate::build::Landing;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Exit {
    Converged,
    #[strum(serialize = "cap reached")]
    CapReached,
    Stuck,
    Error,
}

impl Exit {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// What a loop step was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum LoopKind {
    Audit,
    Fix,
    Gate,
}

impl LoopKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopLine {
    pub number: u32,
    pub kind: LoopKind,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConvergeReport {
    pub exit: Exit,
    /// Why it stopped (stuck: which findings; error: what failed in which loop; cap reached: what
    /// is left).
    pub detail: String,
    pub loops: u32,
    pub start_commit: String,
    pub final_commit: String,
    pub files_changed: usize,
    pub additions: usize,
    pub deletions: usize,
    pub log: Vec<LoopLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub landing: Option<Landing>,
    /// Loop reviews of earlier runs that were not clean.
    pub earlier_dirty_loops: usize,
    /// Findings the auditors' code checks or the validator rejected, with the reason.
    pub quarantined: Vec<Quarantined>,
    /// The section written into the change's description (what the loops did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why the description could not be written, when it could not (the run's work stands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description_error: Option<String>,
}

/// A finding an audit reported that was not counted, and why: kept for the record rather than
/// discarded, so a wrong rejection can be seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantined {
    #[serde(rename = "loop")]
    pub loop_number: u32,
    /// Who reported it: `auditor` alone, or `auditor 2 (security)` among parallel ones.
    pub auditor: String,
    pub title: String,
    pub location: String,
    /// The check that rejected it (`grounding`, `validation`, `path_safety`, `validator`,
    /// `validator model`) and why.
    pub reason: String,
}
