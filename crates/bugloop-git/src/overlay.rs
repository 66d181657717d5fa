//! A commit that is another commit with some files taken from a third (or taken out): how a
//! solve's reproduction test is run where its fix is not (the start of the solve, the base's head
//! without it). Plumbing only, in an index file of its own: no work tree, no hook, no checkout
//! of the code.

use crate::revert::Author;
use crate::{Git, GitError};

impl Git {
    /// A commit on top of `base` whose tree is `base`'s with each of `paths` as it is in
    /// `source` (taken out where `source` does not have it), with `message` by `author`.
    pub fn overlay(
        &self,
        base: &str,
        source: &str,
        paths: &[String],
        message: &str,
        author: Author<'_>,
    ) -> Result<String, GitError> {
        for commit in [base, source] {
            if commit.starts_with('-') || commit.is_empty() {
                return Err(GitError::Invalid(format!(
                    "{commit:?} is not a commit to take files from"
                )));
            }
        }
        let scratch = tempfile::Builder::new()
            .prefix("overlay-")
            .tempdir_in(self.runs_dir_created()?)
            .map_err(|e| GitError::Invalid(format!("a scratch index for a commit: {e}")))?;
        let index = scratch.path().join("index");
        let in_index = |args: &[&str]| {
            self.command()
                .args(args)
                .env("GIT_INDEX_FILE", &index)
                .output()
        };
        in_index(&["read-tree", base])?;
        for path in paths {
            let listed = self.run_bytes(&["ls-tree", "-z", source, "--", path])?;
            let entry = String::from_utf8_lossy(&listed);
            // `<mode> blob <id>\t<path>`: a file of `source` (a tree or a submodule is left as
            // `base` has it).
            match entry
                .split_once('\t')
                .map(|(meta, _)| meta.split(' ').collect::<Vec<_>>())
            {
                Some(meta) if meta.len() == 3 && meta[1] == "blob" => {
                    let info = format!("{},{},{path}", meta[0], meta[2]);
                    in_index(&["update-index", "--add", "--cacheinfo", &info])?;
                }
                Some(_) => {}
                None => {
                    in_index(&["update-index", "--force-remove", "--", path])?;
                }
            }
        }
        let tree = String::from_utf8_lossy(&in_index(&["write-tree"])?)
            .trim()
            .to_owned();
        let (name, email) = author;
        self.command()
            .args(["commit-tree", &tree, "-p", base, "-m", message])
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_COMMITTER_NAME", name)
            .env("GIT_COMMITTER_EMAIL", email)
            .text()
    }

    /// The runs directory, made if it is not there.
    fn runs_dir_created(&self) -> Result<std::path::PathBuf, GitError> {
        let dir = self.runs_dir()?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| GitError::Invalid(format!("{}: {e}", dir.display())))?;
        Ok(dir)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let output = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    #[test]
    fn files_are_taken_from_another_commit_or_taken_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("code.py"), "bug\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "start"]);
        let start = git(root, &["rev-parse", "HEAD"]);
        std::fs::write(root.join("code.py"), "fixed\n").unwrap();
        std::fs::create_dir(root.join("tests")).unwrap();
        std::fs::write(root.join("tests/test_code.py"), "test\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "fix"]);
        let fixed = git(root, &["rev-parse", "HEAD"]);
        let repo = Git::open(root).unwrap();
        let author = ("bugloop", "bugloop@bugloop.invalid");
        // A commit on `onto` whose test file is as `from` has it (or is not there).
        let test_file_as_in = |onto: &str, from: &str| {
            let paths = ["tests/test_code.py".to_owned()];
            repo.overlay(onto, from, &paths, "m", author).unwrap()
        };
        let with_test = test_file_as_in(&start, &fixed);
        assert_eq!(git(root, &["show", &format!("{with_test}:code.py")]), "bug");
        assert_eq!(
            git(root, &["show", &format!("{with_test}:tests/test_code.py")]),
            "test"
        );
        assert_eq!(git(root, &["rev-parse", &format!("{with_test}~1")]), start);
        // Taken out: the path is not in the source.
        let without = test_file_as_in(&fixed, &start);
        assert_eq!(
            git(root, &["ls-tree", "-r", "--name-only", &without]),
            "code.py"
        );
        // The work tree and the repository's own index are untouched.
        assert_eq!(git(root, &["status", "--porcelain"]), "");
        assert!(repo.overlay("-x", &fixed, &[], "m", author).is_err());
    }
}
