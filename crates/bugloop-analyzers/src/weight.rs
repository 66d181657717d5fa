//! How much an analyzer's hit weighs: the classes of `docs/analyzers.md` and their scores, and
//! where a security rule weighs less (a test's files).

/// How a hit weighs, by the rule's class (`docs/analyzers.md`): the score it is published at
/// when no model triages it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weight {
    /// Code that runs what an attacker sends (injection, `eval`, a shell), or code that cannot
    /// run at all (an undefined name, a compile error): 8.
    Critical,
    /// A bug the tool is sure of: 7.
    Error,
    /// A likely bug: 6.
    Warning,
    /// Worth a look, below the default threshold: 4.
    Minor,
}

impl Weight {
    pub(crate) fn score(self) -> u8 {
        match self {
            Weight::Critical => 8,
            Weight::Error => 7,
            Weight::Warning => 6,
            Weight::Minor => 4,
        }
    }
}

/// A test file (under `tests/`, `test/`, `testdata/`, `fixtures/`, `__tests__/`; `test_*.py`,
/// `*_test.py`, `conftest.py`), where the security rules flag what tests do on purpose
/// (pickling their own objects, fixed passwords, a throwaway certificate's key).
pub(crate) fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.split('/').any(|part| {
        matches!(
            part,
            "tests" | "test" | "testdata" | "fixtures" | "__tests__"
        )
    }) || name.starts_with("test_")
        || name.ends_with("_test.py")
        || name == "conftest.py"
}
