//! Task trees: the directory an agent and its commands work in, and how bugloop gets a commit out
//! of it without trusting anything in it.
//!
//! A task tree is a plain directory with the files of a commit, written by bugloop from git's
//! object store (no git directory in it, only an empty `.git` as the mount point below, so no
//! hook, filter, fsmonitor or config of the tree's can ever run on the host). Commands inside the sandbox see a sanitized git directory at its `.git`
//! ([`ShadowGit`]: HEAD, a minimal config, the repository's objects read-only). After a run,
//! [`TaskTree::changes`] walks the tree as data (regular files; symlinks only when their target
//! stays inside the tree; everything else skipped) and [`TaskTree::commit`] writes the result
//! with `git fast-import` into the repository's object store, with bugloop's own git directory
//! and no working tree at all.
//!
//! Here: making, resetting and removing a tree; `export` writes a commit's files, `shadow` is the
//! sanitized git directory, `changes` reads the tree back, `files` is bugloop's own reads and
//! writes of single files, and `commit` gets a commit (or a snapshot) out of it.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use bugloop_git::GitCommand;

use crate::SandboxError;
use crate::owner::force_remove;
use crate::settings::GitMount;

mod changes;
mod commit;
mod export;
mod files;
mod shadow;

pub use self::changes::{Change, ChangeKind, Changes};
use self::export::{Stamp, TreeEntry, TreeSource, list_tree, write_files};
pub use self::shadow::ShadowGit;

/// Files larger than this are not committed (they are reported instead).
const MAX_COMMITTED_FILE: u64 = 100 << 20;
/// A commit whose files add up to more than this is not checked out: a small repository can name
/// one large blob a thousand times.
const MAX_TREE_BYTES: u64 = 8 << 30;

fn io_error(path: &Path, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Io(format!("{}: {error}", path.display()))
}

/// git run by bugloop on the host: always against an explicit git directory, from inside it (so
/// no discovery ever starts in a tree an agent wrote), hardened by [`GitCommand::in_git_dir`].
fn host_git(git_dir: &Path) -> GitCommand {
    GitCommand::in_git_dir(git_dir)
}

fn git_text(git_dir: &Path, args: &[&str]) -> Result<String, SandboxError> {
    Ok(host_git(git_dir).args(args).text()?)
}

/// Creates an empty tree with the mount point of its sanitized git directory: a command sees the
/// shadow at the tree's `.git`, and bubblewrap cannot make that mount point in a tree it binds
/// read-only (a reader's `git log` would fail). Nothing ever reads it on the host: the tree's
/// changes are listed without `.git`, and host git never starts in a tree.
pub(crate) fn make_tree(tree: &Path) -> Result<(), SandboxError> {
    std::fs::create_dir(tree).map_err(|e| io_error(tree, e))?;
    let mount = tree.join(".git");
    std::fs::create_dir(&mount).map_err(|e| io_error(&mount, e))
}

/// A task's tree of files and the commit it stands on. Removed when dropped.
#[derive(Debug)]
pub struct TaskTree {
    common: PathBuf,
    root: PathBuf,
    tree: PathBuf,
    shadow: ShadowGit,
    head: String,
    base_entries: BTreeMap<Vec<u8>, TreeEntry>,
    stamps: BTreeMap<Vec<u8>, Stamp>,
    sha256: bool,
    reference: String,
    removed: bool,
    /// Held while the tree is in use: another run never takes it for a leftover.
    _claim: crate::owner::Claim,
}

