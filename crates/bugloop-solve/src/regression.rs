//! A regression (bugloop-architecture.md, guardrail 6: "if post-merge monitoring detects
//! regression, auto-revert and re-open issue"): an error is reported again after the change
//! request that solved its issue merged. A report is a claim anyone who gets text into a log
//! can make, so it is proven first: the solution's reproduction test must fail on the base's
//! head (`reproduction.rs`); when it passes the report is another error (the caller files it),
//! and when nothing can be proven the issue is only reopened. MERGED -> REGRESSED records it (the reports so far, the
//! merge commit, what `solve.on_regression` asked); then, with `revert`, the merged solution is
//! taken back out of the base as one commit (plumbing only: nothing of the code runs on the
//! host), the test commands run on it in the sandbox, and it is proposed as a change request
//! labelled `labels.revert` that says `Reverts #N`; the issue is reopened and REGRESSED -> OPEN
//! names the merge and the revert. A revert that conflicts with later work goes to a person
//! (REGRESSED -> ESCALATED, with the files). Every write is checked for before it is made, so a
//! run killed half way is finished by the next report or `bugloop solve`.

use bugloop_config::OnRegression;
use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{ChangeRequestState, DraftRequest};
use bugloop_git::{Revert, short};
use serde::{Deserialize, Serialize};

use super::detail::VerifyResult;
use super::reproduction::{self, AtHead};
use super::{Flow, Run, SolveError};

/// MERGED -> REGRESSED: what the regression is, and what was asked to be done about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Regressed {
    /// The merged change request.
    pub change_request: Option<u64>,
    /// The commit that merged it, where the forge said.
    pub merge_commit: Option<String>,
    /// Reports of the error so far.
    pub reports: u64,
    /// `revert` or `reopen` (`solve.on_regression` when it was recorded).
    pub action: String,
    /// The branch the revert goes on.
    pub revert_branch: Option<String>,
    /// Why the solution is not reverted although `revert` was asked: its reproduction test
    /// could not prove the regression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unproven: Option<String>,
}

/// REGRESSED -> OPEN: the change request that reverts the solution, if one was opened.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct Reopened {
    pub revert: Option<u64>,
    pub revert_commit: Option<String>,
}

/// Whether the merge was recorded less than `solve.regression_grace_minutes` ago: the code
/// that reports the error may still be the code from before the merge (not deployed yet), so
/// one report then is a repeat, not a regression.
pub(super) fn within_grace(run: &Run<'_, '_>) -> bool {
    let grace = run.env.config().solve.regression_grace_minutes;
    let Some(merged_at) = run.record.last_at(SolveState::Merged) else {
        return false;
    };
    let grace = jiff::SignedDuration::from_secs(
        i64::try_from(grace.saturating_mul(60)).unwrap_or(i64::MAX),
    );
    jiff::Timestamp::now().duration_since(merged_at) < grace
}

/// What the solution's reproduction test says about an error reported after the merge.
pub(super) enum Evidence {
    /// `solve.on_regression: count`: nothing is looked at.
    Count,
    /// The test fails on the base's head: the solution regressed.
    Regressed,
    /// The test passes there: the solution holds, the report is another error.
    Holds(String),
    /// Nothing can be proven (no reproduction test, or the suite fails without it): the issue
    /// may be reopened, never its solution reverted.
    Unproven(String),
}

/// Runs the merged solution's reproduction test on the base's head (`reproduction.rs`).
pub(super) async fn evidence(run: &Run<'_, '_>) -> Result<Evidence, SolveError> {
    if run.env.config().solve.on_regression == OnRegression::Count {
        return Ok(Evidence::Count);
    }
    let (Some(solving), Some(solution)) = (run.record.solving(), run.record.solution()) else {
        return Ok(Evidence::Unproven(
            "the record keeps no solution whose test could tell".to_owned(),
        ));
    };
    let reproduction = reproduction::of(run, &solving.start, &solution.commit).await?;
    if !reproduction.reproduced {
        let why = reproduction.reason.unwrap_or_default();
        return Ok(Evidence::Unproven(format!(
            "the solution has no reproduction test that fails without it ({why})"
        )));
    }
    let head = base_head(run, None)?;
    Ok(
        match reproduction::at_head(run, &solving.start, &head, &reproduction).await? {
            AtHead::Fails => Evidence::Regressed,
            AtHead::Passes(why) => Evidence::Holds(why),
            AtHead::Unknown(why) => Evidence::Unproven(why),
        },
    )
}

