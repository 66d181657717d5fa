#![no_main]
//! rmcoc parsing never panics, and the state block it reads survives a build/parse round trip
//! behind any (neutralised) human text.

use bugloop_domain::markdown::neutralise;
use bugloop_domain::rmcoc::{build_comment, parse_comment};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_comment(&text);
    if let Some(block) = parsed.block {
        let rebuilt = parse_comment(&build_comment(&neutralise(&parsed.human), &block));
        assert!(rebuilt.problems.is_empty());
        assert_eq!(rebuilt.block, Some(block));
    }
});
