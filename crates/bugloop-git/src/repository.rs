//! A repository's work tree and the queries bugloop asks of it: which change to review (a branch
//! against its merge base, a range, the index, the working tree) and its diff, the conversation
//! key, the trusted base, a file at a commit, the shared git directory.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::GitError;
use crate::change::{ChangeKey, ChangedFile, FileStatus, HeadState, SelectedChange, Selection};
use crate::command::GitCommand;

/// git's empty tree: the base of a repository without commits.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// A git repository's work tree.
#[derive(Debug, Clone)]
pub struct Git {
    root: PathBuf,
}

/// The shared git directory (`.git`, also from a linked worktree) of the repository containing
/// `dir`.
pub fn common_dir(dir: &Path) -> Result<PathBuf, GitError> {
    Ok(PathBuf::from(
        GitCommand::in_work_tree(dir)
            .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
            .text()?,
    ))
}

impl Git {
    /// The repository containing `dir`.
    pub fn open(dir: &Path) -> Result<Git, GitError> {
        if !dir.is_dir() {
            return Err(GitError::NotADirectory(dir.to_owned()));
        }
        let root = GitCommand::in_work_tree(dir)
            .args(["rev-parse", "--show-toplevel"])
            .text()
            .map_err(|error| match error {
                // A repository of another user's is one git refuses to work in, and says how
                // to allow it: that is said as git says it.
                GitError::Failed { message, .. } if message.contains("dubious ownership") => {
                    GitError::NotTrusted {
                        dir: dir.to_owned(),
                        message,
                    }
                }
                GitError::Failed { .. } => GitError::NotARepository(dir.to_owned()),
                other => other,
            })?;
        Ok(Git {
            root: PathBuf::from(root),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// git in this repository (see [`GitCommand`] for what is switched off).
    pub fn command(&self) -> GitCommand {
        GitCommand::in_work_tree(&self.root)
    }

    /// Runs git; exit status 1 counts as success where `allow_one` (diff --no-index).
    fn run_raw(&self, args: &[&str], allow_one: bool) -> Result<Vec<u8>, GitError> {
        let accepted: &[i32] = if allow_one { &[0, 1] } else { &[0] };
        self.command().args(args).output_accepting(accepted)
    }

    /// Runs git and returns its raw output.
    pub fn run_bytes(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        self.run_raw(args, false)
    }

    pub fn run(&self, args: &[&str]) -> Result<String, GitError> {
        Ok(String::from_utf8_lossy(&self.run_raw(args, false)?)
            .trim()
            .to_owned())
    }

    /// git's description of `branch` (`branch.<name>.description`), if it has one.
    pub fn branch_description(&self, branch: &str) -> Result<Option<String>, GitError> {
        let key = format!("branch.{branch}.description");
        let out = self
            .command()
            .args(["config", "--get", &key])
            .output_accepting(&[0, 1])?;
        Ok((!out.is_empty()).then(|| {
            let text = String::from_utf8_lossy(&out);
            text.strip_suffix('\n').unwrap_or(&text).to_owned()
        }))
    }

    /// Sets git's description of `branch`, as `git branch --edit-description` does.
    pub fn set_branch_description(&self, branch: &str, text: &str) -> Result<(), GitError> {
        let key = format!("branch.{branch}.description");
        self.command()
            .args(["config", "--replace-all", &key, text])
            .output()?;
        Ok(())
    }

    /// The shared git directory (`.git`, also from a linked worktree).
    pub fn common_dir(&self) -> Result<PathBuf, GitError> {
        common_dir(&self.root)
    }

    /// Where agent transcripts are kept: `<git common dir>/bugloop/runs`, shared by worktrees.
    pub fn runs_dir(&self) -> Result<PathBuf, GitError> {
        Ok(self.common_dir()?.join("bugloop").join("runs"))
    }

    /// HEAD's commit, or `None` in a repository without commits.
    pub fn head(&self) -> Option<String> {
        self.run(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
            .ok()
            .filter(|s| !s.is_empty())
    }

    /// The checked-out branch, `None` on a detached HEAD.
    pub fn current_branch(&self) -> Option<String> {
        self.run(&["symbolic-ref", "--quiet", "--short", "HEAD"])
            .ok()
            .filter(|s| !s.is_empty())
    }

    /// `origin/HEAD`'s target; else the branch git's `init.defaultBranch` names, when it
    /// exists; else `main`, `master` (or origin's). Never merely the branch checked out, nor
    /// the only branch there is: that may be a change fetched alone (`git fetch URL
    /// feature:feature`), whose own configuration would then be trusted. For the same reason
    /// `origin/HEAD` says nothing when origin's only branch is the one checked out: `git clone
    /// --single-branch -b feature` points it at that branch.
    pub fn default_branch(&self) -> Option<String> {
        if let Ok(target) = self.run(&[
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ]) && !target.is_empty()
            && !self.only_remote_branch_is_checked_out(&target)
        {
            return Some(target);
        }
        let configured = self
            .run(&["config", "--get", "init.defaultBranch"])
            .ok()
            .filter(|name| {
                !name.is_empty() && self.resolve(&format!("refs/heads/{name}")).is_some()
            });
        if configured.is_some() {
            return configured;
        }
        ["main", "master", "origin/main", "origin/master"]
            .into_iter()
            .find(|name| self.resolve(name).is_some())
            .map(str::to_owned)
    }

    /// Whether `origin/<name>` (`target`) is origin's only branch and the branch checked out
    /// is `name`.
    fn only_remote_branch_is_checked_out(&self, target: &str) -> bool {
        let Some(name) = target.strip_prefix("origin/") else {
            return false;
        };
        let remote = self
            .run(&[
                "for-each-ref",
                "--format=%(refname)",
                "refs/remotes/origin/",
            ])
            .unwrap_or_default();
        let branches: Vec<&str> = remote
            .lines()
            .filter(|r| *r != "refs/remotes/origin/HEAD")
            .collect();
        branches.len() == 1 && self.current_branch().as_deref() == Some(name)
    }

    /// The commit whose `.bugloop/config.yml` a local run trusts, with a label like
    /// `main@1a2b3c4`: the merge base of HEAD with the default branch (HEAD itself when it is on
    /// the default branch; the default branch's tip for unrelated histories, as [`Git::select`]
    /// does). `None` without commits or without a default branch.
    pub fn trusted_base(&self) -> Option<(String, String)> {
        let head = self.head()?;
        let branch = self.default_branch()?;
        let tip = self.resolve(&branch)?;
        let base = self
            .run(&["merge-base", &tip, &head])
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or(tip);
        Some((format!("{branch}@{}", short(&base)), base))
    }

    /// Fetches a pull request's head (`refs/pull/<number>/head`, which holds a fork's commits
    /// too) and its base branch from `remote`, the whole history when the clone is shallow (an
    /// Action's checkout is), so the merge base and the diff can be computed locally. The refs
    /// land under `refs/bugloop/pull/<number>/`; nothing checked out changes.
    pub fn fetch_pull_request(
        &self,
        remote: &str,
        number: u64,
        base_branch: &str,
    ) -> Result<(), GitError> {
        // The base branch's name comes from the forge; make sure it is one, not an option.
        let valid = !base_branch.starts_with('-')
            && self
                .run(&["check-ref-format", "--branch", base_branch])
                .is_ok();
        if !valid || remote.starts_with('-') {
            return Err(GitError::Invalid(format!(
                "cannot fetch pull request {number}: {base_branch:?} from {remote:?} is not a branch of a remote"
            )));
        }
        let head = format!("+refs/pull/{number}/head:refs/bugloop/pull/{number}/head");
        let base = format!("+refs/heads/{base_branch}:refs/bugloop/pull/{number}/base");
        let mut args = vec!["fetch", "--quiet", "--no-tags", "--no-recurse-submodules"];
        if self.run(&["rev-parse", "--is-shallow-repository"])? == "true" {
            args.push("--unshallow");
        }
        args.extend([remote, head.as_str(), base.as_str()]);
        self.run(&args).map(drop)
    }

    /// Whether `head` holds the change `commit` made: `Some(true)` when `commit` is in its
    /// history or a commit with the same patch is (the branch was rebased); `Some(false)` when
    /// every file `commit` changed is at `head` as it was before `commit` (reset away, or
    /// reverted); `None` otherwise (squashed, amended, or changed since: a review must look),
    /// and when either is not a commit here or `commit` has no parent.
    pub fn holds_change(&self, commit: &str, head: &str) -> Option<bool> {
        let (commit, head) = (self.resolve(commit)?, self.resolve(head)?);
        if self.is_ancestor(&commit, &head).ok()? {
            return Some(true);
        }
        let parent = self.resolve(&format!("{commit}^"))?;
        // `git cherry UPSTREAM HEAD LIMIT` marks each commit of LIMIT..HEAD `-` when UPSTREAM has
        // one with the same patch, `+` when not.
        let marks = self.run(&["cherry", &head, &commit, &parent]).ok()?;
        if !marks.trim().is_empty() && marks.lines().all(|line| line.starts_with('-')) {
            return Some(true);
        }
        let changed = self
            .run(&[
                "diff",
                "--name-only",
                "--no-renames",
                "-z",
                &parent,
                &commit,
            ])
            .ok()?;
        let as_before = changed
            .split('\0')
            .filter(|path| !path.is_empty())
            .all(|path| self.blob_id(&head, path) == self.blob_id(&parent, path));
        as_before.then_some(false)
    }

    /// The id of `path`'s blob at `commit` (`None`: no such file there).
    fn blob_id(&self, commit: &str, path: &str) -> Option<String> {
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{commit}:{path}"),
        ])
        .ok()
        .filter(|id| !id.is_empty())
    }

    /// A revision's commit id.
    pub fn resolve(&self, revision: &str) -> Option<String> {
        if revision.starts_with('-') {
            return None;
        }
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{revision}^{{commit}}"),
        ])
        .ok()
        .filter(|s| !s.is_empty())
    }