/// MERGED -> REGRESSED for an error reported again (`reports` so far), as `solve.on_regression`
/// asks, except that a regression not `proven` by the solution's reproduction test (the reason
/// given) is only reopened, never reverted.
pub(super) async fn record(
    run: &mut Run<'_, '_>,
    reports: u64,
    unproven: Option<String>,
) -> Result<(), SolveError> {
    let action = match run.env.config().solve.on_regression {
        OnRegression::Revert if unproven.is_some() => OnRegression::Reopen,
        configured => configured,
    };
    let change_request = run.record.change_request();
    let merge_commit = match change_request {
        Some(number) => run.tracker.change_request(number).await?.merge_commit,
        None => None,
    };
    let revert_branch = (action == OnRegression::Revert).then(|| {
        let regressions = run.record.count_of(SolveState::Regressed);
        format!(
            "{}revert-{}-{}",
            run.env.config().branch_prefix,
            run.number(),
            regressions + 1
        )
    });
    let merged = match (change_request, &merge_commit) {
        (Some(number), Some(commit)) => format!("#{number} was merged at {}", short(commit)),
        (Some(number), None) => format!("#{number} was merged"),
        _ => "its solution was merged".to_owned(),
    };
    let detail = Regressed {
        change_request,
        merge_commit,
        reports,
        action: action.as_str().to_owned(),
        revert_branch,
        unproven,
    };
    run.step(
        SolveState::Regressed,
        &format!(
            "reported again ({reports} report{}) after {merged}",
            if reports == 1 { "" } else { "s" }
        ),
        &detail,
    )
    .await?;
    Ok(())
}

/// REGRESSED -> OPEN (reverted or only reopened) or ESCALATED (the revert conflicts).
pub(super) async fn go_on(run: &mut Run<'_, '_>) -> Result<Flow, SolveError> {
    let step: Regressed = run.record.last_detail();
    let merged = step
        .change_request
        .map_or_else(|| "the solution".to_owned(), |n| format!("#{n}"));
    let Some(branch) = step
        .revert_branch
        .clone()
        .filter(|_| step.action == "revert")
    else {
        let why = step
            .unproven
            .as_deref()
            .map(|why| format!("; it was not reverted: {why}"))
            .unwrap_or_default();
        return reopen(
            run,
            &format!("reopened: the error came back after {merged} merged{why}"),
            None,
        )
        .await;
    };
    let commit = match run.tracker.branch_head(&branch).await? {
        // A run before this one reverted and published it, if it holds just that revert.
        Some(commit) if is_the_revert(run, &step, &merged, &commit)? => commit,
        Some(other) => {
            let reason = format!(
                "the error came back after {merged} merged, but the branch {branch} already \
                 exists at {} and is not bugloop's revert of it; it was left alone",
                short(&other)
            );
            run.tracker.reopen(run.number()).await?;
            return run.escalate(&reason).await;
        }
        None => match publish_revert(run, &step, &merged, &branch).await? {
            Ok(commit) => commit,
            Err(flow) => return Ok(flow),
        },
    };
    let tests = test_revert(run, &commit).await?;
    let base = run.options.base.clone();
    let title = format!(
        "Revert \"fix: {}\"",
        super::solver::first_line(&run.issue.title, 60)
    );
    let request = run
        .tracker
        .open_draft(&DraftRequest {
            title,
            body: revert_body(run, &step, &merged, &tests),
            branch: branch.clone(),
            base,
            closes: None,
        })
        .await?;
    run.tracker
        .add_labels(
            request.number,
            std::slice::from_ref(&run.env.config().labels.revert),
        )
        .await?;
    let reason = format!(
        "reopened: the error came back after {merged} merged; #{} reverts it",
        request.number
    );
    reopen(run, &reason, Some((request.number, commit))).await
}

