//! Registered swaps (`swap_intents`): registration idempotent on (chain,
//! transaction), the tracker's lease, and compare-and-set outcomes.

use sqlx::Row;

use super::StoreError;
use crate::db::Db;

#[derive(Debug, Clone)]
pub struct SwapIntent {
    pub id: String,
    pub from_chain: String,
    pub to_chain: String,
    pub source_tx_hash: String,
    pub from_token: String,
    pub to_token: String,
    pub payer_address: String,
    pub recipient_address: String,
    pub sending_token_amount: String,
    pub status: String,
    pub substatus: Option<String>,
    pub dest_tx_hash: Option<String>,
    pub received_amount: Option<String>,
    pub error_code: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub(crate) const COLUMNS: &str = "id, from_chain, to_chain, source_tx_hash, from_token, to_token, payer_address, recipient_address, \
                       sending_token_amount, status, substatus, dest_tx_hash, received_amount, error_code, created_at, updated_at";

pub(crate) fn row(r: &sqlx::any::AnyRow) -> Result<SwapIntent, StoreError> {
    Ok(SwapIntent {
        id: r.try_get("id")?,
        from_chain: r.try_get("from_chain")?,
        to_chain: r.try_get("to_chain")?,
        source_tx_hash: r.try_get("source_tx_hash")?,
        from_token: r.try_get("from_token")?,
        to_token: r.try_get("to_token")?,
        payer_address: r.try_get("payer_address")?,
        recipient_address: r.try_get("recipient_address")?,
        sending_token_amount: r.try_get("sending_token_amount")?,
        status: r.try_get("status")?,
        substatus: r.try_get("substatus")?,
        dest_tx_hash: r.try_get("dest_tx_hash")?,
        received_amount: r.try_get("received_amount")?,
        error_code: r.try_get("error_code")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

/// A registration of (`chain`, `tx`) stored before registrations kept
/// their details (migration 0019), if any.
pub async fn legacy(db: &Db, chain: &str, tx: &str) -> Result<Option<SwapIntent>, StoreError> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM swap_intents WHERE from_chain = $1 AND source_tx_hash = $2 AND details = ''"))
        .bind(chain)
        .bind(tx)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(row)
        .transpose()
}

pub async fn get(db: &Db, id: &str) -> Result<Option<SwapIntent>, StoreError> {
    sqlx::query(&format!("SELECT {COLUMNS} FROM swap_intents WHERE id = $1"))
        .bind(id)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| row(&r))
        .transpose()
}

/// Pending swaps due a look, leased to `holder` until `now + lease_ms`
/// (each by compare-and-set, so one replica follows each at a time).
pub async fn claim_due(db: &Db, holder: &str, now: i64, lease_ms: i64, limit: i64) -> Result<Vec<SwapIntent>, StoreError> {
    let due = sqlx::query(
        "SELECT id FROM swap_intents WHERE status = 'PENDING' AND next_check_at <= $1 AND lease_until < $1 ORDER BY next_check_at LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    let mut claimed = Vec::new();
    for r in due {
        let id: String = r.try_get("id")?;
        let won = sqlx::query(
            "UPDATE swap_intents SET lease_until = $1, lease_holder = $2 WHERE id = $3 AND status = 'PENDING' AND lease_until < $4",
        )
        .bind(now + lease_ms)
        .bind(holder)
        .bind(&id)
        .bind(now)
        .execute(&db.pool)
        .await?
        .rows_affected();
        if won == 1 {
            claimed.extend(get(db, &id).await?);
        }
    }
    Ok(claimed)
}

/// What the tracker found.
pub struct Outcome<'a> {
    pub status: &'a str,
    pub substatus: Option<&'a str>,
    pub dest_tx_hash: Option<&'a str>,
    pub received_amount: Option<&'a str>,
    pub error_code: Option<&'a str>,
}

impl<'a> Outcome<'a> {
    /// An end with nothing received: only a status and why.
    pub fn ended(status: &'a str, error_code: &'a str) -> Outcome<'a> {
        Outcome { status, substatus: None, dest_tx_hash: None, received_amount: None, error_code: Some(error_code) }
    }
}

/// Still pending: look again at `next`, noting what is known so far.
pub async fn later(db: &Db, id: &str, holder: &str, substatus: Option<&str>, next: i64, now: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE swap_intents SET substatus = $1, next_check_at = $2, lease_until = 0, updated_at = $3 WHERE id = $4 AND status = 'PENDING' AND lease_holder = $5")
        .bind(substatus)
        .bind(next)
        .bind(now)
        .bind(id)
        .bind(holder)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// Registered swaps paid from any of `payers` (an account's hosted
/// wallets), newest first. EVM addresses match in any case; others exactly.
pub async fn by_payers(db: &Db, payers: &[String], limit: i64) -> Result<Vec<SwapIntent>, StoreError> {
    if payers.is_empty() {
        return Ok(vec![]);
    }
    let lowered: Vec<String> = payers.iter().map(|p| p.to_lowercase()).collect();
    let sql = format!(
        "SELECT {COLUMNS} FROM swap_intents WHERE lower(payer_address) IN ({}) ORDER BY created_at DESC, id DESC LIMIT ${}",
        crate::store::numbered_params(1, lowered.len()),
        lowered.len() + 1
    );
    let mut q = sqlx::query(&sql);
    for p in &lowered {
        q = q.bind(p);
    }
    let rows = q.bind(limit).fetch_all(&db.read).await?;
    let ours = |a: &str| payers.iter().any(|p| p == a || (a.starts_with("0x") && p.eq_ignore_ascii_case(a)));
    Ok(rows.iter().map(row).collect::<Result<Vec<_>, _>>()?.into_iter().filter(|s| ours(&s.payer_address)).collect())
}
