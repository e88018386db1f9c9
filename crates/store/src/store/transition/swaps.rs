//! A registered swap's status: registered (PENDING) and finished by the
//! tracker holding its lease, each a compare-and-set.

use super::{record, Change, Subject};
use crate::db::Db;
use crate::store::swaps::{row, Outcome, SwapIntent, COLUMNS};
use crate::store::StoreError;

fn change(id: &str, version: i64, from: Option<&str>, to: &str, code: Option<&str>) -> Change {
    Change {
        subject: Subject::Swap,
        id: id.into(),
        version,
        from: from.map(Into::into),
        to: to.into(),
        code: code.map(Into::into),
        // Anyone may register a swap naming any payer: the registrant's
        // trace must not reach the payer's webhooks.
        trace: None,
    }
}

/// The intent of (`from_chain`, `source_tx_hash`, `details`): the one
/// registered before with the same details, or `new` (its id used) when
/// none was. Other details are another intent: nobody's registration
/// blocks another's.
pub async fn register(db: &Db, new: &SwapIntent, details: &str) -> Result<SwapIntent, StoreError> {
    let mut tx = db.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO swap_intents (id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address, \
         sending_token_amount, status, created_at, updated_at, next_check_at, details) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'PENDING', $10, $10, $10, $11) ON CONFLICT (from_chain, source_tx_hash, details) DO NOTHING",
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
    .bind(details)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        record(&mut tx, db.backend, &[change(&new.id, 1, None, "PENDING", None)], new.created_at).await?;
    }
    let r = sqlx::query(&format!("SELECT {COLUMNS} FROM swap_intents WHERE from_chain = $1 AND source_tx_hash = $2 AND details = $3"))
        .bind(&new.from_chain)
        .bind(&new.source_tx_hash)
        .bind(details)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    row(&r)
}

/// PENDING → a terminal status, only by the lease's holder.
pub async fn finish(db: &Db, id: &str, holder: &str, o: &Outcome<'_>, now: i64) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
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
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if n == 1 {
        record(&mut tx, db.backend, &[change(id, 2, Some("PENDING"), o.status, o.error_code)], now).await?;
        tx.commit().await?;
    }
    Ok(n == 1)
}
