//! The settlement queue: leases that replicas claim by compare-and-set,
//! retry schedules and the queue's depth.

use sqlx::Row;

use crate::db::{Backend, Db};
use crate::store::StoreError;

/// Take up to `max` due queue entries, source legs first: a lease written by
/// compare-and-set, so two replicas never hold the same intent; an expired
/// lease (a crashed replica) can be taken over. Postgres skips rows another
/// replica is claiming instead of waiting for them; SQLite runs one writer at
/// a time, so the single statement is already exclusive.
pub async fn claim(db: &Db, holder: &str, now_ms: i64, lease_ms: i64, max: usize) -> Result<Vec<String>, StoreError> {
    lease(db, QUEUE, holder, now_ms, lease_ms, max).await
}

/// A table whose rows are queue entries: `locked_by`, `locked_until` and
/// `available_at` columns, `key` the row's id, `due` any further condition.
pub(crate) struct Leased {
    pub table: &'static str,
    pub key: &'static str,
    pub due: &'static str,
    pub order: &'static str,
}

/// Lease up to `max` due rows of `q` by compare-and-set (see `claim`).
pub(crate) async fn lease(db: &Db, q: Leased, holder: &str, now_ms: i64, lease_ms: i64, max: usize) -> Result<Vec<String>, StoreError> {
    let skip_locked = match db.backend {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let Leased { table, key, due, order } = q;
    let rows = sqlx::query(&format!(
        "UPDATE {table} SET locked_by = $1, locked_until = $2 \
         WHERE {key} IN (SELECT {key} FROM {table} WHERE {due} AND available_at <= $3 \
                             AND (locked_until IS NULL OR locked_until < $3) \
                             ORDER BY {order} LIMIT $4 {skip_locked}) \
           AND (locked_until IS NULL OR locked_until < $3) \
         RETURNING {key}"
    ))
    .bind(holder)
    .bind(now_ms + lease_ms)
    .bind(now_ms)
    .bind(max.max(1) as i64)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| r.try_get(key).map_err(StoreError::from)).collect()
}

/// Release the lease and come back at `available_at`; a failure bumps the
/// attempt count, which is returned.
pub async fn reschedule(db: &Db, id: &str, available_at: i64, failed: bool) -> Result<i64, StoreError> {
    let row = sqlx::query(
        "UPDATE settlement_queue SET locked_by = NULL, locked_until = NULL, available_at = $1, \
         attempts = attempts + $2 WHERE intent_id = $3 RETURNING attempts",
    )
    .bind(available_at)
    .bind(i32::from(failed))
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.map(|r| r.try_get::<i32, _>("attempts")).transpose()?.unwrap_or(0) as i64)
}

const QUEUE: Leased = Leased { table: "settlement_queue", key: "intent_id", due: "TRUE", order: "priority, available_at" };

/// Extend this holder's lease to `until_ms`: `false` when the entry is
/// not (or no longer) `holder`'s, and the holder must leave it alone.
pub async fn renew(db: &Db, id: &str, holder: &str, until_ms: i64) -> Result<bool, StoreError> {
    renew_in(db, QUEUE, id, holder, until_ms).await
}

/// Release `holder`'s lease (only its own) and come back at `available_at`.
pub async fn release(db: &Db, id: &str, holder: &str, available_at: i64) -> Result<(), StoreError> {
    release_in(db, QUEUE, id, holder, available_at).await
}

/// `renew` on any leased table: a compare-and-set on the holder's name.
pub(crate) async fn renew_in(db: &Db, q: Leased, id: &str, holder: &str, until_ms: i64) -> Result<bool, StoreError> {
    let Leased { table, key, due, .. } = q;
    let done = sqlx::query(&format!("UPDATE {table} SET locked_until = $1 WHERE {key} = $2 AND locked_by = $3 AND {due}"))
        .bind(until_ms)
        .bind(id)
        .bind(holder)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// `release` on any leased table: only the holder's own lease.
pub(crate) async fn release_in(db: &Db, q: Leased, id: &str, holder: &str, available_at: i64) -> Result<(), StoreError> {
    let Leased { table, key, due, .. } = q;
    sqlx::query(&format!(
        "UPDATE {table} SET locked_by = NULL, locked_until = NULL, available_at = $1 WHERE {key} = $2 AND locked_by = $3 AND {due}"
    ))
    .bind(available_at)
    .bind(id)
    .bind(holder)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Failed passes so far, and since when this phase (source leg, or payout)
/// has been trying.
pub async fn attempts(db: &Db, id: &str) -> Result<(i64, i64), StoreError> {
    let row =
        sqlx::query("SELECT attempts, enqueued_at FROM settlement_queue WHERE intent_id = $1").bind(id).fetch_optional(&db.pool).await?;
    Ok(match row {
        Some(r) => (r.try_get::<i32, _>("attempts")? as i64, r.try_get("enqueued_at")?),
        None => (0, 0),
    })
}

pub async fn dequeue(db: &Db, id: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&db.pool).await.map(|_| ()).map_err(StoreError::from)
}

/// Queue entries, and when the oldest entry that is due now became due.
pub async fn queue_stats(db: &Db, now_ms: i64) -> Result<(i64, Option<i64>), StoreError> {
    let r = sqlx::query("SELECT COUNT(*) AS n, MIN(CASE WHEN available_at <= $1 THEN available_at END) AS oldest FROM settlement_queue")
        .bind(now_ms)
        .fetch_one(&db.pool)
        .await?;
    Ok((r.try_get("n")?, r.try_get("oldest")?))
}
