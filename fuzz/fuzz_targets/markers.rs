#![no_main]
//! Marker parsing never panics; a comment's own marker can be flipped in place and read back;
//! any id survives a build/parse round trip once sanitized.

use bugloop_domain::{FindingId, MarkerSyntax};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let syntax = MarkerSyntax::default();
    let _ = syntax.parse_all(&text);
    let _ = syntax.read_reply_tag(&text);
    if let Some(marker) = syntax.own(&text) {
        let flipped = syntax.replace(&text, &marker.finding_id, !marker.resolved);
        let flipped = flipped.expect("an own marker can be replaced");
        let again = syntax.own(&flipped).expect("the flipped marker is still the own one");
        assert!(again.finding_id == marker.finding_id && again.resolved != marker.resolved);
    }
    let id = FindingId::new(&*text);
    let built = syntax.build(&id, true);
    let own = syntax.own(&built).expect("a built marker is a comment's own");
    assert_eq!(own.finding_id, id);
});
