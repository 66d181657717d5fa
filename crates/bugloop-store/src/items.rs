//! The local forge's issues and change requests: what the solve pipeline files, opens and
//! moves along, kept offline as GitHub keeps issues and pull requests. Issues and change
//! requests share one numbering (as on GitHub). An issue filed from error reports carries the
//! reports' fingerprint, so a repeat is counted on it instead of filing a second one. An item's
//! conversation is the comments of its change key ([`Item::conversation`]).

use jiff::Timestamp;
use serde::Serialize;
use sqlx::sqlite::SqliteRow;

use crate::columns::Columns;
use crate::{Store, StoreError, WRITE, found, query_error};

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ItemKind {
    Issue,
    /// A change request (a pull request on GitHub): a branch to go into a base.
    Change,
}

/// Where an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum ItemState {
    Open,
    Closed,
    /// A change request merged into its base.
    Merged,
}

impl ItemState {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An issue or a change request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    pub number: i64,
    pub kind: ItemKind,
    pub title: String,
    pub body: String,
    pub state: ItemState,
    pub author: String,
    pub labels: Vec<String>,
    /// Who it is assigned to, by name.
    pub assignees: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The error reports' fingerprint, for an issue filed from them.
    pub fingerprint: Option<String>,
    /// How many reports of the fingerprint came in.
    pub reports: i64,
    /// A change request's branch, base and draft flag, and the issue it closes.
    pub branch: Option<String>,
    pub base: Option<String>,
    pub draft: Option<bool>,
    pub closes: Option<i64>,
}

impl Item {
    /// The change key of the item's conversation: `issue:N` for an issue, the branch's key
    /// (`branch:NAME`, where the review loop writes) for a change request.
    pub fn conversation(&self) -> String {
        match (&self.kind, &self.branch) {
            (ItemKind::Change, Some(branch)) => format!("branch:{branch}"),
            _ => format!("issue:{}", self.number),
        }
    }
}

/// An issue to file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewIssue {
    pub title: String,
    pub body: String,
    pub author: String,
    pub labels: Vec<String>,
}

/// A change request to open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewChangeRequest {
    pub title: String,
    pub body: String,
    pub author: String,
    pub branch: String,
    pub base: String,
    pub draft: bool,
    pub closes: Option<i64>,
    pub labels: Vec<String>,
}

/// What reporting an error did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    pub issue: Item,
    /// Filed by this report (`false`: counted on the issue already filed for the fingerprint).
    pub filed: bool,
}

const COLUMNS: &str = "number, kind, title, body, state, author, created_at, updated_at, \
     fingerprint, reports, branch, base, draft, closes";

