//! The hosted wallets of an agent's owner account, each with its balances
//! on every exposed chain of its family.

use crate::chain::ChainError;
use crate::config::Family;
use crate::family::Balance;
use crate::state::AppState;
use crate::store::agents::Agent;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum BalancesError {
    /// 403: the agent has no owner account, so no hosted wallets.
    #[error("agent owner not set")]
    NoOwner,
    /// 502: a chain did not answer (detail logged).
    #[error("failed to retrieve wallet balances")]
    Chain(#[source] ChainError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub struct Wallet {
    pub address: String,
    pub family: Family,
    pub balances: Vec<Balance>,
}

pub async fn balances(s: &AppState, agent: &Agent) -> Result<Vec<Wallet>, BalancesError> {
    let account = agent.account_id.as_deref().ok_or(BalancesError::NoOwner)?;
    let mut wallets = Vec::new();
    for (name, address) in crate::store::agents::account_wallets(&s.db, account).await? {
        let family = crate::keys::family_of(&name);
        let balances = crate::wallets::of_family(&s.config, &s.drivers, family, &address).await.map_err(BalancesError::Chain)?;
        wallets.push(Wallet { address, family, balances });
    }
    Ok(wallets)
}
