//! What an interrupted run leaves on disk (task trees, stages, cgroups): at Ctrl-C a front end
//! hands what the run holds to a process of its own, which removes it once the run has stopped,
//! rather than leaving it all to the next run (a task tree is a copy of the repository's files).

use std::time::Duration;

pub use bugloop_sandbox::owner::Held;

/// How long the remover waits for the stopped run to let go of what it held.
const WAIT: Duration = Duration::from_secs(30);

/// This run, as its directories name it, and what it holds now.
pub fn held() -> (&'static str, Vec<Held>) {
    (
        bugloop_sandbox::owner::token(),
        bugloop_sandbox::owner::held(),
    )
}

/// Removes what this process still holds, at its end (what it kept for its whole life: the
/// sandbox's copy of `/etc`).
pub fn remove_own() {
    bugloop_sandbox::owner::remove_own();
}

/// Removes `entries`, which the run `owner` held, once it has let go of each (see
/// [`bugloop_sandbox::owner::remove_when_released`]).
pub fn remove_when_released(owner: &str, entries: &[Held]) {
    bugloop_sandbox::owner::remove_when_released(owner, entries, WAIT);
}