/// Whether the process `pid` still runs (a run's leftovers are cleared only once it is gone).
pub fn process_alive(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// A new private directory for a task, held by this run until it is removed (what killed runs
/// left is cleared first): `bugloop/tasks/<prefix>-<owner>-<random>` in the git directory, or,
/// where another user could replace what bugloop makes there (a checkout another user owns,
/// reviewed as root: [`bugloop_dir`]), `bugloop-tree-<owner>-<random>` in the temporary
/// directory's safe place. Made as `mkdtemp` makes one, never one that is there: two runs
/// whose owners read alike (process 1 of two containers, started in the same tick) never share
/// one. Reachable by its owner only: whatever a sandboxed command leaves in a task tree (a
/// setuid copy of a shell, say) is out of other local users' reach.
fn claimed_task_dir(
    common: &Path,
    prefix: &str,
) -> Result<(PathBuf, crate::owner::Claim), SandboxError> {
    let Some(bugloop) = bugloop_dir(common) else {
        let root = crate::reach::temp_root().map_err(|e| io_error(common, e))?;
        crate::owner::remove_stale(&root, TREE_PREFIX);
        return crate::owner::claimed_dir(&root, TREE_PREFIX).map_err(|e| io_error(&root, e));
    };
    remove_stale(common);
    let tasks = bugloop.join("tasks");
    std::fs::create_dir_all(&tasks).map_err(|e| io_error(&tasks, e))?;
    std::fs::set_permissions(&tasks, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| io_error(&tasks, e))?;
    crate::owner::claimed_dir(&tasks, &format!("{prefix}-")).map_err(|e| io_error(&tasks, e))
}

/// What a task's directory is named in the temporary directory (see [`claimed_task_dir`]).
const TREE_PREFIX: &str = "bugloop-tree-";

/// `bugloop` in the git directory `common`, where bugloop keeps a run's task trees and copies
/// of the index, when no other user can replace what it makes there: the git directory and
/// every directory above it root's or ours (sticky where shared), and `bugloop` itself, when
/// it is there already, too. `None` otherwise: an attacker's review, as the owner of a
/// checkout root reviewed, swapped a task tree there for its own and the analyzers read that.
fn bugloop_dir(common: &Path) -> Option<PathBuf> {
    let bugloop = crate::reach::safe_dir(common)?.join("bugloop");
    let there = std::fs::symlink_metadata(&bugloop).is_ok();
    (!there || crate::reach::safe_dir(&bugloop).as_ref() == Some(&bugloop)).then_some(bugloop)
}

/// Removes task trees (and worktrees of older versions, and copies of the index) a run that was
/// killed left: the next run clears them (`<name>-<owner>-<n>`, see [`crate::owner`]).
fn remove_stale(common: &Path) {
    if let Ok(entries) = std::fs::read_dir(common.join("bugloop")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            // By the name alone: beside a copy in use stands git's own `.lock`, no claim.
            let owner = name
                .strip_prefix("index-")
                .and_then(|n| n.split('-').next());
            if owner.is_some_and(|owner| crate::owner::left_by(&entry.path(), owner)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    for dir in ["bugloop/tasks", "bugloop/worktrees"] {
        let Ok(entries) = std::fs::read_dir(common.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let owner = name
                .rsplit('-')
                .nth(if dir.ends_with("tasks") { 1 } else { 0 });
            if owner.is_some_and(|owner| crate::owner::abandoned(&entry.path(), owner)) {
                let path = entry.path();
                force_remove(&path);
                let _ = std::fs::remove_file(path.with_extension("gitfile"));
            }
        }
    }
    let _ = git_text(common, &["worktree", "prune"]);
}

impl TaskTree {
    /// Writes the files of `revision` of the repository at `repo` into a new task tree under
    /// `<git common dir>/bugloop/tasks/`.
    pub fn create(repo: &Path, revision: &str, name: &str) -> Result<TaskTree, SandboxError> {
        let common = bugloop_git::common_dir(repo)?;
        let commit = git_text(
            &common,
            &[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{revision}^{{commit}}"),
            ],
        )?;
        Self::create_from(&common, &commit, &TreeSource::Commit(commit.clone()), name)
    }

    /// A task tree holding the user's index (what is staged) on top of `head`.
    pub fn from_index(repo: &Path, head: &str, name: &str) -> Result<TaskTree, SandboxError> {
        Self::from_index_with(repo, head, name, false)
    }

    /// A task tree holding the working tree on top of `head`: tracked files as they are, and
    /// files git does not track and does not ignore (never an ignored `.env`). Added to a copy
    /// of the index, as `git stash create` would, so the user's index is untouched; sandboxed
    /// commands then read a tree of bugloop's own, whatever the repository's permissions.
    pub fn from_working_tree(
        repo: &Path,
        head: &str,
        name: &str,
    ) -> Result<TaskTree, SandboxError> {
        Self::from_index_with(repo, head, name, true)
    }

    fn from_index_with(
        repo: &Path,
        head: &str,
        name: &str,
        working_tree: bool,
    ) -> Result<TaskTree, SandboxError> {
        let common = bugloop_git::common_dir(repo)?;
        let index = PathBuf::from(
            GitCommand::in_work_tree(repo)
                .args(["rev-parse", "--path-format=absolute", "--git-path", "index"])
                .text()?,
        );
        // A copy, so git's own reads never touch the user's index file; a name of its own
        // (`index-<owner>-<random>`), never one another run uses, where no one else can replace
        // it.
        let parent = match bugloop_dir(&common) {
            Some(bugloop) => bugloop,
            None => crate::reach::temp_root().map_err(|e| io_error(&common, e))?,
        };
        std::fs::create_dir_all(&parent).map_err(|e| io_error(&parent, e))?;
        let copy = tempfile::Builder::new()
            .prefix(&format!("index-{}-", crate::owner::token()))
            .rand_bytes(12)
            .tempfile_in(&parent)
            .and_then(|file| file.into_temp_path().keep().map_err(|e| e.error))
            .map_err(|e| io_error(&parent, e))?;
        std::fs::copy(&index, &copy).map_err(|e| io_error(&index, e))?;
        if working_tree {
            let added = GitCommand::in_work_tree(repo)
                .env("GIT_INDEX_FILE", &copy)
                .args(["add", "--all", "--", ":/"])
                .output();
            if let Err(error) = added {
                let _ = std::fs::remove_file(&copy);
                return Err(error.into());
            }
        }
        let tree = Self::create_from(
            &common,
            head,
            &TreeSource::Index {
                index: copy.clone(),
            },
            name,
        );
        let _ = std::fs::remove_file(&copy);
        tree
    }

    fn create_from(
        common: &Path,
        commit: &str,
        source: &TreeSource,
        name: &str,
    ) -> Result<TaskTree, SandboxError> {
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let (root, claim) = claimed_task_dir(common, &safe)?;
        let label = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tree = root.join("tree");
        make_tree(&tree)?;
        let result = (|| {
            let base_entries = list_tree(common, source)?;
            let stamps = write_files(common, &tree, &base_entries)?;
            let shadow = ShadowGit::create(common, &root.join("git"), commit)?;
            let sha256 = git_text(common, &["rev-parse", "--show-object-format"])
                .is_ok_and(|f| f == "sha256");
            Ok::<_, SandboxError>((base_entries, stamps, shadow, sha256))
        })();
        match result {
            Ok((base_entries, stamps, shadow, sha256)) => Ok(TaskTree {
                common: common.to_path_buf(),
                root,
                tree,
                shadow,
                head: commit.to_owned(),
                base_entries,
                stamps,
                sha256,
                reference: format!("refs/bugloop/tasks/{label}"),
                removed: false,
                _claim: claim,
            }),
            Err(error) => {
                force_remove(&root);
                Err(error)
            }
        }
    }

    /// The directory with the files.
    pub fn path(&self) -> &Path {
        &self.tree
    }

    /// The commit the tree stands on (advanced by [`TaskTree::commit`]).
    pub fn head(&self) -> &str {
        &self.head
    }

    /// The sanitized git directory sandboxed commands see at the tree's `.git`.
    pub fn git_mount(&self) -> GitMount {
        self.shadow.mount()
    }

    /// Puts the tree back to HEAD: everything an attempt left is gone.
    pub fn reset(&mut self) -> Result<(), SandboxError> {
        force_remove(&self.tree);
        make_tree(&self.tree)?;
        self.stamps = write_files(&self.common, &self.tree, &self.base_entries)?;
        Ok(())
    }

    /// Removes the tree now (also done on drop).
    pub fn remove(mut self) -> Result<(), SandboxError> {
        self.cleanup();
        Ok(())
    }

    fn cleanup(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        force_remove(&self.root);
        let _ = std::fs::remove_file(self.root.join("git").with_extension("gitfile"));
        let _ = git_text(&self.common, &["update-ref", "-d", &self.reference]);
    }
}

impl Drop for TaskTree {
    fn drop(&mut self) {
        self.cleanup();
    }
}

#[cfg(test)]
mod tests {
    use super::changes::{object_id, symlink_stays_inside};
    use super::commit::quote_path;
    use super::export::safe_relative;
    use super::*;

    /// Task trees stay in a git directory no other user can change; one in a checkout another
    /// user owns (reviewed as root) goes to the temporary directory, where that user cannot
    /// swap it for a tree of theirs.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn task_trees_go_only_where_no_one_else_can_replace_them() {
        let root = tempfile::tempdir().unwrap();
        let common = root.path().join("repo/.git");
        std::fs::create_dir_all(&common).unwrap();
        let ours = bugloop_dir(&common).unwrap();
        assert_eq!(ours, common.canonicalize().unwrap().join("bugloop"));
        std::fs::create_dir(&ours).unwrap();
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(bugloop_dir(&common), None, "open to every user's writes");
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o700)).unwrap();
        if nix::unistd::Uid::effective().is_root() {
            let other = nix::unistd::Uid::from_raw(65534);
            nix::unistd::chown(&common, Some(other), None).unwrap();
            assert_eq!(bugloop_dir(&common), None, "another user's git directory");
            let tree = claimed_task_dir(&common, "test").unwrap().0;
            assert!(!tree.starts_with(&common), "{}", tree.display());
            force_remove(&tree);
        }
    }

    #[test]
    fn symlinks_must_stay_inside() {
        assert!(symlink_stays_inside(Path::new("a/link"), b"../b"));
        assert!(symlink_stays_inside(Path::new("link"), b"src/lib.rs"));
        assert!(!symlink_stays_inside(Path::new("link"), b"../outside"));
        assert!(!symlink_stays_inside(Path::new("a/link"), b"../../x"));
        assert!(!symlink_stays_inside(Path::new("link"), b"/etc/passwd"));
        assert!(!symlink_stays_inside(Path::new("link"), b".git/config"));
        assert!(!symlink_stays_inside(Path::new("a/link"), b"../.GIT/hooks"));
    }

    #[test]
    fn unsafe_tree_paths_are_not_written() {
        assert!(safe_relative(b"src/lib.rs").is_some());
        assert!(safe_relative(b"../x").is_none());
        assert!(safe_relative(b"a/.git/config").is_none());
        assert!(safe_relative(b"a/.GiT").is_none());
        assert!(safe_relative(b"/abs").is_none());
        assert!(safe_relative(b"").is_none());
    }

    /// A test bugloop places is written as a regular file inside the tree only: through a
    /// directory that is a symlink out of the tree, over a symlink, or above the tree, never.
    #[test]
    fn a_placed_file_never_goes_through_a_link() {
        let repo = bugloop_testkit::TestRepo::with_files(&[("kept.txt", "kept\n")]);
        let tree = TaskTree::create(repo.path(), &repo.head(), "placing").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), tree.path().join("tests")).unwrap();
        let refused = tree
            .write_regular_file(Path::new("tests/test_x.py"), b"x")
            .unwrap_err();
        assert!(
            refused.contains("is not a directory of the tree"),
            "{refused}"
        );
        assert!(!outside.path().join("test_x.py").exists());
        let target = outside.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        std::os::unix::fs::symlink(&target, tree.path().join("linked.py")).unwrap();
        tree.write_regular_file(Path::new("linked.py"), b"ours")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        let placed = std::fs::symlink_metadata(tree.path().join("linked.py")).unwrap();
        assert!(placed.is_file(), "the link is replaced by a regular file");
        for path in ["../x.py", "/tmp/x.py", ".git/hooks/pre-commit"] {
            assert!(
                tree.write_regular_file(Path::new(path), b"x").is_err(),
                "{path}"
            );
        }
        tree.write_regular_file(Path::new("new/deep/test.py"), b"ok")
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.path().join("new/deep/test.py")).unwrap(),
            "ok"
        );
    }

    /// A directory named like `.git` (in another case, or a nested repository's) is never
    /// committed, and never left out without a word.
    #[test]
    fn a_directory_named_like_git_is_left_out_and_said() {
        let repo = bugloop_testkit::TestRepo::with_files(&[("kept.txt", "kept\n")]);
        let mut tree = TaskTree::create(repo.path(), &repo.head(), "git-named").unwrap();
        for (dir, file) in [
            (".GIT", "config"),
            ("sub/.git", "HEAD"),
            ("x/.git ", "b"),
            ("y/.git.", "c"),
            ("z/.g\u{200C}it", "d"),
        ] {
            std::fs::create_dir_all(tree.path().join(dir)).unwrap();
            std::fs::write(tree.path().join(dir).join(file), "x").unwrap();
        }
        std::fs::create_dir_all(tree.path().join("w")).unwrap();
        std::fs::write(tree.path().join("w/.git"), "gitdir: /elsewhere\n").unwrap();
        std::fs::write(tree.path().join("new.txt"), "new\n").unwrap();
        let changes = tree.changes().unwrap();
        assert_eq!(changes.paths(), ["new.txt"]);
        let said = |path: &str| format!("`{path}`: named like .git, which git never commits");
        assert_eq!(
            changes.skipped,
            [
                said(".GIT"),
                said("sub/.git"),
                said("w/.git"),
                said("x/.git "),
                said("y/.git."),
                said("z/.g\u{200C}it"),
            ]
        );
        // And the commit of what is left goes through.
        tree.commit(&changes, "new", ("bugloop", "bugloop@bugloop.invalid"))
            .unwrap();
    }

    #[test]
    fn fast_import_paths_are_quoted() {
        assert_eq!(quote_path(b"plain path"), b"plain path".to_vec());
        assert_eq!(quote_path(b"a\nb"), b"\"a\\nb\"".to_vec());
        assert_eq!(quote_path(b"\"q"), b"\"\\\"q\"".to_vec());
        assert_eq!(quote_path(b"\x01"), b"\"\\001\"".to_vec());
    }

    /// What an attempt left in one tree (an edit, a new file, a deletion, a symlink out of the
    /// tree) is found again in another tree from the same commit, as the same changes.
    #[test]
    fn a_snapshot_restores_the_edits_in_another_tree() {
        let repo = bugloop_testkit::TestRepo::with_files(&[
            ("kept.txt", "kept\n"),
            ("edited.txt", "one\n"),
            ("gone.txt", "gone\n"),
        ]);
        let head = repo.head();
        let first = TaskTree::create(repo.path(), &head, "attempt").unwrap();
        std::fs::write(first.path().join("edited.txt"), "two\n").unwrap();
        std::fs::create_dir(first.path().join("tests")).unwrap();
        std::fs::write(first.path().join("tests/new.txt"), "new\n").unwrap();
        std::fs::remove_file(first.path().join("gone.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", first.path().join("out")).unwrap();
        let changes = first.changes().unwrap();
        let reference = "refs/bugloop/test/attempt-1";
        let snapshot = first
            .snapshot(&changes, "attempt 1", ("bot", "bot@x"), reference)
            .unwrap();
        assert_eq!(first.head(), head, "HEAD does not move");
        // Taken again (a second attempt 1 after a retry): replaced.
        let again = first
            .snapshot(&changes, "attempt 1", ("bot", "bot@x"), reference)
            .unwrap();
        assert_eq!(repo.git(&["rev-parse", reference]), again);
        drop(first);

        let mut second = TaskTree::create(repo.path(), &head, "resumed").unwrap();
        second.restore(&snapshot).unwrap();
        let restored = second.changes().unwrap();
        let shown: Vec<(String, ChangeKind)> = restored
            .changes
            .iter()
            .map(|c| (c.path.clone(), c.kind))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("edited.txt".to_owned(), ChangeKind::Modified),
                ("gone.txt".to_owned(), ChangeKind::Deleted),
                ("tests/new.txt".to_owned(), ChangeKind::Added),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(second.path().join("kept.txt")).unwrap(),
            "kept\n"
        );
        assert!(restored.refused.is_empty(), "{:?}", restored.refused);
        assert!(second.restore("0123456789abcdef").is_err());
    }

    #[test]
    fn blob_ids_match_git() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            object_id(false, "blob", b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    /// A tree a killed run left is cleared by the next run, even when that run has the killed
    /// one's process id (process 1 of a container, run after run); a live run's stays.
    #[test]
    fn a_killed_runs_tree_is_cleared_though_its_id_came_round_again() {
        let repo = bugloop_testkit::TestRepo::with_files(&[("kept.txt", "kept\n")]);
        let tasks = repo.path().join(".git/bugloop/tasks");
        let pid = std::process::id();
        let left = [format!("review-{pid}_1-0"), format!("review-{pid}-0")];
        let live = format!("review-{}-7", crate::owner::token());
        for name in left.iter().chain([&live]) {
            std::fs::create_dir_all(tasks.join(name).join("tree")).unwrap();
        }
        // Both made an hour ago, and no one holds them.
        for name in &left {
            let aged = std::process::Command::new("touch")
                .args(["-d", "1 hour ago"])
                .arg(tasks.join(name))
                .status()
                .unwrap();
            assert!(aged.success());
        }
        let tree = TaskTree::create(repo.path(), &repo.head(), "review").unwrap();
        for name in &left {
            assert!(!tasks.join(name).exists(), "{name} was left");
        }
        assert!(tasks.join(&live).exists());
        drop(tree);
    }
}
