//! Findings whose fix the branch no longer holds (reset away, or dropped while rebasing): raised
//! again in their thread before the review decides what to look at. A branch reset to the code
//! before the fix changes nothing a review would see since its last look, and the finding stood
//! resolved by a commit that is gone.

use bugloop_domain::thread::ThreadStatus;
use bugloop_forge::ForgeError;

use super::ReviewRequest;
use super::conversation::Conversation;
use crate::comment_bodies::reopened_reply;
use crate::env::LoopEnv;

/// Raises again each finding resolved by a fix that `request.head` does not hold; whether one
/// was (the conversation is then read again).
pub(super) async fn raise_again(
    env: &LoopEnv<'_>,
    request: &ReviewRequest,
    conversation: &Conversation,
) -> Result<bool, ForgeError> {
    let markers = &env.settings.markers;
    let mut raised = false;
    for thread in &conversation.state.threads {
        let (Some(commit), Some(id)) = (&thread.fixed_in, &thread.finding_id) else {
            continue;
        };
        // Only a commit this repository knows, and a head that is a commit, can tell.
        if thread.status != ThreadStatus::Resolved
            || env.git.holds_change(commit, &request.head) != Some(false)
        {
            continue;
        }
        let Some(root) = conversation.comments.iter().find(|c| c.id == thread.id) else {
            continue;
        };
        if let Some(body) = markers.replace(&root.body, id, false)
            && body != root.body
        {
            env.forge
                .update_comment(&request.change, root, &body)
                .await?;
        }
        let reason = format!(
            "The fix {commit} is no longer on this branch (reset or rebased away), so the code it \
             changed is back as it was."
        );
        env.forge
            .reply(&request.change, root, &reopened_reply(markers, &reason))
            .await?;
        if let Some(forge_thread) = &root.thread_id {
            // The forge's flag is a convenience; the reply is what reopens it.
            let _ = env
                .forge
                .set_thread_resolved(&request.change, forge_thread, false)
                .await;
        }
        raised = true;
    }
    Ok(raised)
}
