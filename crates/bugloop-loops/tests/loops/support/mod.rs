//! Repositories, scripted sessions and a stable digest of reports for the loop tests.

use std::sync::Arc;

use bugloop_config::Config;
use bugloop_domain::thread::Comment;
use bugloop_forge::Forge;
use bugloop_forge::local::LocalForge;
use bugloop_git::{Git, Selection};
use bugloop_llm::budget::{Meter, Metered};
use bugloop_llm::scripted::{ScriptedProvider, text_reply, tool_reply};
use bugloop_llm::{BudgetLimits, Capabilities, ChatResponse, Provider, Usage};
use bugloop_loops::review::{ReviewRequest, review};
use bugloop_loops::{LoopEnv, LoopSettings};
use bugloop_report::review::ReviewReport;
use bugloop_testkit::TestRepo;
pub use bugloop_testkit::git;
use serde_json::{Value, json};

mod stopped;
pub use stopped::{StallingForge, stop_when};

/// A repository the loop tests work on (see [`Repo::with_feature`]).
pub struct Repo(TestRepo);

impl std::ops::Deref for Repo {
    type Target = TestRepo;

    fn deref(&self) -> &TestRepo {
        &self.0
    }
}

const STATS: &str = "pub fn average(values: &[f64]) -> f64 {
    let mut sum = 0.0;
    for v in values {
        sum += v;
    }
    sum / values.len() as f64
}
";

const PERCENTILE: &str = "
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let index = (p * sorted.len() as f64) as usize;
    sorted[index]
}
";

const DB: &str = "pub fn find_user(db: &Db, name: &str) -> Option<User> {
    let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);
    db.query_one(&query)
}
";

impl Repo {
    /// An empty repository on `main` whose developer is its own, as the local forge reads it.
    fn init() -> TestRepo {
        let repo = TestRepo::init("main");
        repo.git(&["config", "user.name", "Dev"]);
        repo.git(&["config", "user.email", "dev@example.com"]);
        repo
    }

    /// `main` with `path` as `base`; `feature` (checked out) changes it to `change`.
    pub fn with_change(path: &str, base: &str, change: &str) -> Repo {
        let repo = Repo::init();
        repo.write(path, base);
        repo.commit("first");
        repo.branch("feature");
        repo.write(path, change);
        repo.commit("the change");
        Repo(repo)
    }

    /// `main` with src/stats.rs; `feature` adds a percentile function and src/db.rs.
    pub fn with_feature() -> Repo {
        let repo = Repo::init();
        repo.write("src/stats.rs", STATS);
        repo.write("README.md", "# Tools\n");
        repo.commit("first");
        repo.branch("feature");
        repo.write("src/stats.rs", &format!("{STATS}{PERCENTILE}"));
        repo.write("src/db.rs", DB);
        repo.commit("percentile and users");
        Repo(repo)
    }
}

pub fn config() -> Config {
    Config::default()
}

pub fn usage() -> Usage {
    Usage {
        input_tokens: 1_000,
        output_tokens: 100,
        cached_input_tokens: 0,
    }
}

pub use bugloop_testkit::model::finding;

/// The feature branch's off-by-one in `percentile`, as the model reports it at `line`.
pub fn off_by_one(line: u32) -> Value {
    finding(
        "src/stats.rs",
        line,
        "sorted[index]",
        "Index out of bounds when p is 1.0",
        "With p = 1.0 the index equals the length and the lookup panics.",
        7,
        "logic",
    )
}

/// The off-by-one in `percentile` in a few words, scored `score`, as the model reports it at
/// `line`.
pub fn index_past_end(line: u32, score: u8) -> Value {
    finding(
        "src/stats.rs",
        line,
        "sorted[index]",
        "Index out of bounds when p is 1.0",
        "p = 1.0 indexes one past the end.",
        score,
        "logic",
    )
}

