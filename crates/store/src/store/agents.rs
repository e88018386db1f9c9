//! Accounts, agents, their API keys, and the recipient directory.

use sqlx::Row;

use super::{is_unique_violation, StoreError};
use crate::db::Db;

/// Agents per account (spec: Limits).
pub const MAX_AGENTS_PER_ACCOUNT: i64 = 10;

#[derive(Debug, Clone)]
pub struct Agent {
    pub id: String,
    pub agent_number: String,
    pub name: String,
    pub status: String,
    pub account_id: Option<String>,
    /// The hosted EVM wallet, when the agent has one.
    pub wallet_address: Option<String>,
    /// The hosted Solana wallet, when the agent has one.
    pub solana_wallet_address: Option<String>,
    pub tron_wallet_address: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("account {0} not found")]
    NoAccount(String),
    #[error("account {0} already has {MAX_AGENTS_PER_ACCOUNT} agents")]
    TooMany(String),
    #[error("agent {0} not found")]
    NoAgent(String),
    #[error("account {0} is disabled")]
    AccountDisabled(String),
    #[error(transparent)]
    Db(#[from] StoreError),
}

impl From<sqlx::Error> for AgentError {
    fn from(e: sqlx::Error) -> Self {
        AgentError::Db(e.into())
    }
}

pub async fn create_account(db: &Db, name: &str, now_ms: i64) -> Result<String, StoreError> {
    let id = uuid::Uuid::new_v4().to_string();
    sqlx::query("INSERT INTO accounts (id, name, agent_count, created_at) VALUES ($1, $2, 0, $3)")
        .bind(&id)
        .bind(name)
        .bind(now_ms)
        .execute(&db.pool)
        .await?;
    Ok(id)
}

