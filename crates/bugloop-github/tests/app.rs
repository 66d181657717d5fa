//! Acting as a GitHub App: the JWT (checked with the key's public half, and its claims), keys in
//! both PEM forms GitHub and OpenSSL write, and the installation token used, cached and renewed
//! before it expires, on a clock the test moves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bugloop_github::{
    AppCredentials, Clock, Endpoint, GitHubClient, Installation, Policy, Repo, TokioSleeper,
};
/// A fresh 2048-bit key from OpenSSL: GitHub's form (PKCS#1) and OpenSSL's default (PKCS#8).
use bugloop_testkit::github::rsa_key as keys;
use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Debug)]
struct TestClock(AtomicU64);

impl Clock for TestClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn the_jwt_is_signed_by_the_apps_key_with_githubs_claims() {
    let (pkcs1, pkcs8) = keys();
    assert!(pkcs1.contains("BEGIN RSA PRIVATE KEY") && pkcs8.contains("BEGIN PRIVATE KEY"));
    for pem in [&pkcs1, &pkcs8] {
        let app = AppCredentials::from_pem(123_456, pem).unwrap();
        let jwt = app.jwt(1_800_000_000).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let public = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, app.public_key_der());
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        public
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims,
            json!({"iat": 1_800_000_000 - 60, "exp": 1_800_000_000 + 540, "iss": "123456"})
        );
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "RS256");
    }
    assert!(AppCredentials::from_pem(1, "not a key").is_err());
    let bad = pkcs1.replace("MII", "XXX");
    assert!(AppCredentials::from_pem(1, &bad).is_err());
}

#[tokio::test]
async fn the_installation_token_is_cached_and_renewed_before_it_expires() {
    let (pem, _) = keys();
    let server = MockServer::start().await;
    let start = 1_800_000_000_u64;
    let expiry = |at: u64| {
        jiff::Timestamp::from_second(i64::try_from(at).unwrap())
            .unwrap()
            .to_string()
    };
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"token": "ghs_first", "expires_at": expiry(start + 3600)})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/42/access_tokens"))
        .respond_with(
            ResponseTemplate::new(201)
                .set_body_json(json!({"token": "ghs_second", "expires_at": expiry(start + 7200)})),
        )
        .mount(&server)
        .await;
    for token in ["ghs_first", "ghs_second"] {
        Mock::given(method("GET"))
            .and(path("/repos/octo/hello/pulls/7"))
            .and(header("authorization", format!("Bearer {token}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "number": 7, "node_id": "PR_1", "title": "t", "state": "open",
                "user": {"login": "dev"},
                "head": {"ref": "feature", "sha": token, "repo": {"full_name": "octo/hello"}},
                "base": {"ref": "main", "sha": "base", "repo": {"full_name": "octo/hello"}}
            })))
            .mount(&server)
            .await;
    }
    let clock = Arc::new(TestClock(AtomicU64::new(start)));
    let installation = Installation {
        credentials: Arc::new(AppCredentials::from_pem(123_456, &pem).unwrap()),
        id: 42,
        clock: clock.clone(),
    };
    let client = GitHubClient::for_installation(
        Endpoint::from_values(Some(&server.uri()), None),
        installation,
        Policy {
            write_spacing: Duration::ZERO,
            ..Policy::default()
        },
        Arc::new(TokioSleeper),
    )
    .unwrap();
    let repo = Repo::parse("octo/hello").unwrap();
    let head = |pull: bugloop_github::PullRequest| pull.head.sha;
    assert_eq!(
        head(client.pull_request(&repo, 7).await.unwrap()),
        "ghs_first"
    );
    // 50 minutes later, ten remain: still the same token.
    clock.0.store(start + 3000, Ordering::SeqCst);
    assert_eq!(
        head(client.pull_request(&repo, 7).await.unwrap()),
        "ghs_first"
    );
    // Four minutes left: renewed before the request, which never sees an expired token.
    clock.0.store(start + 3360, Ordering::SeqCst);
    assert_eq!(
        head(client.pull_request(&repo, 7).await.unwrap()),
        "ghs_second"
    );
    let token_requests = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path().ends_with("/access_tokens"))
        .count();
    assert_eq!(token_requests, 2);

    // The App's own endpoint is asked with the App's JWT, never an installation's token.
    Mock::given(method("GET"))
        .and(path("/app"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"slug": "bugloop-app"})))
        .mount(&server)
        .await;
    assert_eq!(client.app_bot_login().await.unwrap(), "bugloop-app[bot]");
    let requests = server.received_requests().await.unwrap();
    let asked = requests.iter().rfind(|r| r.url.path() == "/app").unwrap();
    let bearer = asked.headers["authorization"].to_str().unwrap();
    assert!(bearer.starts_with("Bearer ey"), "a JWT: {bearer}");
    // A client is printed in errors and logs: never its token.
    let printed = format!("{client:?}");
    assert!(!printed.contains("ghs_"), "{printed}");
}

#[test]
fn a_token_client_prints_no_token() {
    let endpoint = Endpoint::from_values(Some("http://127.0.0.1:9"), None);
    let client = GitHubClient::new(endpoint, "ghp_s3cret".to_owned(), Policy::default()).unwrap();
    let printed = format!("{client:?}");
    assert!(printed.contains("Token(..)"), "{printed}");
    assert!(!printed.contains("s3cret"), "{printed}");
}