/// The feature branch's SQL injection in `find_user`, as the model reports it at `line`.
pub fn sql_injection(line: u32) -> Value {
    finding(
        "src/db.rs",
        line,
        "let query = format!(\"SELECT * FROM users WHERE name = '{}'\", name);",
        "SQL injection through the user name",
        "The name is formatted into the SQL text; a quote in it changes the query.",
        9,
        "security",
    )
}

/// The feature branch's query built with `format!`, as the model reports it at `line` with
/// `score`.
pub fn sql_format(line: u32, score: u8) -> Value {
    finding(
        "src/db.rs",
        line,
        "format!(\"SELECT",
        "SQL built with format!",
        "Injection risk when name has quotes.",
        score,
        "security",
    )
}

/// The comments whose body starts with `tag` (one of `bugloop_loops::comment_bodies`' tags).
pub fn tagged<'c>(comments: &'c [Comment], tag: &str) -> Vec<&'c Comment> {
    comments
        .iter()
        .filter(|c| c.body.starts_with(tag))
        .collect()
}

/// One tools session: the findings in pass 1, the resolutions in pass 2, then passes 3 and 4.
pub fn session(findings: Vec<Value>, resolved: Vec<(String, String)>) -> ScriptedProvider {
    let turns = bugloop_testkit::model::review_turns(findings, resolved);
    ScriptedProvider::new(turns.iter().map(|turn| tool_reply(turn, usage())))
}

/// A model without tools answering once.
pub fn structured_session(answer: &Value) -> ScriptedProvider {
    let reply: ChatResponse = text_reply(answer.to_string(), usage());
    ScriptedProvider::new([reply]).with_capabilities(Capabilities {
        tools: false,
        json_schema: true,
        streaming: false,
        context_tokens: None,
        cache_at_breakpoints: false,
    })
}

fn limits(config: &Config) -> BudgetLimits {
    let b = &config.budgets;
    BudgetLimits {
        max_input_tokens: Some(b.max_input_tokens),
        max_output_tokens: Some(b.max_output_tokens),
        max_cost_usd: Some(b.max_cost_usd),
        max_turns: Some(b.max_turns),
        max_wall_time: Some(std::time::Duration::from_secs(b.max_wall_seconds)),
    }
}

/// Reviews the checked-out branch of `repo` against main and returns the report and the
/// conversation after it. After an earlier review only what changed since is shown.
pub async fn run(
    repo: &Repo,
    config: Config,
    scripted: ScriptedProvider,
) -> (ReviewReport, Vec<Comment>) {
    review_branch(repo, config, Arc::new(scripted), false).await
}

/// [`run`] with a model the caller keeps, to read what it was sent; with `full`, showing the
/// model the whole change whatever was reviewed before (`--full`).
pub async fn review_branch(
    repo: &Repo,
    config: Config,
    scripted: Arc<dyn Provider>,
    full: bool,
) -> (ReviewReport, Vec<Comment>) {
    let (_, forge) = local_forge(repo).await;
    review_on(&forge, repo, config, scripted, full).await
}

/// [`review_branch`] publishing to `forge` (one wrapping the repository's local forge).
pub async fn review_on(
    forge: &dyn Forge,
    repo: &Repo,
    config: Config,
    scripted: Arc<dyn Provider>,
    full: bool,
) -> (ReviewReport, Vec<Comment>) {
    let git = Git::open(repo.path()).unwrap();
    let change = git.select(&Selection::Branch).unwrap();
    let checkout = bugloop_loops::checkout::checkout(&git, &change).unwrap();
    let request = ReviewRequest {
        change: change.key.clone(),
        description: change.description.clone(),
        base: change.base.clone(),
        head: match &change.head {
            bugloop_git::HeadState::Commit(sha) => sha.clone(),
            other => format!("{other:?}"),
        },
        diff: bugloop_diff::parse(&change.diff),
        workspace: checkout.path().to_path_buf(),
        git_mount: checkout.git_mount(),
        clean_room: false,
        focus: None,
        full,
        summary_footer: None,
    };
    let limits = limits(&config);
    let report = with_env_on(forge, &git, config, limits, scripted, async |env| {
        review(env, request).await.unwrap()
    })
    .await;
    let comments = forge.comments(&change.key).await.unwrap();
    (report, comments)
}

