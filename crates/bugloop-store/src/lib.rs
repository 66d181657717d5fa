//! bugloop's persistence: the local forge's conversation (comments, replies and thread flags per
//! change) and its issues and change requests (`items`), in an embedded SQLite database under
//! `.git/bugloop/`. The store keeps the
//! conversation only; review state is derived from it on every run, never stored beside it.
//!
//! Opening checks the file: a damaged or foreign file is reported as [`StoreError::Corrupt`] with
//! the way out ([`Store::quarantine`] moves it aside), never silently replaced, because the
//! conversation is the only record of the local findings.
//!
//! **Invariants:** it holds the conversation, never derived review state; a damaged file is
//! `StoreError::Corrupt` with the way out (`bugloop store reset`), never silently replaced; a value
//! that does not read back is `Corrupt` too, named by table, column and value (every reader decodes
//! through `columns.rs`); a newer schema is refused; writes are single transactions.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::{Row, SqlitePool};

/// Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_conversation.sql"),
    include_str!("../migrations/0002_written_by_bugloop.sql"),
    include_str!("../migrations/0003_issues_and_change_requests.sql"),
    include_str!("../migrations/0004_solve_transitions.sql"),
    include_str!("../migrations/0005_reviews_and_checks.sql"),
    include_str!("../migrations/0006_item_assignees.sql"),
];

mod columns;
mod items;
mod lease;
mod reviews;
mod solve;

use self::columns::Columns;
pub use self::items::{Item, ItemKind, ItemState, NewChangeRequest, NewIssue, Reported};
pub use self::lease::{Lease, LeaseError};
pub use self::reviews::{CheckResult, CheckState, ItemReview, ReviewDecision};
pub use self::solve::Transition;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error(
        "cannot open the store {path}: {} is not a directory; move it aside (bugloop keeps its \
         store in that directory)",
        dir.display()
    )]
    NotADirectory { path: PathBuf, dir: PathBuf },
    #[error(
        "the store {path} is damaged ({detail}); run `bugloop store reset` to move it aside and \
         start an empty one (the local conversation in it is then no longer read)"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the store {path} was written by a newer bugloop (schema {found}, this one knows {known}); \
         upgrade bugloop"
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: usize,
    },
    #[error("store query failed ({what}): {source}")]
    Query {
        what: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error("{0}")]
    NotFound(String),
    /// A request the store refuses: what it would break is said.
    #[error("{0}")]
    Refused(String),
    #[error("cannot move {path} aside: {source}")]
    Quarantine {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn query_error(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |source| StoreError::Query { what, source }
}

/// An update of one row by its key: `NotFound` with `missing` when no row had that key.
fn found(
    done: &sqlx::sqlite::SqliteQueryResult,
    missing: impl FnOnce() -> String,
) -> Result<(), StoreError> {
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(missing()));
    }
    Ok(())
}

/// A comment with its thread's state: the select every reader of comments starts from.
const COMMENTS: &str = "SELECT c.id, c.change, c.kind, c.author, c.body, c.created_at, \
     c.updated_at, c.in_reply_to, c.thread_id, c.path, c.line, c.commit_sha, c.by_bugloop, \
     COALESCE(t.resolved, 0) AS resolved FROM comments c LEFT JOIN threads t ON t.id = c.thread_id";

/// Where a comment lives: the change's conversation, or a line of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[derive(strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum StoredKind {
    Issue,
    Review,
}

impl StoredKind {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A comment as stored. Every root comment opens a thread whose id is its own id; replies carry
/// their root's thread id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredComment {
    pub id: i64,
    pub change: String,
    pub kind: StoredKind,
    pub author: String,
    pub body: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub in_reply_to: Option<i64>,
    pub thread_id: i64,
    pub path: Option<String>,
    pub line: Option<u32>,
    pub commit: Option<String>,
    pub thread_resolved: bool,
    /// Whether bugloop wrote the comment (`None`: stored before this was recorded).
    pub by_bugloop: Option<bool>,
}

/// A comment to add.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewComment {
    pub author: String,
    /// Written by bugloop itself (its publishing code), not typed by a person.
    pub by_bugloop: bool,
    pub body: String,
    /// Answer this comment (the new comment joins its thread and takes its kind and place).
    pub in_reply_to: Option<i64>,
    /// A line comment at `path:line` of `commit`; `None` for a conversation comment.
    pub anchor: Option<Anchor>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub path: String,
    pub line: u32,
    pub commit: String,
}