impl Store {
    /// Files an issue.
    pub async fn file_issue(&self, new: NewIssue) -> Result<Item, StoreError> {
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("file an issue"))?;
        let number = insert_issue(&mut tx, &new, None).await?;
        tx.commit().await.map_err(query_error("file an issue"))?;
        self.item(number).await
    }

    /// An error report: counted on the issue filed for `fingerprint`, or filed as `new` (with
    /// the fingerprint) when there is none. One transaction, so two reports at once file one
    /// issue.
    pub async fn report(&self, fingerprint: &str, new: NewIssue) -> Result<Reported, StoreError> {
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("record a report"))?;
        // A write first, so the transaction holds the write lock before it reads.
        let counted = sqlx::query(
            "UPDATE items SET reports = reports + 1, updated_at = ? \
             WHERE kind = 'issue' AND fingerprint = ?",
        )
        .bind(Timestamp::now().to_string())
        .bind(fingerprint)
        .execute(&mut *tx)
        .await
        .map_err(query_error("count a report"))?
        .rows_affected();
        let (number, filed) = if counted == 1 {
            let number: i64 = sqlx::query_scalar(
                "SELECT number FROM items WHERE kind = 'issue' AND fingerprint = ?",
            )
            .bind(fingerprint)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("read a reported issue"))?;
            (number, false)
        } else {
            (insert_issue(&mut tx, &new, Some(fingerprint)).await?, true)
        };
        // This report's own count, read under the write lock: reports counted at the same
        // time each get theirs, never a later one's.
        let reports: i64 = sqlx::query_scalar("SELECT reports FROM items WHERE number = ?")
            .bind(number)
            .fetch_one(&mut *tx)
            .await
            .map_err(query_error("read a reported issue"))?;
        tx.commit().await.map_err(query_error("record a report"))?;
        let mut issue = self.item(number).await?;
        issue.reports = reports;
        Ok(Reported { issue, filed })
    }

    /// Opens a change request for a branch (one open change request per branch).
    pub async fn open_change_request(&self, new: NewChangeRequest) -> Result<Item, StoreError> {
        if let Some(closes) = new.closes {
            let closed = self.item(closes).await?;
            if closed.kind != ItemKind::Issue {
                return Err(StoreError::Refused(format!(
                    "#{closes} is a change request, not an issue a change request can close"
                )));
            }
        }
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("open a change request"))?;
        let now = Timestamp::now().to_string();
        let number: i64 = sqlx::query_scalar(
            "INSERT INTO items (kind, title, body, state, author, created_at, updated_at, \
             branch, base, draft, closes) \
             VALUES ('change', ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?) RETURNING number",
        )
        .bind(&new.title)
        .bind(&new.body)
        .bind(&new.author)
        .bind(&now)
        .bind(&now)
        .bind(&new.branch)
        .bind(&new.base)
        .bind(new.draft)
        .bind(new.closes)
        .fetch_one(&mut *tx)
        .await
        .map_err(|error| match &error {
            sqlx::Error::Database(db) if db.is_unique_violation() => StoreError::Refused(format!(
                "branch {} already has an open change request",
                new.branch
            )),
            _ => StoreError::Query {
                what: "open a change request",
                source: error,
            },
        })?;
        add_labels(&mut tx, number, &new.labels).await?;
        tx.commit()
            .await
            .map_err(query_error("open a change request"))?;
        self.item(number).await
    }

    /// One item by number.
    pub async fn item(&self, number: i64) -> Result<Item, StoreError> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM items WHERE number = ?"))
            .bind(number)
            .fetch_optional(&self.pool)
            .await
            .map_err(query_error("read an item"))?
            .ok_or_else(|| StoreError::NotFound(format!("no issue or change request #{number}")))?;
        let labels = self.labels(number).await?;
        let mut item = self.decode_item(&row, labels)?;
        item.assignees = self.assignees(number).await?;
        Ok(item)
    }

    /// Items of `kind`, oldest first; only open ones when `open_only`.
    pub async fn items(&self, kind: ItemKind, open_only: bool) -> Result<Vec<Item>, StoreError> {
        let kind_text: &str = kind.into();
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM items WHERE kind = ? AND (? = 0 OR state = 'open') \
             ORDER BY number"
        ))
        .bind(kind_text)
        .bind(open_only)
        .fetch_all(&self.pool)
        .await
        .map_err(query_error("list items"))?;
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let number: i64 = Columns::new(self, "items", row).get("number")?;
            let labels = self.labels(number).await?;
            let mut item = self.decode_item(row, labels)?;
            item.assignees = self.assignees(number).await?;
            items.push(item);
        }
        Ok(items)
    }

    /// The open change request of `branch`, if any.
    pub async fn change_request_of(&self, branch: &str) -> Result<Option<Item>, StoreError> {
        let number: Option<i64> = sqlx::query_scalar(
            "SELECT number FROM items WHERE kind = 'change' AND state = 'open' AND branch = ?",
        )
        .bind(branch)
        .fetch_optional(&self.pool)
        .await
        .map_err(query_error("find a change request"))?;
        match number {
            Some(number) => Ok(Some(self.item(number).await?)),
            None => Ok(None),
        }
    }

    /// Adds labels (those it has stay).
    pub async fn add_item_labels(&self, number: i64, labels: &[String]) -> Result<(), StoreError> {
        self.item(number).await?;
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("label"))?;
        add_labels(&mut tx, number, labels).await?;
        touch(&mut tx, number).await?;
        tx.commit().await.map_err(query_error("label"))
    }

    /// Removes a label; `false` when the item did not have it.
    pub async fn remove_item_label(&self, number: i64, label: &str) -> Result<bool, StoreError> {
        let removed = sqlx::query("DELETE FROM item_labels WHERE item = ? AND label = ?")
            .bind(number)
            .bind(label)
            .execute(&self.pool)
            .await
            .map_err(query_error("unlabel"))?
            .rows_affected();
        Ok(removed == 1)
    }

    /// Moves an item to `state` (a change request may be merged; an issue only opened or
    /// closed).
    pub async fn set_item_state(&self, number: i64, state: ItemState) -> Result<(), StoreError> {
        let item = self.item(number).await?;
        if item.kind == ItemKind::Issue && state == ItemState::Merged {
            return Err(StoreError::Refused(format!(
                "#{number} is an issue: it can be closed, not merged"
            )));
        }
        sqlx::query("UPDATE items SET state = ?, updated_at = ? WHERE number = ?")
            .bind(state.as_str())
            .bind(Timestamp::now().to_string())
            .bind(number)
            .execute(&self.pool)
            .await
            .map_err(query_error("set an item's state"))?;
        Ok(())
    }

    /// Marks a change request a draft, or ready for review.
    pub async fn set_draft(&self, number: i64, draft: bool) -> Result<(), StoreError> {
        let changed = sqlx::query(
            "UPDATE items SET draft = ?, updated_at = ? WHERE number = ? AND kind = 'change'",
        )
        .bind(draft)
        .bind(Timestamp::now().to_string())
        .bind(number)
        .execute(&self.pool)
        .await
        .map_err(query_error("set a draft flag"))?;
        found(&changed, || format!("no change request #{number}"))
    }

    /// Assigns `login` to the item (`assigned`), or takes it off; a no-op when it already is
    /// as asked.
    pub async fn set_item_assignee(
        &self,
        number: i64,
        login: &str,
        assigned: bool,
    ) -> Result<(), StoreError> {
        self.item(number).await?;
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("assign"))?;
        let query = if assigned {
            "INSERT INTO item_assignees (item, login) VALUES (?, ?) ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM item_assignees WHERE item = ? AND login = ?"
        };
        sqlx::query(query)
            .bind(number)
            .bind(login)
            .execute(&mut *tx)
            .await
            .map_err(query_error("assign"))?;
        touch(&mut tx, number).await?;
        tx.commit().await.map_err(query_error("assign"))
    }

    /// Replaces an item's body (a change request's description).
    pub async fn set_item_body(&self, number: i64, body: &str) -> Result<(), StoreError> {
        let changed = sqlx::query("UPDATE items SET body = ?, updated_at = ? WHERE number = ?")
            .bind(body)
            .bind(Timestamp::now().to_string())
            .bind(number)
            .execute(&self.pool)
            .await
            .map_err(query_error("set an item's body"))?;
        found(&changed, || format!("no issue or change request #{number}"))
    }

    async fn assignees(&self, number: i64) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar("SELECT login FROM item_assignees WHERE item = ? ORDER BY login")
            .bind(number)
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("read assignees"))
    }

    async fn labels(&self, number: i64) -> Result<Vec<String>, StoreError> {
        sqlx::query_scalar("SELECT label FROM item_labels WHERE item = ? ORDER BY label")
            .bind(number)
            .fetch_all(&self.pool)
            .await
            .map_err(query_error("read labels"))
    }

    fn decode_item(&self, row: &SqliteRow, labels: Vec<String>) -> Result<Item, StoreError> {
        let row = Columns::new(self, "items", row);
        Ok(Item {
            number: row.get("number")?,
            kind: row.parsed("kind")?,
            title: row.get("title")?,
            body: row.get("body")?,
            state: row.parsed("state")?,
            author: row.get("author")?,
            labels,
            assignees: Vec::new(),
            created_at: row.parsed("created_at")?,
            updated_at: row.parsed("updated_at")?,
            fingerprint: row.get("fingerprint")?,
            reports: row.get("reports")?,
            branch: row.get("branch")?,
            base: row.get("base")?,
            draft: row.flag("draft")?,
            closes: row.get("closes")?,
        })
    }
}

