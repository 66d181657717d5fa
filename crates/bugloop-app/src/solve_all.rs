//! `bugloop solve --all [--jobs N]`: every open issue labelled `labels.trigger` that is not
//! finished (ready, merged or escalated), most severe first and then oldest, solved `jobs` at a
//! time, each under its own lease; one issue's failure is its own line, not the others'.

use bugloop_domain::solve::SolveState;
use bugloop_report::solve::SolveReport;
use bugloop_store::{Item, ItemKind, ItemState};
use futures_util::StreamExt;
use serde::Serialize;

use crate::{App, AppError, Outcome, SolveJob, Verdict};

/// Which issues, and how many at once.
#[derive(Debug, Clone, Default)]
pub struct SolveAllJob {
    pub base: Option<String>,
    pub model: Option<String>,
    /// Issues solved at the same time (at least one).
    pub jobs: usize,
}

/// One issue of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SolvedIssue {
    pub issue: u64,
    pub severity: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<SolveReport>,
    /// Why it could not be moved (another run holds it, an error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How severe an issue is, for the order (`bugloop_domain::urgency`).
pub fn issue_severity(item: &Item, bot: &str) -> (u8, &'static str) {
    let urgency = bugloop_domain::urgency::of_issue(
        item.labels.iter().map(String::as_str),
        &item.body,
        item.author == bot,
    );
    (urgency.rank, urgency.name)
}

impl App {
    /// Solves every issue waiting for it, most severe and oldest first, `job.jobs` at a time.
    pub async fn solve_all(&self, job: SolveAllJob) -> Result<Outcome<Vec<SolvedIssue>>, AppError> {
        let local = self.local_store("bugloop solve --all")?;
        let trigger = self.settings.config.labels.trigger.clone();
        let tracker = self.tracker()?;
        let mut waiting = Vec::new();
        for item in local.store().items(ItemKind::Issue, true).await? {
            if item.state != ItemState::Open || !item.labels.contains(&trigger) {
                continue;
            }
            let number = u64::try_from(item.number).unwrap_or_default();
            let state = bugloop_solve::status(tracker, number).await?.state;
            // Ready, merged and escalated wait for a person (`solve N --retry` takes one back).
            if state.is_some_and(SolveState::is_final) {
                continue;
            }
            let (rank, severity) = issue_severity(&item, local.bot());
            waiting.push((std::cmp::Reverse(rank), item.created_at, number, severity));
        }
        waiting.sort();
        let jobs = job.jobs.max(1);
        let solved: Vec<SolvedIssue> = futures_util::stream::iter(waiting)
            .map(|(_, _, issue, severity)| {
                let single = SolveJob {
                    issue,
                    base: job.base.clone(),
                    model: job.model.clone(),
                    ..SolveJob::default()
                };
                async move {
                    match self.solve(single).await {
                        Ok(outcome) => SolvedIssue {
                            issue,
                            severity,
                            report: Some(outcome.report),
                            error: None,
                        },
                        Err(error) => SolvedIssue {
                            issue,
                            severity,
                            report: None,
                            error: Some(error.to_string()),
                        },
                    }
                }
            })
            .buffered(jobs)
            .collect()
            .await;
        let escalated = solved
            .iter()
            .filter(|s| s.report.as_ref().and_then(|r| r.state) == Some(SolveState::Escalated))
            .count();
        let failed = solved.iter().filter(|s| s.error.is_some()).count();
        let verdict = if failed > 0 {
            Verdict::Incomplete {
                cause: format!(
                    "{failed} issue{} could not be moved",
                    if failed == 1 { "" } else { "s" }
                ),
            }
        } else if escalated > 0 {
            Verdict::NotConverged {
                why: format!(
                    "{escalated} issue{} escalated",
                    if escalated == 1 { "" } else { "s" }
                ),
            }
        } else {
            Verdict::Done
        };
        Ok(Outcome::new(solved, verdict))
    }
}
