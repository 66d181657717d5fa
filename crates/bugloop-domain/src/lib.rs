//! bugloop's core data rules, with no IO: findings and their 1-10 scores, hidden markers and
//! `rmcoc` blocks, review state reconstructed from a conversation, the filter pipeline, and the
//! helpers that keep untrusted text out of places it must not reach.
//!
//! **Invariants:** no IO, no trait objects in its API, plain data with serde derives (the agent,
//! loops and forges convert their wire types at their edges); only comments bugloop wrote create
//! findings or change status; a sanitized id can never end a comment; every filter stage says what
//! it dropped or changed. **Start reading:** `thread.rs`, then `filter.rs`.

pub mod coverage;
pub mod dedup;
pub mod filter;
pub mod finding;
pub mod grounding;
pub mod job;
pub mod learning;
pub mod markdown;
pub mod marker;
pub mod mention;
pub mod paths;
pub mod proof;
pub mod rmcoc;
pub mod safety;
pub mod score;
pub mod solve;
pub mod status;
pub mod test_counts;
pub mod test_files;
pub mod thread;
pub mod urgency;

pub use finding::{Category, Finding, FindingId};
pub use marker::{Marker, MarkerSyntax, ReplyKind};
pub use rmcoc::RmcocBlock;
pub use score::{Priority, Score, Severity};
pub use thread::{BotIdentity, Comment, ReviewState, ThreadState, ThreadStatus};
