#![no_main]
//! rmcoc parsing never panics, and every block it reads survives a build/parse round trip.

use bugloop_domain::rmcoc::{build_comment, parse_comment};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_comment(&text);
    for block in parsed.blocks {
        let rebuilt = parse_comment(&build_comment(&parsed.human, &block));
        assert!(rebuilt.problems.is_empty());
        assert_eq!(rebuilt.blocks, vec![block]);
    }
});
