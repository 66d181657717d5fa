//! Authenticating as a GitHub App: a short-lived RS256 JWT signed with the App's private key
//! (PKCS#1 `RSA PRIVATE KEY` as GitHub issues them, or PKCS#8), exchanged for an installation
//! token that is cached and renewed while more than five minutes remain, so a long job never
//! fails because its token expired.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};

/// An installation token is renewed when fewer than this many seconds remain.
pub const RENEW_BEFORE_SECONDS: u64 = 5 * 60;

/// The time, in seconds since the Unix epoch (tests set it).
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> u64;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }
}

/// A key that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AppKeyError {
    #[error("the App's private key is not a PEM RSA key (`RSA PRIVATE KEY` or `PRIVATE KEY`)")]
    NotPem,
    #[error("the App's private key was refused: {0}")]
    Rejected(String),
    #[error("signing the App's token failed")]
    Signing,
}

/// An App's id and private key.
pub struct AppCredentials {
    app_id: u64,
    key: RsaKeyPair,
}

impl std::fmt::Debug for AppCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppCredentials")
            .field("app_id", &self.app_id)
            .finish_non_exhaustive()
    }
}

impl AppCredentials {
    pub fn from_pem(app_id: u64, pem: &str) -> Result<AppCredentials, AppKeyError> {
        let (label, der) = pem_body(pem).ok_or(AppKeyError::NotPem)?;
        let key = match label.as_str() {
            "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der),
            "PRIVATE KEY" => RsaKeyPair::from_pkcs8(&der),
            _ => return Err(AppKeyError::NotPem),
        }
        .map_err(|e| AppKeyError::Rejected(e.to_string()))?;
        Ok(AppCredentials { app_id, key })
    }

    pub fn app_id(&self) -> u64 {
        self.app_id
    }

    /// The App's JWT at `now`: issued a minute in the past (clock drift), valid nine minutes
    /// (GitHub allows ten).
    pub fn jwt(&self, now: u64) -> Result<String, AppKeyError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = URL_SAFE_NO_PAD.encode(
            serde_json::json!({
                "iat": now.saturating_sub(60),
                "exp": now + 9 * 60,
                "iss": self.app_id.to_string(),
            })
            .to_string(),
        );
        let signed = format!("{header}.{claims}");
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| AppKeyError::Signing)?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }

    /// The public key (DER `RSAPublicKey`), to check signatures.
    pub fn public_key_der(&self) -> Vec<u8> {
        self.key.public().as_ref().to_vec()
    }
}

/// The label and decoded body of a PEM block.
fn pem_body(pem: &str) -> Option<(String, Vec<u8>)> {
    let begin = pem.find("-----BEGIN ")?;
    let rest = &pem[begin + "-----BEGIN ".len()..];
    let (label, rest) = rest.split_once("-----")?;
    let end = rest.find(&format!("-----END {label}-----"))?;
    let body: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
    Some((label.to_owned(), STANDARD.decode(body).ok()?))
}

/// An App installation, whose tokens the client uses.
#[derive(Debug, Clone)]
pub struct Installation {
    pub credentials: Arc<AppCredentials>,
    pub id: u64,
    pub clock: Arc<dyn Clock>,
}
