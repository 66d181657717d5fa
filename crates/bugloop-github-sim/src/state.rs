//! What the simulated GitHub holds: one repository's pull requests, their conversation comments,
//! review comments and threads, collaborators, labels and tokens; the faults waiting to be
//! applied; and every request answered.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

/// Comment ids start above 2^32, so a client that keeps them in 32 bits fails at once; the two
/// kinds are numbered apart, as on GitHub.
pub const FIRST_ISSUE_COMMENT_ID: u64 = 5_000_000_001;
pub const FIRST_REVIEW_COMMENT_ID: u64 = 7_000_000_001;

/// A pull request as a test describes it.
#[derive(Debug, Clone)]
pub struct PullSpec {
    pub number: u64,
    pub title: String,
    pub author: String,
    pub base_ref: String,
    pub base_sha: String,
    pub head_ref: String,
    pub head_sha: String,
    /// From another repository.
    pub fork: bool,
    pub draft: bool,
    /// The unified diff (base -> head): the lines inside its hunks are the ones a review
    /// comment may be on. `None`: every line may.
    pub diff: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Pull {
    pub spec: PullSpec,
    pub node_id: String,
    /// Every head it has had: a comment may refer to any of them.
    pub heads: Vec<String>,
    pub reads: u32,
    pub labels: Vec<String>,
    pub requested_reviewers: Vec<String>,
    pub body: String,
    pub open: bool,
    pub merged: bool,
    /// The commit a merge brought it in with, once merged (`merge_commit_sha`).
    pub merge_commit: Option<String>,
    /// Opened by a client from a branch of the simulator's git repository: its head follows
    /// the branch.
    pub from_git: bool,
}

impl Pull {
    pub fn new(spec: PullSpec) -> Pull {
        Pull {
            node_id: format!("PR_kwDOsim{}", spec.number),
            heads: vec![spec.head_sha.clone()],
            reads: 0,
            labels: Vec::new(),
            requested_reviewers: Vec::new(),
            body: String::new(),
            open: true,
            merged: false,
            merge_commit: None,
            from_git: false,
            spec,
        }
    }
}

/// An issue (not a pull request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimIssue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub author: String,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    pub open: bool,
    pub created_at: u64,
}

/// An App the simulator knows.
#[derive(Debug, Clone)]
pub struct App {
    pub id: u64,
    pub slug: String,
    /// The DER of its RSA public key (PKCS#1): JWTs must verify with it.
    pub public_key: Vec<u8>,
    pub installations: Vec<u64>,
}

/// A label put on an issue (its `labeled` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelEvent {
    pub number: u64,
    pub label: String,
    pub actor: String,
    pub created_at: u64,
}

impl State {
    /// Puts `labels` on issue `number` as `actor`, each new one recorded as a `labeled` event.
    pub fn label_issue(&mut self, number: u64, labels: Vec<String>, actor: &str) -> Vec<String> {
        let mut added = Vec::new();
        if let Some(issue) = self.issues.get_mut(&number) {
            for label in labels {
                if !issue.labels.contains(&label) {
                    issue.labels.push(label.clone());
                    added.push(label);
                }
            }
        }
        for label in added {
            let created_at = self.tick();
            self.label_events.push(LabelEvent {
                number,
                label,
                actor: actor.to_owned(),
                created_at,
            });
        }
        self.issues
            .get(&number)
            .map(|i| i.labels.clone())
            .unwrap_or_default()
    }
}

/// A conversation comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    pub id: u64,
    pub number: u64,
    pub author: String,
    pub body: String,
    pub created_at: u64,
    pub updated_at: u64,
}

/// A comment on a line or a file of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    pub id: u64,
    pub number: u64,
    pub author: String,
    pub body: String,
    pub path: String,
    pub line: Option<u32>,
    pub start_line: Option<u32>,
    pub commit_id: String,
    pub in_reply_to: Option<u64>,
    pub thread: String,
    pub created_at: u64,
    pub updated_at: u64,
}

/// A review thread (started by a review comment that answers none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub id: String,
    pub number: u64,
    pub root: u64,
    pub resolved: bool,
    pub path: String,
    pub line: Option<u32>,
}

/// One request the simulator answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: String,
    pub status: u16,
    /// The GraphQL operation, for `POST /graphql`.
    pub operation: Option<String>,
}

