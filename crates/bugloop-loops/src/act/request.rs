//! `do_request`: a requested change, made and landed the way a fix is.

use bugloop_domain::safety::sanitize_user_comment;
use bugloop_report::act::{ActReport, ChosenBy, Intent};
use bugloop_report::build::BuildStatus;
use bugloop_report::text::build_outcome;

use crate::build::{BuildTask, Workbench, build, land_on_target};
use crate::env::LoopEnv;
use crate::prompt::fill;

use super::{ActError, DO_PROMPT};

/// Carries out a general request: one verified commit `chore: apply user request`.
pub async fn do_request(env: &LoopEnv<'_>, request: &str) -> Result<ActReport, ActError> {
    if request.trim().is_empty() {
        return Err(ActError::Invalid("the request is empty".to_owned()));
    }
    let bench = Workbench::open(env.git, "do", &env.work)?;
    let prompt = fill(DO_PROMPT, &[("request", &sanitize_user_comment(request))]);
    let result = build(
        env,
        &bench,
        BuildTask {
            name: "do".to_owned(),
            prompt,
            commit_message: format!("chore{}: apply user request", env.work.commit_scope()),
            keep_failed: false,
            proofs: Vec::new(),
            tool_fixes: Vec::new(),
        },
    )
    .await;
    let landing = match &result.status {
        BuildStatus::Committed { .. } => land_on_target(env, &bench, "do").await?,
        _ => None,
    };
    Ok(ActReport {
        action: Intent::Do,
        chosen_by: ChosenBy::Command,
        message: build_outcome(&result.status, landing.as_ref()),
        answer: Some(result.summary.clone()).filter(|s| !s.is_empty()),
        build: Some(result),
        landing,
        resolved: Vec::new(),
    })
}
