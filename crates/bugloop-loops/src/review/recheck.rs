//! What a review does with each open finding whose code changed (see [`super::touched`]), once
//! the model has answered: reported again, it stays open where the model put it; resolved by
//! the model, it is resolved with the model's reason; otherwise a finding whose code is gone is
//! resolved ("the code it quoted was removed in 1a2b3c4"), and one whose code is still there
//! stays open, pointing where its code is now. A finding is only resolved for silence when the
//! model answered every part of the review; without an answer it stays open and says why.

use std::collections::BTreeMap;

use bugloop_domain::filter::Rediscovered;
use bugloop_domain::finding::FindingId;
use bugloop_report::review::{DroppedFinding, RecheckOutcome, RecheckedFinding, ReportStage};

use super::touched::{Relocation, Touch, Touched};

/// The outcome for every touched finding; resolutions for silence are added to `resolutions`.
pub(super) fn settle(
    touched: &[Touched],
    titles: &BTreeMap<FindingId, String>,
    (rediscovered, dropped): (&[Rediscovered], &[DroppedFinding]),
    resolutions: &mut BTreeMap<String, String>,
    unanswered: Option<&str>,
    (since, head): (Option<&str>, &str),
) -> (Vec<RecheckedFinding>, Vec<Relocation>) {
    let mut rechecked = Vec::new();
    let mut relocations = Vec::new();
    for touch in touched {
        let change = touch.describe(since);
        let (outcome, reason) =
            if let Some(again) = rediscovered.iter().find(|r| r.existing == touch.id) {
                (
                    RecheckOutcome::ReportedAgain,
                    format!(
                        "the model reported it again at {}",
                        again.finding.location()
                    ),
                )
            } else if let Some(why) = resolutions.get(touch.id.as_str()).cloned() {
                // Its thread says what changed first, a fact, then the model's words (a small
                // model's reason is often no more than "no bug").
                if matches!(touch.what, Touch::Gone { .. }) {
                    let thread = format!("{}; the model: {why}", gone_reason(touch, head));
                    resolutions.insert(touch.id.as_str().to_owned(), thread);
                }
                (
                    RecheckOutcome::Resolved,
                    format!("the model resolved it: {why}"),
                )
            } else if let Some(lost) = dropped
                .iter()
                .find(|d| d.id == touch.id.as_str() && d.stage != ReportStage::Grounding)
            {
                // Reported again under its id, but the report could not be kept (under the
                // threshold, an unsafe path): not silence. A report quoting code that is not at
                // head (grounding) repeats what is gone, and says nothing about the code now.
                (
                    RecheckOutcome::KeptOpen,
                    format!(
                        "the model reported it again, but the report was dropped ({}: {})",
                        lost.stage, lost.reason
                    ),
                )
            } else {
                not_mentioned(touch, unanswered, head, resolutions, &mut relocations)
            };
        rechecked.push(RecheckedFinding {
            id: touch.id.as_str().to_owned(),
            title: titles.get(&touch.id).cloned().unwrap_or_default(),
            change,
            outcome,
            reason,
        });
    }
    (rechecked, relocations)
}

/// What came of a touched finding the model did not mention: resolved for silence when its code
/// is gone and the model answered every part; otherwise kept open, relocated to where its code
/// is now.
fn not_mentioned(
    touch: &Touched,
    unanswered: Option<&str>,
    head: &str,
    resolutions: &mut BTreeMap<String, String>,
    relocations: &mut Vec<Relocation>,
) -> (RecheckOutcome, String) {
    match (&touch.what, unanswered) {
        (Touch::Gone { .. }, None) => {
            let reason = gone_reason(touch, head);
            resolutions.insert(touch.id.as_str().to_owned(), reason.clone());
            (RecheckOutcome::Resolved, reason)
        }
        (Touch::Gone { .. }, Some(error)) => (
            RecheckOutcome::KeptOpen,
            format!(
                "its quoted code is gone, but the model gave no answer about it ({error}); \
                 it stays open until a review is answered"
            ),
        ),
        (Touch::Still { file, line, .. }, _) => {
            if Some(file.as_str()) != Some(touch.file.as_str()) || touch.line != Some(*line) {
                relocations.push(Relocation {
                    id: touch.id.clone(),
                    file: file.clone(),
                    line: *line,
                });
            }
            let said = match unanswered {
                Some(error) => format!("the model gave no answer about it ({error})"),
                None => "the model did not resolve it".to_owned(),
            };
            (
                RecheckOutcome::KeptOpen,
                format!("its code is still at {file}:{line}, and {said}"),
            )
        }
    }
}

