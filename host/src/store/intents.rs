//! Intents and the settlement hand-off queue.

use sqlx::any::AnyRow;
use sqlx::Row;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

use super::StoreError;
use crate::db::{Backend, Db};
use crate::intent::{Intent, Status};

const COLUMNS: &str = "id, agent_id, status, payer_chain, target_chain, payer_asset, target_asset, \
    merchant_recipient, recipient_email, payer_address, amount_mode, sending_amount, receiving_amount, \
    estimated_fee, fee_breakdown, payment_requirements, settle_proof, replay_key, payer, source_tx_hash, \
    source_settled_at, target_tx_hash, target_settle_proof, target_settled_at, error_message, created_at, \
    expires_at, updated_at, error_code, payer_listed";

fn from_row(r: &AnyRow) -> Result<Intent, StoreError> {
    let status: String = r.try_get("status")?;
    Ok(Intent {
        id: r.try_get("id")?,
        agent_id: r.try_get("agent_id")?,
        status: Status::parse(&status).ok_or_else(|| StoreError::Decode(format!("unknown intent status {status}")))?,
        payer_chain: r.try_get("payer_chain")?,
        target_chain: r.try_get("target_chain")?,
        payer_asset: r.try_get("payer_asset")?,
        target_asset: r.try_get("target_asset")?,
        merchant_recipient: r.try_get("merchant_recipient")?,
        recipient_email: r.try_get("recipient_email")?,
        payer_address: r.try_get("payer_address")?,
        amount_mode: r.try_get("amount_mode")?,
        sending_amount: r.try_get("sending_amount")?,
        receiving_amount: r.try_get("receiving_amount")?,
        estimated_fee: r.try_get("estimated_fee")?,
        fee_breakdown: r.try_get("fee_breakdown")?,
        payment_requirements: serde_json::from_str(&r.try_get::<String, _>("payment_requirements")?)
            .map_err(|e| StoreError::Decode(format!("payment_requirements: {e}")))?,
        settle_proof: r.try_get("settle_proof")?,
        replay_key: r.try_get("replay_key")?,
        payer: r.try_get("payer")?,
        source_tx_hash: r.try_get("source_tx_hash")?,
        source_settled_at: r.try_get("source_settled_at")?,
        target_tx_hash: r.try_get("target_tx_hash")?,
        target_settle_proof: r.try_get("target_settle_proof")?,
        target_settled_at: r.try_get("target_settled_at")?,
        error_message: r.try_get("error_message")?,
        created_at: r.try_get("created_at")?,
        expires_at: r.try_get("expires_at")?,
        updated_at: r.try_get("updated_at")?,
        error_code: r.try_get::<Option<String>, _>("error_code")?.as_deref().and_then(crate::failure::Failure::parse),
        payer_listed: r.try_get::<i64, _>("payer_listed")? != 0,
    })
}

/// Bound parameters per inserted row.
const INSERT_PARAMS: usize = 31;

pub async fn insert(db: &Db, i: &Intent) -> Result<(), StoreError> {
    use crate::store::group::Write as _;
    Inserts::write(db, std::slice::from_ref(i)).await.map(|_| ())
}

/// New intents, written through a `Group`: intents created at the same
/// moment are one multi-row `INSERT` (one statement and one commit instead
/// of one each). A failed group (a duplicate id) is retried row by row.
pub struct Inserts;

impl crate::store::group::Write for Inserts {
    type Item = Intent;
    type Out = ();

