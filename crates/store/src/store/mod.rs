//! The repository layer: every query the service runs, for both engines.
//! State changes are single compare-and-set statements (`… WHERE status = $n`)
//! so that of two concurrent requests at most one wins.

mod error;

pub mod agents;
pub mod books;
pub mod dashboard;
pub mod facilitator;
pub mod group;
pub mod idempotency;
pub mod intents;
pub mod keys;
pub mod retention;
pub mod settlement;
pub mod sponsored_swaps;
pub mod swaps;
pub mod transition;
pub mod webhooks;

pub use error::StoreError;

/// `$first, …, $(first + n - 1)`: numbered parameters for a list of
/// binds. Both engines take `$N`; sqlx's `QueryBuilder` for `Any` writes
/// `?`, which Postgres refuses.
pub(crate) fn numbered_params(first: usize, n: usize) -> String {
    (first..first + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// Placeholders for a statement whose every parameter is bound in the
/// order it appears: `numbered_params(first, n)` on Postgres, anonymous `?`
/// on SQLite (which counts them in the order they appear).
/// sqlx asks SQLite for each parameter's name as it binds, and SQLite finds
/// a name by walking the statement's list of named parameters, so binding a
/// statement of n numbered parameters costs O(n²): a group of 32 creates
/// (992 parameters) spent 35 % of the service's core there. Anonymous ones
/// have no name to find. Only for statements with no other placeholder:
/// sqlx numbers anonymous parameters by their own count.
pub(crate) fn ordered_params(backend: Backend, first: usize, n: usize) -> String {
    match backend {
        Backend::Sqlite => vec!["?"; n].join(", "),
        Backend::Postgres => numbered_params(first, n),
    }
}

use crate::db::{Backend, Db};

/// Does the database answer?
pub async fn ping(db: &Db) -> Result<(), StoreError> {
    sqlx::query("SELECT 1").execute(&db.pool).await?;
    Ok(())
}

/// Did this statement fail on a unique constraint? (Inside `store/`; the
/// rest of the service sees `StoreError::Duplicate`.)
fn is_unique_violation(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| d.is_unique_violation())
}
