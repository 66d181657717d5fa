//! Who the intake counts as an outsider: GitHub's `author_association` says OWNER, MEMBER or
//! COLLABORATOR for a read-only collaborator or organisation member too, so for those two the
//! author's permission is asked of GitHub (as the App's installation), once per repository and
//! login for [`TTL`]. Anyone else GitHub associates with the repository otherwise (a
//! contributor, a first-timer, none) has no role in it, and needs no question. Without the App's
//! credentials (a server that only queues) the association decides, as said at start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bugloop_github::{AppCredentials, Endpoint, GitHubClient, Installation, Policy, Repo};

/// How long an answer is kept.
pub const TTL: Duration = Duration::from_secs(600);
/// Longest the intake waits for GitHub's answer (GitHub waits ten seconds for the delivery's).
const ASK_TIMEOUT: Duration = Duration::from_secs(3);
/// The most answers kept at once.
const MAX_KEPT: usize = 10_000;

/// Asks GitHub whether a login may write to a repository, and remembers the answers.
pub struct IntakePermissions {
    credentials: Arc<AppCredentials>,
    endpoint: Endpoint,
    policy: Policy,
    known: Mutex<HashMap<(String, String), (Instant, bool)>>,
}

impl std::fmt::Debug for IntakePermissions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntakePermissions").finish_non_exhaustive()
    }
}

impl IntakePermissions {
    pub fn new(credentials: Arc<AppCredentials>, endpoint: Endpoint, policy: Policy) -> Self {
        IntakePermissions {
            credentials,
            endpoint,
            policy,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `login` may write to `repository` (as `installation` sees it); `None` when GitHub
    /// could not say in time.
    pub async fn may_write(
        &self,
        installation: u64,
        repository: &str,
        login: &str,
    ) -> Option<bool> {
        let key = (repository.to_lowercase(), login.to_lowercase());
        let now = Instant::now();
        if let Some((at, answer)) = self.lock().get(&key)
            && now.saturating_duration_since(*at) < TTL
        {
            return Some(*answer);
        }
        let repo = Repo::parse(repository)?;
        let client = GitHubClient::for_installation(
            self.endpoint.clone(),
            Installation {
                credentials: self.credentials.clone(),
                id: installation,
                clock: Arc::new(bugloop_github::SystemClock),
            },
            self.policy.clone(),
            Arc::new(bugloop_github::TokioSleeper),
        )
        .ok()?;
        let asked = tokio::time::timeout(ASK_TIMEOUT, client.collaborator_permission(&repo, login));
        let answer = match asked.await {
            Ok(Ok(permission)) => permission.can_write(),
            // Not a collaborator at all.
            Ok(Err(bugloop_github::GitHubError::NotFound { .. })) => false,
            _ => return None,
        };
        let mut known = self.lock();
        if known.len() >= MAX_KEPT {
            known.retain(|_, (at, _)| now.saturating_duration_since(*at) < TTL);
        }
        known.insert(key, (now, answer));
        Some(answer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), (Instant, bool)>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
