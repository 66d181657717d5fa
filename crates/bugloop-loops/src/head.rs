//! The code at head, as grounding and reports read it: the files a review's findings name, read
//! once and only inside the workspace, and which lines the change's diff shows.

use std::collections::HashMap;
use std::path::Path;

use bugloop_diff::{Diff, Side};
use bugloop_domain::grounding::Head;

use crate::env::{LoopEnv, WorkTarget};

/// The code at head, for grounding: files are read once, only inside the workspace. Without a
/// diff (the converge validator) no line counts as shown in one.
#[derive(Debug)]
pub(crate) struct HeadTree<'a> {
    texts: HashMap<String, Option<String>>,
    /// Why a file that is there was not read.
    unread: HashMap<String, String>,
    diff: Option<&'a Diff>,
}

impl<'a> HeadTree<'a> {
    pub fn load(root: &Path, diff: Option<&'a Diff>, paths: impl Iterator<Item = String>) -> Self {
        let mut texts = HashMap::new();
        let mut unread = HashMap::new();
        for path in paths {
            if texts.contains_key(&path) {
                continue;
            }
            let text = match diff.and_then(|diff| diff.file(&path)) {
                Some(_) => crate::context::read_exactly(root, &path).unwrap_or_else(|why| {
                    unread.insert(path.clone(), why);
                    None
                }),
                None => crate::context::read_inside(root, &path),
            };
            texts.insert(path, text);
        }
        HeadTree {
            texts,
            unread,
            diff,
        }
    }

    /// The text of line `line` of `path` at head, for reports.
    pub fn line(&self, path: &str, line: u32) -> Option<String> {
        let text = self.texts.get(path)?.as_deref()?;
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        text.lines().nth(index).map(|l| l.trim_end().to_owned())
    }
}

/// The text of `file` in the code a loop works on: on a pull request the pinned head's (the
/// clone may have another branch out), else the checkout's, read inside it only. `None` when
/// it is not there.
pub(crate) fn work_text(env: &LoopEnv<'_>, file: &str) -> Option<String> {
    match &env.work {
        WorkTarget::PullRequest { .. } => committed_text(env, file),
        WorkTarget::LocalBranch => crate::context::read_inside(env.git.root(), file),
    }
}

/// The text of `file` in the commit a fix builds from: the pull request's pinned head, or the
/// checked-out branch's HEAD (not the working tree: an uncommitted edit is not what is fixed).
pub(crate) fn committed_text(env: &LoopEnv<'_>, file: &str) -> Option<String> {
    let head = match &env.work {
        WorkTarget::PullRequest { head, .. } => head.as_str(),
        WorkTarget::LocalBranch => "HEAD",
    };
    env.git
        .show(head, file)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

impl Head for HeadTree<'_> {
    fn text(&self, path: &str) -> Option<&str> {
        self.texts.get(path)?.as_deref()
    }

    fn unread(&self, path: &str) -> Option<&str> {
        self.unread.get(path).map(String::as_str)
    }

    fn in_diff(&self, path: &str, line: u32) -> Option<bool> {
        self.diff?
            .file(path)
            .map(|file| file.contains_line(Side::Right, line))
    }
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::{Category, Finding};
    use bugloop_domain::grounding::ground;
    use bugloop_domain::score::Score;

    use super::HeadTree;
    use crate::context::read_inside;

    fn finding_on(file: &str) -> Finding {
        Finding {
            id: file.into(),
            title: file.into(),
            description: String::new(),
            file: Some(file.into()),
            line: Some(1),
            end_line: None,
            score: Score::saturating(6),
            category: Category::Security,
            evidence: Some("x".into()),
            suggestion: None,
            source: None,
        }
    }

    /// An empty repository and, outside it, a directory holding the file `secret` with `text`:
    /// what links out of the repository lead to.
    fn repository_beside_a_secret(text: &str) -> (tempfile::TempDir, tempfile::TempDir) {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), text).unwrap();
        (outside, tempfile::tempdir().unwrap())
    }

    /// A finding on a file of the change that is a link out of the repository is dropped as
    /// one, not as a file that does not exist; one on a file that is not there says that.
    #[test]
    fn a_finding_on_a_link_out_of_the_repository_says_why_it_was_not_read() {
        let (outside, repo) = repository_beside_a_secret("x = 1\n");
        let root = repo.path();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("link.py")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling.py")).unwrap();
        let mut patch = String::new();
        for name in ["link.py", "dangling.py", "gone.py"] {
            patch.push_str(&format!(
                "diff --git a/{name} b/{name}\nnew file mode 120000\n--- /dev/null\n+++ b/{name}\n\
                 @@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n"
            ));
        }
        let diff = bugloop_diff::parse(patch);
        let names = ["link.py", "dangling.py", "gone.py"].map(str::to_owned);
        let head = HeadTree::load(root, Some(&diff), names.clone().into_iter());
        let report = ground(names.iter().map(|n| finding_on(n)).collect(), &head);
        let reasons: Vec<&str> = report.dropped.iter().map(|d| d.reason.as_str()).collect();
        let link = "is not read at head: it is a symbolic link that leads out of the repository \
                    or nowhere, and is not followed";
        assert_eq!(
            reasons,
            [
                format!("link.py {link}"),
                format!("dangling.py {link}"),
                "gone.py does not exist at head".to_owned()
            ]
        );
    }

    /// Grounding reads through `read_inside`: a symlink in the repository that leads outside it is
    /// refused (its target is never read), one that stays inside is followed.
    #[test]
    fn read_inside_follows_links_only_inside_the_root() {
        let (outside, repo) = repository_beside_a_secret("token=hunter2\n");
        let root = repo.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("leak")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink("src/lib.rs", root.join("alias.rs")).unwrap();
        std::os::unix::fs::symlink("../src", root.join("src/up")).unwrap();

        assert_eq!(read_inside(root, "leak"), None);
        assert_eq!(read_inside(root, "out/secret"), None);
        assert_eq!(
            read_inside(root, "alias.rs").as_deref(),
            Some("pub fn f() {}\n")
        );
        assert_eq!(
            read_inside(root, "src/up/lib.rs").as_deref(),
            Some("pub fn f() {}\n")
        );
        // A path that is not a file, or leaves the root by itself, is no text either.
        assert_eq!(read_inside(root, "src"), None);
        assert_eq!(read_inside(root, "../secret"), None);
    }
}
