//! The dashboard's rows: sign-in codes, sessions, invitations, accounts by
//! email and where an account's email is paid. Every change that a race
//! could double (a code's tries, its use) is one compare-and-set statement.

use sqlx::Row;

use super::{is_unique_violation, StoreError};
use crate::db::Db;

/// Emails are kept as typed, trimmed and lower-cased.
pub fn normal_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// Store a fresh code for `email` (its HMAC), unless the email is locked
/// out or was sent a code less than `resend_ms` ago. `false`: held back.
pub async fn put_code(db: &Db, email: &str, code_hmac: &str, now: i64, ttl_ms: i64, resend_ms: i64) -> Result<bool, StoreError> {
    let n = sqlx::query(
        "INSERT INTO sign_in_codes (email, code_hmac, attempts, sent_at, expires_at, locked_until) VALUES ($1, $2, 0, $3, $4, 0) \
         ON CONFLICT (email) DO UPDATE SET code_hmac = excluded.code_hmac, sent_at = excluded.sent_at, \
         expires_at = excluded.expires_at WHERE sign_in_codes.locked_until <= $3 AND sign_in_codes.sent_at <= $5",
    )
    .bind(email)
    .bind(code_hmac)
    .bind(now)
    .bind(now + ttl_ms)
    .bind(now - resend_ms)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// The most times a lockout grows (`lockout × (lockouts + 1)`).
pub const MOST_LOCKOUT_STEPS: i64 = 96;

/// What a try of a code found.
pub struct Tried {
    /// The live code's HMAC, to compare the given code with.
    pub code_hmac: String,
    /// This try used up the email's budget: it is locked until then.
    pub locked_until: Option<i64>,
}

/// Spend one try of `email`'s live code: the stored HMAC to compare with,
/// or `None` when there is no live code (none sent, expired, locked out).
/// Tries count per email across codes, in windows of `window_ms` (a new
/// code does not reset them); the try that reaches `max_attempts` locks
/// the email for `lockout_ms` times its lockouts so far plus one (growing,
/// up to `MOST_LOCKOUT_STEPS` times), whatever the caller then finds.
pub async fn try_code(
    db: &Db,
    email: &str,
    now: i64,
    max_attempts: i64,
    lockout_ms: i64,
    window_ms: i64,
) -> Result<Option<Tried>, StoreError> {
    // `counted`: this try's number in its window (old values on the right
    // of SET, on both engines).
    const COUNTED: &str = "(CASE WHEN window_started <= $5 THEN 1 ELSE attempts + 1 END)";
    let sql = format!(
        "UPDATE sign_in_codes SET \
         attempts = CASE WHEN {COUNTED} >= $2 THEN 0 ELSE {COUNTED} END, \
         locked_until = CASE WHEN {COUNTED} >= $2 THEN $4 + $3 * ((CASE WHEN lockouts >= $6 THEN $6 ELSE lockouts END) + 1) ELSE locked_until END, \
         lockouts = CASE WHEN {COUNTED} >= $2 THEN lockouts + 1 ELSE lockouts END, \
         window_started = CASE WHEN window_started <= $5 THEN $4 ELSE window_started END \
         WHERE email = $1 AND expires_at > $4 AND locked_until <= $4 RETURNING code_hmac, locked_until"
    );
    let row = sqlx::query(&sql)
        .bind(email)
        .bind(max_attempts)
        .bind(lockout_ms)
        .bind(now)
        .bind(now - window_ms)
        .bind(MOST_LOCKOUT_STEPS)
        .fetch_optional(&db.pool)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let locked_until: i64 = row.try_get("locked_until")?;
    Ok(Some(Tried { code_hmac: row.try_get("code_hmac")?, locked_until: (locked_until > now).then_some(locked_until) }))
}

/// Use the code up: `true` for exactly one of two racing sign-ins.
pub async fn consume_code(db: &Db, email: &str, code_hmac: &str) -> Result<bool, StoreError> {
    let n = sqlx::query("DELETE FROM sign_in_codes WHERE email = $1 AND code_hmac = $2")
        .bind(email)
        .bind(code_hmac)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// An account as the dashboard knows it.
#[derive(Debug, Clone)]
pub struct Account {
    pub id: String,
    pub email: Option<String>,
    pub status: String,
    pub operator: bool,
}

fn account(r: &sqlx::any::AnyRow) -> Result<Account, StoreError> {
    Ok(Account {
        id: r.try_get("id")?,
        email: r.try_get("email")?,
        status: r.try_get("status")?,
        operator: r.try_get::<i64, _>("operator")? != 0,
    })
}

pub async fn account_by_email(db: &Db, email: &str) -> Result<Option<Account>, StoreError> {
    sqlx::query("SELECT id, email, status, operator FROM accounts WHERE email = $1")
        .bind(email)
        .fetch_optional(&db.pool)
        .await?
        .as_ref()
        .map(account)
        .transpose()
}

/// The account of a verified email, made now if it has none (racing
/// sign-ins of one new email make one account).
pub async fn account_for_email(db: &Db, email: &str, now: i64) -> Result<Account, StoreError> {
    if let Some(a) = account_by_email(db, email).await? {
        return Ok(a);
    }
    let id = uuid::Uuid::new_v4().to_string();
    let inserted = sqlx::query("INSERT INTO accounts (id, name, agent_count, created_at, email) VALUES ($1, $2, 0, $3, $2)")
        .bind(&id)
        .bind(email)
        .bind(now)
        .execute(&db.pool)
        .await;
    match inserted {
        Ok(_) => {}
        Err(e) if is_unique_violation(&e) => {}
        Err(e) => return Err(e.into()),
    }
    account_by_email(db, email).await?.ok_or_else(|| StoreError::Decode("account vanished after insert".into()))
}

pub async fn invite(db: &Db, email: &str, now: i64) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO invitations (email, created_at) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING")
        .bind(email)
        .bind(now)
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn invited(db: &Db, email: &str) -> Result<bool, StoreError> {
    Ok(sqlx::query("SELECT 1 AS one FROM invitations WHERE email = $1").bind(email).fetch_optional(&db.pool).await?.is_some())
}

/// Give (or take) an account the operator pages; `false` if no such account.
pub async fn set_operator(db: &Db, id: &str, on: bool) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE accounts SET operator = $1 WHERE id = $2")
        .bind(i64::from(on))
        .bind(id)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// A session's row, joined with its account.
#[derive(Debug, Clone)]
pub struct Session {
    pub account: Account,
    pub csrf: String,
    pub last_seen_at: i64,
}

pub async fn create_session(db: &Db, token_hash: &str, account: &str, csrf: &str, now: i64, expires_at: i64) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO sessions (token_hash, account_id, csrf, created_at, last_seen_at, expires_at) VALUES ($1, $2, $3, $4, $4, $5)",
    )
    .bind(token_hash)
    .bind(account)
    .bind(csrf)
    .bind(now)
    .bind(expires_at)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// The live session of a token: not past its absolute end, used within
/// `idle_ms`, its account active.
pub async fn session(db: &Db, token_hash: &str, now: i64, idle_ms: i64) -> Result<Option<Session>, StoreError> {
    let row = sqlx::query(
        "SELECT s.csrf, s.last_seen_at, a.id, a.email, a.status, a.operator FROM sessions s JOIN accounts a ON a.id = s.account_id \
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND s.last_seen_at > $3 AND a.status = 'active'",
    )
    .bind(token_hash)
    .bind(now)
    .bind(now - idle_ms)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| Ok(Session { account: account(&r)?, csrf: r.try_get("csrf")?, last_seen_at: r.try_get("last_seen_at")? })).transpose()
}