async fn insert_issue(
    tx: &mut sqlx::SqliteConnection,
    new: &NewIssue,
    fingerprint: Option<&str>,
) -> Result<i64, StoreError> {
    let now = Timestamp::now().to_string();
    let number: i64 = sqlx::query_scalar(
        "INSERT INTO items (kind, title, body, state, author, created_at, updated_at, \
         fingerprint, reports) VALUES ('issue', ?, ?, 'open', ?, ?, ?, ?, ?) RETURNING number",
    )
    .bind(&new.title)
    .bind(&new.body)
    .bind(&new.author)
    .bind(&now)
    .bind(&now)
    .bind(fingerprint)
    .bind(i64::from(fingerprint.is_some()))
    .fetch_one(&mut *tx)
    .await
    .map_err(query_error("file an issue"))?;
    add_labels(tx, number, &new.labels).await?;
    Ok(number)
}

async fn add_labels(
    tx: &mut sqlx::SqliteConnection,
    number: i64,
    labels: &[String],
) -> Result<(), StoreError> {
    for label in labels {
        sqlx::query("INSERT INTO item_labels (item, label) VALUES (?, ?) ON CONFLICT DO NOTHING")
            .bind(number)
            .bind(label)
            .execute(&mut *tx)
            .await
            .map_err(query_error("label"))?;
    }
    Ok(())
}

