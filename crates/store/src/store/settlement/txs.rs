//! Signed transactions, stored before they are broadcast, and the nonce
//! sequences they take their nonces from.

// alloy's hex (const-hex, vectorised): a claim reads each intent's stored
// transactions, and a Multicall3 batch's raw bytes (tens of KB of hex) come
// with every intent it carries; the `hex` crate's byte-at-a-time decode was
// 4 % of the service's core at 200 concurrent intents.
use alloy_primitives::hex;
use sqlx::Row;

use crate::db::{Backend, Db};
use crate::store::StoreError;

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

fn stored_tx(r: &sqlx::any::AnyRow) -> Result<StoredTx, StoreError> {
    Ok(StoredTx {
        step: r.try_get("step")?,
        label: r.try_get("label")?,
        raw: hex::decode(r.try_get::<String, _>("raw")?).map_err(|e| StoreError::Decode(e.to_string()))?,
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

pub async fn get_tx(db: &Db, id: &str, leg: &str, step: i32) -> Result<Option<StoredTx>, StoreError> {
    sqlx::query(&format!("{TX_SELECT} AND ct.step = $3"))
        .bind(id)
        .bind(leg)
        .bind(step)
        .fetch_optional(&db.read)
        .await?
        .as_ref()
        .map(stored_tx)
        .transpose()
}

/// Every stored transaction of one leg, in step order.
pub async fn list_txs(db: &Db, id: &str, leg: &str) -> Result<Vec<StoredTx>, StoreError> {
    sqlx::query(&format!("{TX_SELECT} ORDER BY ct.step")).bind(id).bind(leg).fetch_all(&db.read).await?.iter().map(stored_tx).collect()
}

/// Every stored transaction of these intents, with its intent and leg, in
/// one read (the engine's claimed work).
pub async fn list_txs_of(db: &Db, ids: &[String]) -> Result<Vec<(String, String, StoredTx)>, StoreError> {
    if ids.is_empty() {
        return Ok(vec![]);
    }
    let sql = format!(
        "SELECT ct.intent_id, ct.leg, ct.step, ct.label, COALESCE(bt.raw, ct.raw) AS raw, ct.tx_hash, ct.nonce, ct.status, ct.sender \
         FROM chain_transactions ct LEFT JOIN batch_transactions bt ON bt.tx_hash = ct.tx_hash \
         WHERE ct.intent_id IN ({}) ORDER BY ct.intent_id, ct.leg, ct.step",
        crate::store::ordered_params(db.backend, 1, ids.len())
    );
    let mut q = sqlx::query(&sql);
    for id in ids {
        q = q.bind(id);
    }
    q.fetch_all(&db.read).await?.iter().map(|r| Ok((r.try_get("intent_id")?, r.try_get("leg")?, stored_tx(r)?))).collect()
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
pub async fn insert_tx(db: &Db, t: &NewTx<'_>, now_ms: i64) -> Result<(), StoreError> {
    insert_tx_query(t, now_ms).execute(&db.pool).await.map(|_| ()).map_err(StoreError::from)
}

fn insert_tx_query<'q>(t: &'q NewTx<'q>, now_ms: i64) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    bind_tx(sqlx::query(&TX_INSERT_ONE), t, hex::encode(t.raw), now_ms)
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// Columns of a stored transaction and how many binds a row takes.
const TX_INSERT: &str = "INSERT INTO chain_transactions (intent_id, leg, step, label, chain, sender, nonce, raw, tx_hash, status, created_at, updated_at) VALUES ";
const TX_BINDS: usize = 10;
static TX_INSERT_ONE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!("{TX_INSERT}{}", tx_values(0)));

/// The `n`th row's values: nine binds, the status, and one bind for both times.
fn tx_values(n: usize) -> String {
    let first = 1 + n * TX_BINDS;
    format!("({}, 'signed', ${t}, ${t})", crate::store::numbered_params(first, TX_BINDS - 1), t = first + TX_BINDS - 1)
}

fn bind_tx<'q>(q: AnyQuery<'q>, t: &'q NewTx<'q>, raw: String, now_ms: i64) -> AnyQuery<'q> {
    q.bind(t.intent_id)
        .bind(t.leg)
        .bind(t.step)
        .bind(t.label)
        .bind(t.chain)
        .bind(t.sender)
        .bind(t.nonce)
        .bind(raw)
        .bind(t.tx_hash)
        .bind(now_ms)
}

/// Store one signed transaction under every step it settles (a batch:
/// its bytes once, and a row per step), inside the caller's transaction.
async fn insert_txs_in(tx: &mut crate::db::Tx, rows: &[NewTx<'_>], now_ms: i64) -> Result<(), StoreError> {
    let [first, ..] = rows else { return Ok(()) };
    if rows.len() == 1 {
        return insert_tx_query(first, now_ms).execute(&mut **tx).await.map(|_| ()).map_err(StoreError::from);
    }
    sqlx::query("INSERT INTO batch_transactions (tx_hash, raw, created_at) VALUES ($1, $2, $3)")
        .bind(first.tx_hash)
        .bind(hex::encode(first.raw))
        .bind(now_ms)
        .execute(&mut **tx)
        .await?;
    // One statement for all the rows: a batch is up to `settlement_batch_max`
    // of them, each a round trip otherwise.
    // The bytes live once in `batch_transactions`; each row's `raw` is empty.
    let sql = format!("{TX_INSERT}{}", (0..rows.len()).map(tx_values).collect::<Vec<_>>().join(", "));
    let mut insert = sqlx::query(&sql);
    for t in rows {
        insert = bind_tx(insert, t, String::new(), now_ms);
    }
    insert.execute(&mut **tx).await.map(|_| ()).map_err(StoreError::from)
}

/// Mark every row holding this transaction confirmed, in one statement: a
/// Multicall3 batch is many owners' rows with the same bytes, written
/// together when its receipt lands.
pub async fn confirm_tx(db: &Db, chain: &str, tx_hash: &str, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE chain_transactions SET status = 'confirmed', updated_at = $1 WHERE chain = $2 AND tx_hash = $3 AND status <> 'confirmed'",
    )
    .bind(now_ms)
    .bind(chain)
    .bind(tx_hash)
    .execute(&db.pool)
    .await
    .map(|_| ())
    .map_err(StoreError::from)
}

/// Forget a reverted transaction so the step can be signed again. Safe for
/// payouts: the authorization inside carries a fixed nonce, so the token
/// contract accepts at most one of them.
pub async fn drop_tx(db: &Db, id: &str, leg: &str, step: i32, now_ms: i64) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
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
    Ok(tx.commit().await?)
}

