//! Where the App server keeps its queue: `BUGLOOP_STORE_URL` (`sqlite:PATH`, by default under
//! the data directory, or `postgres://...`).

use bugloop_queue::Queue;

use crate::ServerError;

/// Where the server keeps its queue (`BUGLOOP_STORE_URL`).
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// `sqlite:PATH` (the default: `queue.db` under the data directory).
    Sqlite(std::path::PathBuf),
    /// `postgres://...`: several server processes may share it.
    Postgres(String),
}

/// Says where, never the password a PostgreSQL URL holds: the options holding it are printed in
/// errors and logs.
impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            StoreLocation::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&bugloop_queue::without_password(url))
                .finish(),
        }
    }
}

impl StoreLocation {
    /// From `BUGLOOP_STORE_URL`'s value, or the default under `data_dir`.
    pub fn parse(
        url: Option<&str>,
        data_dir: &std::path::Path,
    ) -> Result<StoreLocation, ServerError> {
        match url.map(str::trim).filter(|u| !u.is_empty()) {
            None => Ok(StoreLocation::Sqlite(data_dir.join("queue.db"))),
            Some(url) => {
                if let Some(path) = url
                    .strip_prefix("sqlite://")
                    .or_else(|| url.strip_prefix("sqlite:"))
                    .filter(|p| !p.is_empty())
                {
                    return Ok(StoreLocation::Sqlite(path.into()));
                }
                if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                    return Ok(StoreLocation::Postgres(url.to_owned()));
                }
                Err(ServerError::Invalid(format!(
                    "BUGLOOP_STORE_URL is {:?}: expected sqlite:PATH or postgres://USER@HOST/DATABASE",
                    bugloop_queue::without_password(url)
                )))
            }
        }
    }

    /// Opens the queue (creating its directory and file).
    pub async fn open(&self) -> Result<Queue, ServerError> {
        self.open_with(8).await
    }

    /// The queue a worker thread uses: on PostgreSQL a small pool of its own, made on the
    /// worker's runtime (a connection belongs to the runtime that made it); on SQLite the
    /// workers' connection of `shared`, which every worker shares (intake keeps its own).
    pub async fn open_for_worker(&self, shared: &Queue) -> Result<Queue, ServerError> {
        match self {
            StoreLocation::Sqlite(_) => Ok(shared.for_workers()),
            StoreLocation::Postgres(_) => Ok(self.open_with(2).await?.with_limits(shared.limits())),
        }
    }

    async fn open_with(&self, connections: u32) -> Result<Queue, ServerError> {
        match self {
            StoreLocation::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        ServerError::Invalid(format!("cannot make {}: {e}", dir.display()))
                    })?;
                }
                Ok(Queue::open_sqlite(path, bugloop_queue::Retries::default()).await?)
            }
            StoreLocation::Postgres(url) => {
                Ok(
                    Queue::open_postgres(url, bugloop_queue::Retries::default(), connections)
                        .await?,
                )
            }
        }
    }
}