    /// Whether the working tree and index match HEAD (untracked files count as changes).
    pub fn is_clean(&self) -> Result<bool, GitError> {
        Ok(self.run(&["status", "--porcelain"])?.is_empty())
    }

    /// The files that keep the working tree from matching HEAD (changed, staged or untracked,
    /// not ignored), as `git status` names them: at most `most`, and how many there are.
    pub fn uncommitted(&self, most: usize) -> Result<(Vec<String>, usize), GitError> {
        let listed = self.run_raw(&["status", "--porcelain", "-z"], false)?;
        let names: Vec<String> = listed
            .split(|b| *b == 0)
            .filter(|entry| entry.len() > 3)
            .map(|entry| bugloop_domain::paths::display_path(&entry[3..]))
            .collect();
        let count = names.len();
        Ok((names.into_iter().take(most).collect(), count))
    }

    /// The conversation of the checked-out branch (or of the commit on a detached HEAD).
    pub fn conversation_key(&self) -> ChangeKey {
        match (self.current_branch(), self.head()) {
            (Some(branch), _) => ChangeKey(format!("branch:{branch}")),
            (None, Some(head)) => ChangeKey(format!("commit:{}", short(&head))),
            (None, None) => ChangeKey("unborn".to_owned()),
        }
    }

    /// `git diff` with `extra`, its attributes (which files are binary, `-diff`) read from
    /// `attributes_of`, the change's base: a branch's own `.gitattributes` (`*.py binary`) would
    /// otherwise hide its code from the review. Before git 2.40 (no `--attr-source`) they are
    /// the trees' own.
    fn diff_args(attributes_of: &str, extra: &[&str]) -> Vec<String> {
        let mut args = Vec::new();
        if crate::command::has_attr_source() && !attributes_of.starts_with('-') {
            args.push(format!("--attr-source={attributes_of}"));
        }
        args.extend(
            ["diff", "--no-ext-diff", "--no-textconv", "--find-renames"]
                .into_iter()
                .chain(extra.iter().copied())
                .map(str::to_owned),
        );
        args
    }

