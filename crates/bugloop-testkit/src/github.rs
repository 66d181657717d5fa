//! What tests of GitHub's side need that GitHub itself publishes or that OpenSSL makes: the
//! `@octokit` packages (installed by `scripts/setup --test`) such as the webhook examples of
//! `@octokit/webhooks-examples` and the REST description of `@octokit/openapi`, and a fresh RSA
//! key in the forms an App's credentials come in.

use std::path::PathBuf;

use serde_json::Value;

/// The JSON file at `path` in the `@octokit` packages `scripts/setup --test` installs (`what`
/// names it in the message when it is not there).
pub fn octokit_asset(path: &str, what: &str) -> Value {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap();
    let file = cache
        .join("bugloop/test-assets/node_modules/@octokit")
        .join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; `scripts/setup --test` installs {what}",
            file.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// Every example GitHub publishes of `event`'s deliveries.
pub fn webhook_examples(event: &str) -> Vec<Value> {
    let all: Vec<Value> = serde_json::from_value(octokit_asset(
        "webhooks-examples/api.github.com/index.json",
        "GitHub's webhook examples",
    ))
    .unwrap_or_else(|error| panic!("GitHub's webhook examples are not a list: {error}"));
    all.into_iter()
        .find(|e| e["name"] == event)
        .and_then(|e| e["examples"].as_array().cloned())
        .unwrap_or_default()
}

/// A fresh 2048-bit RSA key made by OpenSSL (installed by the test command): in GitHub's form
/// (PKCS#1 PEM, as an App's private key is downloaded) and in OpenSSL's default (PKCS#8).
pub fn rsa_key() -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let pkcs8 = dir.path().join("key.pem");
    let made = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&pkcs8)
        .output()
        .expect("openssl is needed to make a test key (`scripts/setup --test` installs it)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let pkcs1 = crate::run_ok(
        std::process::Command::new("openssl")
            .args(["rsa", "-traditional", "-in"])
            .arg(&pkcs8),
    );
    (
        String::from_utf8(pkcs1.stdout).unwrap(),
        std::fs::read_to_string(&pkcs8).unwrap(),
    )
}
