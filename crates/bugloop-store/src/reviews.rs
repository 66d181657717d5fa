//! Other people's reviews of local change requests and check results on commits (migration
//! 0005): what GitHub keeps as pull request reviews and check runs, recorded here by the
//! repository's owner (`bugloop review-decision`, `bugloop checks`) so that the whole solve loop
//! (a reviewer asking for changes, a failing check) can run without a forge.

use jiff::Timestamp;
use serde::Serialize;

use crate::{Store, StoreError, WRITE, query_error};

/// A reviewer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ReviewDecision {
    Approved,
    ChangesRequested,
    /// A review that only comments: it changes no earlier decision.
    Commented,
}

impl ReviewDecision {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A recorded review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ItemReview {
    pub id: i64,
    pub reviewer: String,
    pub decision: ReviewDecision,
    pub body: String,
    /// The head the review was given on.
    pub commit: String,
    pub at: Timestamp,
}

/// A check's state on a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum CheckState {
    Pending,
    Passed,
    Failed,
}

impl CheckState {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A check result on a commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub state: CheckState,
    /// What it said (a failing command's last line).
    pub detail: String,
    pub at: Timestamp,
}

impl Store {
    /// Records `reviewer`'s review of change request `item` at `commit`; the reviewer is
    /// recorded as one who may change the repository.
    pub async fn add_review(
        &self,
        item: i64,
        reviewer: &str,
        state: ReviewDecision,
        body: &str,
        commit: &str,
    ) -> Result<ItemReview, StoreError> {
        let found = self.item(item).await?;
        if found.kind != crate::ItemKind::Change {
            return Err(StoreError::Refused(format!(
                "#{item} is an issue; only a change request is reviewed"
            )));
        }
        let at = Timestamp::now();
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("add a review"))?;
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO item_reviews (item, reviewer, state, body, commit_sha, at) \
             VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(item)
        .bind(reviewer)
        .bind(state.as_str())
        .bind(body)
        .bind(commit)
        .bind(at.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(query_error("add a review"))?;
        sqlx::query("INSERT OR IGNORE INTO reviewers (name, added_at) VALUES (?, ?)")
            .bind(reviewer)
            .bind(at.to_string())
            .execute(&mut *tx)
            .await
            .map_err(query_error("add a reviewer"))?;
        tx.commit().await.map_err(query_error("add a review"))?;
        Ok(ItemReview {
            id,
            reviewer: reviewer.to_owned(),
            decision: state,
            body: body.to_owned(),
            commit: commit.to_owned(),
            at,
        })
    }

    /// The reviews of `item`, oldest first.
    pub async fn reviews(&self, item: i64) -> Result<Vec<ItemReview>, StoreError> {
        self.read_rows(
            "read reviews",
            "item_reviews",
            sqlx::query(
                "SELECT id, reviewer, state, body, commit_sha, at FROM item_reviews \
                 WHERE item = ? ORDER BY id",
            )
            .bind(item),
            |row| {
                Ok(ItemReview {
                    id: row.get("id")?,
                    reviewer: row.get("reviewer")?,
                    decision: row.parsed("state")?,
                    body: row.get("body")?,
                    commit: row.get("commit_sha")?,
                    at: row.parsed("at")?,
                })
            },
        )
        .await
    }

    /// Records `name` as a reviewer who may change the repository (a line comment entered for
    /// them).
    pub async fn add_reviewer(&self, name: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT OR IGNORE INTO reviewers (name, added_at) VALUES (?, ?)")
            .bind(name)
            .bind(Timestamp::now().to_string())
            .execute(&self.pool)
            .await
            .map_err(query_error("add a reviewer"))?;
        Ok(())
    }

    /// Whether `name` is a reviewer the owner recorded.
    pub async fn is_reviewer(&self, name: &str) -> Result<bool, StoreError> {
        let found: Option<String> = sqlx::query_scalar("SELECT name FROM reviewers WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(query_error("read reviewers"))?;
        Ok(found.is_some())
    }

    /// Records the result of check `name` on `commit`, replacing an earlier one.
    pub async fn set_check(
        &self,
        commit: &str,
        name: &str,
        state: CheckState,
        detail: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO checks (commit_sha, name, state, detail, at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (commit_sha, name) DO UPDATE SET state = excluded.state, \
             detail = excluded.detail, at = excluded.at",
        )
        .bind(commit)
        .bind(name)
        .bind(state.as_str())
        .bind(detail)
        .bind(Timestamp::now().to_string())
        .execute(&self.pool)
        .await
        .map_err(query_error("record a check"))?;
        Ok(())
    }

    /// The checks recorded on `commit`, by name.
    pub async fn checks(&self, commit: &str) -> Result<Vec<CheckResult>, StoreError> {
        self.read_rows(
            "read checks",
            "checks",
            sqlx::query(
                "SELECT name, state, detail, at FROM checks WHERE commit_sha = ? ORDER BY name",
            )
            .bind(commit),
            |row| {
                Ok(CheckResult {
                    name: row.get("name")?,
                    state: row.parsed("state")?,
                    detail: row.get("detail")?,
                    at: row.parsed("at")?,
                })
            },
        )
        .await
    }
}
