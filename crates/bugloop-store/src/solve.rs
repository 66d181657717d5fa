//! The solve pipeline's transitions per issue (migration 0004). The store keeps states as the
//! pipeline names them and checks only what makes the record trustworthy: an issue exists, and a
//! transition starts from the state the record ends in (so two processes cannot both move an
//! issue from the same state: the second is refused).

use jiff::Timestamp;
use serde::Serialize;

use crate::{Store, StoreError, WRITE, query_error};

/// One recorded transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    /// 1 for the first transition of the issue.
    pub seq: i64,
    /// `None` for the first.
    pub from: Option<String>,
    pub to: String,
    pub reason: String,
    /// JSON the pipeline resumes from.
    pub detail: String,
    pub at: Timestamp,
}

impl Store {
    /// The transitions of `issue`, oldest first.
    pub async fn solve_history(&self, issue: i64) -> Result<Vec<Transition>, StoreError> {
        self.read_rows(
            "read the solve record",
            "solve_transitions",
            sqlx::query(
                "SELECT seq, from_state, to_state, reason, detail, at FROM solve_transitions \
                 WHERE issue = ? ORDER BY seq",
            )
            .bind(issue),
            |row| {
                Ok(Transition {
                    seq: row.get("seq")?,
                    from: row.get("from_state")?,
                    to: row.get("to_state")?,
                    reason: row.get("reason")?,
                    detail: row.get("detail")?,
                    at: row.parsed("at")?,
                })
            },
        )
        .await
    }

    /// Records `from -> to` for `issue`, refused unless the record ends in `from` (`None`: has no
    /// transition yet). One transaction: the check and the write cannot be split by another
    /// process.
    pub async fn record_transition(
        &self,
        issue: i64,
        from: Option<&str>,
        to: &str,
        reason: &str,
        detail: &str,
    ) -> Result<Transition, StoreError> {
        self.item(issue).await?;
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("record a transition"))?;
        // A write first, so the transaction holds the write lock before it reads.
        sqlx::query("UPDATE items SET updated_at = ? WHERE number = ?")
            .bind(Timestamp::now().to_string())
            .bind(issue)
            .execute(&mut *tx)
            .await
            .map_err(query_error("record a transition"))?;
        let last: Option<(i64, String)> = sqlx::query_as(
            "SELECT seq, to_state FROM solve_transitions WHERE issue = ? \
             ORDER BY seq DESC LIMIT 1",
        )
        .bind(issue)
        .fetch_optional(&mut *tx)
        .await
        .map_err(query_error("read the solve record"))?;
        let current = last.as_ref().map(|(_, state)| state.as_str());
        if current != from {
            return Err(StoreError::Refused(format!(
                "issue #{issue} is {} now, not {}: another run moved it",
                current.unwrap_or("not started"),
                from.unwrap_or("not started")
            )));
        }
        let seq = last.map_or(1, |(seq, _)| seq + 1);
        let at = Timestamp::now();
        sqlx::query(
            "INSERT INTO solve_transitions (issue, seq, from_state, to_state, reason, detail, at) \
             VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(issue)
        .bind(seq)
        .bind(from)
        .bind(to)
        .bind(reason)
        .bind(detail)
        .bind(at.to_string())
        .execute(&mut *tx)
        .await
        .map_err(query_error("record a transition"))?;
        tx.commit()
            .await
            .map_err(query_error("record a transition"))?;
        Ok(Transition {
            seq,
            from: from.map(str::to_owned),
            to: to.to_owned(),
            reason: reason.to_owned(),
            detail: detail.to_owned(),
            at,
        })
    }

    /// The issues with a solve record, and the state each ends in, by number.
    pub async fn solve_states(&self) -> Result<Vec<(i64, String)>, StoreError> {
        sqlx::query_as(
            "SELECT t.issue, t.to_state FROM solve_transitions t \
             WHERE t.seq = (SELECT MAX(seq) FROM solve_transitions WHERE issue = t.issue) \
             ORDER BY t.issue",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("read solve states"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::{NewIssue, Store, StoreError};

    #[tokio::test]
    async fn transitions_are_checked_against_the_record() {
        let store = Store::in_memory().await.unwrap();
        let issue = store
            .file_issue(NewIssue {
                title: "crash".to_owned(),
                ..NewIssue::default()
            })
            .await
            .unwrap();
        let first = store
            .record_transition(issue.number, None, "OPEN", "filed", "{}")
            .await
            .unwrap();
        assert_eq!(first.seq, 1);
        store
            .record_transition(issue.number, Some("OPEN"), "ASSIGNED", "taken", "{}")
            .await
            .unwrap();
        // A second run that read OPEN too is refused.
        let late = store
            .record_transition(issue.number, Some("OPEN"), "ASSIGNED", "taken", "{}")
            .await;
        assert!(
            matches!(&late, Err(StoreError::Refused(m)) if m.contains("ASSIGNED now")),
            "{late:?}"
        );
        let history = store.solve_history(issue.number).await.unwrap();
        assert_eq!(
            history
                .iter()
                .map(|t| (t.from.clone(), t.to.clone()))
                .collect::<Vec<_>>(),
            [
                (None, "OPEN".to_owned()),
                (Some("OPEN".to_owned()), "ASSIGNED".to_owned())
            ]
        );
        assert_eq!(
            store.solve_states().await.unwrap(),
            [(issue.number, "ASSIGNED".to_owned())]
        );
        assert!(matches!(
            store
                .record_transition(99, None, "OPEN", "filed", "{}")
                .await,
            Err(StoreError::NotFound(_))
        ));
    }
}
