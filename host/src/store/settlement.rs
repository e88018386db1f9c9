//! The settlement engine's queries: claiming work, compare-and-set
//! transitions, and the signed transactions of each leg.

use sqlx::Row;

use super::DbError;
use crate::db::{Backend, Db};
use crate::failure::Reason;
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
/// behind any source legs that are due. The payout's retry budget starts now.
pub async fn queue_payout(db: &Db, id: &str, now_ms: i64) -> Result<(), DbError> {
    sqlx::query(
        "UPDATE settlement_queue SET locked_by = NULL, locked_until = NULL, available_at = $1, priority = 1, \
         enqueued_at = $1, attempts = 0 WHERE intent_id = $2",
    )
    .bind(now_ms)
    .bind(id)
    .execute(&db.pool)
    .await
    .map(|_| ())
}

/// Failed passes so far, and since when this phase (source leg, or payout)
/// has been trying.
pub async fn attempts(db: &Db, id: &str) -> Result<(i64, i64), DbError> {
    let row =
        sqlx::query("SELECT attempts, enqueued_at FROM settlement_queue WHERE intent_id = $1").bind(id).fetch_optional(&db.pool).await?;
    Ok(match row {
        Some(r) => (r.try_get::<i32, _>("attempts")? as i64, r.try_get("enqueued_at")?),
        None => (0, 0),
    })
}

pub async fn dequeue(db: &Db, id: &str) -> Result<(), DbError> {
    sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&db.pool).await.map(|_| ())
}

