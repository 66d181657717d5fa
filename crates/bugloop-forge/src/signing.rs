//! Signed state. On GitHub, bugloop's login in an Action (`github-actions[bot]`) is shared by
//! every workflow of the repository, so "written by the bot's login" does not prove "written by
//! bugloop": another workflow could post a look-alike marker and close a finding. With a key,
//! [`SigningForge`] signs every body bugloop writes (an HMAC-SHA256 of the whole body, which holds
//! the finding's id, its status and its text, in a last line) and, when reading, keeps a comment
//! as bugloop's only when its signature verifies; an unsigned or badly signed one is treated as
//! written by someone else, so its markers are ignored and counted like any other look-alike.

use std::sync::Arc;

use async_trait::async_trait;
use bugloop_domain::markdown::cap_body;
use bugloop_domain::thread::Comment;
use ring::hmac;

use crate::{ChangeKey, Forge, ForgeError, ForgeLayer, Write, Written};

/// Starts the signature line bugloop appends to what it writes.
const SIGNATURE_PREFIX: &str = "<!-- bugloop:sig v1 ";
/// The signature line's length: a newline, the prefix, 64 hex digits and ` -->`.
const SIGNATURE_LINE_CHARS: usize = 1 + SIGNATURE_PREFIX.len() + 64 + 4;

/// The key bugloop signs its state with (from the environment, never from the repository).
#[derive(Clone)]
pub struct StateKey(hmac::Key);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// A key too short to sign with.
#[derive(Debug, thiserror::Error)]
#[error("the state signing key must be at least {MINIMUM_KEY_BYTES} bytes long (it has {0})")]
pub struct WeakKey(usize);

const MINIMUM_KEY_BYTES: usize = 32;

impl StateKey {
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<StateKey, WeakKey> {
        let bytes = bytes.into();
        if bytes.len() < MINIMUM_KEY_BYTES {
            return Err(WeakKey(bytes.len()));
        }
        Ok(StateKey(hmac::Key::new(hmac::HMAC_SHA256, &bytes)))
    }

    /// What is signed: where the comment is (the change, and the thread of a reply) and its
    /// body, so a signed comment copied elsewhere (a status reply into another finding's
    /// thread, or another pull request) does not verify there.
    fn message(scope: &str, body: &str) -> Vec<u8> {
        format!("{}\n{scope}\n{body}", scope.len()).into_bytes()
    }

    /// `body` with its signature for `scope` appended as a last line.
    pub fn sign(&self, scope: &str, body: &str) -> String {
        let tag = hex::encode(hmac::sign(&self.0, &Self::message(scope, body)).as_ref());
        format!("{body}\n{SIGNATURE_PREFIX}{tag} -->")
    }

    /// The body without its signature line when the signature verifies for `scope` (in
    /// constant time); `None` when it is missing or wrong.
    pub fn verify<'a>(&self, scope: &str, signed: &'a str) -> Option<&'a str> {
        let (body, line) = signed.rsplit_once('\n')?;
        let tag = line.strip_prefix(SIGNATURE_PREFIX)?.strip_suffix(" -->")?;
        let tag = hex::decode(tag).ok()?;
        hmac::verify(&self.0, &Self::message(scope, body), &tag)
            .ok()
            .map(|()| body)
    }
}

/// A forge whose bot writes are signed and whose bot comments count as bugloop's only when
/// their signature verifies (the signature line is taken off what the loops read).
#[derive(Debug)]
pub struct SigningForge {
    inner: Arc<dyn Forge>,
    key: StateKey,
}

impl SigningForge {
    pub fn new(inner: Arc<dyn Forge>, key: StateKey) -> Self {
        SigningForge { inner, key }
    }

    /// The body signed for `scope`, cut first so that with its signature it fits the forge.
    fn signed(&self, scope: &str, body: &str) -> String {
        let body = match self.inner.max_body_chars() {
            Some(max) => cap_body(body, max.saturating_sub(SIGNATURE_LINE_CHARS)),
            None => std::borrow::Cow::Borrowed(body),
        };
        self.key.sign(scope, &body)
    }

