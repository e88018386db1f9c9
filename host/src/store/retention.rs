//! Deleting rows that anyone can create for free once nothing can come of
//! them (`[retention]`), a batch at a time so the single writer is never
//! held long. Each statement deletes only rows in a final state older than
//! their horizon; nothing that money could still depend on is touched.

use super::StoreError;
use crate::config::Retention;
use crate::db::Db;

/// Rows per statement.
const BATCH: i64 = 500;
const HOUR_MS: i64 = 3_600_000;

/// What one pass removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub expired_intents: u64,
    pub payloads_dropped: u64,
    pub failed_settlements: u64,
    pub unseen_swaps: u64,
}

impl Pruned {
    pub fn any(&self) -> bool {
        *self != Pruned::default()
    }
}

fn horizon(now_ms: i64, hours: u64) -> i64 {
    now_ms - i64::try_from(hours).unwrap_or(i64::MAX / HOUR_MS).saturating_mul(HOUR_MS)
}

/// One batch of each kind.
pub async fn prune(db: &Db, r: &Retention, now_ms: i64) -> Result<Pruned, StoreError> {
    // Expired without a payment: no queue entry, no transaction ever made.
    let expired_intents = sqlx::query(
        "DELETE FROM intents WHERE id IN (SELECT i.id FROM intents i WHERE i.status = 'EXPIRED' AND i.updated_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM settlement_queue q WHERE q.intent_id = i.id) \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions t WHERE t.intent_id = i.id) LIMIT $2)",
    )
    .bind(horizon(now_ms, r.expired_intents_hours))
    .bind(BATCH)
    .execute(&db.pool)
    .await?
    .rows_affected();
    // A refused settlement's payload (up to the body limit) is evidence for
    // a while, then only its summary is kept.
    let payloads_dropped = sqlx::query(
        "UPDATE x402_settlements SET payload = '', requirements = '' WHERE id IN (SELECT id FROM x402_settlements \
         WHERE status = 'failed' AND updated_at < $1 AND payload <> '' LIMIT $2)",
    )
    .bind(horizon(now_ms, r.failed_settlement_payload_hours))
    .bind(BATCH)
    .execute(&db.pool)
    .await?
    .rows_affected();
    // A refused settlement with no transaction of its own: nothing on chain
    // refers to it. (One whose transaction failed keeps its row, like an intent.)
    let failed_settlements = sqlx::query(
        "DELETE FROM x402_settlements WHERE id IN (SELECT s.id FROM x402_settlements s WHERE s.status = 'failed' AND s.updated_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions t WHERE t.intent_id = s.id) LIMIT $2)",
    )
    .bind(horizon(now_ms, r.failed_settlements_hours))
    .bind(BATCH)
    .execute(&db.pool)
    .await?
    .rows_affected();
    let unseen_swaps = sqlx::query(
        "DELETE FROM swap_intents WHERE id IN (SELECT id FROM swap_intents WHERE status = 'FAILED' \
         AND error_code = 'source_not_confirmed' AND updated_at < $1 LIMIT $2)",
    )
    .bind(horizon(now_ms, r.unseen_swaps_hours))
    .bind(BATCH)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(Pruned { expired_intents, payloads_dropped, failed_settlements, unseen_swaps })
}