async fn touch(tx: &mut sqlx::SqliteConnection, number: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE items SET updated_at = ? WHERE number = ?")
        .bind(Timestamp::now().to_string())
        .bind(number)
        .execute(&mut *tx)
        .await
        .map_err(query_error("touch an item"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn issue(title: &str) -> NewIssue {
        NewIssue {
            title: title.to_owned(),
            body: "trace".to_owned(),
            author: "bugloop".to_owned(),
            labels: vec!["bug".to_owned(), "bug:autofix".to_owned()],
        }
    }

    #[tokio::test]
    async fn a_repeated_report_is_counted_on_its_issue_not_filed_twice() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store.db")).await.unwrap();
        let first = store.report("fp-1", issue("IndexError")).await.unwrap();
        assert!(first.filed);
        assert_eq!((first.issue.number, first.issue.reports), (1, 1));
        assert_eq!(first.issue.labels, ["bug", "bug:autofix"]);
        let again = store.report("fp-1", issue("IndexError")).await.unwrap();
        assert!(!again.filed);
        assert_eq!((again.issue.number, again.issue.reports), (1, 2));
        let other = store.report("fp-2", issue("KeyError")).await.unwrap();
        assert_eq!((other.issue.number, other.filed), (2, true));
        assert_eq!(store.items(ItemKind::Issue, true).await.unwrap().len(), 2);
        // Survives a reopen.
        drop(store);
        let store = Store::open(&dir.path().join("store.db")).await.unwrap();
        let third = store.report("fp-1", issue("IndexError")).await.unwrap();
        assert_eq!((third.issue.number, third.issue.reports), (1, 3));
    }

    /// Reports filed at once, each through its own store opened on a file that does not exist
    /// yet (processes started together): the store is made once, one issue is filed, and each
    /// report is told its own count.
    #[tokio::test]
    async fn reports_at_once_file_one_issue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let reports = (0..8).map(|_| async {
            let store = Store::open(&path).await.unwrap();
            store.report("fp", issue("boom")).await.unwrap()
        });
        let mut filed = 0;
        let mut counts = Vec::new();
        for reported in futures_util::future::join_all(reports).await {
            filed += usize::from(reported.filed);
            counts.push(reported.issue.reports);
        }
        assert_eq!(filed, 1);
        counts.sort_unstable();
        assert_eq!(counts, [1, 2, 3, 4, 5, 6, 7, 8]);
        let store = Store::open(&path).await.unwrap();
        let issues = store.items(ItemKind::Issue, false).await.unwrap();
        assert_eq!((issues.len(), issues[0].reports), (1, 8));
    }

    #[tokio::test]
    async fn change_requests_share_the_numbering_and_one_is_open_per_branch() {
        let store = Store::in_memory().await.unwrap();
        let filed = store.file_issue(issue("crash")).await.unwrap();
        let change = store
            .open_change_request(NewChangeRequest {
                title: "Fix the crash".to_owned(),
                body: "Closes #1".to_owned(),
                author: "bugloop".to_owned(),
                branch: "bugloop/1-crash".to_owned(),
                base: "main".to_owned(),
                draft: true,
                closes: Some(filed.number),
                labels: Vec::new(),
            })
            .await
            .unwrap();
        assert_eq!(change.number, 2);
        assert_eq!(
            (change.kind, change.draft, change.closes),
            (ItemKind::Change, Some(true), Some(1))
        );
        assert_eq!(change.conversation(), "branch:bugloop/1-crash");
        assert_eq!(filed.conversation(), "issue:1");
        let twice = store
            .open_change_request(NewChangeRequest {
                branch: "bugloop/1-crash".to_owned(),
                base: "main".to_owned(),
                ..NewChangeRequest::default()
            })
            .await
            .unwrap_err();
        assert!(
            twice
                .to_string()
                .contains("already has an open change request"),
            "{twice}"
        );
        // A change request cannot close a change request.
        let wrong = store
            .open_change_request(NewChangeRequest {
                branch: "other".to_owned(),
                base: "main".to_owned(),
                closes: Some(2),
                ..NewChangeRequest::default()
            })
            .await
            .unwrap_err();
        assert!(wrong.to_string().contains("not an issue"), "{wrong}");
        store.set_draft(2, false).await.unwrap();
        store.set_item_state(2, ItemState::Merged).await.unwrap();
        let merged = store.item(2).await.unwrap();
        assert_eq!(
            (merged.draft, merged.state),
            (Some(false), ItemState::Merged)
        );
        assert!(
            store
                .change_request_of("bugloop/1-crash")
                .await
                .unwrap()
                .is_none()
        );
        // An issue is closed, never merged.
        assert!(store.set_item_state(1, ItemState::Merged).await.is_err());
        assert!(store.set_draft(1, true).await.is_err());
        assert!(
            store
                .item(99)
                .await
                .unwrap_err()
                .to_string()
                .contains("#99")
        );
    }

    #[tokio::test]
    async fn labels_come_and_go() {
        let store = Store::in_memory().await.unwrap();
        let filed = store.file_issue(issue("crash")).await.unwrap();
        store
            .add_item_labels(
                filed.number,
                &["bugloop:solving".to_owned(), "bug".to_owned()],
            )
            .await
            .unwrap();
        assert_eq!(
            store.item(filed.number).await.unwrap().labels,
            ["bug", "bug:autofix", "bugloop:solving"]
        );
        assert!(
            store
                .remove_item_label(filed.number, "bugloop:solving")
                .await
                .unwrap()
        );
        assert!(
            !store
                .remove_item_label(filed.number, "bugloop:solving")
                .await
                .unwrap()
        );
        assert!(store.add_item_labels(42, &["x".to_owned()]).await.is_err());
    }
}
