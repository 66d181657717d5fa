//! Acting as a GitHub App: its JWT (RS256, `iss` the App's id, at most ten minutes long, signed
//! by the App's key) is taken only by `GET /app` and
//! `POST /app/installations/{id}/access_tokens`, which answers an installation token writing as
//! `<slug>[bot]` for an hour.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::state::{State, timestamp};

fn part(text: &str) -> Option<Value> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).ok()?).ok()
}

/// The App whose key signed `jwt`, when it is well formed and current at `now` (seconds).
pub(crate) fn app_of_jwt(state: &State, jwt: &str, now: u64) -> Option<u64> {
    let (signed, signature) = jwt.rsplit_once('.')?;
    let (header, claims) = signed.split_once('.')?;
    if part(header)?["alg"] != "RS256" {
        return None;
    }
    let claims = part(claims)?;
    let issuer = match &claims["iss"] {
        Value::String(text) => text.parse::<u64>().ok()?,
        other => other.as_u64()?,
    };
    let (issued, expires) = (claims["iat"].as_u64()?, claims["exp"].as_u64()?);
    // GitHub: not expired, at most ten minutes long, not issued in the future (a minute of skew).
    if expires <= now || expires.saturating_sub(issued) > 600 || issued > now + 60 {
        return None;
    }
    let app = state.apps.iter().find(|a| a.id == issuer)?;
    let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        &app.public_key,
    )
    .verify(signed.as_bytes(), &signature)
    .ok()?;
    Some(app.id)
}

/// `GET /app`.
pub(crate) fn describe(state: &State, app: u64) -> Option<Value> {
    let app = state.apps.iter().find(|a| a.id == app)?;
    Some(json!({"id": app.id, "slug": app.slug, "name": app.slug,
                "node_id": format!("A_kwDOsim{}", app.id), "owner": state.account(&state.owner)}))
}

/// `POST /app/installations/{id}/access_tokens`: a new token for `<slug>[bot]`.
pub(crate) fn installation_token(
    state: &mut State,
    app: u64,
    installation: u64,
    now: u64,
) -> Option<Value> {
    let slug = state
        .apps
        .iter()
        .find(|a| a.id == app && a.installations.contains(&installation))?
        .slug
        .clone();
    state.issued_tokens += 1;
    let token = format!("ghs_sim{app}x{installation}x{}", state.issued_tokens);
    state.tokens.insert(token.clone(), format!("{slug}[bot]"));
    let expires = now + state.token_lifetime;
    state.token_expiry.insert(token.clone(), expires);
    Some(json!({
        "token": token,
        "expires_at": timestamp(expires),
        "permissions": {"issues": "write", "pull_requests": "write", "contents": "write"},
        "repository_selection": "selected",
    }))
}
