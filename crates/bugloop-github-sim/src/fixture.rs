//! A pull request to run bugloop on, shared by the suites that drive it (the application layer's
//! and the Action's): a repository whose `main` has `lib.rs` and whose `feature` adds a function
//! with an off-by-one (line 6), pushed to a bare `origin` with GitHub's `refs/pull/7/head`; a
//! clone of `origin` as a runner's workspace; and the simulator holding pull request #7 of
//! `acme/widgets` by `alice` (write access), with a token for `github-actions[bot]`.

// A fixture's job is to stop the test at the first thing that went wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::{Value, json};

use bugloop_testkit::{TestRepo, git};

use crate::{PullSpec, Simulator};

pub const REPOSITORY: &str = "acme/widgets";
pub const NUMBER: u64 = 7;
pub const BOT: &str = "github-actions[bot]";
pub const TOKEN: &str = "t-actions";

pub const LIB: &str =
    "pub fn average(v: &[f64]) -> f64 {\n    v.iter().sum::<f64>() / v.len() as f64\n}\n";
pub const LAST: &str = "\npub fn last(v: &[u8]) -> u8 {\n    v[v.len()]\n}\n";

/// What a fixture starts from.
#[derive(Debug, Clone, Default)]
pub struct FixtureOptions<'a> {
    /// `.bugloop/config.yml` on `main`, the base.
    pub base_config: Option<&'a str>,
    /// `.bugloop/config.yml` in the pull request's head.
    pub head_config: Option<&'a str>,
    /// The pull request comes from a fork.
    pub fork: bool,
    /// More files on `main`, and files the pull request adds or changes.
    pub base_files: &'a [(&'a str, &'a str)],
    pub head_files: &'a [(&'a str, &'a str)],
}

#[derive(Debug)]
pub struct PullRequestFixture {
    pub sim: Simulator,
    /// The developer's clone, where branches are built and pushed from.
    pub dev: TestRepo,
    pub origin: tempfile::TempDir,
    /// A runner's workspace: a clone of `origin` on `main`.
    pub workspace: tempfile::TempDir,
    pub base: String,
    pub head: String,
}

impl PullRequestFixture {
    pub async fn new(options: FixtureOptions<'_>) -> PullRequestFixture {
        let dev = TestRepo::init("main");
        let base = commit_side(&dev, LIB, options.base_config, options.base_files, "one");
        dev.branch("feature");
        let last = format!("{LIB}{LAST}");
        let head = commit_side(&dev, &last, options.head_config, options.head_files, "two");
        let origin = tempfile::tempdir().unwrap();
        git(origin.path(), &["init", "-q", "--bare", "-b", "main", "."]);
        let url = origin.path().to_str().unwrap().to_owned();
        dev.git(&["remote", "add", "origin", &url]);
        dev.git(&["push", "-q", "origin", "main", "feature"]);
        git(origin.path(), &["update-ref", "refs/pull/7/head", &head]);
        let workspace = tempfile::tempdir().unwrap();
        git(
            workspace.path(),
            &["clone", "-q", "--branch", "main", &url, "."],
        );
        let sim = Simulator::start(REPOSITORY).await.unwrap();
        sim.add_token(TOKEN, BOT);
        sim.set_permission("alice", "write");
        let fixture = PullRequestFixture {
            sim,
            dev,
            origin,
            workspace,
            base,
            head,
        };
        fixture.sim.add_pull_request(PullSpec {
            number: NUMBER,
            title: "Add last".to_owned(),
            author: "alice".to_owned(),
            base_ref: "main".to_owned(),
            base_sha: fixture.base.clone(),
            head_ref: "feature".to_owned(),
            head_sha: fixture.head.clone(),
            fork: options.fork,
            draft: false,
            diff: Some(fixture.diff_at(&fixture.head)),
        });
        fixture
    }

    /// Another clone of `origin`, as a second runner has.
    pub fn another_workspace(&self) -> tempfile::TempDir {
        let workspace = tempfile::tempdir().unwrap();
        let url = self.origin.path().to_str().unwrap();
        git(
            workspace.path(),
            &["clone", "-q", "--branch", "main", url, "."],
        );
        workspace
    }

    /// A push to the pull request's branch (not yet seen by the simulator): its commit.
    pub fn push(&self, path: &str, text: &str) -> String {
        self.dev.write(path, text);
        self.push_commit("more")
    }

    /// A push of whatever the developer's work tree holds (files written or deleted): its commit.
    pub fn push_commit(&self, message: &str) -> String {
        self.dev.commit(message);
        self.dev.git(&["push", "-q", "origin", "feature"]);
        let head = self.dev.head();
        git(
            self.origin.path(),
            &["update-ref", "refs/pull/7/head", &head],
        );
        head
    }

