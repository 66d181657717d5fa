//! The editing tools of a Build run: write a file, replace a unique string, apply a multi-file
//! patch (checked completely before anything is written). Protected paths are refused.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bugloop_diff::{ChangeKind, LineKind};
use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::workspace::special_kind;
use crate::{ToolContext, ToolError, TypedTool};

fn writable(context: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    // `dir/` names a directory; resolving it drops the slash, and a file `dir` would be written.
    if raw.trim_end().ends_with('/') {
        return Err(ToolError::Model(format!(
            "{raw:?} ends with `/`: it names a directory, not a file"
        )));
    }
    let path = context.workspace.resolve(raw)?;
    let relative = context.workspace.relative(&path);
    if let Some(pattern) = context.protected.matched(&relative) {
        return Err(ToolError::Model(format!(
            "{relative} is protected (protected_paths entry {}); it may not be changed",
            pattern + 1
        )));
    }
    Ok(path)
}

fn write(path: &Path, content: &[u8]) -> Result<(), ToolError> {
    let cannot =
        |e: std::io::Error| ToolError::Model(format!("cannot write {}: {e}", path.display()));
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| ToolError::Model(format!("cannot create {}: {e}", parent.display())))?;
    }
    if let Ok(metadata) = std::fs::metadata(path) {
        refuse_special(path, metadata.file_type())?;
    }
    // Non-blocking, so a FIFO swapped in meanwhile cannot hang the open; the opened file is
    // checked again before anything is written.
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)
        .map_err(cannot)?;
    refuse_special(path, file.metadata().map_err(cannot)?.file_type())?;
    file.write_all(content).map_err(cannot)
}

