//! Review state reconstructed from a conversation (pr-reviewer-design.md 3.2 and 4.2).
//!
//! [`reconstruct`] is a pure function: comments in, threads out. Only comments bugloop wrote (as
//! the forge establishes it: [`Comment::by_bugloop`], never a name) create findings or change a
//! finding's status; markers, `rmcoc` blocks and status phrases typed by anyone else are ignored
//! (and counted). Within bugloop's comments only its own state counts: the marker and block at
//! the end of a finding comment, and the tag at the end of a reply (see `marker.rs`).

use std::collections::HashMap;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::finding::FindingId;
use crate::marker::{Marker, MarkerSyntax, ReplyKind};
use crate::rmcoc::{RmcocBlock, RmcocProblem, parse_comment};
use crate::score::Score;
pub use crate::status::ThreadStatus;

/// What the bot writes to resolve a thread.
pub const RESOLVED_PHRASE: &str = "✅ **Issue Resolved**";
/// What the bot writes to hand a thread to a human.
pub const ESCALATED_PHRASE: &str = "🔺 **Escalated to Human Review**";

/// Where a comment lives on the forge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CommentKind {
    /// A comment on the issue or the pull request's conversation.
    #[default]
    Issue,
    /// A line comment in a review thread.
    Review,
}

/// One comment of a conversation, as any forge (GitHub or the local store) reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: String,
    pub author: String,
    pub body: String,
    pub created_at: Timestamp,
    #[serde(default)]
    pub kind: CommentKind,
    /// The comment this one answers, if the forge records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<String>,
    /// The forge's thread id (a GitHub review thread), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Whether the forge shows the comment's thread as resolved.
    #[serde(default)]
    pub thread_resolved: bool,
    /// bugloop wrote this comment: the local store records it when bugloop writes, GitHub knows
    /// it by the login bugloop resolved at start. Never inferred from a name a person can pick.
    #[serde(default)]
    pub by_bugloop: bool,
}

impl Comment {
    /// Its body for a person: bugloop's own without their state block and hidden lines
    /// ([`crate::rmcoc::as_read`]); anyone else's as written, so a state or a marker someone
    /// forged in a reply is seen for what it is.
    pub fn as_read(&self) -> String {
        if self.by_bugloop {
            crate::rmcoc::as_read(&self.body)
        } else {
            self.body.trim_end().to_owned()
        }
    }

    /// A conversation comment: on no line, in no thread.
    pub fn conversation(
        id: String,
        author: String,
        body: String,
        created_at: Timestamp,
        by_bugloop: bool,
    ) -> Comment {
        Comment {
            id,
            author,
            body,
            created_at,
            kind: CommentKind::Issue,
            in_reply_to: None,
            thread_id: None,
            path: None,
            line: None,
            thread_resolved: false,
            by_bugloop,
        }
    }
}

/// The logins the bot writes as (for example `bugloop[bot]` and `github-actions[bot]`), for a
/// forge deciding [`Comment::by_bugloop`] from an account it authenticated as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    logins: Vec<String>,
}

impl BotIdentity {
    pub fn new<I, S>(logins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        BotIdentity {
            logins: logins
                .into_iter()
                .map(|l| l.as_ref().trim().to_lowercase())
                .collect(),
        }
    }

    /// Logins compare case-insensitively, as on GitHub.
    pub fn is_bot(&self, author: &str) -> bool {
        let author = author.trim();
        self.logins
            .iter()
            .any(|login| login.eq_ignore_ascii_case(author))
    }
}

/// A developer's reply in a finding's thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reply {
    pub comment_id: String,
    pub author: String,
    pub body: String,
    pub created_at: Timestamp,
}

