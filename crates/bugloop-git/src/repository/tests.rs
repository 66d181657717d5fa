//! `Git`'s queries against repositories built by the tests: which change is selected, its key,
//! the trusted base, and the errors that name what was wrong.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use bugloop_testkit::{TestRepo, git};

use super::*;

fn repo() -> TestRepo {
    TestRepo::with_feature_branch("a.txt", "one\ntwo\n", "one\nTWO\n")
}

fn text(diff: &[u8]) -> String {
    String::from_utf8_lossy(diff).into_owned()
}

#[test]
fn the_branch_against_its_merge_base_by_default() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let change = g.select(&Selection::Branch).unwrap();
    assert_eq!(change.key.0, "branch:feature");
    assert!(
        change.description.starts_with("feature against main"),
        "{}",
        change.description
    );
    assert!(text(&change.diff).contains("+TWO"));
    assert!(matches!(change.head, HeadState::Commit(_)));
    // On main itself there is nothing to review.
    git(dir.path(), &["switch", "-q", "main"]);
    assert!(g.select(&Selection::Branch).unwrap().diff.is_empty());
}

/// The commit whose configuration a local run trusts: the merge base with the default branch.
#[test]
fn the_trusted_base_is_the_merge_base_with_the_default_branch() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let main = g.resolve("main").unwrap();
    let (label, commit) = g.trusted_base().unwrap();
    assert_eq!(commit, main);
    assert_eq!(label, format!("main@{}", &main[..7]));
    // main moves on: the branch still trusts where it started.
    git(dir.path(), &["switch", "-q", "main"]);
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "main moves"]);
    let new_main = g.resolve("main").unwrap();
    assert_eq!(g.trusted_base().unwrap().1, new_main);
    git(dir.path(), &["switch", "-q", "feature"]);
    assert_eq!(g.trusted_base().unwrap().1, main);
    // Without a default branch there is nothing to trust.
    git(dir.path(), &["branch", "-qm", "main", "trunk"]);
    assert_eq!(g.trusted_base(), None);
}

/// A repository whose default branch has another name: the one `init.defaultBranch` names;
/// never merely the branch checked out, nor the only branch (a change fetched alone would
/// then have its own configuration trusted).
#[test]
fn a_default_branch_of_another_name() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    git(dir.path(), &["branch", "-qm", "main", "trunk"]);
    assert_eq!(g.default_branch(), None, "two branches, neither named");
    git(dir.path(), &["config", "init.defaultBranch", "trunk"]);
    assert_eq!(g.default_branch().as_deref(), Some("trunk"));
    git(dir.path(), &["config", "init.defaultBranch", "gone"]);
    assert_eq!(
        g.default_branch(),
        None,
        "a configured name that is no branch"
    );
    git(dir.path(), &["config", "--unset", "init.defaultBranch"]);
    git(dir.path(), &["switch", "-q", "feature"]);
    git(dir.path(), &["branch", "-qD", "trunk"]);
    assert_eq!(
        g.default_branch(),
        None,
        "the only branch may be the change"
    );
    assert_eq!(g.trusted_base(), None);
}

#[test]
fn staged_working_and_untracked_files() {
    let dir = repo();
    std::fs::write(dir.path().join("a.txt"), "one\nTWO\nthree\n").unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.path().join(odd), "latin-1 name\n").unwrap();
    let g = Git::open(dir.path()).unwrap();
    assert!(g.select(&Selection::Staged).unwrap().diff.is_empty());
    let working = text(&g.select(&Selection::Working).unwrap().diff);
    assert!(working.contains("+three"), "{working}");
    assert!(working.contains("+latin-1 name"), "{working}");
    git(dir.path(), &["add", "a.txt"]);
    let staged = g.select(&Selection::Staged).unwrap();
    assert_eq!(staged.head, HeadState::Index);
    assert!(text(&staged.diff).contains("+three"));
    assert!(!text(&staged.diff).contains("latin-1"));
}

/// `git clone --single-branch -b feature` points `origin/HEAD` at the change itself: that says
/// nothing of the default branch, so nothing is trusted; a single-branch clone of main is.
#[test]
fn a_single_branch_clone_of_a_change_trusts_no_branch() {
    let dir = repo();
    let clones = tempfile::tempdir().unwrap();
    let source = format!("file://{}", dir.path().display());
    let clone_of = |branch: &str| {
        let target = clones.path().join(branch);
        let args = ["clone", "-q", "--single-branch", "-b", branch, &source];
        git(
            clones.path(),
            &[&args[..], &[target.to_str().unwrap()]].concat(),
        );
        Git::open(&target).unwrap()
    };
    let feature = clone_of("feature");
    assert_eq!(feature.default_branch(), None);
    assert_eq!(feature.trusted_base(), None);
    let main = clone_of("main");
    assert!(main.default_branch().is_some_and(|b| b.ends_with("main")));
}

