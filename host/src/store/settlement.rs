//! The settlement engine's queries: claiming work, compare-and-set
//! transitions, and the signed transactions of each leg.

use sqlx::Row;

use super::DbError;
use crate::db::{Backend, Db};
use crate::intent::Status;

/// Take up to `max` due queue entries, source legs first: a lease written by
/// compare-and-set, so two replicas never hold the same intent; an expired
/// lease (a crashed replica) can be taken over. Postgres skips rows another
/// replica is claiming instead of waiting for them; SQLite runs one writer at
/// a time, so the single statement is already exclusive.
pub async fn claim(db: &Db, holder: &str, now_ms: i64, lease_ms: i64, max: usize) -> Result<Vec<String>, DbError> {
    let skip_locked = match db.backend {
        Backend::Postgres => "FOR UPDATE SKIP LOCKED",
        Backend::Sqlite => "",
    };
    let rows = sqlx::query(&format!(
        "UPDATE settlement_queue SET locked_by = $1, locked_until = $2 \
         WHERE intent_id IN (SELECT intent_id FROM settlement_queue WHERE available_at <= $3 \
                             AND (locked_until IS NULL OR locked_until < $3) \
                             ORDER BY priority, available_at LIMIT $4 {skip_locked}) \
           AND (locked_until IS NULL OR locked_until < $3) \
         RETURNING intent_id"
    ))
    .bind(holder)
    .bind(now_ms + lease_ms)
    .bind(now_ms)
    .bind(max.max(1) as i64)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| r.try_get("intent_id")).collect()
}

/// Release the lease and come back at `available_at`; a failure bumps the
/// attempt count, which is returned.
pub async fn reschedule(db: &Db, id: &str, available_at: i64, failed: bool) -> Result<i64, DbError> {
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

/// The source leg is done: release the lease and queue the payout, due now,
/// behind any source legs that are due.
pub async fn queue_payout(db: &Db, id: &str, now_ms: i64) -> Result<(), DbError> {
    sqlx::query("UPDATE settlement_queue SET locked_by = NULL, locked_until = NULL, available_at = $1, priority = 1 WHERE intent_id = $2")
        .bind(now_ms)
        .bind(id)
        .execute(&db.pool)
        .await
        .map(|_| ())
}

pub async fn attempts(db: &Db, id: &str) -> Result<i64, DbError> {
    let row = sqlx::query("SELECT attempts FROM settlement_queue WHERE intent_id = $1").bind(id).fetch_optional(&db.pool).await?;
    Ok(row.map(|r| r.try_get::<i32, _>("attempts")).transpose()?.unwrap_or(0) as i64)
}

pub async fn dequeue(db: &Db, id: &str) -> Result<(), DbError> {
    sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&db.pool).await.map(|_| ())
}

