//! Accounts, agents, their API keys, and the recipient directory.

use sqlx::Row;

use super::{is_unique_violation, DbError};
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
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("account {0} not found")]
    NoAccount(String),
    #[error("account {0} already has {MAX_AGENTS_PER_ACCOUNT} agents")]
    TooMany(String),
    #[error("agent {0} not found")]
    NoAgent(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

pub async fn create_account(db: &Db, name: &str, now_ms: i64) -> Result<String, DbError> {
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
        let mut tx = db.pool.begin().await?;
        if let Some(acc) = account {
            let bumped = sqlx::query("UPDATE accounts SET agent_count = agent_count + 1 WHERE id = $1 AND agent_count < $2")
                .bind(acc)
                .bind(MAX_AGENTS_PER_ACCOUNT)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if bumped != 1 {
                let exists = sqlx::query("SELECT 1 AS one FROM accounts WHERE id = $1")
                    .bind(acc)
                    .fetch_optional(&mut *tx)
                    .await?
                    .is_some();
                tx.rollback().await?;
                return Err(if exists { AgentError::TooMany(acc.into()) } else { AgentError::NoAccount(acc.into()) });
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
        };
        let inserted = sqlx::query(
            "INSERT INTO agents (id, agent_number, account_id, name, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
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
    Err(AgentError::Db(DbError::Protocol("could not allocate an agent number".into())))
}

/// Issue a key pair for an agent, revoking the ones it had (rotation).
pub async fn replace_key(db: &Db, agent_id: &str, api_key: &str, secret_hmac: &str, now_ms: i64) -> Result<(), AgentError> {
    let mut tx = db.pool.begin().await?;
    if sqlx::query("SELECT 1 AS one FROM agents WHERE id = $1").bind(agent_id).fetch_optional(&mut *tx).await?.is_none() {
        return Err(AgentError::NoAgent(agent_id.into()));
    }
    sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE agent_id = $2 AND revoked_at IS NULL")
        .bind(now_ms)
        .bind(agent_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO api_keys (api_key, agent_id, secret_hmac, created_at) VALUES ($1, $2, $3, $4)")
        .bind(api_key)
        .bind(agent_id)
        .bind(secret_hmac)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// The agent holding a live API key, and the stored HMAC of its secret.
pub async fn by_api_key(db: &Db, api_key: &str) -> Result<Option<(Agent, String)>, DbError> {
    let row = sqlx::query(
        "SELECT a.id, a.agent_number, a.name, a.status, a.account_id, k.secret_hmac, w.address AS wallet_address \
         FROM api_keys k JOIN agents a ON a.id = k.agent_id \
         LEFT JOIN wallet_keys w ON w.name = 'agent:' || a.id || ':evm' \
         WHERE k.api_key = $1 AND k.revoked_at IS NULL",
    )
    .bind(api_key)
    .fetch_optional(&db.pool)
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
            },
            r.try_get("secret_hmac")?,
        ))
    })
    .transpose()
}

/// Map an email to a wallet on a chain (replacing an earlier mapping).
pub async fn set_recipient(db: &Db, email: &str, chain: &str, address: &str) -> Result<(), DbError> {
    let email = email.trim().to_lowercase();
    let mut tx = db.pool.begin().await?;
    sqlx::query("DELETE FROM recipients WHERE email = $1 AND chain = $2")
        .bind(&email)
        .bind(chain)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO recipients (email, chain, address) VALUES ($1, $2, $3)")
        .bind(&email)
        .bind(chain)
        .bind(address)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

pub async fn recipient(db: &Db, email: &str, chain: &str) -> Result<Option<String>, DbError> {
    sqlx::query("SELECT address FROM recipients WHERE email = $1 AND chain = $2")
        .bind(email.trim().to_lowercase())
        .bind(chain)
        .fetch_optional(&db.pool)
        .await?
        .map(|r| r.try_get("address"))
        .transpose()
}
