//! A solve run killed after any transition of its state machine, resumed: it reaches the same
//! end as a run never killed.

use super::*;

/// The local forge, frozen for good right after its `kill_after`-th recorded transition: the
/// process died there.
#[derive(Debug)]
struct Killing {
    inner: LocalForge,
    recorded: AtomicUsize,
    kill_after: usize,
    killed: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl Tracker for Killing {
    async fn report(
        &self,
        fingerprint: &str,
        marker: &str,
        draft: &IssueDraft,
    ) -> Result<ReportCount, ForgeError> {
        self.inner.report(fingerprint, marker, draft).await
    }
    async fn issue(&self, number: u64) -> Result<TrackedIssue, ForgeError> {
        self.inner.issue(number).await
    }
    async fn pattern_issues(
        &self,
        pattern: &bugloop_domain::learning::Pattern,
    ) -> Result<Vec<bugloop_forge::tracker::PatternIssue>, ForgeError> {
        self.inner.pattern_issues(pattern).await
    }
    async fn add_labels(&self, issue: u64, labels: &[String]) -> Result<(), ForgeError> {
        self.inner.add_labels(issue, labels).await
    }
    async fn labellings(
        &self,
        issue: u64,
        label: &str,
    ) -> Result<Vec<bugloop_forge::tracker::Labelling>, ForgeError> {
        self.inner.labellings(issue, label).await
    }
    async fn remove_label(&self, issue: u64, label: &str) -> Result<(), ForgeError> {
        self.inner.remove_label(issue, label).await
    }
    async fn set_assignee(
        &self,
        issue: u64,
        login: &str,
        assigned: bool,
    ) -> Result<(), ForgeError> {
        self.inner.set_assignee(issue, login, assigned).await
    }
    async fn solve_history(&self, issue: u64) -> Result<Vec<SolveTransition>, ForgeError> {
        self.inner.solve_history(issue).await
    }
    async fn record_transition(
        &self,
        issue: u64,
        step: NewTransition<'_>,
    ) -> Result<SolveTransition, ForgeError> {
        let recorded = self.inner.record_transition(issue, step).await?;
        if self.recorded.fetch_add(1, Ordering::SeqCst) + 1 == self.kill_after {
            self.killed.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(recorded)
    }
    async fn branch_head(&self, branch: &str) -> Result<Option<String>, ForgeError> {
        self.inner.branch_head(branch).await
    }
    async fn publish_branch(
        &self,
        branch: &str,
        commit: &str,
        previous: Option<&str>,
    ) -> Result<(), ForgeError> {
        self.inner.publish_branch(branch, commit, previous).await
    }
    async fn open_draft(&self, draft: &DraftRequest) -> Result<ChangeRequest, ForgeError> {
        self.inner.open_draft(draft).await
    }
    async fn change_request(&self, number: u64) -> Result<ChangeRequest, ForgeError> {
        self.inner.change_request(number).await
    }
    async fn mark_ready(&self, number: u64) -> Result<(), ForgeError> {
        self.inner.mark_ready(number).await
    }
    async fn close_solved(&self, issue: u64) -> Result<(), ForgeError> {
        self.inner.close_solved(issue).await
    }
    async fn reopen(&self, issue: u64) -> Result<(), ForgeError> {
        self.inner.reopen(issue).await
    }
    async fn checks(&self, commit: &str) -> Result<Vec<Check>, ForgeError> {
        self.inner.checks(commit).await
    }
    async fn changes_requested(&self, number: u64) -> Result<bool, ForgeError> {
        self.inner.changes_requested(number).await
    }
    async fn reviews_of(
        &self,
        number: u64,
        commit: &str,
    ) -> Result<Vec<bugloop_forge::tracker::HeadReview>, ForgeError> {
        self.inner.reviews_of(number, commit).await
    }
}

#[tokio::test]
async fn a_run_killed_after_any_transition_is_resumed_to_the_same_end() {
    // The uninterrupted path records 10 transitions.
    for kill_after in 1..=10 {
        let (repo, issue) = scenario().await;
        let model = Arc::new(happy_script());
        let killed = Arc::new(tokio::sync::Notify::new());
        let tracker = Killing {
            inner: local_forge(repo.path()).await,
            recorded: AtomicUsize::new(0),
            kill_after,
            killed: killed.clone(),
        };
        tokio::select! {
            result = run_solve(&repo, config(10), model.clone(), Some(&tracker), issue) => {
                panic!("the run was to be killed after transition {kill_after}: {result:?}")
            }
            () = killed.notified() => {}
        }
        // A new process goes on from the record, with the rest of the same script: a step done
        // twice would ask the model for an answer that is not there.
        let report = run_solve(&repo, config(10), model.clone(), None, issue)
            .await
            .unwrap_or_else(|e| panic!("resumed after transition {kill_after}: {e}"));
        assert_eq!(model.remaining(), 0, "killed after transition {kill_after}");
        assert_eq!(
            report.history.len(),
            10,
            "killed after {kill_after}: {}",
            report.history_text()
        );
        assert_solved(&repo, &report).await;
    }
}
