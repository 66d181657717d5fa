//! Unit tests of the server's settings.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use secrecy::ExposeSecret;

use super::*;

fn options(file: &str, env: &[(&str, &str)]) -> Result<ServeOptions, ServerError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.yml");
    std::fs::write(&path, file).unwrap();
    let env: HashMap<String, String> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let lookup = move |name: &str| env.get(name).cloned();
    serve_options(
        &ServerSources {
            file: Some(&path),
            env: &lookup,
            default_data_dir: dir.path().join("data"),
        },
        None,
    )
}

/// Every variable the server reads is one configuration leaves alone: otherwise each job,
/// whose configuration is loaded from the same environment, would fail on it as an unknown
/// override (`report_token`).
#[test]
fn every_variable_the_server_reads_is_reserved_from_configuration() {
    let source = include_str!("../server_config.rs");
    let mut names: Vec<&str> = source
        .match_indices("\"BUGLOOP_")
        .map(|(at, _)| {
            let rest = &source[at + 1..];
            let end = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap();
            &rest[..end]
        })
        .filter(|name| name.len() > "BUGLOOP_".len())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 15, "{names:?}");
    for name in names {
        assert!(
            bugloop_config::is_reserved_variable(name),
            "{name} is read by the server but taken for a configuration override"
        );
    }
}

#[test]
fn the_operators_configuration_is_checked_at_start() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    let operator = operator_config(
        &ServerSources {
            file: None,
            env: &|_| None,
            default_data_dir: PathBuf::from("/nonexistent"),
        },
        &serde_yaml_ng::from_str(
            "config:\n  budgets:\n    max_cost_usd: 2\nrepository_may_set: [budgets.max_cost_usd]\n",
        )
        .unwrap(),
        "fix-me",
        "bot/",
    )
    .unwrap();
    let (operator, config) = operator;
    assert_eq!(config.labels.approve, "bugloop:approved");
    let text = &operator.config.as_ref().unwrap().text;
    assert!(text.contains("max_cost_usd: 2"), "{text}");
    assert!(text.contains("trigger: fix-me"), "{text}");
    assert!(text.contains("branch_prefix: bot/"), "{text}");
    assert_eq!(operator.repository_may_set, ["budgets.max_cost_usd"]);
    for (file, words) in [
        (
            "config:\n  budgets:\n    max_cost: 2\n",
            "unknown key `max_cost` in `budgets`",
        ),
        ("config: [1]\n", "is not a mapping of bugloop settings"),
        (
            "config:\n  labels:\n    trigger: other\n",
            "labels.trigger is \"other\" but autofix_label is \"bug:autofix\"",
        ),
        (
            "repository_may_set: [model.providers]\n",
            "no repository may set model",
        ),
        (
            "config:\n  sandbox:\n    system_paths: [/etc/bugloop]\n",
            "may only be a toolchain directory",
        ),
    ] {
        let error = options(file, &[secret]).unwrap_err().to_string();
        assert!(error.contains(words), "{file}: {error}");
    }
}

/// The options as `Debug` prints them (errors and logs do): `mark` where `secret` was.
fn assert_hidden(options: &ServeOptions, secret: &str, mark: &str) {
    let printed = format!("{options:?}");
    assert!(
        !printed.contains(secret) && printed.contains(mark),
        "{printed}"
    );
}

/// The clones (with their tokens) and the queue under a directory every sandboxed command is
/// shown (`/opt`) would let one repository's code read the others': refused at start.
#[test]
fn the_data_directory_and_the_queue_are_never_where_commands_see_them() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    for (file, env, what) in [
        (
            "data_dir: /opt/bugloop\n",
            vec![secret],
            "data directory /opt/bugloop",
        ),
        (
            "",
            vec![
                secret,
                ("BUGLOOP_STORE_URL", "sqlite:/usr/local/bugloop/q.db"),
            ],
            "queue /usr/local/bugloop/q.db",
        ),
    ] {
        let error = options(file, &env).unwrap_err().to_string();
        assert!(
            error.contains(what) && error.contains("elsewhere"),
            "{error}"
        );
    }
    assert!(options("data_dir: /var/lib/bugloop\n", &[secret]).is_ok());
}

#[test]
fn a_postgres_password_in_the_store_url_is_never_printed() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    for url in [
        "postgres://bugloop:hunter2@db/queue",
        "postgres://bugloop@db/queue?password=hunter2",
    ] {
        let options = options("", &[secret, ("BUGLOOP_STORE_URL", url)]).unwrap();
        assert_eq!(options.store, StoreLocation::Postgres(url.to_owned()));
        assert_hidden(&options, "hunter2", "***");
    }
}

#[test]
fn sentrys_secret_needs_its_projects_and_is_never_printed() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    let short = ("BUGLOOP_SENTRY_CLIENT_SECRET", "short");
    let error = options("", &[secret, short]).unwrap_err().to_string();
    assert!(error.contains("shorter than 16 characters"), "{error}");
    let client = ("BUGLOOP_SENTRY_CLIENT_SECRET", "3f1c2b7e9a0d4c8b-s3cret");
    let error = options("", &[secret, client]).unwrap_err().to_string();
    assert!(error.contains("maps no Sentry project"), "{error}");
    let projects = ("BUGLOOP_SENTRY_PROJECTS", "api=acme/widgets");
    let options = options("", &[secret, client, projects]).unwrap();
    let sentry = options.sentry.as_ref().unwrap();
    assert_eq!(sentry.client_secret.expose_secret(), client.1);
    assert_eq!(sentry.projects["api"], "acme/widgets");
    assert_hidden(&options, "s3cret", "REDACTED");
}

