//! Where an account's email is paid: one address per target chain,
//! checked as a `recipient` is at create.

use crate::config::Role;
use crate::state::AppState;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum PayoutError {
    #[error("that chain does not receive payments here")]
    UnknownChain,
    #[error("that is not a valid address on this chain")]
    InvalidAddress,
    #[error("that address cannot receive payments")]
    Unreceivable,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The target chains an account may name an address on.
pub fn chains(s: &AppState) -> Vec<String> {
    s.config.chains_with_role(Role::Target)
}

/// Set (or replace) the address; returns it as the chain writes it.
pub async fn set(s: &AppState, account: &str, chain: &str, address: &str) -> Result<String, PayoutError> {
    if !chains(s).iter().any(|c| c == chain) {
        return Err(PayoutError::UnknownChain);
    }
    let family = s.config.chains[chain].family;
    let adapter = s.registry.any_for_family(family).ok_or(PayoutError::UnknownChain)?;
    let address = match adapter.normalize_address(family, address.trim()).await {
        Ok(Ok(a)) => a,
        _ => return Err(PayoutError::InvalidAddress),
    };
    if unreceivable(s, chain, &address).await {
        return Err(PayoutError::Unreceivable);
    }
    crate::store::dashboard::set_payout(&s.db, account, chain, &address, crate::clock::now_ms()).await?;
    Ok(address)
}

/// The zero address, a token contract of the chain, a wallet of this
/// service, or a listed address.
async fn unreceivable(s: &AppState, chain: &str, address: &str) -> bool {
    let c = &s.config.chains[chain];
    let facts = c.family.facts();
    if facts.is_zero(address) || s.sanctions.is_listed(address) {
        return true;
    }
    if c.assets.values().any(|a| !a.token.is_empty() && facts.same_address(&a.token, address)) {
        return true;
    }
    s.is_service_wallet(chain, address).await
}
