//! What a query can fail with, as the rest of the service sees it: the
//! driver's error stays inside `store/`.

/// A failed query.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A row with the same unique key exists already (a replayed
    /// authorization, a step stored twice, a name taken).
    #[error("a row with this key exists already: {0}")]
    Duplicate(#[source] sqlx::Error),
    /// A stored value this build cannot read.
    #[error("a stored value cannot be read: {0}")]
    Decode(String),
    /// The database did not answer, or refused the statement.
    #[error("database error: {0}")]
    Database(#[source] sqlx::Error),
}

impl StoreError {
    pub fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Duplicate(_))
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            e if e.as_database_error().is_some_and(|d| d.is_unique_violation()) => StoreError::Duplicate(e),
            sqlx::Error::Decode(d) => StoreError::Decode(d.to_string()),
            sqlx::Error::ColumnDecode { index, source } => StoreError::Decode(format!("column {index}: {source}")),
            e => StoreError::Database(e),
        }
    }
}