pub async fn touch_session(db: &Db, token_hash: &str, now: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE sessions SET last_seen_at = $1 WHERE token_hash = $2").bind(now).bind(token_hash).execute(&db.pool).await?;
    Ok(())
}

pub async fn end_session(db: &Db, token_hash: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1").bind(token_hash).execute(&db.pool).await?;
    Ok(())
}

/// Sign out everywhere; how many sessions ended.
pub async fn end_sessions(db: &Db, account: &str) -> Result<u64, StoreError> {
    Ok(sqlx::query("DELETE FROM sessions WHERE account_id = $1").bind(account).execute(&db.pool).await?.rows_affected())
}

/// Delete sessions past their absolute end (an idle one is refused on
/// sight and reaches that end within hours) and dead codes (the sweeper);
/// how many rows.
/// A code row outlives its code while it holds failed tries of the
/// current window, or a lockout of the last day (which the next one grows
/// from): deleting it would give the email its budget back.
pub async fn purge(db: &Db, now: i64, window_ms: i64) -> Result<u64, StoreError> {
    let sessions = sqlx::query("DELETE FROM sessions WHERE expires_at <= $1").bind(now).execute(&db.pool).await?.rows_affected();
    let codes = sqlx::query(
        "DELETE FROM sign_in_codes WHERE expires_at <= $1 AND locked_until <= $1 AND (attempts = 0 OR window_started <= $2) \
         AND (lockouts = 0 OR locked_until <= $3)",
    )
    .bind(now)
    .bind(now - window_ms)
    .bind(now - 24 * 3_600_000)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(sessions + codes)
}

/// Set where `account`'s email is paid on `chain`.
pub async fn set_payout(db: &Db, account: &str, chain: &str, address: &str, now: i64) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO payout_addresses (account_id, chain, address, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (account_id, chain) DO UPDATE SET address = excluded.address, updated_at = excluded.updated_at",
    )
    .bind(account)
    .bind(chain)
    .bind(address)
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn remove_payout(db: &Db, account: &str, chain: &str) -> Result<bool, StoreError> {
    let n = sqlx::query("DELETE FROM payout_addresses WHERE account_id = $1 AND chain = $2")
        .bind(account)
        .bind(chain)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// An account's payout addresses: (chain, address), by chain.
pub async fn payouts(db: &Db, account: &str) -> Result<Vec<(String, String)>, StoreError> {
    let rows = sqlx::query("SELECT chain, address FROM payout_addresses WHERE account_id = $1 ORDER BY chain")
        .bind(account)
        .fetch_all(&db.pool)
        .await?;
    rows.iter().map(|r| Ok((r.try_get("chain")?, r.try_get("address")?))).collect()
}

/// Where a verified, active account's email is paid on `chain`.
pub async fn payout_for_email(db: &Db, email: &str, chain: &str) -> Result<Option<String>, StoreError> {
    sqlx::query(
        "SELECT p.address FROM accounts a JOIN payout_addresses p ON p.account_id = a.id \
         WHERE a.email = $1 AND a.status = 'active' AND p.chain = $2",
    )
    .bind(normal_email(email))
    .bind(chain)
    .fetch_optional(&db.pool)
    .await?
    .map(|r| r.try_get("address").map_err(StoreError::from))
    .transpose()
}