    fn diff(&self, attributes_of: &str, extra: &[&str]) -> Result<Vec<u8>, GitError> {
        let args = Self::diff_args(attributes_of, extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run_raw(&refs, false)
    }

    /// What `commit` changed against its first parent, with no context lines and renames
    /// found; no file's attributes (from any tree) nor textconv program shapes it, so a tree's
    /// own `.gitattributes` can neither hide a hunk nor pick a program to run.
    pub fn commit_diff(&self, commit: &str) -> Result<Vec<u8>, GitError> {
        let parent = format!("{commit}^");
        self.diff(EMPTY_TREE, &["-U0", "--no-color", &parent, commit])
    }

    /// What changed from commit `from` to commit `to`, whatever joins them (a rebase between
    /// them too), with no context lines, shaped by no tree's attributes; `None` when either is
    /// not a commit here.
    pub fn diff_between(&self, from: &str, to: &str) -> Result<Option<Vec<u8>>, GitError> {
        let (Some(from), Some(to)) = (self.resolve(from), self.resolve(to)) else {
            return Ok(None);
        };
        Ok(Some(
            self.diff(EMPTY_TREE, &["-U0", "--no-color", &from, &to])?,
        ))
    }

    /// Selects the change to review.
    pub fn select(&self, selection: &Selection) -> Result<SelectedChange, GitError> {
        let head_commit = self.head();
        match selection {
            Selection::Staged | Selection::Working => {
                self.select_uncommitted(*selection == Selection::Staged, head_commit)
            }
            Selection::Branch | Selection::Range { .. } => {
                let (base_rev, head_rev) = match selection {
                    Selection::Range { base, head } => (base.clone(), head.as_deref()),
                    _ => (None, None),
                };
                self.select_commits(base_rev, head_rev, head_commit)
            }
        }
    }

    /// What is staged (`staged`) or every uncommitted change, untracked files included, against
    /// HEAD (the empty tree without commits).
    fn select_uncommitted(
        &self,
        staged: bool,
        head_commit: Option<String>,
    ) -> Result<SelectedChange, GitError> {
        let base = head_commit.clone().unwrap_or_else(|| EMPTY_TREE.to_owned());
        let (diff, head, what) = if staged {
            (
                self.diff(&base, &["--cached", &base])?,
                HeadState::Index,
                "staged changes",
            )
        } else {
            let mut diff = self.diff(&base, &[&base])?;
            diff.extend(self.untracked_diff(&base)?);
            (diff, HeadState::WorkingTree, "uncommitted changes")
        };
        let against = head_commit
            .as_deref()
            .map_or("an empty repository".to_owned(), |h| {
                format!("HEAD ({})", short(h))
            });
        Ok(SelectedChange {
            key: self.conversation_key(),
            description: format!("{what} against {against}"),
            base,
            head,
            head_commit,
            diff,
        })
    }

    /// The commits from the merge base of `base_rev` (default: the default branch) and `head_rev`
    /// (default: HEAD) to `head_rev`.
    fn select_commits(
        &self,
        base_rev: Option<String>,
        head_rev: Option<&str>,
        head_commit: Option<String>,
    ) -> Result<SelectedChange, GitError> {
        if head_commit.is_none() && head_rev.is_none() {
            return Err(GitError::Selection(
                "the repository has no commits yet; review what is staged with \
                 `--staged` or every uncommitted file with `--working`"
                    .to_owned(),
            ));
        }
        let head_name = head_rev.unwrap_or("HEAD").to_owned();
        let head = self.resolve(&head_name).ok_or_else(|| {
            GitError::Selection(format!("--head {head_name:?} is not a commit here"))
        })?;
        let base_name = match base_rev {
            Some(base) => base,
            None => self.default_branch().ok_or_else(|| {
                GitError::Selection(
                    "no default branch to compare with (no origin/HEAD, init.defaultBranch, \
                     main or master); name one with `--base`"
                        .to_owned(),
                )
            })?,
        };
        let base_tip = self.resolve(&base_name).ok_or_else(|| {
            GitError::Selection(format!("--base {base_name:?} is not a commit here"))
        })?;
        let base = match self
            .run(&["merge-base", &base_tip, &head])
            .ok()
            .filter(|s| !s.is_empty())
        {
            Some(base) => base,
            // A shallow clone cut the history where the two meet: comparing with the base's
            // tip would show the base's own later commits as the change's, reverted.
            None if self
                .run(&["rev-parse", "--is-shallow-repository"])
                .is_ok_and(|shallow| shallow == "true") =>
            {
                return Err(GitError::Selection(format!(
                    "{head_name} and {base_name} meet in history this shallow clone does not \
                     have; fetch it (`git fetch --unshallow`, or `--deepen N`) or name the base \
                     commit with `--base`"
                )));
            }
            // Unrelated histories: compare the trees directly.
            None => base_tip,
        };
        let diff = self.diff(&base, &[&base, &head])?;
        let key = match head_rev {
            Some(name) => self.conversation_of(name, &head),
            None => self.conversation_key(),
        };
        let head_label = match (head_rev, self.current_branch()) {
            (Some(name), _) => name.to_owned(),
            (None, Some(branch)) => branch,
            (None, None) => format!("HEAD ({})", short(&head)),
        };
        Ok(SelectedChange {
            key,
            description: format!(
                "{head_label} against {base_name} (merge base {})",
                short(&base)
            ),
            base,
            head: HeadState::Commit(head),
            head_commit,
            diff,
        })
    }

    /// The conversation of a named head: its branch's when `name` names one, else its commit's
    /// (`head`).
    fn conversation_of(&self, name: &str, head: &str) -> ChangeKey {
        match self.run(&["rev-parse", "--abbrev-ref", "--verify", "--quiet", name]) {
            Ok(branch) if !branch.is_empty() && branch != "HEAD" && !branch.contains('^') => {
                ChangeKey(format!("branch:{branch}"))
            }
            _ => ChangeKey(format!("commit:{}", short(head))),
        }
    }

    /// What changed from an earlier head of a change to its current head, as a diff in the
    /// same format as the change's (attributes from the change's `base`), when the earlier head
    /// is an ancestor of the current one. `None` when it is not (the branch was rewritten: a
    /// force-push or a rebase) or is not in this repository.
    pub fn interdiff(
        &self,
        base: &str,
        since: &str,
        head: &str,
    ) -> Result<Option<Vec<u8>>, GitError> {
        let (Some(since), Some(head)) = (self.resolve(since), self.resolve(head)) else {
            return Ok(None);
        };
        if self.is_ancestor(&since, &head)? {
            Ok(Some(self.diff(base, &[&since, &head])?))
        } else {
            Ok(None)
        }
    }

    /// Whether `ancestor` is `of` or one of its ancestors (both must name commits).
    pub fn is_ancestor(&self, ancestor: &str, of: &str) -> Result<bool, GitError> {
        // `--is-ancestor` answers with its exit status: 0 yes, 1 no.
        let code = self
            .command()
            .args(["merge-base", "--is-ancestor", ancestor, of])
            .exit_code(&[0, 1])?;
        Ok(code == 0)
    }

    /// Untracked (not ignored) files as additions, so `--working` sees new files too.
    fn untracked_diff(&self, attributes_of: &str) -> Result<Vec<u8>, GitError> {
        let listed = self.run_raw(&["ls-files", "--others", "--exclude-standard", "-z"], false)?;
        let mut out = Vec::new();
        for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            // Handed over as bytes: a non-UTF-8 file name is reviewed like any other.
            let args = Self::diff_args(attributes_of, &["--no-index", "--", "/dev/null"]);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = self
                .command()
                .args(&refs)
                .arg(std::ffi::OsStr::from_bytes(path))
                .output_accepting(&[0, 1])?;
            out.extend(output);
        }
        Ok(out)
    }

