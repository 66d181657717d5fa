#![no_main]
//! The diff parser never panics, and every line it reports is consistent with its hunk.

use bugloop_diff::{LineMapping, Side};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for diff in [bugloop_diff::parse(data), bugloop_diff::parse_patch("f", data)] {
        for file in &diff.files {
            let _ = file.first_diff_line();
            for hunk in &file.hunks {
                for line in &hunk.lines {
                    if let Some(new) = line.new_line {
                        assert!(file.contains_line(Side::Right, new));
                        if let Some(old) = line.old_line {
                            assert_eq!(file.old_to_new(old), LineMapping::Line(new));
                        }
                    }
                }
            }
            let _ = file.old_to_new(u32::MAX);
            let _ = file.new_to_old(1);
        }
    }
});