/// `from → to`, setting `error_message` when given. `false` if the intent
/// was not in `from` (someone else moved it).
pub async fn transition(db: &Db, id: &str, from: Status, to: Status, error: Option<&str>, now_ms: i64) -> Result<bool, DbError> {
    Ok(sqlx::query(
        "UPDATE intents SET status = $1, error_message = COALESCE($2, error_message), updated_at = $3, \
         version = version + 1 WHERE id = $4 AND status = $5",
    )
    .bind(to.as_str())
    .bind(error)
    .bind(now_ms)
    .bind(id)
    .bind(from.as_str())
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// The `/v2` source authorization, made once by the agent's wallet.
pub async fn set_source_proof(db: &Db, id: &str, proof: &str, replay_key: &str, payer: &str) -> Result<bool, DbError> {
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

/// SOURCE_SETTLED (or a TARGET_SETTLING being resumed) → TARGET_SETTLING,
/// storing `proof` as the payout authorization unless one is stored
/// already. Returns the stored authorization, or `None` if the intent is in
/// neither state (someone else moved it).
pub async fn start_payout(db: &Db, id: &str, proof: Option<&str>, now_ms: i64) -> Result<Option<String>, DbError> {
    let row = sqlx::query(
        "UPDATE intents SET target_settle_proof = COALESCE(target_settle_proof, $1), status = $2, updated_at = $3, \
         version = version + 1 WHERE id = $4 AND status IN ($5, $2) RETURNING target_settle_proof",
    )
    .bind(proof)
    .bind(Status::TargetSettling.as_str())
    .bind(now_ms)
    .bind(id)
    .bind(Status::SourceSettled.as_str())
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.and_then(|r| r.try_get::<Option<String>, _>("target_settle_proof").ok().flatten()))
}

/// PENDING → SOURCE_SETTLED with the source transaction.
pub async fn source_settled(db: &Db, id: &str, tx_hash: &str, now_ms: i64) -> Result<bool, DbError> {
    leg_settled(db, id, "source", Status::Pending, Status::SourceSettled, tx_hash, now_ms).await
}

/// TARGET_SETTLING → TARGET_SETTLED with the payout transaction.
pub async fn target_settled(db: &Db, id: &str, tx_hash: &str, now_ms: i64) -> Result<bool, DbError> {
    leg_settled(db, id, "target", Status::TargetSettling, Status::TargetSettled, tx_hash, now_ms).await
}

/// Record a leg's transaction and move `from → to`, clearing any retry reason.
async fn leg_settled(db: &Db, id: &str, leg: &str, from: Status, to: Status, tx_hash: &str, now_ms: i64) -> Result<bool, DbError> {
    Ok(sqlx::query(&format!(
        "UPDATE intents SET status = $1, {leg}_tx_hash = $2, {leg}_settled_at = $3, updated_at = $3, \
         error_message = NULL, version = version + 1 WHERE id = $4 AND status = $5"
    ))
    .bind(to.as_str())
    .bind(tx_hash)
    .bind(now_ms)
    .bind(id)
    .bind(from.as_str())
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// A signed transaction as stored before broadcast.
#[derive(Debug, Clone)]
pub struct StoredTx {
    pub step: i32,
    pub label: String,
    pub raw: Vec<u8>,
    pub tx_hash: String,
    pub nonce: i64,
    pub status: String,
}

fn stored_tx(r: &sqlx::any::AnyRow) -> Result<StoredTx, DbError> {
    Ok(StoredTx {
        step: r.try_get("step")?,
        label: r.try_get("label")?,
        raw: hex::decode(r.try_get::<String, _>("raw")?).map_err(|e| DbError::Decode(e.into()))?,
        tx_hash: r.try_get("tx_hash")?,
        nonce: r.try_get("nonce")?,
        status: r.try_get("status")?,
    })
}

/// A leg's rows with their signed bytes, wherever those are stored.
const TX_SELECT: &str = "SELECT ct.step, ct.label, COALESCE(bt.raw, ct.raw) AS raw, ct.tx_hash, ct.nonce, ct.status \
     FROM chain_transactions ct LEFT JOIN batch_transactions bt ON bt.tx_hash = ct.tx_hash \
     WHERE ct.intent_id = $1 AND ct.leg = $2";

pub async fn get_tx(db: &Db, id: &str, leg: &str, step: i32) -> Result<Option<StoredTx>, DbError> {
    sqlx::query(&format!("{TX_SELECT} AND ct.step = $3"))
        .bind(id)
        .bind(leg)
        .bind(step)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(stored_tx)
        .transpose()
}

/// Every stored transaction of one leg, in step order.
pub async fn list_txs(db: &Db, id: &str, leg: &str) -> Result<Vec<StoredTx>, DbError> {
    sqlx::query(&format!("{TX_SELECT} ORDER BY ct.step"))
        .bind(id)
        .bind(leg)
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(stored_tx)
        .collect()
}

pub struct NewTx<'a> {
    pub intent_id: &'a str,
    pub leg: &'a str,
    pub step: i32,
    pub label: &'a str,
    pub chain: &'a str,
    pub sender: &'a str,
    pub nonce: i64,
    pub raw: &'a [u8],
    pub tx_hash: &'a str,
}

/// Store a signed transaction. Fails with a unique violation if this
/// (intent, leg, step) already has one.
pub async fn insert_tx(db: &Db, t: &NewTx<'_>, now_ms: i64) -> Result<(), DbError> {
    insert_tx_query(t, now_ms).execute(&db.pool).await.map(|_| ())
}

fn insert_tx_query<'q>(t: &'q NewTx<'q>, now_ms: i64) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    sqlx::query(
        "INSERT INTO chain_transactions (intent_id, leg, step, label, chain, sender, nonce, raw, tx_hash, status, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'signed', $10, $10)",
    )
    .bind(t.intent_id)
    .bind(t.leg)
    .bind(t.step)
    .bind(t.label)
    .bind(t.chain)
    .bind(t.sender)
    .bind(t.nonce)
    .bind(hex::encode(t.raw))
    .bind(t.tx_hash)
    .bind(now_ms)
}

/// Store one signed transaction that settles several intents' steps (a
/// batch): its bytes once, and a row per step. All of it or none.
pub async fn insert_txs(db: &Db, rows: &[NewTx<'_>], now_ms: i64) -> Result<(), DbError> {
    let [first, ..] = rows else { return Ok(()) };
    if rows.len() == 1 {
        return insert_tx(db, first, now_ms).await;
    }
    let mut tx = db.pool.begin().await?;
    sqlx::query("INSERT INTO batch_transactions (tx_hash, raw, created_at) VALUES ($1, $2, $3)")
        .bind(first.tx_hash)
        .bind(hex::encode(first.raw))
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
    // One statement for all the rows: a batch is up to `settlement_batch_max`
    // of them, each a round trip otherwise.
    let mut insert = sqlx::QueryBuilder::<sqlx::Any>::new(
        "INSERT INTO chain_transactions (intent_id, leg, step, label, chain, sender, nonce, raw, tx_hash, status, created_at, updated_at) ",
    );
    insert.push_values(rows, |mut b, t| {
        b.push_bind(t.intent_id)
            .push_bind(t.leg)
            .push_bind(t.step)
            .push_bind(t.label)
            .push_bind(t.chain)
            .push_bind(t.sender)
            .push_bind(t.nonce)
            .push_bind("")
            .push_bind(t.tx_hash)
            .push_bind("signed")
            .push_bind(now_ms)
            .push_bind(now_ms);
    });
    insert.build().execute(&mut *tx).await?;
    tx.commit().await
}

pub async fn set_tx_status(db: &Db, id: &str, leg: &str, step: i32, status: &str, now_ms: i64) -> Result<(), DbError> {
    sqlx::query("UPDATE chain_transactions SET status = $1, updated_at = $2 WHERE intent_id = $3 AND leg = $4 AND step = $5")
        .bind(status)
        .bind(now_ms)
        .bind(id)
        .bind(leg)
        .bind(step)
        .execute(&db.pool)
        .await
        .map(|_| ())
}

/// Forget a reverted transaction so the step can be signed again. Safe for
/// payouts: the authorization inside carries a fixed nonce, so the token
/// contract accepts at most one of them.
pub async fn drop_tx(db: &Db, id: &str, leg: &str, step: i32) -> Result<(), DbError> {
    sqlx::query("DELETE FROM chain_transactions WHERE intent_id = $1 AND leg = $2 AND step = $3")
        .bind(id)
        .bind(leg)
        .bind(step)
        .execute(&db.pool)
        .await
        .map(|_| ())
}
