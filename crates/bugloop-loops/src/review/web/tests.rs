//! Unit tests of the reviewer's web access.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::*;

fn access(allow: &[&str], allow_private: &[&str], search_url: Option<String>) -> Arc<WebAccess> {
    let mut review = ReviewConfig {
        enable_web: true,
        ..ReviewConfig::default()
    };
    review.web.allow = allow.iter().map(|h| (*h).to_owned()).collect();
    review.web.allow_private = allow_private.iter().map(|h| (*h).to_owned()).collect();
    review.web.search_url = search_url;
    review.web.max_kib = 1;
    review.web.timeout_seconds = 5;
    WebAccess::new(&review).unwrap().unwrap()
}

async fn server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/doc"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "<html><head><style>p{}</style><script>steal()</script></head><body><h1>Vec::get</h1><p>Returns &lt;None&gt; when out of bounds.</p></body></html>",
            "text/html; charset=utf-8",
        ))
        .mount(&server)
        .await;
    server
}

/// Fetching `url` is refused with a message that contains `says`.
async fn assert_refused(web: &WebAccess, url: &str, says: &str) {
    let refused = web.fetch(url).await.unwrap_err();
    assert!(refused.contains(says), "{url}: {refused}");
}

fn requested(server: &[wiremock::Request], wanted: &str) -> bool {
    server.iter().any(|r| r.url.path() == wanted)
}

#[test]
fn web_access_is_off_by_default() {
    assert!(WebAccess::new(&ReviewConfig::default()).unwrap().is_none());
}

#[tokio::test]
async fn an_allowed_host_is_read_as_text() {
    let server = server().await;
    let web = access(&["127.0.0.1"], &["127.0.0.1"], None);
    let page = web.fetch(&format!("{}/doc", server.uri())).await.unwrap();
    assert_eq!(
        page.text,
        "\nVec::get\n\nReturns <None> when out of bounds.\n"
            .trim_start()
            .to_owned()
    );
    assert!(!page.truncated);
}

#[tokio::test]
async fn another_host_is_refused_without_a_request() {
    let server = server().await;
    let web = access(&["docs.rs"], &["127.0.0.1"], None);
    assert_refused(
        &web,
        &format!("{}/doc", server.uri()),
        "127.0.0.1 is not on the allow-list (review.web.allow: docs.rs)",
    )
    .await;
    assert_refused(&web, "file:///etc/passwd", "only http and https").await;
    assert_refused(&web, "https://user:secret@docs.rs/", "credentials").await;
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn private_addresses_are_refused_unless_allowed() {
    let server = server().await;
    let port = server.address().port();
    // An address literal is checked before any connection, and a name after it is resolved.
    for (host, says) in [
        ("127.0.0.1", "private, loopback or link-local"),
        ("localhost", "localhost resolves to"),
    ] {
        let web = access(&[host], &[], None);
        assert_refused(&web, &format!("http://{host}:{port}/doc"), says).await;
    }
    assert!(server.received_requests().await.unwrap().is_empty());
    // Allowed explicitly, the name is fetched.
    let web = access(&["localhost"], &["localhost"], None);
    assert!(
        web.fetch(&format!("http://localhost:{port}/doc"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_redirect_to_a_refused_host_is_refused() {
    let server = server().await;
    let port = server.address().port();
    Mock::given(path("/moved"))
        .respond_with(
            ResponseTemplate::new(302)
                .insert_header("location", format!("http://localhost:{port}/secret")),
        )
        .mount(&server)
        .await;
    Mock::given(path("/here"))
        .respond_with(ResponseTemplate::new(301).insert_header("location", "/doc"))
        .mount(&server)
        .await;
    // localhost may resolve privately, but it is not on the allow-list.
    let web = access(&["127.0.0.1"], &["127.0.0.1", "localhost"], None);
    assert_refused(
        &web,
        &format!("{}/moved", server.uri()),
        "redirect refused: localhost is not on the allow-list",
    )
    .await;
    let seen = server.received_requests().await.unwrap();
    assert!(requested(&seen, "/moved") && !requested(&seen, "/secret"));
    // A redirect within the allowed host is followed.
    let page = web.fetch(&format!("{}/here", server.uri())).await.unwrap();
    assert!(
        page.url.ends_with("/doc") && page.text.contains("Vec::get"),
        "{page:?}"
    );
}

#[tokio::test]
async fn responses_are_cut_at_the_size_limit_and_must_be_text() {
    let server = MockServer::start().await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("x".repeat(64 * 1024), "text/plain"))
        .mount(&server)
        .await;
    Mock::given(path("/image"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![0u8; 16], "image/png"))
        .mount(&server)
        .await;
    Mock::given(path("/gone"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let web = access(&["127.0.0.1"], &["127.0.0.1"], None);
    let page = web.fetch(&format!("{}/big", server.uri())).await.unwrap();
    assert!(page.truncated);
    assert_eq!(page.text.len(), 1024);
    assert_refused(
        &web,
        &format!("{}/image", server.uri()),
        "image/png, not text",
    )
    .await;
    assert_refused(&web, &format!("{}/gone", server.uri()), "HTTP 404").await;
}

#[tokio::test]
async fn search_goes_to_the_configured_endpoint_only() {
    let server = MockServer::start().await;
    Mock::given(path("/search"))
        .and(query_param("q", "serde flatten & deny_unknown_fields"))
        .and(query_param("format", "json"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            r#"{"results": [{"title": "Container attributes", "url": "https://serde.rs/container-attrs.html", "content": "deny_unknown_fields\n is not supported with flatten"}]}"#,
            "application/json",
        ))
        .mount(&server)
        .await;
    let search_url = format!("{}/search?format=json&q={{query}}", server.uri());
    // The endpoint's host is contacted for searches, not for fetches.
    let web = access(&["docs.rs"], &["127.0.0.1"], Some(search_url));
    assert!(web.can_search());
    let results = web
        .search("serde flatten & deny_unknown_fields")
        .await
        .unwrap();
    assert_eq!(
        results,
        "- [Container attributes](https://serde.rs/container-attrs.html)\n  deny_unknown_fields is not supported with flatten\n"
    );
    assert_refused(
        &web,
        &format!("{}/search", server.uri()),
        "not on the allow-list",
    )
    .await;
    assert!(!access(&["docs.rs"], &[], None).can_search());
}

#[test]
fn public_addresses_and_host_patterns() {
    for private in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00::1",
        "fe80::1",
        "::ffff:10.0.0.1",
        "64:ff9b::a00:1",
    ] {
        assert!(!is_public(private.parse().unwrap()), "{private}");
    }
    for public in ["8.8.8.8", "151.101.1.1", "2a04:4e42::1", "::ffff:8.8.8.8"] {
        assert!(is_public(public.parse().unwrap()), "{public}");
    }
    assert!(matches("*.python.org", "docs.python.org"));
    assert!(!matches("*.python.org", "python.org"));
    assert!(!matches("*.python.org", "evilpython.org"));
    assert!(matches("Docs.RS", "docs.rs"));
    assert!(!matches("docs.rs", "docs.rs.evil.example"));
}

#[test]
fn html_becomes_readable_text() {
    assert_eq!(
        html_to_text("<p>a &amp; b</p><SCRIPT>x()</SCRIPT><ul><li>one</li><li>two</li></ul>"),
        "a & b\n\none\n\ntwo\n"
    );
    assert_eq!(percent_encode("a b&c/é"), "a%20b%26c%2F%C3%A9");
}
