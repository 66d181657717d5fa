//! Path rules for findings: safety and normalization, and ignore globs with gitignore semantics.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// Why a path reported by a model is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsafePath {
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path is empty")]
    Empty,
    #[error("path is absolute")]
    Absolute,
    #[error("path leaves the repository through `..`")]
    ParentTraversal,
    #[error("path contains a control character")]
    Control,
}

/// Normalizes a repository-relative path (`./a//b` -> `a/b`, `\` -> `/`) or says why it is unsafe.
pub fn normalize_finding_path(raw: &str) -> Result<String, UnsafePath> {
    if raw.contains('\0') {
        return Err(UnsafePath::Nul);
    }
    let trimmed = raw.trim();
    if trimmed.chars().any(char::is_control) {
        return Err(UnsafePath::Control);
    }
    let unified = trimmed.replace('\\', "/");
    if unified.starts_with('/') || unified.starts_with('~') || has_drive_prefix(&unified) {
        return Err(UnsafePath::Absolute);
    }
    let mut parts = Vec::new();
    for part in unified.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(UnsafePath::ParentTraversal),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(UnsafePath::Empty);
    }
    Ok(parts.join("/"))
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ignore pattern {pattern:?} (entry {}) is invalid: {message}", .index + 1)]
pub struct IgnorePatternError {
    pub index: usize,
    pub pattern: String,
    pub message: String,
}

/// Ignore patterns with `.gitignore` semantics: a pattern without a slash matches at any depth, a
/// leading slash anchors it at the root, a trailing slash matches a directory and everything below
/// it, `*` does not cross `/` but `**` does, `!` re-includes, and the last matching pattern wins.
#[derive(Debug, Clone)]
pub struct IgnoreMatcher {
    set: GlobSet,
    /// For each glob in `set`: the pattern it came from and whether it negates.
    owners: Vec<(usize, bool)>,
}

impl IgnoreMatcher {
    /// A matcher that ignores nothing.
    pub fn empty() -> Self {
        IgnoreMatcher {
            set: GlobSet::empty(),
            owners: Vec::new(),
        }
    }

    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, IgnorePatternError> {
        let mut builder = GlobSetBuilder::new();
        let mut owners = Vec::new();
        for (index, raw) in patterns.iter().enumerate() {
            let raw = raw.as_ref();
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (negated, body) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let dir_only = body.ends_with('/');
            let body = body.trim_end_matches('/');
            if body.is_empty() {
                return Err(IgnorePatternError {
                    index,
                    pattern: raw.to_owned(),
                    message: "pattern matches nothing".to_owned(),
                });
            }
            let anchored = body.contains('/');
            let body = body.trim_start_matches('/');
            let base = if anchored {
                body.to_owned()
            } else {
                format!("**/{body}")
            };
            let mut globs = vec![format!("{base}/**")];
            if !dir_only {
                globs.push(base);
            }
            for glob in globs {
                let compiled = compile(&glob).map_err(|error| IgnorePatternError {
                    index,
                    pattern: raw.to_owned(),
                    message: error.kind().to_string(),
                })?;
                builder.add(compiled);
                owners.push((index, negated));
            }
        }
        let set = builder.build().map_err(|error| IgnorePatternError {
            index: 0,
            pattern: String::new(),
            message: error.to_string(),
        })?;
        Ok(IgnoreMatcher { set, owners })
    }

    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// Whether a normalized repository-relative path is ignored; returns the deciding pattern's
    /// index when it is.
    pub fn matched(&self, path: &str) -> Option<usize> {
        let mut decisive: Option<(usize, bool)> = None;
        for glob_index in self.set.matches(path) {
            if let Some(&(pattern, negated)) = self.owners.get(glob_index)
                && decisive.is_none_or(|(best, _)| pattern >= best)
            {
                decisive = Some((pattern, negated));
            }
        }
        match decisive {
            Some((pattern, false)) => Some(pattern),
            _ => None,
        }
    }

    pub fn is_ignored(&self, path: &str) -> bool {
        self.matched(path).is_some()
    }
}

fn compile(glob: &str) -> Result<Glob, globset::Error> {
    GlobBuilder::new(glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_and_refuses() {
        assert_eq!(
            normalize_finding_path("./src//lib.rs").unwrap(),
            "src/lib.rs"
        );
        assert_eq!(normalize_finding_path("src\\win.rs").unwrap(), "src/win.rs");
        assert_eq!(normalize_finding_path("a/./b").unwrap(), "a/b");
        assert_eq!(
            normalize_finding_path("/etc/passwd"),
            Err(UnsafePath::Absolute)
        );
        assert_eq!(normalize_finding_path("C:\\x"), Err(UnsafePath::Absolute));
        assert_eq!(normalize_finding_path("~/x"), Err(UnsafePath::Absolute));
        assert_eq!(
            normalize_finding_path("a/../../x"),
            Err(UnsafePath::ParentTraversal)
        );
        assert_eq!(normalize_finding_path("a\0b"), Err(UnsafePath::Nul));
        assert_eq!(normalize_finding_path("./"), Err(UnsafePath::Empty));
        assert_eq!(normalize_finding_path("a\nb"), Err(UnsafePath::Control));
    }

    #[test]
    fn gitignore_semantics() {
        let m = IgnoreMatcher::new(&[
            "*.lock",
            "/build",
            "docs/",
            "vendor/**/*.js",
            "!keep.lock",
            "# comment",
        ])
        .unwrap();
        assert!(m.is_ignored("Cargo.lock"));
        assert!(m.is_ignored("deep/dir/yarn.lock"));
        assert!(!m.is_ignored("deep/keep.lock"));
        assert!(m.is_ignored("build/out.rs"));
        assert!(m.is_ignored("build"));
        assert!(!m.is_ignored("src/build/x.rs"));
        assert!(m.is_ignored("docs/a.md"));
        assert!(m.is_ignored("src/docs/a.md"));
        assert!(m.is_ignored("vendor/a/b/c.js"));
        assert!(!m.is_ignored("src/lib.rs"));
        assert!(!m.is_ignored("x.lockfile"));
    }

    #[test]
    fn bad_pattern_is_named() {
        let error = IgnoreMatcher::new(&["ok", "a[b"]).unwrap_err();
        assert_eq!(error.index, 1);
        assert!(error.to_string().contains("a[b"));
    }
}
