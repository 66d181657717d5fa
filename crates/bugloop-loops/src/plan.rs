//! Splitting a change into model calls. Each call may show at most a token budget of diff; files
//! go in order of importance (source, configuration, tests, data, documentation; larger changes
//! first; a file too big for one call after all that fit), delete-only hunks are summarized in one line, and lockfiles and generated files are
//! summarized instead of shown. A file whose lines a file before it in the same call showed is
//! one line naming that file. A file too big for one call is split at hunks, and a hunk too big
//! for one call into pieces; what could not be shown (binary files) is listed, never dropped
//! silently.

use bugloop_diff::{ChangeKind, Diff, FileDiff, Hunk, LineKind};
use bugloop_domain::paths::{IgnoreMatcher, prompt_path};
use bugloop_report::review::Unreviewed;
use serde::Serialize;
use std::collections::HashMap;

/// A conservative estimate (code tokenizes at about 3-4 bytes a token).
pub(crate) fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3)
}

/// Lines longer than this (minified code, data) are cut in the prompt.
pub(crate) const MAX_LINE_CHARS: usize = 400;
/// What ends a line the prompt shows cut.
pub(crate) const LINE_CUT: &str = " [... line cut]";

/// One model call's share of the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub(crate) struct Batch {
    pub files: Vec<String>,
    pub text: String,
    pub tokens: u64,
    /// The head lines the batch shows as added, by file (a small model's answer may only name
    /// one of them).
    pub added: Vec<(String, Vec<u32>)>,
    /// Where each file's text stands in `text`, and its kind: a later pass may be shown only
    /// some kinds ([`Batch::view`]).
    #[serde(skip)]
    pub sections: Vec<Section>,
}

/// One file's text (or a piece of it) in a batch's `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub path: String,
    pub kind: Importance,
    pub range: std::ops::Range<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Plan {
    pub batches: Vec<Batch>,
    /// Not shown, or only partly: binary files, hunks over the budget.
    pub unreviewed: Vec<Unreviewed>,
    /// Shown as a one-line summary only (lockfiles, generated and minified files).
    pub summarized: Vec<Unreviewed>,
    /// Excluded by `review.ignore_files`.
    pub ignored: Vec<String>,
    /// Files in the change.
    pub files: usize,
    /// Not shown to a small model, whose questions are about code: prose, encoded data (keys,
    /// certificates), lockfiles and deleted files. The analyzers still read them.
    pub left_to_analyzers: Vec<String>,
}

/// Who reads the planned calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// A model that reviews every file: each is shown or summarized.
    Reviewer,
    /// A small model asked short questions about code: only source, tests and configuration
    /// are shown, each call a short one.
    SmallModel,
}

/// What kind of file a path is, least important first. A part shows its files in the reverse
/// of this order, so a later pass shown only the more important kinds ([`Batch::view`]) is shown
/// where the part starts: configuration (build files, CI, dependencies) before tests, keys and
/// certificates (a trust anchor added is an access grant) before prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Importance {
    Summarize,
    Docs,
    /// Keys, certificates, signatures: encoded data, nothing a reviewer reads line by line.
    Data,
    Tests,
    Config,
    Source,
}

const LOCKFILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "Pipfile.lock",
    "uv.lock",
    "go.sum",
    "composer.lock",
    "Gemfile.lock",
    "flake.lock",
];

/// The metadata files setuptools writes into a package's `.egg-info/` directory.
const EGG_INFO_FILES: &[&str] = &[
    "PKG-INFO",
    "SOURCES.txt",
    "requires.txt",
    "top_level.txt",
    "dependency_links.txt",
    "not-zip-safe",
];

