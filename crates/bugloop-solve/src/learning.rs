//! The learning record when an issue is about to be taken (`bugloop_domain::learning`): an
//! issue bugloop filed from reports whose pattern was given up on (`solve.skip_after_escalations`)
//! goes to a person at once (OPEN -> ESCALATED), labelled so, with the pattern's history said on
//! the issue, instead of spending a solve on it again. A person's `--retry` still takes it.
//! Only escalations whose error the solver reproduced count (`reproduction.rs`): made-up
//! reports escalate too, and must not make a real error skipped.

use bugloop_domain::learning::{Learning, Step, Tally};
use bugloop_domain::markdown::quiet;
use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::PatternIssue;
use serde::Serialize;

use super::{Flow, Run, SolveError};

/// How many earlier escalations' reasons the issue's comment quotes.
const QUOTED_ESCALATIONS: usize = 10;

/// The detail of a skip: the record it was decided on.
#[derive(Serialize)]
struct Skipped<'l> {
    learning: &'l Learning,
}

/// The issue's learning record, when it has a pattern and the record reads.
async fn learning(run: &Run<'_, '_>) -> Result<Option<(Learning, Vec<PatternIssue>)>, SolveError> {
    let Some(pattern) = &run.issue.pattern else {
        return Ok(None);
    };
    let issues = run.tracker.pattern_issues(pattern).await?;
    let steps: Vec<_> = issues
        .iter()
        .map(|issue| {
            let steps: Vec<Step> = issue
                .history
                .iter()
                .map(|t| Step {
                    from: t.from,
                    to: t.to,
                    reproduced: match t.to {
                        // A regression is proven unless its step says why it was not.
                        SolveState::Regressed => t
                            .detail
                            .get("unproven")
                            .is_none_or(serde_json::Value::is_null),
                        _ => {
                            t.detail
                                .pointer("/reproduction/reproduced")
                                .and_then(serde_json::Value::as_bool)
                                == Some(true)
                        }
                    },
                })
                .collect();
            (issue.number, issue.pattern.clone(), steps)
        })
        .collect();
    Ok(Some((Learning::of(pattern, &steps), issues)))
}

/// Stops before the issue is taken when its pattern was given up on: escalated with the
/// record and its history said on the issue.
pub(super) async fn skip(run: &mut Run<'_, '_>) -> Result<Option<Flow>, SolveError> {
    let threshold = run.env.config().solve.skip_after_escalations;
    if threshold == 0 {
        return Ok(None);
    }
    let Some((learning, issues)) = learning(run).await? else {
        return Ok(None);
    };
    let Some(why) = learning.gives_up(threshold) else {
        return Ok(None);
    };
    let reason = format!("not solved again: {why}");
    let marker = format!("<!-- bugloop solve-skip:{} -->", run.record.len() + 1);
    run.say_once(&marker, &history(run, &why, &learning, &issues))
        .await?;
    run.step(
        SolveState::Escalated,
        &reason,
        &Skipped {
            learning: &learning,
        },
    )
    .await?;
    Ok(Some(Flow::Stop(format!(
        "escalated: {reason} (`bugloop solve {} --retry` takes it anyway)",
        run.number()
    ))))
}

/// The comment that hands the issue over: the pattern's tallies and why its issues escalated.
fn history(run: &Run<'_, '_>, why: &str, learning: &Learning, issues: &[PatternIssue]) -> String {
    let row = |what: String, tally: &Tally| {
        let numbers: Vec<String> = tally.issues.iter().map(|n| format!("#{n}")).collect();
        format!(
            "| {what} | {} | {} | {} | {} |\n",
            numbers.join(", "),
            tally.attempts,
            tally.successes,
            tally.escalations
        )
    };
    let mut body = format!(
        "bugloop does not try to solve this issue: {why}. It is labelled `{}` for a person.\n\n\
         | pattern | issues | taken | solved | escalated |\n| --- | --- | --- | --- | --- |\n",
        run.env.config().labels.needs_human
    );
    body.push_str(&row(
        format!("this error (`{}`)", learning.pattern.fingerprint),
        &learning.fingerprint,
    ));
    if let (Some(tally), Some(class)) = (&learning.class, &learning.pattern.class) {
        body.push_str(&row(format!("errors of the class `{class}`"), tally));
    }
    let reasons: Vec<String> = issues
        .iter()
        .filter_map(|issue| {
            let last = issue
                .history
                .iter()
                .rev()
                .find(|t| t.to == SolveState::Escalated && t.from != Some(SolveState::Open))?;
            Some(format!(
                "- #{}: {}\n",
                issue.number,
                quiet(&cut(&last.reason))
            ))
        })
        .take(QUOTED_ESCALATIONS)
        .collect();
    if !reasons.is_empty() {
        body.push_str("\n**Why they were escalated:**\n");
        body.extend(reasons);
    }
    body.push_str(&format!(
        "\nTo have bugloop try anyway: `bugloop solve {} --retry`.",
        run.number()
    ));
    body
}

/// A reason on one line of at most 200 characters.
fn cut(reason: &str) -> String {
    let line = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= 200 {
        return line;
    }
    let mut cut: String = line.chars().take(199).collect();
    cut.push('…');
    cut
}
