//! Reviews of pull requests whose authors cannot write to the repository: anyone may open one
//! on a public repository (twelve at once), and each review spends the operator's model. They
//! are reviewed within `outsiders.reviews_per_hour` over the repository and
//! `outsiders.reviews_per_author_per_hour` per author, counting every review (a push to a pull
//! request reviewed before is another), from bugloop's own summaries on the forge: a hidden last
//! line names the author, the pull request and the times of its reviews in the last hour, so
//! every run and server counts the same. The rest are said once on the pull request, and
//! reviewed on a later push once the hour allows. Whether the author may write is asked of the forge, never read
//! from the event.

use bugloop_report::summary::SUMMARY_TAG;

use crate::{App, AppError, PullRequestRun};

const MARKER_PREFIX: &str = "<!-- bugloop:outsider-review author=";
const DEFERRED_MARKER: &str = "<!-- bugloop:outsider-review-deferred -->";

/// What the review of this pull request may do.
pub(crate) enum OutsiderReview {
    /// Not a pull request, or its author may write: reviewed as always.
    Insider,
    /// Reviewed, its summary ending in this line (so later runs count it).
    Within { footer: String },
    /// Not reviewed now: why.
    Over { reason: String },
}

/// The summary's last line for `author`'s pull request `number`, reviewed at `runs` (Unix
/// seconds): a GitHub login is letters, digits and hyphens (`[bot]` for an App), and anything
/// else is left out.
fn footer(author: &str, number: u64, runs: &[i64]) -> String {
    let login: String = author
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '[' | ']'))
        .collect();
    let runs: Vec<String> = runs.iter().map(i64::to_string).collect();
    format!(
        "{MARKER_PREFIX}{login} pr={number} runs={} -->",
        runs.join(",")
    )
}

/// What a summary of bugloop's counts (author, pull request, review times), read only from its
/// last line (the text above quotes the model), or the line before its signature.
fn counted(body: &str) -> Option<(String, u64, Vec<i64>)> {
    if !body.starts_with(SUMMARY_TAG) {
        return None;
    }
    // The signature a signing forge appends comes after it.
    let record = body
        .trim_end()
        .lines()
        .rev()
        .find(|line| !line.starts_with("<!-- bugloop:sig "))?
        .strip_prefix(MARKER_PREFIX)?
        .strip_suffix(" -->")?;
    let (login, rest) = record.split_once(" pr=")?;
    let (number, runs) = rest.split_once(" runs=")?;
    let runs = runs
        .split(',')
        .map(str::parse)
        .collect::<Result<Vec<i64>, _>>()
        .ok()?;
    Some((login.to_lowercase(), number.parse().ok()?, runs))
}

