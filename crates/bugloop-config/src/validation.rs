//! Checks of a configuration's values that its types cannot make: ranges, patterns, commands,
//! prefixes ([`validate`]).

use std::path::Path;

use crate::{
    Budgets, Config, ConfigError, ConvergeConfig, ModelConfig, Origin, ReviewConfig, SandboxConfig,
    commands, filter_settings, ignore_matcher, marker_syntax,
};

/// A host name as `review.web.allow` takes it: a name or an IP address, optionally `*.` first,
/// without scheme, port, path or user.
fn is_host_pattern(entry: &str) -> bool {
    let name = entry.strip_prefix("*.").unwrap_or(entry);
    !name.is_empty()
        && name.len() <= 253
        && (name.parse::<std::net::IpAddr>().is_ok()
            || name.split('.').all(|label| {
                !label.is_empty()
                    && !label.starts_with('-')
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            }))
}

/// Checks `review.enable_web` and `review.web`.
fn web_settings(review: &ReviewConfig) -> Result<(), ConfigError> {
    let invalid = |path: String, message: String| ConfigError::Invalid {
        origin: Origin::Value,
        path,
        message,
    };
    let web = &review.web;
    for (list, entries) in [("allow", &web.allow), ("allow_private", &web.allow_private)] {
        for (index, entry) in entries.iter().enumerate() {
            if !is_host_pattern(entry) {
                let host = entry
                    .split("://")
                    .last()
                    .unwrap_or(entry)
                    .split(['/', ':', '?', '#'])
                    .next()
                    .unwrap_or_default();
                return Err(invalid(
                    format!("review.web.{list}[{index}]"),
                    format!(
                        "`{entry}` is not a host name; write the host alone, like `{}`",
                        if host.is_empty() { "docs.rs" } else { host }
                    ),
                ));
            }
        }
    }
    if let Some(url) = &web.search_url {
        let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
        if !scheme_ok || !url.contains("{query}") {
            return Err(invalid(
                "review.web.search_url".to_owned(),
                format!(
                    "`{url}` must be an http(s) URL with `{{query}}` where the query goes, like \
                     `https://searx.example/search?format=json&q={{query}}`"
                ),
            ));
        }
    }
    if !(1..=16_384).contains(&web.max_kib) {
        return Err(invalid(
            "review.web.max_kib".to_owned(),
            format!("must be between 1 and 16384, not {}", web.max_kib),
        ));
    }
    if !(1..=120).contains(&web.timeout_seconds) {
        return Err(invalid(
            "review.web.timeout_seconds".to_owned(),
            format!("must be between 1 and 120, not {}", web.timeout_seconds),
        ));
    }
    if review.enable_web && web.allow.is_empty() && web.search_url.is_none() {
        return Err(invalid(
            "review.enable_web".to_owned(),
            "is true, but `review.web.allow` lists no host and `review.web.search_url` is not \
             set, so the reviewer could reach nothing; list the hosts it may read (like \
             `docs.rs`)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Where `sandbox.system_paths` may add directories to the sandbox's view.
pub const SYSTEM_PATH_ROOTS: [&str; 5] = ["/usr", "/opt", "/nix", "/snap", "/gnu"];

/// Prefixes of the variables of bugloop, the forge and a CI runner.
const RESERVED_PREFIXES: [&str; 4] = ["BUGLOOP_", "GITHUB_", "ACTIONS_", "RUNNER_"];

/// Why a variable may not be passed into the sandbox, when it may not: bugloop's, the forge's
/// or a runner's, or named like a credential.
fn credential_variable(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    if let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| upper.starts_with(**p)) {
        return Some(format!(
            "is one of bugloop's, the forge's or the runner's ({prefix}*)"
        ));
    }
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "KEY",
        "CREDENTIALS",
    ]
    .iter()
    .find(|word| upper.split('_').any(|part| part == **word))
    .map(|word| format!("is named like a credential (`{word}`)"))
}

/// Checks what serde cannot: values in range, lists that must be well-formed, and what must never
/// reach the sandbox. Each check returns the first error it finds, and they run in this order (so
/// a configuration with several errors is always told the same first one): the filter settings,
/// the marker, the commands, the protected paths, review, the minimums and maximums, sandbox, the model
/// providers' keys, converge, the model, the budgets.
pub fn validate(config: &Config) -> Result<(), ConfigError> {
    filter_settings(config)?;
    marker_syntax(config)?;
    commands("fix.verify_commands", &config.fix.verify_commands)?;
    commands("gate.commands", &config.gate.commands)?;
    commands("solve.test_commands", &config.solve.test_commands)?;
    commands("solve.coverage_command", &config.solve.coverage_command)?;
    ignore_matcher("protected_paths", &config.protected_paths)?;
    web_settings(&config.review)?;
    crate::analyzers::validate(&config.review.analyzers)?;
    dedup_overlap(&config.review)?;
    prove_score(config.review.prove.min_score)?;
    large_enough(config)?;
    tokens_per_call_within_reason(config.review.max_tokens_per_call)?;
    sandbox_sizes_within_reason(&config.sandbox)?;
    sandbox_system_paths(&config.sandbox)?;
    sandbox_env_allowlist(&config.sandbox)?;
    provider_key_variables(&config.model)?;
    converge_auditors(&config.converge)?;
    default_model(&config.model)?;
    model_prices(&config.model)?;
    labels(&config.labels)?;
    agents(&config.agents)?;
    cost_budget(&config.budgets)
}

/// Checks the accounts of `agents`: names a forge has (GitHub: letters, digits and inner
/// hyphens, at most 39 characters, an App's with `[bot]` after), and a wait that waits.
fn agents(agents: &crate::AgentsConfig) -> Result<(), ConfigError> {
    if let Some(login) = &agents.bugsolver.assignee {
        login_syntax("agents.bugsolver.assignee", login)?;
        if login.ends_with("[bot]") {
            return Err(invalid(
                "agents.bugsolver.assignee",
                format!(
                    "{login:?} is an App's account, which GitHub does not assign issues to: \
                     name a user (a machine user for the solver)"
                ),
            ));
        }
    }
    for (index, login) in agents.reviewer.logins.iter().enumerate() {
        let key = format!("agents.reviewer.logins[{index}]");
        login_syntax(&key, login)?;
        if login.eq_ignore_ascii_case("github-actions[bot]") {
            return Err(invalid(
                &key,
                "github-actions[bot] is every workflow's account (a pull request's own \
                 workflow included), not a reviewer's"
                    .to_owned(),
            ));
        }
    }
    if agents.reviewer.wait_minutes == 0 {
        return Err(invalid(
            "agents.reviewer.wait_minutes",
            "must be at least 1 (a head would be escalated before anyone could review it)"
                .to_owned(),
        ));
    }
    Ok(())
}

fn login_syntax(key: &str, login: &str) -> Result<(), ConfigError> {
    let name = login.strip_suffix("[bot]").unwrap_or(login);
    let valid = !name.is_empty()
        && name.len() <= 39
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(invalid(
            key,
            format!(
                "{login:?} is not an account name (letters, digits, inner hyphens and `_` of a \
                 managed user, at most 39, `[bot]` after an App's)"
            ),
        ))
    }
}

/// The most characters GitHub allows in a label's name.
const MAX_LABEL_CHARS: usize = 50;

/// Checks the labels bugloop puts on issues and change requests: names GitHub takes (not
/// empty, at most 50 characters, no comma, which separates labels in a listing's query, no
/// control character). A label GitHub refuses would fail a solve after it had written.
fn labels(labels: &crate::Labels) -> Result<(), ConfigError> {
    let named = [
        ("labels.trigger", &labels.trigger),
        ("labels.in_progress", &labels.in_progress),
        ("labels.needs_human", &labels.needs_human),
        ("labels.revert", &labels.revert),
        ("labels.approve", &labels.approve),
    ];
    // bugloop puts its labels on itself; one that is also the approval (or the trigger) would
    // approve (or start) what nobody asked for.
    for (index, (key, label)) in named.iter().enumerate() {
        if let Some((other, _)) = named[..index].iter().find(|(_, l)| l == label) {
            return Err(invalid(
                key,
                format!("the label {label:?} is also {other}: each label must differ"),
            ));
        }
    }
    for (key, label) in named {
        let problem = if label.trim().is_empty() {
            Some("is empty".to_owned())
        } else if label.chars().count() > MAX_LABEL_CHARS {
            Some(format!("is longer than {MAX_LABEL_CHARS} characters"))
        } else if label.contains(',') {
            Some("has a comma, which GitHub reads as two labels".to_owned())
        } else if label.chars().any(char::is_control) {
            Some("has a control character".to_owned())
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(invalid(key, format!("the label {label:?} {problem}")));
        }
    }
    Ok(())
}

/// An invalid value at `path`.
fn invalid(path: &str, message: String) -> ConfigError {
    ConfigError::Invalid {
        origin: Origin::Value,
        path: path.to_owned(),
        message,
    }
}

/// Checks `review.dedup_min_overlap`, a share.
fn dedup_overlap(review: &ReviewConfig) -> Result<(), ConfigError> {
    if !(0.0..=1.0).contains(&review.dedup_min_overlap) {
        return Err(invalid(
            "review.dedup_min_overlap",
            "must be between 0 and 1".to_owned(),
        ));
    }
    Ok(())
}

/// `review.prove.min_score` is a score (1-10), or 0 for proving off: a larger one proves nothing
/// without a word.
fn prove_score(min_score: u8) -> Result<(), ConfigError> {
    if min_score > 10 {
        return Err(invalid(
            "review.prove.min_score",
            format!("is {min_score}; a score is 1 to 10 (0 turns proving off)"),
        ));
    }
    Ok(())
}

/// Counts, sizes and durations where 0 (or a tiny value) would stop everything or mean nothing:
/// the key, its value and its least. Keys where 0 has a meaning are not here:
/// `model.max_retries` (no retry), `review.elevation_threshold` and
/// `converge.parallel_auditors` (off), `review.security_promotion`, `review.dedup_line_window`
/// (same line only), `gate.max_fix_rounds` and `solve.max_review_iterations` (no rounds),
/// `converge.parallel_from_loop` (from the first loop), `budgets.max_cost_usd` (unpriced models
/// only).
pub(crate) fn minimums(config: &Config) -> Vec<(&'static str, u64, u64)> {
    let mut minimums = model_and_review_minimums(config).to_vec();
    minimums.extend(work_minimums(config));
    minimums
}

/// [`minimums`] of the model, the budgets and the review.
fn model_and_review_minimums(config: &Config) -> [(&'static str, u64, u64); 14] {
    [
        (
            "review.analyzer_timeout_seconds",
            config.review.analyzer_timeout_seconds,
            1,
        ),
        (
            "model.connect_timeout_seconds",
            config.model.connect_timeout_seconds,
            1,
        ),
        (
            "model.idle_timeout_seconds",
            config.model.idle_timeout_seconds,
            1,
        ),
        (
            "budgets.max_input_tokens",
            config.budgets.max_input_tokens,
            1,
        ),
        (
            "budgets.max_output_tokens",
            config.budgets.max_output_tokens,
            1,
        ),
        ("budgets.max_turns", u64::from(config.budgets.max_turns), 1),
        (
            "outsiders.max_input_tokens",
            config.outsiders.max_input_tokens,
            1,
        ),
        (
            "outsiders.max_output_tokens",
            config.outsiders.max_output_tokens,
            1,
        ),
        (
            "outsiders.max_turns",
            u64::from(config.outsiders.max_turns),
            1,
        ),
        (
            "budgets.max_wall_seconds",
            config.budgets.max_wall_seconds,
            1,
        ),
        (
            "review.comment_limit",
            to_u64(config.review.comment_limit),
            1,
        ),
        (
            "review.max_tokens_per_call",
            config.review.max_tokens_per_call,
            1,
        ),
        (
            "review.max_output_tokens_per_call",
            u64::from(config.review.max_output_tokens_per_call),
            16,
        ),
        (
            "review.parallel_sessions",
            to_u64(config.review.parallel_sessions),
            1,
        ),
    ]
}

/// [`minimums`] of converge, solve and the sandbox.
fn work_minimums(config: &Config) -> [(&'static str, u64, u64); 11] {
    let sandbox = &config.sandbox;
    [
        (
            "converge.max_loops",
            u64::from(config.converge.max_loops),
            1,
        ),
        (
            "solve.max_iterations",
            u64::from(config.solve.max_iterations),
            1,
        ),
        ("solve.timeout_minutes", config.solve.timeout_minutes, 1),
        ("solve.max_diff_lines", config.solve.max_diff_lines, 1),
        (
            "sandbox.command_timeout_seconds",
            sandbox.command_timeout_seconds,
            1,
        ),
        ("sandbox.max_output_bytes", sandbox.max_output_bytes, 1),
        ("sandbox.max_processes", sandbox.max_processes, 16),
        ("sandbox.max_file_size_mb", sandbox.max_file_size_mb, 1),
        ("sandbox.tmp_size_mb", sandbox.tmp_size_mb, 1),
        (
            "sandbox.workspace_growth_mb",
            sandbox.workspace_growth_mb,
            1,
        ),
        ("sandbox.max_memory_mb", sandbox.max_memory_mb, 64),
    ]
}

/// Checks every key of [`minimums`], in its order.
fn large_enough(config: &Config) -> Result<(), ConfigError> {
    for (key, value, least) in minimums(config) {
        if value < least {
            return Err(invalid(
                key,
                format!("{value} is too small: must be at least {least}"),
            ));
        }
    }
    Ok(())
}

/// The most change one review call may be shown: more than any model's context holds, so a
/// larger `review.max_tokens_per_call` is a mistake (and would overflow what is computed from it).
const MAX_TOKENS_PER_CALL: u64 = 10_000_000;

fn tokens_per_call_within_reason(value: u64) -> Result<(), ConfigError> {
    if value > MAX_TOKENS_PER_CALL {
        return Err(invalid(
            "review.max_tokens_per_call",
            format!(
                "{value} is too large: must be at most {MAX_TOKENS_PER_CALL} (no model reads more in one call)"
            ),
        ));
    }
    Ok(())
}

/// The most MiB a sandbox size may name: more than any machine holds, and below what the
/// kernel takes as a byte count (a tmpfs of more than `i64::MAX` bytes is refused, so every
/// command, the analyzers' too, would fail).
const MAX_SANDBOX_MIB: u64 = 1 << 30;

fn sandbox_sizes_within_reason(sandbox: &SandboxConfig) -> Result<(), ConfigError> {
    for (key, value) in [
        ("sandbox.tmp_size_mb", sandbox.tmp_size_mb),
        ("sandbox.max_file_size_mb", sandbox.max_file_size_mb),
        ("sandbox.workspace_growth_mb", sandbox.workspace_growth_mb),
        ("sandbox.max_memory_mb", sandbox.max_memory_mb),
    ] {
        if value > MAX_SANDBOX_MIB {
            return Err(invalid(
                key,
                format!("{value} is too large: must be at most {MAX_SANDBOX_MIB} (1 PiB)"),
            ));
        }
    }
    Ok(())
}

/// Checks `sandbox.system_paths` against an allow-list: a directory elsewhere (`/etc/bugloop`,
/// `/srv`, `/var/lib`) can hold the host's secrets (an App's private key), and whoever writes the
/// configuration may not be whoever runs bugloop.
fn sandbox_system_paths(sandbox: &SandboxConfig) -> Result<(), ConfigError> {
    for (index, path) in sandbox.system_paths.iter().enumerate() {
        let normalized = path.trim_end_matches('/');
        let allowed = path.starts_with('/')
            && !path.split('/').any(|c| c == ".." || c == ".")
            && SYSTEM_PATH_ROOTS
                .iter()
                .any(|root| normalized == *root || normalized.starts_with(&format!("{root}/")));
        if !allowed {
            return Err(invalid(
                &format!("sandbox.system_paths[{index}]"),
                format!(
                    "`{path}`: may only be a toolchain directory under {} (home directories go in sandbox.home_dirs)",
                    SYSTEM_PATH_ROOTS.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `sandbox.env_allowlist`: variables passed into the sandbox never carry bugloop's, the
/// forge's or a runner's credentials, since a command of the change under review reads them.
fn sandbox_env_allowlist(sandbox: &SandboxConfig) -> Result<(), ConfigError> {
    for (index, name) in sandbox.env_allowlist.iter().enumerate() {
        if let Some(reason) = credential_variable(name) {
            return Err(invalid(
                &format!("sandbox.env_allowlist[{index}]"),
                format!("`{name}` {reason}: it is never passed to commands of the change"),
            ));
        }
    }
    Ok(())
}

/// Checks `model.providers.*.api_key_env`: a provider's key is never read from one of bugloop's,
/// the forge's or the runner's own variables.
fn provider_key_variables(model: &ModelConfig) -> Result<(), ConfigError> {
    for (provider, settings) in &model.providers {
        if let Some(name) = &settings.api_key_env
            && let Some(prefix) = RESERVED_PREFIXES.iter().find(|p| name.starts_with(**p))
        {
            return Err(invalid(
                &format!("model.providers.{provider}.api_key_env"),
                format!(
                    "`{name}` is one of bugloop's, the forge's or the runner's own variables \
                     ({prefix}*), not a model provider's key"
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `converge.auditors`: no more than run in parallel, each with a model string and a
/// temperature in range.
fn converge_auditors(converge: &ConvergeConfig) -> Result<(), ConfigError> {
    if converge.auditors.len() > converge.parallel_auditors as usize {
        return Err(invalid(
            "converge.auditors",
            format!(
                "lists {} auditors but converge.parallel_auditors is {}: set parallel_auditors to {} or list fewer",
                converge.auditors.len(),
                converge.parallel_auditors,
                converge.auditors.len()
            ),
        ));
    }
    for (index, auditor) in converge.auditors.iter().enumerate() {
        if let Some(model) = &auditor.model
            && (model.trim().is_empty() || !model.contains(':'))
        {
            // The item's path, not the field's, so the error points at the item's line.
            return Err(invalid(
                &format!("converge.auditors[{index}]"),
                format!(
                    "model {model:?} is not a model string; use provider:model, e.g. openai:gpt-4o-mini"
                ),
            ));
        }
        if let Some(model) = &auditor.model {
            model_file_absolute(&format!("converge.auditors[{index}]"), model)?;
        }
        if let Some(temperature) = auditor.temperature
            && !(0.0..=2.0).contains(&temperature)
        {
            return Err(invalid(
                &format!("converge.auditors[{index}]"),
                format!("temperature {temperature} is outside 0-2"),
            ));
        }
    }
    Ok(())
}

/// Checks `model.default`, a model string.
fn default_model(model: &ModelConfig) -> Result<(), ConfigError> {
    if model.default.trim().is_empty() || !model.default.contains(':') {
        return Err(invalid(
            "model.default",
            format!(
                "{:?} is not a model string; use provider:model, e.g. openai:gpt-4o or local:smollm2",
                model.default
            ),
        ));
    }
    model_file_absolute("model.default", &model.default)?;
    known_provider("model.default", model, &model.default)?;
    if let Some(dir) = &model.local_dir
        && !Path::new(dir).is_absolute()
    {
        return Err(invalid(
            "model.local_dir",
            format!("{dir:?} is relative: {RELATIVE_MODEL_FILE}"),
        ));
    }
    Ok(())
}

/// Why a model file must be named by an absolute path.
const RELATIVE_MODEL_FILE: &str = "it would be read from the working directory, which is usually \
    the tree under review (a branch could ship the model, or its answers, that reviews it); give \
    an absolute path";

/// The providers bugloop knows without configuration: the embedded model, the cassette and
/// script players, and the hosted APIs with a known address.
const BUILT_IN_PROVIDERS: &[&str] = &["local", "replay", "script", "anthropic", "openai", "ollama"];

/// A model string's provider is built in or configured (`model.providers.<name>`): an unknown
/// one fails every run, so it is said when the configuration is checked.
fn known_provider(key: &str, model: &ModelConfig, spec: &str) -> Result<(), ConfigError> {
    let Some((provider, _)) = spec.split_once(':') else {
        return Ok(());
    };
    let provider = provider.trim().to_lowercase();
    if BUILT_IN_PROVIDERS.contains(&provider.as_str()) || model.providers.contains_key(&provider) {
        return Ok(());
    }
    let mut known: Vec<&str> = BUILT_IN_PROVIDERS.to_vec();
    known.extend(model.providers.keys().map(String::as_str));
    known.sort_unstable();
    known.dedup();
    Err(invalid(
        key,
        format!(
            "{spec:?} names the provider {provider:?}, which is neither built in nor configured \
             (known: {}); configure model.providers.{provider}.base_url for an OpenAI-compatible \
             server",
            known.join(", ")
        ),
    ))
}

/// A model string that names a file (`local:` a path or `.gguf`, `replay:` and `script:`) names
/// it absolutely.
fn model_file_absolute(key: &str, model: &str) -> Result<(), ConfigError> {
    let Some((provider, name)) = model.split_once(':') else {
        return Ok(());
    };
    // As the model layer reads it (`ModelSpec::parse`): `Local: x.gguf ` is `local:x.gguf`.
    let (provider, name) = (provider.trim().to_lowercase(), name.trim());
    let names_a_file = match provider.as_str() {
        "local" => name.contains('/') || name.ends_with(".gguf"),
        "replay" | "script" => true,
        _ => false,
    };
    if names_a_file && !Path::new(name).is_absolute() {
        return Err(invalid(
            key,
            format!("{model:?} names a file by a relative path: {RELATIVE_MODEL_FILE}"),
        ));
    }
    Ok(())
}

/// Checks `model.prices`: finite and not negative.
fn model_prices(model: &ModelConfig) -> Result<(), ConfigError> {
    for (name, price) in &model.prices {
        let values = [
            Some(price.input_per_mtok),
            Some(price.output_per_mtok),
            price.cached_input_per_mtok,
        ];
        if values
            .into_iter()
            .flatten()
            .any(|v| !v.is_finite() || v < 0.0)
        {
            return Err(invalid(
                &format!("model.prices.{name}"),
                "prices must be finite and not negative".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Checks `budgets.max_cost_usd`: finite and not negative.
fn cost_budget(budgets: &Budgets) -> Result<(), ConfigError> {
    if !budgets.max_cost_usd.is_finite() || budgets.max_cost_usd < 0.0 {
        return Err(invalid(
            "budgets.max_cost_usd",
            "must be finite and not negative".to_owned(),
        ));
    }
    Ok(())
}

fn to_u64(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}