/// The state of one finding thread (the default: a pending thread of nothing, which a test fills
/// in).
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ThreadState {
    /// The id of the bot comment that opened the thread.
    pub id: String,
    pub kind: CommentKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forge_thread_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding_id: Option<FindingId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub status: ThreadStatus,
    /// When the status last changed (the root's time if never).
    pub status_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<Score>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assessment: Option<RmcocBlock>,
    /// The first line of the human text (a markdown heading's text), for lists.
    pub title: String,
    /// The root's human text: the finding's full description as published.
    pub body: String,
    pub developer_replies: Vec<Reply>,
    pub bot_replies: usize,
    /// A developer spoke last: the bot owes an answer.
    pub awaiting_bot: bool,
    /// The forge's own resolved flag (anyone can click it; it does not change `status`).
    pub forge_resolved: bool,
    /// RESOLVED because its code changed ([`ReplyKind::Fixed`]), not argued away: found again,
    /// it is raised again in this thread.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reopenable: bool,
    /// The commit bugloop's resolution names (`Fixed in 1a2b3c4`), while the finding stands
    /// resolved by it: a branch that no longer holds that change has the problem back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_in: Option<String>,
}

impl ThreadState {
    /// What bugloop's state block in the thread's root records under `key` (the finding's
    /// category, source, place, quote).
    pub fn recorded(&self, key: &str) -> Option<&serde_json::Value> {
        self.assessment.as_ref()?.extra.get(key)
    }
}

/// Something in the conversation that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateProblem {
    pub comment_id: String,
    pub message: String,
}

/// Everything [`reconstruct`] derived.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ReviewState {
    pub threads: Vec<ThreadState>,
    pub problems: Vec<StateProblem>,
    /// Comments by others that carried a marker, an `rmcoc` block or a status phrase.
    pub ignored_untrusted: usize,
}

impl ReviewState {
    /// The thread that speaks for each finding id: where a finding has several (an issue comment
    /// and a review comment), the one whose status changed last.
    pub fn by_finding(&self) -> HashMap<&FindingId, &ThreadState> {
        let mut map: HashMap<&FindingId, &ThreadState> = HashMap::new();
        for thread in &self.threads {
            let Some(id) = &thread.finding_id else {
                continue;
            };
            map.entry(id)
                .and_modify(|current| {
                    if thread.status_at > current.status_at {
                        *current = thread;
                    }
                })
                .or_insert(thread);
        }
        map
    }

    /// Threads not yet resolved (pending, disputed or escalated).
    pub fn unresolved(&self) -> impl Iterator<Item = &ThreadState> {
        self.threads
            .iter()
            .filter(|t| t.status != ThreadStatus::Resolved)
    }
}

/// Why [`find_thread`] found nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FindThreadError {
    #[error("no finding {0:?} here; `bugloop findings` lists them")]
    NotFound(String),
    #[error("{query:?} matches {} findings: {}; give more of the id", matches.len(), matches.join(", "))]
    Ambiguous { query: String, matches: Vec<String> },
}

/// The finding thread a person means: its finding id or its root comment's id exactly, else the
/// one finding id that starts with `query`.
pub fn find_thread<'a>(
    threads: impl IntoIterator<Item = &'a ThreadState>,
    query: &str,
) -> Result<&'a ThreadState, FindThreadError> {
    let threads: Vec<&ThreadState> = threads
        .into_iter()
        .filter(|t| t.finding_id.is_some())
        .collect();
    let id_of = |t: &ThreadState| t.finding_id.as_ref().map_or("", |f| f.as_str()).to_owned();
    if let Some(exact) = threads.iter().find(|t| id_of(t) == query || t.id == query) {
        return Ok(exact);
    }
    let prefixed: Vec<&ThreadState> = threads
        .iter()
        .copied()
        .filter(|t| !query.is_empty() && id_of(t).starts_with(query))
        .collect();
    match prefixed.as_slice() {
        [one] => Ok(one),
        [] => Err(FindThreadError::NotFound(query.to_owned())),
        many => Err(FindThreadError::Ambiguous {
            query: query.to_owned(),
            matches: many.iter().map(|t| id_of(t)).collect(),
        }),
    }
}

