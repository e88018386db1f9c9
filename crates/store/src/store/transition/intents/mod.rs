//! An intent's status: created, accepted, expired, and each move the engine
//! and the operator make, every one a compare-and-set on the status it
//! expects.

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use sqlx::Row;

use super::{record, Change, Subject};
use crate::db::{Backend, Db};
use crate::failure::Reason;
use crate::intent::{Intent, Status};
use crate::store::books::Credited;
use crate::store::intents::{get, COLUMNS};
use crate::store::StoreError;

mod accept;
mod create;
mod settled;

pub use accept::*;
pub use create::*;
pub use settled::*;

fn change(id: &str, version: i64, from: Option<Status>, to: Status, why: Option<&Reason>) -> Change {
    Change {
        subject: Subject::Intent,
        id: id.to_string(),
        version,
        from: from.map(|f| f.as_str().to_string()),
        to: to.as_str().to_string(),
        code: why.map(|r| r.code.code().to_string()),
        // The intent's row has it.
        trace: None,
    }
}

/// `from → to`, recording why when given. `false` if the intent was not in
/// `from` (someone else moved it).
pub async fn transition(db: &Db, id: &str, from: Status, to: Status, why: Option<&Reason>, now_ms: i64) -> Result<bool, StoreError> {
    transition_from(db, id, &[from, from], to, why, now_ms).await
}

