//! The hosted wallets of an agent's owner account, each with its balances
//! on every exposed chain of its family, priced where the swap provider's
//! token list (fresh enough) knows the token.

use rust_decimal::{Decimal, RoundingStrategy};

use crate::config::Family;
use crate::family::chain::ChainError;
use crate::family::Balance;
use crate::state::AppState;
use crate::store::agents::Agent;
use crate::store::StoreError;
use crate::swap::prices::Prices;

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
    pub balances: Vec<Priced>,
}

/// A balance with what the provider's token list says of its token, where
/// a fresh enough list has it.
pub struct Priced {
    pub balance: Balance,
    pub symbol: Option<String>,
    pub logo_uri: Option<String>,
    pub price_usd: Option<Decimal>,
    /// The balance times the price, rounded to the cent.
    pub value_usd: Option<Decimal>,
}

/// The native coin as LI.FI's token lists name it: the zero address.
fn native_address(family: Family) -> &'static str {
    family.facts().zero_address()
}

fn priced(s: &AppState, family: Family, b: Balance) -> Priced {
    let chain = s.config.chains.get(&b.chain);
    let token = match chain {
        Some(c) if b.asset == c.native_asset => Some(native_address(family).to_string()),
        Some(c) => c.assets.get(&b.asset).map(|a| a.token.clone()).filter(|t| !t.is_empty()),
        None => None,
    };
    // Prices only where swaps are offered (the provider knows the chain).
    let facts = match (token, s.swaps.chain(&b.chain)) {
        (Some(token), Ok(swap_chain)) => Prices::facts(&s.swaps, swap_chain.lifi_id, &token),
        _ => None,
    };
    let Some(f) = facts else { return Priced { balance: b, symbol: None, logo_uri: None, price_usd: None, value_usd: None } };
    let amount = i128::try_from(b.raw).ok().and_then(|raw| Decimal::try_from_i128_with_scale(raw, u32::from(b.decimals)).ok());
    let value_usd = match (amount, f.price_usd) {
        (Some(a), Some(p)) => a.checked_mul(p).map(|v| v.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)),
        _ => None,
    };
    Priced { balance: b, symbol: f.symbol, logo_uri: f.logo_uri, price_usd: f.price_usd, value_usd }
}

pub async fn balances(s: &AppState, agent: &Agent) -> Result<Vec<Wallet>, BalancesError> {
    let account = agent.account_id.as_deref().ok_or(BalancesError::NoOwner)?;
    let mut wallets = Vec::new();
    for (name, address) in crate::store::agents::account_wallets(&s.db, account).await? {
        let family = crate::family::keys::family_of(&name);
        let balances = of_wallet(s, family, &address).await.map_err(BalancesError::Chain)?;
        wallets.push(Wallet { address, family, balances });
    }
    Ok(wallets)
}

/// One wallet's priced balances on every exposed chain of its family.
pub async fn of_wallet(s: &AppState, family: Family, address: &str) -> Result<Vec<Priced>, ChainError> {
    let balances = crate::wallets::of_family(&s.config, &s.drivers, family, address).await?;
    Ok(balances.into_iter().map(|b| priced(s, family, b)).collect())
}