/// Rebuilds the review state from a conversation.
pub fn reconstruct(comments: &[Comment], markers: &MarkerSyntax) -> ReviewState {
    let index: HashMap<&str, usize> = comments
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    let mut state = ReviewState::default();
    let thread_roots = forge_thread_roots(comments);
    let root_of = roots_of(comments, &index, &thread_roots, &mut state);
    let (roots, mut replies) = group_by_root(&root_of, comments);

    for root in roots {
        let comment = &comments[root];
        let mut members = replies.remove(&root).unwrap_or_default();
        members.sort_by(|a, b| order_key(&comments[*a]).cmp(&order_key(&comments[*b])));
        if !comment.by_bugloop {
            if carries_state(comment, markers) {
                state.ignored_untrusted += 1;
            }
            state.ignored_untrusted += members
                .iter()
                .filter(|&&m| !comments[m].by_bugloop && carries_state(&comments[m], markers))
                .count();
            continue;
        }
        if let Some(thread) = build_thread(comment, &members, comments, markers, &mut state) {
            state.threads.push(thread);
        }
    }
    state
}

/// The first comment of each forge thread is its root, for forges that give thread ids but no
/// reply links.
fn forge_thread_roots(comments: &[Comment]) -> HashMap<&str, usize> {
    let mut thread_roots: HashMap<&str, usize> = HashMap::new();
    for (i, comment) in comments.iter().enumerate() {
        if let Some(thread) = &comment.thread_id {
            thread_roots
                .entry(thread.as_str())
                .and_modify(|root| {
                    if order_key(comment) < order_key(&comments[*root]) {
                        *root = i;
                    }
                })
                .or_insert(i);
        }
    }
    thread_roots
}

/// The root of every comment, following reply links (else the forge thread's root); cycles and
/// dangling links are problems, and the comment where one is found stands as a root.
fn roots_of(
    comments: &[Comment],
    index: &HashMap<&str, usize>,
    thread_roots: &HashMap<&str, usize>,
    state: &mut ReviewState,
) -> Vec<Option<usize>> {
    let mut root_of: Vec<Option<usize>> = vec![None; comments.len()];
    for start in 0..comments.len() {
        if root_of[start].is_some() {
            continue;
        }
        let mut path = vec![start];
        let mut current = start;
        let root = loop {
            if let Some(known) = root_of[current] {
                break known;
            }
            let comment = &comments[current];
            let parent = match &comment.in_reply_to {
                Some(parent_id) => match index.get(parent_id.as_str()) {
                    Some(&parent) => Some(parent),
                    None => {
                        state.problems.push(StateProblem {
                            comment_id: comment.id.clone(),
                            message: format!("replies to unknown comment {parent_id:?}"),
                        });
                        None
                    }
                },
                None => comment
                    .thread_id
                    .as_deref()
                    .and_then(|t| thread_roots.get(t).copied())
                    .filter(|&root| root != current),
            };
            match parent {
                Some(parent) if path.contains(&parent) => {
                    state.problems.push(StateProblem {
                        comment_id: comment.id.clone(),
                        message: "reply links form a cycle".to_owned(),
                    });
                    break current;
                }
                Some(parent) => {
                    path.push(parent);
                    current = parent;
                }
                None => break current,
            }
        };
        for member in path {
            root_of[member] = Some(root);
        }
    }
    root_of
}

/// The roots in conversation order, and the replies under each root (in no order yet).
fn group_by_root(
    root_of: &[Option<usize>],
    comments: &[Comment],
) -> (Vec<usize>, HashMap<usize, Vec<usize>>) {
    let mut replies: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots: Vec<usize> = Vec::new();
    for (i, root) in root_of.iter().enumerate() {
        let root = root.unwrap_or(i);
        if root == i {
            roots.push(i);
        } else {
            replies.entry(root).or_default().push(i);
        }
    }
    roots.sort_by(|a, b| order_key(&comments[*a]).cmp(&order_key(&comments[*b])));
    (roots, replies)
}