    /// The files changed between two commits, with renames and copies detected.
    pub fn changed_files(&self, base: &str, head: &str) -> Result<Vec<ChangedFile>, GitError> {
        let raw = self.run_raw(
            &[
                "diff",
                "--name-status",
                "-z",
                "--find-renames",
                "--find-copies",
                base,
                head,
            ],
            false,
        )?;
        let mut fields = raw
            .split(|b| *b == 0)
            // Names as the diff shows them: a name that is not UTF-8 in git's quoted form.
            .map(bugloop_domain::paths::display_path);
        let mut files = Vec::new();
        while let Some(status) = fields.next() {
            if status.is_empty() {
                continue;
            }
            let kind = match status.as_bytes().first() {
                Some(b'A') => FileStatus::Added,
                Some(b'M') => FileStatus::Modified,
                Some(b'D') => FileStatus::Deleted,
                Some(b'R') => FileStatus::Renamed,
                Some(b'C') => FileStatus::Copied,
                _ => FileStatus::Other,
            };
            let first = fields.next().unwrap_or_default();
            let (path, previous_path) = if matches!(kind, FileStatus::Renamed | FileStatus::Copied)
            {
                (fields.next().unwrap_or_default(), Some(first))
            } else {
                (first, None)
            };
            files.push(ChangedFile {
                path,
                previous_path,
                status: kind,
            });
        }
        Ok(files)
    }