/// "the code it quoted was removed in 1a2b3c4 (stats.py was deleted)", naming the commit that
/// took it away where it is known, else saying it is gone at `head`.
fn gone_reason(touch: &Touched, head: &str) -> String {
    let Some(commit) = &touch.changed_in else {
        let at = bugloop_git::short(head);
        return match &touch.what {
            Touch::Gone {
                file_deleted: true, ..
            } => format!("{} is deleted at {at}", touch.file),
            _ => format!("the code it quoted is no longer there at {at}"),
        };
    };
    let at = bugloop_git::short(commit);
    match &touch.what {
        Touch::Gone {
            file_deleted: true, ..
        } => format!(
            "the code it quoted was removed in {at} ({} was deleted)",
            touch.file
        ),
        Touch::Gone { replaced_by, .. } if replaced_by.is_empty() => {
            format!("the code it quoted was removed in {at}")
        }
        _ => format!("the code it quoted was changed in {at}"),
    }
}

#[cfg(test)]
mod tests {
    use bugloop_domain::finding::{Category, Finding};
    use bugloop_domain::score::Score;

    use super::*;

    fn touched(what: Touch) -> Touched {
        Touched {
            id: FindingId::new("off-by-one"),
            file: "stats.py".to_owned(),
            line: Some(3),
            what,
            changed_in: None,
        }
    }

    fn gone() -> Touch {
        Touch::Gone {
            file_deleted: false,
            replaced_by: vec!["    for i in range(len(xs)):".to_owned()],
            replaced_at: vec![3],
        }
    }

    const HEAD: &str = "e449b6f0000000000000000000000000000000000";

    /// [`settle`] of a finding whose code commit 72c818b changed, the model having answered.
    fn settle_changed_in_72c818b(
        resolutions: &mut BTreeMap<String, String>,
    ) -> (Vec<RecheckedFinding>, Vec<Relocation>) {
        let mut changed = touched(gone());
        changed.changed_in = Some("72c818b0000000000000000000000000000000000".to_owned());
        settle(
            &[changed],
            &BTreeMap::new(),
            (&[], &[]),
            resolutions,
            None,
            (Some("1a2b3c4"), HEAD),
        )
    }

    /// Resolved for silence, naming the commit that changed its code (not HEAD, which may be a
    /// later commit of something else), or saying it is gone at HEAD where none is known.
    #[test]
    fn gone_code_resolves_only_when_the_model_answered() {
        let mut resolutions = BTreeMap::new();
        let (rechecked, moved) = settle_changed_in_72c818b(&mut resolutions);
        assert_eq!(rechecked[0].outcome, RecheckOutcome::Resolved);
        assert_eq!(
            resolutions["off-by-one"],
            "the code it quoted was changed in 72c818b"
        );
        assert!(moved.is_empty());
        let mut resolutions = BTreeMap::new();
        settle(
            &[touched(gone())],
            &BTreeMap::new(),
            (&[], &[]),
            &mut resolutions,
            None,
            (None, HEAD),
        );
        assert_eq!(
            resolutions["off-by-one"],
            "the code it quoted is no longer there at e449b6f"
        );

        let mut resolutions = BTreeMap::new();
        let (rechecked, _) = settle(
            &[touched(gone())],
            &BTreeMap::new(),
            (&[], &[]),
            &mut resolutions,
            Some("budget exhausted: 0 turns left"),
            (Some("1a2b3c4"), HEAD),
        );
        assert_eq!(rechecked[0].outcome, RecheckOutcome::KeptOpen);
        assert!(
            rechecked[0].reason.contains("budget exhausted"),
            "{rechecked:?}"
        );
        assert!(resolutions.is_empty());
    }