/// Runs `work` in a loop environment over `git` publishing to `forge`: `model` metered against
/// `limits`, the runs recorded in a temporary directory.
pub async fn with_env_on<T>(
    forge: &dyn Forge,
    git: &Git,
    config: Config,
    limits: BudgetLimits,
    model: Arc<dyn Provider>,
    work: impl AsyncFnOnce(&LoopEnv<'_>) -> T,
) -> T {
    let meter = Arc::new(Meter::new("scripted", limits, None));
    let provider = Arc::new(Metered::new(model, meter.clone()));
    let env = LoopEnv {
        forge,
        git,
        settings: &LoopSettings::resolve(config).unwrap(),
        provider,
        meter,
        // Where bugloop keeps them, so a run finds what an earlier one on the repository left.
        runs_dir: git.runs_dir().unwrap(),
        progress: Arc::new(bugloop_loops::Silent),
        work: bugloop_loops::build::WorkTarget::LocalBranch,
    };
    work(&env).await
}

/// [`with_env_on`] over `repo` and its local forge, without budget limits.
pub async fn with_env<T>(
    repo: &Repo,
    config: Config,
    model: Arc<dyn Provider>,
    work: impl AsyncFnOnce(&LoopEnv<'_>) -> T,
) -> T {
    let (git, forge) = local_forge(repo).await;
    with_env_on(&forge, &git, config, BudgetLimits::default(), model, work).await
}

/// The conversation on `repo`'s checked-out branch, as its local forge has it.
pub async fn conversation(repo: &Repo) -> Vec<Comment> {
    let (git, forge) = local_forge(repo).await;
    forge.comments(&git.conversation_key()).await.unwrap()
}

/// `repo`'s git and its local forge, as bugloop opens them.
async fn local_forge(repo: &Repo) -> (Git, LocalForge) {
    let git = Git::open(repo.path()).unwrap();
    let forge = LocalForge::open(git.clone(), "bugloop").await.unwrap();
    (git, forge)
}

/// The parts of a report that do not depend on time, commit ids or temporary paths.
/// `text` with each short commit id (seven hex digits) as `<commit>`: the tests' commits are
/// not the same from run to run.
fn without_commits(text: &str) -> String {
    text.split(' ')
        .map(|word| {
            let bare = word.trim_end_matches([';', ',', ')', '.']);
            if bare.len() == 7 && bare.chars().all(|c| c.is_ascii_hexdigit()) {
                word.replacen(bare, "<commit>", 1)
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn digest(report: &ReviewReport) -> Value {
    json!({
        "findings": report.findings.iter().map(|f| json!({
            "id": f.finding.id.as_str(),
            "title": f.finding.title,
            "at": f.finding.location(),
            "score": f.finding.score.get(),
            "category": f.finding.category.as_str(),
            "placement": f.placement,
            "action": f.action,
            "rediscovered_as": f.rediscovered_as,
            "code": f.code,
            "note": f.note,
        })).collect::<Vec<_>>(),
        "resolved": report.resolved.iter().map(|r| json!({"id": r.id, "title": r.title, "reason": without_commits(&r.reason)})).collect::<Vec<_>>(),
        "tracked": report.tracked.iter().map(|t| json!({"id": t.id, "status": t.status, "score": t.score})).collect::<Vec<_>>(),
        "dropped": report.dropped.iter().map(|d| json!({"stage": d.stage, "title": d.title, "reason": d.reason})).collect::<Vec<_>>(),
        "changes": report.changes.iter().map(|c| json!({"stage": c.stage, "id": c.id, "note": c.note})).collect::<Vec<_>>(),
        "stages": report.stages,
        "overflow": report.overflow,
        "unreviewed": report.unreviewed,
        "ignored": report.ignored,
        "passes": report.passes.len(),
        "complete": report.complete,
        "sensitive": report.sensitive_data.sensitive,
    })
}
