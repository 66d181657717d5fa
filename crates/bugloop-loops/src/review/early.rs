//! Findings published as their part of a large change ends, not when the whole review does: on a
//! pull request the first comments come while the other parts are still with the model. Each
//! part's findings go through the review's own grounding and filters ([`filtering::early`]),
//! compared with the conversation and with what earlier parts published, under what is left of
//! the comment limit; parts that end together take their turns. Left to the review's end are:
//! findings a proof may change (`review.prove`), ids another part also used (the end renames
//! them in part order), rediscoveries, resolutions and the summary. At the end the findings
//! published early count as the conversation's: a later report of the same problem is that
//! finding, and no comment is made twice.

use bugloop_domain::finding::{Finding, FindingId};
use bugloop_report::review::{CommentAction, PublishedFinding, ReportStage, StageChange};
use std::collections::BTreeSet;

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::Conversation;
use super::filtering::Filtered;
use super::increment::Shown;
use super::publishing::Published;
use super::{analysis, filtering, prove, publishing};
use crate::ProgressEvent;
use crate::env::LoopEnv;

/// Publishes each part's findings as the part ends.
pub(super) struct EarlyPublisher<'r, 'e> {
    env: &'r LoopEnv<'e>,
    request: &'r ReviewRequest,
    conversation: &'r Conversation,
    brief: &'r Brief,
    shown: &'r Shown,
    state: tokio::sync::Mutex<Early>,
}

/// What was published early.
#[derive(Debug, Default)]
pub(super) struct Early {
    /// Each finding as published, with the part it came from.
    pub findings: Vec<(usize, Finding)>,
    pub published: Vec<PublishedFinding>,
    /// The ids of the comments added.
    pub added: Vec<String>,
    /// What failed (the findings concerned are then published at the end).
    pub errors: Vec<String>,
    /// Ids the parts that ended used.
    seen: BTreeSet<FindingId>,
}

impl<'r, 'e> EarlyPublisher<'r, 'e> {
    /// A publisher for a review in several parts that publishes (not a dry run, not a converge
    /// auditor's clean room); otherwise none: one part ends with the review.
    pub fn for_review(
        env: &'r LoopEnv<'e>,
        request: &'r ReviewRequest,
        conversation: &'r Conversation,
        brief: &'r Brief,
        shown: &'r Shown,
    ) -> Option<Self> {
        let worth = env.forge.publishes() && !request.clean_room && brief.plan.batches.len() > 1;
        worth.then(|| EarlyPublisher {
            env,
            request,
            conversation,
            brief,
            shown,
            state: tokio::sync::Mutex::default(),
        })
    }

    /// Part `call` ended with `findings` (as its session reported them).
    pub async fn part_done(&self, call: usize, findings: &[Finding]) {
        let mut state = self.state.lock().await;
        let once: Vec<Finding> = findings
            .iter()
            .filter(|f| {
                !state.seen.contains(&f.id) && findings.iter().filter(|g| g.id == f.id).count() == 1
            })
            .cloned()
            .collect();
        state.seen.extend(findings.iter().map(|f| f.id.clone()));
        let reported: BTreeSet<FindingId> = once.iter().map(|f| f.id.clone()).collect();
        let already: Vec<Finding> = state.findings.iter().map(|(_, f)| f.clone()).collect();
        let (publish, head, notes) = filtering::early(
            self.request,
            self.conversation,
            self.brief,
            self.shown,
            once,
            &already,
        );
        // Only what the part reported: a finding the filters made of several (an elevation of a
        // file's smaller ones) is made again, of all of them, at the end.
        let publish: Vec<Finding> = publish
            .into_iter()
            .filter(|f| reported.contains(&f.id) && !self.may_be_proved(f))
            .collect();
        let outcome = publishing::publish_early(
            self.env,
            self.request,
            self.conversation,
            publish,
            &head,
            &notes,
        )
        .await;
        if !outcome.published.is_empty() {
            self.env.progress.event(ProgressEvent::PartPublished {
                call,
                findings: outcome.published.len(),
            });
        }
        state
            .findings
            .extend(outcome.published.iter().map(|p| (call, p.finding.clone())));
        state.published.extend(outcome.published);
        state.added.extend(outcome.added);
        if let Some(error) = outcome.error {
            state.errors.push(format!(
                "publishing part {call}'s findings as it ended: {error} (the rest were published with the review's end)"
            ));
        }
    }