/// Forges give times in whole seconds, so comments of one second are ordered by their ids, which
/// increase with creation (GitHub's within a kind, the local store's overall). An id compares by
/// its number (`"9"` before `"10"`, `"review-9"` before `"review-10"`), never as text.
fn order_key(comment: &Comment) -> (Timestamp, Option<u64>, &str) {
    let id = comment.id.as_str();
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let number = id[id.len() - digits..].parse::<u64>().ok();
    (comment.created_at, number, id)
}

fn carries_state(comment: &Comment, markers: &MarkerSyntax) -> bool {
    comment.body.contains(RESOLVED_PHRASE)
        || comment.body.contains(ESCALATED_PHRASE)
        || !markers.parse_all(&comment.body).is_empty()
        || markers.read_reply_tag(&comment.body).is_some()
        || parse_comment(&comment.body).block.is_some()
}

/// Replies bugloop wrote before it tagged its replies that are known to carry no verdict.
const LEGACY_INFORMATIONAL_OPENINGS: [&str; 3] = [
    "Could not fix this:",
    "A verified fix waits on branch",
    "bugloop: ",
];

/// What an untagged reply of bugloop's meant, as far as it can be told (replies written before
/// replies were tagged): the known informational replies first (whatever they quote), then the
/// phrases where bugloop wrote them (at the start), a state block or marker, and otherwise an
/// answer to a developer without conceding, as it was read then.
fn legacy_reply_status(
    reply: &Comment,
    reply_marker: Option<Marker>,
    developer_spoke_since_bot: bool,
) -> Option<ThreadStatus> {
    let body = reply.body.trim_start();
    if LEGACY_INFORMATIONAL_OPENINGS
        .iter()
        .any(|opening| body.starts_with(opening))
    {
        None
    } else if let Some(explicit) = parse_comment(&reply.body).block.and_then(|b| b.status) {
        Some(explicit)
    } else if body.starts_with(ESCALATED_PHRASE) {
        Some(ThreadStatus::Escalated)
    } else if body.starts_with(RESOLVED_PHRASE) {
        Some(ThreadStatus::Resolved)
    } else if let Some(marker) = reply_marker {
        Some(if marker.resolved {
            ThreadStatus::Resolved
        } else {
            ThreadStatus::Pending
        })
    } else if developer_spoke_since_bot {
        Some(ThreadStatus::Disputed)
    } else {
        None
    }
}

/// Where a finding is: the place bugloop's own state block names (a review that saw the code
/// move, or found the finding again lower down, rewrote it there), else the comment's anchor,
/// which stays where the comment was first made.
fn place(root: &Comment, block: Option<&RmcocBlock>) -> (Option<String>, Option<u32>) {
    // Normalized as a finding's path is: a block the bot's login wrote unsigned is still text.
    let file = block
        .and_then(|b| crate::paths::normalize_finding_path(b.extra.get("file")?.as_str()?).ok());
    let line = block.and_then(|b| u32::try_from(b.extra.get("line")?.as_u64()?).ok());
    match (file, line) {
        (Some(file), Some(line)) => (Some(file), Some(line)),
        _ => (root.path.clone(), root.line),
    }
}