/// A shallow clone that does not reach where the branch left main: an error that says so,
/// never main's later commits shown reverted as the change's own.
#[test]
fn a_shallow_clone_without_the_merge_base_says_so() {
    let dir = repo();
    git(dir.path(), &["switch", "-q", "main"]);
    std::fs::write(dir.path().join("later.txt"), "main moves on\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "main moves"]);
    let clones = tempfile::tempdir().unwrap();
    let clone = clones.path().join("clone");
    let source = format!("file://{}", dir.path().display());
    let target = clone.display().to_string();
    git(
        clones.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "--no-single-branch",
            &source,
            &target,
        ],
    );
    git(&clone, &["switch", "-q", "-c", "feature", "origin/feature"]);
    let g = Git::open(&clone).unwrap();
    let error = g.select(&Selection::Branch).unwrap_err().to_string();
    assert!(error.contains("shallow clone"), "{error}");
    assert!(error.contains("git fetch --unshallow"), "{error}");
    // With the history, the change is the branch's alone.
    git(&clone, &["fetch", "-q", "--unshallow"]);
    let change = g.select(&Selection::Branch).unwrap();
    assert!(!text(&change.diff).contains("later.txt"));
}

#[test]
fn no_commits_and_detached_heads() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("new.txt"), "hello\n").unwrap();
    let g = Git::open(dir.path()).unwrap();
    let error = g.select(&Selection::Branch).unwrap_err().to_string();
    assert!(
        error.contains("no commits yet") && error.contains("--working"),
        "{error}"
    );
    let working = g.select(&Selection::Working).unwrap();
    assert!(text(&working.diff).contains("+hello"));
    assert_eq!(working.key.0, "branch:main");

    let dir = repo();
    git(dir.path(), &["switch", "-q", "--detach", "HEAD"]);
    let g = Git::open(dir.path()).unwrap();
    let change = g.select(&Selection::Branch).unwrap();
    assert!(change.key.0.starts_with("commit:"), "{}", change.key);
    assert!(text(&change.diff).contains("+TWO"));
}

#[test]
fn ranges_name_their_errors() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let error = g
        .select(&Selection::Range {
            base: Some("nope".into()),
            head: None,
        })
        .unwrap_err()
        .to_string();
    assert!(error.contains("--base \"nope\""), "{error}");
    let change = g
        .select(&Selection::Range {
            base: Some("main".into()),
            head: Some("feature".into()),
        })
        .unwrap();
    assert_eq!(change.key.0, "branch:feature");
    assert!(Git::open(Path::new("/")).is_err());
}

/// A later head of the branch: the interdiff holds only what changed since the earlier head; a
/// rewritten branch (the earlier head is not an ancestor) or an unknown head has none.
#[test]
fn the_interdiff_since_an_earlier_head_and_none_after_a_rewrite() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let first = g.head().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\nTWO\nthree\n").unwrap();
    git(dir.path(), &["commit", "-qam", "three"]);
    let second = g.head().unwrap();
    let interdiff = text(&g.interdiff(&first, &first, &second).unwrap().unwrap());
    assert!(interdiff.contains("+three"), "{interdiff}");
    assert!(!interdiff.contains("+TWO"), "{interdiff}");
    assert_eq!(g.interdiff(&first, &second, &second).unwrap().unwrap(), b"");
    // The branch is rewritten: the earlier head is no longer its ancestor.
    git(dir.path(), &["reset", "-q", "--hard", "main"]);
    std::fs::write(dir.path().join("a.txt"), "one\nzwei\n").unwrap();
    git(dir.path(), &["commit", "-qam", "rewritten"]);
    let rewritten = g.head().unwrap();
    assert_eq!(g.interdiff(&first, &second, &rewritten).unwrap(), None);
    assert_eq!(
        g.interdiff(&first, &"0".repeat(40), &rewritten).unwrap(),
        None
    );
}

#[test]
fn a_file_larger_than_asked_is_refused_by_its_size_unread() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    assert_eq!(
        g.show_at_most("main", "a.txt", 8).unwrap(),
        Some(b"one\ntwo\n".to_vec())
    );
    assert_eq!(g.show_at_most("main", "a.txt", 7), Err(8));
    assert_eq!(g.show_at_most("main", "missing.txt", 7), Ok(None));
}

