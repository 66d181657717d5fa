//! How many tests passed, failed and were skipped, read from what a test runner printed: the
//! summary lines of pytest, unittest, cargo test, go test (`-v`), jest, vitest and Maven's
//! Surefire, and JUnit XML reports. A solution's test results say these counts, not only
//! whether each command passed. Pure: a runner whose output is not recognised gives `None`.

use serde::{Deserialize, Serialize};

/// Counts of one command's tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl TestCounts {
    /// "12 passed, 1 failed, 2 skipped" (zero counts other than passed left out).
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} passed", self.passed)];
        if self.failed > 0 {
            parts.push(format!("{} failed", self.failed));
        }
        if self.skipped > 0 {
            parts.push(format!("{} skipped", self.skipped));
        }
        parts.join(", ")
    }

    fn add(&mut self, other: TestCounts) {
        self.passed = self.passed.saturating_add(other.passed);
        self.failed = self.failed.saturating_add(other.failed);
        self.skipped = self.skipped.saturating_add(other.skipped);
    }
}

/// The counts a runner's `output` reports, trying each runner's summary in turn.
pub fn from_output(output: &str) -> Option<TestCounts> {
    cargo(output)
        .or_else(|| pytest(output))
        .or_else(|| unittest(output))
        .or_else(|| jest_or_vitest(output))
        .or_else(|| surefire(output))
        .or_else(|| go(output))
}

/// `<number> <word>` pairs in `text`, as (word, number).
fn counted_words(text: &str) -> Vec<(String, u64)> {
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '|' | '(' | ')' | '='))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter_map(|pair| {
            let number = pair[0].parse::<u64>().ok()?;
            let word = pair[1].trim_end_matches(['.', ':']).to_ascii_lowercase();
            Some((word, number))
        })
        .collect()
}

/// `test result: ok. 10 passed; 0 failed; 1 ignored; ...`, summed over the test binaries.
fn cargo(output: &str) -> Option<TestCounts> {
    let mut total: Option<TestCounts> = None;
    for line in output.lines() {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            continue;
        };
        let mut counts = TestCounts::default();
        for (word, n) in counted_words(rest) {
            match word.as_str() {
                "passed" => counts.passed = counts.passed.saturating_add(n),
                "failed" => counts.failed = counts.failed.saturating_add(n),
                "ignored" => counts.skipped = counts.skipped.saturating_add(n),
                _ => {}
            }
        }
        total.get_or_insert_default().add(counts);
    }
    total
}

/// pytest's last line: `==== 3 passed, 1 failed, 2 skipped in 0.12s ====` (or without the
/// rules, with `-q`).
fn pytest(output: &str) -> Option<TestCounts> {
    let line = output.lines().rev().map(str::trim).find(|line| {
        let line = line.trim_matches('=').trim();
        let timed = line.rsplit_once(" in ").is_some_and(|(_, time)| {
            time.ends_with('s') && time.starts_with(|c: char| c.is_ascii_digit())
        });
        timed
            && counted_words(line)
                .iter()
                .any(|(w, _)| matches!(w.as_str(), "passed" | "failed" | "error" | "errors"))
    })?;
    let mut counts = TestCounts::default();
    for (word, n) in counted_words(line) {
        match word.as_str() {
            "passed" | "xpassed" => counts.passed = counts.passed.saturating_add(n),
            "failed" | "error" | "errors" => counts.failed = counts.failed.saturating_add(n),
            "skipped" | "xfailed" | "deselected" => {
                counts.skipped = counts.skipped.saturating_add(n);
            }
            _ => {}
        }
    }
    Some(counts)
}

/// unittest: `Ran 5 tests in 0.001s`, then `OK`, `OK (skipped=1)` or
/// `FAILED (failures=1, errors=2, skipped=1)`.
fn unittest(output: &str) -> Option<TestCounts> {
    let lines: Vec<&str> = output.lines().map(str::trim).collect();
    let ran_at = lines
        .iter()
        .rposition(|l| l.starts_with("Ran ") && l.contains(" test"))?;
    let ran: u64 = lines[ran_at].split_whitespace().nth(1)?.parse().ok()?;
    let verdict = lines[ran_at + 1..].iter().find(|l| !l.is_empty())?;
    if !(verdict.starts_with("OK") || verdict.starts_with("FAILED")) {
        return None;
    }
    let mut failed: u64 = 0;
    let mut skipped: u64 = 0;
    for part in verdict
        .trim_start_matches("OK")
        .trim_start_matches("FAILED")
        .trim_matches([' ', '(', ')'])
        .split(',')
    {
        let Some((key, value)) = part.trim().split_once('=') else {
            continue;
        };
        let value: u64 = value.trim().parse().unwrap_or(0);
        match key {
            "failures" | "errors" | "unexpected successes" => failed = failed.saturating_add(value),
            "skipped" | "expected failures" => skipped = skipped.saturating_add(value),
            _ => {}
        }
    }
    Some(TestCounts {
        passed: ran.saturating_sub(failed.saturating_add(skipped)),
        failed,
        skipped,
    })
}