/// Something to go wrong. Each is used once, in the order injected, unless it says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The matching request is carried out, then answered with `status` (a proxy's 502 after
    /// GitHub did the write).
    FailAfterWrite {
        method: String,
        path_contains: String,
        status: u16,
    },
    /// The matching request is answered with `status` and not carried out.
    Fail {
        method: String,
        path_contains: String,
        status: u16,
    },
    /// The matching request is refused as over the secondary rate limit (403, `retry-after`),
    /// not carried out.
    SecondaryRateLimit {
        method: String,
        path_contains: String,
        retry_after_secs: u64,
    },
    /// The next `writes` comments created stay out of listings (REST and GraphQL) for the next
    /// `listings` listings of their kind: GitHub's listings lag behind its writes.
    ListingLag { writes: usize, listings: usize },
    /// The next GraphQL request for `operation` (`ResolveThread`, ...) is answered with a
    /// GraphQL error (200 with `errors`), as GitHub does for a forbidden mutation.
    GraphQlError { operation: String, message: String },
    /// This line is refused as a review comment's anchor (422) even inside the diff; for good.
    RefuseAnchor { path: String, line: u32 },
    /// Once the pull request has been read `after_pull_reads` times, its head is `sha` (a push
    /// during a run).
    MoveHead {
        number: u64,
        after_pull_reads: u32,
        sha: String,
    },
}

impl Fault {
    /// Whether this one-shot fault applies to a request.
    pub(crate) fn matches(&self, method: &str, path: &str) -> bool {
        match self {
            Fault::FailAfterWrite {
                method: m,
                path_contains,
                ..
            }
            | Fault::Fail {
                method: m,
                path_contains,
                ..
            }
            | Fault::SecondaryRateLimit {
                method: m,
                path_contains,
                ..
            } => m.eq_ignore_ascii_case(method) && path.contains(path_contains.as_str()),
            _ => false,
        }
    }
}

/// A comment hidden from listings for a while.
#[derive(Debug, Clone)]
pub(crate) struct Hidden {
    pub review: bool,
    pub id: u64,
    pub listings_left: usize,
}

#[derive(Debug)]
pub(crate) struct State {
    pub owner: String,
    pub name: String,
    pub base_url: String,
    /// How long every answer takes (a distant GitHub), so a job lasts long enough to be
    /// interrupted.
    pub latency: std::time::Duration,
    pub tokens: HashMap<String, String>,
    pub apps: Vec<App>,
    pub issued_tokens: u64,
    /// How long an installation token lasts, in seconds (GitHub: an hour).
    pub token_lifetime: u64,
    /// When each installation token expires (seconds since the epoch); an expired one is
    /// refused.
    pub token_expiry: HashMap<String, u64>,
    pub permissions: HashMap<String, String>,
    pub pulls: BTreeMap<u64, Pull>,
    pub issues: BTreeMap<u64, SimIssue>,
    /// The repository's git, where created pull requests' branches are read.
    pub git_dir: Option<std::path::PathBuf>,
    /// Check runs: commit, name, status, conclusion.
    pub checks: Vec<(String, String, String, Option<String>)>,
    /// Reviews: pull request, reviewer, state.
    pub reviews: Vec<(u64, String, String)>,
    /// The bodies of submitted reviews, by review id (none: an empty body).
    pub review_bodies: BTreeMap<u64, String>,
    /// The head each review was given on, by review id.
    pub review_commits: BTreeMap<u64, String>,
    pub issue_comments: Vec<IssueComment>,
    /// Who put which label on which issue, when: its `labeled` events.
    pub label_events: Vec<LabelEvent>,
    pub review_comments: Vec<ReviewComment>,
    pub threads: Vec<Thread>,
    pub next_issue_id: u64,
    pub next_review_id: u64,
    pub faults: Vec<Fault>,
    pub refused_anchors: Vec<(String, u32)>,
    pub lag: Option<(usize, usize)>,
    pub hidden: Vec<Hidden>,
    pub requests: Vec<RequestRecord>,
    pub rate_remaining: u64,
    /// Seconds: every write is one second after the last, so timestamps are ordered (and
    /// several writes can share a second when a test sets it back).
    pub clock: u64,
}

/// 2026-01-01T00:00:00Z.
const EPOCH: u64 = 1_767_225_600;

/// Where the clock starts: the wall clock's second when the simulator is made (never before
/// [`EPOCH`]), so "the last hour" by GitHub's clock means what it does for a real repository.
fn start_of_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(EPOCH, |d| d.as_secs())
        .max(EPOCH)
}

