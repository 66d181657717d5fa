//! A database URL as errors and logs show it: never its password.

/// The URL with any password replaced by `***`: the one after the user name
/// (`postgres://user:secret@host/db`) and a `password=` query parameter
/// (`postgres://host/db?password=secret`). A URL that cannot be read but names a user is shown
/// by its scheme only: where its password ends cannot be known.
pub fn without_password(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return match url.split_once("://") {
            Some((scheme, rest)) if rest.contains('@') => {
                format!("{scheme}://… (not shown: it could not be read and may hold a password)")
            }
            _ => url.to_owned(),
        };
    };
    if parsed.password().is_some() {
        // Only a URL that cannot have a password refuses one, and this one has one.
        let _ = parsed.set_password(Some("***"));
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if key.eq_ignore_ascii_case("password") {
                    "***".into()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    use super::without_password;

    #[test]
    fn a_password_is_never_shown_where_a_url_can_hold_one() {
        for (url, shown) in [
            (
                "postgres://bugloop:s3cret@db:5432/q",
                "postgres://bugloop:***@db:5432/q",
            ),
            (
                "postgresql://bugloop:s3c:ret@db/q",
                "postgresql://bugloop:***@db/q",
            ),
            ("postgres://a:b@c@db/q", "postgres://a:***@db/q"),
            ("postgres://bugloop@db/q", "postgres://bugloop@db/q"),
            (
                "postgres://db/q?sslmode=require&password=s3cret",
                "postgres://db/q?sslmode=require&password=***",
            ),
            (
                "postgres://db/q?PASSWORD=s3cret",
                "postgres://db/q?PASSWORD=***",
            ),
            ("sqlite:/srv/queue.db", "sqlite:/srv/queue.db"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
        }
        // A password no URL parser reads whole (a `/`, a `?`, a space, a `#` in it): none of
        // it shown.
        for url in [
            "postgres://bug:s3c/ret@db/q",
            "postgres://bug:s3c?ret@db/q",
            "postgres://bug:s3c ret@db/q",
            "postgres://bug:s3c#ret@db/q",
        ] {
            let shown = without_password(url);
            assert!(
                !shown.contains("s3c") && !shown.contains("ret@"),
                "{url}: {shown}"
            );
        }
    }
}
