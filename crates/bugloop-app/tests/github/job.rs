//! The job bugloop is handed for the simulator's pull request #7, as the Action gives it: a
//! token, the workspace's checkout, the simulator (writes not spaced), the state key, the bot's
//! login. The tests (through `support`) and the benchmark (`benches/github.rs`) both run it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bugloop_app::{ConfigChoice, GitHubCredentials, GitHubEvent, GitHubEventJob, Workspace};
use bugloop_forge::signing::StateKey;
use bugloop_github::{Endpoint, Policy, Repo};
use bugloop_github_sim::fixture::{BOT, PullRequestFixture, TOKEN};
use bugloop_webhooks::Trigger;

pub const KEY: &[u8] = b"a state key of 32 bytes, secret!";

/// A review of the pull request at the fixture's head.
pub fn review_trigger(fixture: &PullRequestFixture) -> Trigger {
    Trigger::Review {
        repository: "acme/widgets".to_owned(),
        number: 7,
        head: fixture.head.clone(),
        base: fixture.base.clone(),
        fork: false,
        installation: None,
    }
}

/// The event `trigger` on the fixture, with `config` as the user configuration file and
/// `model`.
pub fn job(
    fixture: &PullRequestFixture,
    trigger: Trigger,
    config: &Path,
    model: String,
) -> GitHubEventJob {
    GitHubEventJob {
        event: GitHubEvent::Decided(trigger),
        repository: Some(Repo::parse("acme/widgets").unwrap()),
        credentials: Some(GitHubCredentials::Token(TOKEN.to_owned())),
        endpoint: Endpoint::from_values(
            Some(&fixture.sim.api_url()),
            Some(&fixture.sim.graphql_url()),
        ),
        policy: Policy {
            write_spacing: Duration::ZERO,
            ..Policy::default()
        },
        rate_limits: None,
        state_key: Some(StateKey::new(KEY.to_vec()).unwrap()),
        bot_login: Some(BOT.to_owned()),
        workspace: Workspace::Checkout(fixture.workspace().to_path_buf()),
        config: ConfigChoice {
            file: Some(config.to_path_buf()),
            trust_branch: false,
            ..Default::default()
        },
        progress: Arc::new(bugloop_app::types::Silent),
        model: Some(model),
        fail_on: None,
        fence: None,
    }
}
