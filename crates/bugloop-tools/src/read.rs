//! The read-only tools: read a file, list a directory, find files by glob, search contents.

use std::io::Read;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::GlobMatcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::WalkBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::workspace::{Workspace, open_no_follow, special_kind};
use crate::{ToolContext, ToolError, TypedTool, clip};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileParams {
    /// Path relative to the repository root.
    #[schemars(length(min = 1))]
    pub path: String,
    /// First line to show (1-based, default 1; 0 is read as 1).
    pub start_line: Option<usize>,
    /// Last line to show (inclusive); 0 or a line before `start_line` means no end line.
    pub end_line: Option<usize>,
}

pub struct ReadFile;

#[async_trait]
impl TypedTool for ReadFile {
    type Params = ReadFileParams;
    crate::tool_named!("read_file");

    async fn run(
        &self,
        context: &ToolContext,
        params: ReadFileParams,
    ) -> Result<String, ToolError> {
        let file = context.workspace.open_file(&params.path)?;
        let size = file.metadata().map_or(0, |m| m.len());
        let cap = context.limits.max_file_bytes;
        let mut bytes = Vec::new();
        // One byte more than the cap tells a file that is too large from one that fits.
        file.take(u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::Model(format!("cannot read {}: {e}", params.path)))?;
        let cut = bytes.len() > cap;
        bytes.truncate(cap);
        if bytes.iter().take(8_000).any(|b| *b == 0) {
            return Ok(format!(
                "{} is a binary file ({size} bytes); not shown",
                params.path
            ));
        }
        let text = String::from_utf8_lossy(&bytes);
        let total = text.lines().count();
        let start = params.start_line.unwrap_or(1).max(1);
        // Models send 0, or a line before the start, for "no end line".
        let end = params
            .end_line
            .filter(|end| *end >= start)
            .unwrap_or(usize::MAX)
            .min(total);
        if start > total.max(1) {
            // Past the end is an answer, not a mistake in the arguments.
            return Ok(format!(
                "{} has {total} lines; there is nothing from line {start} on\n",
                params.path
            ));
        }
        let limits = &context.limits;
        let mut out = String::new();
        let lines = text
            .lines()
            .enumerate()
            .skip(start - 1)
            .take(end + 1 - start);
        for (shown, (index, line)) in lines.enumerate() {
            if shown == limits.max_read_lines || out.len() > limits.max_read_bytes {
                out.push_str(&format!(
                    "[... {} more lines; read on with start_line {} ...]\n",
                    end + 1 - start - shown,
                    index + 1
                ));
                break;
            }
            out.push_str(&format!(
                "{:>6}\t{}\n",
                index + 1,
                clip(line, limits.max_line_chars * 4)
            ));
        }
        if total == 0 {
            out.push_str("(empty file)\n");
        }
        if cut {
            out.push_str(&format!(
                "[... only the first {cap} of {size} bytes of {} were read; use grep to find the rest ...]\n",
                params.path
            ));
        }
        Ok(out)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirParams {
    /// Directory relative to the repository root (default: the root).
    #[serde(default)]
    pub path: Option<String>,
}

pub struct ListDir;

#[async_trait]
impl TypedTool for ListDir {
    type Params = ListDirParams;
    crate::tool_named!("list_dir");

    async fn run(&self, context: &ToolContext, params: ListDirParams) -> Result<String, ToolError> {
        let shown_path = params.path.unwrap_or_else(|| ".".into());
        let path = context.workspace.resolve(&shown_path)?;
        let kind = std::fs::metadata(&path)
            .map_err(|e| ToolError::Model(format!("cannot list {shown_path}: {e}")))?
            .file_type();
        if kind.is_file() {
            return Err(ToolError::Model(format!(
                "{shown_path} is a file; use read_file"
            )));
        }
        if !kind.is_dir()
            && let Some(what) = special_kind(kind)
        {
            return Err(ToolError::Model(format!(
                "{shown_path} is {what}, not a directory"
            )));
        }
        let entries = std::fs::read_dir(&path)
            .map_err(|e| ToolError::Model(format!("cannot list {shown_path}: {e}")))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name() != ".git")
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                match e.file_type() {
                    Ok(t) if t.is_symlink() => format!("{name}@"),
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    Ok(t) => match special_kind(t) {
                        Some(what) => format!("{name} ({what}; cannot be read)"),
                        None => name,
                    },
                    Err(_) => name,
                }
            })
            .collect();
        names.sort();
        let total = names.len();
        names.truncate(context.limits.max_list_entries);
        let mut out = names.join("\n");
        if total > names.len() {
            out.push_str(&format!("\n[... {} more entries ...]", total - names.len()));
        }
        if total == 0 {
            out.push_str("(empty directory)");
        }
        Ok(out)
    }
}

