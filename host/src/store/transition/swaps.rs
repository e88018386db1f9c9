//! A registered swap's status: registered (PENDING) and finished by the
//! tracker holding its lease, each a compare-and-set.

use crate::db::Db;
use crate::store::swaps::{row, Outcome, SwapIntent, COLUMNS};
use crate::store::StoreError;

/// The intent of (`from_chain`, `source_tx_hash`): the one registered
/// before, or `new` (its id used) when none was.
pub async fn register(db: &Db, new: &SwapIntent) -> Result<SwapIntent, StoreError> {
    sqlx::query(
        "INSERT INTO swap_intents (id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address, \
         sending_token_amount, status, created_at, updated_at, next_check_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PENDING', $10, $10, $10) ON CONFLICT (from_chain, source_tx_hash) DO NOTHING",
    )
    .bind(&new.id)
    .bind(&new.from_chain)
    .bind(&new.to_chain)
    .bind(&new.source_tx_hash)
    .bind(&new.from_token)
    .bind(&new.to_token)
    .bind(&new.payer_address)
    .bind(&new.recipient_address)
    .bind(&new.sending_token_amount)
    .bind(new.created_at)
    .execute(&db.pool)
    .await?;
    let r = sqlx::query(&format!("SELECT {COLUMNS} FROM swap_intents WHERE from_chain = $1 AND source_tx_hash = $2"))
        .bind(&new.from_chain)
        .bind(&new.source_tx_hash)
        .fetch_one(&db.pool)
        .await?;
    row(&r)
}

/// PENDING → a terminal status, only by the lease's holder.
pub async fn finish(db: &Db, id: &str, holder: &str, o: &Outcome<'_>, now: i64) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "UPDATE swap_intents SET status = $1, substatus = $2, dest_tx_hash = $3, received_amount = $4, error_code = $5, updated_at = $6, lease_until = 0 \
         WHERE id = $7 AND status = 'PENDING' AND lease_holder = $8",
    )
    .bind(o.status)
    .bind(o.substatus)
    .bind(o.dest_tx_hash)
    .bind(o.received_amount)
    .bind(o.error_code)
    .bind(now)
    .bind(id)
    .bind(holder)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}
