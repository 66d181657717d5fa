//! Which lines of a pull request GitHub lets a review comment sit on: the new-side lines inside
//! the hunks of its diff (added and context lines alike).

/// The files of a unified diff (new paths; a deleted file by its old path).
pub fn files(diff: &str) -> Vec<String> {
    let mut files = Vec::new();
    let mut old: Option<&str> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("--- ") {
            old = path.strip_prefix("a/");
        } else if let Some(path) = line.strip_prefix("+++ ") {
            match path.strip_prefix("b/") {
                Some(new) => files.push(new.to_owned()),
                None => files.extend(old.map(str::to_owned)),
            }
        }
    }
    files
}

/// The new-side line ranges (inclusive) of the hunks of `path`.
pub fn hunk_lines(diff: &str, path: &str) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    let mut current = false;
    for line in diff.lines() {
        if let Some(new) = line.strip_prefix("+++ ") {
            current = new.strip_prefix("b/") == Some(path);
        } else if current
            && line.starts_with("@@ ")
            && let Some(range) = new_range(line)
        {
            ranges.push(range);
        }
    }
    ranges
}

/// `@@ -1,4 +10,6 @@` -> (10, 15); an empty new side has no lines.
fn new_range(header: &str) -> Option<(u32, u32)> {
    let plus = header.split(' ').find(|part| part.starts_with('+'))?;
    let mut numbers = plus[1..].splitn(2, ',');
    let start: u32 = numbers.next()?.parse().ok()?;
    let count: u32 = match numbers.next() {
        Some(count) => count.parse().ok()?,
        None => 1,
    };
    (count > 0).then(|| (start, start + count - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20 +21,0 @@\n-x\ndiff --git a/old.rs b/old.rs\n--- a/old.rs\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n";

    #[test]
    fn hunks_give_their_new_side_lines() {
        assert_eq!(files(DIFF), ["src/lib.rs", "old.rs"]);
        assert_eq!(hunk_lines(DIFF, "src/lib.rs"), [(1, 4)]);
        assert!(hunk_lines(DIFF, "old.rs").is_empty());
        assert!(hunk_lines(DIFF, "other.rs").is_empty());
    }
}
