#![no_main]
//! Marker parsing never panics; every marker parsed can be flipped in place and read back; any
//! id survives a build/parse round trip once sanitized.

use bugloop_domain::{FindingId, MarkerSyntax};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let syntax = MarkerSyntax::default();
    for marker in syntax.parse_all(&text) {
        let flipped = syntax.replace(&text, &marker.finding_id, !marker.resolved);
        let flipped = flipped.expect("a parsed marker can be replaced");
        assert!(syntax
            .parse_all(&flipped)
            .iter()
            .any(|m| m.finding_id == marker.finding_id && m.resolved != marker.resolved));
    }
    let id = FindingId::new(&*text);
    let built = syntax.build(&id, true);
    let parsed = syntax.parse_all(&built);
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].finding_id, id);
});
