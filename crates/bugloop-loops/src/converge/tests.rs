use bugloop_domain::finding::Category;
use bugloop_domain::score::Score;

use super::*;

struct Files;

impl Head for Files {
    fn text(&self, path: &str) -> Option<&str> {
        (path == "src/a.rs").then_some("fn a() {\n    let x = v[i];\n}\n")
    }
    fn in_diff(&self, _: &str, _: u32) -> Option<bool> {
        None
    }
}

fn finding(id: &str, line: u32, evidence: &str, score: u8, description: &str) -> Finding {
    Finding {
        id: FindingId::new(id),
        title: format!("title {id}"),
        description: description.into(),
        file: Some("src/a.rs".into()),
        line: Some(line),
        end_line: None,
        score: Score::saturating(i64::from(score)),
        category: Category::Logic,
        evidence: Some(evidence.into()),
        suggestion: None,
    }
}

#[test]
fn the_validator_drops_hallucinations_and_merges_the_rest() {
    let audits = vec![
        vec![finding("a1", 2, "let x = v[i];", 7, "short")],
        vec![
            finding("b1", 2, "let x = v[i];", 9, "a longer description wins"),
            // Quoted text that is not in the file.
            finding("b2", 2, "unsafe { *p }", 8, "made up"),
        ],
        vec![
            // A line past the end.
            finding("c1", 90, "let x = v[i];", 8, "wrong line"),
            // A file that does not exist.
            Finding {
                file: Some("src/nope.rs".into()),
                ..finding("c2", 1, "x", 8, "no file")
            },
        ],
    ];
    let (kept, rejected) = validate_and_merge(4, audits, &Files);
    assert_eq!(kept.len(), 1, "{kept:#?}");
    assert_eq!(kept[0].id.as_str(), "loop4-1");
    assert_eq!(kept[0].score, Score::saturating(9));
    assert_eq!(kept[0].description, "a longer description wins");
    assert_eq!(rejected.len(), 3, "{rejected:#?}");
}

#[test]
fn loop_reviews_say_their_counts_and_clean() {
    assert_eq!(
        loop_body(2, "abc", &[]),
        "<!-- bugloop:converge loop=2 head=abc -->\n## bugloop loop 2 audit: 0P0 / 0P1 / 0P2 → clean\n"
    );
    let body = loop_body(1, "abc", &[finding("x", 2, "e", 9, "d")]);
    assert!(body.contains("audit: 1P0 / 0P1 / 0P2\n"), "{body}");
    assert!(!body.trim_end().ends_with(CLEAN_MARK));
}
