//! What the reviewer is told about the repository besides the change: its own rules and whether it
//! handles personal or financial data.

use std::io::Read;
use std::path::Path;

use bugloop_config::Sensitivity;
use bugloop_report::review::RefusedFile;
use bugloop_tools::Workspace;
use serde::Serialize;

/// The rule files read, in this order (`.cursor/rules/*` in name order in its place).
pub const RULE_FILES: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    ".cursor/rules",
    ".github/copilot-instructions.md",
    ".bugloop/rules.md",
];

/// Per rule file and in total, so rules cannot crowd out the change.
pub(crate) const MAX_RULE_CHARS: usize = 12_000;
pub(crate) const MAX_RULES_TOTAL_CHARS: usize = 24_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RuleFile {
    pub path: String,
    pub text: String,
    pub truncated: bool,
}

/// Reads the files bugloop gives the model for context (rule files, README and manifests) with
/// the containment check of the tools ([`Workspace::open_file`]): the code under review is
/// untrusted, so a symlinked `AGENTS.md` must not carry a credentials file into a prompt. Every
/// refusal is kept to be reported.
#[derive(Debug)]
pub(crate) struct ContextReader {
    workspace: Result<Workspace, String>,
    refused: Vec<RefusedFile>,
}

impl ContextReader {
    pub fn new(root: &Path) -> Self {
        ContextReader {
            workspace: Workspace::new(root).map_err(|e| e.to_string()),
            refused: Vec::new(),
        }
    }

