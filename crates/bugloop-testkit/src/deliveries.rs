//! The bodies of webhook deliveries as GitHub sends them, for tests that post them to a server:
//! about `acme/widgets`, sent by alice, through the App's installation 42.

use serde_json::{Value, json};

/// A `pull_request` delivery: `action` on alice's pull request `number`, titled `title`, from
/// `feature` at the commit `head` onto `main` at `base`.
pub fn pull_request(action: &str, number: u64, title: &str, (head, base): (&str, &str)) -> Value {
    json!({
        "action": action,
        "number": number,
        "repository": {"full_name": "acme/widgets"},
        "sender": {"login": "alice", "type": "User"},
        "installation": {"id": 42},
        "pull_request": {"number": number, "title": title, "draft": false, "user": {"login": "alice"},
            "head": {"ref": "feature", "sha": head, "repo": {"full_name": "acme/widgets"}},
            "base": {"ref": "main", "sha": base, "repo": {"full_name": "acme/widgets"}}}
    })
}