/// jest: `Tests:       1 failed, 5 passed, 6 total`; vitest: `Tests  1 failed | 4 passed (5)`.
fn jest_or_vitest(output: &str) -> Option<TestCounts> {
    let line = output.lines().rev().map(str::trim).find_map(|line| {
        let rest = line
            .strip_prefix("Tests:")
            .or_else(|| line.strip_prefix("Tests "))?;
        Some(rest)
    })?;
    let mut counts = TestCounts::default();
    let mut any = false;
    for (word, n) in counted_words(line) {
        match word.as_str() {
            "passed" => counts.passed = counts.passed.saturating_add(n),
            "failed" => counts.failed = counts.failed.saturating_add(n),
            "skipped" | "todo" | "pending" => counts.skipped = counts.skipped.saturating_add(n),
            _ => continue,
        }
        any = true;
    }
    any.then_some(counts)
}

/// Maven Surefire's summary: `Tests run: 5, Failures: 1, Errors: 0, Skipped: 0` (the last one
/// printed is the total).
fn surefire(output: &str) -> Option<TestCounts> {
    let line = output
        .lines()
        .rev()
        .map(|l| {
            l.trim()
                .trim_start_matches("[INFO]")
                .trim_start_matches("[ERROR]")
                .trim()
        })
        .find(|l| l.starts_with("Tests run:"))?;
    let mut fields = std::collections::HashMap::new();
    for part in line.split(',') {
        // Other fields ("Time elapsed: 0.05 s") are not counts.
        if let Some((key, value)) = part.split_once(':')
            && let Some(Ok(value)) = value.split_whitespace().next().map(str::parse::<u64>)
        {
            fields.insert(key.trim().to_owned(), value);
        }
    }
    let run = *fields.get("Tests run")?;
    let failed = fields
        .get("Failures")
        .copied()
        .unwrap_or(0)
        .saturating_add(fields.get("Errors").copied().unwrap_or(0));
    let skipped = fields.get("Skipped").copied().unwrap_or(0);
    Some(TestCounts {
        passed: run.saturating_sub(failed.saturating_add(skipped)),
        failed,
        skipped,
    })
}

/// `go test -v`: one `--- PASS:`, `--- FAIL:` or `--- SKIP:` line per test (subtests indented).
fn go(output: &str) -> Option<TestCounts> {
    let mut counts = TestCounts::default();
    let mut any = false;
    for line in output.lines().map(str::trim_start) {
        let slot = if line.starts_with("--- PASS: ") {
            &mut counts.passed
        } else if line.starts_with("--- FAIL: ") {
            &mut counts.failed
        } else if line.starts_with("--- SKIP: ") {
            &mut counts.skipped
        } else {
            continue;
        };
        *slot = slot.saturating_add(1);
        any = true;
    }
    any.then_some(counts)
}

/// The counts of JUnit XML reports (`<testsuite tests=".." failures=".." errors=".."
/// skipped="..">`; a `<testsuites>` total when it gives one, else its suites summed).
pub fn from_junit_xml(xml: &str) -> Option<TestCounts> {
    let attribute = |tag: &str, name: &str| -> u64 {
        let needle = format!(" {name}=\"");
        tag.find(&needle)
            .and_then(|at| {
                let rest = &tag[at + needle.len()..];
                rest[..rest.find('"')?].trim().parse().ok()
            })
            .unwrap_or(0)
    };
    let counts_of = |tag: &str| {
        let failed = attribute(tag, "failures").saturating_add(attribute(tag, "errors"));
        let skipped = attribute(tag, "skipped").max(attribute(tag, "disabled"));
        TestCounts {
            passed: attribute(tag, "tests").saturating_sub(failed.saturating_add(skipped)),
            failed,
            skipped,
        }
    };
    // One pass over the tags, each read once up to its own `>`: a report made of unclosed
    // tags costs a scan of its length, not its length squared.
    let mut suites = TestCounts::default();
    let mut any_suite = false;
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let Some(end) = after.find('>') else {
            break;
        };
        let tag = &after[..end];
        rest = &after[end + 1..];
        if tag.len() > MAX_TAG_CHARS {
            continue;
        }
        let name = tag
            .split([' ', '\n', '\t', '\r'])
            .next()
            .unwrap_or_default();
        // Written as ` name="..."` lookups: the tag with a space in front of its attributes.
        let attributes = format!(" {}", &tag[name.len()..]);
        match name {
            "testsuites" if attributes.contains(" tests=\"") => {
                return Some(counts_of(&attributes));
            }
            "testsuite" => {
                suites.add(counts_of(&attributes));
                any_suite = true;
            }
            _ => {}
        }
    }
    any_suite.then_some(suites)
}

