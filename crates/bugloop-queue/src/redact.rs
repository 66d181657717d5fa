//! A database URL as errors and logs show it: never its password.

/// The URL with any password replaced by `***`: the one after the user name
/// (`postgres://user:secret@host/db`) and a `password=` query parameter
/// (`postgres://host/db?password=secret`).
pub fn without_password(url: &str) -> String {
    let (url, query) = match url.split_once('?') {
        Some((url, query)) => (url, Some(query)),
        None => (url, None),
    };
    let mut shown = without_user_password(url);
    if let Some(query) = query {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    shown
}

fn without_user_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            if credentials.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                format!("{scheme}://{user}@{host}{tail}")
            }
        }
        None => url.to_owned(),
    }
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
    }
}