    async fn write(db: &Db, items: &[Intent]) -> Result<Vec<()>, StoreError> {
        let rows: Vec<String> = (0..items.len())
            .map(|r| format!("({})", crate::store::ordered_params(db.backend, 1 + r * INSERT_PARAMS, INSERT_PARAMS)))
            .collect();
        let sql = format!("INSERT INTO intents ({COLUMNS}, receiving_micros) VALUES {}", rows.join(", "));
        let mut q = sqlx::query(&sql);
        for i in items {
            q = q
                .bind(&i.id)
                .bind(&i.agent_id)
                .bind(i.status.as_str())
                .bind(&i.payer_chain)
                .bind(&i.target_chain)
                .bind(&i.payer_asset)
                .bind(&i.target_asset)
                .bind(&i.merchant_recipient)
                .bind(&i.recipient_email)
                .bind(&i.payer_address)
                .bind(&i.amount_mode)
                .bind(&i.sending_amount)
                .bind(&i.receiving_amount)
                .bind(&i.estimated_fee)
                .bind(&i.fee_breakdown)
                .bind(serde_json::to_string(&i.payment_requirements).expect("requirements serialize"))
                .bind(&i.settle_proof)
                .bind(&i.replay_key)
                .bind(&i.payer)
                .bind(&i.source_tx_hash)
                .bind(i.source_settled_at)
                .bind(&i.target_tx_hash)
                .bind(&i.target_settle_proof)
                .bind(i.target_settled_at)
                .bind(&i.error_message)
                .bind(i.created_at)
                .bind(i.expires_at)
                .bind(i.updated_at)
                .bind(i.error_code.map(|c| c.code()))
                .bind(i64::from(i.payer_listed))
                .bind(i.receiving_amount.parse().ok().and_then(micros));
        }
        q.execute(&db.pool).await?;
        Ok(vec![(); items.len()])
    }
}

pub async fn get(db: &Db, id: &str) -> Result<Option<Intent>, StoreError> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM intents WHERE id = $1"))
        .bind(id)
        .fetch_optional(&db.read)
        .await?
        .as_ref()
        .map(from_row)
        .transpose()
}

/// Several intents by id, in one read (the engine's claimed work); ids
/// not found are left out.
pub async fn get_many(db: &Db, ids: &[String]) -> Result<Vec<Intent>, StoreError> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!("SELECT {COLUMNS} FROM intents WHERE id IN ({})", crate::store::ordered_params(db.backend, 1, ids.len()));
    let mut q = sqlx::query(&sql);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(&db.read).await?.iter().map(from_row).collect()
}

/// One page of an agent's intents, newest first, and the agent's total.
pub async fn list_for_agent(db: &Db, agent_id: &str, limit: i64, offset: i64) -> Result<(Vec<Intent>, i64), StoreError> {
    let rows =
        sqlx::query(&format!("SELECT {COLUMNS} FROM intents WHERE agent_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"))
            .bind(agent_id)
            .bind(limit)
            .bind(offset)
            .fetch_all(&db.pool)
            .await?;
    let total: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM intents WHERE agent_id = $1").bind(agent_id).fetch_one(&db.pool).await?.try_get("n")?;
    Ok((rows.iter().map(from_row).collect::<Result<_, _>>()?, total))
}

/// What a payer's proof (public flow) or an execute (`/v2`) records: the
/// intent moves AWAITING_PAYMENT → PENDING with it and is handed to
/// settlement (see `Accept::write`).
#[derive(Debug, Clone)]
pub struct Accept {
    pub id: String,
    pub settle_proof: Option<String>,
    pub replay_key: Option<String>,
    pub payer: Option<String>,
    /// The payout this acceptance promises from the proxy wallet's float.
    pub reserve: Option<Reserve>,
    pub now_ms: i64,
}

/// The payout an acceptance promises from the proxy wallet's float.
#[derive(Debug, Clone)]
pub struct Reserve {
    pub target_chain: String,
    pub target_asset: String,
    /// The intent's receiving amount, whole tokens.
    pub amount: Decimal,
    /// The proxy wallet's balance (recently read), whole tokens.
    pub balance: Decimal,
}

/// What an acceptance did.
#[derive(Debug, PartialEq, Eq)]
pub enum Accepted {
    Yes,
    /// Not awaiting payment, or expired: another request won, or too late.
    No,
    /// The float cannot cover this intent beside what is already promised.
    FloatShort,
}

/// Statuses whose receiving amount is promised from the proxy wallet.
const PROMISED: [Status; 3] = [Status::Pending, Status::SourceSettled, Status::TargetSettling];

/// Accept one payment on its own (see `Accept::write`).
pub async fn accept(db: &Db, a: Accept) -> Result<Accepted, StoreError> {
    use crate::store::group::Write as _;
    Accept::write(db, std::slice::from_ref(&a)).await?.pop().ok_or_else(|| StoreError::Decode("no acceptance answer".into()))
}

