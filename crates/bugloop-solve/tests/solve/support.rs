//! What the solve pipeline's tests share: the scripted model's usage and its review sessions
//! (from `bugloop_testkit::model`), the tests' git, and the local forge as bugloop opens it.

use bugloop_llm::Usage;
use bugloop_llm::scripted::{ScriptedProvider, tool_reply};
use serde_json::Value;

pub use bugloop_testkit::git;
pub use bugloop_testkit::model::finding;

pub fn usage() -> Usage {
    Usage {
        input_tokens: 1_000,
        output_tokens: 100,
        cached_input_tokens: 0,
    }
}

/// A review's four passes with tools (the findings in pass 1, the resolutions in pass 2), after
/// the answers `provider` has.
pub fn push_session(
    provider: &ScriptedProvider,
    findings: Vec<Value>,
    resolved: Vec<(String, String)>,
) {
    for turn in bugloop_testkit::model::review_turns(findings, resolved) {
        provider.push(tool_reply(&turn, usage()));
    }
}

/// The local forge of the repository at `dir`, as bugloop's own runs open it.
pub async fn local_forge(dir: &std::path::Path) -> bugloop_forge::local::LocalForge {
    let git = bugloop_git::Git::open(dir).unwrap();
    bugloop_forge::local::LocalForge::open(git, "bugloop")
        .await
        .unwrap()
}
