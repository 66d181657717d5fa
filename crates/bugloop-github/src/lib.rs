//! GitHub's REST and GraphQL APIs as bugloop uses them. Hand-written on reqwest rather than a
//! generated or general client (octocrab) because bugloop must control what is retried: a
//! comment create that failed after it was sent is reported as [`GitHubError::Ambiguous`], never
//! sent again, so the caller can look for its marker first; see `transport.rs` for the rules.
//! Ids are `u64` (they exceed 2^31), and issue comments and review comments keep their kind.
//!
//! **Never:** retry a create after it was sent (it is `Ambiguous`; the caller looks for its marker
//! first), or know about loops.

mod app;
mod graphql;
mod rest;
mod transport;

use std::sync::Arc;
use std::time::Duration;

pub use self::app::{
    AppCredentials, AppKeyError, Clock, Installation, RENEW_BEFORE_SECONDS, SystemClock,
};
pub use self::graphql::{DOCUMENTS, ReviewThread};
pub use self::rest::{
    Account, CollaboratorPermission, CommitChecks, Issue, IssueComment, Label, LabelEvent,
    NewPullRequest, NewReviewComment, PullRequest, PullRequestSide, RepoRef, Review, ReviewComment,
};
pub use self::transport::{Counters, Policy, RateLimit, RateLimitObserver, Sleeper, TokioSleeper};

use self::transport::{Auth, Transport};

/// GitHub caps a comment body at this many characters.
pub const MAX_BODY_CHARS: usize = 65_536;

/// What went wrong, classified; every error names the operation (method and path).
#[derive(Debug, thiserror::Error)]
pub enum GitHubError {
    #[error("{operation}: rate limited ({message}); retry after {} s", retry_after.as_secs())]
    RateLimited {
        operation: String,
        retry_after: Duration,
        message: String,
    },
    #[error("{operation}: {message}{}", if errors.is_empty() { String::new() } else { format!(" ({})", errors.join("; ")) })]
    Unprocessable {
        operation: String,
        message: String,
        errors: Vec<String>,
    },
    #[error("{operation}: forbidden: {message}")]
    Forbidden { operation: String, message: String },
    #[error("{operation}: not found: {message}")]
    NotFound { operation: String, message: String },
    #[error("{operation}: the credentials were refused: {message}")]
    Unauthorized { operation: String, message: String },
    /// GitHub could not be reached, or answered with a server error, after the retries that
    /// were safe: GitHub itself failing, whatever the request was.
    #[error("{operation}: {message}")]
    Transient { operation: String, message: String },
    /// A refusal of a status no other variant names (a 400, 409, 410, ...): it is this request's,
    /// and may pass (it is retried later), but says nothing about GitHub being up.
    #[error("{operation}: {message}")]
    Refused { operation: String, message: String },
    #[error("{operation}: it may or may not have been done ({message}); look before trying again")]
    Ambiguous { operation: String, message: String },
    #[error("{operation}: too large: {message}")]
    TooLarge { operation: String, message: String },
    #[error("{operation}: the answer could not be read: {message}")]
    Decode { operation: String, message: String },
    #[error("{operation}: {}", messages.join("; "))]
    GraphQl {
        operation: String,
        messages: Vec<String>,
    },
}

/// Where the APIs are: github.com's, or a GitHub Enterprise Server's (`GITHUB_API_URL`,
/// `GITHUB_GRAPHQL_URL` in an Action).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub api_url: String,
    pub graphql_url: String,
}

impl Default for Endpoint {
    fn default() -> Self {
        Endpoint {
            api_url: "https://api.github.com".to_owned(),
            graphql_url: "https://api.github.com/graphql".to_owned(),
        }
    }
}

impl Endpoint {
    /// From the values an Action sets; an unset one keeps github.com's (the GraphQL URL defaults
    /// to `<api url>/graphql`).
    pub fn from_values(api_url: Option<&str>, graphql_url: Option<&str>) -> Endpoint {
        let api = api_url
            .filter(|u| !u.is_empty())
            .unwrap_or("https://api.github.com")
            .trim_end_matches('/')
            .to_owned();
        let graphql = graphql_url.filter(|u| !u.is_empty()).map_or_else(
            || format!("{api}/graphql"),
            |u| u.trim_end_matches('/').to_owned(),
        );
        Endpoint {
            api_url: api,
            graphql_url: graphql,
        }
    }
}

/// A repository: `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl Repo {
    /// `owner/name`, as `GITHUB_REPOSITORY` and payloads give it.
    pub fn parse(full_name: &str) -> Option<Repo> {
        let (owner, name) = full_name.split_once('/')?;
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
                && part != "."
                && part != ".."
        };
        (valid(owner) && valid(name)).then(|| Repo {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }
}

impl std::fmt::Display for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A client of one GitHub, authenticated with a token (an Action's `GITHUB_TOKEN` or an App
/// installation's).
#[derive(Debug)]
pub struct GitHubClient {
    endpoint: Endpoint,
    transport: Transport,
}

impl GitHubClient {
    pub fn new(endpoint: Endpoint, token: String, policy: Policy) -> Result<Self, GitHubError> {
        Self::with_sleeper(endpoint, token, policy, Arc::new(TokioSleeper))
    }

    /// With the waits going to `sleeper` (tests record them instead of waiting).
    pub fn with_sleeper(
        endpoint: Endpoint,
        token: String,
        policy: Policy,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Self, GitHubError> {
        Ok(GitHubClient {
            transport: Transport::new(&endpoint.api_url, Auth::Token(token), policy, sleeper)?,
            endpoint,
        })
    }

    /// A client acting as an App installation: its token is obtained with the App's JWT and
    /// renewed while more than five minutes remain.
    pub fn for_installation(
        endpoint: Endpoint,
        installation: Installation,
        policy: Policy,
        sleeper: Arc<dyn Sleeper>,
    ) -> Result<Self, GitHubError> {
        let auth = Auth::Installation {
            installation,
            cached: tokio::sync::Mutex::new(None),
        };
        Ok(GitHubClient {
            transport: Transport::new(&endpoint.api_url, auth, policy, sleeper)?,
            endpoint,
        })
    }

    /// The token requests go with now (an installation's, renewed when fewer than five minutes
    /// remain): for git, which fetches and pushes with it.
    pub async fn current_token(&self) -> Result<String, GitHubError> {
        self.transport.current_token().await
    }

    /// Requests made so far.
    pub fn counters(&self) -> Counters {
        self.transport.counters()
    }

    /// The REST (`core`) rate limit as GitHub last reported it.
    pub fn rate_limit(&self) -> Option<RateLimit> {
        self.transport.rate_limit("core")
    }

    /// The GraphQL API's rate limit (a budget of its own) as GitHub last reported it.
    pub fn graphql_rate_limit(&self) -> Option<RateLimit> {
        self.transport.rate_limit("graphql")
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.endpoint.api_url)
    }
}

/// Refuses a body GitHub would refuse, before sending it.
fn check_body(operation: &str, body: &str) -> Result<(), GitHubError> {
    let chars = body.chars().count();
    if chars > MAX_BODY_CHARS {
        return Err(GitHubError::TooLarge {
            operation: operation.to_owned(),
            message: format!("a body of {chars} characters (GitHub takes {MAX_BODY_CHARS})"),
        });
    }
    Ok(())
}
