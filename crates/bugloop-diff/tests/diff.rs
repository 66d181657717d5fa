//! The diff engine's integration tests: fixtures in, snapshots out; and property tests that
//! generate diffs from random file pairs and check the parsed line maps against the truth.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bugloop_diff::{LineMapping, Side, parse};
use proptest::prelude::*;

#[test]
fn fixtures() {
    insta::glob!("fixtures/*.diff", |path| {
        let input = std::fs::read(path).unwrap();
        let diff = parse(&input);
        insta::assert_yaml_snapshot!(diff);
    });
}

#[test]
fn github_patch_fixture() {
    let patch = "@@ -1,3 +1,4 @@ fn main() {\n a\n-b\n+B\n+c\n d\n\\ No newline at end of file";
    let diff = bugloop_diff::parse_patch("src/main.rs", patch);
    assert!(diff.problems.is_empty(), "{:?}", diff.problems);
    let file = &diff.files[0];
    assert_eq!(file.path(), "src/main.rs");
    assert!(file.contains_line(Side::Right, 3));
    assert!(file.is_changed(Side::Left, 2));
    assert_eq!(file.first_diff_line().unwrap().line, 2);
    assert!(file.hunks[0].lines.last().unwrap().no_newline);
}

#[test]
fn never_panics_on_garbage() {
    for input in [
        &b"@@ -1 +1 @@\n"[..],
        b"diff --git \n",
        b"diff --git \"a/unterminated\n--- \n+++ \n@@ -1,5 +1,5 @@\n-x\n",
        b"--- a\n+++ b\n@@ -4294967295,1 +4294967295,1 @@\n-a\n+b\n",
        b"--- a\n+++ b\n@@ -1,2 +1,2 @@\n+a\n+b\n+c\n",
        b"\xff\xfe\x00\n--- \xff\n+++ \xfe\n@@ -1 +1 @@\n-\xff\n+\xfe\n",
    ] {
        let diff = parse(input);
        for file in &diff.files {
            let _ = file.first_diff_line();
            let _ = file.old_to_new(u32::MAX);
            let _ = file.new_to_old(0);
        }
    }
}

fn lines_strategy() -> impl Strategy<Value = Vec<String>> {
    let words = vec![
        "a", "b", "c", "d", "e", "--- x", "+++ y", "@@ z", "-- ", "é\r",
    ];
    prop::collection::vec(prop::sample::select(words), 0..40)
        .prop_map(|v| v.into_iter().map(str::to_owned).collect())
}

fn render(lines: &[String], trailing_newline: bool) -> String {
    let mut text = lines.join("\n");
    if trailing_newline && !lines.is_empty() {
        text.push('\n');
    }
    text
}

/// The real `git diff` of two texts.
fn git_diff(old: &str, new: &str, context: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.txt"), old).unwrap();
    std::fs::write(dir.path().join("new.txt"), new).unwrap();
    let output = std::process::Command::new("git")
        .current_dir(dir.path())
        .args([
            "-c",
            "core.quotepath=false",
            "diff",
            "--no-index",
            "--no-color",
        ])
        .arg(format!("-U{context}"))
        .args(["old.txt", "new.txt"])
        .output()
        .unwrap();
    String::from_utf8(output.stdout).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn generated_diffs_parse_back_to_the_true_line_maps(
        old in lines_strategy(),
        new in lines_strategy(),
        old_nl in any::<bool>(),
        new_nl in any::<bool>(),
        context in 0usize..4,
    ) {
        let old_text = render(&old, old_nl);
        let new_text = render(&new, new_nl);
        let input = git_diff(&old_text, &new_text, context);
        let diff = parse(&input);
        prop_assert!(diff.problems.is_empty(), "{:?}\n{}", diff.problems, input);
        if old_text == new_text {
            prop_assert!(diff.files.is_empty());
            return Ok(());
        }
        prop_assert_eq!(diff.files.len(), 1);
        let file = &diff.files[0];
        // The parser strips one `\r` of a CRLF ending, as it does for every line.
        let strip = |l: &String| l.strip_suffix('\r').unwrap_or(l).to_owned();
        let old: Vec<String> = old.iter().map(strip).collect();
        let new: Vec<String> = new.iter().map(strip).collect();

        // Applying the parsed hunks to the old lines gives the new lines.
        let mut rebuilt: Vec<String> = Vec::new();
        let mut next_old = 1u32;
        for hunk in &file.hunks {
            let copy_until = if hunk.old_len == 0 { hunk.old_start + 1 } else { hunk.old_start };
            while next_old < copy_until {
                rebuilt.push(old[(next_old - 1) as usize].clone());
                next_old += 1;
            }
            for line in &hunk.lines {
                if line.new_line.is_some() {
                    rebuilt.push(line.text.clone());
                }
                if let Some(n) = line.new_line {
                    prop_assert_eq!(&line.text, &new[(n - 1) as usize]);
                }
                if let Some(o) = line.old_line {
                    prop_assert_eq!(&line.text, &old[(o - 1) as usize]);
                }
            }
            next_old += hunk.old_len;
        }
        while (next_old as usize) <= old.len() {
            rebuilt.push(old[(next_old - 1) as usize].clone());
            next_old += 1;
        }
        prop_assert_eq!(&rebuilt, &new);

        // The line maps form one alignment: monotonic, text-preserving, mutually inverse, and
        // covering exactly the lines the hunks keep.
        let mut last = 0u32;
        let mut kept = 0usize;
        for o in 1..=old.len() as u32 {
            match file.old_to_new(o) {
                LineMapping::Line(n) => {
                    prop_assert!(n > last, "old {} maps to {} after {}", o, n, last);
                    prop_assert_eq!(&old[(o - 1) as usize], &new[(n - 1) as usize]);
                    prop_assert_eq!(file.new_to_old(n), LineMapping::Line(o));
                    prop_assert!(!file.is_changed(Side::Left, o));
                    last = n;
                    kept += 1;
                }
                LineMapping::Gone { .. } => prop_assert!(file.is_changed(Side::Left, o)),
            }
        }
        let added = (1..=new.len() as u32)
            .filter(|&n| matches!(file.new_to_old(n), LineMapping::Gone { .. }))
            .count();
        prop_assert_eq!(kept + added, new.len());
        let (plus, minus) = file.stats();
        prop_assert_eq!(plus, added);
        prop_assert_eq!(minus, old.len() - kept);
    }
}

#[test]
fn huge_hunk() {
    let n = 60_000u32;
    let mut input = format!(
        "diff --git a/big.txt b/big.txt\n--- a/big.txt\n+++ b/big.txt\n@@ -1,{n} +1,{} @@\n",
        n + n / 2
    );
    for i in 1..=n {
        input.push_str(&format!(" line {i}\n"));
        if i % 2 == 0 {
            input.push_str(&format!("+added after {i}\n"));
        }
    }
    let diff = parse(&input);
    assert!(diff.problems.is_empty(), "{:?}", diff.problems);
    let file = diff.file("big.txt").unwrap();
    assert_eq!(file.stats(), ((n / 2) as usize, 0));
    assert_eq!(file.old_to_new(n), LineMapping::Line(n + n / 2 - 1));
    assert_eq!(file.first_diff_line().unwrap().line, 3);
}
