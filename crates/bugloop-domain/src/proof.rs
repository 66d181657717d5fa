//! A proven finding's test as later work uses it: `fix`, `@bugloop fix` and converge put it in
//! the tree and the fix must make it pass. A finding's comment keeps it in its state block
//! (bugloop's own comment: nobody else's block is read), so a fix in a later job, on another
//! machine, finds the same test.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::rmcoc::RmcocBlock;

/// The key of the state block that holds a proven finding's test.
pub const PROOF_KEY: &str = "proof";
/// The largest test kept (and placed again): a proof's test is small.
pub const MAX_PROOF_TEST_BYTES: usize = 8_000;

/// The test that proved a finding: where it goes in the repository and its whole source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofTest {
    pub path: String,
    pub source: String,
}

impl ProofTest {
    /// A test bugloop may place: a relative path of plain names, not under `.git`, whose file
    /// name does not start as an option would, and a source within the size kept.
    pub fn checked(path: &str, source: &str) -> Result<ProofTest, String> {
        let relative = Path::new(path);
        let plain = !path.is_empty()
            && relative.components().all(|c| match c {
                Component::Normal(name) => name != ".git",
                _ => false,
            });
        if !plain {
            return Err(format!(
                "{path:?} is not a plain path inside the repository"
            ));
        }
        let name = relative
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('-') {
            return Err(format!("{name:?} starts with `-`, as an option would"));
        }
        if source.len() > MAX_PROOF_TEST_BYTES {
            return Err(format!(
                "the test is {} bytes, more than the {MAX_PROOF_TEST_BYTES} kept",
                source.len()
            ));
        }
        Ok(ProofTest {
            path: path.to_owned(),
            source: source.to_owned(),
        })
    }

    /// The test a finding's state block keeps, when it keeps a usable one.
    pub fn from_block(block: &RmcocBlock) -> Option<ProofTest> {
        let kept: ProofTest = serde_json::from_value(block.extra.get(PROOF_KEY)?.clone()).ok()?;
        ProofTest::checked(&kept.path, &kept.source).ok()
    }

    /// The value the state block keeps.
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::json!({"path": self.path, "source": self.source})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::Score;

    #[test]
    fn only_plain_paths_inside_the_repository_are_kept() {
        for bad in [
            "/etc/passwd",
            "../x.py",
            "a/../../x.py",
            ".git/hooks/pre-commit",
            "tests/-k.py",
            "",
            "./x.py",
        ] {
            assert!(ProofTest::checked(bad, "x").is_err(), "{bad}");
        }
        assert!(ProofTest::checked("tests/test_a.py", "x").is_ok());
        assert!(ProofTest::checked("t.py", &"x".repeat(MAX_PROOF_TEST_BYTES + 1)).is_err());
    }

    #[test]
    fn a_block_gives_back_the_test_it_keeps() {
        let test = ProofTest::checked("tests/test_a.py", "assert False\n").unwrap();
        let mut block = RmcocBlock::new("f", "a", Score::saturating(8));
        assert_eq!(ProofTest::from_block(&block), None);
        block.extra.insert(PROOF_KEY.to_owned(), test.to_value());
        assert_eq!(ProofTest::from_block(&block), Some(test));
        block.extra.insert(
            PROOF_KEY.to_owned(),
            serde_json::json!({"path": "../x.py", "source": ""}),
        );
        assert_eq!(ProofTest::from_block(&block), None);
    }
}
