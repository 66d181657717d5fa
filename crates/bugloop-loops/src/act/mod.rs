//! Acting on findings and comments (bugbot's fix/do/think): `fix` (Build agent on the findings,
//! verified, committed, landed, findings resolved), `do_request` (the same for a general
//! request), `ask` (the Plan agent answers) and `on_comment` (intent, permission, then one of
//! those, or a dispute for [`crate::disputes`]). One file per job; what they share is here.

mod addressed;
mod ask;
mod comment;
mod fix;
mod landed;
mod request;

use bugloop_domain::paths::prompt_path;
use bugloop_domain::safety::{MAX_FINDING_BODY_CHARS, truncate_finding_body};
use bugloop_domain::thread::{ReviewState, ThreadState, ThreadStatus};

pub use self::addressed::FixCommit;
pub use self::ask::ask;
pub use self::comment::on_comment;
pub use self::fix::{answered_without_fixing, fix};
pub use self::request::do_request;
pub use crate::error::ActError;

pub(crate) const FIX_PROMPT: &str = include_str!("../../prompts/fix.md");
pub(crate) const DO_PROMPT: &str = include_str!("../../prompts/do.md");
pub(crate) const ASK_PROMPT: &str = include_str!("../../prompts/ask.md");
pub(crate) const ASK_WITHOUT_TOOLS_PROMPT: &str =
    include_str!("../../prompts/ask-without-tools.md");

/// Which findings to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    All,
    Ids(Vec<String>),
    /// Findings that were open when a developer's request was read: one resolved since (a fix
    /// that landed meanwhile, a review that saw it gone) is left out, and with none left the
    /// request is answered, not failed.
    StillOpen(Vec<String>),
}

pub fn open_threads(state: &ReviewState) -> Vec<&ThreadState> {
    state
        .threads
        .iter()
        .filter(|t| t.finding_id.is_some() && t.status != ThreadStatus::Resolved)
        .collect()
}

pub(crate) fn findings_block(threads: &[&ThreadState]) -> String {
    threads
        .iter()
        .map(|t| {
            let id = t.finding_id.as_ref().map_or("", |f| f.as_str());
            let place = match (&t.file, t.line) {
                (Some(f), Some(l)) => format!("{}:{l}", prompt_path(f)),
                (Some(f), None) => prompt_path(f).into_owned(),
                _ => "(no file)".to_owned(),
            };
            format!(
                "## Finding `{id}` at {place}\n\n{}\n",
                truncate_finding_body(t.body.trim(), MAX_FINDING_BODY_CHARS)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
