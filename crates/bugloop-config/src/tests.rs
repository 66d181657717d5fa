use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    from_yaml(text, Path::new(".bugloop/config.yml"))
}

/// Loads `text` as a repository's config file and returns the error, with the temporary directory
/// shown as `<repo>`.
fn err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".bugloop")).unwrap();
    std::fs::write(dir.path().join(CONFIG_PATH), text).unwrap();
    let error = load(dir.path(), None, Vec::new()).unwrap_err().to_string();
    error.replace(&dir.path().display().to_string(), "<repo>")
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
        "identity:\n  marker_prefix: \"a b\"\n",
        "model:\n  default: gpt-4o\n",
        "model:\n  prices:\n    openai:x: {input_per_mtok: 1}\n",
        "sandbox:\n  when_unconfined: maybe\n",
    ];
    let mut report = String::new();
    for case in cases {
        report.push_str(&format!("{case:?}\n  => {}\n", err(case)));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn the_specs_own_config_files_load() {
    // bugloop-architecture.md's example, verbatim.
    let config = parse(
        "labels:\n  trigger: \"bug:autofix\"\n  in-progress: \"bugloop:solving\"\n  needs-human: \"bugloop:escalated\"\n\nlimits:\n  max_ralph_iterations: 10\n  max_review_iterations: 5\n  timeout_minutes: 30\n  max_diff_lines: 500\n\nbranch_prefix: \"bugloop/\"\n\nagents:\n  bugsolver:\n    assignee: \"bugsolver-bot\"\n  reviewer:\n    # CodeRabbit handles this automatically\n    external: true\n",
    )
    .unwrap();
    assert_eq!(config.solve.max_iterations, 10);
    assert_eq!(
        config.agents.bugsolver.assignee.as_deref(),
        Some("bugsolver-bot")
    );
    assert!(config.agents.reviewer.external);
    // The reviewer's and bugbot's setting names.
    let config = parse(
        "review:\n  problem_score_threshold: 6\n  score_elevation_threshold: 5\n  bugbot-severity: medium\n  bugbot-comment-limit: 10\n  ai-ignore-files: [\"*.md\"]\n  enable_web: true\nfix:\n  bugbot-fix-verify-commands: [npm test]\n",
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
    for (var, value) in [
        ("BUGLOOP_REVIEW__THRESOLD", "8"),
        ("BUGLOOP_REVIEW__THRESHOLD", "eleven"),
        ("BUGLOOP_REVIEW__THRESHOLD__X", "1"),
        ("BUGLOOP_NOPE", "1"),
    ] {
        let error =
            apply_env(Config::default(), vec![(var.to_owned(), value.to_owned())]).unwrap_err();
        report.push_str(&format!("{var}={value}\n  => {error}\n"));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn load_reads_the_repository_file() {
    let dir = std::env::temp_dir().join(format!("bugloop-config-test-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".bugloop")).unwrap();
    std::fs::write(dir.join(CONFIG_PATH), "review:\n  comment_limit: 3\n").unwrap();
    let loaded = load(&dir, None, Vec::new()).unwrap();
    assert_eq!(loaded.config.review.comment_limit, 3);
    assert!(loaded.file.is_some());
    let missing = load(&dir, Some(&dir.join("nope.yml")), Vec::new()).unwrap_err();
    assert!(missing.to_string().contains("nope.yml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn schema_lists_every_section() {
    let schema = schema();
    let properties = schema["properties"].as_object().unwrap();
    for key in [
        "model",
        "budgets",
        "review",
        "identity",
        "fix",
        "gate",
        "converge",
        "solve",
        "labels",
        "branch_prefix",
        "protected_paths",
        "sandbox",
    ] {
        assert!(properties.contains_key(key), "{key}");
    }
    assert_eq!(
        schema["additionalProperties"],
        serde_json::Value::Bool(false)
    );
}
