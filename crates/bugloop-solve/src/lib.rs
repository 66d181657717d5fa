//! The solve pipeline (bugloop-architecture.md): an issue is taken, solved in a bounded
//! build/test/evaluate loop on a branch of its own, proposed as a draft change request, its
//! review answered round by round, and marked ready when the gate passes. Merging stays a human
//! decision.
//!
//! The issue's state machine ([`SolveState`]) is the pipeline's memory: every step is recorded
//! through the [`Tracker`] with its reason before the next begins, and a run reads the record
//! and goes on from where it ends, so a process killed in any state is resumed by running again,
//! and a step recorded as done is never redone. A step that writes somewhere (a branch, the
//! draft, a thread's answer) records what it is about to write first, and on resume finishes it
//! by checking what is already there.
//!
//! **Invariants:** every step is recorded through the `Tracker` with its reason before the next
//! begins, and a step recorded as done is never redone; nothing is merged (merging stays a
//! person's decision); it builds on the loops (`bugloop-loops`), which never depend on it.

mod approval;
mod detail;
mod gate;
mod junit;
mod learning;
mod record;
mod regression;
mod reproduction;
mod review;
mod solver;
#[cfg(test)]
mod tests;
mod threads;

use bugloop_domain::solve::SolveState;
use bugloop_forge::tracker::{NewTransition, TrackedIssue, Tracker};
use bugloop_report::solve::SolveReport;

use self::detail::{Empty, SolvingStarted, Taken};
use bugloop_loops::env::LoopEnv;
use bugloop_loops::settings::LoopSettings;

pub use self::record::Record;

pub const SOLVE_PROMPT: &str = include_str!("../prompts/solve.md");
pub const RESOLVE_PROMPT: &str = include_str!("../prompts/resolve-comments.md");
const REPOSITORY_INSTRUCTIONS: &str = include_str!("../prompts/repository-instructions.md");

/// The repository's own prompt for `kind`, as a section of the task (empty without one).
fn repository_instructions(settings: &LoopSettings, kind: bugloop_config::PromptKind) -> String {
    settings
        .repository_prompts
        .get(kind)
        .map(|prompt| {
            bugloop_loops::prompt::fill(
                REPOSITORY_INSTRUCTIONS,
                &[
                    ("source", &prompt.source),
                    ("text", &bugloop_loops::prompt::quoted(&prompt.text, 16_384)),
                ],
            )
        })
        .unwrap_or_default()
}