    /// A finding the review's proofs may lower or drop is published after them.
    fn may_be_proved(&self, finding: &Finding) -> bool {
        let config = self.env.config();
        prove::proving_is_on(config) && finding.score.get() >= config.review.prove.min_score
    }

    /// The ids published early, by part, once every part has ended.
    pub async fn published_ids(&self) -> Vec<(usize, FindingId)> {
        let state = self.state.lock().await;
        state
            .findings
            .iter()
            .map(|(call, f)| (*call, f.id.clone()))
            .collect()
    }

    pub fn finish(self) -> Early {
        self.state.into_inner()
    }
}

impl Early {
    /// Whether anything was written (or tried) on the conversation.
    pub fn wrote(&self) -> bool {
        !self.published.is_empty() || !self.errors.is_empty()
    }

    /// What the review's end says of the findings published early: what grounding corrected in
    /// them, and when each was published (of `parts`).
    pub fn note_in(&self, filtered: &mut Filtered<'_>, parts: usize) {
        filtered
            .record
            .changes
            .extend(self.published.iter().filter_map(|p| {
                p.note.as_ref().map(|note| StageChange {
                    stage: ReportStage::Grounding,
                    id: p.finding.id.as_str().to_owned(),
                    note: note.clone(),
                })
            }));
        filtered
            .record
            .changes
            .extend(self.findings.iter().map(|(call, finding)| StageChange {
                stage: ReportStage::Reported,
                id: finding.id.as_str().to_owned(),
                note: format!("published when part {call} of {parts} ended"),
            }));
    }

    /// The findings published early among the review's, highest score first: one the end
    /// published again (a stronger report of it, or an analyzer's hit on its line) is the end's,
    /// and was added by this run. What failed while publishing early, and comments published
    /// before the change's head moved, are said.
    pub fn add_to(self, published: &mut Published) {
        let early_ids: BTreeSet<&FindingId> = self.findings.iter().map(|(_, f)| &f.id).collect();
        for again in &mut published.findings {
            if early_ids.contains(&again.finding.id)
                && matches!(
                    again.action,
                    CommentAction::Updated | CommentAction::Unchanged
                )
            {
                again.action = CommentAction::Added;
            }
        }
        let ended: BTreeSet<FindingId> = published
            .findings
            .iter()
            .map(|p| p.finding.id.clone())
            .collect();
        if published.head_moved && !self.published.is_empty() {
            published.problems.push(format!(
                "{} finding(s) had been published as their parts ended, before the head moved",
                self.published.len()
            ));
        }
        published.findings.extend(
            self.published
                .into_iter()
                .filter(|p| !ended.contains(&p.finding.id)),
        );
        published
            .findings
            .sort_by_key(|p| std::cmp::Reverse(p.finding.score));
        published.added.extend(self.added);
        published.problems.extend(self.errors);
    }

    /// The analyzers' hits merged with the model's findings (`analysis::merge`), the findings
    /// published early among them: one a hit is merged into comes back under its early id with
    /// the hit's tool and score (the end updates its comment); the others are left out, already
    /// published.
    pub fn merge_hits(&self, model: Vec<Finding>, hits: Vec<Finding>) -> Vec<Finding> {
        let first = model.len();
        let mut all = model;
        all.extend(self.findings.iter().map(|(_, f)| f.clone()));
        let after = first + self.findings.len();
        // `merge` keeps the model's findings in order and adds the hits it did not merge after.
        analysis::merge(all, hits)
            .into_iter()
            .enumerate()
            .filter_map(|(index, mut finding)| {
                if !(first..after).contains(&index) {
                    return Some(finding);
                }
                let early = &self.findings[index - first].1;
                (finding.source.is_some() && early.source.is_none()).then(|| {
                    finding.id = early.id.clone();
                    finding
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::review::test_findings::{finding, s608};

    #[test]
    fn a_hit_on_an_early_findings_line_comes_back_under_its_id_and_the_rest_stay_out() {
        let early = Early {
            findings: vec![
                (1, finding("sql", 9, None)),
                (1, finding("other", 30, None)),
            ],
            ..Early::default()
        };
        let merged = early.merge_hits(
            vec![finding("later", 50, None)],
            vec![
                finding("ruff-S608-app.py-9", 9, Some(s608("ruff"))),
                finding("ruff-S608-app.py-70", 70, Some(s608("ruff"))),
            ],
        );
        let ids: Vec<&str> = merged.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["later", "sql", "ruff-S608-app.py-70"]);
        assert_eq!(merged[1].source.as_ref().unwrap().tool, "ruff");
    }
}
