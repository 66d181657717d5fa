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
use bugloop_report::review::{PublishedFinding, ReportStage, StageChange};
use std::collections::BTreeSet;

use super::ReviewRequest;
use super::brief::Brief;
use super::conversation::Conversation;
use super::filtering::Filtered;
use super::increment::Shown;
use super::publishing::Published;
use super::{filtering, prove, publishing};
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
        let published = publishing::publish_early(
            self.env,
            self.request,
            self.conversation,
            publish,
            &head,
            &notes,
        )
        .await;
        match published {
            Ok((published, added)) => {
                state
                    .findings
                    .extend(published.iter().map(|p| (call, p.finding.clone())));
                state.published.extend(published);
                state.added.extend(added);
            }
            Err(error) => state.errors.push(format!(
                "publishing part {call}'s findings as it ended: {error} (they are published with the review's end)"
            )),
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
    /// What the review's end says of the findings published early: what failed, what grounding
    /// corrected in them, and when each was published (of `parts`).
    pub fn note_in(&mut self, filtered: &mut Filtered<'_>, parts: usize) {
        filtered.errors.append(&mut self.errors);
        filtered
            .changes
            .extend(self.published.iter().filter_map(|p| {
                p.note.as_ref().map(|note| StageChange {
                    stage: ReportStage::Grounding,
                    id: p.finding.id.as_str().to_owned(),
                    note: note.clone(),
                })
            }));
        filtered
            .changes
            .extend(self.findings.iter().map(|(call, finding)| StageChange {
                stage: ReportStage::Reported,
                id: finding.id.as_str().to_owned(),
                note: format!("published when part {call} of {parts} ended"),
            }));
    }

    /// The findings published early among the review's, highest score first.
    pub fn add_to(self, published: &mut Published) {
        published.findings.extend(self.published);
        published
            .findings
            .sort_by_key(|p| std::cmp::Reverse(p.finding.score));
        published.added.extend(self.added);
    }
}