impl App {
    /// Whether this run's pull request, when its author cannot write, is within the outsiders'
    /// review budget.
    pub(crate) async fn outsider_review(&self) -> Result<OutsiderReview, AppError> {
        let Some(pull) = &self.pull_request else {
            return Ok(OutsiderReview::Insider);
        };
        let Some(author) = self.outsider_author(pull).await? else {
            return Ok(OutsiderReview::Insider);
        };
        let limits = &self.settings.config.outsiders;
        let since = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_hours(1))
            .unwrap_or_else(|_| jiff::Timestamp::now());
        let written = match self.forge.own_comments_since(since).await {
            Ok(written) => written,
            // Too busy an hour to count in: not reviewed rather than reviewed uncounted.
            Err(bugloop_forge::ForgeError::TooLarge(what)) => {
                return Ok(OutsiderReview::Over {
                    reason: format!(
                        "{author} cannot write to this repository, and bugloop cannot count its \
                         reviews in the last hour ({what})"
                    ),
                });
            }
            Err(error) => return Err(error.into()),
        };
        // Every review in the last hour: this pull request's from its own summary, the others'
        // from the summaries bugloop wrote in the hour.
        let now = jiff::Timestamp::now().as_second();
        let hour_ago = now - 3600;
        let own = self.forge.comments(&pull.key).await?;
        let mine: Vec<i64> = own
            .iter()
            .filter(|c| c.by_bugloop)
            .filter_map(|c| counted(&c.body))
            .filter(|(_, number, _)| *number == pull.number)
            .flat_map(|(_, _, runs)| runs)
            .filter(|t| *t >= hour_ago)
            .collect();
        let others: Vec<(String, i64)> = written
            .iter()
            .filter(|c| c.by_bugloop)
            .filter_map(|c| counted(&c.body))
            .filter(|(_, number, _)| *number != pull.number)
            .flat_map(|(login, _, runs)| runs.into_iter().map(move |t| (login.clone(), t)))
            .filter(|(_, t)| *t >= hour_ago)
            .collect();
        let all = mine.len() + others.len();
        let by_author = mine.len()
            + others
                .iter()
                .filter(|(login, _)| login.eq_ignore_ascii_case(&author))
                .count();
        let over = |count: usize, limit: u32| count >= usize::try_from(limit).unwrap_or(usize::MAX);
        let reason = if over(all, limits.reviews_per_hour) {
            format!(
                "{author} cannot write to this repository, and bugloop ran {all} review(s) of pull \
                 requests by people without write access here in the last hour \
                 (outsiders.reviews_per_hour: {})",
                limits.reviews_per_hour
            )
        } else if over(by_author, limits.reviews_per_author_per_hour) {
            format!(
                "bugloop ran {by_author} review(s) of pull requests by {author}, who cannot write \
                 to this repository, in the last hour (outsiders.reviews_per_author_per_hour: {})",
                limits.reviews_per_author_per_hour
            )
        } else {
            let mut runs = mine;
            runs.push(now);
            return Ok(OutsiderReview::Within {
                footer: footer(&author, pull.number, &runs),
            });
        };
        Ok(OutsiderReview::Over { reason })
    }

    /// The pull request's author, when the forge names one who cannot write to the repository.
    async fn outsider_author(&self, pull: &PullRequestRun) -> Result<Option<String>, AppError> {
        let author = match &pull.author {
            Some(author) => author.clone(),
            None => match self.forge.change_author(&pull.key).await? {
                Some(author) => author,
                None => return Ok(None),
            },
        };
        let writer = self.forge.permission(&author).await?.may_modify_files();
        Ok((!writer).then_some(author))
    }

    /// Says once on the pull request that it was not reviewed and why (a run that may not
    /// write says nothing).
    pub(crate) async fn say_review_deferred(&self, reason: &str) -> Result<(), AppError> {
        let Some(pull) = &self.pull_request else {
            return Ok(());
        };
        if pull.read_only.is_some() {
            return Ok(());
        }
        let comments = self.forge.comments(&pull.key).await?;
        if comments
            .iter()
            .any(|c| c.by_bugloop && c.body.contains(DEFERRED_MARKER))
        {
            return Ok(());
        }
        let body = format!(
            "bugloop did not review this pull request: {}. It reviews it on a later push once \
             the hour allows (the operator sets these limits).\n\n{DEFERRED_MARKER}",
            bugloop_domain::markdown::quiet(reason)
        );
        self.forge.add_comment(&pull.key, &body, None).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_read_only_from_the_last_line_of_a_summary() {
        let line = footer("Mallory", 12, &[100, 200]);
        assert_eq!(
            line,
            "<!-- bugloop:outsider-review author=Mallory pr=12 runs=100,200 -->"
        );
        let summary = format!("{SUMMARY_TAG}\ntext\n{line}\n");
        let read = Some(("mallory".to_owned(), 12, vec![100, 200]));
        assert_eq!(counted(&summary), read);
        let signed = format!("{summary}<!-- bugloop:sig v1 00 -->\n");
        assert_eq!(counted(&signed), read);
        // Quoted above the last line, or not in a summary: not counted.
        assert_eq!(counted(&format!("{SUMMARY_TAG}\n{line}\nmore\n")), None);
        assert_eq!(counted(&format!("text\n{line}")), None);
        assert_eq!(
            footer("a b\n-->x", 1, &[5]),
            "<!-- bugloop:outsider-review author=ab--x pr=1 runs=5 -->"
        );
    }
}
