//! What kind of job an event asks for: the one list of job kinds and their names, which the
//! webhook triggers, the server's queue, its status page and metrics, and the Action's summary
//! all use.

use serde::{Deserialize, Serialize};

/// A job bugloop runs for an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A review of a pull request's push.
    Review,
    /// An answer to a developer's comment (fix, do, think, or a reply in a finding's thread).
    Comment,
    /// An audit and fix of a pull request until an audit is clean.
    Converge,
    /// An issue moved through the solve pipeline.
    Solve,
    /// An error report filed as an issue (or counted on its fingerprint's).
    ErrorReport,
}

impl JobKind {
    /// Every kind, in the order the status page lists them.
    pub const ALL: [JobKind; 5] = [
        JobKind::Review,
        JobKind::Comment,
        JobKind::Converge,
        JobKind::Solve,
        JobKind::ErrorReport,
    ];

    /// The kind's name as people read it (the status page, metrics' `kind` label, the Action's
    /// summary): `review`, `comment`, `converge`, `solve`, `error_report`.
    pub fn name(self) -> &'static str {
        match self {
            JobKind::Review => "review",
            JobKind::Comment => "comment",
            JobKind::Converge => "converge",
            JobKind::Solve => "solve",
            JobKind::ErrorReport => "error_report",
        }
    }
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_serde_says_them() {
        let names: std::collections::BTreeSet<_> = JobKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), JobKind::ALL.len());
        for kind in JobKind::ALL {
            assert_eq!(
                serde_json::to_string(&kind).unwrap(),
                format!("\"{}\"", kind.name())
            );
        }
    }
}
