//! Balances of a wallet on every exposed chain of its family, read by that
//! family's driver: what `/v2/agents/balances` shows an agent, `stablerail
//! wallets` an operator, and the balance watch the metrics.

use rust_decimal::Decimal;

use crate::config::{Config, Family};
use crate::family::chain::ChainError;
use crate::family::{Balance, Drivers};

/// Balances of `owner` on one chain; none when this build has no driver
/// for the chain's family.
pub async fn on_chain(drivers: &Drivers, chain: &str, owner: &str) -> Result<Vec<Balance>, ChainError> {
    match drivers.for_chain(chain) {
        Some(d) => d.balances(chain, owner).await,
        None => Ok(vec![]),
    }
}

/// Exposed chains of `family`, sorted.
pub fn chains_of(config: &Config, family: Family) -> Vec<String> {
    let mut chains = config.exposed_chains();
    chains.retain(|c| config.chains.get(c).is_some_and(|c| c.family == family));
    chains
}

/// Balances of `owner` on every exposed chain of `family` (zero rows included).
pub async fn of_family(config: &Config, drivers: &Drivers, family: Family, owner: &str) -> Result<Vec<Balance>, ChainError> {
    let mut out = Vec::new();
    for chain in chains_of(config, family) {
        out.extend(on_chain(drivers, &chain, owner).await?);
    }
    Ok(out)
}

/// Base units as an exact decimal, trailing zeros trimmed.
pub fn display(raw: alloy_primitives::U256, decimals: u8) -> String {
    let s = raw.to_string();
    let d = decimals as usize;
    let (int, frac) =
        if s.len() > d { (s[..s.len() - d].to_string(), s[s.len() - d..].to_string()) } else { ("0".into(), format!("{s:0>d$}")) };
    let frac = frac.trim_end_matches('0');
    let text = if frac.is_empty() { int } else { format!("{int}.{frac}") };
    text.parse::<Decimal>().map(|v| v.normalize().to_string()).unwrap_or(text)
}