impl State {
    pub fn new(owner: &str, name: &str) -> State {
        State {
            owner: owner.to_owned(),
            name: name.to_owned(),
            base_url: String::new(),
            latency: std::time::Duration::ZERO,
            tokens: HashMap::new(),
            apps: Vec::new(),
            issued_tokens: 0,
            token_lifetime: 3600,
            token_expiry: HashMap::new(),
            permissions: HashMap::new(),
            pulls: BTreeMap::new(),
            issues: BTreeMap::new(),
            git_dir: None,
            checks: Vec::new(),
            reviews: Vec::new(),
            review_commits: BTreeMap::new(),
            review_bodies: BTreeMap::new(),
            issue_comments: Vec::new(),
            label_events: Vec::new(),
            review_comments: Vec::new(),
            threads: Vec::new(),
            next_issue_id: FIRST_ISSUE_COMMENT_ID,
            next_review_id: FIRST_REVIEW_COMMENT_ID,
            faults: Vec::new(),
            refused_anchors: Vec::new(),
            lag: None,
            hidden: Vec::new(),
            requests: Vec::new(),
            rate_remaining: 5_000,
            clock: start_of_clock(),
        }
    }

    /// The next issue or pull request number (one sequence for both, as on GitHub).
    pub fn next_number(&mut self) -> u64 {
        let pulls = self.pulls.keys().next_back().copied().unwrap_or(0);
        let issues = self.issues.keys().next_back().copied().unwrap_or(0);
        pulls.max(issues) + 1
    }

    /// Whether `number` has a conversation (an issue or a pull request).
    pub fn has_conversation(&self, number: u64) -> bool {
        self.pulls.contains_key(&number) || self.issues.contains_key(&number)
    }

    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// A new comment joins the listing lag when one is injected.
    pub fn note_created(&mut self, review: bool, id: u64) {
        if let Some((writes, listings)) = self.lag.as_mut() {
            self.hidden.push(Hidden {
                review,
                id,
                listings_left: *listings,
            });
            *writes -= 1;
            if *writes == 0 {
                self.lag = None;
            }
        }
    }

    /// Whether a comment is hidden from listings now.
    pub fn is_hidden(&self, review: bool, id: u64) -> bool {
        self.hidden
            .iter()
            .any(|h| h.review == review && h.id == id && h.listings_left > 0)
    }

    /// A listing of one kind was served: hidden comments of that kind come one closer to showing.
    pub fn listed(&mut self, review: bool) {
        for hidden in self.hidden.iter_mut().filter(|h| h.review == review) {
            hidden.listings_left = hidden.listings_left.saturating_sub(1);
        }
        self.hidden.retain(|h| h.listings_left > 0);
    }

    pub fn account(&self, login: &str) -> Value {
        let kind = if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        };
        // A stable id per login.
        let id = login.bytes().fold(1_000u64, |acc, b| {
            acc.wrapping_mul(31).wrapping_add(u64::from(b))
        }) % 1_000_000_000;
        json!({"login": login, "id": id, "node_id": format!("U_{id}"), "type": kind, "site_admin": false})
    }

    /// Whether a new-side line of `path` is inside the pull request's diff.
    pub fn commentable(&self, pull: &Pull, path: &str, line: u32) -> bool {
        if self
            .refused_anchors
            .iter()
            .any(|(p, l)| p == path && *l == line)
        {
            return false;
        }
        match &pull.spec.diff {
            None => true,
            Some(diff) => crate::diff::hunk_lines(diff, path)
                .iter()
                .any(|(start, end)| (*start..=*end).contains(&line)),
        }
    }

    /// Whether `path` is a file of the pull request's diff.
    pub fn in_diff(&self, pull: &Pull, path: &str) -> bool {
        match &pull.spec.diff {
            None => true,
            Some(diff) => crate::diff::files(diff).iter().any(|f| f == path),
        }
    }
}

/// An RFC 3339 time of the simulator's clock.
pub fn timestamp(seconds: u64) -> String {
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to a date (Howard Hinnant's algorithm).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(timestamp(EPOCH), "2026-01-01T00:00:00Z");
        assert_eq!(
            timestamp(EPOCH + 86_400 * 59 + 3_661),
            "2026-03-01T01:01:01Z"
        );
    }
}
