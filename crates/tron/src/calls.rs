//! Reads and transactions of TRC-20 tokens through a TRON node's HTTP API:
//! an allowance (a constant call), the head block a new transaction
//! references, and an approve's `raw_data`. Shared by the payers' approval
//! helpers and swaps from hosted TRON wallets.

use alloy_primitives::{hex, Address, U256};
use alloy_sol_types::{sol, SolCall};
use serde_json::{json, Value};
use tron_wire::address;
use tron_wire::raw::{self, Reference};

use crate::family::chain::ChainClient;

sol! {
    function approve(address spender, uint256 value) returns (bool);
    function allowance(address owner, address spender) returns (uint256);
}

/// What the node answered, or why it could not be read (for logs).
pub type Read<T> = Result<T, String>;

async fn call(client: &ChainClient, path: &str, body: Value) -> Read<Value> {
    client.rpc(path, body).await.map_err(|e| format!("{path}: {e}"))
}

/// `owner`'s allowance of `token` to `spender`.
pub async fn allowance(client: &ChainClient, token: &Address, owner: &Address, spender: &Address) -> Read<U256> {
    let data = allowanceCall { owner: *owner, spender: *spender }.abi_encode();
    let body = json!({ "owner_address": hex::encode(address::raw(owner)), "contract_address": hex::encode(address::raw(token)), "data": hex::encode(&data) });
    let v = call(client, "/wallet/triggerconstantcontract", body).await?;
    v.pointer("/constant_result/0")
        .and_then(Value::as_str)
        .and_then(|h| U256::from_str_radix(h, 16).ok())
        .ok_or_else(|| format!("allowance answered {v}"))
}

/// The head block, for a new transaction's reference (TAPOS).
pub async fn head(client: &ChainClient) -> Read<Reference> {
    let v = call(client, "/wallet/getnowblock", json!({})).await?;
    let bad = || "getnowblock: unreadable block".to_string();
    let id = v
        .get("blockID")
        .and_then(Value::as_str)
        .and_then(|h| hex::decode(h).ok())
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(bad)?;
    let header = v.pointer("/block_header/raw_data").ok_or_else(bad)?;
    Ok(Reference {
        number: header.get("number").and_then(Value::as_u64).ok_or_else(bad)?,
        block_id: id,
        timestamp_ms: header.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
    })
}

pub fn approve_data(spender: Address, value: U256) -> Vec<u8> {
    approveCall { spender, value }.abi_encode()
}

/// `raw_data` of `owner`'s approve of `spender` for `value` of `token`.
#[allow(clippy::too_many_arguments)] // the fields of TRON's raw_data, each its own
pub fn approve_raw(
    owner: &Address,
    token: &Address,
    spender: Address,
    value: U256,
    head: &Reference,
    now_ms: i64,
    expiration_ms: i64,
    fee_limit: i64,
) -> Vec<u8> {
    raw::trigger(address::raw(owner), address::raw(token), approve_data(spender, value), head, now_ms, expiration_ms, fee_limit)
}