/// Makes the revert of the merged solution and publishes its branch: the revert's commit, or
/// how the issue goes on when there is nothing to revert (reopened) or the revert conflicts or
/// fails (escalated).
async fn publish_revert(
    run: &mut Run<'_, '_>,
    step: &Regressed,
    merged: &str,
    branch: &str,
) -> Result<Result<String, Flow>, SolveError> {
    match revert_commit(run, step, merged, None)? {
        Ok(Revert::Commit(commit)) => {
            run.tracker.publish_branch(branch, &commit, None).await?;
            Ok(Ok(commit))
        }
        Ok(Revert::Empty) => {
            let reason = format!(
                "reopened: the error came back after {merged} merged; its base no longer \
                 holds that change, so there was nothing to revert"
            );
            Ok(Err(reopen(run, &reason, None).await?))
        }
        Ok(Revert::Conflicts(paths)) => {
            let paths: Vec<String> = paths.iter().map(|p| format!("`{p}`")).collect();
            let reason = format!(
                "the error came back after {merged} merged, and reverting it conflicts with \
                 later changes to {}; revert it by hand",
                paths.join(", ")
            );
            run.tracker.reopen(run.number()).await?;
            Ok(Err(run.escalate(&reason).await?))
        }
        Err(reason) => {
            run.tracker.reopen(run.number()).await?;
            Ok(Err(run.escalate(&reason).await?))
        }
    }
}

/// Whether `commit` (a revert branch a run before this one published, or someone else) is one
/// commit on top of its parent that reverts the merged change there: the same tree a revert
/// onto that parent gives now. A commit this clone does not have is not taken on trust.
fn is_the_revert(
    run: &Run<'_, '_>,
    step: &Regressed,
    merged: &str,
    commit: &str,
) -> Result<bool, SolveError> {
    let git = run.env.git;
    if git.resolve(commit).is_none() {
        return Ok(false);
    }
    let [parent] = git.parents(commit)?.try_into().unwrap_or_default();
    if parent.is_empty() {
        return Ok(false);
    }
    let tree = |c: &str| {
        git.run(&["rev-parse", "--verify", &format!("{c}^{{tree}}")])
            .ok()
    };
    Ok(match revert_commit(run, step, merged, Some(&parent))? {
        Ok(Revert::Commit(again)) => tree(&again).is_some() && tree(&again) == tree(commit),
        _ => false,
    })
}

/// The merged change and where it is reverted onto (`onto`, else the base's head): `Err` says
/// why it cannot be.
fn revert_commit(
    run: &Run<'_, '_>,
    step: &Regressed,
    merged: &str,
    onto: Option<&str>,
) -> Result<Result<Revert, String>, SolveError> {
    let git = run.env.git;
    let Some(merge) = step
        .merge_commit
        .clone()
        .filter(|c| git.resolve(c).is_some())
    else {
        return Ok(Err(format!(
            "the error came back after {merged} merged, but the commit that merged it is not \
             known here; revert it by hand"
        )));
    };
    let parents = git.parents(&merge)?;
    let solving = run.record.solving();
    // A merge commit brought in what its other parents add to its first; a commit of its own
    // (squash, rebase, fast-forward) is the solution, and a fast-forward to the branch's tip
    // brought in everything since the solving started.
    let before = match (parents.as_slice(), &solving) {
        ([first, _, ..], _) => first.clone(),
        ([_], Some(solving)) if run.record.verified_head().as_deref() == Some(merge.as_str()) => {
            solving.start.clone()
        }
        ([first], _) => first.clone(),
        ([], _) => {
            return Ok(Err(format!(
                "{} is the repository's first commit; there is nothing before it to revert to",
                short(&merge)
            )));
        }
    };
    let onto = base_head(run, onto)?;
    let name = &run.env.config().identity.local_bot_name;
    let email = format!("{name}@bugloop.invalid");
    let message = format!(
        "Revert {merged} (#{} came back)\n\nThe error of #{} was reported again after {merged} \
         merged at {}.",
        run.number(),
        run.number(),
        short(&merge)
    );
    // A git that cannot revert here (too old, say) hands the revert to a person, saying why.
    Ok(git
        .revert(&merge, &before, &onto, &message, (name, &email))
        .map_err(|error| {
            format!(
                "the error came back after {merged} merged, and it could not be reverted here: \
                 {error}; revert it by hand"
            )
        }))
}