    /// Resolved by the model where its code is gone: the thread says the fact first, then the
    /// model's words (a small model's are often "no bug").
    #[test]
    fn a_resolution_by_the_model_names_the_commit_that_changed_the_code() {
        let mut resolutions = BTreeMap::from([("off-by-one".to_owned(), "no bug".to_owned())]);
        let (rechecked, _) = settle_changed_in_72c818b(&mut resolutions);
        assert_eq!(rechecked[0].reason, "the model resolved it: no bug");
        assert_eq!(
            resolutions["off-by-one"],
            "the code it quoted was changed in 72c818b; the model: no bug"
        );
    }

    #[test]
    fn reported_again_or_still_there_stays_open_and_follows_its_code() {
        let again = Rediscovered {
            existing: FindingId::new("off-by-one"),
            finding: Finding {
                id: FindingId::new("off-by-one"),
                title: "Off by one".to_owned(),
                description: String::new(),
                file: Some("util.py".to_owned()),
                line: Some(4),
                end_line: None,
                score: Score::saturating(8),
                category: Category::Logic,
                evidence: None,
                suggestion: None,
                source: None,
            },
            reopens: false,
        };
        let mut resolutions = BTreeMap::new();
        let (rechecked, moved) = settle(
            &[touched(gone())],
            &BTreeMap::new(),
            (&[again], &[]),
            &mut resolutions,
            None,
            (None, HEAD),
        );
        assert_eq!(rechecked[0].outcome, RecheckOutcome::ReportedAgain);
        assert!(rechecked[0].reason.ends_with("util.py:4"));
        assert!(resolutions.is_empty() && moved.is_empty());

        let (rechecked, moved) = settle(
            &[touched(Touch::Still {
                file: "util.py".to_owned(),
                line: 4,
                moved: true,
            })],
            &BTreeMap::new(),
            (&[], &[]),
            &mut resolutions,
            None,
            (None, HEAD),
        );
        assert_eq!(rechecked[0].outcome, RecheckOutcome::KeptOpen);
        assert_eq!(
            moved,
            [Relocation {
                id: FindingId::new("off-by-one"),
                file: "util.py".to_owned(),
                line: 4
            }]
        );
        assert!(resolutions.is_empty());
    }

    #[test]
    fn a_dropped_report_again_is_an_answer_unless_it_quoted_what_is_gone() {
        let dropped = |stage| DroppedFinding {
            stage,
            id: "off-by-one".to_owned(),
            title: "Off by one".to_owned(),
            location: "stats.py:3".to_owned(),
            reason: "a reason".to_owned(),
        };
        let mut resolutions = BTreeMap::new();
        // Dropped below the threshold: reported again, so an answer; dropped by grounding: it
        // quoted the code that is gone, so no answer.
        for (stage, outcome) in [
            (ReportStage::Threshold, RecheckOutcome::KeptOpen),
            (ReportStage::Grounding, RecheckOutcome::Resolved),
        ] {
            let (rechecked, _) = settle(
                &[touched(gone())],
                &BTreeMap::new(),
                (&[], &[dropped(stage)]),
                &mut resolutions,
                None,
                (None, HEAD),
            );
            assert_eq!(rechecked[0].outcome, outcome, "{stage:?}");
            if outcome == RecheckOutcome::KeptOpen {
                assert!(resolutions.is_empty());
            }
        }
    }
}
