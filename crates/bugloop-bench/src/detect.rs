//! `bench detect`: does bugloop find bugs? A corpus of small changes (`bench/detect/*.yaml`:
//! bugs the analyzers catch, bugs only a reviewer catches, and clean changes with lint on
//! untouched lines, style noise and safe code that looks dangerous), each made into a repository
//! and reviewed with the given model. Reported per language and overall: recall (planted bugs
//! found, by a finding on the bug's file within three lines) and precision (findings that are a
//! planted bug), for bugloop and for the yardstick: each analyzer run alone with its own defaults
//! on the changed files, its hits on the changed lines kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bugloop_app::{AppError, Models};
use bugloop_sandbox::{Policy, SandboxSettings};
use serde::{Deserialize, Serialize};

use super::review::{git, review_once};
use super::setup_error;

/// One case of the corpus.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    language: String,
    kind: Kind,
    #[serde(default)]
    by: Option<By>,
    description: String,
    #[serde(default)]
    bugs: Vec<Bug>,
    #[serde(default)]
    base: BTreeMap<String, String>,
    head: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Bug,
    Clean,
}

/// Who can catch a planted bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum By {
    Analyzer,
    Model,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bug {
    file: String,
    line: u32,
}

/// Counts for one reviewer over some cases.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    /// Planted bugs an analyzer can catch, and of those found.
    pub analyzer_bugs: usize,
    pub analyzer_bugs_found: usize,
    /// Planted bugs only a reviewer can catch, and of those found.
    pub model_bugs: usize,
    pub model_bugs_found: usize,
    /// Findings published, and of those on a planted bug.
    pub findings: usize,
    pub true_findings: usize,
    /// Clean changes, and of those with any finding.
    pub clean: usize,
    pub clean_with_findings: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.analyzer_bugs += other.analyzer_bugs;
        self.analyzer_bugs_found += other.analyzer_bugs_found;
        self.model_bugs += other.model_bugs;
        self.model_bugs_found += other.model_bugs_found;
        self.findings += other.findings;
        self.true_findings += other.true_findings;
        self.clean += other.clean;
        self.clean_with_findings += other.clean_with_findings;
    }

    /// Found of all planted bugs.
    pub fn recall(&self) -> f64 {
        ratio(
            self.analyzer_bugs_found + self.model_bugs_found,
            self.analyzer_bugs + self.model_bugs,
        )
    }

    /// Found of the bugs an analyzer can catch.
    pub fn analyzer_recall(&self) -> f64 {
        ratio(self.analyzer_bugs_found, self.analyzer_bugs)
    }

    pub fn precision(&self) -> f64 {
        ratio(self.true_findings, self.findings)
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// One case's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub language: String,
    pub bugloop: Tally,
    pub yardstick: Tally,
    pub seconds: f64,
    /// What bugloop published (file:line, source or `model`), for reading the misses.
    pub findings: Vec<String>,
}

/// The figures of `bench detect`.
#[derive(Debug, Clone, Serialize)]
pub struct DetectBench {
    pub model: String,
    pub cases: usize,
    pub by_language: BTreeMap<String, (Tally, Tally)>,
    pub bugloop: Tally,
    pub yardstick: Tally,
    pub seconds: f64,
    pub results: Vec<CaseResult>,
}

/// Reviews every case of `corpus` with `model`.
pub async fn detect(
    config: &bugloop_config::Config,
    corpus: &Path,
    model: &str,
) -> Result<DetectBench, AppError> {
    let started = Instant::now();
    let cases = load(corpus)?;
    let models = Models::new(config);
    let mut results = Vec::new();
    for (name, case) in &cases {
        results.push(run_case(config, &models, model, name, case).await?);
    }
    let mut by_language: BTreeMap<String, (Tally, Tally)> = BTreeMap::new();
    let (mut bugloop, mut yardstick) = (Tally::default(), Tally::default());
    for result in &results {
        let entry = by_language.entry(result.language.clone()).or_default();
        entry.0.add(&result.bugloop);
        entry.1.add(&result.yardstick);
        bugloop.add(&result.bugloop);
        yardstick.add(&result.yardstick);
    }
    Ok(DetectBench {
        model: model.to_owned(),
        cases: results.len(),
        by_language,
        bugloop,
        yardstick,
        seconds: started.elapsed().as_secs_f64(),
        results,
    })
}

fn load(corpus: &Path) -> Result<Vec<(String, Case)>, AppError> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(corpus)
        .map_err(|e| AppError::Invalid(format!("the corpus {}: {e}", corpus.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| AppError::Invalid(format!("{}: {e}", path.display())))?;
            let case: Case = serde_yaml_ng::from_str(&text)
                .map_err(|e| AppError::Invalid(format!("{}: {e}", path.display())))?;
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, case))
        })
        .collect()
}

/// The case as a repository: `main` holds its base, the checked-out `change` its head.
fn materialize(dir: &Path, case: &Case) -> Result<(), AppError> {
    let write = |files: &BTreeMap<String, String>| -> Result<(), AppError> {
        for (path, text) in files {
            let target = dir.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(setup_error)?;
            }
            std::fs::write(&target, text).map_err(setup_error)?;
        }
        Ok(())
    };
    git(dir, &["init", "-q", "-b", "main"])?;
    write(&case.base)?;
    std::fs::write(dir.join(".bench"), "base\n").map_err(setup_error)?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-qm", "base"])?;
    git(dir, &["switch", "-qc", "change"])?;
    write(&case.head)?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-qm", &case.description])?;
    Ok(())
}