/// How many transactions of `id`'s `leg` were dropped to be sent again.
pub async fn dropped_count(db: &Db, id: &str, leg: &str) -> Result<i64, StoreError> {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM dropped_transactions WHERE intent_id = $1 AND leg = $2")
        .bind(id)
        .bind(leg)
        .fetch_one(&db.read)
        .await?;
    Ok(row.try_get("n")?)
}

/// Where one signed transaction is recorded: a row per intent step it settles.
pub struct TxRow {
    pub intent_id: String,
    pub leg: String,
    pub step: i32,
    pub label: String,
}

/// What `sign_with_next_nonce` did.
pub enum Taken {
    /// Signed with this nonce and stored.
    Stored { nonce: u64, raw: Vec<u8>, hash: String },
    /// The sender has no nonce row yet: call again with the node's count.
    NeedsFloor,
    /// The signer refused (a hardware module that did not answer): nothing
    /// taken or stored.
    SignFailed(String),
}

/// Take the next nonce of (chain, sender), never below `floor`, sign with
/// it, and store the signed transaction under every row — one database
/// transaction, so a nonce is never taken without the transaction that
/// uses it, whatever moment the process dies at. On Postgres the nonce
/// row stays locked until the commit, so the sender's transactions are
/// stored in nonce order.
pub async fn sign_with_next_nonce(
    db: &Db,
    chain: &str,
    sender: &str,
    floor: Option<u64>,
    rows: &[TxRow],
    sign: impl FnOnce(u64) -> Result<(Vec<u8>, String), String>,
    now_ms: i64,
) -> Result<Taken, StoreError> {
    let max = match db.backend {
        Backend::Postgres => "GREATEST",
        Backend::Sqlite => "MAX",
    };
    let mut tx = db.begin().await?;
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
        // Nothing taken, nothing stored.
        Err(why) => {
            tx.rollback().await?;
            return Ok(Taken::SignFailed(why));
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
pub async fn nonce_senders(db: &Db) -> Result<Vec<(String, String, u64)>, StoreError> {
    sqlx::query("SELECT chain, sender, next_nonce FROM relayer_nonces ORDER BY chain, sender")
        .fetch_all(&db.pool)
        .await?
        .iter()
        .map(|r| Ok((r.try_get("chain")?, r.try_get("sender")?, r.try_get::<i64, _>("next_nonce")? as u64)))
        .collect()
}

/// The signed bytes stored for (chain, sender) at nonces `from..to`
/// (settlement transactions and fillers), one entry per distinct hash.
pub async fn signed_at_nonces(db: &Db, chain: &str, sender: &str, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>, String)>, StoreError> {
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
            let raw = hex::decode(r.try_get::<String, _>("raw")?).map_err(|e| StoreError::Decode(e.to_string()))?;
            Ok((r.try_get::<i64, _>("nonce")? as u64, raw, r.try_get("tx_hash")?))
        })
        .collect()
}

/// Store a filler transaction before it is broadcast. `false` when this
/// nonce has one already (another replica filled it).
pub async fn insert_filler(
    db: &Db,
    chain: &str,
    sender: &str,
    nonce: u64,
    raw: &[u8],
    hash: &str,
    now_ms: i64,
) -> Result<bool, StoreError> {
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