#[derive(Debug, thiserror::Error)]
pub enum SolveError {
    #[error(transparent)]
    Forge(#[from] bugloop_forge::ForgeError),
    #[error(transparent)]
    Build(#[from] bugloop_loops::build::BuildError),
    #[error(transparent)]
    Review(#[from] bugloop_loops::review::ReviewError),
    #[error(transparent)]
    Checkout(#[from] bugloop_loops::checkout::CheckoutError),
    #[error(transparent)]
    Git(#[from] bugloop_git::GitError),
    #[error("{0}")]
    Invalid(String),
}

/// What a run of the pipeline is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolveOptions {
    /// The branch a solution goes into (its change request's base).
    pub base: String,
    /// The commit solving starts from; the base branch's head here when not given (a clone
    /// names the remote's, which its local branch may lag behind).
    pub start: Option<String>,
    pub ask: SolveAsk,
}

/// What the person or event that started a run asked of it, as each front end passes it on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SolveAsk {
    /// Take an escalated issue again.
    pub retry: bool,
    /// The person running this approves the solution waiting for approval
    /// (`solve.approval: required`; locally, `bugloop solve N --approve`).
    pub approve: bool,
    /// What the person who asked approved (`approval_digest` of the title and body then): an
    /// issue edited since is not taken.
    pub approved: Option<String>,
    /// Only go on with an issue already taken (a review of its draft asked): never start one.
    pub resume_only: bool,
    /// Stop while this label is not on the issue (the server's runs: taking the label off is
    /// how a person stops bugloop).
    pub require_label: Option<String>,
}

/// Whether the pipeline goes on after a step.
enum Flow {
    Next,
    /// Nothing more to do now; the message says why.
    Stop(String),
}

/// A run of the pipeline on one issue.
struct Run<'e, 'a> {
    env: &'e LoopEnv<'a>,
    tracker: &'e dyn Tracker,
    issue: TrackedIssue,
    options: &'e SolveOptions,
    record: Record,
    /// When the run asks to be looked at again (a wait for a reviewer that ends then).
    wake_at: Option<jiff::Timestamp>,
    /// Why this run stopped short of where it could go, when nothing recorded says so (`model`:
    /// the draft's review was not complete): the report says it, and the job did not finish.
    stopped: Option<String>,
    /// The meter's reading when the last step recorded what it spent.
    mark: SpendMark,
}

impl<'e, 'a> Run<'e, 'a> {
    /// A run on `issue` as its record says, spending counted from now.
    fn new(
        env: &'e LoopEnv<'a>,
        tracker: &'e dyn Tracker,
        issue: TrackedIssue,
        options: &'e SolveOptions,
        record: Record,
    ) -> Self {
        Run {
            env,
            tracker,
            issue,
            options,
            record,
            wake_at: None,
            stopped: None,
            mark: SpendMark::now(&env.meter),
        }
    }
}

/// The run's spending up to a moment, to record each step's share.
struct SpendMark {
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: Option<f64>,
    at: std::time::Instant,
}

impl SpendMark {
    fn now(meter: &bugloop_llm::Meter) -> SpendMark {
        let summary = meter.summary();
        SpendMark {
            input_tokens: summary.usage.input_tokens,
            output_tokens: summary.usage.output_tokens,
            cost_usd: summary.cost_usd,
            at: std::time::Instant::now(),
        }
    }
}

/// Moves `issue` through the pipeline as far as it can go now: to READY, MERGED or ESCALATED,
/// or to a state that waits for others (checks still running, a human's merge).
pub async fn solve(
    env: &LoopEnv<'_>,
    tracker: &dyn Tracker,
    issue: u64,
    options: &SolveOptions,
) -> Result<SolveReport, SolveError> {
    // An issue that is not there is said before what solving one would need.
    let found = tracker.issue(issue).await?;
    let settings = solve_settings(env.settings)?;
    let env = env.with_settings(&settings);
    let record = Record::new(tracker.solve_history(issue).await?);
    if !found.open && record.state().is_none() {
        return Err(SolveError::Invalid(format!(
            "issue #{issue} is closed; there is nothing to solve"
        )));
    }
    let mut run = Run::new(&env, tracker, found, options, record);
    if let Some(message) = why_not_go_on(&run, issue, options) {
        return Ok(run.record.report(&run.issue, message));
    }
    if solving_is_next(&run.record, options) && !env.provider.capabilities().tools {
        return Err(SolveError::Invalid(format!(
            "{} cannot call tools, and solving an issue needs a model that can change code \
             (see the README's Models): issue #{issue} was left as it was",
            env.provider.name()
        )));
    }
    // A run that died between recording a step and labelling the issue left the labels behind.
    if let Some(state) = run.record.state() {
        run.ensure_labels(state).await?;
    }
    let message = go_on(&mut run, issue, options).await?;
    let mut report = run.record.report(&run.issue, message);
    report.wake_at = run.wake_at.map(|at| at.to_string());
    if run.stopped.is_some() {
        report.stopped = run.stopped;
    }
    Ok(report)
}

/// Why the run stops before doing anything, if it does: nothing taken to resume, the label
/// taken off, or the issue edited after it was approved.
fn why_not_go_on(run: &Run<'_, '_>, issue: u64, options: &SolveOptions) -> Option<String> {
    if options.ask.resume_only && run.record.state().is_none() {
        return Some("bugloop has not taken this issue; nothing to go on with".to_owned());
    }
    if let (Some(label), Some(state)) = (&options.ask.require_label, run.record.state())
        && !state.is_final()
        && !run.issue.labels.contains(label)
    {
        return Some(format!(
            "the label `{label}` was taken off the issue; bugloop stopped at {state}"
        ));
    }
    // About to take the issue: only the text that was approved, before anything is recorded.
    let taking = match run.record.state() {
        None | Some(SolveState::Open) => true,
        Some(SolveState::Escalated) => options.ask.retry,
        Some(_) => false,
    };
    if taking
        && let Some(approved) = &options.ask.approved
        && *approved != bugloop_domain::solve::approval_digest(&run.issue.title, &run.issue.body)
    {
        return Some(format!(
            "issue #{issue} was edited after it was labelled; label it again to have this \
             text solved"
        ));
    }
    None
}

/// Whether this run's next step takes the issue or makes an attempt at it, which a Build agent
/// does: a model that cannot call tools would only record attempts that cannot succeed, then
/// escalate.
fn solving_is_next(record: &Record, options: &SolveOptions) -> bool {
    match record.state() {
        None | Some(SolveState::Open | SolveState::Assigned) => true,
        Some(SolveState::Solving) => record.solution().is_none(),
        Some(SolveState::Escalated) => options.ask.retry,
        Some(_) => false,
    }
}

/// Takes the issue from state to state until a step stops; what it stopped with.
async fn go_on(
    run: &mut Run<'_, '_>,
    issue: u64,
    options: &SolveOptions,
) -> Result<String, SolveError> {
    loop {
        let flow = match run.record.state() {
            None => {
                // The step is recorded now; when the issue itself was opened is said with it.
                let filed = match run.issue.opened_at {
                    Some(at) => format!("filed (opened {at})"),
                    None => "filed".to_owned(),
                };
                run.step(SolveState::Open, &filed, &Empty {}).await?;
                Flow::Next
            }
            Some(SolveState::Open) => run.take().await?,
            Some(SolveState::Assigned) => run.start_solving().await?,
            Some(SolveState::Solving) => solver::run(run).await?,
            Some(SolveState::PrDraft) => review::first_review(run).await?,
            Some(SolveState::Reviewing) => review::round_or_gate(run).await?,
            Some(SolveState::Ready) => review::after_ready(run).await?,
            Some(SolveState::Escalated) if options.ask.retry => run.take().await?,
            Some(SolveState::Escalated) => Flow::Stop(format!(
                "escalated: {} (`bugloop solve {issue} --retry` takes it again)",
                run.record.last_reason()
            )),
            Some(SolveState::Merged) => Flow::Stop("merged".to_owned()),
            Some(SolveState::Regressed) => regression::go_on(run).await?,
        };
        if let Flow::Stop(message) = flow {
            return Ok(message);
        }
    }
}

/// What a report after the issue's solution merged came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Regression {
    /// A repeat: the issue is not solved and merged, the report came within the grace time, or
    /// `solve.on_regression` is `count`.
    Repeat,
    /// A regression, handled as `solve.on_regression` says (reverted only when proven).
    Handled(Box<SolveReport>),
    /// The solution's reproduction test passes on the base's head: the report is another
    /// error, to be filed as an issue of its own (the reason says why).
    AnotherError { reason: String },
}

/// An error reported again on `issue` (`reports` reports so far): when the change request that
/// solved it has merged, a regression, proven by the solution's reproduction test and handled
/// as `solve.on_regression` says (the revert proposed, the issue reopened); a regression a run
/// left half handled is finished.
pub async fn regression(
    env: &LoopEnv<'_>,
    tracker: &dyn Tracker,
    issue: u64,
    options: &SolveOptions,
    reports: u64,
) -> Result<Regression, SolveError> {
    let found = tracker.issue(issue).await?;
    let record = Record::new(tracker.solve_history(issue).await?);
    let mut run = Run::new(env, tracker, found, options, record);
    regression::notice_merge(&mut run).await?;
    match run.record.state() {
        Some(SolveState::Merged) if !regression::within_grace(&run) => {
            let unproven = match regression::evidence(&run).await? {
                regression::Evidence::Count => return Ok(Regression::Repeat),
                regression::Evidence::Holds(reason) => {
                    return Ok(Regression::AnotherError { reason });
                }
                regression::Evidence::Regressed => None,
                regression::Evidence::Unproven(why) => Some(why),
            };
            regression::record(&mut run, reports, unproven).await?;
        }
        Some(SolveState::Regressed) => {}
        _ => return Ok(Regression::Repeat),
    }
    regression::go_on(&mut run).await?;
    let message = run.record.last_reason();
    Ok(Regression::Handled(Box::new(
        run.record.report(&run.issue, message),
    )))
}

/// The issue's state as recorded, without doing anything (`bugloop status`).
pub async fn status(tracker: &dyn Tracker, issue: u64) -> Result<SolveReport, SolveError> {
    let found = tracker.issue(issue).await?;
    let mut record = Record::new(tracker.solve_history(issue).await?);
    // A ready draft that a person merged since (`git merge`, or the forge's button) is recorded
    // as merged when its status is asked for, as `solve` would record it.
    if record.state() == Some(SolveState::Ready)
        && let Some(number) = record.change_request()
        && tracker.change_request(number).await?.state
            == bugloop_forge::tracker::ChangeRequestState::Merged
    {
        tracker.close_solved(issue).await?;
        let recorded = tracker
            .record_transition(
                issue,
                NewTransition {
                    from: Some(SolveState::Ready),
                    to: SolveState::Merged,
                    reason: &format!("#{number} was merged"),
                    detail: &detail::to_json(&Empty {})?,
                },
            )
            .await;
        match recorded {
            Ok(transition) => record.push(transition),
            // Another run recorded it first: its record is the one to show.
            Err(_) => record = Record::new(tracker.solve_history(issue).await?),
        }
    }
    let message = match record.state() {
        Some(state) if state.is_final() => record.last_reason(),
        Some(_) => format!("in progress: {}", record.last_reason()),
        None => String::new(),
    };
    Ok(record.report(&found, message))
}

/// Runs the test commands a solve runs with (`solve.test_commands`, or `fix.verify_commands`)
/// on `head` in the sandbox, as checks of a local change request: each command's result, up to
/// the first that fails.
pub async fn test_head(
    settings: &LoopSettings,
    git: &bugloop_git::Git,
    head: &str,
) -> Result<Vec<bugloop_report::build::VerifyRun>, SolveError> {
    let settings = solve_settings(settings)?;
    let bench = bugloop_loops::build::Workbench::at(git, head, "checks")?;
    Ok(bugloop_loops::build::run_commands(
        &settings.config,
        bench.path(),
        Some(bench.git_mount()),
        &settings.verify_commands,
    )
    .await?)
}

/// The settings a solve runs with: its verify commands are `solve.test_commands`, or
/// `fix.verify_commands` when those are not set. Without either there is no exit condition
/// (tests pass), so nothing is solved.
fn solve_settings(settings: &LoopSettings) -> Result<LoopSettings, SolveError> {
    let config = &settings.config;
    let commands = bugloop_config::commands("solve.test_commands", &config.solve.test_commands)
        .map_err(|e| SolveError::Invalid(e.to_string()))?;
    let commands = if commands.is_empty() {
        settings.verify_commands.clone()
    } else {
        commands
    };
    if commands.is_empty() {
        return Err(SolveError::Invalid(
            "solving needs the commands that build and test the code: set solve.test_commands \
             (or fix.verify_commands) in the configuration; the loop ends when they pass"
                .to_owned(),
        ));
    }
    Ok(LoopSettings {
        verify_commands: commands,
        ..settings.clone()
    })
}

impl Run<'_, '_> {
    fn number(&self) -> u64 {
        self.issue.number
    }

    /// Records the step from the current state to `to`, with `detail` (the struct of the step's
    /// kind, in [`detail`]), then puts the labels `to` calls for on the issue.
    async fn step(
        &mut self,
        to: SolveState,
        reason: &str,
        detail: &(impl serde::Serialize + Sync),
    ) -> Result<(), SolveError> {
        let mut detail = detail::to_json(detail)?;
        if let (Some(spent), serde_json::Value::Object(fields)) =
            (self.spent_since_mark(), &mut detail)
            && let Ok(spent) = serde_json::to_value(spent)
        {
            fields.insert("spent".to_owned(), spent);
        }
        let from = self.record.state();
        if let Some(from) = from
            && !from.can_go_to(to)
        {
            return Err(SolveError::Invalid(format!(
                "issue #{}: {from} -> {to} is not a step of the solve pipeline",
                self.number()
            )));
        }
        let transition = self
            .tracker
            .record_transition(
                self.number(),
                NewTransition {
                    from,
                    to,
                    reason,
                    detail: &detail,
                },
            )
            .await?;
        self.env
            .progress
            .event(bugloop_loops::ProgressEvent::Step(format!(
                "#{}: {} -> {to}: {reason}",
                self.number(),
                from.map_or("(new)", SolveState::as_str)
            )));
        self.record.push(transition);
        if from == Some(SolveState::Solving) && to != SolveState::Solving {
            // Solving ended: the attempts' kept edits have served.
            solver::forget_snapshots(self.env.git, self.number());
        }
        self.sync_labels(from, to).await
    }

    /// What the model spent since the last step that recorded spending (none when nothing was:
    /// the wall time of steps without a model call goes to the next one with).
    fn spent_since_mark(&mut self) -> Option<bugloop_report::solve::IssueSpend> {
        let now = SpendMark::now(&self.env.meter);
        let input = now.input_tokens.saturating_sub(self.mark.input_tokens);
        let output = now.output_tokens.saturating_sub(self.mark.output_tokens);
        if input == 0 && output == 0 {
            return None;
        }
        let spent = bugloop_report::solve::IssueSpend {
            input_tokens: input,
            output_tokens: output,
            cost_usd: now
                .cost_usd
                .map(|cost| (cost - self.mark.cost_usd.unwrap_or(0.0)).max(0.0)),
            seconds: self.mark.at.elapsed().as_secs(),
        };
        self.mark = now;
        Some(spent)
    }

    /// Puts the labels `state` calls for on the issue, whatever it has now.
    async fn ensure_labels(&self, state: SolveState) -> Result<(), SolveError> {
        let labels = &self.env.config().labels;
        let (working, escalated) = bugloop_domain::solve::labels_of(state);
        for (wanted, label) in [
            (working, &labels.in_progress),
            (escalated, &labels.needs_human),
        ] {
            self.move_label(label, self.issue.labels.contains(label), wanted)
                .await?;
        }
        // A finished issue's assignees are people's to change (bugloop does not put itself
        // back on a merged issue someone took it off).
        if let Some(login) = &self.env.config().agents.bugsolver.assignee
            && !state.is_final()
        {
            let wanted = bugloop_domain::solve::assigned_in(state);
            let has = self
                .issue
                .assignees
                .iter()
                .any(|a| a.eq_ignore_ascii_case(login));
            if wanted != has {
                self.tracker
                    .set_assignee(self.number(), login, wanted)
                    .await?;
            }
        }
        Ok(())
    }

    /// Puts `label` on the issue or takes it off, when it `had` it and should not, or the
    /// other way round.
    async fn move_label(&self, label: &str, had: bool, wanted: bool) -> Result<(), SolveError> {
        if wanted && !had {
            let labels = [label.to_owned()];
            self.tracker.add_labels(self.number(), &labels).await?;
        } else if had && !wanted {
            self.tracker.remove_label(self.number(), label).await?;
        }
        Ok(())
    }

    async fn sync_labels(
        &self,
        from: Option<SolveState>,
        to: SolveState,
    ) -> Result<(), SolveError> {
        let labels = &self.env.config().labels;
        let before = from.map_or((false, false), bugloop_domain::solve::labels_of);
        let (working, escalated) = bugloop_domain::solve::labels_of(to);
        for (had, has, label) in [
            (before.0, working, &labels.in_progress),
            (before.1, escalated, &labels.needs_human),
        ] {
            self.move_label(label, had, has).await?;
        }
        if let Some(login) = &self.env.config().agents.bugsolver.assignee {
            let had = from.is_some_and(bugloop_domain::solve::assigned_in);
            let has = bugloop_domain::solve::assigned_in(to);
            if had != has {
                self.tracker.set_assignee(self.number(), login, has).await?;
            }
        }
        Ok(())
    }

    /// -> ASSIGNED: the issue's text as it is now is what is solved, kept in the record. An
    /// issue whose pattern the learning record gave up on goes to a person instead (but on a
    /// person's `--retry`).
    async fn take(&mut self) -> Result<Flow, SolveError> {
        let retried = self.record.state() == Some(SolveState::Escalated);
        if !retried && let Some(flow) = learning::skip(self).await? {
            return Ok(flow);
        }
        let (title, body) = (&self.issue.title, &self.issue.body);
        let reason = if retried {
            "taken again (`--retry`) after an escalation"
        } else {
            "taken by bugloop"
        };
        let taken = Taken {
            title: Some(title.clone()),
            body: Some(body.clone()),
        };
        self.step(SolveState::Assigned, reason, &taken).await?;
        Ok(Flow::Next)
    }

    /// ASSIGNED -> SOLVING: the branch the solution will be on, and the commit it starts from.
    async fn start_solving(&mut self) -> Result<Flow, SolveError> {
        let base = &self.options.base;
        let start = match &self.options.start {
            Some(start) => self.env.git.resolve(start),
            None => self
                .env
                .git
                .resolve(&format!("refs/heads/{base}"))
                .or_else(|| self.env.git.resolve(base)),
        }
        .ok_or_else(|| {
            SolveError::Invalid(format!("the base branch {base:?} is not a branch here"))
        })?;
        // Solving again after a regression: the merged solution's branch is not reused.
        let again = match self.record.count_of(SolveState::Regressed) {
            0 => String::new(),
            n => format!("-{}", n + 1),
        };
        let branch = format!(
            "{}{}-{}{again}",
            self.env.config().branch_prefix,
            self.number(),
            bugloop_domain::solve::slug(&self.issue.title, 40)
        );
        self.step(
            SolveState::Solving,
            &format!(
                "solving on {branch}, from {base} at {}",
                &start[..12.min(start.len())]
            ),
            &SolvingStarted {
                branch: branch.clone(),
                base: base.clone(),
                start: start.clone(),
            },
        )
        .await?;
        Ok(Flow::Next)
    }

    /// READY -> MERGED: the draft `number` was merged (the issue closed where the forge does
    /// not close it itself).
    async fn record_merge(&mut self, number: u64) -> Result<(), SolveError> {
        self.tracker.close_solved(self.number()).await?;
        self.step(
            SolveState::Merged,
            &format!("#{number} was merged"),
            &Empty {},
        )
        .await
    }

    /// Says `body` on the issue, once: a comment ending in `marker` is found again, so a run
    /// that died after saying it and before recording its step does not say it twice.
    async fn say_once(&self, marker: &str, body: &str) -> Result<(), SolveError> {
        let conversation = &self.issue.conversation;
        let said = self
            .env
            .forge
            .comments(conversation)
            .await?
            .iter()
            .any(|c| c.by_bugloop && c.body.contains(marker));
        if !said {
            self.env
                .forge
                .add_comment(conversation, &format!("{body}\n\n{marker}"), None)
                .await?;
        }
        Ok(())
    }

    /// -> ESCALATED, with `reason` and what was tried, said on the issue once.
    async fn escalate(&mut self, reason: &str) -> Result<Flow, SolveError> {
        let seq = self.record.len() + 1;
        // Outcomes quote what the code under test printed: one inert line each, paging nobody.
        use bugloop_domain::markdown::quiet;
        let mut body = format!(
            "bugloop could not finish this issue and hands it to a person.\n\n**Why:** {}\n",
            quiet(reason)
        );
        let tried = self.record.attempts();
        if !tried.is_empty() {
            body.push_str("\n**What was tried:**\n");
            for attempt in &tried {
                body.push_str(&format!(
                    "- attempt {}: {}\n",
                    attempt.number,
                    quiet(&attempt.outcome)
                ));
            }
        }
        for round in self.record.rounds() {
            body.push_str(&format!(
                "- review round {}: {}\n",
                round.number,
                quiet(&round.outcome)
            ));
        }
        // Said once, even by a run that died after saying it and before recording it.
        let marker = format!("<!-- bugloop solve-escalation:{seq} -->");
        self.say_once(&marker, body.trim_end()).await?;
        let detail = reproduction::Escalation {
            reproduction: reproduction::of_record(self).await,
        };
        self.step(SolveState::Escalated, reason, &detail).await?;
        Ok(Flow::Stop(format!("escalated: {reason}")))
    }
}
