//! Agents and their keys, for the CLI and the dashboard alike.

use crate::config::Config;
use crate::db::Db;
use crate::family::keys::{Keystore, Role};
use crate::store::agents::{self as repo, Agent, AgentError};

#[derive(Debug, thiserror::Error)]
pub enum CreateAgentError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("making the agent's hosted wallets: {0:#}")]
    Wallets(anyhow::Error),
}

/// Make an agent (at most `MAX_AGENTS_PER_ACCOUNT` per account, under
/// concurrency) with a hosted wallet for each family the service serves.
pub async fn create(
    db: &Db,
    keys: &Keystore,
    config: &Config,
    account: Option<&str>,
    name: &str,
    now_ms: i64,
) -> Result<Agent, CreateAgentError> {
    let agent = repo::create_agent(db, account, name, now_ms).await?;
    ensure_wallets(keys, config, &agent.id).await.map_err(CreateAgentError::Wallets)?;
    Ok(agent)
}

/// The agent's hosted wallets, made where missing (idempotent).
pub async fn ensure_wallets(keys: &Keystore, config: &Config, agent_id: &str) -> anyhow::Result<()> {
    for family in config.agent_families() {
        keys.ensure(&Role::Agent(agent_id.to_string()).key_name(family)).await?;
    }
    Ok(())
}
