//! The loop reviews in the conversation: one comment per audit,
//! `loop <L> audit: <a>P0 / <b>P1 / <c>P2`, tagged with the loop and head, and how a clean one is
//! known (a run on a head whose last loop was clean stops at once).

use bugloop_domain::finding::Finding;
use bugloop_domain::markdown::inline;
use bugloop_domain::score::Priority;
use bugloop_report::converge::Quarantined;

use bugloop_domain::thread::Comment;

use super::{CLEAN_MARK, LOOP_TAG};

/// P0/P1/P2 counts.
pub(super) fn counts(findings: &[Finding]) -> (usize, usize, usize) {
    let mut c = (0, 0, 0);
    for f in findings {
        match f.priority() {
            Priority::P0 => c.0 += 1,
            Priority::P1 => c.1 += 1,
            Priority::P2 => c.2 += 1,
        }
    }
    c
}

pub(super) fn loop_body(
    number: u32,
    head: &str,
    findings: &[Finding],
    quarantined: &[Quarantined],
) -> String {
    let (p0, p1, p2) = counts(findings);
    let mut body = format!(
        "{LOOP_TAG} loop={number} head={head} -->\n## bugloop loop {number} audit: {p0}P0 / {p1}P1 / {p2}P2"
    );
    if findings.is_empty() {
        body.push_str(&format!(" {CLEAN_MARK}\n"));
    } else {
        body.push_str("\n\n");
        for f in findings {
            body.push_str(&format!(
                "- **[{}] {}** — {} — {}\n",
                f.priority(),
                inline(&f.title),
                inline(&f.location()),
                inline(f.description.lines().next().unwrap_or(""))
            ));
        }
    }
    if !quarantined.is_empty() {
        body.push_str(&format!(
            "\n### Quarantined ({}): not counted\n\n",
            quarantined.len()
        ));
        for q in quarantined {
            body.push_str(&format!(
                "- **{}** — {} — {} — {}\n",
                inline(&q.title),
                inline(&q.location),
                q.auditor,
                inline(&q.reason)
            ));
        }
    }
    body
}

/// Whether a loop review says its audit was clean (the header line, so a quarantine list after
/// it does not hide a clean loop).
pub(super) fn is_clean(body: &str) -> bool {
    body.lines()
        .nth(1)
        .is_some_and(|header| header.trim_end().ends_with(CLEAN_MARK))
}

/// The loop reviews earlier runs left on the conversation.
pub(super) struct History {
    /// The newest loop review is clean and was made on this HEAD, with no dirty one after it:
    /// there is nothing to do.
    pub clean_on_head: bool,
    /// Loop reviews of earlier runs that were not clean, newest first, up to the last clean one.
    pub earlier_dirty: usize,
}

/// Reads the loop history from the conversation's comments (bugloop's own loop reviews only).
pub(super) fn history(comments: &[Comment], head_now: &str) -> History {
    let mut loop_reviews: Vec<&Comment> = comments
        .iter()
        .filter(|c| c.by_bugloop && c.body.starts_with(LOOP_TAG))
        .collect();
    loop_reviews
        .sort_by_key(|c| std::cmp::Reverse((c.created_at, c.id.parse::<u64>().unwrap_or(0))));
    let mut earlier_dirty = 0;
    for review in &loop_reviews {
        if is_clean(&review.body) {
            let clean_on_head =
                review.body.contains(&format!("head={head_now} ")) && earlier_dirty == 0;
            return History {
                clean_on_head,
                earlier_dirty,
            };
        }
        earlier_dirty += 1;
    }
    History {
        clean_on_head: false,
        earlier_dirty,
    }
}
