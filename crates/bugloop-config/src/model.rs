//! The configuration's types, with the spec's defaults. Every struct refuses unknown keys.

use std::collections::BTreeMap;

use bugloop_domain::safety::CommandList;
use bugloop_domain::{Score, Severity};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `.bugloop/config.yml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Which model runs bugloop's agents, and how to reach providers.
    pub model: ModelConfig,
    /// Hard limits for one run; reaching one stops the run.
    pub budgets: Budgets,
    /// Detection and review: thresholds, filters, publishing.
    pub review: ReviewConfig,
    /// Who bugloop is on the forge, and how its comments are marked.
    pub identity: IdentityConfig,
    /// Fix and do requests: commands that must pass before a commit.
    pub fix: FixConfig,
    /// Formatters and linters run before every converge audit.
    pub gate: GateConfig,
    /// The audit-fix loop.
    pub converge: ConvergeConfig,
    /// The solve loop (error report -> issue -> draft PR -> ready). `limits` is the spec's name.
    #[serde(alias = "limits")]
    pub solve: SolveConfig,
    /// Labels bugloop reads and writes on issues.
    pub labels: Labels,
    /// Prefix of the branches bugloop creates.
    pub branch_prefix: String,
    /// Paths no agent may change (gitignore-style globs).
    pub protected_paths: Vec<String>,
    /// How agent processes are confined.
    pub sandbox: SandboxConfig,
    /// How bugloop answers people without write access (an outsider, a fork's author).
    pub outsiders: OutsidersConfig,
    /// Who solves issues and who reviews the drafts (the spec's `agents` section).
    pub agents: AgentsConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model: ModelConfig::default(),
            budgets: Budgets::default(),
            review: ReviewConfig::default(),
            identity: IdentityConfig::default(),
            fix: FixConfig::default(),
            gate: GateConfig::default(),
            converge: ConvergeConfig::default(),
            solve: SolveConfig::default(),
            labels: Labels::default(),
            branch_prefix: "bugloop/".to_owned(),
            protected_paths: vec![
                ".github/workflows/**".to_owned(),
                // Local actions: workflows run them with their secrets (`uses: ./.github/...`).
                ".github/actions/**".to_owned(),
                ".bugloop/**".to_owned(),
                ".git/**".to_owned(),
            ],
            sandbox: SandboxConfig::default(),
            outsiders: OutsidersConfig::default(),
            agents: AgentsConfig::default(),
        }
    }
}

/// The solve pipeline's actors: the account an issue is assigned to while bugloop works on it,
/// and whether bugloop or an external reviewer reviews its drafts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AgentsConfig {
    pub bugsolver: BugsolverConfig,
    pub reviewer: ReviewerConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BugsolverConfig {
    /// The login an issue is assigned to when bugloop takes it, and unassigned from when it is
    /// escalated or reopened (a user: GitHub assigns no App). Unset: nobody is assigned.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_])){0,38}$"))]
    pub assignee: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewerConfig {
    /// Drafts are reviewed by another tool (CodeRabbit and the like) or a person, not by
    /// bugloop: each head waits for their review, and their threads are addressed.
    pub external: bool,
    /// The external reviewer's accounts (`coderabbitai[bot]`): the review awaited is theirs, and
    /// their threads are addressed as a writer's. Empty: a review by anyone who may change the
    /// repository.
    #[schemars(inner(regex(
        pattern = r"^[A-Za-z0-9_](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_])){0,38}(?:\[bot\])?$"
    )))]
    pub logins: Vec<String>,
    /// How long a head waits for the external review before the issue is escalated.
    #[schemars(range(min = 1))]
    pub wait_minutes: u64,
}

impl Default for ReviewerConfig {
    fn default() -> Self {
        ReviewerConfig {
            external: false,
            logins: Vec::new(),
            wait_minutes: 120,
        }
    }
}

/// Answers to comments from people without write access: anyone can comment on a public
/// repository, and each answer spends the model. Their comments never change files; their
/// questions and disputes are answered within a rate per repository, each under a small budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct OutsidersConfig {
    /// Answers to them in any hour, over the whole repository (0: none at all). Counted from
    /// bugloop's own answers on the forge, so every run and server sees the same count.
    pub answers_per_hour: u32,
    /// Reviews of pull requests by them in any hour (every push counts), over the whole
    /// repository (0: none). Counted from bugloop's own summaries on the forge, so every run
    /// and server sees the same count; the rest are said once on the pull request and reviewed
    /// when the hour allows.
    pub reviews_per_hour: u32,
    /// Reviews of one such author's pull requests in any hour (0: none).
    pub reviews_per_author_per_hour: u32,
    /// The model's input tokens for one answer (its intent, the answer, a dispute).
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    pub max_turns: u32,
}

impl Default for OutsidersConfig {
    fn default() -> Self {
        OutsidersConfig {
            answers_per_hour: 5,
            reviews_per_hour: 10,
            reviews_per_author_per_hour: 2,
            max_input_tokens: 60_000,
            max_output_tokens: 4_000,
            max_turns: 8,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `openai:<model>`, `anthropic:<model>`, `ollama:<model>`, `local:<name or path>` or
    /// `replay:<cassette>`.
    pub default: String,
    /// Per-provider connection settings, keyed by provider name.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Prices in US dollars per million tokens, keyed by model string; unknown models are limited
    /// by tokens only.
    pub prices: BTreeMap<String, Price>,
    /// Directory of `local:<name>` models (default: `$BUGLOOP_MODEL_DIR`, else
    /// `~/.local/share/bugloop/models`).
    pub local_dir: Option<String>,
    pub connect_timeout_seconds: u64,
    /// A response that sends nothing for this long is abandoned.
    pub idle_timeout_seconds: u64,
    pub max_retries: u32,
}

impl Default for ModelConfig {
    fn default() -> Self {
        let provider = |base: &str, key: Option<&str>| ProviderConfig {
            base_url: Some(base.to_owned()),
            api_key_env: key.map(str::to_owned),
            json_schema: None,
        };
        let providers = BTreeMap::from([
            (
                "openai".to_owned(),
                provider("https://api.openai.com/v1", Some("OPENAI_API_KEY")),
            ),
            (
                "anthropic".to_owned(),
                provider("https://api.anthropic.com", Some("ANTHROPIC_API_KEY")),
            ),
            (
                "ollama".to_owned(),
                provider("http://127.0.0.1:11434/v1", None),
            ),
        ]);
        let price = |input: f64, cached: f64, output: f64| Price {
            input_per_mtok: input,
            cached_input_per_mtok: Some(cached),
            output_per_mtok: output,
        };
        let prices = BTreeMap::from([
            ("openai:gpt-4o".to_owned(), price(2.5, 1.25, 10.0)),
            ("openai:gpt-4o-mini".to_owned(), price(0.15, 0.075, 0.6)),
            ("openai:gpt-4.1".to_owned(), price(2.0, 0.5, 8.0)),
            ("openai:gpt-4.1-mini".to_owned(), price(0.4, 0.1, 1.6)),
            (
                "anthropic:claude-sonnet-4-5".to_owned(),
                price(3.0, 0.3, 15.0),
            ),
            (
                "anthropic:claude-opus-4-1".to_owned(),
                price(15.0, 1.5, 75.0),
            ),
            (
                "anthropic:claude-haiku-4-5".to_owned(),
                price(1.0, 0.1, 5.0),
            ),
        ]);
        ModelConfig {
            default: "local:smollm2".to_owned(),
            providers,
            prices,
            local_dir: None,
            connect_timeout_seconds: 10,
            idle_timeout_seconds: 120,
            max_retries: 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    pub base_url: Option<String>,
    /// Name of the environment variable that holds the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Whether an OpenAI-compatible server honours `response_format: json_schema` (default: only
    /// `openai`); otherwise bugloop instructs, validates and repairs.
    pub json_schema: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_per_mtok: Option<f64>,
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Budgets {
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
    /// US dollars; only enforced for models with a price.
    pub max_cost_usd: f64,
    pub max_turns: u32,
    pub max_wall_seconds: u64,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_input_tokens: 2_000_000,
            max_output_tokens: 200_000,
            max_cost_usd: 5.0,
            max_turns: 80,
            max_wall_seconds: 30 * 60,
        }
    }
}

/// Whether the repository handles personal or financial data (for the +2 security promotion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Sensitivity {
    /// Decide from the repository (package manifests, README).
    #[default]
    Auto,
    Sensitive,
    Normal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// Findings scoring below this (1-10) are not published.
    #[serde(alias = "problem_score_threshold")]
    pub threshold: Score,
    /// This many below-threshold findings on one file combine into one elevated finding; 0 turns
    /// elevation off.
    #[serde(alias = "score_elevation_threshold")]
    pub elevation_threshold: usize,
    /// Findings below this score never combine: nits stay silent.
    pub elevation_min_score: Score,
    /// Minimum severity to publish.
    #[serde(alias = "bugbot-severity")]
    pub severity_floor: Severity,
    /// Maximum individual finding comments per run; the rest go into one overflow comment.
    #[serde(alias = "bugbot-comment-limit")]
    pub comment_limit: usize,
    pub sensitive_data: Sensitivity,
    /// Points added to security findings when the data is sensitive (capped at 10).
    pub security_promotion: u8,
    /// Paths excluded from review and reporting (gitignore-style).
    #[serde(alias = "ai-ignore-files")]
    pub ignore_files: Vec<String>,
    /// Findings this many lines apart or closer can be duplicates.
    pub dedup_line_window: u32,
    /// Share of significant words two findings must have in common to be duplicates.
    pub dedup_min_overlap: f64,
    /// Token budget for the change shown to the model in one call.
    pub max_tokens_per_call: u64,
    /// Most tokens one model answer may take (a small local model's own cap is lower still:
    /// bugloop sizes its answers to its context).
    pub max_output_tokens_per_call: u32,
    /// Parts of a large change reviewed at once (each its own model session; they share the
    /// run's budget, and a part that exhausts it stops the parts not started). 1: one after
    /// another.
    pub parallel_sessions: usize,
    /// Let the reviewer search and fetch the web (library documentation, CVEs) through
    /// `web_search` and `web_fetch`, limited to the hosts of `review.web.allow`.
    pub enable_web: bool,
    /// Where the reviewer's web tools may go, and how much they may read.
    pub web: WebConfig,
    /// Proving serious findings with a failing test before they are published.
    pub prove: ProveConfig,
    /// The static analyzers the review stands on (docs/analyzers.md): `auto` (every built-in
    /// whose tool is installed and whose files the change touches), a list of built-in names and
    /// tools that write SARIF (`{name, command, sarif, files, config}`), or `[]` for none.
    pub analyzers: crate::AnalyzerList,
    /// What becomes of the analyzers' hits on the change: `auto` (the model triages them when
    /// it uses tools; with the embedded model they are published), `triage` or `publish`.
    pub analyzer_findings: crate::AnalyzerFindings,
    /// Longest one analyzer may run, in seconds.
    pub analyzer_timeout_seconds: u64,
}

/// What happens to a finding whose test passes at head (`review.prove.unreproduced`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Unreproduced {
    /// Published, marked "not reproduced".
    #[default]
    Keep,
    /// Published with its score lowered by 2.
    Lower,
    /// Not published: kept in the report with the test that passed.
    Drop,
}

/// Proven findings (`review.prove`): for the most severe findings a Build agent writes the
/// smallest test that shows the problem, bugloop runs it in the sandbox at head, and a finding is
/// proven only if the test fails there for the reason the finding states. Trusted-only: the
/// test command runs in the host's sandbox, so a branch never chooses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ProveConfig {
    /// Findings scoring at least this are proven; 0 turns proving off.
    pub min_score: u8,
    /// At most this many findings are proven per review, most severe first.
    pub max_findings: usize,
    /// How one test runs, with `{test}` where its path goes (`python3 -m pytest -q {test}`,
    /// `npx jest {test}`); `{test_name}` is its file name without extension. Only the new test
    /// ever runs; without this, nothing is proven.
    pub test_command: Option<String>,
    /// What a finding whose test passes at head becomes.
    pub unreproduced: Unreproduced,
    /// Longest one proof may take (the agent writing the test and the test's run).
    pub timeout_seconds: u64,
    /// Commit a proven finding's test with its fix, as a regression test (otherwise the fix
    /// must make it pass, and it is left out of the commit).
    pub commit_tests: bool,
}

impl Default for ProveConfig {
    fn default() -> Self {
        ProveConfig {
            min_score: 7,
            max_findings: 3,
            test_command: None,
            unreproduced: Unreproduced::Keep,
            timeout_seconds: 120,
            commit_tests: false,
        }
    }
}

/// The reviewer's web access (`review.enable_web`). The code under review is written by whoever
/// opened the change, and it steers the model: the allow-list is what keeps a prompt injection from
/// sending the code, or requests, anywhere else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Hosts `web_fetch` may read: a name (`docs.rs`), or `*.` and a name for its subdomains
    /// (`*.python.org`). Redirects are followed only to these hosts.
    pub allow: Vec<String>,
    /// Hosts (of `allow` or of `search_url`) that may resolve to private, loopback or link-local
    /// addresses, such as an internal documentation server; every other host that does is refused.
    pub allow_private: Vec<String>,
    /// A search endpoint answering SearXNG's JSON (`results: [{title, url, content}]`), with
    /// `{query}` where the query goes, e.g. `https://searx.example/search?format=json&q={query}`.
    /// Without one only `web_fetch` is offered.
    pub search_url: Option<String>,
    /// Largest response read, in KiB; the rest is cut.
    pub max_kib: u32,
    /// Longest a request may take, redirects included.
    pub timeout_seconds: u32,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            allow: Vec::new(),
            allow_private: Vec::new(),
            search_url: None,
            max_kib: 256,
            timeout_seconds: 15,
        }
    }
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig {
            threshold: Score::saturating(5),
            elevation_threshold: 5,
            elevation_min_score: Score::saturating(3),
            severity_floor: Severity::Low,
            comment_limit: 20,
            sensitive_data: Sensitivity::Auto,
            security_promotion: 2,
            ignore_files: Vec::new(),
            dedup_line_window: 3,
            dedup_min_overlap: 0.5,
            max_tokens_per_call: 24_000,
            max_output_tokens_per_call: 4_096,
            parallel_sessions: 4,
            enable_web: false,
            web: WebConfig::default(),
            prove: ProveConfig::default(),
            analyzers: crate::AnalyzerList::default(),
            analyzer_findings: crate::AnalyzerFindings::default(),
            analyzer_timeout_seconds: 120,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct IdentityConfig {
    /// Name bugloop writes as in the local store.
    pub local_bot_name: String,
    pub marker_prefix: String,
    /// Marker prefixes read (and migrated) besides `marker_prefix`.
    pub legacy_marker_prefixes: Vec<String>,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            local_bot_name: "bugloop".to_owned(),
            marker_prefix: bugloop_domain::marker::DEFAULT_MARKER_PREFIX.to_owned(),
            legacy_marker_prefixes: vec![bugloop_domain::marker::LEGACY_MARKER_PREFIX.to_owned()],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FixConfig {
    /// Run (without a shell, in the sandbox) after every fix or do request; all must pass before a
    /// commit. At most 20. An entry is a command (`cargo test`) or an explicit shell script
    /// (`{shell: "make lint && make test"}`, run as `sh -c`). Trusted configuration only.
    #[serde(alias = "bugbot-fix-verify-commands")]
    pub verify_commands: CommandList,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GateConfig {
    /// Formatters and linters run before each audit (same rules as verify commands).
    pub commands: CommandList,
    /// Gate-fix rounds before the loop stops with an error.
    pub max_fix_rounds: u32,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            commands: CommandList::default(),
            max_fix_rounds: 5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ConvergeConfig {
    /// Audit loops before the loop stops with "cap reached".
    pub max_loops: u32,
    /// From this loop on, several auditors and a validator run (when `parallel_auditors` > 0).
    pub parallel_from_loop: u32,
    /// Auditors in parallel mode (they run at the same time); 0 turns it off.
    pub parallel_auditors: u32,
    /// The parallel auditors in order: each one's focus and, optionally, its own model and
    /// temperature. Auditors without an entry take the next focus of correctness, security,
    /// concurrency_and_resources, error_handling and the default model. At most
    /// `parallel_auditors` entries.
    pub auditors: Vec<AuditorConfig>,
    /// What checks the audits' findings after the code checks (grounding, merging): `code`
    /// (nothing more) or `model` (the default model judges each finding against the code; the
    /// ones it rejects are quarantined with its reason).
    pub validator: Validator,
}

impl Default for ConvergeConfig {
    fn default() -> Self {
        ConvergeConfig {
            max_loops: 10,
            parallel_from_loop: 4,
            parallel_auditors: 0,
            auditors: Vec::new(),
            validator: Validator::Code,
        }
    }
}

/// One parallel auditor of the converge loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditorConfig {
    pub focus: AuditFocus,
    /// A model string (`provider:model`); default: the run's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature, 0-2; default: the provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// What a parallel auditor looks for first (its prompt is `prompts/audit-focus-<focus>.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum AuditFocus {
    Correctness,
    Security,
    ConcurrencyAndResources,
    ErrorHandling,
}

impl AuditFocus {
    /// The rotation auditors without an entry in `converge.auditors` take.
    pub const ALL: [AuditFocus; 4] = [
        AuditFocus::Correctness,
        AuditFocus::Security,
        AuditFocus::ConcurrencyAndResources,
        AuditFocus::ErrorHandling,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The converge validator after the code checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Validator {
    /// Grounding and merging only.
    #[default]
    Code,
    /// Then the default model keeps or rejects each finding, with a reason.
    Model,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SolveConfig {
    /// Build/test/evaluate iterations before escalating.
    #[serde(alias = "max_ralph_iterations")]
    pub max_iterations: u32,
    /// Review-resolution rounds on the draft pull request.
    pub max_review_iterations: u32,
    pub timeout_minutes: u64,
    /// A change larger than this is escalated instead of marked ready.
    pub max_diff_lines: u64,
    /// Commands that must pass (build and tests), same rules as verify commands.
    pub test_commands: CommandList,
    /// Commands that measure coverage, run on the base and on the solution: the draft says
    /// both and the change (the last command's summary is read: coverage.py, cargo-llvm-cov,
    /// `go test -cover`, Istanbul, Jest, lcov). Empty: coverage is not measured.
    pub coverage_command: CommandList,
    /// What an error reported again after its solution merged does (a regression).
    pub on_regression: OnRegression,
    /// Reports this soon after the merge was recorded are only counted: the code that still
    /// throws may not have been deployed with the fix yet.
    pub regression_grace_minutes: u64,
    /// `required`: a solution waits on its branch, said on the issue, until someone who may
    /// change the repository approves it (`@bugloop approve` on the issue; locally
    /// `bugloop solve N --approve`); only then is the draft opened.
    pub approval: Approval,
    /// The learning record: an issue bugloop filed from reports whose pattern (the same error,
    /// or errors of the same class) was escalated this many times, more often than it was
    /// solved, goes to a person at once instead of being solved again. 0: always try.
    pub skip_after_escalations: u32,
}

/// Whether a solution is proposed at once or after a maintainer's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    #[default]
    Auto,
    Required,
}

/// What a regression (an error reported again after its solution merged) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum OnRegression {
    /// Reopen the issue and propose reverting the merged solution (a change request whose
    /// tests have run).
    #[default]
    Revert,
    /// Reopen the issue only.
    Reopen,
    /// Count the report on the closed issue, as any repeat.
    Count,
}

impl OnRegression {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl Default for SolveConfig {
    fn default() -> Self {
        SolveConfig {
            max_iterations: 10,
            max_review_iterations: 5,
            timeout_minutes: 30,
            max_diff_lines: 500,
            test_commands: CommandList::default(),
            coverage_command: CommandList::default(),
            on_regression: OnRegression::default(),
            regression_grace_minutes: 60,
            approval: Approval::default(),
            skip_after_escalations: 3,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Labels {
    /// An issue with this label is solved by bugloop.
    pub trigger: String,
    #[serde(alias = "in-progress")]
    pub in_progress: String,
    #[serde(alias = "needs-human")]
    pub needs_human: String,
    /// Put on a change request that reverts a merged solution after a regression.
    pub revert: String,
    /// With `solve.approval: required`, put on the issue by someone who may change the
    /// repository after bugloop asked, it approves the waiting solution (as `@bugloop approve`).
    pub approve: String,
}

impl Default for Labels {
    fn default() -> Self {
        Labels {
            trigger: "bug:autofix".to_owned(),
            in_progress: "bugloop:solving".to_owned(),
            needs_human: "bugloop:escalated".to_owned(),
            revert: "bugloop:revert".to_owned(),
            approve: "bugloop:approved".to_owned(),
        }
    }
}

/// What to do where the kernel cannot confine agent processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Unconfined {
    /// Refuse to run commands.
    #[default]
    Refuse,
    /// Run them anyway, with a loud warning.
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    pub when_unconfined: Unconfined,
    /// A command running longer is killed with its whole process group.
    pub command_timeout_seconds: u64,
    /// Output kept per stream and command.
    pub max_output_bytes: u64,
    /// Environment variables passed to sandboxed commands (besides PATH, LANG, LC_ALL and HOME).
    pub env_allowlist: Vec<String>,
    /// Directories under the home directory that sandboxed commands may read (the rest of the home
    /// is hidden): toolchains, package caches. Credentials files in them are never shown.
    pub home_dirs: Vec<String>,
    /// More system directories shown read-only (toolchains outside /usr, /opt and the home).
    pub system_paths: Vec<String>,
    /// Processes and threads at once inside the sandbox.
    pub max_processes: u64,
    /// The largest file a sandboxed command may write, in MiB.
    pub max_file_size_mb: u64,
    /// Size of the sandbox's private /tmp, in MiB.
    pub tmp_size_mb: u64,
    /// How much the workspace may grow during one task (its commands together), in MiB.
    pub workspace_growth_mb: u64,
    /// Memory of all of a command's processes together, in MiB (held by a cgroup, where bugloop
    /// runs as root).
    pub max_memory_mb: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            when_unconfined: Unconfined::Refuse,
            command_timeout_seconds: 600,
            max_output_bytes: 1 << 20,
            env_allowlist: vec![
                "CARGO_HOME".to_owned(),
                "RUSTUP_HOME".to_owned(),
                "GOPATH".to_owned(),
            ],
            home_dirs: vec![".cargo".to_owned(), ".rustup".to_owned()],
            system_paths: Vec::new(),
            max_processes: 1024,
            max_file_size_mb: 1024,
            tmp_size_mb: 512,
            workspace_growth_mb: 4096,
            max_memory_mb: 8192,
        }
    }
}