fn importance(path: &str) -> Importance {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = path.to_ascii_lowercase();
    if LOCKFILES.contains(&name)
        || lower.ends_with(".min.js")
        || lower.ends_with(".min.css")
        || lower.ends_with(".map")
        || lower.starts_with("vendor/")
        || lower.contains("/vendor/")
        || lower.starts_with("dist/")
        || lower.starts_with("generated/")
        || lower.contains("/generated/")
        // What setuptools writes from setup.py/pyproject.toml when it builds; code and
        // `entry_points.txt` (which picks what code loads) under `.egg-info/` are shown.
        || (lower.contains(".egg-info/") && EGG_INFO_FILES.contains(&name))
    {
        return Importance::Summarize;
    }
    let extension = ending(path).to_ascii_lowercase();
    if is_configuration(&lower) {
        return Importance::Config;
    }
    match extension.as_str() {
        "pem" | "key" | "crt" | "csr" | "cer" | "der" | "srl" | "p12" | "pfx" | "jks" | "gpg"
        | "asc" | "sig" | "pub" => Importance::Data,
        // A test's text before prose: pytest runs `test*.txt` as doctests, Go's testscript
        // runs `testdata/script/*.txt`; both run where CI's secrets are. A README among the
        // tests is prose.
        _ if is_test(path) && !is_markup(path) => Importance::Tests,
        _ if is_prose(path) => Importance::Docs,
        "yml" | "yaml" | "toml" | "json" | "xml" | "ini" | "cfg" | "conf" | "lock" | "csv" => {
            Importance::Config
        }
        _ => Importance::Source,
    }
}

/// Text by its ending (Markdown, reStructuredText, plain text, AsciiDoc, Org).
fn is_prose(path: &str) -> bool {
    is_markup(path) || ending(path).eq_ignore_ascii_case("txt")
}

/// Marked-up prose (Markdown, reStructuredText, AsciiDoc, Org).
fn is_markup(path: &str) -> bool {
    let extension = ending(path);
    ["md", "rst", "adoc", "org"]
        .iter()
        .any(|markup| extension.eq_ignore_ascii_case(markup))
}

/// What follows the last dot of the file's name (nothing when it has none).
fn ending(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map_or("", |(_, e)| e)
}

/// What builds, installs, runs CI or instructs the repository's agents, whatever its ending: a
/// later pass on the change's impact and security is shown it ([`Batch::view`]), so a `.txt` or
/// `.md` file that does one of these is not taken for prose.
fn is_configuration(lower: &str) -> bool {
    let name = lower.rsplit('/').next().unwrap_or(lower);
    let directories: Vec<&str> = lower.split('/').rev().skip(1).collect();
    let text_list = name.ends_with(".txt") || name.ends_with(".in");
    matches!(
        name,
        "dockerfile"
            | "makefile"
            | "gnumakefile"
            | "cmakelists.txt"
            | "codeowners"
            | "agents.md"
            | "agent.md"
            | "claude.md"
            | "claude.local.md"
            | "gemini.md"
            | ".cursorrules"
            | ".windsurfrules"
            | ".clinerules"
            // Which code a Python package's entry points load.
            | "entry_points.txt"
    ) || name.starts_with("dockerfile.")
        || name.ends_with(".cmake")
        // Python's dependency lists: what a change installs.
        || (text_list && (name.contains("requirements") || name.contains("constraints")))
        || (text_list && directories.contains(&"requirements"))
        // CI, code owners, and the agents' and bugloop's own rules, wherever they stand.
        || directories.iter().any(|directory| {
            matches!(
                *directory,
                ".github"
                    | ".circleci"
                    | ".cursor"
                    | ".claude"
                    | ".windsurf"
                    | ".clinerules"
                    | ".kiro"
                    | ".bugloop"
            )
        })
}

/// A test by where it stands or how it is named (`tests/`, `__tests__/`, `test_x.py`,
/// `x_test.go`, `x.spec.ts`, `XTest.java`), not by holding "test" anywhere: `src/latest.py` or
/// `lib/special.js` is source, shown to every pass.
fn is_test(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let directory_is_test = path.split('/').rev().skip(1).any(|directory| {
        matches!(
            directory.to_ascii_lowercase().as_str(),
            "test"
                | "tests"
                | "spec"
                | "specs"
                | "__tests__"
                | "__mocks__"
                | "e2e"
                | "testdata"
                | "testing"
        )
    });
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let lower_stem = stem.to_ascii_lowercase();
    directory_is_test
        || lower_stem.starts_with("test_")
        || lower_stem == "conftest"
        || ["_test", "_tests", ".test", ".spec", "_spec"]
            .iter()
            .any(|end| lower_stem.ends_with(end))
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
}

