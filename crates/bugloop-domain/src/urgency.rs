//! How urgent an issue is, for the order issues are solved in (`solve --all`, the server's
//! queue): most severe first, then oldest. bugloop's own issues say their severity in a
//! `**Severity:** ...` line (from the report's level and whether it crashed); anyone's issue can
//! say it with a `severity:<level>` or `priority:<level>` label, which wins.

/// An issue's severity: its rank (higher goes first) and its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Urgency {
    pub rank: u8,
    pub name: &'static str,
}

impl Urgency {
    /// What an issue that says nothing is taken as.
    pub const MEDIUM: Urgency = Urgency {
        rank: 2,
        name: "medium",
    };

    /// A level's name as a label or a report says it (`critical`, `high`, `p1`, ...).
    pub fn parse(word: &str) -> Option<Urgency> {
        let (rank, name) = match word.trim().to_ascii_lowercase().as_str() {
            "critical" | "fatal" | "p0" => (4, "critical"),
            "high" | "p1" => (3, "high"),
            "medium" | "p2" => (2, "medium"),
            "low" | "p3" => (1, "low"),
            _ => return None,
        };
        Some(Urgency { rank, name })
    }
}

/// The urgency of an issue with `labels` and `body`. The body's `**Severity:**` line counts
/// only when bugloop filed the issue (`filed_by_bugloop`): anyone else could write one to
/// jump the queue, while a label takes write (triage) access to set.
pub fn of_issue<'l>(
    labels: impl IntoIterator<Item = &'l str>,
    body: &str,
    filed_by_bugloop: bool,
) -> Urgency {
    let labelled = labels
        .into_iter()
        .filter_map(|l| {
            l.strip_prefix("severity:")
                .or_else(|| l.strip_prefix("priority:"))
        })
        .filter_map(Urgency::parse)
        .max();
    let written = filed_by_bugloop
        .then(|| {
            body.lines()
                .find_map(|l| l.strip_prefix("**Severity:** "))
                .and_then(Urgency::parse)
        })
        .flatten();
    labelled.or(written).unwrap_or(Urgency::MEDIUM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_wins_and_a_strangers_body_does_not_count() {
        let body = "bugloop filed this issue.\n\n**Severity:** high\n";
        assert_eq!(of_issue([], body, true).name, "high");
        assert_eq!(of_issue([], body, false), Urgency::MEDIUM);
        assert_eq!(of_issue(["severity:low"], body, true).name, "low");
        assert_eq!(
            of_issue(["priority:P0", "severity:low"], "", false).name,
            "critical"
        );
        assert_eq!(of_issue(["severity:whatever"], "", false), Urgency::MEDIUM);
    }
}
