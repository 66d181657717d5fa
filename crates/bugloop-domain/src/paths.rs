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
    #[error(
        "path starts with a double quote but is not a well-formed quoted name like \"bad\\377.py\""
    )]
    BadQuoting,
}

/// How a file is named in findings, prompts, comments and reports: its name when that is UTF-8
/// text that does not start with a double quote and holds no control character, otherwise git's
/// C-style quoted form with its quotes (`"bad\377.py"` for the bytes `bad\xff.py`,
/// `"deploy\t.sh"`), which names the bytes exactly, as git quotes them. So a file whose name is
/// not UTF-8 or holds a tab or a line break keeps one name, on one line, from the diff to the
/// published comment, and [`path_bytes`] turns it back into the name on disk.
pub fn display_path(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.starts_with('"') && !text.chars().any(char::is_control) => {
            text.to_owned()
        }
        _ => quote_c_style(bytes),
    }
}

/// A file's name as text, for a name in its [`display_path`] form: the quoted form unquoted
/// (a tab in a name); `None` when the name is not UTF-8 (or the form is malformed).
pub fn text_name(display: &str) -> Option<String> {
    String::from_utf8(path_bytes(display)?).ok()
}

/// A name in its [`display_path`] form, always in git's quoted form: what a reader of paths takes
/// as these exact bytes, never trimmed or rewritten (` lead.py`, `x\y.py`, `~x.py`).
pub fn exact_form(display: &str) -> Option<String> {
    Some(quote_c_style(&path_bytes(display)?))
}

/// The name a forge knows a file by, for a name in its [`display_path`] form: [`text_name`],
/// else the form as it is.
pub fn forge_path(display: &str) -> String {
    text_name(display).unwrap_or_else(|| display.to_owned())
}

/// How a prompt names a file whose name (in its [`display_path`] form) is `path`: as it is,
/// unless it holds a line break, another control character or a line separator, then git's
/// quoted form, so a name cannot add a line of its own to a prompt (a heading, an instruction, a
/// finding). The quoted form names the same bytes: a tool call that copies it back reaches the
/// file ([`path_bytes`]), and so does a finding on a name with a line separator
/// ([`normalize_finding_path`]).
pub fn prompt_path(path: &str) -> std::borrow::Cow<'_, str> {
    let breaks = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if path.chars().any(breaks) {
        std::borrow::Cow::Owned(quote_c_style(path.as_bytes()))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// The known file name (in its display form) that a model meant by `reported`, when `reported`
/// is not one itself but another way of writing a name that is not UTF-8: the quoted form
/// without its quotes (`caf\351.txt`), the bytes read as Latin-1 (`café.txt` for `caf\xe9`),
/// or read lossily as the tools list them (`caf\u{FFFD}.txt`). A model copies what it was shown
/// or what it guesses the name is; each of these names one file, so it is read back as that
/// file rather than dropped as "does not exist". `None` when `reported` is known as it is or
/// matches no known name.
pub fn known_name<'a>(reported: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let reported = reported.trim().trim_start_matches("./");
    let mut candidates = Vec::new();
    for name in known {
        if name == reported {
            return None;
        }
        if !name.starts_with('"') {
            continue;
        }
        let Some(bytes) = path_bytes(name) else {
            continue;
        };
        let unquoted = name.trim_start_matches('"').trim_end_matches('"');
        let latin1: String = bytes.iter().map(|&b| char::from(b)).collect();
        let lossy = String::from_utf8_lossy(&bytes);
        if [unquoted, latin1.as_str(), lossy.as_ref()].contains(&reported) {
            candidates.push(name);
        }
    }
    // Two names read the same way (two lossy names differing only in bytes shown as U+FFFD):
    // which one was meant cannot be told.
    match candidates.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// git's C-style quoting (`core.quotePath`): `"`, `\\`, control bytes and every byte from 0x80
/// escaped.
fn quote_c_style(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for &byte in bytes {
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            0x20..=0x7e => out.push(char::from(byte)),
            other => out.push_str(&format!("\\{other:03o}")),
        }
    }
    out.push('"');
    out
}