fn kind_word(file: &FileDiff) -> &'static str {
    match file.change {
        ChangeKind::Added => "added",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Modified => "modified",
        ChangeKind::Renamed => "renamed",
        ChangeKind::Copied => "copied",
    }
}

fn header(file: &FileDiff) -> String {
    let (added, removed) = file.stats();
    let from = match (&file.change, &file.old_path) {
        (ChangeKind::Renamed | ChangeKind::Copied, Some(old)) => {
            format!(" from {}", prompt_path(old))
        }
        _ => String::new(),
    };
    format!(
        "## {} ({}{from}, +{added} -{removed})\n",
        prompt_path(file.path()),
        kind_word(file)
    )
}

pub(crate) fn clip(text: &str) -> String {
    if text.len() <= MAX_LINE_CHARS {
        return text.to_owned();
    }
    let mut end = MAX_LINE_CHARS;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{LINE_CUT}", &text[..end])
}

/// A hunk's header: its section (the enclosing function, as git finds it). The ranges are left
/// out: every shown line carries its head line number.
fn hunk_header(hunk: &Hunk) -> String {
    if hunk.section.is_empty() {
        "@@\n".to_owned()
    } else {
        format!("@@ {}\n", hunk.section)
    }
}

/// A shown line: `<head line><+ or space><text>`, or `-<text>` for a removed line. Numbers are
/// not padded: padding costs tokens and tells the model nothing.
fn render_line(line: &bugloop_diff::DiffLine) -> String {
    match line.kind {
        LineKind::Added => format!("{}+{}\n", line.new_line.unwrap_or(0), clip(&line.text)),
        LineKind::Context => format!("{} {}\n", line.new_line.unwrap_or(0), clip(&line.text)),
        LineKind::Removed => format!("-{}\n", clip(&line.text)),
    }
}

/// The head line numbers of the added lines in one file's rendered section ([`render_line`]'s
/// `<line>+<text>`; a collapsed run of data, `<first>-<last>+`, is not a line one can point at).
fn added_lines(section: &str) -> Vec<u32> {
    section
        .lines()
        .filter_map(|line| {
            let digits = line.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0 && line.as_bytes().get(digits) == Some(&b'+'))
                .then(|| line[..digits].parse().ok())
                .flatten()
        })
        .collect()
}

/// Runs of this many encoded-data lines or more are shown as one line.
pub(crate) const DATA_RUN: usize = 4;

/// A line of base64 or hex data (a PEM body, an embedded blob): nothing a reviewer reads.
pub(crate) fn is_data_line(text: &str) -> bool {
    let text = text.trim();
    text.len() >= 40
        && !text.contains(' ')
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        // Words have vowels in runs; data has digits or mixed case throughout.
        && text.bytes().filter(u8::is_ascii_digit).count() * 20 >= text.len()
}

/// The hunk's lines as shown, with runs of encoded data collapsed into one line that says what
/// was there and where.
fn render_lines(lines: &[bugloop_diff::DiffLine]) -> String {
    let mut out = String::new();
    let mut index = 0;
    while index < lines.len() {
        let line = &lines[index];
        let run = lines[index..]
            .iter()
            .take_while(|l| l.kind == line.kind && is_data_line(&l.text))
            .count();
        if run >= DATA_RUN {
            let last = &lines[index + run - 1];
            let what = format!("[{run} lines of encoded data (base64 or hex), not shown]");
            out.push_str(&match (line.kind, line.new_line, last.new_line) {
                (LineKind::Removed, _, _) => format!("-{what}\n"),
                (kind, Some(first), Some(end)) => format!(
                    "{first}-{end}{}{what}\n",
                    if kind == LineKind::Added { '+' } else { ' ' }
                ),
                _ => format!("{what}\n"),
            });
            index += run;
        } else {
            out.push_str(&render_line(line));
            index += 1;
        }
    }
    out
}