/// The finding thread a bot comment opened, its status followed through the replies; `None` where
/// the comment is not a finding.
fn build_thread(
    root: &Comment,
    members: &[usize],
    comments: &[Comment],
    markers: &MarkerSyntax,
    state: &mut ReviewState,
) -> Option<ThreadState> {
    let parsed = parse_comment(&root.body);
    push_parse_problems(state, &root.id, &parsed.problems);
    let root_marker = markers.own(&root.body);
    let assessment = parsed.block;
    // Only bot comments with a valid rmcoc block or a finding marker are findings; anything else
    // the bot wrote (summaries, overflow lists, answers) is not.
    if assessment.is_none() && root_marker.is_none() {
        return None;
    }
    let finding_id = root_marker.as_ref().map(|m| m.finding_id.clone());
    let status = match (&assessment, &root_marker) {
        (
            Some(RmcocBlock {
                status: Some(status),
                ..
            }),
            _,
        ) => *status,
        (_, Some(marker)) if marker.resolved => ThreadStatus::Resolved,
        _ => ThreadStatus::Pending,
    };
    let mut progress = Progress::new(root, status);
    for &member in members {
        let reply = &comments[member];
        progress.forge_resolved |= reply.thread_resolved;
        if reply.by_bugloop {
            progress.bot_reply(reply, finding_id.as_ref(), markers, state);
        } else {
            progress.developer_reply(reply, markers, state);
        }
    }

    let title = title_of(&parsed.human)
        .or_else(|| assessment.as_ref().map(|a| a.finding.clone()))
        .unwrap_or_default();
    let (file, line) = place(root, assessment.as_ref());
    Some(ThreadState {
        id: root.id.clone(),
        kind: root.kind,
        forge_thread_id: root.thread_id.clone(),
        finding_id,
        file,
        line,
        status: progress.status,
        status_at: progress.status_at,
        score: assessment.as_ref().map(|a| a.score),
        assessment,
        title,
        body: parsed.human,
        developer_replies: progress.developer_replies,
        bot_replies: progress.bot_replies,
        awaiting_bot: progress.developer_spoke_since_bot,
        forge_resolved: progress.forge_resolved,
        reopenable: progress.reopenable,
        fixed_in: progress.fixed_in,
    })
}

/// What is wrong in a comment's state block, as problems of the review state.
fn push_parse_problems(state: &mut ReviewState, comment_id: &str, problems: &[RmcocProblem]) {
    for problem in problems {
        state.problems.push(StateProblem {
            comment_id: comment_id.to_owned(),
            message: format!("line {}: {}", problem.line, problem.message),
        });
    }
}

/// A finding thread as its replies, in order, have left it.
struct Progress<'c> {
    status: ThreadStatus,
    status_at: Timestamp,
    reopenable: bool,
    fixed_in: Option<String>,
    developer_replies: Vec<Reply>,
    bot_replies: usize,
    developer_spoke_since_bot: bool,
    forge_resolved: bool,
    /// Resolutions by code already applied, by body: bugloop names the commit in each, so the
    /// same body again is a copy (a signed reply replayed by someone sharing the bot's login, to
    /// resolve a finding raised again since) and changes nothing.
    applied: Vec<&'c str>,
}

impl<'c> Progress<'c> {
    fn new(root: &Comment, status: ThreadStatus) -> Self {
        Progress {
            status,
            status_at: root.created_at,
            reopenable: false,
            fixed_in: None,
            developer_replies: Vec::new(),
            bot_replies: 0,
            developer_spoke_since_bot: false,
            forge_resolved: root.thread_resolved,
            applied: Vec::new(),
        }
    }

    /// A developer's reply never changes the status (state it carries is counted as untrusted);
    /// it is kept, and the bot owes an answer.
    fn developer_reply(
        &mut self,
        reply: &Comment,
        markers: &MarkerSyntax,
        state: &mut ReviewState,
    ) {
        if carries_state(reply, markers) {
            state.ignored_untrusted += 1;
        }
        self.developer_replies.push(Reply {
            comment_id: reply.id.clone(),
            author: reply.author.clone(),
            body: reply.body.clone(),
            created_at: reply.created_at,
        });
        self.developer_spoke_since_bot = true;
    }

