//! Deleting rows that anyone can create for free once nothing can come of
//! them (`[retention]`), with their events, a batch at a time so the single
//! writer is never held long. Each statement deletes only rows in a final state older than
//! their horizon; nothing that money could still depend on is touched.

use sqlx::Row;

use super::transition::Subject;
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
    pub webhook_deliveries: u64,
}

impl Pruned {
    pub fn any(&self) -> bool {
        *self != Pruned::default()
    }
}

fn horizon(now_ms: i64, hours: u64) -> i64 {
    now_ms - i64::try_from(hours).unwrap_or(i64::MAX / HOUR_MS).saturating_mul(HOUR_MS)
}

/// Delete one batch of the rows `select` finds (ids; `$1` the horizon, `$2`
/// the batch size) from `table`, with their events, in one transaction.
async fn delete_batch(db: &Db, table: &str, kind: Subject, select: &str, horizon: i64) -> Result<u64, StoreError> {
    let mut tx = db.begin().await?;
    let ids: Vec<String> = sqlx::query(select)
        .bind(horizon)
        .bind(BATCH)
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(|r| r.try_get("id"))
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(0);
    }
    let list = crate::store::numbered_params(2, ids.len());
    let events_sql = format!("DELETE FROM events WHERE subject_kind = $1 AND subject_id IN ({list})");
    let mut events = sqlx::query(&events_sql).bind(kind.as_str());
    let gone = format!("DELETE FROM {table} WHERE id IN ({})", crate::store::numbered_params(1, ids.len()));
    let mut rows = sqlx::query(&gone);
    for id in &ids {
        events = events.bind(id);
        rows = rows.bind(id);
    }
    events.execute(&mut *tx).await?;
    let n = rows.execute(&mut *tx).await?.rows_affected();
    tx.commit().await?;
    Ok(n)
}

/// One batch of each kind.
pub async fn prune(db: &Db, r: &Retention, now_ms: i64) -> Result<Pruned, StoreError> {
    // Expired without a payment: no queue entry, no transaction ever made.
    let expired_intents = delete_batch(
        db,
        "intents",
        Subject::Intent,
        "SELECT i.id FROM intents i WHERE i.status = 'EXPIRED' AND i.updated_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM settlement_queue q WHERE q.intent_id = i.id) \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions t WHERE t.intent_id = i.id) LIMIT $2",
        horizon(now_ms, r.expired_intents_hours),
    )
    .await?;
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
    let failed_settlements = delete_batch(
        db,
        "x402_settlements",
        Subject::Settlement,
        "SELECT s.id FROM x402_settlements s WHERE s.status = 'failed' AND s.updated_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions t WHERE t.intent_id = s.id) LIMIT $2",
        horizon(now_ms, r.failed_settlements_hours),
    )
    .await?;
    let unseen_swaps = delete_batch(
        db,
        "swap_intents",
        Subject::Swap,
        "SELECT id FROM swap_intents WHERE status = 'FAILED' AND error_code = 'source_not_confirmed' AND updated_at < $1 LIMIT $2",
        horizon(now_ms, r.unseen_swaps_hours),
    )
    .await?;
    // Finished deliveries: an endpoint's history, not a record of money.
    let webhook_deliveries = sqlx::query(
        "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries \
         WHERE status <> 'pending' AND created_at < $1 LIMIT $2)",
    )
    .bind(horizon(now_ms, r.webhook_deliveries_hours))
    .bind(BATCH)
    .execute(&db.pool)
    .await?
    .rows_affected()
        // And what a disabled endpoint will never be sent: its pending
        // deliveries, once as old as finished ones are kept (time for its
        // owner to see why it was disabled).
        + sqlx::query(
            "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' \
             AND created_at < $1 AND endpoint_id IN (SELECT id FROM webhook_endpoints WHERE status <> 'enabled') LIMIT $2)",
        )
        .bind(horizon(now_ms, r.webhook_deliveries_hours))
        .bind(BATCH)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(Pruned { expired_intents, payloads_dropped, failed_settlements, unseen_swaps, webhook_deliveries })
}