    fn checked(&self, change: &ChangeKey, mut comment: Comment) -> Comment {
        if comment.by_bugloop {
            match self.key.verify(&scope_of(change, &comment), &comment.body) {
                Some(body) => comment.body = body.to_owned(),
                // Written under the bot's login but not by bugloop (or altered): someone else's.
                None => comment.by_bugloop = false,
            }
        }
        comment
    }
}

#[async_trait]
impl ForgeLayer for SigningForge {
    fn inner(&self) -> &dyn Forge {
        &*self.inner
    }

    fn read(&self, change: &ChangeKey, comment: Comment) -> Comment {
        self.checked(change, comment)
    }

    /// Comments, edits and replies are signed for where they are (a reply for its thread), and
    /// what the forge gives back is checked like any comment read; the rest carries no body.
    async fn write(&self, write: Write<'_>) -> Result<Written, ForgeError> {
        let (scope, body) = match write {
            Write::AddComment { change, body, .. } => (change.0.clone(), body),
            Write::UpdateComment {
                change,
                comment,
                body,
            } => (scope_of(change, comment), body),
            Write::Reply { change, to, body } => {
                // The reply will be in `to`'s thread.
                let thread = to
                    .thread_id
                    .clone()
                    .unwrap_or_else(|| to.in_reply_to.clone().unwrap_or_else(|| to.id.clone()));
                (format!("{}\n{thread}", change.0), body)
            }
            Write::DeleteComment { .. }
            | Write::SetThreadResolved { .. }
            | Write::SetDescription { .. } => return self.inner.write(write).await,
        };
        let signed = self.signed(&scope, body);
        Ok(match self.inner.write(write.with_body(&signed)).await? {
            Written::Comment(comment) => Written::Comment(self.checked(write.change(), comment)),
            other => other,
        })
    }

    /// bugloop's comments with their signature line taken off (their changes are not known
    /// here, so it is not checked: what is counted from them is a rate, which another writer
    /// under the bot's login could only lower).
    async fn own_comments_since(&self, since: jiff::Timestamp) -> Result<Vec<Comment>, ForgeError> {
        Ok(self
            .inner
            .own_comments_since(since)
            .await?
            .into_iter()
            .map(|mut comment| {
                if let Some((body, line)) = comment.body.rsplit_once('\n')
                    && line.starts_with(SIGNATURE_PREFIX)
                {
                    comment.body = body.to_owned();
                }
                comment
            })
            .collect())
    }
}

/// Where a comment is, as its signature covers it: the change, and for a reply its thread (the
/// forge's thread id, else the comment it answers).
fn scope_of(change: &ChangeKey, comment: &Comment) -> String {
    match &comment.in_reply_to {
        None => change.0.clone(),
        Some(parent) => format!(
            "{}\n{}",
            change.0,
            comment.thread_id.as_deref().unwrap_or(parent)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StateKey {
        StateKey::new(b"0123456789abcdef0123456789abcdef".to_vec()).unwrap()
    }

    #[test]
    fn a_signed_body_verifies_and_any_change_breaks_it() {
        let body = "### Off by one\n<!-- bugloop finding_id:\"a\" resolved:false -->";
        let scope = "branch:feature\n17";
        let signed = key().sign(scope, body);
        assert_eq!(key().verify(scope, &signed), Some(body));
        // The status flipped by someone else, the text edited, or no signature: not bugloop's.
        let flipped = signed.replace("resolved:false", "resolved:true");
        assert_eq!(key().verify(scope, &flipped), None);
        assert_eq!(key().verify(scope, &signed.replace("Off", "Of")), None);
        assert_eq!(key().verify(scope, body), None);
        let other = StateKey::new(vec![7; 32]).unwrap();
        assert_eq!(other.verify(scope, &signed), None);
        // Copied into another thread, or another change: not valid there.
        assert_eq!(key().verify("branch:feature\n18", &signed), None);
        assert_eq!(key().verify("branch:other\n17", &signed), None);
        assert!(StateKey::new(b"short".to_vec()).is_err());
    }
}