/// The name on disk of a path as [`display_path`] shows it: a quoted form is unquoted, anything
/// else is its own bytes. `None` for a quoted form that is not well formed (not closed, text
/// after the closing quote, an unknown escape).
pub fn path_bytes(display: &str) -> Option<Vec<u8>> {
    let Some(quoted) = display.strip_prefix('"') else {
        return Some(display.as_bytes().to_vec());
    };
    let mut out = Vec::with_capacity(quoted.len());
    let mut bytes = quoted.bytes();
    while let Some(byte) = bytes.next() {
        match byte {
            b'"' => return bytes.next().is_none().then_some(out),
            b'\\' => {
                let escaped = bytes.next()?;
                out.push(match escaped {
                    b'"' | b'\\' => escaped,
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'0'..=b'3' => {
                        let mut value = escaped - b'0';
                        for _ in 0..2 {
                            match bytes.next()? {
                                digit @ b'0'..=b'7' => value = value * 8 + (digit - b'0'),
                                _ => return None,
                            }
                        }
                        value
                    }
                    _ => return None,
                });
            }
            other => out.push(other),
        }
    }
    None
}

/// Normalizes a repository-relative path (`./a//b` -> `a/b`, `\` -> `/`) or says why it is unsafe.
/// A quoted path ([`display_path`]) is checked on the bytes it names and comes back in its
/// canonical form.
pub fn normalize_finding_path(raw: &str) -> Result<String, UnsafePath> {
    if raw.contains('\0') {
        return Err(UnsafePath::Nul);
    }
    let trimmed = raw.trim();
    if trimmed.starts_with('"') {
        return normalize_quoted(trimmed);
    }
    if trimmed.chars().any(char::is_control) {
        // Named as the diff names it: quoted, so it stays on its line wherever it is shown.
        return normalize_quoted(&quote_c_style(trimmed.as_bytes()));
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

fn normalize_quoted(quoted: &str) -> Result<String, UnsafePath> {
    let bytes = path_bytes(quoted).ok_or(UnsafePath::BadQuoting)?;
    if bytes.contains(&0) {
        return Err(UnsafePath::Nul);
    }
    if bytes.first() == Some(&b'/') {
        return Err(UnsafePath::Absolute);
    }
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in bytes.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(UnsafePath::ParentTraversal),
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err(UnsafePath::Empty);
    }
    let joined = parts.join(&b'/');
    // A quoted name that turns out to be plain text is written plainly, like the diff does.
    match std::str::from_utf8(&joined) {
        Ok(text) if !text.starts_with('"') && !text.chars().any(char::is_control) => {
            normalize_finding_path(text)
        }
        _ => Ok(display_path(&joined)),
    }
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The most patterns one list may hold. Every pattern becomes part of one matcher; 20,000 took
/// 399 MB and then failed. (A repository with more names to skip wants directory patterns.)
pub const MAX_IGNORE_PATTERNS: usize = 1_000;
/// The longest pattern, in bytes.
pub const MAX_IGNORE_PATTERN_BYTES: usize = 1_024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnorePatternError {
    /// One pattern cannot be compiled (`index` is 0-based).
    #[error("pattern {number} ({pattern:?}) is invalid: {message}", number = .index + 1)]
    Invalid {
        index: usize,
        pattern: String,
        message: String,
    },
    #[error("pattern {number} is {bytes} bytes long; a pattern may have at most {MAX_IGNORE_PATTERN_BYTES}", number = .index + 1)]
    TooLong { index: usize, bytes: usize },
    #[error(
        "{count} patterns; a list may have at most {MAX_IGNORE_PATTERNS} (name directories rather than many files)"
    )]
    TooMany { count: usize },
    /// Each pattern compiles, but not all of them together.
    #[error(
        "the {count} patterns together are too complex to match ({message}); use fewer or simpler patterns"
    )]
    TooComplex { count: usize, message: String },
}

impl IgnorePatternError {
    /// The 0-based entry the error is about, when it is about one.
    pub fn index(&self) -> Option<usize> {
        match self {
            IgnorePatternError::Invalid { index, .. }
            | IgnorePatternError::TooLong { index, .. } => Some(*index),
            IgnorePatternError::TooMany { .. } | IgnorePatternError::TooComplex { .. } => None,
        }
    }

