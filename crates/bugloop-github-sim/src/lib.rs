//! A GitHub for bugloop's tests: the REST and GraphQL operations bugloop's client uses, on one
//! repository held in memory, served on 127.0.0.1 by a real HTTP server, with GitHub's rules
//! where bugloop depends on them (comment ids above 2^32 and numbered per kind, review comments
//! only on lines inside the diff, bodies at most 65,536 characters, pagination by `Link`, ETags
//! and 304s, rate-limit headers, tokens mapped to logins) and faults a test injects: a failure
//! after a write was done, a secondary rate limit, listings that lag behind writes, a refused
//! anchor, a head that moves during a run. Tests read the state and the request log after.
//!
//! The state API panics on a poisoned lock only in the sense that it recovers the state: a
//! handler cannot leave it half-written (each one changes it under one lock).
//!
//! **Never:** be a normal dependency.

mod answer;
mod app;
mod diff;
pub mod fixture;
mod graphql;
mod issues;
mod rest;
mod state;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use self::state::{
    FIRST_ISSUE_COMMENT_ID, FIRST_REVIEW_COMMENT_ID, Fault, IssueComment, PullSpec, RequestRecord,
    ReviewComment, Thread,
};
use self::state::{Pull, State};

/// The most a comment body may hold.
pub const MAX_BODY_CHARS: usize = 65_536;

pub(crate) type Shared = Arc<Mutex<State>>;