    /// A reply of bugloop's sets the status its tag (or, untagged, its text) says, but a
    /// resolution by code repeated word for word, which is reported and ignored.
    fn bot_reply(
        &mut self,
        reply: &'c Comment,
        finding_id: Option<&FindingId>,
        markers: &MarkerSyntax,
        state: &mut ReviewState,
    ) {
        self.bot_replies += 1;
        let tag = markers.read_reply_tag(&reply.body);
        let next = match tag {
            Some(ReplyKind::Status(status)) => Some(status),
            Some(ReplyKind::Fixed) => Some(ThreadStatus::Resolved),
            Some(ReplyKind::Info) => None,
            None => {
                let parsed_reply = parse_comment(&reply.body);
                push_parse_problems(state, &reply.id, &parsed_reply.problems);
                let reply_marker = markers
                    .own(&reply.body)
                    .filter(|m| finding_id.is_none_or(|id| &m.finding_id == id));
                legacy_reply_status(reply, reply_marker, self.developer_spoke_since_bot)
            }
        };
        let replayed = tag == Some(ReplyKind::Fixed) && self.applied.contains(&reply.body.as_str());
        if replayed {
            state.problems.push(StateProblem {
                comment_id: reply.id.clone(),
                message: "repeats an earlier resolution of this thread word for word; ignored"
                    .to_owned(),
            });
        }
        if let Some(next) = next.filter(|_| !replayed) {
            if tag == Some(ReplyKind::Fixed) {
                self.applied.push(&reply.body);
            }
            self.reopenable = tag == Some(ReplyKind::Fixed);
            self.fixed_in = self.reopenable.then(|| fix_commit(&reply.body)).flatten();
            if next != self.status {
                self.status = next;
                self.status_at = reply.created_at;
            }
        }
        self.developer_spoke_since_bot = false;
    }
}

/// What starts the reason of a resolution `bugloop fix` wrote, before its commit's full id
/// ([`fix_resolution`]). A review's resolutions, whose reasons are the model's words, never
/// start so (see `bugloop-loops`' publishing).
pub const FIXED_IN: &str = "Fixed in commit ";

/// The reason `bugloop fix` gives when its commit resolves a finding; `verified` when the
/// verify commands passed on it (none configured: unverified).
pub fn fix_resolution(commit: &str, verified: bool) -> String {
    let how = if verified {
        "verified"
    } else {
        "unverified: no verify command is configured"
    };
    format!("{FIXED_IN}{commit} (`bugloop fix`, {how}).")
}

/// The commit a resolution by `bugloop fix` names: its reason paragraph starts with
/// [`FIXED_IN`] and a full 40-digit commit id.
fn fix_commit(body: &str) -> Option<String> {
    let reason = body
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with(FIXED_IN))?;
    let sha: String = reason[FIXED_IN.len()..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() == 40).then_some(sha)
}

/// A comment's title: its first heading (a finding's `### title`, under the line a proof puts
/// first), else its first non-empty line that is not a marker; without heading or bold markup.
pub fn title_of(human: &str) -> Option<String> {
    // Outside fenced code (a proof's test is quoted in one).
    let mut fence: Option<String> = None;
    let heading = human
        .lines()
        .map(str::trim)
        .find(|line| {
            let ticks: String = line.chars().take_while(|c| *c == '`').collect();
            match &fence {
                Some(open) => {
                    if ticks.len() >= open.len() && line[ticks.len()..].trim().is_empty() {
                        fence = None;
                    }
                    false
                }
                None if ticks.len() >= 3 => {
                    fence = Some(ticks);
                    false
                }
                None => line.starts_with("### ") || line.starts_with("## "),
            }
        })
        .map(|line| line.trim_start_matches('#').trim().to_owned())
        .filter(|line| !line.is_empty());
    if heading.is_some() {
        return heading;
    }
    human
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("<!--"))
        .map(|line| {
            let line = line.trim_start_matches('#').trim();
            let line = line
                .strip_prefix("**")
                .and_then(|l| l.strip_suffix("**"))
                .unwrap_or(line);
            line.trim().to_owned()
        })
        .find(|line| !line.is_empty())
}

#[cfg(test)]
mod tests;