/// A hunk as shown: delete-only hunks in one line.
fn render_hunk(hunk: &Hunk) -> String {
    let removed = hunk
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::Removed)
        .count();
    let added = hunk
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::Added)
        .count();
    if added == 0 && removed > 0 {
        let first = hunk
            .lines
            .iter()
            .find(|l| l.kind == LineKind::Removed)
            .map(|l| clip(l.text.trim()))
            .unwrap_or_default();
        // The head line the removal follows: the last context line before it, else the hunk's
        // start (git numbers an empty new side by the line before it).
        let after = hunk
            .lines
            .iter()
            .take_while(|l| l.kind != LineKind::Removed)
            .filter_map(|l| l.new_line)
            .last()
            .unwrap_or(if hunk.new_len == 0 {
                hunk.new_start
            } else {
                hunk.new_start.saturating_sub(1)
            });
        return format!(
            "@@ removes {removed} line(s) after head line {after}, starting with `{first}`\n"
        );
    }
    let mut out = hunk_header(hunk);
    out.push_str(&render_lines(&hunk.lines));
    out
}

/// Why a binary file is not reviewed: it is never shown to the model.
pub(crate) const BINARY: &str = "binary file";

/// A last part under this share of the budget joins a part before it (see [`Packer::finish`]).
const REMAINDER_SHARE: u64 = 20;

/// Plans the calls for `diff` with at most `budget` tokens of change per call, and never more
/// than `ceiling` (what the model's context leaves; a remainder may stretch the budget to it).
pub(crate) fn plan(
    diff: &Diff,
    ignore: &IgnoreMatcher,
    budget: u64,
    ceiling: u64,
    reader: Reader,
) -> Plan {
    let budget = budget.max(100);
    let mut out = Plan {
        files: diff.files.len(),
        ..Plan::default()
    };
    let files = ranked_files(diff, ignore, &mut out.ignored, budget);
    let mut packer = Packer::new(budget);
    for (file, importance, _) in files {
        packer.kind = importance;
        // A small model's questions are about code: Markdown that configures (`AGENTS.md`) is
        // not what they can weigh; a requirements list or `CMakeLists.txt` is.
        let code = matches!(
            importance,
            Importance::Source | Importance::Tests | Importance::Config
        ) && !is_markup(file.path());
        let no_lines = file.change == ChangeKind::Deleted || file.hunks.is_empty();
        if reader == Reader::SmallModel && !file.binary && (!code || no_lines) {
            out.left_to_analyzers.push(file.path().to_owned());
            continue;
        }
        pack_file(&mut packer, &mut out, file, importance, budget);
    }
    out.batches = packer.finish(ceiling.max(budget));
    out
}

/// The files not ignored (listed in `ignored`), most important first, then the larger changes,
/// then by path; a file too big for one call of `budget` tokens after every file that fits, so
/// one large file (a bundle, generated code) cannot spend the run's budget before the change's
/// other files are read.
fn ranked_files<'a>(
    diff: &'a Diff,
    ignore: &IgnoreMatcher,
    ignored: &mut Vec<String>,
    budget: u64,
) -> Vec<(&'a FileDiff, Importance, usize)> {
    let mut files: Vec<(&FileDiff, Importance, usize)> = Vec::new();
    for file in &diff.files {
        let path = file.path();
        if ignore.is_ignored(path) {
            ignored.push(path.to_owned());
            continue;
        }
        let (added, removed) = file.stats();
        let rank = if file.binary {
            Importance::Summarize
        } else {
            // By the name itself: a quoted form (a tab in it) ends with its quote.
            importance(&bugloop_domain::paths::forge_path(path))
        };
        files.push((file, rank, added + removed));
    }
    // Binary, summarized and deleted files are one line each.
    let fits = |file: &FileDiff, importance: Importance| {
        file.binary
            || importance == Importance::Summarize
            || file.change == ChangeKind::Deleted
            || shown_tokens(file) <= budget
    };
    files.sort_by_cached_key(|(file, importance, size)| {
        (
            std::cmp::Reverse(fits(file, *importance)),
            std::cmp::Reverse(*importance),
            std::cmp::Reverse(*size),
            file.path().to_owned(),
        )
    });
    files
}

/// What showing a file whole costs, as [`pack_file`] counts it.
fn shown_tokens(file: &FileDiff) -> u64 {
    let whole: String = file.hunks.iter().map(render_hunk).collect();
    estimate_tokens(&header(file)) + estimate_tokens(&whole)
}

