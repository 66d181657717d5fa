//! The converge job: audit and fix the branch until an audit is clean.

use bugloop_report::converge::ConvergeReport;

use crate::outcome::converge_verdict;
use crate::{App, AppError, Outcome};

/// A converge run.
#[derive(Debug, Clone, Default)]
pub struct ConvergeJob {
    /// Converge the change from this revision (default: the merge base with the default branch).
    pub base: Option<String>,
    pub model: Option<String>,
}

impl App {
    /// Audits and fixes the branch until an audit is clean, at most `converge.max_loops` loops.
    pub async fn converge(&self, job: ConvergeJob) -> Result<Outcome<ConvergeReport>, AppError> {
        let env = self.loop_env(job.model.as_deref())?;
        let change = self.conversation_key();
        let meter = env.meter.clone();
        // Auditors with a model of their own spend from the run's one budget.
        let connect = |model: &str| self.models.connect_metered(model, meter.clone());
        let report = bugloop_loops::converge::converge(&env, &change, job.base, &connect).await?;
        let verdict = converge_verdict(&report);
        Ok(Outcome::new(report, verdict))
    }
}