/// A change with a conversation, for listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangeSummary {
    pub change: String,
    pub comments: u64,
    pub last_activity: Timestamp,
}

/// The embedded database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
}

/// How a transaction that writes begins: with the write lock taken at once. A deferred one that
/// read first cannot take it once another process wrote meanwhile: SQLite answers busy at once
/// then, without waiting out the busy timeout, and a command run beside another (two
/// terminals, an editor's hook) would fail and lose what it was to store.
pub(crate) const WRITE: &str = "BEGIN IMMEDIATE";

impl Store {
    /// Opens (or creates) the store at `path`, applies migrations and checks its integrity.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent() {
            if parent.exists() && !parent.is_dir() {
                return Err(StoreError::NotADirectory {
                    path: path.to_owned(),
                    dir: parent.to_owned(),
                });
            }
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: path.to_owned(),
                source: sqlx::Error::Io(e),
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let pool = connect(options)
            .await
            .map_err(|source| classify_open(path, source))?;
        let store = Store {
            pool,
            path: path.to_owned(),
        };
        store.check().await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Opens a store that lives only in memory (tests, dry runs).
    pub async fn in_memory() -> Result<Store, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|source| StoreError::Open {
                path: PathBuf::from(":memory:"),
                source,
            })?
            .foreign_keys(true);
        // One connection: each in-memory connection would be its own database.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open {
                path: PathBuf::from(":memory:"),
                source,
            })?;
        let store = Store {
            pool,
            path: PathBuf::from(":memory:"),
        };
        store.migrate().await?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves a (damaged) store file aside, with its WAL files, and returns where it went.
    pub fn quarantine(path: &Path) -> Result<PathBuf, StoreError> {
        let stamp = Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
        let target = path.with_extension(format!("damaged-{stamp}.db"));
        std::fs::rename(path, &target).map_err(|source| StoreError::Quarantine {
            path: path.to_owned(),
            source,
        })?;
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            let side = PathBuf::from(side);
            if side.exists() {
                let mut moved = target.as_os_str().to_owned();
                moved.push(suffix);
                std::fs::rename(&side, PathBuf::from(moved)).map_err(|source| {
                    StoreError::Quarantine {
                        path: side.clone(),
                        source,
                    }
                })?;
            }
        }
        Ok(target)
    }

    async fn check(&self) -> Result<(), StoreError> {
        let rows = sqlx::query("PRAGMA quick_check")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.corrupt(&e.to_string()))?;
        let verdicts: Vec<String> = rows
            .iter()
            .filter_map(|r| r.try_get::<String, _>(0).ok())
            .collect();
        if verdicts.iter().all(|v| v == "ok") {
            Ok(())
        } else {
            Err(self.corrupt(&verdicts.join("; ")))
        }
    }

    fn corrupt(&self, detail: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            detail: detail.to_owned(),
        }
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let version: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| self.corrupt(&e.to_string()))?;
        if version > MIGRATIONS.len() as i64 {
            return Err(StoreError::Newer {
                path: self.path.clone(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        let applied = usize::try_from(version).unwrap_or(0);
        for (index, script) in MIGRATIONS.iter().enumerate().skip(applied) {
            // Another process may be opening the store at the same moment (reports filed at
            // once into a new store): the write lock is taken first and the version read again
            // under it, so each migration runs exactly once.
            let mut tx = self
                .pool
                .begin_with(WRITE)
                .await
                .map_err(query_error("migrate"))?;
            let now: i64 = sqlx::query_scalar("PRAGMA user_version")
                .fetch_one(&mut *tx)
                .await
                .map_err(query_error("migrate"))?;
            if now > index as i64 {
                tx.commit().await.map_err(query_error("migrate"))?;
                continue;
            }
            sqlx::raw_sql(script)
                .execute(&mut *tx)
                .await
                .map_err(query_error("migrate"))?;
            sqlx::raw_sql(&format!("PRAGMA user_version = {}", index + 1))
                .execute(&mut *tx)
                .await
                .map_err(query_error("migrate"))?;
            tx.commit().await.map_err(query_error("migrate"))?;
        }
        // A file that is a database but not ours (or lost a table) is damaged for our purposes.
        let tables: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('comments', 'threads')",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(|e| self.corrupt(&e.to_string()))?;
        if tables != 2 {
            return Err(self.corrupt("the conversation tables are missing"));
        }
        Ok(())
    }

    /// Every comment of a change's conversation, oldest first.
    pub async fn comments(&self, change: &str) -> Result<Vec<StoredComment>, StoreError> {
        let sql = format!("{COMMENTS} WHERE c.change = ? ORDER BY c.id");
        let select = sqlx::query(&sql).bind(change);
        self.read_rows("list comments", "comments", select, decode)
            .await
    }

    /// Every comment of every change that bugloop wrote (`bot`: its name, for comments stored
    /// before this was recorded), oldest first.
    pub async fn comments_by_bugloop(&self, bot: &str) -> Result<Vec<StoredComment>, StoreError> {
        let sql = format!(
            "{COMMENTS} WHERE c.by_bugloop = 1 OR (c.by_bugloop IS NULL AND c.author = ?) \
             ORDER BY c.id"
        );
        let select = sqlx::query(&sql).bind(bot);
        self.read_rows("list bugloop's comments", "comments", select, decode)
            .await
    }

    /// One comment by id, in any change.
    pub async fn comment(&self, id: i64) -> Result<StoredComment, StoreError> {
        let row = sqlx::query(&format!("{COMMENTS} WHERE c.id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(query_error("read comment"))?
            .ok_or_else(|| StoreError::NotFound(format!("no comment {id} in the local store")))?;
        decode(&Columns::new(self, "comments", &row))
    }

    /// Adds a comment (a reply joins its parent's thread) in one transaction.
    pub async fn add(&self, change: &str, new: NewComment) -> Result<StoredComment, StoreError> {
        let now = Timestamp::now().to_string();
        let mut tx = self
            .pool
            .begin_with(WRITE)
            .await
            .map_err(query_error("add comment"))?;
        let (kind, thread, anchor) = match new.in_reply_to {
            Some(parent) => parent_place(&mut tx, change, parent).await?,
            None => match &new.anchor {
                Some(a) => (
                    StoredKind::Review,
                    None,
                    (
                        Some(a.path.clone()),
                        Some(i64::from(a.line)),
                        Some(a.commit.clone()),
                    ),
                ),
                None => (StoredKind::Issue, None, (None, None, None)),
            },
        };
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO comments (change, kind, author, body, created_at, updated_at, \
             in_reply_to, thread_id, path, line, commit_sha, by_bugloop) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(change)
        .bind(kind.as_str())
        .bind(&new.author)
        .bind(&new.body)
        .bind(&now)
        .bind(&now)
        .bind(new.in_reply_to)
        .bind(thread.unwrap_or(0))
        .bind(&anchor.0)
        .bind(anchor.1)
        .bind(&anchor.2)
        .bind(i64::from(new.by_bugloop))
        .fetch_one(&mut *tx)
        .await
        .map_err(query_error("insert comment"))?;
        if thread.is_none() {
            open_thread(&mut tx, change, id).await?;
        }
        tx.commit().await.map_err(query_error("add comment"))?;
        self.comment(id).await
    }

    /// Replaces a comment's body.
    pub async fn update_body(&self, change: &str, id: i64, body: &str) -> Result<(), StoreError> {
        let done =
            sqlx::query("UPDATE comments SET body = ?, updated_at = ? WHERE id = ? AND change = ?")
                .bind(body)
                .bind(Timestamp::now().to_string())
                .bind(id)
                .bind(change)
                .execute(&self.pool)
                .await
                .map_err(query_error("update comment"))?;
        found(&done, || {
            format!("comment {id} is not part of the conversation of {change}")
        })
    }

    /// Sets a thread's resolved flag.
    pub async fn set_resolved(
        &self,
        change: &str,
        thread: i64,
        resolved: bool,
    ) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE threads SET resolved = ? WHERE id = ? AND change = ?")
            .bind(i64::from(resolved))
            .bind(thread)
            .bind(change)
            .execute(&self.pool)
            .await
            .map_err(query_error("resolve thread"))?;
        found(&done, || {
            format!("thread {thread} is not part of the conversation of {change}")
        })
    }

    /// The changes that have a conversation, most recent first.
    pub async fn changes(&self) -> Result<Vec<ChangeSummary>, StoreError> {
        self.read_rows(
            "list changes",
            "comments",
            sqlx::query(
                "SELECT change, count(*) AS n, max(updated_at) AS last FROM comments \
                 GROUP BY change ORDER BY last DESC",
            ),
            |row| {
                Ok(ChangeSummary {
                    change: row.get("change")?,
                    comments: u64::try_from(row.get::<i64>("n")?).unwrap_or(0),
                    last_activity: row.parsed("last")?,
                })
            },
        )
        .await
    }

    /// Closes the connections (so the file can be moved or checked).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A comment's kind, its thread (`None`: it opens its own) and its place (path, line, commit).
type CommentPlace = (
    StoredKind,
    Option<i64>,
    (Option<String>, Option<i64>, Option<String>),
);

/// A comment read back from `COMMENTS`.
fn decode(row: &Columns<'_>) -> Result<StoredComment, StoreError> {
    Ok(StoredComment {
        id: row.get("id")?,
        change: row.get("change")?,
        kind: row.parsed("kind")?,
        author: row.get("author")?,
        body: row.get("body")?,
        created_at: row.parsed("created_at")?,
        updated_at: row.parsed("updated_at")?,
        in_reply_to: row.get("in_reply_to")?,
        thread_id: row.get("thread_id")?,
        path: row.get("path")?,
        line: row
            .get::<Option<i64>>("line")?
            .and_then(|l| u32::try_from(l).ok()),
        commit: row.get("commit_sha")?,
        thread_resolved: row.flag("resolved")? == Some(true),
        by_bugloop: row.flag("by_bugloop")?,
    })
}

/// Where a reply goes: its parent's kind, thread and place (path, line, commit), the parent
/// looked up in `change` only, so a reply cannot join another change's conversation.
async fn parent_place(
    tx: &mut sqlx::SqliteConnection,
    change: &str,
    parent: i64,
) -> Result<CommentPlace, StoreError> {
    let row = sqlx::query(
        "SELECT kind, thread_id, path, line, commit_sha FROM comments \
         WHERE id = ? AND change = ?",
    )
    .bind(parent)
    .bind(change)
    .fetch_optional(&mut *tx)
    .await
    .map_err(query_error("find parent"))?
    .ok_or_else(|| {
        StoreError::NotFound(format!(
            "comment {parent} is not part of the conversation of {change}"
        ))
    })?;
    let kind: String = row.try_get("kind").map_err(query_error("read kind"))?;
    let thread: i64 = row
        .try_get("thread_id")
        .map_err(query_error("read thread"))?;
    let path: Option<String> = row.try_get("path").map_err(query_error("read path"))?;
    let line: Option<i64> = row.try_get("line").map_err(query_error("read line"))?;
    let commit: Option<String> = row
        .try_get("commit_sha")
        .map_err(query_error("read commit"))?;
    let kind = if kind == "review" {
        StoredKind::Review
    } else {
        StoredKind::Issue
    };
    Ok((kind, Some(thread), (path, line, commit)))
}

/// A root opens its own thread: the thread takes the comment's id, unresolved.
async fn open_thread(
    tx: &mut sqlx::SqliteConnection,
    change: &str,
    id: i64,
) -> Result<(), StoreError> {
    sqlx::query("UPDATE comments SET thread_id = id WHERE id = ?")
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(query_error("open thread"))?;
    sqlx::query("INSERT INTO threads (id, change, resolved) VALUES (?, ?, 0)")
        .bind(id)
        .bind(change)
        .execute(&mut *tx)
        .await
        .map_err(query_error("open thread"))?;
    Ok(())
}

/// A file that is not a database fails at the first statement; name it as damage.
/// The pool on a store file. Processes opening a store that does not exist yet at once (reports
/// filed together) race to make it: switching a new file to WAL needs a lock SQLite does not
/// wait for, so a busy answer is tried again for a while, as the busy timeout would.
async fn connect(options: SqliteConnectOptions) -> Result<SqlitePool, sqlx::Error> {
    let busy = |error: &sqlx::Error| matches!(error, sqlx::Error::Database(db) if db.code().is_some_and(|c| c == "5" || c == "6"));
    let mut attempt = 0u32;
    loop {
        let connected = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options.clone())
            .await;
        match connected {
            Err(error) if busy(&error) && attempt < 100 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(20 + u64::from(attempt % 5) * 10)).await;
            }
            other => return other,
        }
    }
}

fn classify_open(path: &Path, source: sqlx::Error) -> StoreError {
    let text = source.to_string();
    if text.contains("not a database") || text.contains("malformed") || text.contains("corrupt") {
        StoreError::Corrupt {
            path: path.to_owned(),
            detail: text,
        }
    } else {
        StoreError::Open {
            path: path.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests;