    /// What is wrong, without the entry's number (for messages that name the entry already).
    pub fn reason(&self) -> String {
        match self {
            IgnorePatternError::Invalid {
                pattern, message, ..
            } => format!("pattern {pattern:?} is invalid: {message}"),
            IgnorePatternError::TooLong { bytes, .. } => format!(
                "the pattern is {bytes} bytes long; a pattern may have at most {MAX_IGNORE_PATTERN_BYTES}"
            ),
            other => other.to_string(),
        }
    }
}

/// Ignore patterns with `.gitignore` semantics: a pattern without a slash matches at any depth, a
/// leading slash anchors it at the root, a trailing slash matches a directory and everything below
/// it, `*` does not cross `/` but `**` does, `!` re-includes, and the last matching pattern wins.
/// At most [`MAX_IGNORE_PATTERNS`] patterns of at most [`MAX_IGNORE_PATTERN_BYTES`] each.
#[derive(Debug, Clone)]
pub struct IgnoreMatcher {
    set: GlobSet,
    /// For each glob in `set`: the pattern it came from and whether it negates.
    owners: Vec<(usize, bool)>,
    /// Each ignoring (not `!`) pattern as its path's components, for [`Self::may_match_below`].
    components: Vec<Vec<String>>,
}

impl IgnoreMatcher {
    /// A matcher that ignores nothing.
    pub fn empty() -> Self {
        IgnoreMatcher {
            set: GlobSet::empty(),
            owners: Vec::new(),
            components: Vec::new(),
        }
    }

    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, IgnorePatternError> {
        // Checked before anything is compiled: the matcher's size grows with the patterns.
        if patterns.len() > MAX_IGNORE_PATTERNS {
            return Err(IgnorePatternError::TooMany {
                count: patterns.len(),
            });
        }
        if let Some((index, raw)) = patterns
            .iter()
            .enumerate()
            .find(|(_, raw)| raw.as_ref().len() > MAX_IGNORE_PATTERN_BYTES)
        {
            return Err(IgnorePatternError::TooLong {
                index,
                bytes: raw.as_ref().len(),
            });
        }
        let mut builder = GlobSetBuilder::new();
        let mut globs = Vec::new();
        let mut owners = Vec::new();
        let mut components = Vec::new();
        for (index, raw) in patterns.iter().enumerate() {
            let raw = raw.as_ref();
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let invalid = |message: String| IgnorePatternError::Invalid {
                index,
                pattern: raw.to_owned(),
                message,
            };
            let (negated, body) = match line.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix('\\').unwrap_or(line)),
            };
            let dir_only = body.ends_with('/');
            let body = body.trim_end_matches('/');
            if body.is_empty() {
                return Err(invalid("pattern matches nothing".to_owned()));
            }
            let anchored = body.contains('/');
            let body = body.trim_start_matches('/');
            let base = if anchored {
                body.to_owned()
            } else {
                format!("**/{body}")
            };
            if !negated {
                components.push(base.split('/').map(str::to_owned).collect());
            }
            let mut texts = vec![format!("{base}/**")];
            if !dir_only {
                texts.push(base);
            }
            for text in texts {
                let compiled = compile(&text).map_err(|error| invalid(error.kind().to_string()))?;
                builder.add(compiled.clone());
                globs.push(compiled);
                owners.push((index, negated));
            }
        }
        let set = builder
            .build()
            .map_err(|error| too_complex(patterns, &globs, &owners, &error))?;
        Ok(IgnoreMatcher {
            set,
            owners,
            components,
        })
    }

    /// Whether some path below the directory `dir` could match an ignoring pattern: what a
    /// symbolic link at `dir` would bring under it (a link at `.github/workflows`, or at
    /// `.github`, to a directory of the change's, for `.github/workflows/**`).
    pub fn may_match_below(&self, dir: &str) -> bool {
        let dir: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        self.components.iter().any(|pattern| {
            let pattern: Vec<&str> = pattern.iter().map(String::as_str).collect();
            below(&pattern, &dir)
        })
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

/// Whether a path that starts with `dir` and goes on below it can match `pattern` (components,
/// `**` for any number of them, each other one a glob of one component).
fn below(pattern: &[&str], dir: &[&str]) -> bool {
    match (pattern.split_first(), dir.split_first()) {
        // `dir` is all said: what is left of the pattern matches something below it.
        (Some(_), None) => true,
        // The pattern ended above `dir`: then `dir` itself matches, not only what is below it.
        (None, _) => false,
        (Some((&"**", rest)), Some((_, dir_rest))) => below(rest, dir) || below(pattern, dir_rest),
        (Some((glob, rest)), Some((name, dir_rest))) => {
            compile(glob).is_ok_and(|g| g.compile_matcher().is_match(name)) && below(rest, dir_rest)
        }
    }
}

/// Why the set did not build: the first pattern that does not build on its own, else all of them.
fn too_complex<S: AsRef<str>>(
    patterns: &[S],
    globs: &[Glob],
    owners: &[(usize, bool)],
    error: &globset::Error,
) -> IgnorePatternError {
    for (glob, (index, _)) in globs.iter().zip(owners) {
        if let Err(alone) = GlobSetBuilder::new().add(glob.clone()).build() {
            return IgnorePatternError::Invalid {
                index: *index,
                pattern: patterns
                    .get(*index)
                    .map(|p| p.as_ref().to_owned())
                    .unwrap_or_default(),
                message: alone.kind().to_string(),
            };
        }
    }
    IgnorePatternError::TooComplex {
        count: patterns.len(),
        message: error.kind().to_string(),
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

    /// A link at a directory above a protected path, or at one a pattern spans, could bring
    /// protected files under it; one beside them could not. A pattern that matches at any depth
    /// could match below any directory.
    #[test]
    fn a_directory_may_hold_what_a_pattern_matches_below_it() {
        let protected = IgnoreMatcher::new(&[
            ".github/workflows/**",
            ".bugloop/**",
            "app/*/keys/*",
            "!ci/**",
        ])
        .unwrap();
        for (dir, may) in [
            (".github", true),
            (".github/workflows", true),
            (".bugloop", true),
            ("app", true),
            ("app/web", true),
            ("app/web/keys", true),
            ("app/web/docs", false),
            (".gitlab", false),
            (".github/ISSUE_TEMPLATE", false),
            ("ci", false),
            ("docs/.github", false),
        ] {
            assert_eq!(protected.may_match_below(dir), may, "{dir}");
        }
        let anywhere = IgnoreMatcher::new(&["secrets/*.pem"]).unwrap();
        assert!(!anywhere.may_match_below("ci"));
        let anywhere = IgnoreMatcher::new(&["*.pem"]).unwrap();
        assert!(anywhere.may_match_below("ci"));
        assert!(!IgnoreMatcher::empty().may_match_below(".github"));
    }

    #[test]
    fn a_name_that_is_not_utf8_is_known_however_a_model_writes_it() {
        let cafe = display_path(b"caf\xe9.txt");
        assert_eq!(cafe, r#""caf\351.txt""#);
        let known = [cafe.as_str(), "plain.rs", r#""bad\377.py""#];
        for reported in [
            r"caf\351.txt",
            "café.txt",
            "caf\u{FFFD}.txt",
            " ./café.txt ",
        ] {
            assert_eq!(
                known_name(reported, known),
                Some(cafe.as_str()),
                "{reported}"
            );
        }
        // Known as written, or unknown: nothing to read back.
        assert_eq!(known_name(&cafe, known), None);
        assert_eq!(known_name("plain.rs", known), None);
        assert_eq!(known_name("cafe.txt", known), None);
        // Two names that read the same lossily: neither is guessed.
        let twins = [r#""x\377""#, r#""x\376""#];
        assert_eq!(known_name("x\u{FFFD}", twins), None);
        assert_eq!(known_name("xÿ", twins), Some(twins[0]));
    }

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
        // A name with a line break or a tab, as the diff shows it: quoted, on one line.
        assert_eq!(normalize_finding_path("a\nb").unwrap(), r#""a\nb""#);
        assert_eq!(
            normalize_finding_path("util\t.py").unwrap(),
            r#""util\t.py""#
        );
    }

    #[test]
    fn names_that_are_not_utf8_are_shown_quoted_and_read_back() {
        let cases: [(&[u8], &str); 5] = [
            (b"src/lib.rs", "src/lib.rs"),
            ("caf\u{e9}.py".as_bytes(), "caf\u{e9}.py"),
            (b"bad\xff.py", r#""bad\377.py""#),
            (b"dir\xfe/a \"b\"\\c\tx", r#""dir\376/a \"b\"\\c\tx""#),
            // A name that starts with a quote is quoted, so a quoted form is never a plain name.
            (b"\"x\"", r#""\"x\"""#),
        ];
        for (bytes, shown) in cases {
            assert_eq!(display_path(bytes), shown);
            assert_eq!(path_bytes(shown).as_deref(), Some(bytes));
        }
        for malformed in [r#""open"#, r#""a"b"#, r#""\x41""#, r#""\9""#, r#""\47""#] {
            assert_eq!(path_bytes(malformed), None, "{malformed}");
        }
    }

    #[test]
    fn quoted_paths_are_checked_on_their_bytes() {
        assert_eq!(
            normalize_finding_path(r#""./dir//bad\377.py""#).unwrap(),
            r#""dir/bad\377.py""#
        );
        // Quoted without need: written plainly, as the diff shows it.
        assert_eq!(normalize_finding_path(r#""src/a.rs""#).unwrap(), "src/a.rs");
        assert_eq!(
            normalize_finding_path(r#""a/\056\056/\377""#),
            Err(UnsafePath::ParentTraversal)
        );
        assert_eq!(
            normalize_finding_path(r#""\057etc/passwd""#),
            Err(UnsafePath::Absolute)
        );
        assert_eq!(normalize_finding_path(r#""a\nb""#).unwrap(), r#""a\nb""#);
        assert_eq!(normalize_finding_path(r#""a\000b""#), Err(UnsafePath::Nul));
        assert_eq!(
            normalize_finding_path(r#""bad"#),
            Err(UnsafePath::BadQuoting)
        );
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
        assert_eq!(error.index(), Some(1));
        assert_eq!(
            error.to_string(),
            "pattern 2 (\"a[b\") is invalid: unclosed character class; missing ']'"
        );
        let error = IgnoreMatcher::new(&["ok", "/", "x"]).unwrap_err();
        assert_eq!(error.index(), Some(1));
        assert_eq!(
            error.reason(),
            "pattern \"/\" is invalid: pattern matches nothing"
        );
    }

    #[test]
    fn pattern_lists_are_bounded_before_compiling() {
        let many: Vec<String> = (0..MAX_IGNORE_PATTERNS + 1)
            .map(|i| format!("dir{i}/*.py"))
            .collect();
        let error = IgnoreMatcher::new(&many).unwrap_err();
        assert_eq!(error, IgnorePatternError::TooMany { count: 1_001 });
        assert_eq!(error.index(), None);
        assert!(IgnoreMatcher::new(&many[..MAX_IGNORE_PATTERNS]).is_ok());
        let long = "a".repeat(MAX_IGNORE_PATTERN_BYTES + 1);
        let error = IgnoreMatcher::new(&["ok", "fine", long.as_str()]).unwrap_err();
        assert_eq!(error.index(), Some(2));
        assert_eq!(
            error.reason(),
            "the pattern is 1025 bytes long; a pattern may have at most 1024"
        );
    }

    #[test]
    fn a_prompt_names_a_file_on_one_line_and_the_name_reads_back() {
        assert_eq!(prompt_path("src/app.py"), "src/app.py");
        assert_eq!(prompt_path("src/café.py"), "src/café.py");
        let separator = "src/app\u{2028}.py";
        let shown = prompt_path(separator);
        assert_eq!(shown, "\"src/app\\342\\200\\250.py\"");
        // A finding that copies the name back names the file.
        assert_eq!(normalize_finding_path(&shown).as_deref(), Ok(separator));
        assert_eq!(path_bytes(&shown), Some(separator.as_bytes().to_vec()));
        let broken = prompt_path("a\n# Pass 2");
        assert!(!broken.contains('\n'));
        assert_eq!(path_bytes(&broken), Some(b"a\n# Pass 2".to_vec()));
    }
}
