//! Stored responses for `Idempotency-Key`.
//!
//! A key is claimed before the work starts (a row with status 0), so two
//! concurrent requests with one key never both do the work; the response is
//! stored when the work ends. Keys older than [`TTL_MS`] are forgotten.

use sqlx::Row;

use super::{is_unique_violation, StoreError};
use crate::db::Db;

pub const TTL_MS: i64 = 24 * 60 * 60 * 1000;

pub enum Claim {
    /// The key is ours: do the work, then `finish`.
    Claimed,
    /// Seen before with this request hash: here is what was answered.
    Replay { status: u16, body: String },
    /// Seen before with another request.
    Mismatch,
    /// Seen before and still being worked on.
    InProgress,
}

/// Claim (scope, key) for a request with `request_hash`. A claim still in
/// progress after `stale_ms` was abandoned (its server died mid-request):
/// it is taken over, by compare-and-set on its start time.
pub async fn claim(db: &Db, scope: &str, key: &str, request_hash: &str, now_ms: i64, stale_ms: i64) -> Result<Claim, StoreError> {
    sqlx::query("DELETE FROM idempotency_keys WHERE scope = $1 AND idem_key = $2 AND created_at < $3")
        .bind(scope)
        .bind(key)
        .bind(now_ms - TTL_MS)
        .execute(&db.pool)
        .await?;
    let inserted = sqlx::query(
        "INSERT INTO idempotency_keys (scope, idem_key, request_hash, response_status, response_body, created_at) \
         VALUES ($1, $2, $3, 0, '', $4)",
    )
    .bind(scope)
    .bind(key)
    .bind(request_hash)
    .bind(now_ms)
    .execute(&db.pool)
    .await;
    match inserted {
        Ok(_) => return Ok(Claim::Claimed),
        Err(e) if is_unique_violation(&e) => {}
        Err(e) => return Err(e.into()),
    }
    let row = sqlx::query(
        "SELECT request_hash, response_status, response_body, created_at FROM idempotency_keys WHERE scope = $1 AND idem_key = $2",
    )
    .bind(scope)
    .bind(key)
    .fetch_one(&db.pool)
    .await?;
    let hash: String = row.try_get("request_hash")?;
    let status: i32 = row.try_get("response_status")?;
    let started: i64 = row.try_get("created_at")?;
    Ok(if hash != request_hash {
        Claim::Mismatch
    } else if status == 0 && started < now_ms - stale_ms {
        let taken = sqlx::query(
            "UPDATE idempotency_keys SET created_at = $1 WHERE scope = $2 AND idem_key = $3 AND response_status = 0 AND created_at = $4",
        )
        .bind(now_ms)
        .bind(scope)
        .bind(key)
        .bind(started)
        .execute(&db.pool)
        .await?
        .rows_affected();
        if taken == 1 {
            Claim::Claimed
        } else {
            Claim::InProgress
        }
    } else if status == 0 {
        Claim::InProgress
    } else {
        Claim::Replay { status: status as u16, body: row.try_get("response_body")? }
    })
}

pub async fn finish(db: &Db, scope: &str, key: &str, status: u16, body: &str) -> Result<(), StoreError> {
    sqlx::query("UPDATE idempotency_keys SET response_status = $1, response_body = $2 WHERE scope = $3 AND idem_key = $4")
        .bind(status as i32)
        .bind(body)
        .bind(scope)
        .bind(key)
        .execute(&db.pool)
        .await
        .map(|_| ())
        .map_err(StoreError::from)
}

/// Forget a claim whose work failed before producing an answer (e.g. a
/// server error), so that a retry with the same key can run.
pub async fn release(db: &Db, scope: &str, key: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM idempotency_keys WHERE scope = $1 AND idem_key = $2 AND response_status = 0")
        .bind(scope)
        .bind(key)
        .execute(&db.pool)
        .await
        .map(|_| ())
        .map_err(StoreError::from)
}

pub async fn purge_expired(db: &Db, now_ms: i64) -> Result<u64, StoreError> {
    Ok(sqlx::query("DELETE FROM idempotency_keys WHERE created_at < $1").bind(now_ms - TTL_MS).execute(&db.pool).await?.rows_affected())
}
