//! Intents: reads, and the few writes that change no status (a status
//! changes in `store::transition`).

use sqlx::any::AnyRow;
use sqlx::Row;

use super::StoreError;
use crate::db::Db;
use crate::intent::{Intent, Status};

pub(crate) const COLUMNS: &str = "id, agent_id, status, payer_chain, target_chain, payer_asset, target_asset, \
    merchant_recipient, recipient_email, payer_address, amount_mode, sending_amount, receiving_amount, \
    estimated_fee, fee_breakdown, payment_requirements, settle_proof, replay_key, payer, source_tx_hash, \
    source_settled_at, target_tx_hash, target_settle_proof, target_settled_at, error_message, created_at, \
    expires_at, updated_at, error_code, payer_listed, trace";

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
        trace: r.try_get("trace")?,
    })
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

/// What the dashboard's payments page narrows to.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub status: Option<String>,
    /// Either leg's chain.
    pub chain: Option<String>,
}

/// Intents of `account`'s agents (`sent`), or paid to its email
/// (`received`), newest first, at most `limit`.
pub async fn for_account(
    db: &Db,
    account: &str,
    email: Option<&str>,
    sent: bool,
    f: &Filter,
    limit: i64,
) -> Result<Vec<Intent>, StoreError> {
    let whose = if sent { "agent_id IN (SELECT id FROM agents WHERE account_id = $1)" } else { "recipient_email = $1" };
    let who = if sent { Some(account) } else { email };
    let Some(who) = who else { return Ok(vec![]) };
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM intents WHERE {whose} AND (CAST($2 AS TEXT) IS NULL OR status = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR payer_chain = $3 OR target_chain = $3) ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(who)
    .bind(&f.status)
    .bind(&f.chain)
    .bind(limit)
    .fetch_all(&db.read)
    .await?;
    rows.iter().map(from_row).collect()
}

/// Intents that failed or wait with a reason since `since`, by code.
pub async fn failures_by_code(db: &Db, since: i64) -> Result<Vec<(String, i64)>, StoreError> {
    sqlx::query(
        "SELECT error_code, COUNT(*) AS n FROM intents WHERE error_code IS NOT NULL AND updated_at >= $1 \
         GROUP BY error_code ORDER BY n DESC, error_code",
    )
    .bind(since)
    .fetch_all(&db.read)
    .await?
    .iter()
    .map(|r| Ok((r.try_get("error_code")?, r.try_get("n")?)))
    .collect()
}

/// Is a payment from `payer` of `asset` on `chain` other than `except`
/// accepted and not yet settled on the source chain?
pub async fn in_flight_from(db: &Db, chain: &str, asset: &str, payer: &str, except: &str) -> Result<bool, StoreError> {
    let row = sqlx::query(
        "SELECT 1 AS one FROM intents WHERE status = 'PENDING' AND payer_chain = $1 AND payer_asset = $2 \
         AND lower(payer) = lower($3) AND id <> $4 LIMIT 1",
    )
    .bind(chain)
    .bind(asset)
    .bind(payer)
    .bind(except)
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.is_some())
}