#[test]
fn a_report_token_files_only_in_the_repositories_it_is_scoped_to() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    let unscoped = options("report_token: t\n", &[secret])
        .unwrap_err()
        .to_string();
    assert!(unscoped.contains("names no repository"), "{unscoped}");
    let bad = options(
        "report_token: t\nreport_repositories: [\"acme\"]\n",
        &[secret],
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("\"acme\" is not owner/name or owner/*"),
        "{bad}"
    );
    let scoped = options(
        "report_token: t\n",
        &[
            secret,
            ("BUGLOOP_REPORT_REPOSITORIES", "acme/widgets, tools/*"),
        ],
    )
    .unwrap()
    .report_token
    .unwrap();
    assert!(scoped.allows("acme/widgets") && scoped.allows("Acme/Widgets"));
    assert!(scoped.allows("tools/anything"));
    assert!(!scoped.allows("acme/other") && !scoped.allows("someone-else/private"));
    assert!(
        !format!("{scoped:?}").contains("\"t\""),
        "the token is not shown"
    );
}

#[test]
fn the_file_gives_settings_and_the_environment_wins() {
    let options = options(
        "listen: 0.0.0.0:9000\nwebhook_secret: from-file\nstore_url: sqlite:/srv/q.db\n\
         bot_login: file[bot]\nlimits:\n  running: 8\n  per_installation: 2\n",
        &[("BUGLOOP_WEBHOOK_SECRET", "from-env")],
    )
    .unwrap();
    assert_eq!(options.listen, "0.0.0.0:9000".parse().unwrap());
    assert_eq!(options.secret.expose_secret(), b"from-env");
    assert_hidden(&options, "from-env", "REDACTED");
    assert_eq!(options.store, StoreLocation::Sqlite("/srv/q.db".into()));
    assert_eq!(options.trigger.bot_logins, ["file[bot]"]);
    assert_eq!(
        options.limits,
        Limits {
            running: Some(8),
            per_installation: Some(2)
        }
    );
    assert!(options.workers.is_none());
}

#[test]
fn bad_settings_name_what_is_wrong() {
    for (file, env, expected) in [
        ("workers: 2\nwokers: 3\n", vec![], "unknown field `wokers`"),
        ("listen: nowhere\n", vec![], "listen"),
        ("limits:\n  running: 0\n", vec![], "limit of 0"),
        ("app_id: 7\n", vec![], "not its private key"),
        (
            "",
            vec![("BUGLOOP_APP_ID", "seven")],
            "BUGLOOP_APP_ID is \"seven\"",
        ),
        (
            "app_id: 7\nprivate_key: missing.pem\n",
            vec![],
            "cannot read",
        ),
        (
            "",
            vec![("BUGLOOP_STORE_URL", "mysql://u:hunter2@db/x")],
            "expected sqlite:PATH or postgres://",
        ),
    ] {
        let error = options(file, &env).unwrap_err().to_string();
        assert!(error.contains(expected), "{file:?} {env:?}: {error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}

/// `BUGLOOP_APP_PRIVATE_KEY` may hold the PEM itself, as a platform's secret store gives it;
/// no error shows a key's text, whether it is a PEM that is refused or a value that is no path.
#[test]
fn the_apps_key_may_be_given_as_its_pem_and_is_never_echoed() {
    let secret = ("BUGLOOP_WEBHOOK_SECRET", "s");
    let id = ("BUGLOOP_APP_ID", "7");
    let (pem, _) = bugloop_testkit::github::rsa_key();
    let given = options("", &[secret, id, ("BUGLOOP_APP_PRIVATE_KEY", &pem)]).unwrap();
    assert!(given.workers.is_some(), "the App's workers run");
    let key_text =
        "-----BEGIN RSA PRIVATE KEY-----\nCANARYKEYTEXT\n-----END RSA PRIVATE KEY-----\n";
    let pasted = "MIIEpAIBAAKCAQEACANARYKEYTEXT".repeat(30);
    for (value, says) in [
        (key_text.to_owned(), "the PEM given"),
        (pasted, "the path given (not shown"),
    ] {
        let error = options("", &[secret, id, ("BUGLOOP_APP_PRIVATE_KEY", &value)])
            .unwrap_err()
            .to_string();
        assert!(error.contains(says), "{error}");
        assert!(!error.contains("CANARYKEYTEXT"), "{error}");
    }
}

/// A private key others may read is said at start (the mode of a world-readable PEM).
#[test]
fn a_key_others_may_read_is_found() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("app.pem");
    std::fs::write(&key, "pem").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(readable_by_others(&key), Some(0o644));
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(readable_by_others(&key), None);
}

/// A webhook secret one could guess is said at start.
#[test]
fn a_short_webhook_secret_is_weak() {
    let weak = crate::serve::weak_secret(b"a").unwrap();
    assert!(weak.contains("1 byte(s)"), "{weak}");
    assert_eq!(
        crate::serve::weak_secret(b"0123456789abcdef0123456789abcdef"),
        None
    );
}
