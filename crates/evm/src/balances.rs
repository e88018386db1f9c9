//! Native and ERC-20 balances of an address.

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};

use crate::config::{Availability, Config};
use crate::family::chain::{ChainError, Chains};
use crate::family::Balance;

sol! {
    function balanceOf(address owner) external view returns (uint256);
}

/// Native and every served asset's balance of `owner` on `name` (zero rows included).
pub async fn on_chain(config: &Config, chains: &Chains, name: &str, owner: Address) -> Result<Vec<Balance>, ChainError> {
    let (Some(chain), Some(client)) = (config.chains.get(name), chains.get(name)) else { return Ok(vec![]) };
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
