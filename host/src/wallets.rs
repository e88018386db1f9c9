//! Balances of a wallet on every exposed chain of its family: what
//! `/v2/agents/balances` shows an agent and `stablerail wallets` shows an
//! operator.

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::adapter::Registry;
use crate::chain::ChainError;
use crate::config::{Availability, Config, Family};

sol! {
    function balanceOf(address owner) external view returns (uint256);
}

/// One balance: the chain's native coin (under its `native_asset` key) or
/// a served asset, in base units.
pub struct Balance {
    pub chain: String,
    pub asset: String,
    pub raw: U256,
    pub decimals: u8,
}

/// Exposed EVM chains, sorted.
fn evm_chains(config: &Config) -> Vec<String> {
    let mut chains = config.exposed_chains();
    chains.retain(|c| config.chains.get(c).is_some_and(|c| c.family == Family::Evm));
    chains
}

/// Native and every served asset's balance of `owner` on every exposed EVM
/// chain (zero rows included).
pub async fn evm_balances(config: &Config, registry: &Registry, owner: Address) -> Result<Vec<Balance>, ChainError> {
    let mut out = Vec::new();
    for name in evm_chains(config) {
        out.extend(on_chain(config, registry, &name, owner).await?);
    }
    Ok(out)
}

/// The same on one chain.
pub async fn on_chain(config: &Config, registry: &Registry, name: &str, owner: Address) -> Result<Vec<Balance>, ChainError> {
    let (Some(chain), Some(client)) = (config.chains.get(name), registry.chain(name)) else { return Ok(vec![]) };
    if chain.family != Family::Evm {
        return Ok(vec![]); // this build reads EVM balances only
    }
    let number = |v: Value| {
        v.as_str()
            .and_then(|h| U256::from_str_radix(h.trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| ChainError::BadAnswer(format!("not a quantity: {v}")))
    };
    let mut out = vec![Balance {
        chain: name.to_string(),
        asset: chain.native_asset.clone(),
        raw: number(client.rpc("eth_getBalance", json!([owner, "latest"])).await?)?,
        decimals: 18,
    }];
    for (key, asset) in &chain.assets {
        if config.availability(asset) != Availability::Available {
            continue;
        }
        let data = alloy_primitives::hex::encode_prefixed(balanceOfCall { owner }.abi_encode());
        let raw = number(client.rpc("eth_call", json!([{ "to": asset.token, "data": data }, "latest"])).await?)?;
        out.push(Balance { chain: name.to_string(), asset: key.clone(), raw, decimals: asset.decimals });
    }
    Ok(out)
}

/// Base units as an exact decimal, trailing zeros trimmed.
pub fn display(raw: U256, decimals: u8) -> String {
    let s = raw.to_string();
    let d = decimals as usize;
    let (int, frac) = if s.len() > d { (s[..s.len() - d].to_string(), s[s.len() - d..].to_string()) } else { ("0".into(), format!("{s:0>d$}")) };
    let frac = frac.trim_end_matches('0');
    let text = if frac.is_empty() { int } else { format!("{int}.{frac}") };
    text.parse::<Decimal>().map(|v| v.normalize().to_string()).unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_exact() {
        assert_eq!(display(U256::from(0u8), 6), "0");
        assert_eq!(display(U256::from(1_500_000u64), 6), "1.5");
        assert_eq!(display(U256::from(1u8), 18), "0.000000000000000001");
        assert_eq!(display(U256::from(10u64).pow(U256::from(24u8)), 18), "1000000");
    }
}
