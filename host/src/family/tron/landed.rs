//! Finding the transaction that used a payer's Permit2 authorization when it
//! was not ours: anyone may call the x402 Permit2 proxy's `settle` with a
//! signed authorization, so a front-runner can land it first. The money
//! moved all the same, and the chain's record of that transfer is what the
//! engine settles with (as `family/evm/landed.rs` does on EVM chains).
//!
//! A full node has no log filter: blocks since the intent are read one by
//! one (`gettransactioninfobyblocknum`). A candidate is a TRC-20
//! `Transfer(payer → payTo)` of the token, of exactly the amount, in a
//! transaction whose `raw_data` carries the authorization's signature
//! `r ‖ s` (read back with `gettransactionbyid`).

use alloy_primitives::{Address, U256};
use serde_json::{json, Value};

use super::call;
use crate::family::chain::ChainClient;
use crate::family::{carries, SendError, Sought};

/// keccak256("Transfer(address,address,uint256)"), as a node shows topics.
const TRANSFER: &str = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/// At most this many blocks are read back (one request each).
const MAX_BLOCKS: u64 = 2_000;
/// Block timestamps are a producer's clock, not ours.
const CLOCK_SKEW_MS: i64 = 30_000;

fn word(a: &Address) -> String {
    format!("{:0>64}", hex::encode(a.as_slice()))
}

fn is_transfer(log: &Value, token: &Address, from: &Address, to: &Address, amount: U256) -> bool {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(|s| s.trim_start_matches("0x").to_ascii_lowercase());
    let topics: Vec<String> = log.get("topics").and_then(Value::as_array).into_iter().flatten().filter_map(|t| text(Some(t))).collect();
    let emitter = text(log.get("address")).map(|a| a.strip_prefix("41").filter(|r| r.len() == 40).map(str::to_string).unwrap_or(a));
    let value = text(log.get("data")).and_then(|d| U256::from_str_radix(&d, 16).ok());
    emitter.as_deref() == Some(hex::encode(token.as_slice()).as_str())
        && topics.len() == 3
        && topics[0] == TRANSFER
        && topics[1] == word(from)
        && topics[2] == word(to)
        && value == Some(amount)
}

/// Transactions that moved what is `sought`, executed at or after its
/// `since_ms`, oldest first.
pub async fn transfers(client: &ChainClient, block_time_ms: u64, sought: &Sought<'_>) -> Result<Vec<String>, SendError> {
    let Sought { token, from, to, amount, evidence, since_ms } = *sought;
    let head = call(client, "/wallet/getnowblock", json!({})).await?;
    let head = head
        .pointer("/block_header/raw_data/number")
        .and_then(Value::as_u64)
        .ok_or_else(|| SendError::Unavailable("getnowblock: no block number".into()))?;
    let elapsed = (crate::clock::now_ms() - since_ms).max(0) as u64;
    let back = (elapsed / block_time_ms.max(1) + 64).min(MAX_BLOCKS);
    let mut out: Vec<String> = vec![];
    for num in head.saturating_sub(back)..=head {
        let infos = call(client, "/wallet/gettransactioninfobyblocknum", json!({ "num": num })).await?;
        for info in infos.as_array().into_iter().flatten() {
            let Some(id) = info.get("id").and_then(Value::as_str) else { continue };
            let recent = info.get("blockTimeStamp").and_then(Value::as_i64).is_some_and(|t| t + CLOCK_SKEW_MS >= since_ms);
            let moved = info.get("log").and_then(Value::as_array).into_iter().flatten().any(|l| is_transfer(l, &token, &from, &to, amount));
            if !recent || !moved || out.iter().any(|h| h == id) {
                continue;
            }
            let tx = call(client, "/wallet/gettransactionbyid", json!({ "value": id })).await?;
            let raw = tx.get("raw_data_hex").and_then(Value::as_str).and_then(|h| hex::decode(h).ok()).unwrap_or_default();
            if carries(&raw, evidence) {
                out.push(id.to_string());
            }
        }
    }
    Ok(out)
}
