//! What a run keeps for the next one on the same change, should it be killed between two steps
//! that cannot be one (a branch moved, then the conversation told): one JSON file per kind of
//! run and change, written whole or not at all.
//!
//! It lives in bugloop's own directory in the repository's git directory (`runs_dir`), which
//! neither a change, nor its conversation, nor a fetch can write: what is read back from here is
//! bugloop's own word, as a commit message or a ref fetched from elsewhere would not be.

use std::path::{Path, PathBuf};

use bugloop_forge::ChangeKey;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The most bytes of a kept record read back.
const MAX_BYTES: u64 = 4 << 20;

/// One file per kind and change, named by a digest of the change's key: `feature/x` and
/// `feature_x` differ.
fn path_of(runs_dir: &Path, kind: &str, change: &ChangeKey) -> PathBuf {
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(change.0.as_bytes()));
    runs_dir.join(format!("{kind}-{}.json", &digest[..32]))
}

/// Keeps `value` for `change` (a temporary file renamed over the old one).
pub(crate) fn keep<T: Serialize>(
    runs_dir: &Path,
    kind: &str,
    change: &ChangeKey,
    value: &T,
) -> Result<(), String> {
    let path = path_of(runs_dir, kind, change);
    let text = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(runs_dir).map_err(|e| format!("{}: {e}", runs_dir.display()))?;
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, text).map_err(|e| format!("{}: {e}", partial.display()))?;
    std::fs::rename(&partial, &path).map_err(|e| format!("{}: {e}", path.display()))
}

/// What was kept for `change`, if anything readable was.
pub(crate) fn read<T: DeserializeOwned>(
    runs_dir: &Path,
    kind: &str,
    change: &ChangeKey,
) -> Option<T> {
    use std::io::Read;
    let file = std::fs::File::open(path_of(runs_dir, kind, change)).ok()?;
    let mut text = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Forgets what was kept for `change`: the run is over.
pub(crate) fn forget(runs_dir: &Path, kind: &str, change: &ChangeKey) {
    let _ = std::fs::remove_file(path_of(runs_dir, kind, change));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn kept_by_kind_and_change_and_torn_files_are_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join("runs");
        let change = ChangeKey("local:feature/x".to_owned());
        let other = ChangeKey("local:feature_x".to_owned());
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
        keep(&runs, "fix", &change, &7u32).unwrap();
        assert_eq!(read::<u32>(&runs, "fix", &change), Some(7));
        assert_eq!(read::<u32>(&runs, "converge", &change), None);
        assert_eq!(read::<u32>(&runs, "fix", &other), None);
        std::fs::write(path_of(&runs, "fix", &change), b"[1,").unwrap();
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
        keep(&runs, "fix", &change, &8u32).unwrap();
        forget(&runs, "fix", &change);
        assert_eq!(read::<u32>(&runs, "fix", &change), None);
    }
}