#[test]
fn a_branch_description_is_git_s_own_and_round_trips_any_text() {
    let repo = repo();
    let g = Git::open(repo.path()).unwrap();
    assert_eq!(g.branch_description("feature").unwrap(), None);
    // Several lines, a leading dash (not an option), a quote and a marker.
    let text = "-n is not an option\n\nline \"two\"\n<!-- bugloop:converge-description -->\n";
    g.set_branch_description("feature", text).unwrap();
    assert_eq!(
        g.branch_description("feature").unwrap().as_deref(),
        Some(text)
    );
    assert_eq!(
        git(repo.path(), &["config", "branch.feature.description"]),
        text.strip_suffix('\n').unwrap()
    );
    // Text made to look like configuration stays the description's text.
    let injected = "x\"\n[core]\n\thooksPath = /tmp/evil\n[alias]\n\tst = !touch /tmp/evil";
    g.set_branch_description("feature", injected).unwrap();
    assert_eq!(
        g.branch_description("feature").unwrap().as_deref(),
        Some(injected)
    );
    let hooks = std::process::Command::new("git")
        .args(["config", "--get", "core.hooksPath"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(hooks.stdout.is_empty(), "{hooks:?}");
    g.set_branch_description("feature", "again").unwrap();
    assert_eq!(
        g.branch_description("feature").unwrap().as_deref(),
        Some("again")
    );
}

/// A repository another user owns is one git will not work in for this one: bugloop says so as
/// git does (with its `safe.directory` cure), not that there is no repository. Only root can
/// give a repository to another user here.
#[test]
fn a_repository_of_another_users_is_said_to_be_refused() {
    if !bugloop_testkit::users::is_root() {
        return;
    }
    let repo = TestRepo::with_files(&[("a.txt", "a\n")]);
    bugloop_testkit::users::chown_all(repo.path(), bugloop_testkit::users::NOBODY);
    let error = Git::open(repo.path()).unwrap_err();
    let said = error.to_string();
    assert!(matches!(error, GitError::NotTrusted { .. }), "{said}");
    assert!(said.contains("safe.directory"), "{said}");
}

/// A branch's own `.gitattributes` does not decide which of its files the review sees as
/// binary: the base's do (here none), so its `.py` and `.sh` are shown as text, in the change
/// and in the interdiff since an earlier head.
#[test]
fn a_branchs_own_attributes_do_not_hide_its_code() {
    let dir = repo();
    let g = Git::open(dir.path()).unwrap();
    let earlier = g.resolve("feature").unwrap();
    std::fs::write(
        dir.path().join(".gitattributes"),
        "*.py binary\n*.sh -diff\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a.py"), "eval(input())\n").unwrap();
    std::fs::write(dir.path().join("run.sh"), "rm -rf $DIR/\n").unwrap();
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["commit", "-qm", "hide"]);
    let change = g.select(&Selection::Branch).unwrap();
    let shown = text(&change.diff);
    assert!(crate::command::has_attr_source(), "git 2.40 or later here");
    assert!(shown.contains("+eval(input())"), "{shown}");
    assert!(shown.contains("+rm -rf $DIR/"), "{shown}");
    assert!(!shown.contains("Binary files"), "{shown}");
    let interdiff = g
        .interdiff(&change.base, &earlier, &g.resolve("feature").unwrap())
        .unwrap()
        .unwrap();
    assert!(text(&interdiff).contains("+eval(input())"));
    // A base that marks them binary is the repository's own choice.
    let base_marks = TestRepo::with_feature_branch(
        ".gitattributes",
        "*.py binary\n",
        "*.py binary\n*.md text\n",
    );
    std::fs::write(base_marks.path().join("a.py"), "eval(input())\n").unwrap();
    git(base_marks.path(), &["add", "."]);
    git(base_marks.path(), &["commit", "-qm", "code"]);
    let marked = Git::open(base_marks.path()).unwrap();
    let shown = text(&marked.select(&Selection::Branch).unwrap().diff);
    assert!(shown.contains("Binary files"), "{shown}");
}

/// `-C` naming a place that is no directory says so, not that it is outside a repository.
#[test]
fn a_directory_that_is_not_there_is_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent");
    let error = Git::open(&missing).unwrap_err().to_string();
    assert!(error.contains("is not a directory here"), "{error}");
    let outside = Git::open(dir.path()).unwrap_err().to_string();
    assert!(
        outside.contains("is not inside a git repository"),
        "{outside}"
    );
}