impl crate::store::group::Write for Accept {
    type Item = Accept;
    type Out = Accepted;

    /// AWAITING_PAYMENT → PENDING and the hand-off to settlement, atomically,
    /// for every acceptance given, in one transaction (proofs arriving
    /// together commit together). With a `reserve`, only if the float covers
    /// the receiving amounts already promised from it plus this one: check
    /// and move are one statement inside a transaction that holds the
    /// (chain, asset) lock (Postgres: advisory locks, taken in one order;
    /// SQLite: the write lock), so two proofs or two replicas cannot both
    /// take the last of the float; within the transaction each acceptance
    /// sees the ones before it. A reused replay key fails the whole
    /// transaction with `Duplicate` (a grouped write is then retried one by
    /// one, so only that acceptance fails).
    async fn write(db: &Db, items: &[Accept]) -> Result<Vec<Accepted>, StoreError> {
        // Postgres takes the advisory locks in one order, so two replicas'
        // groups cannot wait on each other.
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&x, &y| {
            let key = |a: &Accept| a.reserve.as_ref().map(|r| float_lock_key(&r.target_chain, &r.target_asset));
            key(&items[x]).cmp(&key(&items[y]))
        });
        let mut moved = vec![false; items.len()];
        let mut tx = db.pool.begin().await?;
        for n in order {
            moved[n] = accept_in(db.backend, &mut tx, &items[n]).await?;
        }
        // Every accepted intent is handed to settlement by one statement.
        let queued: Vec<&Accept> = items.iter().zip(&moved).filter(|(_, m)| **m).map(|(a, _)| a).collect();
        if !queued.is_empty() {
            let rows: Vec<String> = (0..queued.len()).map(|r| format!("(${}, ${}, ${}, 0)", 3 * r + 1, 3 * r + 2, 3 * r + 3)).collect();
            let sql = format!("INSERT INTO settlement_queue (intent_id, enqueued_at, available_at, attempts) VALUES {}", rows.join(", "));
            let mut q = sqlx::query(&sql);
            for a in queued {
                q = q.bind(&a.id).bind(a.now_ms).bind(a.now_ms);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        let mut out = Vec::with_capacity(items.len());
        for (a, moved) in items.iter().zip(moved) {
            out.push(if moved {
                Accepted::Yes
            } else {
                // Not moved: lost to another request, expired, or the float is short.
                let short = a.reserve.is_some()
                    && get(db, &a.id).await?.is_some_and(|i| i.status == Status::AwaitingPayment && i.expires_at > a.now_ms);
                if short {
                    Accepted::FloatShort
                } else {
                    Accepted::No
                }
            });
        }
        Ok(out)
    }
}

/// One acceptance's move inside the group's transaction: whether it moved
/// (its queue entry is written with the others').
async fn accept_in(backend: Backend, tx: &mut sqlx::Transaction<'_, sqlx::Any>, a: &Accept) -> Result<bool, StoreError> {
    // The float check rides on the move itself: the promised total is summed
    // inside the statement (`receiving_micros`), so on SQLite, one writer at
    // a time, check and move are one step. Postgres serializes the
    // (chain, asset) first, since concurrent statements see their own snapshots.
    let float = match &a.reserve {
        Some(r) => {
            if backend == Backend::Postgres {
                sqlx::query("SELECT pg_advisory_xact_lock($1)")
                    .bind(float_lock_key(&r.target_chain, &r.target_asset))
                    .execute(&mut **tx)
                    .await?;
            }
            // Receiving amounts have at most 6 decimals (`fees::PRECISION`).
            let amount = micros(r.amount).ok_or_else(|| StoreError::Decode(format!("receiving amount {} beyond millionths", r.amount)))?;
            let balance = floor_micros(r.balance).ok_or_else(|| StoreError::Decode(format!("float balance {} out of range", r.balance)))?;
            Some((r, balance - amount))
        }
        None => None,
    };
    // A row of a replica that predates `receiving_micros` counts by its text.
    let covered = match float {
        Some(_) => format!(
            " AND (SELECT COALESCE(SUM(COALESCE(receiving_micros, {MICROS_OF_TEXT})), 0) FROM intents \
             WHERE target_chain = $9 AND target_asset = $10 AND status IN ($11, $12, $13)) <= $14"
        ),
        None => String::new(),
    };
    let sql = format!(
        "UPDATE intents SET status = $1, settle_proof = $2, replay_key = $3, payer = $4, updated_at = $5, \
         error_code = NULL, error_message = NULL, version = version + 1 WHERE id = $6 AND status = $7 AND expires_at > $8{covered}"
    );
    let mut q = sqlx::query(&sql)
        .bind(Status::Pending.as_str())
        .bind(a.settle_proof.as_deref())
        .bind(a.replay_key.as_deref())
        .bind(a.payer.as_deref())
        .bind(a.now_ms)
        .bind(&a.id)
        .bind(Status::AwaitingPayment.as_str())
        .bind(a.now_ms);
    if let Some((r, room)) = float {
        q = q.bind(&r.target_chain).bind(&r.target_asset);
        for s in PROMISED {
            q = q.bind(s.as_str());
        }
        q = q.bind(room);
    }
    Ok(q.execute(&mut **tx).await?.rows_affected() == 1)
}

/// `receiving_amount` in millionths, in SQL: what migration 0012 filled
/// older rows with (exact: at most 6 decimals, at most 10^12 millionths).
const MICROS_OF_TEXT: &str = "CAST(ROUND(CAST(receiving_amount AS NUMERIC) * 1000000) AS BIGINT)";

/// A decimal amount in millionths, when it has at most 6 decimals.
fn micros(amount: Decimal) -> Option<i64> {
    let m = amount * Decimal::from(1_000_000);
    m.fract().is_zero().then(|| m.to_i64()).flatten()
}

/// A balance in whole millionths, rounded down (what it can cover).
fn floor_micros(balance: Decimal) -> Option<i64> {
    (balance * Decimal::from(1_000_000)).floor().to_i64()
}

/// One advisory-lock key per (chain, asset) float.
fn float_lock_key(chain: &str, asset: &str) -> i64 {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("float\n{chain}\n{asset}"));
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Record AWAITING_PAYMENT intents past their expiry as EXPIRED.
pub async fn expire_due(db: &Db, now_ms: i64) -> Result<u64, StoreError> {
    Ok(sqlx::query("UPDATE intents SET status = $1, updated_at = $2, version = version + 1 WHERE status = $3 AND expires_at <= $2")
        .bind(Status::Expired.as_str())
        .bind(now_ms)
        .bind(Status::AwaitingPayment.as_str())
        .execute(&db.pool)
        .await?
        .rows_affected())
}

/// The wallet of an intent created for an email nobody had registered:
/// set once, while the intent awaits payment.
pub async fn set_unresolved_recipient(db: &Db, id: &str, wallet: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query("UPDATE intents SET merchant_recipient = $1 WHERE id = $2 AND merchant_recipient = '' AND status = $3")
        .bind(wallet)
        .bind(id)
        .bind(Status::AwaitingPayment.as_str())
        .execute(&db.pool)
        .await?
        .rows_affected()
        == 1)
}

pub async fn queued(db: &Db, id: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 AS one FROM settlement_queue WHERE intent_id = $1").bind(id).fetch_optional(&db.pool).await?.is_some())
}

/// How many intents are in each status.
pub async fn count_by_status(db: &Db) -> Result<Vec<(String, i64)>, StoreError> {
    sqlx::query("SELECT status, COUNT(*) AS n FROM intents GROUP BY status ORDER BY status")
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("status")?, r.try_get("n")?)))
        .collect()
}

/// Payer chains with intents still waiting on their source leg for `code`.
pub async fn chains_waiting_with(db: &Db, code: crate::failure::Failure) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query("SELECT DISTINCT payer_chain FROM intents WHERE status = $1 AND error_code = $2 ORDER BY payer_chain")
        .bind(crate::intent::Status::Pending.as_str())
        .bind(code.code())
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| r.try_get("payer_chain").map_err(StoreError::from)).collect()
}
