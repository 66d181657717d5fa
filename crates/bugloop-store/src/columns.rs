//! Reading a row back. Every table's columns are decoded one way: a value that does not decode,
//! or a word no enum knows, is the store being corrupt, said with its table, column and value.

use std::fmt::Display;
use std::str::FromStr;

use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Row, Sqlite};

use crate::{Store, StoreError, query_error};

/// One row of `table`, read for the store at its path.
pub(crate) struct Columns<'r> {
    store: &'r Store,
    table: &'static str,
    row: &'r SqliteRow,
}

impl<'r> Columns<'r> {
    pub(crate) fn new(store: &'r Store, table: &'static str, row: &'r SqliteRow) -> Self {
        Columns { store, table, row }
    }

    /// Column `name` as SQLite holds it.
    pub(crate) fn get<T>(&self, name: &str) -> Result<T, StoreError>
    where
        T: sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite>,
    {
        self.row
            .try_get(name)
            .map_err(|e| self.store.corrupt(&format!("{}.{name}: {e}", self.table)))
    }

    /// Column `name`, text parsed as `T` (a timestamp, an enum's word).
    pub(crate) fn parsed<T>(&self, name: &str) -> Result<T, StoreError>
    where
        T: FromStr,
        T::Err: Display,
    {
        let raw: String = self.get(name)?;
        raw.parse().map_err(|e| {
            self.store
                .corrupt(&format!("{}.{name} holds {raw:?}: {e}", self.table))
        })
    }

    /// Column `name` as a flag (SQLite keeps 0 or 1).
    pub(crate) fn flag(&self, name: &str) -> Result<Option<bool>, StoreError> {
        Ok(self.get::<Option<i64>>(name)?.map(|flag| flag != 0))
    }
}

/// A query of one table's rows.
pub(crate) type Select<'q> = sqlx::query::Query<'q, Sqlite, SqliteArguments<'q>>;

impl Store {
    /// The rows `select` finds in `table`, each read by `each`; `what` names the read in an error.
    pub(crate) async fn read_rows<T>(
        &self,
        what: &'static str,
        table: &'static str,
        select: Select<'_>,
        each: impl Fn(&Columns<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let rows = select
            .fetch_all(&self.pool)
            .await
            .map_err(query_error(what))?;
        rows.iter()
            .map(|row| each(&Columns::new(self, table, row)))
            .collect()
    }
}
