//! Reverting a merged change as plumbing: the change from `before` to `after` taken back out of
//! `onto` by a three-way merge (`git merge-tree --write-tree` with `after` as the merge base and
//! `before` as the other side), written with `commit-tree`. No work tree, index or hook is
//! involved, and attributes are read from the empty tree (`--attr-source`), so nothing in the
//! reverted code chooses a program to run.

use crate::{Git, GitError};

/// What reverting gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revert {
    /// The revert commit, on top of `onto`.
    Commit(String),
    /// `onto` changed the same lines since: the paths that conflict.
    Conflicts(Vec<String>),
    /// Nothing to revert: `onto` no longer holds the change.
    Empty,
}

/// Who a commit is by: a name and an email.
pub type Author<'a> = (&'a str, &'a str);

impl Git {
    /// Takes the change `before..after` back out of `onto` as one commit with `message` by
    /// `author`. `before` and `after` need not be ancestors of `onto` (a squash merge's commits
    /// are not): the change is reverted by content.
    pub fn revert(
        &self,
        after: &str,
        before: &str,
        onto: &str,
        message: &str,
        author: Author<'_>,
    ) -> Result<Revert, GitError> {
        for commit in [after, before, onto] {
            if commit.starts_with('-') || commit.is_empty() {
                return Err(GitError::Invalid(format!(
                    "{commit:?} is not a commit to revert with"
                )));
            }
        }
        let merge_base = format!("--merge-base={after}");
        // Exit 1 is a merge with conflicts; its output still starts with the tree. Attributes
        // come from the empty tree, so the code's `.gitattributes` picks no merge driver (a
        // program) to run here.
        let attr_source = format!("--attr-source={}", crate::EMPTY_TREE);
        let output = self
            .command()
            .args([
                &attr_source,
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "-z",
                &merge_base,
                onto,
                before,
            ])
            .output_accepting(&[0, 1])
            .map_err(|error| match error {
                GitError::Failed { message, .. } if message.contains("unknown option") => {
                    GitError::Invalid(format!(
                        "reverting needs git 2.40 or later (`git --attr-source`, `merge-tree \
                         --merge-base`); this is {}",
                        crate::version().unwrap_or_else(|_| "an older git".to_owned())
                    ))
                }
                other => other,
            })?;
        let mut fields = output
            .split(|b| *b == 0)
            .map(|field| String::from_utf8_lossy(field).into_owned());
        let tree = fields.next().unwrap_or_default();
        let conflicts: Vec<String> = fields.filter(|f| !f.is_empty()).collect();
        if !conflicts.is_empty() {
            let mut conflicts = conflicts;
            conflicts.dedup();
            return Ok(Revert::Conflicts(conflicts));
        }
        let onto_tree = self.run(&["rev-parse", "--verify", &format!("{onto}^{{tree}}")])?;
        if tree.trim() == onto_tree {
            return Ok(Revert::Empty);
        }
        let (name, email) = author;
        let commit = self
            .command()
            .args(["commit-tree", tree.trim(), "-p", onto, "-m", message])
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_COMMITTER_NAME", name)
            .env("GIT_COMMITTER_EMAIL", email)
            .text()?;
        Ok(Revert::Commit(commit))
    }

    /// The parents of `commit`, first parent first.
    pub fn parents(&self, commit: &str) -> Result<Vec<String>, GitError> {
        let line = self.run(&["rev-list", "--parents", "-n", "1", commit, "--"])?;
        Ok(line.split_whitespace().skip(1).map(str::to_owned).collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = bugloop_testkit::run_ok(
            std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .current_dir(dir),
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn commit(dir: &Path, file: &str, text: &str, message: &str) -> String {
        std::fs::write(dir.join(file), text).unwrap();
        git(dir, &["add", file]);
        git(dir, &["commit", "-q", "-m", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    /// Reverts `after` (the change from `before`) on top of `onto` as the bot: the commit made.
    fn reverted(repo: &Git, after: &str, before: &str, onto: &str, message: &str) -> String {
        let Revert::Commit(reverted) = repo
            .revert(after, before, onto, message, ("bot", "bot@x"))
            .unwrap()
        else {
            panic!("expected a commit");
        };
        reverted
    }

    #[test]
    fn a_merged_change_is_taken_out_of_later_work_and_conflicts_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        commit(root, "a.py", "x = 1\ny = 2\n", "start");
        let before = commit(root, "b.py", "b = 1\n", "other");
        let after = commit(root, "a.py", "x = 10\ny = 2\n", "the solution");
        let later = commit(root, "b.py", "b = 2\n", "later work");
        let repo = Git::open(root).unwrap();
        let reverted = reverted(&repo, &after, &before, &later, "Revert the solution");
        assert_eq!(
            git(root, &["show", &format!("{reverted}:a.py")]),
            "x = 1\ny = 2"
        );
        assert_eq!(git(root, &["show", &format!("{reverted}:b.py")]), "b = 2");
        assert_eq!(repo.parents(&reverted).unwrap(), vec![later]);
        assert_eq!(
            git(root, &["log", "-1", "--format=%an %s", &reverted]),
            "bot Revert the solution"
        );
        // The same lines changed again since: a conflict, nothing written.
        let rewritten = commit(root, "a.py", "x = 11\ny = 2\n", "changed again");
        assert_eq!(
            repo.revert(&after, &before, &rewritten, "m", ("bot", "bot@x"))
                .unwrap(),
            Revert::Conflicts(vec!["a.py".to_owned()])
        );
        // Already undone by hand: nothing to revert.
        let undone = commit(root, "a.py", "x = 1\ny = 2\n", "undone");
        assert_eq!(
            repo.revert(&after, &before, &undone, "m", ("bot", "bot@x"))
                .unwrap(),
            Revert::Empty
        );
        assert!(
            repo.revert("--evil", &before, &undone, "m", ("b", "b"))
                .is_err()
        );
    }

    /// The reverted code's `.gitattributes` cannot pick a merge driver (a program the host's git
    /// configuration names) to run on the host while the revert is merged.
    #[test]
    fn the_code_s_attributes_choose_no_merge_driver() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let ran = root.join("driver-ran");
        git(root, &["init", "-q", "-b", "main"]);
        git(
            root,
            &[
                "config",
                "merge.canary.driver",
                &format!("touch {}; false", ran.display()),
            ],
        );
        commit(root, ".gitattributes", "*.py merge=canary\n", "attributes");
        let before = commit(root, "a.py", "x = 1\n\n\n\ny = 2\n", "start");
        let after = commit(root, "a.py", "x = 10\n\n\n\ny = 2\n", "the solution");
        // Later work changes the same file elsewhere: a content merge, where a driver would run.
        let later = commit(root, "a.py", "x = 10\n\n\n\ny = 20\n", "later work");
        let repo = Git::open(root).unwrap();
        let reverted = reverted(&repo, &after, &before, &later, "Revert");
        assert!(!ran.exists(), "a merge driver ran on the host");
        assert_eq!(
            git(root, &["show", &format!("{reverted}:a.py")]),
            "x = 1\n\n\n\ny = 20"
        );
    }
}