    /// The diff of the pull request at `head`.
    pub fn diff_at(&self, head: &str) -> String {
        self.dev.git(&["diff", &format!("{}...{head}", self.base)]) + "\n"
    }

    /// The branch `feature` on `origin`.
    pub fn origin_head(&self) -> String {
        git(self.origin.path(), &["rev-parse", "refs/heads/feature"])
    }

    pub fn origin(&self) -> &Path {
        self.origin.path()
    }

    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }

    /// bugloop's root review comments (one per finding published on a line or a file).
    pub fn finding_comments(&self) -> Vec<crate::ReviewComment> {
        self.sim
            .review_comments(NUMBER)
            .into_iter()
            .filter(|c| c.author == BOT && c.in_reply_to.is_none())
            .collect()
    }

    /// bugloop's conversation comments.
    pub fn bot_issue_comments(&self) -> Vec<crate::IssueComment> {
        self.sim
            .issue_comments(NUMBER)
            .into_iter()
            .filter(|c| c.author == BOT)
            .collect()
    }
}

/// Every example GitHub publishes of `event` (`@octokit/webhooks-examples`, installed by the test
/// command into the cache).
pub use bugloop_testkit::github::webhook_examples;

/// One side of the pull request committed in `dev`: `lib.rs`, the configuration and the files
/// the options give it; its commit.
fn commit_side(
    dev: &TestRepo,
    lib: &str,
    config: Option<&str>,
    files: &[(&str, &str)],
    message: &str,
) -> String {
    dev.write("lib.rs", lib);
    if let Some(config) = config {
        dev.write(".bugloop/config.yml", config);
    }
    for (path, text) in files {
        dev.write(path, text);
    }
    dev.commit(message);
    dev.head()
}

/// GitHub's own example of an `event` with `action`, edited to be about this fixture's pull
/// request.
pub fn webhook_example(event: &str, action: &str, fixture: &PullRequestFixture) -> Value {
    let mut payload = webhook_examples(event)
        .into_iter()
        .find(|e| e["action"] == action)
        .unwrap_or_else(|| panic!("no {event} {action} example"));
    payload["repository"]["full_name"] = json!(REPOSITORY);
    payload["sender"] = json!({"login": "alice", "type": "User", "id": 1});
    let pull = json!({
        "number": NUMBER, "title": "Add last", "draft": false, "user": {"login": "alice", "type": "User", "id": 1},
        "head": {"ref": "feature", "sha": fixture.head, "repo": {"full_name": REPOSITORY}},
        "base": {"ref": "main", "sha": fixture.base, "repo": {"full_name": REPOSITORY}},
    });
    if let Some(existing) = payload.get_mut("pull_request") {
        for (key, value) in pull.as_object().unwrap() {
            existing[key] = value.clone();
        }
    }
    if let Some(issue) = payload.get_mut("issue") {
        issue["number"] = json!(NUMBER);
        issue["pull_request"] = json!({"url": "https://api.github.com/repos/acme/widgets/pulls/7"});
    }
    payload
}

/// The answers of a scripted review (`script:` models): `findings` reported in the first pass,
/// then passes 2-4.
pub fn review_lines(findings: &[Value]) -> Vec<Value> {
    let mut first: Vec<Value> = findings
        .iter()
        .map(|f| json!({"name": "report_finding", "arguments": f}))
        .collect();
    first.push(
        json!({"name": "submit_pass_results", "arguments": {"pass_number": 1, "summary": "diff"}}),
    );
    let mut lines = vec![json!({ "tool_calls": first })];
    for pass in 2..=4 {
        lines.push(json!({"tool_calls": [{"name": "submit_pass_results", "arguments": {"pass_number": pass, "summary": "ok"}}]}));
    }
    lines
}

/// A `script:` model answering `lines` in order (plain answers, tool calls), written to a new
/// file in `dir`.
pub fn script_file(dir: &Path, lines: &[Value]) -> String {
    let n = std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    let path = dir.join(format!("script-{n}.jsonl"));
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    format!("script:{}", path.display())
}

/// The off-by-one in `last` (line 6 of lib.rs on the feature branch).
pub fn off_by_one() -> Value {
    json!({"file": "lib.rs", "line": 6, "evidence": "v[v.len()]", "title": "Index one past the end",
           "description": "`v[v.len()]` always panics.", "score": 8, "category": "logic"})
}

/// A fresh 2048-bit RSA key in GitHub's form (PKCS#1 PEM), made by OpenSSL (installed by the
/// test command), for an App's credentials.
pub fn app_key() -> String {
    bugloop_testkit::github::rsa_key().0
}