pub(crate) fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running simulator; it stops when dropped.
#[derive(Debug)]
pub struct Simulator {
    state: Shared,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Simulator {
    /// Serves the repository `owner/name` on a free port of 127.0.0.1.
    pub async fn start(full_name: &str) -> std::io::Result<Simulator> {
        let (owner, name) = full_name.split_once('/').ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{full_name:?} is not owner/name"),
            )
        })?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut state = State::new(owner, name);
        state.base_url = format!("http://{addr}");
        let state: Shared = Arc::new(Mutex::new(state));
        let app = axum::Router::new()
            .fallback(rest::handle)
            .with_state(state.clone());
        let server = tokio::spawn(async move {
            // The server runs until the simulator is dropped (the task is aborted).
            let _ = axum::serve(listener, app).await;
        });
        Ok(Simulator {
            state,
            addr,
            server,
        })
    }

    /// `GITHUB_API_URL`.
    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `GITHUB_GRAPHQL_URL`.
    pub fn graphql_url(&self) -> String {
        format!("http://{}/graphql", self.addr)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Requests with `token` act as `login`.
    pub fn add_token(&self, token: &str, login: &str) {
        self.state()
            .tokens
            .insert(token.to_owned(), login.to_owned());
    }

    /// A GitHub App with its public key (DER, PKCS#1) and installations: its JWT buys
    /// installation tokens that write as `<slug>[bot]`.
    pub fn add_app(&self, id: u64, slug: &str, public_key_der: Vec<u8>, installations: &[u64]) {
        self.state().apps.push(state::App {
            id,
            slug: slug.to_owned(),
            public_key: public_key_der,
            installations: installations.to_vec(),
        });
    }

    /// Every answer from now on takes `latency` longer.
    pub fn set_latency(&self, latency: std::time::Duration) {
        self.state().latency = latency;
    }

    /// Installation tokens issued from now on last `seconds` (GitHub's last an hour); a request
    /// with an expired one is refused as bad credentials.
    pub fn set_token_lifetime(&self, seconds: u64) {
        self.state().token_lifetime = seconds;
    }

    /// How many installation tokens were issued.
    pub fn issued_tokens(&self) -> u64 {
        self.state().issued_tokens
    }

    /// A collaborator's role: `admin`, `maintain`, `write`, `triage` or `read`.
    pub fn set_permission(&self, login: &str, role: &str) {
        self.state()
            .permissions
            .insert(login.to_owned(), role.to_owned());
    }

    pub fn add_pull_request(&self, spec: PullSpec) {
        let mut state = self.state();
        let pull = Pull::new(spec);
        state.pulls.insert(pull.spec.number, pull);
    }

    /// The git repository GitHub keeps (a bare repository the test pushes to): pull requests
    /// a client opens read their branches there.
    pub fn set_git_dir(&self, dir: &std::path::Path) {
        self.state().git_dir = Some(dir.to_path_buf());
    }

    /// Files an issue as `author`; its number.
    pub fn add_issue(&self, author: &str, title: &str, body: &str, labels: &[&str]) -> u64 {
        let mut state = self.state();
        let number = state.next_number();
        let created_at = state.tick();
        state.issues.insert(
            number,
            state::SimIssue {
                number,
                title: title.to_owned(),
                body: body.to_owned(),
                author: author.to_owned(),
                labels: labels.iter().map(|l| (*l).to_owned()).collect(),
                assignees: Vec::new(),
                open: true,
                created_at,
            },
        );
        number
    }

    /// An issue's title and body.
    pub fn issue(&self, number: u64) -> Option<(String, String)> {
        self.state()
            .issues
            .get(&number)
            .map(|i| (i.title.clone(), i.body.clone()))
    }

    /// Whether an issue is open.
    pub fn issue_open(&self, number: u64) -> Option<bool> {
        self.state().issues.get(&number).map(|i| i.open)
    }

    /// Its author edits an issue's body.
    pub fn edit_issue_body(&self, number: u64, body: &str) {
        if let Some(issue) = self.state().issues.get_mut(&number) {
            body.clone_into(&mut issue.body);
        }
    }

    /// How many issues (not pull requests) there are.
    pub fn issue_count(&self) -> usize {
        self.state().issues.len()
    }

    /// An issue's labels (a pull request's, for a pull request's number).
    pub fn issue_labels(&self, number: u64) -> Vec<String> {
        let state = self.state();
        match state.issues.get(&number) {
            Some(issue) => issue.labels.clone(),
            None => state
                .pulls
                .get(&number)
                .map(|p| p.labels.clone())
                .unwrap_or_default(),
        }
    }

    /// The pull requests, by number: title, head branch, draft flag, open flag, body.
    pub fn pulls(&self) -> Vec<(u64, String, String, bool, bool, String)> {
        self.state()
            .pulls
            .values()
            .map(|p| {
                (
                    p.spec.number,
                    p.spec.title.clone(),
                    p.spec.head_ref.clone(),
                    p.spec.draft,
                    p.open,
                    p.body.clone(),
                )
            })
            .collect()
    }

    /// A check run on `commit` (`*`: on every commit): `status` `queued`, `in_progress` or
    /// `completed`, with its conclusion once completed.
    pub fn set_check(&self, commit: &str, name: &str, status: &str, conclusion: Option<&str>) {
        let mut state = self.state();
        state
            .checks
            .retain(|(c, n, _, _)| !(c == commit && n == name));
        state.checks.push((
            commit.to_owned(),
            name.to_owned(),
            status.to_owned(),
            conclusion.map(str::to_owned),
        ));
    }

    /// A review of a pull request by `login`: `APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`.
    pub fn add_review(&self, number: u64, login: &str, review_state: &str) {
        self.submit_review(number, login, review_state, "");
    }

    /// A review of a pull request by `login` with a body (`COMMENTED`, say), given on the pull
    /// request's head as it is now: its id, as the review listing and `GET .../reviews/<id>`
    /// give it.
    pub fn submit_review(&self, number: u64, login: &str, review_state: &str, body: &str) -> u64 {
        let mut state = self.state();
        issues::refresh(&mut state, number);
        let index = state
            .reviews
            .iter()
            .filter(|(pull, _, _)| *pull == number)
            .count();
        let id = 8_000_000_001 + index as u64;
        state
            .reviews
            .push((number, login.to_owned(), review_state.to_owned()));
        if !body.is_empty() {
            state.review_bodies.insert(id, body.to_owned());
        }
        if let Some(head) = state.pulls.get(&number).map(|p| p.spec.head_sha.clone()) {
            state.review_commits.insert(id, head);
        }
        id
    }

    /// A pull request's description.
    pub fn pull_body(&self, number: u64) -> Option<String> {
        self.state().pulls.get(&number).map(|p| p.body.clone())
    }

    /// Its author writes a pull request's description.
    pub fn set_pull_body(&self, number: u64, body: &str) {
        if let Some(pull) = self.state().pulls.get_mut(&number) {
            pull.body = body.to_owned();
        }
    }

    /// Who an issue is assigned to.
    pub fn assignees(&self, number: u64) -> Vec<String> {
        self.state()
            .issues
            .get(&number)
            .map(|i| i.assignees.clone())
            .unwrap_or_default()
    }

    /// A person merges the pull request.
    pub fn merge(&self, number: u64) {
        if let Some(pull) = self.state().pulls.get_mut(&number) {
            pull.open = false;
            pull.merged = true;
        }
    }

    /// A person merges the pull request, and the merge is `commit` on its base (the test made
    /// it in the repository's git).
    pub fn merge_as(&self, number: u64, commit: &str) {
        let mut state = self.state();
        let Some(pull) = state.pulls.get_mut(&number) else {
            return;
        };
        pull.open = false;
        pull.merged = true;
        pull.merge_commit = Some(commit.to_owned());
        // GitHub closes the issues its body says it closes.
        let body = pull.body.to_lowercase();
        let closed: Vec<u64> = body
            .split("closes #")
            .skip(1)
            .filter_map(|rest| {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .collect();
        for issue in closed {
            if let Some(issue) = state.issues.get_mut(&issue) {
                issue.open = false;
            }
        }
    }

    /// A push: the pull request's head (and diff) move on.
    pub fn set_head(&self, number: u64, sha: &str, diff: Option<String>) {
        let mut state = self.state();
        if let Some(pull) = state.pulls.get_mut(&number) {
            sha.clone_into(&mut pull.spec.head_sha);
            pull.heads.push(sha.to_owned());
            if diff.is_some() {
                pull.spec.diff = diff;
            }
        }
    }

    /// The pull request's head now.
    pub fn head(&self, number: u64) -> Option<String> {
        self.state()
            .pulls
            .get(&number)
            .map(|p| p.spec.head_sha.clone())
    }

    /// How many times the pull request has been read (for `Fault::MoveHead`).
    pub fn pull_reads(&self, number: u64) -> u32 {
        self.state().pulls.get(&number).map_or(0, |p| p.reads)
    }

    pub fn is_draft(&self, number: u64) -> Option<bool> {
        self.state().pulls.get(&number).map(|p| p.spec.draft)
    }

    pub fn labels(&self, number: u64) -> Vec<String> {
        self.state()
            .pulls
            .get(&number)
            .map(|p| p.labels.clone())
            .unwrap_or_default()
    }

    pub fn request_reviewer(&self, number: u64, login: &str) {
        if let Some(pull) = self.state().pulls.get_mut(&number) {
            pull.requested_reviewers.push(login.to_owned());
        }
    }

    /// A comment on the conversation by `login` (anyone, the bot's login included: another
    /// workflow sharing it); its id.
    pub fn comment_as(&self, number: u64, login: &str, body: &str) -> u64 {
        rest::create_issue_comment(&mut self.state(), number, login, body)
    }

    /// Takes `label` off issue `number` (as a person would in the web page).
    pub fn unlabel(&self, number: u64, label: &str) {
        if let Some(issue) = self.state().issues.get_mut(&number) {
            issue.labels.retain(|l| l != label);
        }
    }

    /// A person puts `label` on issue `number` (its `labeled` event records who and when).
    pub fn label_as(&self, number: u64, login: &str, label: &str) {
        self.state()
            .label_issue(number, vec![label.to_owned()], login);
    }

    /// A person's comment on a line of the diff (not checked against it); its id.
    pub fn review_comment_as(
        &self,
        number: u64,
        login: &str,
        path: &str,
        line: u32,
        body: &str,
    ) -> u64 {
        let mut state = self.state();
        let commit = state
            .pulls
            .get(&number)
            .map(|p| p.spec.head_sha.clone())
            .unwrap_or_default();
        rest::create_review_comment(
            &mut state,
            number,
            login,
            rest::NewReview {
                body: body.to_owned(),
                path: path.to_owned(),
                line: Some(line),
                start_line: None,
                commit_id: commit,
                in_reply_to: None,
            },
        )
    }

    /// A person's reply in the thread of review comment `to`; its id.
    pub fn reply_as(&self, number: u64, login: &str, to: u64, body: &str) -> Option<u64> {
        let mut state = self.state();
        rest::reply(&mut state, number, login, to, body)
    }

    /// The conversation comments of a pull request, hidden ones included.
    pub fn issue_comments(&self, number: u64) -> Vec<IssueComment> {
        self.state()
            .issue_comments
            .iter()
            .filter(|c| c.number == number)
            .cloned()
            .collect()
    }

    pub fn review_comments(&self, number: u64) -> Vec<ReviewComment> {
        self.state()
            .review_comments
            .iter()
            .filter(|c| c.number == number)
            .cloned()
            .collect()
    }

    pub fn threads(&self, number: u64) -> Vec<Thread> {
        self.state()
            .threads
            .iter()
            .filter(|t| t.number == number)
            .cloned()
            .collect()
    }

    /// Rewrites a comment's body as another writer would (an edit outside bugloop).
    pub fn edit_issue_comment(&self, id: u64, body: &str) {
        if let Some(comment) = self.state().issue_comments.iter_mut().find(|c| c.id == id) {
            body.clone_into(&mut comment.body);
        }
    }

    pub fn inject(&self, fault: Fault) {
        let mut state = self.state();
        match fault {
            Fault::RefuseAnchor { path, line } => state.refused_anchors.push((path, line)),
            Fault::ListingLag { writes, listings } => {
                state.lag = (writes > 0).then_some((writes, listings));
            }
            other => state.faults.push(other),
        }
    }

    /// Faults injected and not used yet.
    pub fn pending_faults(&self) -> Vec<Fault> {
        self.state().faults.clone()
    }

    /// Every request answered so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.state().requests.clone()
    }

    pub fn clear_requests(&self) {
        self.state().requests.clear();
    }
}

#[cfg(test)]
mod tests;