/// Create an agent, owned by `account` when given. The account's agent
/// count is bumped by compare-and-set, so the limit holds under concurrency.
pub async fn create_agent(db: &Db, account: Option<&str>, name: &str, now_ms: i64) -> Result<Agent, AgentError> {
    for _ in 0..8 {
        let mut tx = db.begin().await?;
        if let Some(acc) = account {
            let bumped =
                sqlx::query("UPDATE accounts SET agent_count = agent_count + 1 WHERE id = $1 AND agent_count < $2 AND status = 'active'")
                    .bind(acc)
                    .bind(MAX_AGENTS_PER_ACCOUNT)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if bumped != 1 {
                let status: Option<String> = sqlx::query("SELECT status FROM accounts WHERE id = $1")
                    .bind(acc)
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(|r| r.try_get("status").map_err(StoreError::from))
                    .transpose()?;
                tx.rollback().await?;
                return Err(match status.as_deref() {
                    None => AgentError::NoAccount(acc.into()),
                    Some("active") => AgentError::TooMany(acc.into()),
                    Some(_) => AgentError::AccountDisabled(acc.into()),
                });
            }
        }
        let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM agents").fetch_one(&mut *tx).await?.try_get("n")?;
        let agent = Agent {
            id: uuid::Uuid::new_v4().to_string(),
            agent_number: format!("{:06}", n + 1),
            name: name.into(),
            status: "active".into(),
            account_id: account.map(str::to_string),
            wallet_address: None,
            solana_wallet_address: None,
            tron_wallet_address: None,
        };
        let inserted =
            sqlx::query("INSERT INTO agents (id, agent_number, account_id, name, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
                .bind(&agent.id)
                .bind(&agent.agent_number)
                .bind(&agent.account_id)
                .bind(&agent.name)
                .bind(&agent.status)
                .bind(now_ms)
                .execute(&mut *tx)
                .await;
        match inserted {
            Ok(_) => {
                tx.commit().await?;
                return Ok(agent);
            }
            // Another agent took this number concurrently: try the next one.
            Err(e) if is_unique_violation(&e) => tx.rollback().await?,
            Err(e) => return Err(e.into()),
        }
    }
    Err(AgentError::Db(StoreError::Database(sqlx::Error::Protocol("could not allocate an agent number".into()))))
}

async fn insert_key(tx: &mut crate::db::Tx, agent_id: &str, api_key: &str, secret_hmac: &str, now_ms: i64) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO api_keys (api_key, agent_id, secret_hmac, created_at) VALUES ($1, $2, $3, $4)")
        .bind(api_key)
        .bind(agent_id)
        .bind(secret_hmac)
        .bind(now_ms)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Issue a key pair for an agent, revoking the ones it had (rotation).
pub async fn replace_key(db: &Db, agent_id: &str, api_key: &str, secret_hmac: &str, now_ms: i64) -> Result<(), AgentError> {
    let mut tx = db.begin().await?;
    if sqlx::query("SELECT 1 AS one FROM agents WHERE id = $1").bind(agent_id).fetch_optional(&mut *tx).await?.is_none() {
        return Err(AgentError::NoAgent(agent_id.into()));
    }
    sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE agent_id = $2 AND revoked_at IS NULL")
        .bind(now_ms)
        .bind(agent_id)
        .execute(&mut *tx)
        .await?;
    insert_key(&mut tx, agent_id, api_key, secret_hmac, now_ms).await?;
    tx.commit().await?;
    Ok(())
}

/// The agent holding a live API key, the stored HMAC of its secret, and
/// when the key was last used.
pub async fn by_api_key(db: &Db, api_key: &str) -> Result<Option<(Agent, String, Option<i64>)>, StoreError> {
    let row = sqlx::query(
        "SELECT a.id, a.agent_number, a.name, a.status, a.account_id, k.secret_hmac, k.last_used_at, w.address AS wallet_address, \
         s.address AS solana_wallet_address, t.address AS tron_wallet_address \
         FROM api_keys k JOIN agents a ON a.id = k.agent_id \
         LEFT JOIN wallet_keys w ON w.name = 'agent:' || a.id || ':evm' \
         LEFT JOIN wallet_keys s ON s.name = 'agent:' || a.id || ':solana' \
         LEFT JOIN wallet_keys t ON t.name = 'agent:' || a.id || ':tron' \
         WHERE k.api_key = $1 AND k.revoked_at IS NULL",
    )
    .bind(api_key)
    .fetch_optional(&db.read)
    .await?;
    row.map(|r| {
        Ok((
            Agent {
                id: r.try_get("id")?,
                agent_number: r.try_get("agent_number")?,
                name: r.try_get("name")?,
                status: r.try_get("status")?,
                account_id: r.try_get("account_id")?,
                wallet_address: r.try_get("wallet_address")?,
                solana_wallet_address: r.try_get("solana_wallet_address")?,
                tron_wallet_address: r.try_get("tron_wallet_address")?,
            },
            r.try_get("secret_hmac")?,
            r.try_get("last_used_at")?,
        ))
    })
    .transpose()
}

/// Live key pairs an agent may hold at once (the dashboard's rotation
/// makes a second before revoking the first).
pub const MAX_LIVE_KEYS_PER_AGENT: i64 = 5;

/// Key pairs an agent may be given in a day: revoked keys stay listed, so
/// making and revoking in a loop must not grow the table without bound.
pub const MAX_NEW_KEYS_PER_DAY: i64 = 20;

/// A key as the dashboard lists it: never the secret's MAC.
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub api_key: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// Add a key pair to an agent without revoking its others; `false` when it
/// already holds `MAX_LIVE_KEYS_PER_AGENT` live ones or was given
/// `MAX_NEW_KEYS_PER_DAY` in the last day. The no-op update
/// locks the agent's row, so two adds at once count one after the other.
pub async fn add_key(db: &Db, agent_id: &str, api_key: &str, secret_hmac: &str, now_ms: i64) -> Result<bool, AgentError> {
    let mut tx = db.begin().await?;
    let locked = sqlx::query("UPDATE agents SET name = name WHERE id = $1 AND status = 'active'")
        .bind(agent_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if locked != 1 {
        return Err(AgentError::NoAgent(agent_id.into()));
    }
    let live: i64 = sqlx::query("SELECT COUNT(*) AS n FROM api_keys WHERE agent_id = $1 AND revoked_at IS NULL")
        .bind(agent_id)
        .fetch_one(&mut *tx)
        .await?
        .try_get("n")?;
    let today: i64 = sqlx::query("SELECT COUNT(*) AS n FROM api_keys WHERE agent_id = $1 AND created_at > $2")
        .bind(agent_id)
        .bind(now_ms - 86_400_000)
        .fetch_one(&mut *tx)
        .await?
        .try_get("n")?;
    if live >= MAX_LIVE_KEYS_PER_AGENT || today >= MAX_NEW_KEYS_PER_DAY {
        tx.rollback().await?;
        return Ok(false);
    }
    insert_key(&mut tx, agent_id, api_key, secret_hmac, now_ms).await?;
    tx.commit().await?;
    Ok(true)
}

/// An agent's keys, newest first.
pub async fn keys_of(db: &Db, agent_id: &str) -> Result<Vec<KeyRow>, StoreError> {
    let rows = sqlx::query(
        "SELECT api_key, created_at, last_used_at, revoked_at FROM api_keys WHERE agent_id = $1 ORDER BY created_at DESC, api_key",
    )
    .bind(agent_id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(KeyRow {
                api_key: r.try_get("api_key")?,
                created_at: r.try_get("created_at")?,
                last_used_at: r.try_get("last_used_at")?,
                revoked_at: r.try_get("revoked_at")?,
            })
        })
        .collect()
}

/// Revoke one live key of one agent; `false` if it has no such live key.
pub async fn revoke_key(db: &Db, agent_id: &str, api_key: &str, now_ms: i64) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE agent_id = $2 AND api_key = $3 AND revoked_at IS NULL")
        .bind(now_ms)
        .bind(agent_id)
        .bind(api_key)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// Record a key's use, unless one was recorded in the last minute.
pub async fn touch_key(db: &Db, api_key: &str, now_ms: i64) -> Result<(), StoreError> {
    sqlx::query("UPDATE api_keys SET last_used_at = $1 WHERE api_key = $2 AND (last_used_at IS NULL OR last_used_at <= $3)")
        .bind(now_ms)
        .bind(api_key)
        .bind(now_ms - KEY_USE_RESOLUTION_MS)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// How fine a key's last use is kept: one write per key per minute at most.
pub const KEY_USE_RESOLUTION_MS: i64 = 60_000;

/// Rename one of `account`'s agents; `false` if it has no such agent.
pub async fn rename_agent(db: &Db, account: &str, id: &str, name: &str) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE agents SET name = $1 WHERE id = $2 AND account_id = $3")
        .bind(name)
        .bind(id)
        .bind(account)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// Map an email to a wallet on a chain (replacing an earlier mapping).
pub async fn set_recipient(db: &Db, email: &str, chain: &str, address: &str) -> Result<(), StoreError> {
    let email = email.trim().to_lowercase();
    let mut tx = db.begin().await?;
    sqlx::query("DELETE FROM recipients WHERE email = $1 AND chain = $2").bind(&email).bind(chain).execute(&mut *tx).await?;
    sqlx::query("INSERT INTO recipients (email, chain, address) VALUES ($1, $2, $3)")
        .bind(&email)
        .bind(chain)
        .bind(address)
        .execute(&mut *tx)
        .await?;
    Ok(tx.commit().await?)
}

/// Where EMAIL is paid on CHAIN: the payout address its verified account
/// set on the dashboard; for an email with no account, the operator's
/// directory.
pub async fn recipient(db: &Db, email: &str, chain: &str) -> Result<Option<String>, StoreError> {
    let email = super::dashboard::normal_email(email);
    if super::dashboard::account_by_email(db, &email).await?.is_some() {
        return super::dashboard::payout_for_email(db, &email, chain).await;
    }
    sqlx::query("SELECT address FROM recipients WHERE email = $1 AND chain = $2 AND disabled_at IS NULL")
        .bind(email)
        .bind(chain)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| r.try_get("address").map_err(StoreError::from))
        .transpose()
}

/// Addresses of the hosted wallets of every agent of `account`, oldest agent first.
/// The hosted wallets of an account's agents, every family: (key name, address).
pub async fn account_wallets(db: &Db, account: &str) -> Result<Vec<(String, String)>, StoreError> {
    let rows = sqlx::query(
        "SELECT w.name, w.address FROM agents a JOIN wallet_keys w ON w.name LIKE 'agent:' || a.id || ':%' \
         WHERE a.account_id = $1 ORDER BY a.created_at, a.id, w.name",
    )
    .bind(account)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(|r| Ok((r.try_get("name")?, r.try_get("address")?))).collect()
}

/// What `account list`/`show` print.
#[derive(Debug, serde::Serialize)]
pub struct AccountRow {
    pub account_id: String,
    pub name: String,
    /// The verified email of a dashboard account.
    pub email: Option<String>,
    pub operator: bool,
    pub status: String,
    pub agent_count: i64,
    pub created_at: String,
}

/// What `agent list`/`show` print (never keys).
#[derive(Debug, serde::Serialize)]
pub struct AgentRow {
    pub agent_id: String,
    pub agent_number: String,
    pub name: String,
    pub status: String,
    pub account_id: Option<String>,
    pub wallet_address: Option<String>,
    pub solana_wallet_address: Option<String>,
    pub tron_wallet_address: Option<String>,
    pub created_at: String,
}

#[derive(Debug, serde::Serialize)]
pub struct RecipientRow {
    pub email: String,
    pub chain: String,
    pub address: String,
    pub status: &'static str,
}

fn account_row(r: &sqlx::any::AnyRow) -> Result<AccountRow, StoreError> {
    Ok(AccountRow {
        account_id: r.try_get("id")?,
        name: r.try_get("name")?,
        email: r.try_get("email")?,
        operator: r.try_get::<i64, _>("operator")? != 0,
        status: r.try_get("status")?,
        agent_count: r.try_get("agent_count")?,
        created_at: crate::clock::rfc3339(r.try_get("created_at")?),
    })
}

pub async fn accounts(db: &Db, id: Option<&str>) -> Result<Vec<AccountRow>, StoreError> {
    let rows = sqlx::query(
        "SELECT id, name, email, operator, status, agent_count, created_at FROM accounts WHERE (CAST($1 AS TEXT) IS NULL OR id = $1) ORDER BY created_at, id",
    )
    .bind(id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(account_row).collect()
}

fn agent_row(r: &sqlx::any::AnyRow) -> Result<AgentRow, StoreError> {
    Ok(AgentRow {
        agent_id: r.try_get("id")?,
        agent_number: r.try_get("agent_number")?,
        name: r.try_get("name")?,
        status: r.try_get("status")?,
        account_id: r.try_get("account_id")?,
        wallet_address: r.try_get("wallet_address")?,
        solana_wallet_address: r.try_get("solana_wallet_address")?,
        tron_wallet_address: r.try_get("tron_wallet_address")?,
        created_at: crate::clock::rfc3339(r.try_get("created_at")?),
    })
}

/// Agents, all or one account's or one.
pub async fn agents(db: &Db, account: Option<&str>, id: Option<&str>) -> Result<Vec<AgentRow>, StoreError> {
    let rows = sqlx::query(
        "SELECT a.id, a.agent_number, a.name, a.status, a.account_id, a.created_at, w.address AS wallet_address, \
         s.address AS solana_wallet_address, t.address AS tron_wallet_address \
         FROM agents a LEFT JOIN wallet_keys w ON w.name = 'agent:' || a.id || ':evm' \
         LEFT JOIN wallet_keys s ON s.name = 'agent:' || a.id || ':solana' \
         LEFT JOIN wallet_keys t ON t.name = 'agent:' || a.id || ':tron' \
         WHERE (CAST($1 AS TEXT) IS NULL OR a.account_id = $1) AND (CAST($2 AS TEXT) IS NULL OR a.id = $2) ORDER BY a.agent_number",
    )
    .bind(account)
    .bind(id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(agent_row).collect()
}

/// Disable an agent: its keys stop authenticating. `false` if none such.
pub async fn disable_agent(db: &Db, id: &str) -> Result<bool, StoreError> {
    let n = sqlx::query("UPDATE agents SET status = 'disabled' WHERE id = $1").bind(id).execute(&db.pool).await?.rows_affected();
    Ok(n == 1)
}

/// Disable an account and every agent of it, in one transaction.
pub async fn disable_account(db: &Db, id: &str) -> Result<bool, StoreError> {
    let mut tx = db.begin().await?;
    let n = sqlx::query("UPDATE accounts SET status = 'disabled' WHERE id = $1").bind(id).execute(&mut *tx).await?.rows_affected();
    sqlx::query("UPDATE agents SET status = 'disabled' WHERE account_id = $1").bind(id).execute(&mut *tx).await?;
    sqlx::query("DELETE FROM sessions WHERE account_id = $1").bind(id).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(n == 1)
}

pub async fn recipients(db: &Db, email: Option<&str>) -> Result<Vec<RecipientRow>, StoreError> {
    let email = email.map(|e| e.trim().to_lowercase());
    let rows = sqlx::query(
        "SELECT email, chain, address, disabled_at FROM recipients WHERE (CAST($1 AS TEXT) IS NULL OR email = $1) ORDER BY email, chain",
    )
    .bind(email)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            let disabled: Option<i64> = r.try_get("disabled_at")?;
            Ok(RecipientRow {
                email: r.try_get("email")?,
                chain: r.try_get("chain")?,
                address: r.try_get("address")?,
                status: if disabled.is_some() { "disabled" } else { "active" },
            })
        })
        .collect()
}

/// Stop resolving EMAIL (on one chain, or on all); how many mappings.
pub async fn disable_recipient(db: &Db, email: &str, chain: Option<&str>, now_ms: i64) -> Result<u64, StoreError> {
    let n = sqlx::query(
        "UPDATE recipients SET disabled_at = $1 WHERE email = $2 AND (CAST($3 AS TEXT) IS NULL OR chain = $3) AND disabled_at IS NULL",
    )
    .bind(now_ms)
    .bind(email.trim().to_lowercase())
    .bind(chain)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(n)
}

/// The agent (and its account) whose hosted wallet is `address`, if one is.
/// EVM addresses match in any case; others exactly.
pub async fn owner_of_wallet(db: &Db, address: &str) -> Result<Option<(String, Option<String>)>, StoreError> {
    let (column, value) =
        if address.starts_with("0x") { ("lower(w.address)", address.to_lowercase()) } else { ("w.address", address.to_string()) };
    let r = sqlx::query(&format!(
        "SELECT a.id, a.account_id FROM wallet_keys w JOIN agents a ON w.name IN ('agent:' || a.id || ':evm', \
         'agent:' || a.id || ':solana', 'agent:' || a.id || ':tron') WHERE w.name LIKE 'agent:%' AND {column} = $1"
    ))
    .bind(value)
    .fetch_optional(&db.read)
    .await?;
    r.map(|r| Ok((r.try_get("id")?, r.try_get("account_id")?))).transpose()
}
