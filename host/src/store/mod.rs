//! The repository layer: every query the service runs, for both engines.
//! State changes are single compare-and-set statements (`… WHERE status = $n`)
//! so that of two concurrent requests at most one wins.

pub mod agents;
pub mod idempotency;
pub mod intents;
pub mod keys;
pub mod settlement;
pub mod swaps;

pub use sqlx::Error as DbError;

/// Did this statement fail on a unique constraint?
pub fn is_unique_violation(e: &DbError) -> bool {
    e.as_database_error().is_some_and(|d| d.is_unique_violation())
}