    /// The file's text (at most `max_bytes`, read lossily), or `None` when it does not exist or
    /// is refused (and then recorded).
    pub fn read(&mut self, path: &str, max_bytes: usize) -> Option<String> {
        let workspace = self.workspace.as_ref().ok()?;
        let full = workspace.root().join(path);
        // Absent is not worth a report; anything present, a dangling link included, is checked.
        full.symlink_metadata().ok()?;
        let file = match workspace.open_file(path) {
            Ok(file) => file,
            Err(refusal) => {
                self.refuse(path, refusal.to_string());
                return None;
            }
        };
        let mut bytes = Vec::new();
        let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
        if let Err(e) = file.take(limit).read_to_end(&mut bytes) {
            self.refuse(path, format!("cannot read {path}: {e}"));
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The names in `path`, sorted, when it is a directory; `None` when it is not one. A
    /// directory that leads outside the repository is refused, and its contents never listed.
    fn list(&mut self, path: &str) -> Option<Vec<String>> {
        let workspace = self.workspace.as_ref().ok()?;
        let full = workspace.root().join(path);
        if !full.is_dir() {
            return None;
        }
        if let Err(refusal) = workspace.resolve(path) {
            self.refuse(path, refusal.to_string());
            return Some(Vec::new());
        }
        let mut names: Vec<String> = std::fs::read_dir(&full)
            .into_iter()
            .flatten()
            .flatten()
            // Subdirectories are not rule files; links are read (and checked) like files.
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
            .map(|e| format!("{path}/{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        Some(names)
    }

    fn refuse(&mut self, path: &str, reason: String) {
        self.refused.push(RefusedFile {
            path: path.to_owned(),
            reason,
        });
    }

    /// What was refused so far.
    #[cfg(test)]
    pub(crate) fn refused(&self) -> &[RefusedFile] {
        &self.refused
    }

    pub fn into_refused(self) -> Vec<RefusedFile> {
        self.refused
    }
}

/// Reads the repository's rule files at head.
pub(crate) fn read_rules(reader: &mut ContextReader) -> Vec<RuleFile> {
    let mut paths = Vec::new();
    for entry in RULE_FILES {
        match reader.list(entry) {
            Some(names) => paths.extend(names),
            None => paths.push((*entry).to_owned()),
        }
    }
    let mut total = 0;
    let mut rules = Vec::new();
    for path in paths {
        let budget = MAX_RULE_CHARS.min(MAX_RULES_TOTAL_CHARS.saturating_sub(total));
        if budget == 0 {
            break;
        }
        // A few bytes over the budget, so a cut is noticed and a character split at the end is
        // not mistaken for the end of the file.
        let Some(text) = reader.read(&path, budget + 4) else {
            continue;
        };
        let (text, truncated) = cut(&text, budget);
        total += text.len();
        rules.push(RuleFile {
            path,
            text,
            truncated,
        });
    }
    rules
}

/// The rule files, each refusal told to `progress` (for the loops whose result has no report).
pub(crate) fn rules_of(root: &Path, progress: &dyn crate::Progress) -> Vec<RuleFile> {
    let mut reader = ContextReader::new(root);
    let rules = read_rules(&mut reader);
    for refused in reader.into_refused() {
        progress.event(crate::ProgressEvent::Step(format!(
            "not given to the model: {} ({})",
            refused.path, refused.reason
        )));
    }
    rules
}

/// The last `count` lines of `text`.
pub fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

/// At most `max` bytes, cut at a character boundary.
pub fn cut(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

/// Whether the +2 security promotion applies, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SensitivityVerdict {
    pub sensitive: bool,
    pub reason: String,
}

/// Files that say what a repository is about.
const DESCRIBING_FILES: &[&str] = &[
    "README.md",
    "README",
    "README.rst",
    "README.txt",
    "package.json",
    "Cargo.toml",
    "pyproject.toml",
    "setup.py",
    "go.mod",
    "composer.json",
    "Gemfile",
];

/// Words that mark personal or financial data.
const SENSITIVE_PATTERN: &str = r"(?i)\b(pii|personally identifiable|personal data|gdpr|hipaa|patient data|health records|payments?|billing|invoices?|credit cards?|card numbers?|banking|bank accounts?|financial|fintech|stripe|paypal|plaid|iban|social security|ssn)\b";

/// Decides from configuration, or (on `auto`) from the repository's README and manifests.
pub(crate) fn sensitivity(
    reader: &mut ContextReader,
    configured: Sensitivity,
) -> SensitivityVerdict {
    match configured {
        Sensitivity::Sensitive => SensitivityVerdict {
            sensitive: true,
            reason: "review.sensitive_data is `sensitive`".to_owned(),
        },
        Sensitivity::Normal => SensitivityVerdict {
            sensitive: false,
            reason: "review.sensitive_data is `normal`".to_owned(),
        },
        Sensitivity::Auto => {
            let Ok(pattern) = regex::Regex::new(SENSITIVE_PATTERN) else {
                return SensitivityVerdict {
                    sensitive: false,
                    reason: "the sensitivity pattern did not compile".to_owned(),
                };
            };
            for file in DESCRIBING_FILES {
                let Some(text) = reader.read(file, 200_000) else {
                    continue;
                };
                if let Some(found) = pattern.find(&text) {
                    return SensitivityVerdict {
                        sensitive: true,
                        reason: format!("{file} mentions {:?}", found.as_str()),
                    };
                }
            }
            SensitivityVerdict {
                sensitive: false,
                reason: "no README or manifest mentions personal or financial data".to_owned(),
            }
        }
    }
}

/// A file's text if `path` stays inside `root` and is a regular file, checked as the tools check
/// it ([`bugloop_tools::Workspace::open_file`]: symlinks leading out, `.git`, FIFOs and devices
/// are refused).
pub(crate) fn read_inside(root: &Path, path: &str) -> Option<String> {
    let safe = bugloop_domain::paths::normalize_finding_path(path).ok()?;
    read_named(root, &safe).ok().flatten()
}

/// [`read_inside`] for a file of the change's diff, named exactly as git names it (no
/// normalization, which would read ` lead.py` as `lead.py` and `x\y.py` as `x/y.py`), saying
/// why a file that is there was not read: `Ok(None)` when nothing is at `path`, `Err` when
/// something is but it is not read (a symbolic link leading out of the repository or nowhere,
/// a FIFO, ...).
pub(crate) fn read_exactly(root: &Path, path: &str) -> Result<Option<String>, String> {
    match bugloop_domain::paths::exact_form(path) {
        Some(exact) => read_named(root, &exact),
        None => Ok(None),
    }
}

fn read_named(root: &Path, path: &str) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::ffi::OsStringExt;
    let opened = Workspace::new(root).and_then(|workspace| workspace.open_file(path));
    // Only asked of the file system, never followed: what is at the name on disk?
    let on_disk = bugloop_domain::paths::path_bytes(path)
        .map(|bytes| root.join(std::ffi::OsString::from_vec(bytes)));
    let mut file = match opened {
        Ok(file) => file,
        Err(_)
            if on_disk
                .as_ref()
                .is_none_or(|p| p.symlink_metadata().is_err()) =>
        {
            return Ok(None);
        }
        Err(_) if on_disk.as_ref().is_some_and(|p| p.is_symlink()) => {
            return Err(
                "it is a symbolic link that leads out of the repository or nowhere, and is \
                 not followed"
                    .to_owned(),
            );
        }
        Err(error) => return Err(error.to_string()),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_read_in_order_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
        std::fs::create_dir_all(root.join(".bugloop")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "Use the service layer.").unwrap();
        std::fs::write(root.join(".cursor/rules/b.mdc"), "b").unwrap();
        std::fs::write(root.join(".cursor/rules/a.mdc"), "a").unwrap();
        std::fs::write(root.join(".bugloop/rules.md"), "é".repeat(MAX_RULE_CHARS)).unwrap();
        let mut reader = ContextReader::new(root);
        let rules = read_rules(&mut reader);
        let paths: Vec<_> = rules.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "AGENTS.md",
                ".cursor/rules/a.mdc",
                ".cursor/rules/b.mdc",
                ".bugloop/rules.md"
            ]
        );
        assert!(rules[3].truncated && rules[3].text.len() <= MAX_RULE_CHARS);
        assert!(reader.refused().is_empty());
    }

    #[test]
    fn rule_files_leading_outside_the_repository_are_refused_and_reported() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(
            outside.path().join("credentials"),
            "aws_secret_access_key=SECRET",
        )
        .unwrap();
        std::fs::create_dir_all(outside.path().join("rules")).unwrap();
        std::fs::write(outside.path().join("rules/x.mdc"), "SECRET rule").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        symlink(outside.path().join("credentials"), root.join("AGENTS.md")).unwrap();
        std::fs::create_dir_all(root.join(".cursor")).unwrap();
        symlink(outside.path().join("rules"), root.join(".cursor/rules")).unwrap();
        // A link that stays inside is an ordinary rule file.
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/rules.md"), "Prefer small functions.").unwrap();
        symlink("docs/rules.md", root.join("CLAUDE.md")).unwrap();
        // A FIFO would hang a plain read; it is not a regular file.
        std::fs::create_dir_all(root.join(".github")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(root.join(".github/copilot-instructions.md"))
            .status()
            .unwrap();
        assert!(fifo.success());

        let mut reader = ContextReader::new(root);
        let rules = read_rules(&mut reader);
        assert_eq!(
            rules
                .iter()
                .map(|r| (r.path.as_str(), r.text.as_str()))
                .collect::<Vec<_>>(),
            [("CLAUDE.md", "Prefer small functions.")]
        );
        let refused: Vec<_> = reader.refused().iter().map(|r| r.path.as_str()).collect();
        // Directories are listed before files are read, so `.cursor/rules` is refused first.
        assert_eq!(
            refused,
            [
                ".cursor/rules",
                "AGENTS.md",
                ".github/copilot-instructions.md"
            ]
        );
        assert!(
            reader.refused()[..2]
                .iter()
                .all(|r| r.reason.contains("outside the repository")),
            "{:?}",
            reader.refused()
        );

        // The sensitivity check reads through the same reader.
        symlink(outside.path().join("credentials"), root.join("README.md")).unwrap();
        let mut reader = ContextReader::new(root);
        let verdict = sensitivity(&mut reader, Sensitivity::Auto);
        assert!(!verdict.sensitive);
        assert_eq!(reader.refused()[0].path, "README.md");
    }

    #[test]
    fn sensitivity_from_configuration_or_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut reader = ContextReader::new(root);
        assert!(!sensitivity(&mut reader, Sensitivity::Auto).sensitive);
        assert!(sensitivity(&mut reader, Sensitivity::Sensitive).sensitive);
        std::fs::write(
            root.join("README.md"),
            "# Shop\nWe take Payments with Stripe.",
        )
        .unwrap();
        let verdict = sensitivity(&mut reader, Sensitivity::Auto);
        assert!(verdict.sensitive, "{verdict:?}");
        assert!(verdict.reason.contains("README.md"));
        assert!(!sensitivity(&mut reader, Sensitivity::Normal).sensitive);
    }
}
