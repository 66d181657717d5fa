//! `solve.approval: required` (the design's human-in-the-loop mode): a solution that passed
//! waits on its published branch, said once on the issue, until someone who may change the
//! repository approves it: a comment `@bugloop approve` on the issue, or the label
//! `labels.approve` put on it, after bugloop asked (on GitHub either event resumes the solving;
//! the label's event says who put it on and when), or locally the developer's `bugloop solve N
//! --approve`. Only then is the draft opened. A new solution (another commit) needs its own
//! approval: what came before bugloop asked for it does not count.

use bugloop_git::short;

use super::detail::Solution;
use super::{Flow, Run, SolveError};

/// The hidden line of the comment that asks for approval of `commit`.
fn marker(commit: &str) -> String {
    format!("<!-- bugloop solve-approval:{commit} -->")
}

/// Who approved `solution`, if someone did: the person running this (`--approve`), the first
/// comment after bugloop's request with a line that is exactly `@bugloop approve`, or the approval label put on
/// after it, by someone who may change the repository (anyone may comment on a public issue;
/// triage access is enough to label one).
pub(super) async fn approved_by(
    run: &Run<'_, '_>,
    solution: &Solution,
) -> Result<Option<String>, SolveError> {
    if run.options.ask.approve {
        return Ok(Some("the developer (`bugloop solve --approve`)".to_owned()));
    }
    let comments = run.env.forge.comments(&run.issue.conversation).await?;
    let marker = marker(&solution.commit);
    let Some(asked) = comments
        .iter()
        .position(|c| c.by_bugloop && c.body.contains(&marker))
    else {
        return Ok(None);
    };
    let may_write = async |login: &str| -> Result<bool, SolveError> {
        Ok(run.env.forge.permission(login).await?.may_modify_files())
    };
    // bugloop answers to `@bugloop`, not configurable (`review.trigger_mention` is refused).
    let name = "bugloop";
    let mut near_miss = false;
    for comment in &comments[asked + 1..] {
        if comment.by_bugloop {
            continue;
        }
        if !bugloop_domain::mention::is_command_line(&comment.body, name, "approve") {
            near_miss |= bugloop_domain::mention::mentions_loosely(&comment.body, name, "approve");
            continue;
        }
        if may_write(&comment.author).await? {
            return Ok(Some(bugloop_domain::markdown::quiet(&comment.author)));
        }
    }
    if near_miss {
        // Said once on the issue: anything but the exact line is ignored, and a writer who
        // meant it should know why nothing happened.
        let how = format!(
            "A comment here mentions approving, but bugloop approves only on a line that is \
             exactly `@{name} approve` (outside code, quotes and HTML comments), written by \
             someone who may change the repository, or on the label `{}`; nothing was approved.",
            run.env.config().labels.approve
        );
        run.say_once(
            &format!("<!-- bugloop solve-approval-how:{} -->", solution.commit),
            &how,
        )
        .await?;
    }
    let label = &run.env.config().labels.approve;
    if !run.issue.labels.contains(label) {
        return Ok(None);
    }
    let asked_at = comments[asked].created_at;
    for labelling in run.tracker.labellings(run.number(), label).await? {
        // A person's approval: not an App's (bugloop's own labels included).
        if labelling.at > asked_at
            && !labelling.actor.ends_with("[bot]")
            && may_write(&labelling.actor).await?
        {
            return Ok(Some(format!(
                "{} (label `{label}`)",
                bugloop_domain::markdown::quiet(&labelling.actor)
            )));
        }
    }
    Ok(None)
}

/// Asks for approval of `solution` on the issue (once), and waits.
pub(super) async fn wait(
    run: &Run<'_, '_>,
    branch: &str,
    solution: &Solution,
) -> Result<Flow, SolveError> {
    let tests = super::detail::total_line(&solution.verify).unwrap_or_default();
    let body = format!(
        "bugloop has a solution on `{branch}` ({}): the tests pass.{tests}\n\nThis repository \
         asks for approval first (`solve.approval: required`): someone who may change the \
         repository comments `@bugloop approve` here or puts the label `{}` on this issue \
         (locally: `bugloop solve {} --approve`), and the draft change request opens.",
        short(&solution.commit),
        run.env.config().labels.approve,
        run.number()
    );
    // An approval label left from an earlier solution would read as approving this one: it is
    // taken off before this one is asked for (never after: a person may put it on again as
    // soon as they read the request), so putting it on again is the approval.
    let marker = marker(&solution.commit);
    let label = &run.env.config().labels.approve;
    let asked = run
        .env
        .forge
        .comments(&run.issue.conversation)
        .await?
        .iter()
        .any(|c| c.by_bugloop && c.body.contains(&marker));
    if !asked {
        if run.issue.labels.contains(label) {
            run.tracker.remove_label(run.number(), label).await?;
        }
        run.say_once(&marker, &body).await?;
    }
    Ok(Flow::Stop(format!(
        "waiting for approval of the solution on {branch} ({}): `@bugloop approve` on the \
         issue, or `bugloop solve {} --approve`",
        short(&solution.commit),
        run.number()
    )))
}