/// `onto`, else the commit solving starts from (`SolveOptions::start`), else the base branch's
/// head here.
fn base_head(run: &Run<'_, '_>, onto: Option<&str>) -> Result<String, SolveError> {
    let git = run.env.git;
    match onto.or(run.options.start.as_deref()) {
        Some(start) => git.resolve(start),
        None => git
            .resolve(&format!("refs/heads/{}", run.options.base))
            .or_else(|| git.resolve(&run.options.base)),
    }
    .ok_or_else(|| {
        SolveError::Invalid(format!(
            "the base branch {:?} is not a branch here",
            run.options.base
        ))
    })
}

/// The test commands' results on the revert, when the configuration has them.
async fn test_revert(
    run: &Run<'_, '_>,
    commit: &str,
) -> Result<Option<Vec<bugloop_report::build::VerifyRun>>, SolveError> {
    match super::test_head(run.env.settings, run.env.git, commit).await {
        Ok(runs) => Ok(Some(runs)),
        // No test commands: the revert is proposed untested, and says so.
        Err(SolveError::Invalid(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

fn revert_body(
    run: &Run<'_, '_>,
    step: &Regressed,
    merged: &str,
    tests: &Option<Vec<bugloop_report::build::VerifyRun>>,
) -> String {
    let mut body = String::new();
    if let Some(number) = step.change_request {
        body.push_str(&format!("Reverts #{number}\n\n"));
    }
    body.push_str(&format!(
        "The error of #{issue} was reported again after {merged} merged{at} ({reports} \
         report{s} so far), so bugloop proposes taking the solution back out and has reopened \
         #{issue}.\n\n## Test results\n\n",
        issue = run.number(),
        at = step
            .merge_commit
            .as_deref()
            .map(|c| format!(" at {}", short(c)))
            .unwrap_or_default(),
        reports = step.reports,
        s = if step.reports == 1 { "" } else { "s" },
    ));
    match tests {
        Some(runs) => {
            let results: Vec<VerifyResult> = runs.iter().map(VerifyResult::of).collect();
            for result in &results {
                body.push_str(&result.line());
            }
            body.push_str(&super::detail::total_line(&results).unwrap_or_default());
        }
        None => body.push_str("Not run: no `solve.test_commands` are configured.\n"),
    }
    body
}

/// Reopens the issue, says why on it once, and records REGRESSED -> OPEN.
async fn reopen(
    run: &mut Run<'_, '_>,
    reason: &str,
    revert: Option<(u64, String)>,
) -> Result<Flow, SolveError> {
    run.tracker.reopen(run.number()).await?;
    let marker = format!("<!-- bugloop solve-regression:{} -->", run.record.len());
    // The reason names the solver's test files: one inert line.
    let mut body = format!(
        "This error was reported again: {}.",
        bugloop_domain::markdown::quiet(reason)
    );
    if revert.is_none() {
        body.push_str(" The merged solution was left in place.");
    }
    run.say_once(&marker, &body).await?;
    let (number, commit) = revert.unzip();
    run.step(
        SolveState::Open,
        reason,
        &Reopened {
            revert: number,
            revert_commit: commit,
        },
    )
    .await?;
    Ok(Flow::Next)
}

/// A ready draft merged since the record last looked is recorded MERGED (as `status` and
/// `solve` would): a report arriving first must still see the merge.
pub(super) async fn notice_merge(run: &mut Run<'_, '_>) -> Result<(), SolveError> {
    if run.record.state() != Some(SolveState::Ready) {
        return Ok(());
    }
    let Some(number) = run.record.change_request() else {
        return Ok(());
    };
    if run.tracker.change_request(number).await?.state == ChangeRequestState::Merged {
        run.record_merge(number).await?;
    }
    Ok(())
}
