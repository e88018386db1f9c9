//! `GET /v2/agents/balances`: the hosted wallets on the agent's owner account
//! and their balances on every exposed chain of their family.

use alloy_primitives::{Address, U256};
use alloy_sol_types::{sol, SolCall};
use axum::extract::State;
use axum::{Extension, Json};
use rust_decimal::Decimal;
use serde_json::{json, Value};
use sqlx::Row;

use super::{ApiError, Shared};
use crate::config::{Availability, Family, Role};
use crate::store::agents::Agent;

sol! {
    function balanceOf(address owner) external view returns (uint256);
}

const UPSTREAM: &str = "failed to retrieve wallet balances";

fn display(raw: U256, decimals: u8) -> String {
    // Exact: integer part and zero-padded fraction, trailing zeros trimmed.
    let s = raw.to_string();
    let d = decimals as usize;
    let (int, frac) = if s.len() > d { (s[..s.len() - d].to_string(), s[s.len() - d..].to_string()) } else { ("0".into(), format!("{s:0>d$}")) };
    let frac = frac.trim_end_matches('0');
    let text = if frac.is_empty() { int } else { format!("{int}.{frac}") };
    text.parse::<Decimal>().map(|v| v.normalize().to_string()).unwrap_or(text)
}

fn hex_u256(v: &Value) -> Option<U256> {
    U256::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

pub async fn balances(State(s): State<Shared>, Extension(agent): Extension<Agent>) -> Result<Json<Value>, ApiError> {
    let account = agent.account_id.clone().ok_or_else(|| ApiError::Forbidden("agent owner not set".into()))?;
    let rows = sqlx::query(
        "SELECT w.address FROM agents a JOIN wallet_keys w ON w.name = 'agent:' || a.id || ':evm' \
         WHERE a.account_id = $1 ORDER BY a.created_at, a.id",
    )
    .bind(&account)
    .fetch_all(&s.db.pool)
    .await?;
    let cfg = &s.config;
    let mut wallets = Vec::new();
    for r in rows {
        let address: String = r.try_get("address")?;
        let owner: Address = address.parse().map_err(|_| ApiError::Internal("stored wallet address".into()))?;
        let mut balances = Vec::new();
        let mut chains: Vec<&String> = cfg.chains_with_role(Role::Payer).iter().chain(cfg.chains_with_role(Role::Target).iter()).filter_map(|c| cfg.chains.get_key_value(c).map(|(k, _)| k)).collect();
        chains.sort();
        chains.dedup();
        for chain_id in chains {
            let chain = &cfg.chains[chain_id];
            if chain.family != Family::Evm {
                continue;
            }
            let Some(client) = s.registry.chain(chain_id) else { continue };
            let native = client
                .rpc("eth_getBalance", json!([owner, "latest"]))
                .await
                .ok()
                .and_then(|v| hex_u256(&v))
                .ok_or_else(|| ApiError::BadGateway(UPSTREAM.into()))?;
            let symbol = chain.native_asset.clone();
            balances.push(row(chain_id, &symbol, native, 18));
            for (key, asset) in &chain.assets {
                if cfg.availability(asset) != Availability::Available {
                    continue;
                }
                let data = balanceOfCall { owner }.abi_encode();
                let raw = client
                    .rpc("eth_call", json!([{ "to": asset.token, "data": alloy_primitives::hex::encode_prefixed(data) }, "latest"]))
                    .await
                    .ok()
                    .and_then(|v| hex_u256(&v))
                    .ok_or_else(|| ApiError::BadGateway(UPSTREAM.into()))?;
                balances.push(row(chain_id, key, raw, asset.decimals));
            }
        }
        wallets.push(json!({ "address": address, "chain_type": "ethereum", "balances": balances }));
    }
    Ok(Json(json!({ "wallets": wallets })))
}

fn row(chain: &str, asset: &str, raw: U256, decimals: u8) -> Value {
    json!({
        "chain": chain,
        "asset": asset,
        "raw_value": raw.to_string(),
        "raw_value_decimals": decimals,
        "display_values": { asset: display(raw, decimals) },
    })
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