/// Packs one file: a line for a binary, summarized, deleted or unchanged file, the whole diff
/// when it fits in one call, else hunk by hunk.
fn pack_file(
    packer: &mut Packer,
    out: &mut Plan,
    file: &FileDiff,
    importance: Importance,
    budget: u64,
) {
    let path = file.path().to_owned();
    let head = header(file);
    if file.binary {
        packer.add(&path, &format!("{head}binary file, not shown\n"));
        out.unreviewed.push(Unreviewed {
            path,
            reason: BINARY.to_owned(),
        });
        return;
    }
    if importance == Importance::Summarize {
        packer.add(
            &path,
            &format!("{head}lockfile or generated file, not shown\n"),
        );
        out.summarized.push(Unreviewed {
            path,
            reason: "lockfile or generated file: summarized".to_owned(),
        });
        return;
    }
    if file.change == ChangeKind::Deleted {
        packer.add(&path, &format!("{head}the file is deleted\n"));
        return;
    }
    if file.hunks.is_empty() {
        packer.add(&path, &format!("{head}no content change\n"));
        return;
    }
    let cut = file
        .hunks
        .iter()
        .flat_map(|hunk| &hunk.lines)
        .filter(|line| line.kind == LineKind::Added && line.text.len() > MAX_LINE_CHARS)
        .count();
    if cut > 0 {
        // What lies past the cut is not shown: said, like any other part not shown.
        out.unreviewed.push(Unreviewed {
            path: path.clone(),
            reason: format!(
                "{cut} added line(s) over {MAX_LINE_CHARS} characters, shown cut to the model \
                 (the analyzers read them whole)"
            ),
        });
    }
    let whole: String = file.hunks.iter().map(render_hunk).collect();
    if estimate_tokens(&head) + estimate_tokens(&whole) <= budget {
        packer.add_whole(&path, &head, &whole, &file.hunks);
        return;
    }
    pack_in_parts(packer, file, &head, budget);
}

/// A file too big for one call: hunk by hunk, each part with the file's header.
fn pack_in_parts(packer: &mut Packer, file: &FileDiff, head: &str, budget: u64) {
    let path = file.path().to_owned();
    let mut part = String::new();
    for hunk in &file.hunks {
        let rendered = render_hunk(hunk);
        let needed = estimate_tokens(head) + estimate_tokens(&part) + estimate_tokens(&rendered);
        if needed > budget && !part.is_empty() {
            packer.add_alone(&path, &format!("{head}{part}"));
            part.clear();
        }
        if estimate_tokens(head) + estimate_tokens(&rendered) <= budget {
            part.push_str(&rendered);
            continue;
        }
        for piece in hunk_pieces(head, hunk, budget) {
            packer.add_alone(&path, &format!("{head}{piece}"));
        }
    }
    if !part.is_empty() {
        packer.add_alone(&path, &format!("{head}{part}"));
    }
}

/// One hunk over the budget, in pieces that each fit a call: every line is shown (a piece says
/// it continues the hunk), so no budget leaves a line unreviewed. A piece holds at least one
/// line, which [`clip`] keeps short.
fn hunk_pieces(head: &str, hunk: &Hunk, budget: u64) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut piece = hunk_header(hunk);
    let mut lines = 0;
    for line in &hunk.lines {
        let next = render_line(line);
        if lines > 0
            && estimate_tokens(head) + estimate_tokens(&piece) + estimate_tokens(&next) > budget
        {
            pieces.push(std::mem::take(&mut piece));
            piece = if hunk.section.is_empty() {
                "@@ (continued)\n".to_owned()
            } else {
                format!("@@ {} (continued)\n", hunk.section)
            };
            lines = 0;
        }
        piece.push_str(&next);
        lines += 1;
    }
    if lines > 0 {
        pieces.push(piece);
    }
    pieces
}

/// First-fit packing of file sections into batches.
struct Packer {
    budget: u64,
    batches: Vec<Batch>,
    current: Batch,
    /// The whole files the current batch shows, by their hunks as the diff has them (not as
    /// shown: cut lines and collapsed data may hide a difference), with the first file that
    /// showed them.
    shown: HashMap<String, String>,
    /// The kind of the file being packed.
    kind: Importance,
}

impl Packer {
    fn new(budget: u64) -> Self {
        Packer {
            budget,
            batches: Vec::new(),
            current: Batch::default(),
            shown: HashMap::new(),
            kind: Importance::Source,
        }
    }