/// `from → to`, recording why when given. `false` if the intent was not in
/// `from` (someone else moved it).
pub async fn transition(db: &Db, id: &str, from: Status, to: Status, why: Option<&Reason>, now_ms: i64) -> Result<bool, DbError> {
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
) -> Result<bool, DbError> {
    Ok(sqlx::query(
        "UPDATE intents SET status = $1, error_message = COALESCE($2, error_message), \
         error_code = COALESCE($6, error_code), updated_at = $3, version = version + 1 \
         WHERE id = $4 AND status IN ($5, $7)",
    )
    .bind(to.as_str())
    .bind(why.map(|r| r.message.as_str()))
    .bind(now_ms)
    .bind(id)
    .bind(from[0].as_str())
    .bind(why.map(|r| r.code.code()))
    .bind(from[1].as_str())
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// A `/v2` agent's wallet could not pay: PENDING → AWAITING_PAYMENT, its
/// own authorization forgotten, so the agent can fund the wallet and
/// execute again before the intent expires.
pub async fn back_to_awaiting(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, DbError> {
    Ok(sqlx::query(
        "UPDATE intents SET status = $1, settle_proof = NULL, replay_key = NULL, payer = NULL, error_code = $2, \
         error_message = $3, updated_at = $4, version = version + 1 WHERE id = $5 AND status = $6 AND agent_id IS NOT NULL",
    )
    .bind(Status::AwaitingPayment.as_str())
    .bind(why.code.code())
    .bind(&why.message)
    .bind(now_ms)
    .bind(id)
    .bind(Status::Pending.as_str())
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

/// PARTIAL_SETTLEMENT → TARGET_SETTLED: a stored payout did land after all.
pub async fn reconciled(db: &Db, id: &str, tx_hash: &str, now_ms: i64) -> Result<bool, DbError> {
    leg_settled(db, id, "target", Status::PartialSettlement, Status::TargetSettled, tx_hash, now_ms).await
}

/// Record a leg's transaction and move `from → to`, clearing any retry reason.
async fn leg_settled(db: &Db, id: &str, leg: &str, from: Status, to: Status, tx_hash: &str, now_ms: i64) -> Result<bool, DbError> {
    Ok(sqlx::query(&format!(
        "UPDATE intents SET status = $1, {leg}_tx_hash = $2, {leg}_settled_at = $3, updated_at = $3, \
         error_message = NULL, error_code = NULL, version = version + 1 WHERE id = $4 AND status = $5"
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
    /// Checksummed sender, or "external" (a payer's own signed transaction).
    pub sender: String,
}

fn stored_tx(r: &sqlx::any::AnyRow) -> Result<StoredTx, DbError> {
    Ok(StoredTx {
        step: r.try_get("step")?,
        label: r.try_get("label")?,
        raw: hex::decode(r.try_get::<String, _>("raw")?).map_err(|e| DbError::Decode(e.into()))?,
        tx_hash: r.try_get("tx_hash")?,
        nonce: r.try_get("nonce")?,
        status: r.try_get("status")?,
        sender: r.try_get("sender")?,
    })
}

/// A leg's rows with their signed bytes, wherever those are stored.
const TX_SELECT: &str = "SELECT ct.step, ct.label, COALESCE(bt.raw, ct.raw) AS raw, ct.tx_hash, ct.nonce, ct.status, ct.sender \
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
    sqlx::query(&format!("{TX_SELECT} ORDER BY ct.step")).bind(id).bind(leg).fetch_all(&db.pool).await?.iter().map(stored_tx).collect()
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

/// Store one signed transaction under every step it settles (a batch:
/// its bytes once, and a row per step), inside the caller's transaction.
async fn insert_txs_in(tx: &mut sqlx::Transaction<'_, sqlx::Any>, rows: &[NewTx<'_>], now_ms: i64) -> Result<(), DbError> {
    let [first, ..] = rows else { return Ok(()) };
    if rows.len() == 1 {
        return insert_tx_query(first, now_ms).execute(&mut **tx).await.map(|_| ());
    }
    sqlx::query("INSERT INTO batch_transactions (tx_hash, raw, created_at) VALUES ($1, $2, $3)")
        .bind(first.tx_hash)
        .bind(hex::encode(first.raw))
        .bind(now_ms)
        .execute(&mut **tx)
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
    insert.build().execute(&mut **tx).await.map(|_| ())
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

/// TARGET_SETTLING with `proof` → TARGET_SETTLING with none: a payout
/// authorization that expired with no transaction of it stored (none was
/// sent, or each was dropped once shown unable to land) is set aside, so
/// that the next pass authorizes a new one. Compare-and-set on the proof and
/// on there being no stored payout transaction: of two replicas, one renews,
/// and never while a transaction of it may still land.
pub async fn renew_payout(db: &Db, id: &str, proof: &str, now_ms: i64) -> Result<bool, DbError> {
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

/// Forget a reverted transaction so the step can be signed again. Safe for
/// payouts: the authorization inside carries a fixed nonce, so the token
/// contract accepts at most one of them.
pub async fn drop_tx(db: &Db, id: &str, leg: &str, step: i32, now_ms: i64) -> Result<(), DbError> {
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "INSERT INTO dropped_transactions (intent_id, leg, step, chain, sender, nonce, tx_hash, dropped_at) \
         SELECT intent_id, leg, step, chain, sender, nonce, tx_hash, $4 FROM chain_transactions \
         WHERE intent_id = $1 AND leg = $2 AND step = $3",
    )
    .bind(id)
    .bind(leg)
    .bind(step)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM chain_transactions WHERE intent_id = $1 AND leg = $2 AND step = $3")
        .bind(id)
        .bind(leg)
        .bind(step)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

/// Where one signed transaction is recorded: a row per intent step it settles.
pub struct TxRow {
    pub intent_id: String,
    pub leg: String,
    pub step: i32,
    pub label: String,
}

/// What `sign_with_next_nonce` got back from its signer.
pub enum Taken<E> {
    /// Signed with this nonce and stored.
    Stored { nonce: u64, raw: Vec<u8>, hash: String },
    /// The sender has no nonce row yet: call again with the node's count.
    NeedsFloor,
    /// The signer failed; nothing was taken.
    SignFailed(E),
}

/// Take the next nonce of (chain, sender), never below `floor`, sign with
/// it, and store the signed transaction under every row — one database
/// transaction, so a nonce is never taken without the transaction that
/// uses it, whatever moment the process dies at. On Postgres the nonce
/// row stays locked until the commit, so the sender's transactions are
/// stored in nonce order.
pub async fn sign_with_next_nonce<E>(
    db: &Db,
    chain: &str,
    sender: &str,
    floor: Option<u64>,
    rows: &[TxRow],
    sign: impl FnOnce(u64) -> Result<(Vec<u8>, String), E>,
    now_ms: i64,
) -> Result<Taken<E>, DbError> {
    let max = match db.backend {
        Backend::Postgres => "GREATEST",
        Backend::Sqlite => "MAX",
    };
    let mut tx = db.pool.begin().await?;
    if let Some(f) = floor {
        sqlx::query("INSERT INTO relayer_nonces (chain, sender, next_nonce) VALUES ($1, $2, $3) ON CONFLICT (chain, sender) DO NOTHING")
            .bind(chain)
            .bind(sender)
            .bind(f as i64)
            .execute(&mut *tx)
            .await?;
    }
    let row = sqlx::query(&format!(
        "UPDATE relayer_nonces SET next_nonce = {max}(next_nonce, $1) + 1 WHERE chain = $2 AND sender = $3 \
         RETURNING next_nonce - 1 AS taken"
    ))
    .bind(floor.unwrap_or(0) as i64)
    .bind(chain)
    .bind(sender)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        tx.rollback().await?;
        return Ok(Taken::NeedsFloor);
    };
    let nonce = row.try_get::<i64, _>("taken")? as u64;
    let (raw, hash) = match sign(nonce) {
        Ok(signed) => signed,
        Err(e) => {
            tx.rollback().await?;
            return Ok(Taken::SignFailed(e));
        }
    };
    let new: Vec<NewTx> = rows
        .iter()
        .map(|r| NewTx {
            intent_id: &r.intent_id,
            leg: &r.leg,
            step: r.step,
            label: &r.label,
            chain,
            sender,
            nonce: nonce as i64,
            raw: &raw,
            tx_hash: &hash,
        })
        .collect();
    insert_txs_in(&mut tx, &new, now_ms).await?;
    tx.commit().await?;
    Ok(Taken::Stored { nonce, raw, hash })
}

/// Every sender with a nonce sequence, and its next nonce.
pub async fn nonce_senders(db: &Db) -> Result<Vec<(String, String, u64)>, DbError> {
    sqlx::query("SELECT chain, sender, next_nonce FROM relayer_nonces ORDER BY chain, sender")
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("chain")?, r.try_get("sender")?, r.try_get::<i64, _>("next_nonce")? as u64)))
        .collect()
}

/// The signed bytes stored for (chain, sender) at nonces `from..to`
/// (settlement transactions and fillers), one entry per distinct hash.
pub async fn signed_at_nonces(db: &Db, chain: &str, sender: &str, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>, String)>, DbError> {
    let rows = sqlx::query(
        "SELECT DISTINCT ct.nonce AS nonce, COALESCE(bt.raw, ct.raw) AS raw, ct.tx_hash AS tx_hash \
           FROM chain_transactions ct LEFT JOIN batch_transactions bt ON bt.tx_hash = ct.tx_hash \
          WHERE ct.chain = $1 AND ct.sender = $2 AND ct.nonce >= $3 AND ct.nonce < $4 \
         UNION SELECT nonce, raw, tx_hash FROM nonce_fillers WHERE chain = $1 AND sender = $2 AND nonce >= $3 AND nonce < $4",
    )
    .bind(chain)
    .bind(sender)
    .bind(from as i64)
    .bind(to as i64)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let raw = hex::decode(r.try_get::<String, _>("raw")?).map_err(|e| DbError::Decode(e.into()))?;
            Ok((r.try_get::<i64, _>("nonce")? as u64, raw, r.try_get("tx_hash")?))
        })
        .collect()
}

/// Store a filler transaction before it is broadcast. `false` when this
/// nonce has one already (another replica filled it).
pub async fn insert_filler(db: &Db, chain: &str, sender: &str, nonce: u64, raw: &[u8], hash: &str, now_ms: i64) -> Result<bool, DbError> {
    Ok(sqlx::query(
        "INSERT INTO nonce_fillers (chain, sender, nonce, raw, tx_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (chain, sender, nonce) DO NOTHING",
    )
    .bind(chain)
    .bind(sender)
    .bind(nonce as i64)
    .bind(hex::encode(raw))
    .bind(hash)
    .bind(now_ms)
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// Intents in `status`, oldest first.
pub async fn ids_with_status(db: &Db, status: Status, limit: i64) -> Result<Vec<String>, DbError> {
    sqlx::query("SELECT id FROM intents WHERE status = $1 ORDER BY created_at, id LIMIT $2")
        .bind(status.as_str())
        .bind(limit)
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| r.try_get("id"))
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
pub async fn retry(db: &Db, id: &str, now_ms: i64) -> Result<Retry, DbError> {
    let mut tx = db.pool.begin().await?;
    let Some(row) = sqlx::query("SELECT status FROM intents WHERE id = $1").bind(id).fetch_optional(&mut *tx).await? else {
        return Ok(Retry::NotFound);
    };
    let status = Status::parse(&row.try_get::<String, _>("status")?).unwrap_or(Status::Expired);
    let outcome = match status {
        Status::PartialSettlement => {
            sqlx::query(
                "UPDATE intents SET status = $1, error_code = NULL, error_message = NULL, updated_at = $2, \
                 version = version + 1 WHERE id = $3 AND status = $4",
            )
            .bind(Status::SourceSettled.as_str())
            .bind(now_ms)
            .bind(id)
            .bind(Status::PartialSettlement.as_str())
            .execute(&mut *tx)
            .await?;
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
pub async fn give_up(db: &Db, id: &str, why: &Reason, now_ms: i64) -> Result<bool, DbError> {
    let mut tx = db.pool.begin().await?;
    let moved = sqlx::query(
        "UPDATE intents SET status = $1, error_code = $2, error_message = $3, updated_at = $4, version = version + 1 \
         WHERE id = $5 AND status IN ($6, $7)",
    )
    .bind(Status::PartialSettlement.as_str())
    .bind(why.code.code())
    .bind(&why.message)
    .bind(now_ms)
    .bind(id)
    .bind(Status::SourceSettled.as_str())
    .bind(Status::TargetSettling.as_str())
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if moved {
        sqlx::query("DELETE FROM settlement_queue WHERE intent_id = $1").bind(id).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(moved)
}

/// Queue entries, and when the oldest entry that is due now became due.
pub async fn queue_stats(db: &Db, now_ms: i64) -> Result<(i64, Option<i64>), DbError> {
    let r = sqlx::query("SELECT COUNT(*) AS n, MIN(CASE WHEN available_at <= $1 THEN available_at END) AS oldest FROM settlement_queue")
        .bind(now_ms)
        .fetch_one(&db.pool)
        .await?;
    Ok((r.try_get("n")?, r.try_get("oldest")?))
}
