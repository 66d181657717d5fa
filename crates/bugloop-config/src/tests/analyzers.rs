//! `review.analyzers`: auto, a list or none, a bad entry named, and never the branch's choice.

use super::*;

#[test]
fn analyzers_are_auto_a_list_or_none() {
    assert_eq!(parse("").unwrap().review.analyzers, AnalyzerList::default());
    assert_eq!(
        parse("review:\n  analyzers: []\n")
            .unwrap()
            .review
            .analyzers,
        AnalyzerList::List(Vec::new())
    );
    let config = parse(
        "review:\n  analyzers:\n    - ruff\n    - name: semgrep\n      command: semgrep scan --sarif --config {base}/rules.yml {files}\n      files: ['**/*.py']\n      config: [rules.yml]\n  analyzer_findings: publish\n",
    )
    .unwrap();
    validate(&config).unwrap();
    let AnalyzerList::List(entries) = &config.review.analyzers else {
        panic!("{:?}", config.review.analyzers);
    };
    assert_eq!(entries[0], AnalyzerEntry::Name("ruff".into()));
    assert!(matches!(&entries[1], AnalyzerEntry::Sarif(t) if t.config == ["rules.yml"]));
    assert_eq!(config.review.analyzer_findings, AnalyzerFindings::Publish);
}

#[test]
fn a_bad_analyzer_entry_is_named() {
    assert_each_refused(&[
        (
            "review:\n  analyzers: [eslint]\n",
            "`review.analyzers[0]`: `eslint` is no built-in analyzer",
        ),
        (
            "review:\n  analyzers: [ruff, ruff]\n",
            "`review.analyzers[1]`: `ruff` is listed twice",
        ),
        (
            "review:\n  analyzers:\n    - name: x\n      command: semgrep --sarif | tee out\n",
            "`review.analyzers[0]`: `x`'s command:",
        ),
        (
            "review:\n  analyzers:\n    - name: x\n",
            "`review.analyzers[0]`: `x` needs a `command`",
        ),
        (
            "review:\n  analyzers:\n    - name: x\n      sarif: a.sarif\n      config: [../../etc]\n",
            "must be relative to the repository",
        ),
        (
            "review:\n  analyzer_timeout_seconds: 0\n",
            "review.analyzer_timeout_seconds",
        ),
    ]);
}

#[test]
fn a_branch_cannot_choose_the_analyzers() {
    let loaded = load_layered(&Sources {
        base: Some(SourceText::new(
            BRANCH_LABEL,
            "review:\n  analyzers: [ruff]\n",
        )),
        branch: Some(SourceText::new(
            BRANCH_LABEL,
            "review:\n  analyzers: []\n  analyzer_findings: publish\n",
        )),
        ..Sources::default()
    })
    .unwrap();
    assert_eq!(
        loaded.config.review.analyzers,
        AnalyzerList::List(vec![AnalyzerEntry::Name("ruff".into())])
    );
    assert_eq!(
        loaded.config.review.analyzer_findings,
        AnalyzerFindings::Auto
    );
    assert_eq!(loaded.ignored.len(), 2, "{:?}", loaded.ignored);
}