    /// A file's content at a commit (`None` when it does not exist there). `path` as
    /// [`bugloop_domain::paths::display_path`] names it: a quoted form names its bytes.
    pub fn show(&self, commit: &str, path: &str) -> Option<Vec<u8>> {
        self.command()
            .args(["cat-file", "blob"])
            .arg(object_name(commit, path)?)
            .output_accepting(&[0])
            .ok()
    }

    /// A file at a commit when it is at most `max` bytes (`Err` with its size when larger), read
    /// only then: a huge blob is never loaded to be refused. `Ok(None)` when it is not there.
    pub fn show_at_most(&self, commit: &str, path: &str, max: u64) -> Result<Option<Vec<u8>>, u64> {
        let Some(object) = object_name(commit, path) else {
            return Ok(None);
        };
        let Some(size) = self
            .command()
            .args(["cat-file", "-s"])
            .arg(object)
            .output_accepting(&[0])
            .ok()
            .and_then(|size| String::from_utf8_lossy(&size).trim().parse::<u64>().ok())
        else {
            return Ok(None);
        };
        if size > max {
            return Err(size);
        }
        Ok(self.show(commit, path))
    }
}

/// `commit:path` as git names a file at a commit, `path` in its display form turned back into
/// the name's bytes (`None` for a malformed quoted form).
fn object_name(commit: &str, path: &str) -> Option<std::ffi::OsString> {
    let mut object = format!("{commit}:").into_bytes();
    object.extend(bugloop_domain::paths::path_bytes(path)?);
    Some(std::ffi::OsString::from_vec(object))
}

/// Clones `url` into the empty directory `into` (hardened like every git bugloop runs; no
/// submodules, no checkout hooks), with `settings` (`(name, value)`, such as a credential
/// header) given for the clone only, through the environment: never on a command line, where
/// process listings and error messages show it, never written to the clone's configuration.
pub fn clone(url: &str, into: &Path, settings: &[(String, String)]) -> Result<(), GitError> {
    if url.starts_with('-') {
        return Err(GitError::Invalid(format!(
            "{url:?} is not a repository to clone"
        )));
    }
    let mut command = GitCommand::in_work_tree(into)
        .args([
            "clone",
            "--quiet",
            "--no-recurse-submodules",
            "--",
            url,
            ".",
        ])
        .env("GIT_CONFIG_COUNT", settings.len().to_string());
    for (index, (name, value)) in settings.iter().enumerate() {
        command = command
            .env(&format!("GIT_CONFIG_KEY_{index}"), name)
            .env(&format!("GIT_CONFIG_VALUE_{index}"), value);
    }
    command.text().map(drop)
}

/// The usual 7-character abbreviation.
pub fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests;