/// A tag longer than this is not a test suite's (its attributes are a few numbers).
const MAX_TAG_CHARS: usize = 4_096;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn counts(passed: u64, failed: u64, skipped: u64) -> Option<TestCounts> {
        Some(TestCounts {
            passed,
            failed,
            skipped,
        })
    }

    #[test]
    fn each_runners_summary_is_read() {
        let cases = [
            (
                "running 3 tests\n...\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n   Doc-tests x\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured\n",
                counts(4, 2, 1),
            ),
            (
                "tests/test_a.py ..F.s\n=========== 1 failed, 3 passed, 1 skipped in 0.12s ===========\n",
                counts(3, 1, 1),
            ),
            ("....\n4 passed in 0.01s\n", counts(4, 0, 0)),
            ("==== 2 passed, 1 error in 1.50s ====", counts(2, 1, 0)),
            (
                "..F\n----------------------------------------------------------------------\nRan 7 tests in 0.002s\n\nFAILED (failures=1, errors=1, skipped=2)\n",
                counts(3, 2, 2),
            ),
            ("Ran 3 tests in 0.000s\n\nOK\n", counts(3, 0, 0)),
            (
                "Test Suites: 1 failed, 1 total\nTests:       1 failed, 5 passed, 6 total\nSnapshots:   0 total\n",
                counts(5, 1, 0),
            ),
            (
                " Test Files  1 passed (1)\n      Tests  1 failed | 4 passed | 2 skipped (7)\n",
                counts(4, 1, 2),
            ),
            (
                "[INFO] Results:\n[INFO]\n[ERROR] Tests run: 9, Failures: 1, Errors: 1, Skipped: 2\n",
                counts(5, 2, 2),
            ),
            (
                "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- FAIL: TestB/sub (0.00s)\n--- SKIP: TestC (0.00s)\nFAIL\n",
                counts(1, 1, 1),
            ),
        ];
        for (output, expected) in cases {
            assert_eq!(from_output(output), expected, "{output}");
        }
        // Counts a test made up to overflow saturate; they do not panic or wrap.
        assert_eq!(
            from_output(
                "test result: ok. 18446744073709551615 passed; 0 failed\ntest result: ok. 5 passed; 0 failed\n"
            ),
            counts(u64::MAX, 0, 0)
        );
        // Nothing a runner printed: no counts, rather than made-up ones.
        for output in [
            "",
            "all good\n",
            "make: *** [test] Error 1\n",
            "Ran out of memory\n",
        ] {
            assert_eq!(from_output(output), None, "{output}");
        }
    }

    #[test]
    fn junit_xml_reports_are_counted() {
        let suites = r#"<?xml version="1.0"?>
<testsuites>
  <testsuite name="a" tests="4" failures="1" errors="0" skipped="1"><testcase name="x"/></testsuite>
  <testsuite name="b" tests="3" failures="0" errors="1" skipped="0"></testsuite>
</testsuites>"#;
        assert_eq!(from_junit_xml(suites), counts(4, 2, 1));
        let total = r#"<testsuites tests="10" failures="2" errors="0"><testsuite tests="10"/></testsuites>"#;
        assert_eq!(from_junit_xml(total), counts(8, 2, 0));
        // Unclosed tags, many of them: read in one pass (once quadratic in the length).
        assert_eq!(from_junit_xml(&"<testsuite ".repeat(100_000)), None);
        let long_tag = format!("<testsuite tests=\"1\"{}>", " x".repeat(MAX_TAG_CHARS));
        assert_eq!(from_junit_xml(&long_tag), None);
        assert_eq!(from_junit_xml("<html></html>"), None);
        assert_eq!(
            TestCounts {
                passed: 3,
                failed: 1,
                skipped: 0
            }
            .describe(),
            "3 passed, 1 failed"
        );
    }
}