fn refuse_special(path: &Path, kind: std::fs::FileType) -> Result<(), ToolError> {
    match special_kind(kind) {
        Some(what) => Err(ToolError::Model(format!(
            "{} is {what}, not a regular file; it cannot be written",
            path.display()
        ))),
        None => Ok(()),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileParams {
    /// Path relative to the repository root; parent directories are created.
    #[schemars(length(min = 1))]
    pub path: String,
    /// The whole new content of the file.
    pub content: String,
}

pub struct WriteFile;

#[async_trait]
impl TypedTool for WriteFile {
    type Params = WriteFileParams;
    crate::tool_named!("write_file");

    async fn run(
        &self,
        context: &ToolContext,
        params: WriteFileParams,
    ) -> Result<String, ToolError> {
        let path = writable(context, &params.path)?;
        if path.is_dir() {
            return Err(ToolError::Model(format!("{} is a directory", params.path)));
        }
        let existed = path.exists();
        write(&path, params.content.as_bytes())?;
        Ok(format!(
            "{} {} ({} lines)",
            if existed { "overwrote" } else { "created" },
            params.path,
            params.content.lines().count()
        ))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileParams {
    #[schemars(length(min = 1))]
    pub path: String,
    /// The exact text to replace; it must occur exactly once in the file.
    #[schemars(length(min = 1))]
    pub old_text: String,
    pub new_text: String,
}

pub struct EditFile;

#[async_trait]
impl TypedTool for EditFile {
    type Params = EditFileParams;
    crate::tool_named!("edit_file");

    async fn run(
        &self,
        context: &ToolContext,
        params: EditFileParams,
    ) -> Result<String, ToolError> {
        let path = writable(context, &params.path)?;
        let content = read(context, &params.path, "")?;
        if params.old_text.is_empty() {
            return Err(ToolError::Model(
                "old_text is empty; use write_file to create a file".into(),
            ));
        }
        let count = content.matches(&params.old_text).count();
        match count {
            1 => {
                let updated = content.replacen(&params.old_text, &params.new_text, 1);
                write(&path, updated.as_bytes())?;
                Ok(format!("edited {}", params.path))
            }
            0 => Err(ToolError::Model(format!(
                "old_text does not occur in {}; read the file and copy the text exactly",
                params.path
            ))),
            n => Err(ToolError::Model(format!(
                "old_text occurs {n} times in {}; include more surrounding lines so it matches once",
                params.path
            ))),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyPatchParams {
    /// A unified diff (as `git diff` prints it) of one or more files; new files from /dev/null,
    /// deleted files to /dev/null.
    #[schemars(length(min = 1))]
    pub patch: String,
}

pub struct ApplyPatch;

enum Change {
    Write(PathBuf, String),
    Delete(PathBuf),
}

#[async_trait]
impl TypedTool for ApplyPatch {
    type Params = ApplyPatchParams;
    crate::tool_named!("apply_patch");

    async fn run(
        &self,
        context: &ToolContext,
        params: ApplyPatchParams,
    ) -> Result<String, ToolError> {
        let diff = readable_patch(&params.patch)?;
        let changes = plan(context, &diff)?;
        carry_out(context, changes)
    }
}

/// The patch parsed; one with any problem, or with no file in it, is refused whole.
fn readable_patch(patch: &str) -> Result<bugloop_diff::Diff, ToolError> {
    let diff = bugloop_diff::parse(patch);
    if !diff.problems.is_empty() {
        let problems: Vec<String> = diff
            .problems
            .iter()
            .map(|p| format!("line {}: {}", p.line, p.message))
            .collect();
        return Err(ToolError::Model(format!(
            "the patch cannot be read; nothing was changed:\n{}",
            problems.join("\n")
        )));
    }
    if diff.files.is_empty() {
        return Err(ToolError::Model(
            "the patch contains no file changes".into(),
        ));
    }
    Ok(diff)
}

/// Every write and deletion the patch makes, each file's hunks checked against its current
/// text first: a patch that does not apply anywhere changes nothing.
fn plan(context: &ToolContext, diff: &bugloop_diff::Diff) -> Result<Vec<Change>, ToolError> {
    let mut changes = Vec::new();
    for file in &diff.files {
        if file.binary {
            return Err(ToolError::Model(format!(
                "{}: binary patches are not supported; nothing was changed",
                file.path()
            )));
        }
        match file.change {
            ChangeKind::Added => {
                let path = writable(context, file.path())?;
                if path.exists() {
                    return Err(ToolError::Model(format!(
                        "{} already exists; nothing was changed",
                        file.path()
                    )));
                }
                changes.push(Change::Write(path, apply(file, "")?));
            }
            ChangeKind::Deleted => {
                let path = writable(context, file.path())?;
                let current = read(context, file.path(), NOTHING_CHANGED)?;
                apply(file, &current)?;
                changes.push(Change::Delete(path));
            }
            _ => {
                let old = file.old_path.as_deref().unwrap_or(file.path());
                let old_path = writable(context, old)?;
                let current = read(context, old, NOTHING_CHANGED)?;
                let updated = apply(file, &current)?;
                let new_path = writable(context, file.path())?;
                if new_path != old_path {
                    if new_path.exists() {
                        return Err(ToolError::Model(format!(
                            "{} already exists; nothing was changed",
                            file.path()
                        )));
                    }
                    if file.change == ChangeKind::Renamed {
                        changes.push(Change::Delete(old_path));
                    }
                }
                changes.push(Change::Write(new_path, updated));
            }
        }
    }
    Ok(changes)
}

/// Writes and deletes in the patch's order; what was done, one line each.
fn carry_out(context: &ToolContext, changes: Vec<Change>) -> Result<String, ToolError> {
    let mut summary = Vec::new();
    for change in changes {
        match change {
            Change::Write(path, content) => {
                write(&path, content.as_bytes())?;
                summary.push(format!("wrote {}", context.workspace.relative(&path)));
            }
            Change::Delete(path) => {
                std::fs::remove_file(&path).map_err(|e| {
                    ToolError::Model(format!("cannot delete {}: {e}", path.display()))
                })?;
                summary.push(format!("deleted {}", context.workspace.relative(&path)));
            }
        }
    }
    Ok(summary.join("\n"))
}

const NOTHING_CHANGED: &str = "; nothing was changed";

/// A file's text, read as `read_file` reads (regular files only, never blocking); `then` is added
/// to an error.
fn read(context: &ToolContext, raw: &str, then: &str) -> Result<String, ToolError> {
    let mut text = String::new();
    context
        .workspace
        .open_file(raw)
        .and_then(|mut file| {
            file.read_to_string(&mut text)
                .map_err(|e| ToolError::Model(format!("cannot read {raw}: {e}")))
        })
        .map_err(|e| ToolError::Model(format!("{e}{then}")))?;
    Ok(text)
}

/// Applies one file's hunks to its current text, checking every context and removed line.
fn apply(file: &bugloop_diff::FileDiff, current: &str) -> Result<String, ToolError> {
    let lines: Vec<&str> = current.lines().collect();
    let mut trailing_newline = current.is_empty() || current.ends_with('\n');
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut cursor = 0usize;
    for hunk in &file.hunks {
        let start = if hunk.old_len == 0 {
            hunk.old_start as usize
        } else {
            (hunk.old_start as usize).saturating_sub(1)
        };
        if start < cursor || start > lines.len() {
            return Err(ToolError::Model(format!(
                "{}: hunk at line {} is out of order or past the end of the file ({} lines); nothing was changed",
                file.path(),
                hunk.old_start,
                lines.len()
            )));
        }
        out.extend(lines[cursor..start].iter().map(|l| (*l).to_owned()));
        cursor = start;
        for line in &hunk.lines {
            match line.kind {
                LineKind::Context | LineKind::Removed => {
                    let found = lines.get(cursor).map(|l| l.trim_end_matches('\r'));
                    if found != Some(line.text.as_str()) {
                        return Err(ToolError::Model(format!(
                            "{}: line {} is {:?} but the patch expects {:?}; nothing was changed (read the file again and regenerate the patch)",
                            file.path(),
                            cursor + 1,
                            found.unwrap_or("<end of file>"),
                            line.text
                        )));
                    }
                    if line.kind == LineKind::Context {
                        out.push(lines[cursor].to_owned());
                    }
                    cursor += 1;
                }
                LineKind::Added => out.push(line.text.clone()),
            }
            if line.no_newline {
                trailing_newline = line.kind == LineKind::Removed;
            }
        }
    }
    out.extend(lines[cursor..].iter().map(|l| (*l).to_owned()));
    let mut text = out.join("\n");
    if trailing_newline && !out.is_empty() {
        text.push('\n');
    }
    Ok(text)
}