async fn run_case(
    config: &bugloop_config::Config,
    models: &Models,
    model: &str,
    name: &str,
    case: &Case,
) -> Result<CaseResult, AppError> {
    let dir = tempfile::tempdir().map_err(setup_error)?;
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).map_err(setup_error)?;
    materialize(&repo, case)?;
    let runs = dir.path().join("runs");
    let connected = models.connect(Some(model))?;
    let started = Instant::now();
    let report = review_once(&repo, config, connected.provider, connected.meter, &runs).await?;
    let seconds = started.elapsed().as_secs_f64();
    let places: Vec<(Option<String>, Option<u32>)> = report
        .findings
        .iter()
        .map(|f| (f.finding.file.clone(), f.finding.line))
        .collect();
    let findings = report
        .findings
        .iter()
        .map(|f| {
            let by = f
                .finding
                .source
                .as_ref()
                .map_or("model".to_owned(), |s| s.found_by());
            format!("{} ({by})", f.finding.location())
        })
        .collect();
    let yardstick = yardstick(&repo).await?;
    Ok(CaseResult {
        name: name.to_owned(),
        language: case.language.clone(),
        bugloop: tally(case, &places),
        yardstick: tally(case, &yardstick),
        seconds,
        findings,
    })
}

/// Each analyzer alone on the change, its hits on the changed lines.
async fn yardstick(repo: &Path) -> Result<Vec<(Option<String>, Option<u32>)>, AppError> {
    let diff_text = std::process::Command::new("git")
        .args(["-C"])
        .arg(repo)
        .args(["diff", "main..change"])
        .output()
        .map_err(setup_error)?
        .stdout;
    let diff = bugloop_diff::parse(&diff_text);
    let mut sandbox = SandboxSettings::new(repo, Policy::ReadOnly);
    sandbox.timeout = Duration::from_secs(120);
    sandbox.max_output_bytes = 32 << 20;
    let analysis = bugloop_analyzers::analyze(bugloop_analyzers::Request {
        workspace: repo,
        diff: &diff,
        choices: bugloop_analyzers::auto(),
        sandbox,
        toolbox: bugloop_analyzers::Toolbox::from_env(),
        base_dir: None,
        base: None,
        alone: true,
    })
    .await;
    Ok(analysis
        .candidates
        .iter()
        .map(|c| (Some(c.hit.file.clone()), Some(c.hit.line)))
        .collect())
}

/// How a reviewer's findings (file and line) fare against the case's planted bugs.
fn tally(case: &Case, findings: &[(Option<String>, Option<u32>)]) -> Tally {
    let near = |bug: &Bug, (file, line): &(Option<String>, Option<u32>)| {
        file.as_deref() == Some(bug.file.as_str())
            && line.is_some_and(|l| l.abs_diff(bug.line) <= 3)
    };
    let mut tally = Tally {
        findings: findings.len(),
        true_findings: findings
            .iter()
            .filter(|f| case.bugs.iter().any(|b| near(b, f)))
            .count(),
        ..Tally::default()
    };
    match case.kind {
        Kind::Clean => {
            tally.clean = 1;
            tally.clean_with_findings = usize::from(!findings.is_empty());
        }
        Kind::Bug => {
            let found = case
                .bugs
                .iter()
                .filter(|b| findings.iter().any(|f| near(b, f)))
                .count();
            if case.by == Some(By::Model) {
                tally.model_bugs = case.bugs.len();
                tally.model_bugs_found = found;
            } else {
                tally.analyzer_bugs = case.bugs.len();
                tally.analyzer_bugs_found = found;
            }
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_counts_within_three_lines_of_a_bug_on_its_file() {
        let case = Case {
            language: "python".into(),
            kind: Kind::Bug,
            by: Some(By::Analyzer),
            description: String::new(),
            bugs: vec![Bug {
                file: "a.py".into(),
                line: 10,
            }],
            base: BTreeMap::new(),
            head: BTreeMap::new(),
        };
        let t = tally(
            &case,
            &[
                (Some("a.py".into()), Some(12)),
                (Some("b.py".into()), Some(10)),
                (None, None),
            ],
        );
        assert_eq!((t.analyzer_bugs, t.analyzer_bugs_found), (1, 1));
        assert_eq!((t.findings, t.true_findings), (3, 1));
        let missed = tally(&case, &[(Some("a.py".into()), Some(14))]);
        assert_eq!(missed.analyzer_bugs_found, 0);
    }

    #[test]
    fn every_case_of_the_corpus_reads() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/detect");
        let cases = load(&corpus).unwrap();
        assert!(cases.len() >= 40, "{} cases", cases.len());
        for (name, case) in &cases {
            assert!(!case.head.is_empty(), "{name}");
            match case.kind {
                Kind::Bug => assert!(!case.bugs.is_empty() && case.by.is_some(), "{name}"),
                Kind::Clean => assert!(case.bugs.is_empty(), "{name}"),
            }
            for bug in &case.bugs {
                // A bug in a file the change does not edit (a caller it breaks) is the base's.
                let text = case
                    .head
                    .get(&bug.file)
                    .or_else(|| case.base.get(&bug.file))
                    .unwrap_or_else(|| panic!("{name}: {}", bug.file));
                assert!(
                    bug.line as usize <= text.lines().count(),
                    "{name}: line {} of {}",
                    bug.line,
                    bug.file
                );
            }
        }
    }
}