/// The same from either of two states, in one compare-and-set (a payout
/// that failed is back to SOURCE_SETTLED whether it had reached
/// TARGET_SETTLING or not).
pub async fn transition_from(
    db: &Db,
    id: &str,
    from: &[Status; 2],
    to: Status,
    why: Option<&Reason>,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    // One statement per state it may be in, in one transaction: the event
    // names the state it was in.
    for (n, f) in from.iter().enumerate() {
        if from[..n].contains(f) {
            continue;
        }
        let moved = sqlx::query(
            "UPDATE intents SET status = $1, error_message = COALESCE($2, error_message), \
             error_code = COALESCE($6, error_code), updated_at = $3, version = version + 1 \
             WHERE id = $4 AND status = $5 RETURNING version",
        )
        .bind(to.as_str())
        .bind(why.map(|r| r.message.as_str()))
        .bind(now_ms)
        .bind(id)
        .bind(f.as_str())
        .bind(why.map(|r| r.code.code()))
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = moved {
            record(&mut tx, db.backend, &[change(id, row.try_get("version")?, Some(*f), to, why)], now_ms).await?;
            tx.commit().await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// A `/v2` agent's wallet could not pay: PENDING → AWAITING_PAYMENT, its
/// own authorization forgotten, so the agent can fund the wallet and
/// execute again before the intent expires.
pub async fn back_to_awaiting(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    let moved = sqlx::query(
        "UPDATE intents SET status = $1, settle_proof = NULL, replay_key = NULL, payer = NULL, error_code = $2, \
         error_message = $3, updated_at = $4, version = version + 1 WHERE id = $5 AND status = $6 AND agent_id IS NOT NULL \
         RETURNING version",
    )
    .bind(Status::AwaitingPayment.as_str())
    .bind(why.code.code())
    .bind(&why.message)
    .bind(now_ms)
    .bind(id)
    .bind(Status::Pending.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = moved else { return Ok(false) };
    let event = change(id, row.try_get("version")?, Some(Status::Pending), Status::AwaitingPayment, Some(why));
    record(&mut tx, db.backend, &[event], now_ms).await?;
    tx.commit().await?;
    Ok(true)
}

/// The `/v2` source authorization, made once by the agent's wallet.
pub async fn set_source_proof(db: &Db, id: &str, proof: &str, replay_key: &str, payer: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query(
        "UPDATE intents SET settle_proof = $1, replay_key = $2, payer = $3, version = version + 1 \
         WHERE id = $4 AND status = $5 AND settle_proof IS NULL",
    )
    .bind(proof)
    .bind(replay_key)
    .bind(payer)
    .bind(id)
    .bind(Status::Pending.as_str())
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// TARGET_SETTLING with `proof` → TARGET_SETTLING with none: a payout
/// authorization that expired with no transaction of it stored (none was
/// sent, or each was dropped once shown unable to land) is set aside, so
/// that the next pass authorizes a new one. Compare-and-set on the proof and
/// on there being no stored payout transaction: of two replicas, one renews,
/// and never while a transaction of it may still land.
pub async fn renew_payout(db: &Db, id: &str, proof: &str, now_ms: i64) -> Result<bool, StoreError> {
    let done = sqlx::query(
        "UPDATE intents SET target_settle_proof = NULL, updated_at = $1, version = version + 1 \
         WHERE id = $2 AND status = $3 AND target_settle_proof = $4 \
         AND NOT EXISTS (SELECT 1 FROM chain_transactions WHERE intent_id = $2 AND leg = $5)",
    )
    .bind(now_ms)
    .bind(id)
    .bind(Status::TargetSettling.as_str())
    .bind(proof)
    .bind("target")
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Intents in `status`, oldest first.
pub async fn ids_with_status(db: &Db, status: Status, limit: i64) -> Result<Vec<String>, StoreError> {
    sqlx::query("SELECT id FROM intents WHERE status = $1 ORDER BY created_at, id LIMIT $2")
        .bind(status.as_str())
        .bind(limit)
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| r.try_get("id").map_err(StoreError::from))
        .collect()
}

/// What `retry` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Retry {
    /// PARTIAL_SETTLEMENT → SOURCE_SETTLED, queued for its payout.
    Reopened,
    /// Still settling: its queue entry is due now.
    Requeued,
    /// Terminal or unpaid: nothing to retry.
    NotRetriable(Status),
    NotFound,
}

/// An operator's retry: re-open a PARTIAL_SETTLEMENT intent, or make a
/// waiting one due now. The payout's retry budget starts again. Running it
/// twice does no harm: the second run finds it waiting and re-queues it.
pub async fn retry(db: &Db, id: &str, now_ms: i64) -> Result<Retry, StoreError> {
    let mut tx = db.begin().await?;
    let Some(row) = sqlx::query("SELECT status FROM intents WHERE id = $1").bind(id).fetch_optional(&mut *tx).await? else {
        return Ok(Retry::NotFound);
    };
    let status = Status::parse(&row.try_get::<String, _>("status")?).unwrap_or(Status::Expired);
    let outcome = match status {
        Status::PartialSettlement => {
            let moved = sqlx::query(
                "UPDATE intents SET status = $1, error_code = NULL, error_message = NULL, updated_at = $2, \
                 version = version + 1 WHERE id = $3 AND status = $4 RETURNING version",
            )
            .bind(Status::SourceSettled.as_str())
            .bind(now_ms)
            .bind(id)
            .bind(Status::PartialSettlement.as_str())
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = moved {
                let event = change(id, row.try_get("version")?, Some(Status::PartialSettlement), Status::SourceSettled, None);
                record(&mut tx, db.backend, &[event], now_ms).await?;
            }
            Retry::Reopened
        }
        Status::Pending | Status::SourceSettled | Status::TargetSettling => Retry::Requeued,
        other => return Ok(Retry::NotRetriable(other)),
    };
    let priority = i32::from(status != Status::Pending);
    sqlx::query(
        "INSERT INTO settlement_queue (intent_id, enqueued_at, available_at, attempts, priority) VALUES ($1, $2, $2, 0, $3) \
         ON CONFLICT (intent_id) DO UPDATE SET enqueued_at = $2, available_at = $2, attempts = 0, locked_by = NULL, locked_until = NULL",
    )
    .bind(id)
    .bind(now_ms)
    .bind(priority)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The operator says a payout will not happen: SOURCE_SETTLED or
/// TARGET_SETTLING → PARTIAL_SETTLEMENT, out of the queue. If a stored
/// payout lands after all, the keeper's reconciliation still records it.
pub async fn give_up(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    for from in [Status::SourceSettled, Status::TargetSettling] {
        let moved = sqlx::query(
            "UPDATE intents SET status = $1, error_code = $2, error_message = $3, updated_at = $4, version = version + 1 \
             WHERE id = $5 AND status = $6 RETURNING version",
        )
        .bind(Status::PartialSettlement.as_str())
        .bind(why.code.code())
        .bind(&why.message)
        .bind(now_ms)
        .bind(id)
        .bind(from.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = moved {
            record(&mut tx, db.backend, &[change(id, row.try_get("version")?, Some(from), Status::PartialSettlement, Some(why))], now_ms)
                .await?;
            sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&mut *tx).await?;
            tx.commit().await?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Record AWAITING_PAYMENT intents past their expiry as EXPIRED.
pub async fn expire_due(db: &Db, now_ms: i64) -> Result<u64, StoreError> {
    let mut tx = db.begin().await?;
    let expired = sqlx::query(
        "UPDATE intents SET status = $1, updated_at = $2, version = version + 1 WHERE status = $3 AND expires_at <= $2 RETURNING id, version",
    )
    .bind(Status::Expired.as_str())
    .bind(now_ms)
    .bind(Status::AwaitingPayment.as_str())
    .fetch_all(&mut *tx)
    .await?;
    let mut events = Vec::with_capacity(expired.len());
    for r in &expired {
        events.push(change(&r.try_get::<String, _>("id")?, r.try_get("version")?, Some(Status::AwaitingPayment), Status::Expired, None));
    }
    record(&mut tx, db.backend, &events, now_ms).await?;
    tx.commit().await?;
    Ok(expired.len() as u64)
}
