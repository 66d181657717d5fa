//! The solve pipeline's per-issue state machine (bugloop-architecture.md):
//! OPEN -> ASSIGNED -> SOLVING -> PR_DRAFT -> REVIEWING -> READY -> MERGED, with ESCALATED from
//! SOLVING and REVIEWING, and MERGED -> REGRESSED -> OPEN (or ESCALATED) when the error is
//! reported again after its solution merged (guardrail 6). A transition is recorded with its reason; the record of an issue is
//! the list of its transitions, and its state the last one's target.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum SolveState {
    /// Filed, nobody working on it.
    Open,
    /// Taken by bugloop.
    Assigned,
    /// The build/test/evaluate loop runs.
    Solving,
    /// A verified solution is on its branch, with a draft change request.
    PrDraft,
    /// The draft's review is being answered.
    Reviewing,
    /// The gate passed; the change request is ready for a human.
    Ready,
    /// Merged (by a human).
    Merged,
    /// Given to a human, with what was tried.
    Escalated,
    /// Reported again after its solution merged: the solution is reverted (or not, as
    /// configured) and the issue reopened.
    Regressed,
}

impl SolveState {
    pub const ALL: [SolveState; 9] = [
        SolveState::Open,
        SolveState::Assigned,
        SolveState::Solving,
        SolveState::PrDraft,
        SolveState::Reviewing,
        SolveState::Ready,
        SolveState::Merged,
        SolveState::Escalated,
        SolveState::Regressed,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }

    pub fn parse(text: &str) -> Option<SolveState> {
        SolveState::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether `self -> to` is a step of the machine. A state may also go to itself: a step
    /// within it (an attempt, a review round) is recorded that way.
    pub fn can_go_to(self, to: SolveState) -> bool {
        use SolveState::{
            Assigned, Escalated, Merged, Open, PrDraft, Ready, Regressed, Reviewing, Solving,
        };
        if self == to {
            return matches!(self, Solving | Reviewing);
        }
        matches!(
            (self, to),
            (Open, Assigned)
                | (Assigned, Solving)
                | (Solving, PrDraft | Escalated)
                | (PrDraft, Reviewing)
                | (Reviewing, Ready | Escalated)
                | (Ready, Merged)
                // A human sends an escalated issue back to bugloop, or new review comments on a
                // ready change request reopen its review.
                | (Escalated, Assigned)
                | (Ready, Reviewing)
                // The error came back after the merge: reopened, or handed to a person when
                // the merged solution cannot be reverted.
                | (Merged, Regressed)
                | (Regressed, Open | Escalated)
                // A pattern the learning record gave up on goes to a person untried.
                | (Open, Escalated)
        )
    }

    /// Whether nothing more happens without a human.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            SolveState::Ready | SolveState::Merged | SolveState::Escalated
        )
    }
}

/// What an issue's state puts on it as labels: `in_progress` while bugloop works on it,
/// `needs_human` once escalated.
pub fn labels_of(state: SolveState) -> (bool, bool) {
    let working = matches!(
        state,
        SolveState::Assigned | SolveState::Solving | SolveState::PrDraft | SolveState::Reviewing
    );
    (working, state == SolveState::Escalated)
}

/// Whether an issue in `state` is assigned to the solver's account (`agents.bugsolver.assignee`):
/// from the moment it is taken until its solution merged; unassigned when it is escalated to a
/// person or reopened by a regression.
pub fn assigned_in(state: SolveState) -> bool {
    matches!(
        state,
        SolveState::Assigned
            | SolveState::Solving
            | SolveState::PrDraft
            | SolveState::Reviewing
            | SolveState::Ready
            | SolveState::Merged
    )
}

/// What a person approved when they asked for an issue to be solved: a digest of its title and
/// body then. An issue edited after it was approved is not solved from text nobody approved.
pub fn approval_digest(title: &str, body: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(title.as_bytes());
    hasher.update([0]);
    hasher.update(body.as_bytes());
    hex::encode(hasher.finalize())
}

/// A slug for a branch name: lowercase ASCII words joined by `-`, at most `max` characters,
/// never empty.
pub fn slug(title: &str, max: usize) -> String {
    let mut slug = String::new();
    for word in title
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let word = word.to_ascii_lowercase();
        let extra = usize::from(!slug.is_empty()) + word.len();
        if slug.len() + extra > max {
            if slug.is_empty() {
                slug.push_str(&word[..max.min(word.len())]);
            }
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word);
    }
    if slug.is_empty() {
        "issue".to_owned()
    } else {
        slug
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_machine_allows_the_spec_steps_only() {
        use SolveState::*;
        let path = [Open, Assigned, Solving, PrDraft, Reviewing, Ready, Merged];
        for pair in path.windows(2) {
            assert!(pair[0].can_go_to(pair[1]), "{} -> {}", pair[0], pair[1]);
        }
        assert!(Solving.can_go_to(Escalated));
        assert!(Reviewing.can_go_to(Escalated));
        assert!(!Open.can_go_to(Solving));
        assert!(!PrDraft.can_go_to(Escalated));
        assert!(Open.can_go_to(Escalated));
        assert!(!Merged.can_go_to(Open));
        assert!(!Escalated.can_go_to(Solving));
        assert!(Solving.can_go_to(Solving));
        assert!(!Ready.can_go_to(Ready));
        // A regression: only after a merge, and only back to open or to a person.
        assert!(Merged.can_go_to(Regressed));
        assert!(Regressed.can_go_to(Open));
        assert!(Regressed.can_go_to(Escalated));
        assert!(!Ready.can_go_to(Regressed));
        assert!(!Regressed.can_go_to(Solving));
        assert!(!Regressed.is_final());
        for state in SolveState::ALL {
            assert_eq!(SolveState::parse(state.as_str()), Some(state));
        }
    }

    #[test]
    fn slugs_are_short_and_safe() {
        assert_eq!(
            slug("IndexError: list index out of range in app/models.py", 30),
            "indexerror-list-index-out-of"
        );
        assert_eq!(slug("../../etc/passwd; rm -rf /", 40), "etc-passwd-rm-rf");
        assert_eq!(slug("ÄÖÜ", 10), "issue");
        assert_eq!(slug("averyveryverylongword", 5), "avery");
    }
}