    /// A file shown whole. When a file before it in this part showed the very same lines
    /// (fixtures copied into several directories, a vendored copy) it is one line naming that
    /// file: the model reads the lines once, and its added lines are still this file's.
    fn add_whole(&mut self, path: &str, head: &str, lines: &str, hunks: &[Hunk]) {
        let Ok(key) = serde_json::to_string(hunks) else {
            self.add(path, &format!("{head}{lines}"));
            return;
        };
        if let Some(first) = self.shown.get(&key) {
            let same = format!(
                "{head}the same lines as {}, shown above\n",
                prompt_path(first)
            );
            let tokens = estimate_tokens(&same);
            if tokens < estimate_tokens(lines) && self.current.tokens + tokens <= self.budget {
                self.push(path, &same, tokens, added_lines(lines));
                return;
            }
        }
        self.add(path, &format!("{head}{lines}"));
        self.shown.entry(key).or_insert_with(|| path.to_owned());
    }

    fn add(&mut self, path: &str, section: &str) {
        let tokens = estimate_tokens(section);
        if self.current.tokens + tokens > self.budget && !self.current.text.is_empty() {
            self.flush();
        }
        self.push(path, section, tokens, added_lines(section));
    }

    /// A part of a split file: a batch of its own, so its parts never share a call.
    fn add_alone(&mut self, path: &str, section: &str) {
        if !self.current.text.is_empty() {
            self.flush();
        }
        let tokens = estimate_tokens(section);
        self.push(path, section, tokens, added_lines(section));
        self.flush();
    }

    fn push(&mut self, path: &str, section: &str, tokens: u64, added: Vec<u32>) {
        if !self.current.files.iter().any(|f| f == path) {
            self.current.files.push(path.to_owned());
        }
        if !added.is_empty() {
            match self.current.added.iter_mut().find(|(file, _)| file == path) {
                Some((_, lines)) => lines.extend(added),
                None => self.current.added.push((path.to_owned(), added)),
            }
        }
        let start = self.current.text.len();
        self.current.text.push_str(section);
        self.current.text.push('\n');
        self.current.sections.push(Section {
            path: path.to_owned(),
            kind: self.kind,
            range: start..self.current.text.len(),
        });
        self.current.tokens += tokens;
    }

    fn flush(&mut self) {
        self.shown.clear();
        if self.current.text.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.current);
        self.batches.push(done);
    }

    /// The batches, a small remainder merged: a last batch under a [`REMAINDER_SHARE`]th of
    /// the budget (the least important files, such as one-line summaries of generated files)
    /// joins the smallest batch before it that shows none of its files, when the two stay
    /// within the budget and that share, and within `ceiling`. A part of its own would cost
    /// its own system prompt, tools and requests, far more than the remainder.
    fn finish(mut self, ceiling: u64) -> Vec<Batch> {
        self.flush();
        let stretched = (self.budget.saturating_add(self.budget / REMAINDER_SHARE)).min(ceiling);
        let Some(last) = self.batches.last() else {
            return self.batches;
        };
        if self.batches.len() < 2 || last.tokens * REMAINDER_SHARE > self.budget {
            return self.batches;
        }
        let (count, last_tokens) = (self.batches.len(), last.tokens);
        let target = self.batches[..count - 1]
            .iter()
            .enumerate()
            .filter(|(_, batch)| batch.tokens + last_tokens <= stretched)
            .filter(|(_, batch)| !batch.files.iter().any(|f| last.files.contains(f)))
            .min_by_key(|(_, batch)| batch.tokens)
            .map(|(index, _)| index);
        if let Some(target) = target
            && let Some(last) = self.batches.pop()
        {
            let into = &mut self.batches[target];
            into.files.extend(last.files);
            into.added.extend(last.added);
            let offset = into.text.len();
            into.sections
                .extend(last.sections.into_iter().map(|mut section| {
                    section.range = section.range.start + offset..section.range.end + offset;
                    section
                }));
            into.text.push_str(&last.text);
            into.tokens += last.tokens;
        }
        self.batches
    }
}

mod view;

#[cfg(test)]
mod tests;
