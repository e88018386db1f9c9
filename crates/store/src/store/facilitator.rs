//! The x402 facilitator's settlements and keys. A settlement row is also its
//! queue entry: workers lease `queued` rows by compare-and-set, as the
//! settlement queue does for intents.

use sqlx::Row;

use crate::db::Db;
use crate::store::settlement::{lease, Leased};
use crate::store::StoreError;

/// Where a settlement stands. `Queued` may already have a transaction out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettlementStatus {
    Queued,
    Settled,
    Failed,
}

impl SettlementStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SettlementStatus::Queued => "queued",
            SettlementStatus::Settled => "settled",
            SettlementStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "queued" => SettlementStatus::Queued,
            "settled" => SettlementStatus::Settled,
            "failed" => SettlementStatus::Failed,
            other => return Err(StoreError::Decode(format!("settlement status `{other}`"))),
        })
    }
}

#[derive(Debug, Clone)]
pub struct Settlement {
    pub id: String,
    pub replay_key: String,
    pub payload_hash: String,
    pub payment_id: Option<String>,
    pub client: String,
    pub chain: String,
    pub asset: String,
    pub network: String,
    pub scheme: String,
    pub payer: String,
    pub pay_to: String,
    pub amount: String,
    /// The caller's PaymentRequirements and PaymentPayload, as JSON text.
    pub requirements: String,
    pub payload: String,
    pub status: SettlementStatus,
    /// x402's reason code when it failed.
    pub error_reason: Option<String>,
    /// The settling transaction once it is final.
    pub tx_hash: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub(crate) const COLUMNS: &str = "id, replay_key, payload_hash, payment_id, client, chain, asset, network, scheme, payer, pay_to, amount, \
                       requirements, payload, status, error_reason, tx_hash, created_at, updated_at";

fn settlement(r: &sqlx::any::AnyRow) -> Result<Settlement, StoreError> {
    Ok(Settlement {
        id: r.try_get("id")?,
        replay_key: r.try_get("replay_key")?,
        payload_hash: r.try_get("payload_hash")?,
        payment_id: r.try_get("payment_id")?,
        client: r.try_get("client")?,
        chain: r.try_get("chain")?,
        asset: r.try_get("asset")?,
        network: r.try_get("network")?,
        scheme: r.try_get("scheme")?,
        payer: r.try_get("payer")?,
        pay_to: r.try_get("pay_to")?,
        amount: r.try_get("amount")?,
        requirements: r.try_get("requirements")?,
        payload: r.try_get("payload")?,
        status: SettlementStatus::parse(&r.try_get::<String, _>("status")?)?,
        error_reason: r.try_get("error_reason")?,
        tx_hash: r.try_get("tx_hash")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

pub async fn get(db: &Db, id: &str) -> Result<Option<Settlement>, StoreError> {
    let q = format!("SELECT {COLUMNS} FROM x402_settlements WHERE id = $1");
    sqlx::query(&q).bind(id).fetch_optional(&db.read).await?.as_ref().map(settlement).transpose()
}

pub async fn by_payload_hash(db: &Db, hash: &str) -> Result<Option<Settlement>, StoreError> {
    // A row refused with nothing sent let go of its authorization (its
    // replay key is its id): it answers nothing for the payment any more.
    let q = format!("SELECT {COLUMNS} FROM x402_settlements WHERE payload_hash = $1 AND replay_key <> id ORDER BY created_at LIMIT 1");
    sqlx::query(&q).bind(hash).fetch_optional(&db.read).await?.as_ref().map(settlement).transpose()
}

pub async fn by_replay_key(db: &Db, key: &str) -> Result<Option<Settlement>, StoreError> {
    let q = format!("SELECT {COLUMNS} FROM x402_settlements WHERE replay_key = $1");
    sqlx::query(&q).bind(key).fetch_optional(&db.read).await?.as_ref().map(settlement).transpose()
}

pub async fn by_payment_id(db: &Db, payer: &str, payment_id: &str) -> Result<Option<Settlement>, StoreError> {
    let q = format!("SELECT {COLUMNS} FROM x402_settlements WHERE payer = $1 AND payment_id = $2");
    sqlx::query(&q).bind(payer).bind(payment_id).fetch_optional(&db.read).await?.as_ref().map(settlement).transpose()
}

/// What an operator looks a settlement up by.
pub enum Lookup<'a> {
    Id(&'a str),
    Transaction(&'a str),
    Payer(&'a str),
}

/// A page of settlements: whose (a key's name, or every key's), at most
/// `limit`, after the settlement `before` (an id) in newest-first order.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    pub client: Option<&'a str>,
    pub limit: i64,
    pub before: Option<&'a str>,
}

/// Settlements matching `by`, newest first, one page. A transaction is
/// matched whether it is final or only sent. The key filter is in the query,
/// so a key never misses its own rows behind other keys'.
pub async fn find(db: &Db, by: Lookup<'_>, page: Page<'_>) -> Result<Vec<Settlement>, StoreError> {
    let (filter, value) = match by {
        Lookup::Id(v) => ("s.id = $1", v),
        Lookup::Transaction(v) => {
            ("(s.tx_hash = $1 OR s.id IN (SELECT intent_id FROM chain_transactions WHERE leg = 'x402' AND lower(tx_hash) = lower($1)))", v)
        }
        Lookup::Payer(v) => ("lower(s.payer) = lower($1)", v),
    };
    let columns = COLUMNS.split(", ").map(|c| format!("s.{c}")).collect::<Vec<_>>().join(", ");
    let q = format!(
        "SELECT {columns} FROM x402_settlements s WHERE {filter} \
         AND ($2 IS NULL OR s.client = $2) \
         AND ($3 IS NULL OR EXISTS (SELECT 1 FROM x402_settlements b WHERE b.id = $3 \
              AND (s.created_at < b.created_at OR (s.created_at = b.created_at AND s.id < b.id)))) \
         ORDER BY s.created_at DESC, s.id DESC LIMIT $4"
    );
    sqlx::query(&q)
        .bind(value)
        .bind(page.client)
        .bind(page.before)
        .bind(page.limit)
        .fetch_all(&db.read)
        .await?
        .iter()
        .map(settlement)
        .collect()
}

const LEDGER: Leased = Leased { table: "x402_settlements", key: "id", due: "status = 'queued'", order: "available_at" };

/// Lease up to `max` due settlements (see `settlement::claim`).
pub async fn claim(db: &Db, holder: &str, now_ms: i64, lease_ms: i64, max: usize) -> Result<Vec<String>, StoreError> {
    lease(db, LEDGER, holder, now_ms, lease_ms, max).await
}

/// Release the lease; come back at `available_at`.
pub async fn reschedule(db: &Db, id: &str, available_at: i64, failed: bool) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE x402_settlements SET locked_by = NULL, locked_until = NULL, available_at = $1, attempts = attempts + $2 \
         WHERE id = $3 AND status = 'queued'",
    )
    .bind(available_at)
    .bind(i32::from(failed))
    .bind(id)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Extend this holder's lease on a queued settlement to `until_ms`:
/// `false` when it is not (or no longer) `holder`'s.
pub async fn renew(db: &Db, id: &str, holder: &str, until_ms: i64) -> Result<bool, StoreError> {
    crate::store::settlement::renew_in(db, LEDGER, id, holder, until_ms).await
}

/// Release `holder`'s lease (only its own); come back at `available_at`.
pub async fn release(db: &Db, id: &str, holder: &str, available_at: i64) -> Result<(), StoreError> {
    crate::store::settlement::release_in(db, LEDGER, id, holder, available_at).await
}

/// What a settlement ends with: status, transaction, reason, and whether
/// it was refused with nothing sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: SettlementStatus,
    pub tx_hash: Option<String>,
    pub error_reason: Option<String>,
    /// Refused before anything was sent for it: the row stays (failed, for
    /// operators and for requests waiting on it) but lets go of the
    /// authorization's replay key and payment id, so the same payment can be
    /// settled again once the cause is gone (the payer funded), as when a
    /// refusal came before the row was written.
    pub refused: bool,
}

/// Claim the one success answer of a settled payment: `true` for the first
/// caller only (compare-and-set).
pub async fn claim_answer(db: &Db, id: &str) -> Result<bool, StoreError> {
    let done = sqlx::query("UPDATE x402_settlements SET answered = 1 WHERE id = $1 AND status = 'settled' AND answered = 0")
        .bind(id)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Store a facilitator key's MAC under a name, with the receivers it
/// speaks for (lowercase hex), in one transaction; `Duplicate` if the name
/// is taken.
pub async fn add_key(db: &Db, id: &str, name: &str, secret_hash: &str, receivers: &[String], now_ms: i64) -> Result<(), StoreError> {
    let mut tx = db.begin().await?;
    sqlx::query("INSERT INTO facilitator_keys (id, name, secret_hash, created_at) VALUES ($1, $2, $3, $4)")
        .bind(id)
        .bind(name)
        .bind(secret_hash)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
    for address in receivers {
        sqlx::query("INSERT INTO facilitator_key_receivers (key_name, address, created_at) VALUES ($1, $2, $3)")
            .bind(name)
            .bind(address)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The receivers a live key speaks for: lowercase hex addresses (on
/// every EVM network) or CAIP-10 ids `eip155:CHAIN_ID:0x…` (on that one).
pub async fn key_receivers(db: &Db, name: &str) -> Result<Vec<String>, StoreError> {
    let rows = sqlx::query(
        "SELECT r.address FROM facilitator_key_receivers r JOIN facilitator_keys k ON k.name = r.key_name \
         WHERE r.key_name = $1 AND k.revoked_at IS NULL",
    )
    .bind(name)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| r.try_get("address").map_err(Into::into)).collect()
}

/// The live key with this MAC: its name.
pub async fn key_by_hash(db: &Db, secret_hash: &str) -> Result<Option<String>, StoreError> {
    let row = sqlx::query("SELECT name FROM facilitator_keys WHERE secret_hash = $1 AND revoked_at IS NULL")
        .bind(secret_hash)
        .fetch_optional(&db.read)
        .await?;
    Ok(row.map(|r| r.try_get("name")).transpose()?)
}

/// Revoke a key by name; `false` when there is no live key of that name.
pub async fn revoke_key(db: &Db, name: &str, now_ms: i64) -> Result<bool, StoreError> {
    let done = sqlx::query("UPDATE facilitator_keys SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL")
        .bind(now_ms)
        .bind(name)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Is there a live key of this name?
pub async fn key_is_live(db: &Db, name: &str) -> Result<bool, StoreError> {
    let row = sqlx::query("SELECT 1 AS one FROM facilitator_keys WHERE name = $1 AND revoked_at IS NULL")
        .bind(name)
        .fetch_optional(&db.pool)
        .await?;
    Ok(row.is_some())
}
