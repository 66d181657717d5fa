//! JUnit XML reports a passing attempt's test commands wrote (Maven Surefire and Failsafe,
//! Gradle, pytest `--junitxml`, jest-junit, go-junit-report): found in the task tree among the
//! files written since the attempt began, counted, and added to the test results when no
//! command's own output said its counts. The tree is the code's: nothing is followed out of it
//! (no symbolic link), and the walk and each file are bounded.

use std::path::Path;
use std::time::SystemTime;

use bugloop_domain::test_counts::{TestCounts, from_junit_xml};

/// The most directory entries looked at, the deepest directory, the largest report read, the
/// most reports and the most bytes of them all.
const MAX_ENTRIES: usize = 20_000;
const MAX_DEPTH: usize = 12;
const MAX_REPORT_BYTES: u64 = 4 * 1024 * 1024;
const MAX_REPORTS: u32 = 200;
const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// A report's text: opened without following a link (a file swapped for one after it was
/// looked at is not read), only a regular file, at most [`MAX_REPORT_BYTES`].
fn read_report(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_REPORT_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether a file is named as a JUnit report is.
fn looks_like_a_report(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if !name.ends_with(".xml") {
        return false;
    }
    let parent = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.starts_with("test-")
        || name.contains("junit")
        || matches!(
            parent.as_str(),
            "surefire-reports" | "failsafe-reports" | "test-results" | "test-reports"
        )
}

/// The counts of the JUnit reports under `root` written at or after `since`, summed, with how
/// many reports there were; `None` when there is none.
pub(super) fn counts(root: &Path, since: SystemTime) -> Option<(TestCounts, u32)> {
    let mut total: Option<(TestCounts, u32)> = None;
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    let mut bytes = 0u64;
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return total;
            }
            let path = entry.path();
            // Not followed: the entry itself, a link included.
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if depth < MAX_DEPTH && entry.file_name() != ".git" {
                    stack.push((path, depth + 1));
                }
                continue;
            }
            let fresh = meta.modified().is_ok_and(|at| at >= since);
            if !meta.is_file()
                || meta.len() > MAX_REPORT_BYTES
                || !fresh
                || !looks_like_a_report(&path)
            {
                continue;
            }
            bytes = bytes.saturating_add(meta.len());
            if bytes > MAX_TOTAL_BYTES || total.is_some_and(|(_, files)| files >= MAX_REPORTS) {
                return total;
            }
            let Some(counts) = read_report(&path).and_then(|xml| from_junit_xml(&xml)) else {
                continue;
            };
            let (sum, files) = total.get_or_insert_default();
            sum.passed = sum.passed.saturating_add(counts.passed);
            sum.failed = sum.failed.saturating_add(counts.failed);
            sum.skipped = sum.skipped.saturating_add(counts.skipped);
            *files += 1;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const SUITE: &str = r#"<?xml version="1.0"?><testsuite name="s" tests="3" failures="0" errors="0" skipped="1"><testcase name="a"/></testsuite>"#;

    #[test]
    fn fresh_reports_in_the_tree_are_counted_and_old_ones_links_and_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("target/surefire-reports")).unwrap();
        std::fs::write(root.join("committed-junit.xml"), SUITE).unwrap();
        let since = SystemTime::now() + std::time::Duration::from_millis(20);
        std::thread::sleep(std::time::Duration::from_millis(40));
        std::fs::write(root.join("target/surefire-reports/TEST-a.xml"), SUITE).unwrap();
        std::fs::write(root.join("junit.xml"), SUITE).unwrap();
        std::fs::write(root.join("pom.xml"), SUITE).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("TEST-x.xml"), SUITE).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("linked")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("TEST-x.xml"),
            root.join("TEST-link.xml"),
        )
        .unwrap();
        let (counts, files) = counts(root, since).unwrap();
        assert_eq!(files, 2);
        assert_eq!((counts.passed, counts.failed, counts.skipped), (4, 0, 2));
        assert!(super::counts(&root.join("missing"), since).is_none());
    }
}