fn walker(root: &Path) -> WalkBuilder {
    // The same defaults as ripgrep: .gitignore and friends honoured, hidden files skipped.
    let mut builder = WalkBuilder::new(root);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    builder
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobParams {
    /// A glob such as `src/**/*.rs`; a pattern without `/` matches file names at any depth.
    pub pattern: String,
    /// Directory to search in (default: the root).
    #[serde(default)]
    pub path: Option<String>,
}

pub struct GlobFiles;

#[async_trait]
impl TypedTool for GlobFiles {
    type Params = GlobParams;
    crate::tool_named!("glob");

    async fn run(&self, context: &ToolContext, params: GlobParams) -> Result<String, ToolError> {
        let base = context
            .workspace
            .resolve(params.path.as_deref().unwrap_or("."))?;
        let glob = globset::GlobBuilder::new(&params.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::Model(format!("bad glob {:?}: {}", params.pattern, e.kind())))?
            .compile_matcher();
        let by_name = !params.pattern.contains('/');
        let mut found = Vec::new();
        let mut total = 0;
        for entry in walker(&base).build().filter_map(Result::ok) {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let relative = context.workspace.relative(entry.path());
            let candidate = if by_name {
                entry.file_name().to_string_lossy().into_owned()
            } else {
                relative.clone()
            };
            if glob.is_match(&candidate) {
                total += 1;
                if found.len() < context.limits.max_glob_results {
                    found.push(relative);
                }
            }
        }
        if found.is_empty() {
            return Ok(format!("no files match {:?}", params.pattern));
        }
        let mut out = found.join("\n");
        if total > found.len() {
            out.push_str(&format!(
                "\n[... {} more files; narrow the pattern ...]",
                total - found.len()
            ));
        }
        Ok(out)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepParams {
    /// A regular expression (Rust regex syntax, as ripgrep).
    pub pattern: String,
    /// File or directory to search (default: the root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose name matches this glob, e.g. `*.rs`.
    #[serde(default)]
    pub glob: Option<String>,
    #[serde(default)]
    pub case_insensitive: bool,
}

pub struct Grep;

/// One match: workspace-relative path, line number, the line.
pub type GrepMatch = (String, u64, String);

/// Searches like `rg --no-heading -n PATTERN [PATH]`: gitignore honoured, hidden and binary files
/// skipped. Returns the matches (at most `cap`) and how many there were in all.
pub fn grep(
    context: &ToolContext,
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
    case_insensitive: bool,
    cap: usize,
) -> Result<(Vec<GrepMatch>, usize), ToolError> {
    let base = search_base(context, path.unwrap_or("."))?;
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .build(pattern)
        .map_err(|e| ToolError::Model(format!("bad pattern {pattern:?}: {e}")))?;
    let name_glob = match glob {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| ToolError::Model(format!("bad glob {g:?}: {}", e.kind())))?
                .compile_matcher(),
        ),
        None => None,
    };
    // Walk and search in parallel like ripgrep, then sort, so results do not depend on timing.
    let found: std::sync::Mutex<Vec<GrepMatch>> = std::sync::Mutex::new(Vec::new());
    let total = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    walker(&base).threads(threads).build_parallel().run(|| {
        let matcher = matcher.clone();
        let name_glob = name_glob.clone();
        let found = &found;
        let total = &total;
        let workspace = &context.workspace;
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            let local = search_entry(
                &entry,
                name_glob.as_ref(),
                &mut searcher,
                &matcher,
                workspace,
            );
            if !local.is_empty() {
                total.fetch_add(local.len(), std::sync::atomic::Ordering::Relaxed);
                let mut found = found
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                // Keep enough to sort and cut, not every match of a huge result.
                if found.len() < cap.saturating_mul(8).max(10_000) {
                    found.extend(local);
                }
            }
            ignore::WalkState::Continue
        })
    });
    let mut matches = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    matches.sort();
    matches.truncate(cap);
    let total = total.into_inner();
    Ok((matches, total))
}

/// Where a search of `shown` starts: its real location (the path may be an in-tree link, and
/// files are opened without following links), which must be a directory or a regular file.
fn search_base(context: &ToolContext, shown: &str) -> Result<PathBuf, ToolError> {
    let base = context.workspace.existing(shown, "search")?;
    let kind = std::fs::metadata(&base)
        .map_err(|e| ToolError::Model(format!("cannot search {shown}: {e}")))?
        .file_type();
    if !kind.is_dir()
        && let Some(what) = special_kind(kind)
    {
        return Err(ToolError::Model(format!(
            "{shown} is {what}, not a regular file or directory; it cannot be searched"
        )));
    }
    Ok(base)
}

/// The matching lines of one walked entry: only of a regular file whose name matches
/// `name_glob`, never anything reached through a link.
fn search_entry(
    entry: &ignore::DirEntry,
    name_glob: Option<&GlobMatcher>,
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    workspace: &Workspace,
) -> Vec<GrepMatch> {
    let mut local: Vec<GrepMatch> = Vec::new();
    // The walker does not follow links, so FIFOs, sockets, devices and links are skipped here
    // without being opened.
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return local;
    }
    if let Some(glob) = name_glob
        && !glob.is_match(entry.file_name())
    {
        return local;
    }
    // Opened without blocking or following a link, and checked again on the open file, in case
    // something else was swapped in since the walk looked.
    let Ok((file, kind)) = open_no_follow(entry.path()) else {
        return local;
    };
    if !kind.is_file() {
        return local;
    }
    let relative = workspace.relative(entry.path());
    let _ = searcher.search_file(
        matcher,
        &file,
        Lossy(|line_number, line| {
            local.push((
                relative.clone(),
                line_number,
                line.trim_end_matches(['\n', '\r']).to_owned(),
            ));
            Ok(true)
        }),
    );
    local
}

#[async_trait]
impl TypedTool for Grep {
    type Params = GrepParams;
    crate::tool_named!("grep");

    async fn run(&self, context: &ToolContext, params: GrepParams) -> Result<String, ToolError> {
        let cap = context.limits.max_grep_matches;
        let (matches, total) = grep(
            context,
            &params.pattern,
            params.path.as_deref(),
            params.glob.as_deref(),
            params.case_insensitive,
            cap,
        )?;
        if matches.is_empty() {
            return Ok(format!("no matches for {:?}", params.pattern));
        }
        let mut out: Vec<String> = matches
            .iter()
            .map(|(path, line, text)| {
                format!(
                    "{path}:{line}:{}",
                    clip(text, context.limits.max_line_chars)
                )
            })
            .collect();
        if total > matches.len() {
            out.push(format!(
                "[... {} more matches; narrow the pattern or the path ...]",
                total - matches.len()
            ));
        }
        Ok(out.join("\n"))
    }
}
