//! Getting a commit out of a task tree: its changes written with `git fast-import` into the
//! repository's object store (bugloop's own git directory, no working tree), snapshots, and
//! restoring one into another tree.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Stdio;

use bugloop_git::GitCommand;

use crate::SandboxError;

use super::changes::{Change, ChangeKind, Changes, object_id, read_regular, symlink_stays_inside};
use super::export::{TreeSource, list_tree, write_files};
use super::{MAX_COMMITTED_FILE, TaskTree, force_remove, git_text, host_git, io_error, make_tree};

impl TaskTree {
    /// Commits `changes` on top of HEAD with `git fast-import` into the repository's object store
    /// (no work tree, no hooks), and advances HEAD. Refuses changes that were refused.
    pub fn commit(
        &mut self,
        changes: &Changes,
        message: &str,
        author: (&str, &str),
    ) -> Result<String, SandboxError> {
        if let Some(reason) = changes.refused.first() {
            return Err(SandboxError::Refused(reason.clone()));
        }
        let commit = self.import(&self.reference, &changes.changes, message, author)?;
        self.advance(&commit)?;
        Ok(commit)
    }

    /// Writes the tree's `changes` as a commit on top of HEAD at `reference`, without moving
    /// HEAD (replacing what `reference` held): what an unfinished piece of work looked like, for
    /// a later run to [`restore`](TaskTree::restore). Symlinks leading out of the tree are left out (they could
    /// never be committed).
    pub fn snapshot(
        &self,
        changes: &Changes,
        message: &str,
        author: (&str, &str),
        reference: &str,
    ) -> Result<String, SandboxError> {
        let kept: Vec<Change> = changes
            .changes
            .iter()
            .filter(|change| {
                change.mode != 0o120000
                    || change.kind == ChangeKind::Deleted
                    || std::fs::read_link(self.tree.join(OsStr::from_bytes(&change.raw))).is_ok_and(
                        |target| {
                            symlink_stays_inside(
                                Path::new(OsStr::from_bytes(&change.raw)),
                                target.as_os_str().as_bytes(),
                            )
                        },
                    )
            })
            .cloned()
            .collect();
        // Replaces what the reference held: fast-import refuses to move a branch backwards.
        git_text(&self.common, &["update-ref", "-d", reference])?;
        self.import(reference, &kept, message, author)
    }

    /// Puts the files of `commit` (a [`snapshot`](TaskTree::snapshot) of this tree) in the tree,
    /// HEAD staying where it is: they read as changes against HEAD, as the work they were.
    pub fn restore(&mut self, commit: &str) -> Result<(), SandboxError> {
        let commit = git_text(
            &self.common,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{commit}^{{commit}}"),
            ],
        )?;
        let entries = list_tree(&self.common, &TreeSource::Commit(commit))?;
        force_remove(&self.tree);
        make_tree(&self.tree)?;
        let stamps = write_files(&self.common, &self.tree, &entries)?;
        // A stamp stands for HEAD's content: only files that are as HEAD has them keep one.
        self.stamps = stamps
            .into_iter()
            .filter(|(path, _)| self.base_entries.get(path) == entries.get(path))
            .collect();
        Ok(())
    }

    /// Writes `changes` (read from the tree) on top of HEAD at `reference` with `git
    /// fast-import`; returns the commit.
    fn import(
        &self,
        reference: &str,
        changes: &[Change],
        message: &str,
        author: (&str, &str),
    ) -> Result<String, SandboxError> {
        let clean = |s: &str| s.replace(['<', '>', '\n', '\r'], "");
        let mut stream: Vec<u8> = Vec::new();
        let message = message.as_bytes();
        stream.extend_from_slice(
            format!(
                "commit {}\ncommitter {} <{}> now\ndata {}\n",
                reference,
                clean(author.0),
                clean(author.1),
                message.len()
            )
            .as_bytes(),
        );
        stream.extend_from_slice(message);
        stream.extend_from_slice(format!("\nfrom {}\n", self.head).as_bytes());
        for change in changes {
            let path = quote_path(&change.raw);
            match change.kind {
                ChangeKind::Deleted => {
                    stream.extend_from_slice(b"D ");
                    stream.extend_from_slice(&path);
                    stream.push(b'\n');
                }
                ChangeKind::Added | ChangeKind::Modified => {
                    let full = self.tree.join(OsStr::from_bytes(&change.raw));
                    let content = if change.mode == 0o120000 {
                        std::fs::read_link(&full)
                            .map_err(|e| io_error(&full, e))?
                            .as_os_str()
                            .as_bytes()
                            .to_vec()
                    } else {
                        read_regular(&full, MAX_COMMITTED_FILE)?.map_err(|reason| {
                            SandboxError::Refused(format!("{} {reason}", change.path))
                        })?
                    };
                    if object_id(self.sha256, "blob", &content) != change.oid {
                        return Err(SandboxError::Refused(format!(
                            "{} changed after it was read; nothing was committed",
                            change.path
                        )));
                    }
                    stream.extend_from_slice(format!("M {:o} inline ", change.mode).as_bytes());
                    stream.extend_from_slice(&path);
                    stream.extend_from_slice(format!("\ndata {}\n", content.len()).as_bytes());
                    stream.extend_from_slice(&content);
                    stream.push(b'\n');
                }
            }
        }
        stream.extend_from_slice(b"done\n");
        let import =
            host_git(&self.common).args(["fast-import", "--quiet", "--done", "--date-format=now"]);
        let args = import.describe();
        let mut child = import.spawn(Stdio::piped(), Stdio::null(), Stdio::piped())?;
        if let Some(mut stdin) = child.stdin.take() {
            let writer = std::thread::spawn(move || stdin.write_all(&stream));
            let _ = writer.join();
        }
        GitCommand::finish(&args, child)?;
        git_text(&self.common, &["rev-parse", "--verify", reference])
    }

    /// HEAD moves to `commit` (a commit made from this tree's contents).
    fn advance(&mut self, commit: &str) -> Result<(), SandboxError> {
        self.base_entries = list_tree(&self.common, &TreeSource::Commit(commit.to_owned()))?;
        self.stamps.clear();
        self.head = commit.to_owned();
        self.shadow.set_head(commit)
    }
}

/// A path for fast-import: C-style quoted when it holds anything that could end or confuse a
/// command line.
pub(super) fn quote_path(raw: &[u8]) -> Vec<u8> {
    let needs = raw.first() == Some(&b'"')
        || raw
            .iter()
            .any(|b| *b == b'\n' || *b == b'\\' || *b == b'"' || *b < 0x20 || *b == 0x7f);
    if !needs {
        return raw.to_vec();
    }
    let mut quoted = vec![b'"'];
    for byte in raw {
        match byte {
            b'"' => quoted.extend_from_slice(b"\\\""),
            b'\\' => quoted.extend_from_slice(b"\\\\"),
            b'\n' => quoted.extend_from_slice(b"\\n"),
            b'\t' => quoted.extend_from_slice(b"\\t"),
            0..=0x1f | 0x7f => quoted.extend_from_slice(format!("\\{byte:03o}").as_bytes()),
            _ => quoted.push(*byte),
        }
    }
    quoted.push(b'"');
    quoted
}
